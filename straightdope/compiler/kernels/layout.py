"""Ops that move elements around: transpose, slicing, concat and split (and their gradients).

Two shapes of copy cover them all:

* a *block copy* between arrays viewed as (A, n, B) around one axis: concat,
  split, slice_axis and their gradients move `count` slabs of B elements;
* a *strided copy* over (up to) 6 dims with a start and a step per axis:
  transpose (steps are the source strides, permuted) and general slicing.

Begin/end positions depend on the shapes (negative indices, None), so they are
resolved while planning and passed as runtime values, never baked into code.
"""
from numba import njit

from ..emitting import Flag
from ..numba_internals import DISK_CACHE
from .softmax import split_axis
from .util import copy_into

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


@njit(**JIT)
def block_copy(x, xo, y, yo, A, n_src, n_dst, B, src_start, dst_start, count):
    """y[a, dst_start + i, :] = x[a, src_start + i, :] for i < count; x is (A, n_src, B)."""
    X = x[xo:xo + A * n_src * B].reshape((A, n_src * B))
    Y = y[yo:yo + A * n_dst * B].reshape((A, n_dst * B))
    for a in range(A):
        copy_into(Y[a, dst_start * B:(dst_start + count) * B],
                  X[a, src_start * B:(src_start + count) * B])


@njit(**JIT)
def zero(y, yo, n):
    y[yo:yo + n] = 0


@njit(**JIT)
def strided_copy(x, xo, y, yo, dims, starts, steps, scatter):
    """Over the 6 `dims` of the contiguous side: y[i] = x[start + i . steps] (gather),
    or with `scatter` x[i] -> y[start + i . steps]. Steps are in elements of the flat
    strided array (they include its strides) and may be negative."""
    d0, d1, d2, d3, d4, d5 = dims
    st0, st1, st2, st3, st4, st5 = steps
    n = d0 * d1 * d2 * d3 * d4 * d5
    if scatter:
        src = x[xo:xo + n].reshape(dims)
        for i0 in range(d0):
            for i1 in range(d1):
                for i2 in range(d2):
                    for i3 in range(d3):
                        for i4 in range(d4):
                            j = yo + starts + i0 * st0 + i1 * st1 + i2 * st2 + i3 * st3 \
                                + i4 * st4
                            row = src[i0, i1, i2, i3, i4]
                            for i5 in range(d5):
                                y[j + i5 * st5] = row[i5]
    else:
        dst = y[yo:yo + n].reshape(dims)
        for i0 in range(d0):
            for i1 in range(d1):
                for i2 in range(d2):
                    for i3 in range(d3):
                        for i4 in range(d4):
                            j = xo + starts + i0 * st0 + i1 * st1 + i2 * st2 + i3 * st3 \
                                + i4 * st4
                            row = dst[i0, i1, i2, i3, i4]
                            for i5 in range(d5):
                                row[i5] = x[j + i5 * st5]


# ------------------------------------------------------------------ emitters
def _strides(dims):
    out, acc = [], []
    for d in reversed(dims):
        out.append("*".join(acc) if acc else "1")
        acc = [d] + acc
    return out[::-1]


def _tuple(items):
    return "(" + ", ".join(items) + ")"


def emit_transpose(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    n = len(x.shape)
    axes = node.attrs["axes"]
    perm = tuple(a % n for a in axes) if axes else tuple(range(n))[::-1]
    strides = _strides(x.dims)
    # merge output axes that are also neighbours, in order, in the input
    runs = []
    for p in perm:
        if runs and runs[-1][-1] + 1 == p:
            runs[-1].append(p)
        else:
            runs.append([p])
    if len(runs) > 6:
        raise NotImplementedError("transpose of more than 6 separate axis runs")
    dims = ["*".join(x.dims[p] for p in r) for r in runs]
    steps = [strides[r[-1]] for r in runs]
    pad = 6 - len(runs)
    cg.call("layout", "strided_copy", x.args, y.args, _tuple(["1"] * pad + dims), "0",
            _tuple(["0"] * pad + steps), Flag(0))


def _slices(cg, node, shape):
    from ...ops.shape import _slices
    return [sl.indices(d) for sl, d in zip(_slices(node.attrs, shape), shape)]


def emit_slice(cg, node, scatter=False):
    x = cg.ref(node.inputs[0]) if not scatter else cg.ref(node.inputs[1])
    src = cg.ref(node.inputs[0])              # slice: x; _slice_grad: the gradient
    y = cg.out(node)
    full = x.shape                            # the shape being sliced
    idx = _slices(cg, node, full)
    strides = _strides(x.dims)
    out_dims = y.dims if not scatter else src.dims
    start = sum(i[0] * int(_num(full, k)) for k, i in enumerate(idx))
    steps = [f"{strides[k]}*{cg.rt(i[2])}" for k, i in enumerate(idx)]
    if len(full) > 6:
        raise NotImplementedError("slice of more than 6 dims")
    pad = 6 - len(full)
    dims = _tuple(["1"] * pad + list(out_dims) if out_dims else ["1"] * 6)
    steps = _tuple(["0"] * pad + steps if steps else ["0"] * 6)
    if scatter:
        cg.call("layout", "zero", y.args, y.n)
        cg.call("layout", "strided_copy", src.args, y.args, dims, cg.rt(start), steps, Flag(1))
    else:
        cg.call("layout", "strided_copy", src.args, y.args, dims, cg.rt(start), steps, Flag(0))


def _num(shape, k):
    n = 1
    for d in shape[k + 1:]:
        n *= d
    return n


def emit_slice_grad(cg, node):
    emit_slice(cg, node, scatter=True)


def _axis_range(node, n):
    from ...ops.shape import _slice_axis_range
    return _slice_axis_range(node.attrs, n)


def emit_slice_axis(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    axis = node.attrs["axis"] % len(x.shape)
    b, e = _axis_range(node, x.shape[axis])
    A, n, B = split_axis(x, axis)
    count = cg.rt(e - b)
    cg.call("layout", "block_copy", x.args, y.args, A, n, count, B, cg.rt(b), 0, count)


def emit_slice_axis_grad(cg, node):
    og, x = cg.ref(node.inputs[0]), cg.ref(node.inputs[1])
    y = cg.out(node)
    axis = node.attrs["axis"] % len(x.shape)
    b, e = _axis_range(node, x.shape[axis])
    A, n, B = split_axis(x, axis)
    count = cg.rt(e - b)
    cg.call("layout", "zero", y.args, y.n)
    cg.call("layout", "block_copy", og.args, y.args, A, count, n, B, 0, cg.rt(b), count)


def emit_concat(cg, node):
    y = cg.out(node)
    axis = node.attrs["dim"] % len(y.shape)
    A, n, B = split_axis(y, axis)
    start = 0
    for e in node.inputs:
        x = cg.ref(e)
        size = x.shape[axis]
        cg.call("layout", "block_copy", x.args, y.args, A, x.dims[axis], n, B, 0,
                cg.rt(start), x.dims[axis])
        start += size


def emit_concat_grad(cg, node):
    og, y = cg.ref(node.inputs[0]), cg.out(node)
    axis = node.attrs["dim"] % len(og.shape)
    k = node.attrs["index"]
    start = sum(cg.shape(e)[axis] for e in node.inputs[1:1 + k])
    A, n, B = split_axis(og, axis)
    mine = cg.ref(node.inputs[1 + k]).dims[axis]
    cg.call("layout", "block_copy", og.args, y.args, A, n, mine, B, cg.rt(start), 0, mine)


def emit_split(cg, node):
    x = cg.ref(node.inputs[0])
    axis = node.attrs["axis"] % len(x.shape)
    A, n, B = split_axis(x, axis)
    parts = node.attrs["num_outputs"]
    part = x.shape[axis] // parts
    for k in range(parts):
        y = cg.out(node, k)
        size = cg.rt(part)
        cg.call("layout", "block_copy", x.args, y.args, A, n, size, B, cg.rt(k * part), 0, size)


EMITTERS = {"transpose": emit_transpose, "slice": emit_slice, "_slice_grad": emit_slice_grad,
            "slice_axis": emit_slice_axis, "_slice_axis_grad": emit_slice_axis_grad,
            "concat": emit_concat, "_concat_grad": emit_concat_grad, "split": emit_split}
