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
from ..emitting import Flag
from ..numba_internals import DISK_CACHE
from .util import nan_max, nan_min

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)
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
    X = x[xo:xo + A * R * B].reshape((A, R, B))
    Y = y[yo:yo + A * B].reshape((A, B))
    scale = (1.0 / R if R > 0 else np.nan) if op == MEAN else 1.0    # mean of nothing: NaN
    start = _init(op)
    if B == 1:                                  # reduce a contiguous row: scalar accumulator
        for a in range(A):
            row = X[a, :, 0]
            acc = start
            if op == SUM or op == MEAN:
                for r in range(R):
                    acc += row[r]
            elif op == MAX:
                for r in range(R):
                    acc = nan_max(acc, row[r])
            elif op == MIN:
                for r in range(R):
                    acc = nan_min(acc, row[r])
            else:
                for r in range(R):
                    acc *= row[r]
            Y[a, 0] = acc * scale
        return
    acc = np.empty(B, np.float64)
    for a in range(A):
        acc[:] = start
        for r in range(R):
            row = X[a, r]
            if op == SUM or op == MEAN:
                for b in range(B):
                    acc[b] += row[b]
            elif op == MAX:
                for b in range(B):
                    acc[b] = nan_max(acc[b], row[b])
            elif op == MIN:
                for b in range(B):
                    acc[b] = nan_min(acc[b], row[b])
            else:
                for b in range(B):
                    acc[b] *= row[b]
        for b in range(B):
            Y[a, b] = acc[b] * scale


@njit(**JIT)
def reduce_rkr(x, xo, y, yo, R1, K, R2, op):
    """y[k] = reduce over r1, r2 of x[r1, k, r2]."""
    X = x[xo:xo + R1 * K * R2].reshape((R1, K, R2))
    Y = y[yo:yo + K]
    count = R1 * R2
    scale = (1.0 / count if count > 0 else np.nan) if op == MEAN else 1.0
    acc = np.empty(K, np.float64)
    acc[:] = _init(op)
    for r1 in range(R1):
        for k in range(K):
            row = X[r1, k]
            part = acc[k]
            if op == SUM or op == MEAN:
                s = 0.0
                for r2 in range(R2):
                    s += row[r2]
                part += s
            elif op == MAX:
                for r2 in range(R2):
                    part = nan_max(part, row[r2])
            elif op == MIN:
                for r2 in range(R2):
                    part = nan_min(part, row[r2])
            else:
                for r2 in range(R2):
                    part *= row[r2]
            acc[k] = part
    for k in range(K):
        Y[k] = acc[k] * scale


@njit(**JIT)
def reduce_6d(x, xo, y, yo, dims, reduced, op):
    """The general case: x viewed with 6 dims, `reduced` flags (0/1) per axis."""
    d0, d1, d2, d3, d4, d5 = dims
    X = x[xo:xo + d0 * d1 * d2 * d3 * d4 * d5].reshape(dims)
    r0, r1, r2, r3, r4, r5 = reduced
    e0, e1, e2 = (1 if r0 else d0), (1 if r1 else d1), (1 if r2 else d2)
    e3, e4, e5 = (1 if r3 else d3), (1 if r4 else d4), (1 if r5 else d5)
    count = (d0 * d1 * d2 * d3 * d4 * d5) // max(e0 * e1 * e2 * e3 * e4 * e5, 1)
    acc = np.empty((e0, e1, e2, e3, e4, e5), np.float64)
    acc[...] = _init(op)
    for i0 in range(d0):
        for i1 in range(d1):
            for i2 in range(d2):
                for i3 in range(d3):
                    for i4 in range(d4):
                        for i5 in range(d5):
                            o = (0 if r0 else i0, 0 if r1 else i1, 0 if r2 else i2,
                                 0 if r3 else i3, 0 if r4 else i4, 0 if r5 else i5)
                            v = X[i0, i1, i2, i3, i4, i5]
                            if op == SUM or op == MEAN:
                                acc[o] += v
                            elif op == MAX:
                                acc[o] = nan_max(acc[o], v)
                            elif op == MIN:
                                acc[o] = nan_min(acc[o], v)
                            else:
                                acc[o] *= v
    scale = (1.0 / count if count > 0 else np.nan) if op == MEAN else 1.0
    flat = acc.reshape(acc.size)
    Y = y[yo:yo + acc.size]
    for o in range(acc.size):
        Y[o] = flat[o] * scale


@njit(**JIT)
def arg_reduce(x, xo, y, yo, A, C, B, largest):
    """y[a, b] = the first index c of the largest (or smallest) x[a, c, b], as a number;
    the first NaN if there is one (as np.argmax: NaN counts as the largest and smallest)."""
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    Y = y[yo:yo + A * B].reshape((A, B))
    for a in range(A):
        for b in range(B):
            best = X[a, 0, b]
            k = 0
            for c in range(1, C):
                if best != best:
                    break
                v = X[a, c, b]
                if v != v or ((v > best) if largest else (v < best)):
                    best = v
                    k = c
            Y[a, b] = k


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
