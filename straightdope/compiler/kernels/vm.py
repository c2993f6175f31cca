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

A LOOP runs over an (outer, inner) domain, `CHUNK` elements at a time: it copies each
operand's elements into a register row (a stride 0 repeats a broadcast value), applies
each op to whole rows (loops LLVM vectorizes), and stores the output rows.
"""
import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from ..numba_internals import DISK_CACHE
from .blas import matmul
from .reduce import reduce_krk

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)
GEMM, REDUCE, COPY, LOOP = 1, 2, 3, 4
CHUNK = 512
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
def _nan_max(a, b):
    return a if a > b or a != a else b


@njit(**JIT)
def _nan_min(a, b):
    return a if a < b or a != a else b


@njit(**JIT)
def _sign(x):
    return np.float32(1.0) if x > 0 else (np.float32(-1.0) if x < 0 else x * np.float32(0.0))


@njit(**JIT)
def _unary(op, d, a, n):
    if op == MOVE:
        d[:n] = a[:n]
    elif op == NEG:
        for t in range(n):
            d[t] = -a[t]
    elif op == ABS:
        for t in range(n):
            d[t] = abs(a[t])
    elif op == SIGN:
        for t in range(n):
            d[t] = _sign(a[t])
    elif op == EXP:           # in float64, rounded: the NumPy forward does the same
        for t in range(n):
            d[t] = np.float32(np.exp(np.float64(a[t])))
    elif op == LOG:
        for t in range(n):
            d[t] = np.float32(np.log(np.float64(a[t])))
    elif op == SQRT:
        for t in range(n):
            d[t] = np.sqrt(a[t])
    elif op == SQUARE:
        for t in range(n):
            d[t] = a[t] * a[t]
    elif op == SIGMOID:
        for t in range(n):
            d[t] = np.float32(1.0) / (np.float32(1.0) + np.exp(-a[t]))
    elif op == TANH:
        for t in range(n):
            d[t] = np.tanh(a[t])


@njit(**JIT)
def _binary(op, d, a, b, n):
    if op == ADD:
        for t in range(n):
            d[t] = a[t] + b[t]
    elif op == SUB:
        for t in range(n):
            d[t] = a[t] - b[t]
    elif op == MUL:
        for t in range(n):
            d[t] = a[t] * b[t]
    elif op == DIV:
        for t in range(n):
            d[t] = a[t] / b[t]
    elif op == MAX:
        for t in range(n):
            d[t] = _nan_max(a[t], b[t])
    elif op == MIN:
        for t in range(n):
            d[t] = _nan_min(a[t], b[t])
    elif op == GT:
        for t in range(n):
            d[t] = 1.0 if a[t] > b[t] else 0.0
    elif op == GE:
        for t in range(n):
            d[t] = 1.0 if a[t] >= b[t] else 0.0
    elif op == LT:
        for t in range(n):
            d[t] = 1.0 if a[t] < b[t] else 0.0
    elif op == LE:
        for t in range(n):
            d[t] = 1.0 if a[t] <= b[t] else 0.0
    elif op == EQ:
        for t in range(n):
            d[t] = 1.0 if a[t] == b[t] else 0.0
    elif op == NE:
        for t in range(n):
            d[t] = 1.0 if a[t] != b[t] else 0.0


@njit(**JIT)
def _with_constant(op, d, a, c, n):
    if op == FILL:
        d[:n] = c
    elif op == ADD_C:
        for t in range(n):
            d[t] = a[t] + c
    elif op == SUB_C:
        for t in range(n):
            d[t] = a[t] - c
    elif op == RSUB_C:
        for t in range(n):
            d[t] = c - a[t]
    elif op == MUL_C:
        for t in range(n):
            d[t] = a[t] * c
    elif op == DIV_C:
        for t in range(n):
            d[t] = a[t] / c
    elif op == RDIV_C:
        for t in range(n):
            d[t] = c / a[t]
    elif op == MAX_C:         # max(x, c) keeps a NaN in x, as np.maximum does
        for t in range(n):
            d[t] = _nan_max(a[t], c)
    elif op == MIN_C:
        for t in range(n):
            d[t] = _nan_min(a[t], c)
    elif op == GT_C:
        for t in range(n):
            d[t] = 1.0 if a[t] > c else 0.0
    elif op == GE_C:
        for t in range(n):
            d[t] = 1.0 if a[t] >= c else 0.0
    elif op == LT_C:
        for t in range(n):
            d[t] = 1.0 if a[t] < c else 0.0
    elif op == LE_C:
        for t in range(n):
            d[t] = 1.0 if a[t] <= c else 0.0
    elif op == EQ_C:
        for t in range(n):
            d[t] = 1.0 if a[t] == c else 0.0
    elif op == NE_C:
        for t in range(n):
            d[t] = 1.0 if a[t] != c else 0.0


@njit(**JIT)
def _loop(code, pc, consts, m):
    """Run the LOOP instruction at code[pc]; return the next instruction's index."""
    outer, inner, n_in, n_ops, n_out = code[pc + 1:pc + 6]
    operands, ops = pc + 6, pc + 6 + 4 * n_in
    outputs = ops + 5 * n_ops
    regs = np.empty((n_in + n_ops, CHUNK), np.float32)
    for j in range(outer):
        for start in range(0, inner, CHUNK):
            n = min(CHUNK, inner - start)
            for i in range(n_in):
                b, off, s_outer, s_inner = code[operands + 4 * i:operands + 4 * i + 4]
                x = _buffer(m, b)
                base = off + j * s_outer + start * s_inner
                if s_inner == 1:
                    regs[i, :n] = x[base:base + n]
                elif s_inner == 0:
                    regs[i, :n] = x[base]
                else:
                    for t in range(n):
                        regs[i, t] = x[base + t * s_inner]
            for k in range(n_ops):
                op, dest, a, b, c = code[ops + 5 * k:ops + 5 * k + 5]
                if op < ADD:
                    if op == FILL:
                        _with_constant(op, regs[dest], regs[dest], np.float32(consts[c]), n)
                    else:
                        _unary(op, regs[dest], regs[a], n)
                elif op < ADD_C:
                    _binary(op, regs[dest], regs[a], regs[b], n)
                else:
                    _with_constant(op, regs[dest], regs[a], np.float32(consts[c]), n)
            for i in range(n_out):
                r, b, off = code[outputs + 3 * i:outputs + 3 * i + 3]
                y = _buffer(m, b)
                base = off + j * inner + start
                y[base:base + n] = regs[r, :n]
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
