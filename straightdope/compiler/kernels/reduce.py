"""Reductions (sum, mean, max, min, prod, and `_sum_to_like`, the gradient of broadcasting).

Any reduction is first *collapsed*: neighbouring axes that are both kept or both
reduced merge, axes of length 1 vanish. Almost every real case is then one of
two patterns with three runtime sizes, each a simple loop nest:

    K R K   y[a, b] = reduce_r x[a, r, b]      (sum over rows, over features, ...)
    R K R   y[k]    = reduce_{r1, r2} x[r1, k, r2]   (a conv bias gradient: axes 0, 2, 3)

Anything longer goes through a generic 6-d kernel. Sums accumulate in float64.
"""
import numpy as np
from numba import njit

from ...ops.reduce import norm_axes
from ..codegen import Flag

JIT = dict(cache=True, nogil=True, boundscheck=False)
SUM, MEAN, MAX, MIN, PROD = 0, 1, 2, 3, 4
OPCODES = {"sum": SUM, "mean": MEAN, "max": MAX, "min": MIN, "prod": PROD, "_sum_to_like": SUM}


@njit(**JIT)
def _init(op):
    if op == MAX:
        return -np.inf
    if op == MIN:
        return np.inf
    if op == PROD:
        return 1.0
    return 0.0


@njit(**JIT)
def reduce_krk(x, xo, y, yo, A, R, B, op):
    """y[a, b] = reduce over r of x[a, r, b]."""
    scale = 1.0 / R if op == MEAN and R > 0 else 1.0
    start = _init(op)
    if B == 1:                                  # reduce a contiguous row: scalar accumulator
        for a in range(A):
            base = xo + a * R
            acc = start
            if op == SUM or op == MEAN:
                for r in range(R):
                    acc += x[base + r]
            elif op == MAX:
                for r in range(R):
                    acc = max(acc, x[base + r])
            elif op == MIN:
                for r in range(R):
                    acc = min(acc, x[base + r])
            else:
                for r in range(R):
                    acc *= x[base + r]
            y[yo + a] = acc * scale
        return
    acc = np.empty(B, np.float64)
    for a in range(A):
        acc[:] = start
        for r in range(R):
            base = xo + (a * R + r) * B
            if op == SUM or op == MEAN:
                for b in range(B):
                    acc[b] += x[base + b]
            elif op == MAX:
                for b in range(B):
                    acc[b] = max(acc[b], x[base + b])
            elif op == MIN:
                for b in range(B):
                    acc[b] = min(acc[b], x[base + b])
            else:
                for b in range(B):
                    acc[b] *= x[base + b]
        for b in range(B):
            y[yo + a * B + b] = acc[b] * scale


@njit(**JIT)
def reduce_rkr(x, xo, y, yo, R1, K, R2, op):
    """y[k] = reduce over r1, r2 of x[r1, k, r2]."""
    count = R1 * R2
    scale = 1.0 / count if op == MEAN and count > 0 else 1.0
    acc = np.empty(K, np.float64)
    acc[:] = _init(op)
    for r1 in range(R1):
        for k in range(K):
            base = xo + (r1 * K + k) * R2
            part = acc[k]
            if op == SUM or op == MEAN:
                s = 0.0
                for r2 in range(R2):
                    s += x[base + r2]
                part += s
            elif op == MAX:
                for r2 in range(R2):
                    part = max(part, x[base + r2])
            elif op == MIN:
                for r2 in range(R2):
                    part = min(part, x[base + r2])
            else:
                for r2 in range(R2):
                    part *= x[base + r2]
            acc[k] = part
    for k in range(K):
        y[yo + k] = acc[k] * scale


@njit(**JIT)
def reduce_6d(x, xo, y, yo, dims, reduced, op):
    """The general case: x viewed with 6 dims, `reduced` flags (0/1) per axis."""
    d0, d1, d2, d3, d4, d5 = dims
    r0, r1, r2, r3, r4, r5 = reduced
    k0, k1, k2, k3, k4, k5 = 1 - r0, 1 - r1, 1 - r2, 1 - r3, 1 - r4, 1 - r5
    e0, e1, e2 = (d0 if k0 else 1), (d1 if k1 else 1), (d2 if k2 else 1)
    e3, e4, e5 = (d3 if k3 else 1), (d4 if k4 else 1), (d5 if k5 else 1)
    n_out = e0 * e1 * e2 * e3 * e4 * e5
    count = 1
    for d, r in ((d0, r0), (d1, r1), (d2, r2), (d3, r3), (d4, r4), (d5, r5)):
        if r:
            count *= d
    acc = np.empty(n_out, np.float64)
    acc[:] = _init(op)
    i = xo
    for i0 in range(d0):
        for i1 in range(d1):
            for i2 in range(d2):
                for i3 in range(d3):
                    for i4 in range(d4):
                        for i5 in range(d5):
                            o = ((((i0 * k0 * e1 + i1 * k1) * e2 + i2 * k2) * e3 + i3 * k3)
                                 * e4 + i4 * k4) * e5 + i5 * k5
                            v = x[i]
                            if op == SUM or op == MEAN:
                                acc[o] += v
                            elif op == MAX:
                                acc[o] = max(acc[o], v)
                            elif op == MIN:
                                acc[o] = min(acc[o], v)
                            else:
                                acc[o] *= v
                            i += 1
    scale = 1.0 / count if op == MEAN and count > 0 else 1.0
    for o in range(n_out):
        y[yo + o] = acc[o] * scale


@njit(**JIT)
def arg_reduce(x, xo, y, yo, A, C, B, largest):
    """y[a, b] = the first index c of the largest (or smallest) x[a, c, b], as a number."""
    for a in range(A):
        for b in range(B):
            base = xo + a * C * B + b
            best = x[base]
            k = 0
            for c in range(1, C):
                v = x[base + c * B]
                if (v > best) if largest else (v < best):
                    best = v
                    k = c
            y[yo + a * B + b] = k


# ------------------------------------------------------------------ emitters
def collapse(dims, shape, reduced):
    """[(is_reduced, [dim names])] after dropping length-1 axes and merging neighbours."""
    runs = []
    for d, size, r in zip(dims, shape, reduced):
        if size == 1:
            continue
        if runs and runs[-1][0] == r:
            runs[-1][1].append(d)
        else:
            runs.append((r, [d]))
    return runs


def _p(names):
    return "*".join(names) if names else "1"


def emit_reduce_axes(cg, x, y, axes, op):
    reduced = [a in axes for a in range(len(x.shape))]
    runs = collapse(x.dims, x.shape, reduced)
    pattern = "".join("R" if r else "K" for r, _ in runs)
    sizes = [_p(d) for _, d in runs]
    code = Flag(OPCODES[op])
    krk = {"": ("1", "1", "1"), "K": (sizes[0] if sizes else "1", "1", "1"),
           "R": ("1", sizes[0] if sizes else "1", "1"),
           "KR": tuple(sizes[:2]) + ("1",), "RK": ("1",) + tuple(sizes[:2]),
           "KRK": tuple(sizes)}.get(pattern)
    if krk is not None:
        cg.call("reduce", "reduce_krk", x.args, y.args, *krk, code)
    elif pattern == "RKR":
        cg.call("reduce", "reduce_rkr", x.args, y.args, *sizes, code)
    else:
        from .random import six_dims
        dims, flags = six_dims([_p(d) for _, d in runs], [int(r) for r, _ in runs])
        cg.call("reduce", "reduce_6d", x.args, y.args, "(" + ", ".join(dims) + ")",
                "(" + ", ".join(map(str, flags)) + ")", code)


def emit_reduce(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    axes = set(norm_axes(node.attrs["axis"], len(x.shape), node.attrs["exclude"]))
    emit_reduce_axes(cg, x, y, axes, node.op.name)


def emit_sum_to_like(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    like = cg.shape(node.inputs[1])
    extra = len(x.shape) - len(like)
    axes = set(range(extra)) | {i + extra for i, d in enumerate(like)
                                if d == 1 and x.shape[i + extra] != 1}
    emit_reduce_axes(cg, x, y, axes, "_sum_to_like")


def emit_arg_reduce(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    from .softmax import split_axis
    if node.attrs["axis"] is None:
        A, C, B = "1", x.n, "1"
    else:
        A, C, B = split_axis(x, node.attrs["axis"])
    cg.call("reduce", "arg_reduce", x.args, y.args, A, C, B, Flag(node.op.name == "argmax"))


EMITTERS = {name: emit_reduce for name in ("sum", "mean", "max", "min", "prod")}
EMITTERS.update(argmax=emit_arg_reduce, argmin=emit_arg_reduce)
EMITTERS["_sum_to_like"] = emit_sum_to_like
