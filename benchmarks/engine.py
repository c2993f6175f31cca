"""NaiveEngine next to the threaded engine, on the workloads that decide the default.

    python -m benchmarks.engine            # ~1 minute
    python -m benchmarks.engine --quick

One BLAS thread per op (as in benchmarks.run), two engine workers. The engines run
interleaved, round after round, and the table shows the median per call and the ratio
threaded / naive (below 1: the threaded engine is faster). docs/engine.md reads it.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import straightdope as mx  # noqa: E402
from straightdope import autograd, gluon, nd  # noqa: E402

from . import workloads  # noqa: E402

ENGINES = ("NaiveEngine", "ThreadedEngine")


def _mlp_forward():
    x = nd.array(np.random.default_rng(0).standard_normal((1, 512)).astype(np.float32))
    net = workloads._net(workloads.mlp, x.asnumpy())

    def call():
        net(x)
        nd.waitall()
    return call


def _mlp_train_step(batch=64):
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((batch, 512)).astype(np.float32))
    y = nd.array(rng.integers(0, 2, batch).astype(np.float32))
    net = workloads._net(workloads.mlp, x.asnumpy())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})

    def call():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        nd.waitall()
    return call


def _two_chains(n=400, length=6):
    a = nd.array(np.random.default_rng(1).random((n, n), dtype=np.float32) / n)

    def call():
        p = q = a
        for _ in range(length):
            p = nd.dot(p, a)
            q = nd.dot(q, a)
        nd.waitall()
    return call


def _one_chain(n=400, length=12):
    a = nd.array(np.random.default_rng(1).random((n, n), dtype=np.float32) / n)

    def call():
        p = a
        for _ in range(length):
            p = nd.dot(p, a)
        nd.waitall()
    return call


def _front_end_return(n=400, count=12):
    """Time until the loop of `count` products returns (the work may still be queued)."""
    a = nd.array(np.random.default_rng(1).random((n, n), dtype=np.float32) / n)
    results = []

    def call():
        results.clear()
        for _ in range(count):
            results.append(nd.dot(a, a))
    return call


WORKLOADS = {
    "W1 MLP forward b=1, imperative": _mlp_forward,
    "MLP training step b=64, imperative": _mlp_train_step,
    "one chain of 12 products 400x400": _one_chain,
    "two independent chains of 6 products 400x400": _two_chains,
    "loop of 12 products 400x400 returns (no wait)": _front_end_return,
}


def measure(rounds, calls):
    times = {(w, e): [] for w in WORKLOADS for e in ENGINES}
    for _ in range(rounds):
        for engine in ENGINES:
            mx.engine.set_engine_type(engine, workers=2)
            for name, factory in WORKLOADS.items():
                fn = factory()
                fn()                                      # warm up
                nd.waitall()
                for _ in range(calls):
                    start = time.perf_counter()
                    fn()
                    times[(name, engine)].append(time.perf_counter() - start)
                nd.waitall()
    mx.engine.set_engine_type("NaiveEngine")
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    medians = measure(rounds=3 if args.quick else 7, calls=5 if args.quick else 20)
    print(f"{os.cpu_count()} cores, 2 engine workers, 1 BLAS thread per op\n")
    print("| workload | NaiveEngine ms | ThreadedEngine ms | threaded / naive |")
    print("|---|---:|---:|---:|")
    for name in WORKLOADS:
        naive, threaded = medians[(name, ENGINES[0])], medians[(name, ENGINES[1])]
        print(f"| {name} | {naive * 1e3:.3f} | {threaded * 1e3:.3f} | "
              f"{threaded / naive:.2g} |")


if __name__ == "__main__":
    main()
