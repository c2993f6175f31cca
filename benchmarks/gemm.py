"""The NT matrix product (FullyConnected's C = A B^T) both ways, side by side:
`blas.matmul_with(..., swap=False)` (one gemm call) against `blas.matmul`, which
computes it as (B A^T)^T where `blas.swapped_is_faster` says so.

    python -m benchmarks.gemm           # a handful of shapes, inside and outside the rule
    python -m benchmarks.gemm --grid    # a grid, both dtypes, both forms forced

One thread (as benchmarks/run.py: the environment before NumPy loads, then
threadpoolctl). The products run in a compiled loop, so Python's call overhead does
not dilute small shapes; the forms alternate round after round and the table shows
the median thread CPU time per product. Below 1 in the last column: faster.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from straightdope.compiler.kernels import blas  # noqa: E402

# (m, n, k): m is the batch. The first is W2/W4's first layer, the next two their others.
SHAPES = [(64, 256, 512), (64, 128, 256), (64, 2, 128), (8, 512, 512), (16, 1024, 256),
          (32, 256, 1024), (48, 512, 512), (63, 256, 512), (64, 64, 512), (8, 128, 512),
          (128, 256, 512), (256, 512, 512)]
GRID = dict(m=(2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128), n=(64, 128, 192, 256, 512, 1024),
            k=(64, 128, 256, 512, 1024))


@njit(cache=True)
def _repeat(count, a, b, c, m, k, n, swap):
    for _ in range(count):
        blas.matmul_with(a, 0, b, 0, c, 0, m, k, n, 0, 1, swap)


@njit(cache=True)
def _repeat_rule(count, a, b, c, m, k, n):
    for _ in range(count):
        blas.matmul(a, 0, b, 0, c, 0, m, k, n, 0, 1)


def compare(m, n, k, dtype, forced=False, rounds=7, target=0.004):
    """Median seconds per product: direct, and as matmul does it (or, forced: swapped)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(m * k).astype(dtype)
    b = rng.standard_normal(n * k).astype(dtype)
    c = np.empty(m * n, dtype)
    forms = [lambda count: _repeat(count, a, b, c, m, k, n, False),
             (lambda count: _repeat(count, a, b, c, m, k, n, True)) if forced else
             (lambda count: _repeat_rule(count, a, b, c, m, k, n))]
    counts = []
    for f in forms:
        f(1)
        start = time.thread_time()
        f(10)
        counts.append(max(1, int(target / max((time.thread_time() - start) / 10, 1e-8))))
    samples = [[], []]
    for r in range(rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            start = time.thread_time()
            forms[i](counts[i])
            samples[i].append((time.thread_time() - start) / counts[i])
    return [float(np.median(s)) for s in samples]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", action="store_true",
                        help="a grid of shapes, float32 and float64, swapped form forced")
    args = parser.parse_args(argv)
    threadpool_limits(1)
    if args.grid:
        print("dtype     m    n    k  direct us  swapped us  ratio  rule")
        for dtype in (np.float32, np.float64):
            for m in GRID["m"]:
                for n in GRID["n"]:
                    for k in GRID["k"]:
                        d, s = compare(m, n, k, dtype, forced=True, rounds=5)
                        rule = blas.swapped_is_faster(m, n, k, np.dtype(dtype).itemsize)
                        print(f"{np.dtype(dtype).name:7s} {m:4d} {n:4d} {k:4d} {d * 1e6:9.1f} "
                              f"{s * 1e6:10.1f}  {s / d:5.2f}  {'swap' if rule else ''}",
                              flush=True)
        return
    print("| m | n | k | dtype | rule | direct us | as matmul does it us | ratio |")
    print("|---:|---:|---:|---|---|---:|---:|---:|")
    for dtype in (np.float32, np.float64):
        for m, n, k in SHAPES:
            d, s = compare(m, n, k, dtype)
            rule = blas.swapped_is_faster(m, n, k, np.dtype(dtype).itemsize)
            print(f"| {m} | {n} | {k} | {np.dtype(dtype).name} | "
                  f"{'swapped' if rule else 'direct'} | {d * 1e6:.1f} | {s * 1e6:.1f} | "
                  f"{s / d:.2f} |", flush=True)


if __name__ == "__main__":
    main()
