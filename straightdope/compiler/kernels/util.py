"""Small helpers the generated code calls: flatten an input, shape an output, allocate.

Kernels take flat arrays plus offsets and first take *views* (`x[xo:xo + n]`,
reshaped to the value's shape), then index those from 0: an index `x[xo + i]`
is signed, so Numba adds a negative-index check to every access and LLVM does
not vectorize the loop.

Why kernels for such trivial things? Every array operation that the *generated*
function does itself (reshape, slicing, np.empty) costs Numba compile time again
for every new graph. Written once here with `cache=True`, they are compiled once
per machine and the generated code only does scalar arithmetic and calls.
"""
import numpy as np
from numba import njit

from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


@njit(**JIT)
def nan_max(a, b):
    """max(a, b) that returns NaN if either is NaN, as np.maximum and np.max do.
    (Python's max(a, b) keeps `a` unless b > a: it would skip a NaN in `b`.)"""
    return a if a > b or a != a else b


@njit(**JIT)
def nan_min(a, b):
    """min(a, b) that returns NaN if either is NaN, as np.minimum and np.min do."""
    return a if a < b or a != a else b


@njit(**JIT)
def flat(a):
    """The C-contiguous array `a` as a flat 1-D view (how the generated code sees values)."""
    return a.reshape(a.size)


@njit(**JIT)
def shaped(a, shape):
    """A flat array viewed with its real shape (the outputs handed back to the caller)."""
    return a.reshape(shape)


@njit(**JIT)
def empty(n, proto):
    """A fresh flat array of n elements with the dtype of `proto` (an arena)."""
    return np.empty(n, proto.dtype)


@njit(**JIT)
def fill(y, yo, n, value):
    y[yo:yo + n] = value


@njit(**JIT)
def copy_into(dst, src):
    """dst[:] = src for two 1-D views of one size, as a loop. Numba compiles the slice
    assignment `dst[:] = src` with a shape check whose error message costs ~3 s of
    compile time on a fresh machine (once per process); this loop costs ~0.1 s. Like
    every kernel it indexes views from 0, never `array[offset + i]`: a signed index
    costs a negative-index check per element and stops LLVM from vectorizing the loop."""
    for i in range(src.size):
        dst[i] = src[i]


@njit(**JIT)
def copy(x, xo, y, yo, n):
    copy_into(y[yo:yo + n], x[xo:xo + n])


class in_python:  # noqa: N801  (the steps tier's source imports it as the module k_util)
    """The same helpers for the steps tier, whose `run_graph` is plain Python: there NumPy
    reshapes or allocates in a fraction of a microsecond, while each Numba function is a
    dispatcher call of a few microseconds and, in a new process, a few milliseconds to
    load its machine code from the cache (ResNet-18's training step called seven)."""

    @staticmethod
    def flat(a):
        return a.reshape(a.size)

    @staticmethod
    def shaped(a, shape):
        return a.reshape(shape)

    @staticmethod
    def empty(n, proto):
        return np.empty(n, proto.dtype)

    @staticmethod
    def fill(y, yo, n, value):
        y[yo:yo + n] = value

    @staticmethod
    def copy(x, xo, y, yo, n):
        y[yo:yo + n] = x[xo:xo + n]
