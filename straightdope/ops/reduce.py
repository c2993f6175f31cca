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
# MXNet's attributes: `dtype` is the output's (computed in float64 then, as MXNet's
# accumulation), `use_length` adds a `length` input: along the axis only the first
# length[...] entries are normalised, the rest are 0. The compiled kernel covers neither:
# with them the op runs its NumPy forward between compiled segments (`host_when`).
SOFTMAX_ATTRS = {"axis": Int(-1), "temperature": Float(1.0),
                 "dtype": Attr("str", None, choices=("float16", "float32", "float64")),
                 "use_length": Bool(False)}


def _softmax_inputs(attrs):
    return ("data", "length") if attrs["use_length"] else ("data",)


def _softmax_on_host(attrs, shapes=None):
    return attrs["use_length"] or attrs["dtype"] is not None


def _length_mask(attrs, shape, length):
    """True at the positions along the axis below `length` (shaped like data without
    the axis); None without a length."""
    if length is None:
        return None
    axis = attrs["axis"] % len(shape)
    positions = np.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1))
    return positions < np.expand_dims(length.astype(np.int64), axis)


def _shifted(attrs, x, mask=None):
    """x / temperature - its maximum along the axis: exp() of it cannot overflow.
    (Plain NumPy: scipy.special's versions cost ~3x more on small arrays, which a
    loss computed imperatively at every step pays.)"""
    z = x / attrs["temperature"] if attrs["temperature"] != 1.0 else x
    if mask is None:
        return z - z.max(axis=attrs["axis"], keepdims=True)
    z = np.where(mask, z, -np.inf)
    top = z.max(axis=attrs["axis"], keepdims=True)
    return z - np.where(np.isfinite(top), top, 0)   # (a length of 0 masks a row whole)


def _out_dtype(attrs, x):
    return np.dtype(attrs["dtype"]) if attrs["dtype"] is not None else x.dtype


def _softmax_forward(attrs, x, length=None):
    if x.size == 0:                 # nothing to normalise (and no max to shift by)
        return x.astype(_out_dtype(attrs, x))
    dtype = _out_dtype(attrs, x)
    if attrs["dtype"] is not None:
        x = x.astype(np.float64)
    mask = _length_mask(attrs, x.shape, length)
    e = np.exp(_shifted(attrs, x, mask))
    total = e.sum(axis=attrs["axis"], keepdims=True)
    e /= total if mask is None else np.where(total > 0, total, 1)
    return e.astype(dtype, copy=False)


def _log_softmax_forward(attrs, x, length=None):
    if x.size == 0:
        return x.astype(_out_dtype(attrs, x))
    dtype = _out_dtype(attrs, x)
    if attrs["dtype"] is not None:
        x = x.astype(np.float64)
    mask = _length_mask(attrs, x.shape, length)
    z = _shifted(attrs, x, mask)
    with np.errstate(divide="ignore"):
        z -= np.log(np.exp(z).sum(axis=attrs["axis"], keepdims=True))
    if mask is not None:
        z = np.where(mask, z, 0)
    return z.astype(dtype, copy=False)


def _softmax_grad(F, attrs, inputs, outputs, out_grads):
    if _softmax_on_host(attrs):
        return _host_grad(F, attrs, inputs, outputs, out_grads, "softmax")
    y, og = outputs[0], out_grads[0]
    g = y * (og - F.sum(og * y, axis=attrs["axis"], keepdims=True))
    return [g / attrs["temperature"] if attrs["temperature"] != 1.0 else g]


def _log_softmax_grad(F, attrs, inputs, outputs, out_grads):
    if _softmax_on_host(attrs):
        return _host_grad(F, attrs, inputs, outputs, out_grads, "log_softmax")
    y, og = outputs[0], out_grads[0]
    g = og - F.exp(y) * F.sum(og, axis=attrs["axis"], keepdims=True)
    return [g / attrs["temperature"] if attrs["temperature"] != 1.0 else g]


def _softmin_grad(F, attrs, inputs, outputs, out_grads):
    if _softmax_on_host(attrs):
        return _host_grad(F, attrs, inputs, outputs, out_grads, "softmin")
    return [-_softmax_grad(F, attrs, inputs, outputs, out_grads)[0]]


def _host_grad(F, attrs, inputs, outputs, out_grads, kind):
    """The gradient with a length or an output dtype: one NumPy op (`_softmax_grad`)."""
    grad = F._softmax_grad(out_grads[0], outputs[0], *inputs, kind=kind, **attrs)
    return [grad, None] if attrs["use_length"] else [grad]


def _softmax_grad_forward(attrs, og, y, data, length=None):
    """d data of softmax/log_softmax/softmin from the output y, in data's dtype; zero past
    each length (and no gradient for the length)."""
    axis = attrs["axis"]
    og, y = og.astype(np.float64), y.astype(np.float64)
    mask = _length_mask(attrs, y.shape, length)
    if mask is not None:
        og = np.where(mask, og, 0.0)
    if attrs["kind"] == "log_softmax":
        g = og - np.exp(y) * og.sum(axis=axis, keepdims=True)
        if mask is not None:
            g = np.where(mask, g, 0.0)
    else:
        g = y * (og - (og * y).sum(axis=axis, keepdims=True))
        if attrs["kind"] == "softmin":
            g = -g
    return (g / attrs["temperature"]).astype(data.dtype, copy=False)


def _softmax_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    axis = norm_axes((attrs["axis"],), len(s))[0]
    if not attrs["use_length"]:
        return in_shapes, [s]
    rest = s[:axis] + s[axis + 1:]
    length = in_shapes[1]
    if length is not None and tuple(length) != rest:
        raise OpError(f"softmax: with use_length, length must have data's shape without "
                      f"axis {axis}: {rest}, got {tuple(length)}")
    return [s, rest], [s]


def _softmax_dtype(attrs, dtypes):
    return attrs["dtype"] if attrs["dtype"] is not None else dtypes[0]


def _softmax_entry(name, forward, gradient, doc, placement="kernel"):
    register(name, placement=placement, inputs=("data", "length"),
             optional_inputs=_softmax_inputs, index_inputs=("length",),
             attrs=dict(SOFTMAX_ATTRS), forward=forward, infer_shape=_softmax_shape,
             infer_dtype=_softmax_dtype, gradient=gradient, key_attrs=("axis",),
             host_when=_softmax_on_host if placement == "kernel" else None, doc=doc)


_softmax_entry("softmax", _softmax_forward, _softmax_grad,
               "softmax(data, axis=-1, temperature=1, dtype=None, use_length=False): "
               "exp(x) / sum(exp(x)) along `axis` (with use_length, of the first "
               "length[...] entries; 0 after them).")
_softmax_entry("softmin", lambda attrs, x, length=None: _softmax_forward(attrs, -x, length),
               _softmin_grad, "softmin(data, axis=-1): softmax of -data (the smallest "
               "value weighs most).", placement="host")
_softmax_entry("log_softmax", _log_softmax_forward, _log_softmax_grad,
               "log_softmax(data, axis=-1), computed stably (with use_length: 0 after "
               "each length).")
register("_softmax_grad", placement="host", inputs=("out_grad", "output", "data", "length"),
         optional_inputs=lambda attrs: ("out_grad", "output") + _softmax_inputs(attrs),
         attrs=dict(SOFTMAX_ATTRS, kind=Choice("softmax", "log_softmax", "softmin")),
         index_inputs=("length",), infer_dtype=lambda attrs, dtypes: dtypes[2],
         forward=_softmax_grad_forward, infer_shape=like_input(2),
         doc="Gradient of softmax/log_softmax/softmin with a length or an output dtype, "
             "in data's dtype.")


# ------------------------------------------------------------- pick, one_hot
def _pick_index(attrs, x, index, name="pick"):
    """The axis, and the indices clipped (mode 'wrap': wrapped) into range, shaped like x
    with 1 on the axis."""
    axis = axis_in(name, attrs["axis"], x.shape)
    idx = index.astype(np.int64)                # a new array: clip it in place (ufuncs
    if attrs.get("mode") == "wrap":             # directly: np.clip's Python costs more
        np.mod(idx, x.shape[axis], out=idx)     # than the work at small sizes)
    np.maximum(idx, 0, out=idx)
    np.minimum(idx, x.shape[axis] - 1, out=idx)
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


PICK_ATTRS = {"axis": Int(-1), "keepdims": Bool(False), "mode": Choice("clip", "wrap")}


def _wraps(attrs, shapes):
    return attrs["mode"] == "wrap"          # the kernels clip


register("pick", placement="kernel", host_when=_wraps,
         inputs=("data", "index"), attrs=dict(PICK_ATTRS), forward=_pick_forward,
         infer_shape=_pick_shape,
         gradient=lambda F, a, i, o, og: [F._pick_grad(og[0], i[0], i[1], **a), None],
         doc="pick(data, index, axis=-1): data[..., index[...], ...] along `axis`.")
register("_pick_grad", placement="kernel", host_when=_wraps,
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
    if depth == 0 or out.size == 0:
        return out
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
# SoftmaxOutput (MXNet's softmax_output-inl.h) views data as 2-D (batch, the rest
# flattened) and normalises each row; `preserve_shape` normalises the last axis instead,
# `multi_output` axis 1 of (batch, classes, rest). Its backward ignores the incoming
# gradient (unless `out_grad`): softmax - one_hot(label) (label smoothed by
# `smooth_alpha`), or softmax - label when label has data's shape (probabilities),
# scaled by grad_scale / the count `normalization` names. The compiled kernels cover
# hard labels without smoothing where the softmax axis is the last one or axis 1 of
# multi_output; the rest runs on the host (`_softmax_output_on_host`).
def _softmax_output_view(attrs, shape):
    """The shape SoftmaxOutput normalises data in: its axis 1 is the softmax axis."""
    # (products of the other axes, not size // n: an empty batch keeps its class axis)
    n = shape[0] if shape else 1
    if attrs["multi_output"]:
        k = shape[1] if len(shape) > 1 else 1
        return (n, k, math.prod(shape[2:]))
    if attrs["preserve_shape"]:
        return (math.prod(shape[:-1]), shape[-1]) if shape else (1, 1)
    return (n, math.prod(shape[1:]))


def _softmax_output_on_host(attrs, shapes):
    data = tuple(shapes[0])
    label = tuple(shapes[1]) if len(shapes) > 1 else None
    return (len(data) < 2 or (not attrs["multi_output"] and len(data) > 2) or label == data
            or attrs["smooth_alpha"] != 0 or attrs["out_grad"]
            or (attrs["multi_output"] and attrs["normalization"] != "valid"
                and math.prod(data[2:]) != 1)
            or (attrs["normalization"] == "valid" and not attrs["use_ignore"]))


def _softmax_output_forward(attrs, x, label):
    view = _softmax_output_view(attrs, x.shape)
    z = x.reshape(view)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e.reshape(x.shape).astype(x.dtype, copy=False)


def _softmax_output_grad_forward(attrs, y, label, og=None):
    scale = attrs["grad_scale"]
    if label.shape == y.shape:                      # probabilities as labels
        grad = (y - label) * scale
        return (grad if og is None else grad * og).astype(y.dtype, copy=False)
    view = _softmax_output_view(attrs, y.shape)
    moved = np.moveaxis(y.reshape(view), 1, -1)     # classes last: (n, rest, k) or (rows, k)
    if attrs["multi_output"]:
        lab = label.reshape(moved.shape[:-1])
        batch = view[0]
    else:                           # MXNet reads the first `rows` labels, counts them all
        lab = label.reshape(-1)[:moved.shape[0]]
        batch = label.size
    picks = np.clip(lab.astype(np.int64), 0, moved.shape[-1] - 1)[..., None]
    alpha = attrs["smooth_alpha"]
    target = np.full_like(moved, alpha / max(moved.shape[-1] - 1, 1) if alpha else 0.0)
    np.put_along_axis(target, picks, 1.0 - alpha, axis=-1)
    grad = moved - target
    if attrs["use_ignore"]:
        grad[lab.astype(np.int64) == int(attrs["ignore_label"])] = 0.0
    if attrs["normalization"] == "batch":
        scale /= batch
    elif attrs["normalization"] == "valid":
        ignored = int((label.astype(np.int64) == int(attrs["ignore_label"])).sum())
        scale /= max(label.size - ignored, 1)
    if attrs["multi_output"] and attrs["normalization"] != "valid":
        scale /= view[2]
    grad = np.moveaxis(grad * scale, -1, 1).reshape(y.shape)
    return (grad if og is None else grad * og).astype(y.dtype, copy=False)


SOFTMAX_OUTPUT_ATTRS = {"grad_scale": Float(1.0), "ignore_label": Float(-1.0),
                        "use_ignore": Bool(False), "multi_output": Bool(False),
                        "preserve_shape": Bool(False),
                        "normalization": Choice("null", "batch", "valid"),
                        "out_grad": Bool(False), "smooth_alpha": Float(0.0)}


def _softmax_output_shape(attrs, s):
    data, label = s
    if data is None:
        return s, [None]
    if len(data) and (label is None or tuple(label) != tuple(data)):  # hard labels: its
        axis = 1 if attrs["multi_output"] and len(data) > 1 else len(data) - 1  # gradient
        refuse_empty_gather("SoftmaxOutput", data, axis,     # reads data at each label
                            math.prod(d for k, d in enumerate(data) if k != axis))
    if label is not None and tuple(label) == tuple(data):
        return s, [data]
    if attrs["multi_output"]:
        view = _softmax_output_view(attrs, data)
        allowed = [(view[0], view[2]), (data[0],) + tuple(data[2:]),
                   (data[0], 1) + tuple(data[2:])]
        if label is None:
            return [data, allowed[0]], [data]
        if tuple(label) not in allowed:
            raise OpError(f"SoftmaxOutput: with multi_output, label must have shape "
                          f"{allowed[0]} or {allowed[1]} for data {tuple(data)} (or data's "
                          f"shape: probabilities), got {tuple(label)}")
        return s, [data]
    expected = tuple(data[:-1])
    if label is not None and tuple(label) != expected:
        raise OpError(f"SoftmaxOutput: label must have shape {expected} for data "
                      f"{tuple(data)} (or data's shape: probabilities), got {tuple(label)}")
    return [data, expected], [data]


def _softmax_output_gradient(F, attrs, inputs, outputs, out_grads):
    extra = [out_grads[0]] if attrs["out_grad"] else []
    return [F._softmax_output_grad(outputs[0], inputs[1], *extra, **attrs), None]


for _name in ("SoftmaxOutput", "Softmax"):
    register(_name, placement="kernel",
             inputs=("data", "label"), attrs=dict(SOFTMAX_OUTPUT_ATTRS),
             forward=_softmax_output_forward, infer_shape=_softmax_output_shape,
             host_when=_softmax_output_on_host, gradient=_softmax_output_gradient,
             doc="SoftmaxOutput(data, label): softmax forward; its backward is softmax - "
                 "one_hot(label) (the cross-entropy gradient), ignoring the incoming "
                 "gradient like MXNet." if _name == "SoftmaxOutput" else
                 "Old name of SoftmaxOutput.")
register("_softmax_output_grad", placement="kernel",
         inputs=("out", "label", "ograd"), attrs=dict(SOFTMAX_OUTPUT_ATTRS),
         optional_inputs=lambda attrs: ("out", "label") + (
             ("ograd",) if attrs["out_grad"] else ()),
         forward=_softmax_output_grad_forward, infer_shape=like_input(0),
         host_when=_softmax_output_on_host,
         doc="Gradient of SoftmaxOutput.")


SOFTMAX_DEFAULTS = {k: a.default for k, a in SOFTMAX_ATTRS.items()}


def _softmax_ce_forward(attrs, x, label):
    logp = _log_softmax_forward(dict(SOFTMAX_DEFAULTS), x)   # as compiled (NaN
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
    og, norm = out_grads[0], outputs[0]
    if attrs["out_dtype"] is not None:      # the gradient is in the data's dtype (MXNet)
        og, norm = F._cast_like(og, x), F._cast_like(norm, x)
    og = F._unreduce(og, x, **keep)
    if attrs["ord"] == 1:
        return [og * F.sign(x)]
    return [og * x / F._unreduce(norm, x, **keep)]


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
