"""Reductions, softmax and the losses built on them.

A reduction's gradient must spread the output gradient back over the reduced
axes. With symbols the shapes are not known when the backward graph is built,
so helper ops (`_unreduce`, `_sum_to_like`) take the original input along and
read its shape when they run.
"""
import math
import sys

import numpy as np

from .registry import (Attr, Bool, Choice, Float, Int, OpError, OptShape, axis_in,
                       like_input, refuse_empty_gather, register, scipy_special)


def norm_axes(axis, ndim, exclude=False):
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(sorted({a + ndim if a < 0 else a for a in axis}))
        for a in axes:
            if not 0 <= a < ndim:
                raise OpError(f"axis {axis} is out of range for an array with {ndim} dimensions")
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out


def _reduce_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    axes = norm_axes(attrs["axis"], len(s), attrs["exclude"])
    return in_shapes, [reduced_shape(s, axes, attrs["keepdims"])]


def no_identity(name, shape, axes):
    """max, min, argmax, argmin of nothing are undefined: an empty reduced axis is
    refused, as NumPy does (sum and prod have 0 and 1; mean is NaN)."""
    if any(shape[a] == 0 for a in axes):
        raise OpError(f"{name + ': ' if name else ''}cannot reduce the empty axis (size 0) of data of shape "
                      f"{tuple(shape)}: there is no value to pick")


def _extreme_shape(name):
    def infer_shape(attrs, in_shapes):
        s = in_shapes[0]
        if s is not None:
            no_identity(name, s, norm_axes(attrs["axis"], len(s), attrs["exclude"]))
        return _reduce_shape(attrs, in_shapes)
    return infer_shape


REDUCE_ATTRS = {"axis": OptShape(None), "keepdims": Bool(False), "exclude": Bool(False)}


def _reducer(fn, accumulate=False):
    """forward of a reduction; `accumulate`: float32/16 sums in float64, as the compiled
    kernels do, so both overflow (or not) alike: 3e38 + 3e38 - 3e38 is 3e38, not inf."""
    def forward(attrs, x):
        axes = norm_axes(attrs["axis"], x.ndim, attrs["exclude"])
        wide = {"dtype": np.float64} if accumulate and x.dtype.kind == "f" else {}
        return np.asarray(fn(x, axis=axes, keepdims=attrs["keepdims"], **wide)).astype(
            x.dtype, copy=False)
    return forward


def _sum_grad(F, attrs, inputs, outputs, out_grads):
    return [F._unreduce(out_grads[0], inputs[0], **attrs)]


def _mean_grad(F, attrs, inputs, outputs, out_grads):
    return [F._unreduce(out_grads[0], inputs[0], mean=True, **attrs)]


def _extreme_grad(F, attrs, inputs, outputs, out_grads):
    x = inputs[0]
    picked = F.broadcast_equal(x, F._unreduce(outputs[0], x, **attrs))
    return [F._unreduce(out_grads[0], x, **attrs) * picked]


def _prod_grad(F, attrs, inputs, outputs, out_grads):
    """d prod / d x_i is the product of the others: prod / x_i (as MXNet, x_i != 0)."""
    x = inputs[0]
    return [F._unreduce(out_grads[0], x, **attrs) * F._unreduce(outputs[0], x, **attrs) / x]


for _name, _fn, _grad in [("sum", np.sum, _sum_grad), ("mean", np.mean, _mean_grad),
                          ("max", np.max, _extreme_grad), ("min", np.min, _extreme_grad),
                          ("prod", np.prod, _prod_grad)]:
    register(_name, placement="kernel", attrs=dict(REDUCE_ATTRS),
             forward=_reducer(_fn, _name in ("sum", "mean", "prod")),
             infer_shape=_extreme_shape(_name) if _name in ("max", "min") else _reduce_shape,
             gradient=_grad, key_attrs=("axis",) if _name in ("sum", "mean") else (),
             doc=f"{_name}(data, axis=None, keepdims=False, exclude=False).")


def _nanprod_grad(F, attrs, inputs, outputs, out_grads):
    x = inputs[0]
    grad = _prod_grad(F, attrs, inputs, outputs, out_grads)[0]
    return [F.where(F.broadcast_equal(x, x), grad, F.zeros_like(x))]       # 0 at NaN


def _nansum_grad(F, attrs, inputs, outputs, out_grads):
    x = inputs[0]
    return [F._unreduce(out_grads[0], x, **attrs) * F.broadcast_equal(x, x)]   # 0 at NaN


# NaN-skipping reductions (a NaN counts as 0 in nansum, as 1 in nanprod)
register("nansum", placement="host", attrs=dict(REDUCE_ATTRS), forward=_reducer(np.nansum),
         infer_shape=_reduce_shape, gradient=_nansum_grad,
         doc="nansum(data, axis=None, keepdims=False): sum, NaNs left out.")
register("nanprod", placement="host", attrs=dict(REDUCE_ATTRS), forward=_reducer(np.nanprod),
         infer_shape=_reduce_shape, gradient=_nanprod_grad,
         doc="nanprod(data, axis=None, keepdims=False): product, NaNs left out.")
def _allclose_forward(attrs, a, b):
    """1 (uint8, 0-d) if every |a - b| <= atol + rtol * |b|, as MXNet's kernel: the
    tolerances are float32 (its parameters), NaNs equal only each other (equal_nan)."""
    wide = np.float64 if np.float64 in (a.dtype, b.dtype) else np.float32
    a, b = a.astype(wide), b.astype(wide)
    rtol, atol = wide(np.float32(attrs["rtol"])), wide(np.float32(attrs["atol"]))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    with np.errstate(invalid="ignore"):
        close = (a == b) | (np.abs(a - b) <= atol + rtol * np.abs(b))
    close = np.where(nan_a | nan_b, attrs["equal_nan"] & (nan_a == nan_b), close)
    return np.array(close.all(), dtype=np.uint8)


def _allclose_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is not None and b is not None and tuple(a) != tuple(b):
        raise OpError(f"allclose: a {tuple(a)} and b {tuple(b)} must have one shape")
    return [a if a is not None else b] * 2, [()]


register("_contrib_allclose", inputs=("a", "b"), placement="host",
         attrs={"rtol": Float(1e-05), "atol": Float(1e-08), "equal_nan": Bool(True)},
         forward=_allclose_forward, infer_shape=_allclose_shape,
         infer_dtype=lambda attrs, dtypes: np.uint8,
         doc="contrib.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True): 1 (uint8) when "
             "every |a - b| <= atol + rtol * |b|, else 0 (MXNet's test_utils compare with it).")


def _moments_forward(attrs, x):
    axes = None if attrs["axes"] is None else tuple(attrs["axes"])
    return (np.mean(x, axis=axes, keepdims=attrs["keepdims"]).astype(x.dtype),
            np.var(x, axis=axes, keepdims=attrs["keepdims"]).astype(x.dtype))


def _moments_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None, None]
    axes = norm_axes(attrs["axes"], len(s))
    out = reduced_shape(s, axes, attrs["keepdims"])
    return in_shapes, [out, out]


def _moments_gradient(F, attrs, inputs, outputs, out_grads):
    """d mean / dx = 1/N; d var / dx = 2 (x - mean) / N (over the reduced axes)."""
    x, (mean, _), (g_mean, g_var) = inputs[0], outputs, out_grads
    spread = {"axis": attrs["axes"], "keepdims": attrs["keepdims"]}
    parts = []
    if g_mean is not None:
        parts.append(F._unreduce(g_mean, x, mean=True, **spread))
    if g_var is not None:
        centered = x - F._unreduce(mean, x, **spread)
        parts.append(F._unreduce(g_var, x, mean=True, **spread) * centered * 2.0)
    return [parts[0] + parts[1] if len(parts) == 2 else parts[0] if parts else None]


register("moments", placement="host", attrs={"axes": OptShape(), "keepdims": Bool(False)},
         forward=_moments_forward, infer_shape=_moments_shape, gradient=_moments_gradient,
         num_outputs=2, output_names=("mean", "var"),
         doc="moments(data, axes=None, keepdims=False): the mean and the variance over axes.")


def _all_finite_forward(attrs, *arrays):
    """1.0 (float32, shape (1,)) when no array holds an inf or a NaN, else 0.0. With
    init_output=False MXNet only writes the 0 (leaving its buffer's old value otherwise);
    a fresh output here starts at 1."""
    return np.array([float(all(np.isfinite(a).all() for a in arrays))], dtype=np.float32)


register("all_finite", placement="host", attrs={"init_output": Bool(True)},
         forward=_all_finite_forward, infer_shape=lambda attrs, s: (s, [(1,)]),
         infer_dtype=lambda attrs, dtypes: np.float32,
         doc="all_finite(data, init_output=True): [1.] if data has no inf or NaN, else [0.].")
register("multi_all_finite", placement="host", variadic=True,
         attrs={"num_arrays": Int(1, minimum=1), "init_output": Bool(True)},
         forward=_all_finite_forward, infer_shape=lambda attrs, s: (s, [(1,)]),
         infer_dtype=lambda attrs, dtypes: np.float32,
         doc="multi_all_finite(*arrays, num_arrays, init_output=True): [1.] if no array has "
             "an inf or a NaN, else [0.].")


register("argmax_channel", placement="host",
         forward=lambda attrs, x: np.argmax(x, axis=-1).astype(x.dtype),
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else tuple(s[0][:-1])]),
         gradient=lambda F, a, i, o, og: [None],
         doc="argmax_channel(data): argmax along the last axis (float indices).")


def _unreduce_forward(attrs, g, x):
    axes = norm_axes(attrs["axis"], x.ndim, attrs["exclude"])
    g = g.reshape(reduced_shape(x.shape, axes, True))
    out = np.broadcast_to(g, x.shape)
    if attrs["mean"]:
        count = math.prod([x.shape[a] for a in axes])
        out = out / count
    # reshape: ascontiguousarray makes a 0-d array 1-d, and the gradient has x's shape
    return np.ascontiguousarray(out, dtype=g.dtype).reshape(x.shape)


register("_unreduce", placement="fused", inputs=("out_grad", "data"),
         attrs={**REDUCE_ATTRS, "mean": Bool(False)},
         forward=_unreduce_forward,
         infer_shape=like_input(1),
         doc="Spread a reduced gradient back over the shape of `data` (divided by the "
             "count when mean=True).")


def _sum_to_like_forward(attrs, g, like):
    if g.shape == like.shape:
        return g.copy()
    extra = g.ndim - like.ndim
    axes = tuple(range(extra)) + tuple(
        i + extra for i, d in enumerate(like.shape) if d == 1 and g.shape[i + extra] != 1)
    return np.sum(g, axis=axes, keepdims=True).reshape(like.shape).astype(g.dtype, copy=False)


register("_sum_to_like", placement="kernel", inputs=("data", "like"), forward=_sum_to_like_forward,
         infer_shape=like_input(1),
         gradient=lambda F, a, i, o, og: [F.broadcast_like(og[0], i[0]), None],
         doc="Sum `data` down to the shape of `like`: the gradient of broadcasting.")


# ------------------------------------------------------------------ softmax
SOFTMAX_ATTRS = {"axis": Int(-1), "temperature": Float(1.0)}


def _shifted(attrs, x):
    """x / temperature - its maximum along the axis: exp() of it cannot overflow.
    (Plain NumPy: scipy.special's versions cost ~3x more on small arrays, which a
    loss computed imperatively at every step pays.)"""
    z = x / attrs["temperature"] if attrs["temperature"] != 1.0 else x
    return z - z.max(axis=attrs["axis"], keepdims=True)


def _softmax_forward(attrs, x):
    if x.size == 0:                 # nothing to normalise (and no max to shift by)
        return x.copy()
    e = np.exp(_shifted(attrs, x))
    e /= e.sum(axis=attrs["axis"], keepdims=True)
    return e.astype(x.dtype, copy=False)


def _log_softmax_forward(attrs, x):
    if x.size == 0:
        return x.copy()
    z = _shifted(attrs, x)
    z -= np.log(np.exp(z).sum(axis=attrs["axis"], keepdims=True))
    return z.astype(x.dtype, copy=False)


def _softmax_grad(F, attrs, inputs, outputs, out_grads):
    y, og = outputs[0], out_grads[0]
    g = y * (og - F.sum(og * y, axis=attrs["axis"], keepdims=True))
    return [g / attrs["temperature"] if attrs["temperature"] != 1.0 else g]


def _log_softmax_grad(F, attrs, inputs, outputs, out_grads):
    y, og = outputs[0], out_grads[0]
    g = og - F.exp(y) * F.sum(og, axis=attrs["axis"], keepdims=True)
    return [g / attrs["temperature"] if attrs["temperature"] != 1.0 else g]


def _axis_checked_same_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is not None:
        norm_axes((attrs["axis"],), len(s))
    return in_shapes, [s]


register("softmax", placement="kernel", attrs=dict(SOFTMAX_ATTRS), forward=_softmax_forward,
         infer_shape=_axis_checked_same_shape, gradient=_softmax_grad,
         key_attrs=("axis",),
         doc="softmax(data, axis=-1): exp(x) / sum(exp(x)) along `axis`.")
register("softmin", placement="host", attrs=dict(SOFTMAX_ATTRS),
         forward=lambda attrs, x: _softmax_forward(attrs, -x),
         infer_shape=_axis_checked_same_shape,
         gradient=lambda F, a, i, o, og: [-_softmax_grad(F, a, i, o, og)[0]],
         doc="softmin(data, axis=-1): softmax of -data (the smallest value weighs most).")
register("log_softmax", placement="kernel", attrs=dict(SOFTMAX_ATTRS), forward=_log_softmax_forward,
         infer_shape=_axis_checked_same_shape, gradient=_log_softmax_grad,
         key_attrs=("axis",),
         doc="log_softmax(data, axis=-1), computed stably.")


# ------------------------------------------------------------- pick, one_hot
def _pick_index(attrs, x, index, name="pick"):
    """The axis, and the indices clipped into range, shaped like x with 1 on the axis."""
    axis = axis_in(name, attrs["axis"], x.shape)
    idx = index.astype(np.int64)                # a new array: clip it in place (ufuncs
    np.maximum(idx, 0, out=idx)                 # directly: np.clip's Python costs more
    np.minimum(idx, x.shape[axis] - 1, out=idx)  # than the work at small sizes)
    return axis, idx.reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])


def _pick_forward(attrs, x, index):
    axis, idx = _pick_index(attrs, x, index)
    out = np.take_along_axis(x, idx, axis=axis)
    return out if attrs["keepdims"] else np.squeeze(out, axis=axis)


def _pick_shape(attrs, in_shapes, name="pick"):
    x, index = in_shapes
    if x is None:
        return in_shapes, [None]
    axis = axis_in(name, attrs["axis"], x)
    rest = x[:axis] + x[axis + 1:]
    if index is not None and int(np.prod(index)) != int(np.prod(rest)):
        raise OpError(f"{name}: index shape {index} does not match data {x} without axis {axis}")
    refuse_empty_gather(name, x, axis, math.prod(rest))
    out = x[:axis] + ((1,) if attrs["keepdims"] else ()) + x[axis + 1:]
    return [x, index if index is not None else rest], [out]


def _pick_grad_forward(attrs, og, x, index):
    axis, idx = _pick_index(attrs, x, index)
    out = np.zeros_like(x)
    np.put_along_axis(out, idx, og.reshape(idx.shape), axis=axis)
    return out


PICK_ATTRS = {"axis": Int(-1), "keepdims": Bool(False)}
register("pick", placement="kernel",
         inputs=("data", "index"), attrs=dict(PICK_ATTRS), forward=_pick_forward,
         infer_shape=_pick_shape,
         gradient=lambda F, a, i, o, og: [F._pick_grad(og[0], i[0], i[1], **a), None],
         doc="pick(data, index, axis=-1): data[..., index[...], ...] along `axis`.")
register("_pick_grad", placement="kernel",
         inputs=("out_grad", "data", "index"), attrs=dict(PICK_ATTRS),
         forward=_pick_grad_forward, infer_shape=like_input(1),
         doc="Scatter the gradient of pick back into a zero array shaped like data.")


# -log(softmax(x))[label] in ONE op, and its gradient (softmax(x) - one_hot) in one more.
# gluon's SoftmaxCrossEntropyLoss uses it imperatively: log_softmax, pick and a negation
# are 3 ops forward and 8 on the way back, each paying Python's dispatch cost, which at
# batch 64 costs more than the arithmetic. (Hybridized, the loss keeps MXNet's ops, so an
# exported graph stays readable by MXNet; the compiler fuses them anyway.)
def _one_hot_like(x, axis, idx):
    """True where the position along `axis` equals the label (idx has size 1 on axis)."""
    positions = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
    return positions == idx


def _compiled_ce_loops(attrs, x, label):
    """compiler/kernels/softmax.py's loops for these arrays, or None for NumPy.

    Imperatively at batch 64 the dozen NumPy calls below cost ~4x what one loop does.
    The loops are used only once something else (a hybridized block, a Trainer) has
    loaded Numba: a loss alone never pays the half second of importing it. They are
    compiled code, a layer above ops: the compiler package (through which straightdope
    loads Numba) hands in the function that loads them when imported (COMPILED_LOOPS)."""
    global _ce_loops
    if _ce_loops is None:
        load = COMPILED_LOOPS.get("softmax")
        if "numba" not in sys.modules or load is None:
            return None
        import numba
        if numba.config.DISABLE_JIT:        # interpreted loops: far slower than NumPy
            _ce_loops = False
        else:
            _ce_loops = load()
    if (_ce_loops is False or x.dtype not in (np.float32, np.float64)
            or label.dtype.kind not in "fiu" or not x.flags.c_contiguous
            or not label.flags.c_contiguous or x.size == 0):
        return None
    return _ce_loops


_ce_loops = None
COMPILED_LOOPS: dict = {}       # "softmax": a function returning compiler/kernels/softmax


def _class_split(attrs, x):
    """x viewed as (A, C, B) with C the class axis, as the loops take it."""
    axis = attrs["axis"] % x.ndim
    return math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])


def _ce_out_shape(attrs, x):
    axis = attrs["axis"] % x.ndim
    return x.shape[:axis] + ((1,) if attrs["keepdims"] else ()) + x.shape[axis + 1:]


def _sparse_softmax_ce_forward(attrs, x, label):
    loops = _compiled_ce_loops(attrs, x, label)
    if loops is not None:
        out = np.empty(_ce_out_shape(attrs, x), x.dtype)
        loops.sparse_softmax_ce(x.reshape(-1), 0, label.reshape(-1), 0, out.reshape(-1), 0,
                                *_class_split(attrs, x))
        return out
    axis, idx = _pick_index(attrs, x, label, "_sparse_softmax_ce")
    z = x - x.max(axis=axis, keepdims=True)
    picked = np.take_along_axis(z, idx, axis=axis)
    out = (np.log(np.exp(z).sum(axis=axis, keepdims=True)) - picked).astype(x.dtype,
                                                                             copy=False)
    return out if attrs["keepdims"] else out.reshape(idx.shape[:axis] + idx.shape[axis + 1:])


def _sparse_softmax_ce_grad_forward(attrs, og, x, label):
    loops = _compiled_ce_loops(attrs, x, label)
    if loops is not None and og.dtype == x.dtype and og.flags.c_contiguous:
        out = np.empty_like(x)
        loops.sparse_softmax_ce_grad(og.reshape(-1), 0, x.reshape(-1), 0, label.reshape(-1), 0,
                                     out.reshape(-1), 0, *_class_split(attrs, x))
        return out
    axis, idx = _pick_index(attrs, x, label, "_sparse_softmax_ce")
    if not attrs["keepdims"]:
        og = og.reshape(idx.shape)              # the class axis back, for broadcasting
    p = np.exp(x - x.max(axis=axis, keepdims=True))
    p /= p.sum(axis=axis, keepdims=True)
    p -= _one_hot_like(x, axis, idx)
    p *= og
    return p.astype(x.dtype, copy=False)


register("_sparse_softmax_ce", placement="kernel", inputs=("data", "label"),
         attrs={"axis": Int(-1), "keepdims": Bool(True)}, forward=_sparse_softmax_ce_forward,
         infer_shape=lambda attrs, s: _pick_shape(attrs, s, "_sparse_softmax_ce"),
         gradient=lambda F, a, i, o, og: [F._sparse_softmax_ce_grad(og[0], i[0], i[1], **a),
                                          None],
         doc="-log_softmax(data, axis)[label] per sample (keepdims: the axis kept with "
             "size 1).")
register("_sparse_softmax_ce_grad", placement="kernel", inputs=("out_grad", "data", "label"),
         attrs={"axis": Int(-1), "keepdims": Bool(True)},
         forward=_sparse_softmax_ce_grad_forward,
         infer_shape=like_input(1),
         doc="Gradient of _sparse_softmax_ce: (softmax(data) - one_hot(label)) * out_grad.")


def _one_hot_forward(attrs, indices):
    depth = attrs["depth"]
    idx = indices.astype(np.int64)
    out = np.full(indices.shape + (depth,), attrs["off_value"], dtype=attrs["dtype"])
    valid = (idx >= 0) & (idx < depth)
    np.put_along_axis(out, np.where(valid, idx, 0)[..., None],
                      np.where(valid, attrs["on_value"], attrs["off_value"])[..., None].astype(
                          attrs["dtype"]), axis=-1)
    return out


register("one_hot", placement="kernel", inputs=("indices",), dtype_rule="attr",
         attrs={"depth": Int(required=True), "on_value": Float(1.0), "off_value": Float(0.0),
                "dtype": Choice("float32", "float64", "int32", "int64")},
         forward=_one_hot_forward,
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else s[0] + (attrs["depth"],)]),
         gradient=lambda F, a, i, o, og: [None],
         doc="one_hot(indices, depth): a row of zeros with a one at each index.")


# ------------------------------------------------------- softmax losses
def _softmax_output_forward(attrs, x, label):
    return scipy_special().softmax(x, axis=-1 if not attrs["multi_output"] else 1).astype(x.dtype)


def _softmax_output_grad_forward(attrs, y, label):
    axis = 1 if attrs["multi_output"] else -1
    moved = np.moveaxis(y, axis, -1)
    lab = label.reshape(moved.shape[:-1]).astype(np.int64)
    grad = moved.copy()
    onehot = np.zeros_like(grad)
    np.put_along_axis(onehot, np.clip(lab, 0, grad.shape[-1] - 1)[..., None], 1.0, axis=-1)
    grad -= onehot
    if attrs["use_ignore"]:
        grad[lab == int(attrs["ignore_label"])] = 0.0
    scale = attrs["grad_scale"]
    if attrs["normalization"] == "batch":
        scale /= y.shape[0]
    elif attrs["normalization"] == "valid":
        valid = (lab != int(attrs["ignore_label"])).sum() if attrs["use_ignore"] else lab.size
        scale /= max(int(valid), 1)
    return np.moveaxis(grad * scale, -1, axis).astype(y.dtype, copy=False)


SOFTMAX_OUTPUT_ATTRS = {"grad_scale": Float(1.0), "ignore_label": Float(-1.0),
                        "use_ignore": Bool(False), "multi_output": Bool(False),
                        "normalization": Choice("null", "batch", "valid")}
def _softmax_output_shape(attrs, s):
    if s[0] is not None and len(s[0]):      # its gradient reads data at each label
        axis = 1 if attrs["multi_output"] and len(s[0]) > 1 else len(s[0]) - 1
        refuse_empty_gather("SoftmaxOutput", s[0], axis,
                            math.prod(d for k, d in enumerate(s[0]) if k != axis))
    return [s[0], s[1] if s[1] is not None or s[0] is None else s[0][:-1]], [s[0]]


register("SoftmaxOutput", placement="kernel",
         inputs=("data", "label"), attrs=dict(SOFTMAX_OUTPUT_ATTRS),
         forward=_softmax_output_forward,
         infer_shape=_softmax_output_shape,
         gradient=lambda F, a, i, o, og: [F._softmax_output_grad(o[0], i[1], **a), None],
         doc="SoftmaxOutput(data, label): softmax forward; its backward is softmax - one_hot "
             "(the cross-entropy gradient), ignoring the incoming gradient like MXNet.")
register("_softmax_output_grad", placement="kernel",
         inputs=("out", "label"), attrs=dict(SOFTMAX_OUTPUT_ATTRS),
         forward=_softmax_output_grad_forward, infer_shape=like_input(0),
         doc="Gradient of SoftmaxOutput.")
register("Softmax", placement="kernel", inputs=("data", "label"), attrs=dict(SOFTMAX_OUTPUT_ATTRS),
         forward=_softmax_output_forward,
         infer_shape=like_input(0),
         gradient=lambda F, a, i, o, og: [F._softmax_output_grad(o[0], i[1], **a), None],
         doc="Old name of SoftmaxOutput.")


def _softmax_ce_forward(attrs, x, label):
    logp = _log_softmax_forward({"axis": -1, "temperature": 1.0}, x)   # as compiled (NaN
    # at +inf: inf - inf), where scipy's log_softmax would special-case infinities
    idx = np.clip(label.astype(np.int64), 0, x.shape[-1] - 1)
    return np.array([-np.take_along_axis(logp, idx[:, None], axis=-1).sum()], dtype=x.dtype)


def _softmax_ce_shape(attrs, in_shapes):
    x, label = in_shapes
    if x is not None and len(x) != 2:
        raise OpError(f"softmax_cross_entropy: data must be 2-D (batch, classes), got {x}")
    if x is not None:
        refuse_empty_gather("softmax_cross_entropy", x, 1, x[0])
    return [x, label if label is not None or x is None else x[:1]], [(1,)]


def _softmax_ce_grad_forward(attrs, og, x, label):
    p = scipy_special().softmax(x, axis=-1)
    idx = np.clip(label.astype(np.int64), 0, x.shape[-1] - 1)
    np.put_along_axis(p, idx[:, None], np.take_along_axis(p, idx[:, None], axis=-1) - 1, axis=-1)
    return (p * og.reshape(())).astype(x.dtype, copy=False)


register("softmax_cross_entropy", placement="kernel",
         inputs=("data", "label"), forward=_softmax_ce_forward,
         infer_shape=_softmax_ce_shape,
         gradient=lambda F, a, i, o, og: [F._softmax_cross_entropy_grad(og[0], i[0], i[1]), None],
         doc="softmax_cross_entropy(data, label): the summed cross entropy, shape (1,).")
register("_softmax_cross_entropy_grad", placement="kernel", inputs=("out_grad", "data", "label"),
         forward=_softmax_ce_grad_forward, infer_shape=like_input(1),
         doc="Gradient of softmax_cross_entropy.")


def _arg_forward(fn):
    def forward(attrs, x):
        axis = attrs["axis"]
        out = fn(x, axis=axis, keepdims=attrs["keepdims"] if axis is not None else False)
        return np.asarray(out).astype(x.dtype)      # MXNet returns indices as floats
    return forward


def _arg_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        no_identity("", s, range(len(s)))         # Op.shapes names argmax or argmin
        return in_shapes, [()]
    axes = norm_axes((attrs["axis"],), len(s))
    no_identity("", s, axes)
    return in_shapes, [reduced_shape(s, axes, attrs["keepdims"])]


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(_name, placement="kernel",
             attrs={"axis": Attr("int_or_none", None), "keepdims": Bool(False)},
             forward=_arg_forward(_fn), infer_shape=_arg_shape,
             gradient=lambda F, a, i, o, og: [None],
             doc=f"{_name}(data, axis=None, keepdims=False): index of the "
                 f"{'largest' if _name == 'argmax' else 'smallest'} value (as a float, like MXNet).")


def _norm_order(attrs):
    if attrs["ord"] not in (1, 2):
        raise OpError(f"norm: ord must be 1 or 2 (as in MXNet), got {attrs['ord']}")
    return attrs["ord"]


def _norm_forward(attrs, x):
    axes = norm_axes(attrs["axis"], x.ndim)
    keep = attrs["keepdims"]
    if _norm_order(attrs) == 1:
        out = np.sum(np.abs(x), axis=axes, keepdims=keep)
    else:
        out = np.sqrt(np.sum(np.square(x), axis=axes, keepdims=keep))
    return np.asarray(out).astype(attrs["out_dtype"] or x.dtype, copy=False)


def _norm_shape(attrs, in_shapes):
    _norm_order(attrs)
    return _reduce_shape(dict(attrs, exclude=False), in_shapes)


def _norm_grad(F, attrs, inputs, outputs, out_grads):
    """ord=1: sign(x); ord=2: x / norm (each spread back over the reduced axes)."""
    x, keep = inputs[0], {"axis": attrs["axis"], "keepdims": attrs["keepdims"]}
    og = F._unreduce(out_grads[0], x, **keep)
    if attrs["ord"] == 1:
        return [og * F.sign(x)]
    return [og * x / F._unreduce(outputs[0], x, **keep)]


# One op, as in MXNet (so `sym.norm(x, name='n')` is one node named n); the compiler
# lowers it to sum(abs(x)) or sqrt(sum(square(x))), which fuse (compiler/lower.py).
register("norm", placement="lowered",
         attrs={"ord": Int(2), "axis": OptShape(None), "keepdims": Bool(False),
                "out_dtype": Attr("str", None, choices=("float32", "float64",
                                                        "float16", "int32", "int64"))},
         forward=_norm_forward, infer_shape=_norm_shape, gradient=_norm_grad,
         infer_dtype=lambda attrs, dtypes: attrs["out_dtype"] or dtypes[0],
         doc="norm(data, ord=2, axis=None, keepdims=False): ord=1 sums absolute values, "
             "ord=2 is the square root of the sum of squares (the Frobenius norm when axis "
             "names two axes).")
