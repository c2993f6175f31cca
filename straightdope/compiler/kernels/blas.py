"""Matrix products: BLAS's gemm into a planned buffer.

Which BLAS. NumPy's wheels bundle an OpenBLAS, SciPy's bundle another one, and
Numba's `np.dot` calls SciPy's. They are not equally fast: with numpy 2.4 and
scipy 1.17 (OpenBLAS 0.3.31 and 0.3.30), a float32 (64, 512) @ (512, 256) took
178 us through NumPy and 208 us through Numba's `np.dot` (one thread), and the
products are most of a training step's time. So `matmul` calls NumPy's own
`cblas_sgemm`/`cblas_dgemm` when it finds them, and `np.dot` otherwise (a NumPy
linked to another BLAS, e.g. conda's).

How, without baking an address into cached machine code. Numba caches the
compiled kernels on disk, and a function's address is only valid in the process
that looked it up. So the address lives in a *slot*: an 8-byte integer that this
module fills at import (0 when not found) and registers with LLVM under a fixed
name. The compiled code loads the slot on every call (`_gemm_address`) and calls
the function it points to (`_gemm`); cached code finds the slot again by its name.

Layouts: every operand is a flat 1-D buffer plus an offset; a transposed operand
is stored transposed (C order), which gemm takes as a flag, never a copy.
FullyConnected reaches here too: the compiler lowers it to
`dot(data, weight, transpose_b=True)` plus a bias add that it fuses.

A batch-sized product, swapped. That "NT" product C = A B^T has m = the batch,
and OpenBLAS (0.3.31, AVX-512, one thread) is slower at it than at the swapped
product S = B A^T, shape (n, m), also NT: for float32 (64, 256) from k = 512, ~225 us
against ~185 us, plus ~10 us to transpose S into C (`transpose_into`). Over a grid
(`python -m benchmarks.gemm --grid`) the swapped form took 0.5-0.9x the time for m
from 8 to 64 in steps of 8, n >= max(192, 4m) and k >= 256, and lost or tied
elsewhere: small n or k, m >= 96, m just below a multiple of 16 (47, 62, 63:
0.92-1.0), m = 2 or 4 (mostly), and float64 (no consistent gain). That region, a
fixed rule, is `swapped_is_faster`; `python -m benchmarks.gemm` re-checks it.
It holds for OpenBLAS's AVX-512 kernels only (`SWAP_CORES`): with its Haswell kernels
(AVX2, also what it runs on AMD Zen) the swapped form *lost* on a 2-core EPYC, 1.25-1.8x
for the LSTM's step product (m 16-64, n = 1024, k = 256), and won at most 15% elsewhere,
so there it is off. Which kernels run is read at run time (`SWAP_SLOT`, a slot as
below), so cached machine code follows `OPENBLAS_CORETYPE`.
"""
import ctypes

import numba
import numpy as np
from llvmlite import binding as llvm, ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..emitting import Flag
from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)

# cblas names in NumPy's OpenBLAS, which uses 64-bit integers ("64_"); NumPy's own
# wheels prefix them with scipy_. A 32-bit-integer BLAS is not called (np.dot then).
_GEMM_NAMES = {"float32": ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
               "float64": ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112        # cblas enum values


def _numpy_gemm(dtype):
    """The address of NumPy's cblas gemm for `dtype`, or 0. Looking a name up in NumPy's
    core module also searches the libraries it links, hence its BLAS."""
    try:
        from numpy._core import _multiarray_umath
        lib = ctypes.CDLL(_multiarray_umath.__file__)
    except (ImportError, OSError):
        return 0
    for name in _GEMM_NAMES[dtype]:
        if hasattr(lib, name):
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    return 0


def _openblas_core() -> str:
    """The kernels NumPy's OpenBLAS chose for this CPU ('Haswell', 'SkylakeX'...), or ''."""
    try:
        from numpy._core import _multiarray_umath
        lib = ctypes.CDLL(_multiarray_umath.__file__)
    except (ImportError, OSError):
        return ""
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                 "openblas_get_corename"):
        if hasattr(lib, name):
            function = getattr(lib, name)
            function.restype = ctypes.c_char_p
            return (function() or b"").decode(errors="replace")
    return ""


# OpenBLAS kernels whose NT product of a small batch is slower than its swapped form.
SWAP_CORES = frozenset({"SkylakeX", "Cooperlake", "SapphireRapids"})

GEMM_SLOTS = {dtype: ctypes.c_int64(_numpy_gemm(dtype)) for dtype in _GEMM_NAMES}
SWAP_SLOT = ctypes.c_int64(_openblas_core() in SWAP_CORES)   # 1: swapped_is_faster may say so
for _name, _slot in [*((f"gemm_{d}", s) for d, s in GEMM_SLOTS.items()),
                     ("gemm_swap", SWAP_SLOT)]:
    llvm.add_symbol(f"straightdope_{_name}", ctypes.addressof(_slot))


def _load_slot(builder, name):
    slot = builder.module.globals.get(name)
    if slot is None:
        slot = ir.GlobalVariable(builder.module, ir.IntType(64), name)
    return builder.load(slot)


@intrinsic
def _gemm_address(typingctx, c):
    """The value of the gemm slot for c's dtype (0: use np.dot)."""
    def codegen(context, builder, sig, args):
        return _load_slot(builder, f"straightdope_gemm_{c.dtype}")
    return types.int64(c), codegen


@intrinsic
def _swap_allowed(typingctx):
    """The value of SWAP_SLOT (1 on OpenBLAS's AVX-512 kernels)."""
    def codegen(context, builder, sig, args):
        return _load_slot(builder, "straightdope_gemm_swap")
    return types.int64(), codegen


@intrinsic
def _gemm(typingctx, address, ta, tb, m, n, k, a, lda, b, ldb, c, ldc):
    """cblas_?gemm at `address`, row-major: c[m, n] = op(a) @ op(b), op transposing
    where ta/tb are set; lda/ldb/ldc are the stored rows' lengths."""
    def codegen(context, builder, sig, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        real = context.get_value_type(sig.args[10].dtype)
        function = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real,
                                                   real.as_pointer(), i64, real.as_pointer(),
                                                   i64, real, real.as_pointer(), i64])

        def arg(i):                 # integers as int64, arrays as their data pointer
            if isinstance(sig.args[i], types.Array):
                return cgutils.create_struct_proxy(sig.args[i])(context, builder,
                                                                value=args[i]).data
            return context.cast(builder, args[i], sig.args[i], types.int64)

        def trans(i):
            flag = builder.icmp_signed("!=", arg(i), ir.Constant(i64, 0))
            return builder.select(flag, ir.Constant(i32, _TRANS), ir.Constant(i32, _NO_TRANS))

        call = builder.inttoptr(args[0], function.as_pointer())
        builder.call(call, [ir.Constant(i32, _ROW_MAJOR), trans(1), trans(2), arg(3), arg(4),
                            arg(5), ir.Constant(real, 1.0), arg(6), arg(7), arg(8), arg(9),
                            ir.Constant(real, 0.0), arg(10), arg(11)])
        return context.get_dummy_value()
    return types.void(address, ta, tb, m, n, k, a, lda, b, ldb, c, ldc), codegen


if numba.config.DISABLE_JIT:
    def _gemm_address(c):
        """Plain Python (NUMBA_DISABLE_JIT=1) cannot run intrinsics: np.dot it is."""
        return 0

    def _swap_allowed():
        return SWAP_SLOT.value


@njit(**JIT)
def swapped_is_faster(m, n, k, itemsize):
    """Whether matmul computes the NT product C = A B^T (m, n) as (B A^T)^T: on
    OpenBLAS's AVX-512 kernels (SWAP_SLOT), float32, a batch m of 8 to 64 in steps of 8,
    C at least 4 times wider than tall (and 192 wide), k at least 256. Measured, see the
    module docstring; no timing at run time."""
    return (_swap_allowed() != 0 and itemsize == 4 and 8 <= m <= 64 and m % 8 == 0
            and n >= max(192, 4 * m) and k >= 256)


@njit(**JIT)
def transpose_into(S, C):
    """C = S.T, row by row of C: the writes are contiguous, the reads strided (a few
    cache lines of S serve many rows of C). Row by row of S instead, each write lands
    4 KB from the last for the LSTM's (1024, 32): 98 us against 19 here, 15 against
    10 for (256, 64)."""
    rows, cols = S.shape
    for i in range(cols):
        for j in range(rows):
            C[i, j] = S[j, i]


@njit(**JIT)
def matmul(a, ao, b, bo, c, co, m, k, n, ta, tb):
    """c[m, n] = op(a) @ op(b); a is stored (m, k), or (k, m) if ta; b (k, n), or (n, k) if tb."""
    swap = not ta and tb != 0 and swapped_is_faster(m, n, k, c.itemsize)
    matmul_with(a, ao, b, bo, c, co, m, k, n, ta, tb, swap)


@njit(**JIT)
def matmul_with(a, ao, b, bo, c, co, m, k, n, ta, tb, swap):
    """matmul, told whether to compute an NT product swapped (benchmarks/gemm.py times both)."""
    C = c[co:co + m * n].reshape((m, n))
    if m == 0 or n == 0:
        return
    if k == 0:
        C[:, :] = 0
        return
    A = a[ao:ao + m * k]
    B = b[bo:bo + k * n]
    # A product with one row or column (batch 1) stays with np.dot: NumPy computes
    # those with gemv, and so np.dot's BLAS does, to the last bit (article 003 prints
    # a hybridized and an imperative result side by side).
    address = _gemm_address(c) if m > 1 and n > 1 else 0
    if address != 0 and swap and not ta and tb:
        S = np.empty((n, m), c.dtype)               # S = B A^T, then C = S^T
        _gemm(address, 0, 1, n, m, k, B, k, A, k, S, m)
        transpose_into(S, C)
    elif address != 0:
        _gemm(address, ta, tb, m, n, k, A, m if ta else k, B, k if tb else n, C, n)
    # np.dot wants fixed layouts (C or F) for each call: four branches
    elif not ta and not tb:
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
