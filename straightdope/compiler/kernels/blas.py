"""Matrix products: `np.dot` into a planned buffer (BLAS through SciPy).

Numba's `np.dot` needs 2-D C- or F-contiguous arrays of one float dtype, so a
transposed operand is the transpose (`.T`, F-contiguous) of a C-contiguous view,
never a copy. FullyConnected reaches here too: the compiler lowers it to
`dot(data, weight, transpose_b=True)` plus a bias add that it fuses.
"""
import numpy as np
from numba import njit

from ..codegen import Flag

JIT = dict(cache=True, nogil=True, boundscheck=False)


@njit(**JIT)
def matmul(a, ao, b, bo, c, co, m, k, n, ta, tb):
    """c[m, n] = op(a) @ op(b); a is stored (m, k), or (k, m) if ta; b (k, n), or (n, k) if tb."""
    C = c[co:co + m * n].reshape((m, n))
    if m == 0 or n == 0:
        return
    if k == 0:
        C[:, :] = 0
        return
    A = a[ao:ao + m * k]
    B = b[bo:bo + k * n]
    # four branches: each np.dot call sees fixed layouts (C or F), as Numba's BLAS wants
    if not ta and not tb:
        np.dot(A.reshape((m, k)), B.reshape((k, n)), C)
    elif not ta and tb:
        np.dot(A.reshape((m, k)), B.reshape((n, k)).T, C)
    elif ta and not tb:
        np.dot(A.reshape((k, m)).T, B.reshape((k, n)), C)
    else:
        np.dot(A.reshape((k, m)).T, B.reshape((n, k)).T, C)


@njit(**JIT)
def matmul_loops(a, ao, b, bo, c, co, m, k, n, ta, tb):
    """The same product with plain loops: integer dtypes, which BLAS does not do."""
    for i in range(m):
        for j in range(n):
            acc = 0
            for p in range(k):
                x = a[ao + (p * m + i if ta else i * k + p)]
                y = b[bo + (j * k + p if tb else p * n + j)]
                acc += x * y
            c[co + i * n + j] = acc


@njit(**JIT)
def batch_matmul(a, ao, b, bo, c, co, batch, m, k, n, ta, tb):
    for i in range(batch):
        matmul(a, ao + i * m * k, b, bo + i * k * n, c, co + i * m * n, m, k, n, ta, tb)


@njit(**JIT)
def batch_matmul_loops(a, ao, b, bo, c, co, batch, m, k, n, ta, tb):
    for i in range(batch):
        matmul_loops(a, ao + i * m * k, b, bo + i * k * n, c, co + i * m * n, m, k, n, ta, tb)


# ------------------------------------------------------------------ emitters
def _blas_ok(*refs):
    return all(r.dtype == refs[0].dtype for r in refs) and refs[0].dtype.name in ("float32",
                                                                                   "float64")


def emit_dot(cg, node):
    a, b, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    if len(a.shape) > 2 and ta or len(b.shape) > 2 and tb:
        raise AssertionError("lowering moves N-d transposes out of dot")
    ta, tb = ta and len(a.shape) == 2, tb and len(b.shape) == 2
    # (m, k) @ (k, n) on flattened operands: dot contracts a's last axis with b's first
    a_dims = a.dims[::-1] if ta else a.dims
    b_dims = b.dims[::-1] if tb else b.dims
    m, k, n = _prod(a_dims[:-1]), a_dims[-1] if a_dims else "1", _prod(b_dims[1:])
    func = "matmul" if _blas_ok(a, b, y) else "matmul_loops"
    cg.call("blas", func, a.args, b.args, y.args, m, k, n, Flag(ta), Flag(tb))


def emit_batch_dot(cg, node):
    a, b, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    m = a.dims[2] if ta else a.dims[1]
    k = a.dims[1] if ta else a.dims[2]
    n = b.dims[1] if tb else b.dims[2]
    func = "batch_matmul" if _blas_ok(a, b, y) else "batch_matmul_loops"
    cg.call("blas", func, a.args, b.args, y.args, a.dims[0], m, k, n, Flag(ta), Flag(tb))


def _prod(dims):
    return "*".join(dims) if dims else "1"


def dims_dot(cg, node, k):
    a, b = cg.ref(node.inputs[0]).dims, cg.ref(node.inputs[1]).dims
    if node.attrs["transpose_a"]:
        a = a[::-1]
    if node.attrs["transpose_b"]:
        b = b[::-1]
    return a[:-1] + b[1:]


def dims_batch_dot(cg, node, k):
    a, b = cg.ref(node.inputs[0]).dims, cg.ref(node.inputs[1]).dims
    return [a[0], a[2] if node.attrs["transpose_a"] else a[1],
            b[1] if node.attrs["transpose_b"] else b[2]]


EMITTERS = {"dot": emit_dot, "batch_dot": emit_batch_dot}
DIMS = {"dot": dims_dot, "batch_dot": dims_batch_dot}
