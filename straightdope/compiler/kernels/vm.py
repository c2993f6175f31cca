"""The virtual machine: ONE function, compiled once per machine, that runs any graph
written as a *program* (`compiler/vm.py` writes them).

This is how MXNet runs a hybridized graph: its CachedOp calls each op's precompiled
kernel in turn, and a new graph needs no compiler at all. Here the kernels are Numba
functions (the matrix product and reductions of `blas.py`, `reduce.py`) and a fused
elementwise loop is a little program of its own, run over a block of elements at a
time. So a new graph runs compiled code from its first call, while the compile
process still builds its whole-graph function (the faster tier, `tiers.py`).

Buffers are numbered: 0 is the arena (working memory), the last one the block that
holds the outputs (both allocated here, the block returned); any other buffer b is
an input, at address `addrs[b]`, `sizes[b]` float32 numbers long. (Given as arrays,
the inputs would make Numba compile this function anew for every number of them.)
A program is a flat int64 array:

    GEMM    a a_off  b b_off  c c_off  m k n ta tb      c = op(a) @ op(b)
    REDUCE  x x_off  y y_off  A R B op                  y[a, b] = op_r x[a, r, b]
    COPY    x x_off  y y_off  n
    LOOP    outer inner n_in n_ops n_out, then
            n_in  x (buffer offset outer_stride inner_stride)  operands -> registers
            n_ops x (opcode dest a b constant)                 register maths
            n_out x (register buffer offset)                   registers -> outputs

A LOOP runs over an (outer, inner) domain, `CHUNK` elements at a time: each operand's
elements are a register (read in place, or copied to a scratch row when broadcast), each
op is applied to whole rows (loops LLVM vectorizes), and the output rows are stored.
"""
import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from ..numba_internals import DISK_CACHE
from .blas import matmul
from .reduce import reduce_krk
from .util import nan_max as _nan_max, nan_min as _nan_min

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)
GEMM, REDUCE, COPY, LOOP = 1, 2, 3, 4
CHUNK = 4096
# register maths: dest = f(a) or f(a, b) or f(a, constant)
(MOVE, FILL, NEG, ABS, SIGN, EXP, LOG, SQRT, SQUARE, SIGMOID, TANH,
 ADD, SUB, MUL, DIV, MAX, MIN, GT, GE, LT, LE, EQ, NE,
 ADD_C, SUB_C, RSUB_C, MUL_C, DIV_C, RDIV_C, MAX_C, MIN_C,
 GT_C, GE_C, LT_C, LE_C, EQ_C, NE_C) = range(37)


@intrinsic
def _float32_pointer(typingctx, address):
    """An integer address as a float32 pointer (for numba.carray)."""
    sig = types.CPointer(types.float32)(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
    return sig, codegen


@njit(**JIT)
def address(a):
    """The address of a C-contiguous array's first element."""
    return a.ctypes.data


@njit(**JIT)
def _buffer(m, b):
    """Buffer b of the machine state m = (addrs, sizes, arena, block)."""
    addrs, sizes, arena, block = m
    if b == 0:
        return arena
    if b == len(sizes) - 1:
        return block
    return carray(_float32_pointer(addrs[b]), (sizes[b],))


@njit(**JIT)
def _sign(x):
    return np.float32(1.0) if x > 0 else (np.float32(-1.0) if x < 0 else x * np.float32(0.0))


@njit(**JIT)
def _unary_row(op, D, A, n):
    """D[:n] = op(A[:n]); likewise `_binary_row` and `_constant_row`. (Views indexed from
    0: LLVM vectorizes those loops.)"""
    if op == MOVE:
        D[:n] = A[:n]
    elif op == NEG:
        for t in range(n):
            D[t] = -A[t]
    elif op == ABS:
        for t in range(n):
            D[t] = abs(A[t])
    elif op == SIGN:
        for t in range(n):
            D[t] = _sign(A[t])
    elif op == EXP:           # in float64, rounded: the NumPy forward does the same
        for t in range(n):
            D[t] = np.float32(np.exp(np.float64(A[t])))
    elif op == LOG:
        for t in range(n):
            D[t] = np.float32(np.log(np.float64(A[t])))
    elif op == SQRT:
        for t in range(n):
            D[t] = np.sqrt(A[t])
    elif op == SQUARE:
        for t in range(n):
            D[t] = A[t] * A[t]
    elif op == SIGMOID:
        for t in range(n):
            D[t] = np.float32(1.0) / (np.float32(1.0) + np.exp(-A[t]))
    elif op == TANH:
        for t in range(n):
            D[t] = np.tanh(A[t])


@njit(**JIT)
def _binary_row(op, D, A, B, n):
    if op == ADD:
        for t in range(n):
            D[t] = A[t] + B[t]
    elif op == SUB:
        for t in range(n):
            D[t] = A[t] - B[t]
    elif op == MUL:
        for t in range(n):
            D[t] = A[t] * B[t]
    elif op == DIV:
        for t in range(n):
            D[t] = A[t] / B[t]
    elif op == MAX:
        for t in range(n):
            D[t] = _nan_max(A[t], B[t])
    elif op == MIN:
        for t in range(n):
            D[t] = _nan_min(A[t], B[t])
    elif op == GT:
        for t in range(n):
            D[t] = 1.0 if A[t] > B[t] else 0.0
    elif op == GE:
        for t in range(n):
            D[t] = 1.0 if A[t] >= B[t] else 0.0
    elif op == LT:
        for t in range(n):
            D[t] = 1.0 if A[t] < B[t] else 0.0
    elif op == LE:
        for t in range(n):
            D[t] = 1.0 if A[t] <= B[t] else 0.0
    elif op == EQ:
        for t in range(n):
            D[t] = 1.0 if A[t] == B[t] else 0.0
    elif op == NE:
        for t in range(n):
            D[t] = 1.0 if A[t] != B[t] else 0.0


@njit(**JIT)
def _constant_row(op, D, A, c, n):
    if op == FILL:
        D[:n] = c
    elif op == ADD_C:
        for t in range(n):
            D[t] = A[t] + c
    elif op == SUB_C:
        for t in range(n):
            D[t] = A[t] - c
    elif op == RSUB_C:
        for t in range(n):
            D[t] = c - A[t]
    elif op == MUL_C:
        for t in range(n):
            D[t] = A[t] * c
    elif op == DIV_C:
        for t in range(n):
            D[t] = A[t] / c
    elif op == RDIV_C:
        for t in range(n):
            D[t] = c / A[t]
    elif op == MAX_C:         # max(x, c) keeps a NaN in x, as np.maximum does
        for t in range(n):
            D[t] = _nan_max(A[t], c)
    elif op == MIN_C:
        for t in range(n):
            D[t] = _nan_min(A[t], c)
    elif op == GT_C:
        for t in range(n):
            D[t] = 1.0 if A[t] > c else 0.0
    elif op == GE_C:
        for t in range(n):
            D[t] = 1.0 if A[t] >= c else 0.0
    elif op == LT_C:
        for t in range(n):
            D[t] = 1.0 if A[t] < c else 0.0
    elif op == LE_C:
        for t in range(n):
            D[t] = 1.0 if A[t] <= c else 0.0
    elif op == EQ_C:
        for t in range(n):
            D[t] = 1.0 if A[t] == c else 0.0
    elif op == NE_C:
        for t in range(n):
            D[t] = 1.0 if A[t] != c else 0.0


@njit(inline='always', **JIT)     # (inlined into _loop, as _apply)
def _rows(m, scratch, where, r):
    """Where register r is: (array, offset of its first row, row stride)."""
    b, off, stride = where[r, 0], where[r, 1], where[r, 2]
    return (scratch if b < 0 else _buffer(m, b)), off, stride


@njit(inline='always', **JIT)     # inlined into _loop: as a call it cost ~0.15 us per op
def _apply(op, m, scratch, where, dest, a, b, c, rows, n):
    """One op on a block of rows x n elements."""
    D, do, ds = _rows(m, scratch, where, dest)
    A, ao, As = _rows(m, scratch, where, a)
    B, bo, bs = _rows(m, scratch, where, b)
    for r in range(rows):
        d, x = D[do + r * ds:do + r * ds + n], A[ao + r * As:ao + r * As + n]
        if op < ADD:
            if op == FILL:
                _constant_row(op, d, x, c, n)
            else:
                _unary_row(op, d, x, n)
        elif op < ADD_C:
            _binary_row(op, d, x, B[bo + r * bs:bo + r * bs + n], n)
        else:
            _constant_row(op, d, x, c, n)


@njit(**JIT)
def _loop(code, pc, consts, m):
    """Run the LOOP instruction at code[pc]; return the next instruction's index.

    The domain goes in blocks of `rows` x `n` elements (at most CHUNK). A register is
    where a block's values are, `where[r]` = (buffer, or -1 for the scratch; offset; row
    stride): an operand read with stride 1 along the rows stays where it is (no copy);
    a broadcast or strided one, and every op's result, go to the scratch."""
    outer, inner, n_in, n_ops, n_out = code[pc + 1:pc + 6]
    operands, ops = pc + 6, pc + 6 + 4 * n_in
    outputs = ops + 5 * n_ops
    if outer == 0 or inner == 0:    # an empty domain: nothing to compute or write
        return outputs + 3 * n_out
    width = min(inner, CHUNK)
    height = max(1, CHUNK // max(width, 1))
    scratch = np.empty((n_in + n_ops) * CHUNK, np.float32)
    where = np.empty((n_in + n_ops, 3), np.int64)
    for r in range(n_in + n_ops):
        where[r, 0], where[r, 1], where[r, 2] = -1, r * CHUNK, width
    for j in range(0, outer, height):
        rows = min(height, outer - j)
        for start in range(0, inner, width):
            n = min(width, inner - start)
            for i in range(n_in):
                b, off, s_outer, s_inner = code[operands + 4 * i:operands + 4 * i + 4]
                base = off + j * s_outer + start * s_inner
                if s_inner == 1:
                    where[i, 0], where[i, 1], where[i, 2] = b, base, s_outer
                    continue
                x = _buffer(m, b)
                for r in range(rows):
                    row = scratch[i * CHUNK + r * width:i * CHUNK + r * width + n]
                    first = base + r * s_outer
                    if s_inner == 0:
                        row[:] = x[first]
                    else:
                        for t in range(n):
                            row[t] = x[first + t * s_inner]
            for k in range(n_ops):
                op, dest, a, b, c = code[ops + 5 * k:ops + 5 * k + 5]
                _apply(op, m, scratch, where, dest, a, b if op >= ADD and op < ADD_C else a,
                       np.float32(consts[c]), rows, n)
            for i in range(n_out):
                reg, b, off = code[outputs + 3 * i:outputs + 3 * i + 3]
                y = _buffer(m, b)
                R, ro, rs = _rows(m, scratch, where, reg)
                for r in range(rows):
                    first = off + (j + r) * inner + start
                    y[first:first + n] = R[ro + r * rs:ro + r * rs + n]
    return outputs + 3 * n_out


@njit(**JIT)
def run_program(code, consts, addrs, sizes):
    """Run a program (see the module's docstring); returns the output block."""
    m = (addrs, sizes, np.empty(sizes[0], np.float32), np.empty(sizes[-1], np.float32))
    pc = 0
    while pc < len(code):
        op = code[pc]
        if op == GEMM:
            a, ao, b, bo, c, co, rows, k, n, ta, tb = code[pc + 1:pc + 12]
            matmul(_buffer(m, a), ao, _buffer(m, b), bo, _buffer(m, c), co, rows, k, n,
                   ta, tb)
            pc += 12
        elif op == REDUCE:
            x, xo, y, yo, A, R, B, how = code[pc + 1:pc + 9]
            reduce_krk(_buffer(m, x), xo, _buffer(m, y), yo, A, R, B, how)
            pc += 9
        elif op == COPY:
            x, xo, y, yo, n = code[pc + 1:pc + 6]
            _buffer(m, y)[yo:yo + n] = _buffer(m, x)[xo:xo + n]
            pc += 6
        elif op == LOOP:
            pc = _loop(code, pc, consts, m)
        else:
            raise ValueError("run_program: unknown instruction")
    return m[3]
