"""`python -m straightdope.demo` (or `make demo`): the articles' benchmark, measured here.

The third article's `get_net()` MLP is called 1000 times imperatively and 1000
times hybridized; the script prints both times, the first (tracing and
compiling) call apart, and the speed-up. Times differ from machine to machine:
read the ratio, not the seconds.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def get_net():
    """The third article's network: 512 -> 128 relu -> 64 relu -> 2."""
    from straightdope import gluon
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(128, activation="relu"))
        net.add(gluon.nn.Dense(64, activation="relu"))
        net.add(gluon.nn.Dense(2))
    return net


def bench(net, x, calls=1000):
    """Seconds for `calls` forward passes (the article's bench(), with waitall)."""
    from straightdope import ndarray as nd
    start = time.perf_counter()
    for _ in range(calls):
        net(x)
    nd.waitall()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    from straightdope import ndarray as nd, random
    random.seed(0)
    net = get_net()
    net.initialize()
    x = nd.random_normal(shape=(1, 512))
    before = net(x).asnumpy()
    imperative = [bench(net, x, args.calls) for _ in range(args.repeats)]

    net.hybridize()
    start = time.perf_counter()
    after = net(x).asnumpy()
    first_call = time.perf_counter() - start
    hybridized = [bench(net, x, args.calls) for _ in range(args.repeats)]

    same = np.allclose(before, after, rtol=1e-5, atol=1e-6)
    imp, hyb = statistics.median(imperative), statistics.median(hybridized)
    print(f"network: {net}")
    print(f"outputs equal before and after hybridize(): {same}")
    print(f"imperative : {imp:.4f} s for {args.calls} calls (median of {args.repeats})")
    print(f"first hybridized call (trace + compile): {first_call:.3f} s")
    print(f"hybridized : {hyb:.4f} s for {args.calls} calls (median of {args.repeats})")
    print(f"speed-up   : {imp / hyb:.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
