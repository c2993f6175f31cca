"""Neural-network ops: dot products, FullyConnected, Convolution, Pooling,
BatchNorm, LayerNorm and Dropout.

The NumPy forwards here are the reference that every other path (the
generated Numba code, the plain interpreter) is checked against.
Each heavy gradient is an op of its own (`_conv_grad_data`, ...), so that the
backward graph the compiler builds has the same kind of nodes as the forward.
"""
import math
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .registry import (OPS, Bool, Choice, Float, Int, OpError, OptFloat, Shape, axis_in,
                       like_input, register)
from .reduce import norm_axes


# -------------------------------------------------------------------- dot
DOT_ATTRS = {"transpose_a": Bool(False), "transpose_b": Bool(False)}


def _t(x, flag, batch=False):
    if not flag:
        return x
    return np.swapaxes(x, -1, -2) if batch else x.T


def _dot_operands(attrs, a, b):
    """dot's operands as it multiplies them, MXNet's rule for N-d arrays: transpose_a
    moves lhs's first axis (the one it sums over) to the end, transpose_b moves rhs's
    last axis to the front (for matrices, the transpose; not a reversal of every axis)."""
    if attrs["transpose_a"] and a.ndim > 1:
        a = np.moveaxis(a, 0, -1)
    if attrs["transpose_b"] and b.ndim > 1:
        b = np.moveaxis(b, -1, 0)
    return a, b


def _dot_forward(attrs, a, b):
    a, b = _dot_operands(attrs, a, b)
    if a.ndim > 2 or b.ndim > 2:
        return np.tensordot(a, b, axes=1).astype(a.dtype, copy=False)
    return np.dot(a, b)


def _dot_shape(attrs, in_shapes, batch=False):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None]
    ta = a[1:] + a[:1] if attrs["transpose_a"] and not batch else a     # (_dot_operands)
    tb = b[-1:] + b[:-1] if attrs["transpose_b"] and not batch else b
    if not batch and (len(a) == 0 or len(b) == 0):
        return in_shapes, [ta or tb]    # a 0-d operand scales the other, as in np.dot: the
                                        # gradient of a vector . vector dot is such a dot
    if batch:
        if len(a) != 3 or len(b) != 3 or a[0] != b[0]:
            raise OpError(f"batch_dot: needs two 3-D arrays with the same batch size, got {a} "
                          f"and {b}")
        ta = a[:1] + (a[1:][::-1] if attrs["transpose_a"] else a[1:])
        tb = b[:1] + (b[1:][::-1] if attrs["transpose_b"] else b[1:])
        if ta[2] != tb[1]:
            raise OpError(f"batch_dot: inner dimensions differ: {ta} x {tb}")
        return in_shapes, [(ta[0], ta[1], tb[2])]
    inner_a = ta[-1]
    inner_b = tb[0]
    if inner_a != inner_b:
        raise OpError(f"dot: shapes {a} and {b} are not aligned: {inner_a} (last axis of the "
                      f"first{', transposed' if attrs['transpose_a'] else ''}) != {inner_b} "
                      f"(first axis of the second{', transposed' if attrs['transpose_b'] else ''})")
    return in_shapes, [tuple(ta[:-1]) + tuple(tb[1:])]


def _dot_grad_rule(F, op, attrs, a, b, og):
    """The four transpose cases of d(op(A) op(B)), written with the same dot op."""
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if not ta and not tb:
        return op(og, b, transpose_b=True), op(a, og, transpose_a=True)
    if ta and not tb:
        return op(b, og, transpose_b=True), op(a, og)
    if not ta and tb:
        return op(og, b), op(og, a, transpose_a=True)
    return op(b, og, transpose_a=True, transpose_b=True), op(og, a, transpose_a=True,
                                                             transpose_b=True)


def _dot_grad(F, attrs, inputs, outputs, out_grads):
    """MXNet's: the rule for matrices, on the operands and the output gradient seen as the
    matrices dot multiplies (`_dot_matrix`, views), reshaped back to the operands."""
    a, b = inputs

    def matrix(x, role):
        return F._dot_matrix(x, a, b, role=role, **attrs)
    da, db = _dot_grad_rule(F, F.dot, attrs, matrix(a, "lhs"), matrix(b, "rhs"),
                            matrix(out_grads[0], "out"))
    return [F.reshape_like(da, a), F.reshape_like(db, b)]


def _dot_matrix_shape(attrs, in_shapes):
    """The matrix (rows, columns) MXNet's dot kernel sees for its lhs, rhs or output,
    from the operands' shapes: lhs (prod of all but its last axis, last axis), or (first
    axis, the rest) when transposed; rhs the other way round; the output (lhs's rows,
    rhs's columns)."""
    data, a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None]
    if len(a) == 0 or len(b) == 0:
        raise OpError("dot: no gradient through a 0-d operand (MXNet refuses them): "
                      "multiply with broadcast_mul instead")
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    rows_a = (a[0], math.prod(a[1:])) if ta else (math.prod(a[:-1]), a[-1])
    rows_b = (math.prod(b[:-1]), b[-1]) if tb else (b[0], math.prod(b[1:]))
    shape = {"lhs": rows_a, "rhs": rows_b,
             "out": (rows_a[1] if ta else rows_a[0], rows_b[0] if tb else rows_b[1])}[
        attrs["role"]]
    if data is not None and None not in data and math.prod(data) != math.prod(shape):
        raise OpError(f"_dot_matrix: data of shape {data} is not the {attrs['role']} of a "
                      f"dot of {a} and {b} (a {shape} matrix)")
    return in_shapes, [shape]


def _batch_dot_grad(F, attrs, inputs, outputs, out_grads):
    return list(_dot_grad_rule(F, F.batch_dot, attrs, inputs[0], inputs[1], out_grads[0]))


register("dot", placement="kernel",
         inputs=("lhs", "rhs"), attrs=dict(DOT_ATTRS), forward=_dot_forward,
         infer_shape=_dot_shape, gradient=_dot_grad,
         doc="dot(lhs, rhs, transpose_a=False, transpose_b=False): matrix product.")
register("_dot_matrix", placement="view", inputs=("data", "lhs", "rhs"),
         attrs=dict(DOT_ATTRS, role=Choice("lhs", "rhs", "out", required=True)),
         forward=lambda attrs, x, a, b: x.reshape(
             _dot_matrix_shape(attrs, [x.shape, a.shape, b.shape])[1][0]).copy(),
         infer_shape=_dot_matrix_shape, index_inputs=("lhs", "rhs"),
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0]), None, None],
         doc="_dot_matrix(data, lhs, rhs, role): data (dot's lhs, rhs or output) as the "
             "matrix MXNet's dot kernel multiplies (dot's gradient).")
register("batch_dot", placement="kernel", inputs=("lhs", "rhs"), attrs=dict(DOT_ATTRS),
         forward=lambda attrs, a, b: np.matmul(_t(a, attrs["transpose_a"], True),
                                               _t(b, attrs["transpose_b"], True)),
         infer_shape=lambda attrs, s: _dot_shape(attrs, s, batch=True), gradient=_batch_dot_grad,
         doc="batch_dot(lhs, rhs): a matrix product per batch element (3-D inputs).")


# --------------------------------------------------------- FullyConnected
FC_ATTRS = {"num_hidden": Int(required=True, minimum=1), "no_bias": Bool(False), "flatten": Bool(True)}


def _fc_inputs(attrs):
    return ("data", "weight") if attrs["no_bias"] else ("data", "weight", "bias")


def _fc_shape(attrs, in_shapes):
    data = in_shapes[0]
    hidden = attrs["num_hidden"]
    if data is None:
        return in_shapes, [None]
    in_units = int(np.prod(data[1:])) if attrs["flatten"] else data[-1]
    weight = (hidden, in_units)
    if in_shapes[1] is not None and tuple(in_shapes[1]) != weight:
        raise OpError(f"FullyConnected: data of shape {data} needs a weight of shape {weight} "
                      f"(num_hidden, in_units), but the weight has shape {in_shapes[1]}. "
                      f"Check in_units, or leave it out to infer it from the data.")
    shapes = [data, weight] + ([] if attrs["no_bias"] else [(hidden,)])
    out = (data[0], hidden) if attrs["flatten"] else tuple(data[:-1]) + (hidden,)
    return shapes, [out]


def _fc_forward(attrs, x, w, b=None):
    if attrs["flatten"] and x.ndim != 2:
        x = x.reshape(x.shape[0], math.prod(x.shape[1:]))     # works for batch 0 too
    y = x @ w.T
    if b is not None:
        y += b
    return y


def _fc_grad(F, attrs, inputs, outputs, out_grads):
    x, w = inputs[0], inputs[1]
    og = out_grads[0]
    if attrs["flatten"]:
        x2, og2 = F.Flatten(x), og
        dx = F.reshape_like(F.dot(og, w), x)
    else:
        # 2-D dots, so the gradient's own gradient (second order) is a 2-D dot's
        x2, og2 = F._flatten_leading(x), F._flatten_leading(og)
        dx = F.reshape_like(F.dot(og2, w), x)
    grads = [dx, F.dot(og2, x2, transpose_a=True)]
    if not attrs["no_bias"]:
        grads.append(F.sum(og2, axis=0))
    return grads


register("FullyConnected", placement="lowered", inputs=("data", "weight", "bias"),
         dtype_rule="strict", attrs=dict(FC_ATTRS),
         optional_inputs=_fc_inputs, forward=_fc_forward, infer_shape=_fc_shape,
         gradient=_fc_grad,
         key_attrs=("num_hidden",),
         doc="FullyConnected(data, weight, bias, num_hidden): data . weight^T + bias "
             "(data flattened to 2-D unless flatten=False).")


# ------------------------------------------------------------ convolution
# One op for 1-, 2- and 3-D data, as in MXNet: the kernel's length says how many spatial
# axes follow (batch, channels). The compiler has Numba kernels for 2-D; the other ranks
# run these NumPy forwards between compiled segments (compiler/loops.py).
LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
CONV_ATTRS = {"kernel": Shape(required=True, minimum=1), "stride": Shape((), minimum=1),
              "dilate": Shape((), minimum=1), "pad": Shape((), minimum=0),
              "num_filter": Int(required=True, minimum=1), "num_group": Int(1, minimum=1),
              "no_bias": Bool(False), "layout": Choice("NCHW", "NCW", "NCDHW", "None"),
              "workspace": Int(1024), "cudnn_tune": Choice("None", "off", "limited_workspace",
                                                           "fastest"),
              "cudnn_off": Bool(False)}


def conv_params(attrs, nd=None):
    """(kernel, stride, pad, dilate), each a tuple with one entry per spatial axis."""
    kernel = tuple(attrs["kernel"])
    nd = nd or len(kernel)
    if len(kernel) != nd or nd not in LAYOUTS:
        raise OpError(f"the kernel must have 1, 2 or 3 sizes (one per spatial axis), "
                      f"got kernel={kernel}")

    def get(name, default):
        v = tuple(attrs.get(name) or ())
        if v and len(v) != nd:
            raise OpError(f"{name}={v} must have {nd} entries, like kernel={kernel}")
        return v or (default,) * nd
    return kernel, get("stride", 1), get("pad", 0), get("dilate", 1)


def conv_out_size(n, k, s, p, d, ceil=False):
    span = d * (k - 1) + 1
    num = n + 2 * p - span
    if num < 0:
        raise OpError(f"the window ({span} wide after dilation) is larger than the padded "
                      f"input ({n} + 2*{p})")
    return (-(-num // s) if ceil else num // s) + 1


def _conv_inputs(attrs):
    return ("data", "weight") if attrs["no_bias"] else ("data", "weight", "bias")


def _check_rank(op, data, nd):
    if len(data) != nd + 2:
        raise OpError(f"{op}: a {nd}-D kernel needs {nd + 2}-D data ({LAYOUTS[nd]}: batch, "
                      f"channels, then {nd} spatial axes), got data of shape {data}")


def _conv_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    kernel, stride, pad, dilate = conv_params(attrs)
    _check_rank("Convolution", data, len(kernel))
    groups, filters = attrs["num_group"], attrs["num_filter"]
    if data[1] % groups:
        raise OpError(f"Convolution: {data[1]} input channels do not split into "
                      f"{groups} groups")
    weight = (filters, data[1] // groups) + kernel
    if in_shapes[1] is not None and tuple(in_shapes[1]) != weight:
        raise OpError(f"Convolution: data {data} needs a weight of shape {weight}, got "
                      f"{in_shapes[1]}")
    out = (data[0], filters) + tuple(conv_out_size(*a) for a in
                                     zip(data[2:], kernel, stride, pad, dilate))
    return [data, weight] + ([] if attrs["no_bias"] else [(filters,)]), [out]


def _windows(x, kernel, stride, pad, dilate, fill=0.0, extra=None):
    """(N, C, *out, *kernel) view of the padded input: the im2col matrix, unfolded."""
    nd = len(kernel)
    extra = extra or (0,) * nd
    if any(pad) or any(extra):
        x = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(pad, extra)),
                   constant_values=fill)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilate))
    win = sliding_window_view(x, spans, axis=tuple(range(2, 2 + nd)))
    return win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
               + tuple(slice(None, None, d) for d in dilate)]


def _offsets(kernel, stride, dilate, out):
    """For each kernel position: its index, and the slices of the padded input it reads
    for all outputs at once (what a transposed convolution adds back into)."""
    for index in np.ndindex(*kernel):
        yield index, tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                           for i, s, d, o in zip(index, stride, dilate, out))


def _conv_forward(attrs, x, w, b=None):
    kernel, stride, pad, dilate = conv_params(attrs)
    nd = len(kernel)
    cols = _windows(x, kernel, stride, pad, dilate)
    g = attrs["num_group"]
    cin, fout = x.shape[1] // g, w.shape[0] // g
    window_axes = [1] + list(range(2 + nd, 2 + 2 * nd))
    outs = [np.tensordot(cols[:, k * cin:(k + 1) * cin], w[k * fout:(k + 1) * fout],
                         axes=(window_axes, list(range(1, 2 + nd)))) for k in range(g)]
    y = np.concatenate(outs, axis=-1) if g > 1 else outs[0]   # (N, *out, F)
    y = np.ascontiguousarray(np.moveaxis(y, -1, 1))
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y.astype(x.dtype, copy=False)


def _transposed_conv(og, w, in_shape, attrs):
    """The gradient of a convolution wrt its data: each output's pull spread back over
    the window it read. Also the forward of Deconvolution (a transposed convolution)."""
    kernel, stride, pad, dilate = conv_params(attrs)
    nd = len(kernel)
    g = attrs["num_group"]
    cin, fout = in_shape[1] // g, w.shape[0] // g
    out = og.shape[2:]
    padded = np.zeros(in_shape[:2] + tuple(n + 2 * p for n, p in zip(in_shape[2:], pad)),
                      dtype=og.dtype)
    for k in range(g):
        # (N, cin, *out, *kernel): how much each output pulls on each window element
        pulls = np.moveaxis(np.tensordot(og[:, k * fout:(k + 1) * fout],
                                         w[k * fout:(k + 1) * fout], axes=([1], [0])),
                            1 + nd, 1)
        target = padded[:, k * cin:(k + 1) * cin]
        for index, where in _offsets(kernel, stride, dilate, out):
            target[(slice(None), slice(None)) + where] += pulls[(Ellipsis,) + index]
    inner = tuple(slice(p, p + n) for p, n in zip(pad, in_shape[2:]))
    return np.ascontiguousarray(padded[(slice(None), slice(None)) + inner])


def _conv_grad_data_forward(attrs, og, w, x):
    return _transposed_conv(og, w, x.shape, attrs)


def _conv_grad_weight_forward(attrs, og, x, w):
    kernel, stride, pad, dilate = conv_params(attrs)
    nd = len(kernel)
    cols = _windows(x, kernel, stride, pad, dilate)
    g = attrs["num_group"]
    cin, fout = x.shape[1] // g, w.shape[0] // g
    summed = [0] + list(range(2, 2 + nd))       # batch and output positions
    parts = [np.tensordot(og[:, k * fout:(k + 1) * fout], cols[:, k * cin:(k + 1) * cin],
                          axes=(summed, summed)) for k in range(g)]
    return np.concatenate(parts, axis=0).astype(w.dtype, copy=False)


def _bias_axes(attrs):
    return (0,) + tuple(range(2, 2 + len(attrs["kernel"])))


def _gradient_via(data_op, weight_op):
    """The gradient of a convolution-like op: two ops of its own for data and weight,
    and for the bias the output gradient summed over all but the channel axis."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        x, w = inputs[0], inputs[1]
        og = out_grads[0]
        grads = [getattr(F, data_op)(og, w, x, **attrs),
                 getattr(F, weight_op)(og, x, w, **attrs)]
        if not attrs["no_bias"]:
            grads.append(F.sum(og, axis=_bias_axes(attrs)))
        return grads
    return gradient


register("Convolution", placement="kernel", kernel_ndim=4, inputs=("data", "weight", "bias"),
         dtype_rule="strict", attrs=dict(CONV_ATTRS),
         optional_inputs=_conv_inputs, forward=_conv_forward, infer_shape=_conv_shape,
         gradient=_gradient_via("_conv_grad_data", "_conv_grad_weight"),
         key_attrs=("num_filter", "kernel"),
         doc="Convolution(data, weight, bias, kernel, num_filter, stride, pad, dilate, "
             "num_group): 1-, 2- or 3-D cross-correlation (NCW, NCHW, NCDHW).")
register("_conv_grad_data", placement="kernel", kernel_ndim=4,
         inputs=("out_grad", "weight", "data"), attrs=dict(CONV_ATTRS),
         forward=_conv_grad_data_forward, infer_shape=like_input(2),
         doc="Gradient of Convolution wrt its data (a transposed convolution).")
register("_conv_grad_weight", placement="kernel", kernel_ndim=4,
         inputs=("out_grad", "data", "weight"), attrs=dict(CONV_ATTRS),
         forward=_conv_grad_weight_forward, infer_shape=like_input(2),
         doc="Gradient of Convolution wrt its weight.")


# ---------------------------------------------------------- Deconvolution
# A transposed convolution ("fractionally strided"): each input position spreads its
# value, weighted by the kernel, over a window of the output, the gradient of a
# Convolution wrt its data. Its weight is (in_channels, num_filter // groups, *kernel),
# and its output is (in - 1) * stride - 2 * pad + dilate * (kernel - 1) + 1 + adj.
DECONV_ATTRS = {**CONV_ATTRS, "adj": Shape((), minimum=0), "target_shape": Shape(()),
                "no_bias": Bool(True)}


def _deconv_out(attrs, spatial):
    kernel, stride, pad, dilate = conv_params(attrs)
    adj = tuple(attrs["adj"]) or (0,) * len(kernel)
    if attrs["target_shape"]:
        return tuple(attrs["target_shape"])
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + 1 + a
                 for n, k, s, p, d, a in zip(spatial, kernel, stride, pad, dilate, adj))


def _deconv_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    kernel = conv_params(attrs)[0]
    _check_rank("Deconvolution", data, len(kernel))
    groups, filters = attrs["num_group"], attrs["num_filter"]
    if data[1] % groups or filters % groups:
        raise OpError(f"Deconvolution: {data[1]} input channels and num_filter={filters} "
                      f"must both split into {groups} groups")
    weight = (data[1], filters // groups) + kernel
    if in_shapes[1] is not None and tuple(in_shapes[1]) != weight:
        raise OpError(f"Deconvolution: data {data} needs a weight of shape {weight}, got "
                      f"{in_shapes[1]}")
    out = (data[0], filters) + _deconv_out(attrs, data[2:])
    if any(n < 1 for n in out[2:]):
        raise OpError(f"Deconvolution: data {data} with these attributes gives an empty "
                      f"output {out}")
    return [data, weight] + ([] if attrs["no_bias"] else [(filters,)]), [out]


def _deconv_forward(attrs, x, w, b=None):
    out = (x.shape[0], attrs["num_filter"]) + _deconv_out(attrs, x.shape[2:])
    y = _transposed_conv(x, w, out, attrs).astype(x.dtype, copy=False)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * (x.ndim - 2))
    return y


def _as_conv(attrs, num_filter):
    return {k: v for k, v in attrs.items() if k in CONV_ATTRS} | {
        "num_filter": num_filter, "no_bias": True}


def _deconv_grad_data_forward(attrs, og, w, x):
    # the Convolution that the Deconvolution transposes, with its weight
    return _conv_forward(_as_conv(attrs, x.shape[1]), og, w)


def _deconv_grad_weight_forward(attrs, og, x, w):
    # a Convolution's weight gradient with the roles of data and output swapped
    return _conv_grad_weight_forward(_as_conv(attrs, x.shape[1]), x, og, w)


register("Deconvolution", placement="host", inputs=("data", "weight", "bias"),
         dtype_rule="strict", attrs=dict(DECONV_ATTRS),
         optional_inputs=_conv_inputs, forward=_deconv_forward, infer_shape=_deconv_shape,
         gradient=_gradient_via("_deconv_grad_data", "_deconv_grad_weight"),
         doc="Deconvolution(data, weight, bias, kernel, num_filter, stride, pad, dilate, "
             "adj, target_shape, num_group): the transposed convolution (1-, 2- or 3-D).")
register("_deconv_grad_data", placement="host",
         inputs=("out_grad", "weight", "data"), attrs=dict(DECONV_ATTRS),
         forward=_deconv_grad_data_forward, infer_shape=like_input(2),
         doc="Gradient of Deconvolution wrt its data (a Convolution).")
register("_deconv_grad_weight", placement="host", inputs=("out_grad", "data", "weight"),
         attrs=dict(DECONV_ATTRS), forward=_deconv_grad_weight_forward,
         infer_shape=like_input(2),
         doc="Gradient of Deconvolution wrt its weight.")


# ---------------------------------------------------------------- pooling
POOL_ATTRS = {"kernel": Shape((), minimum=1), "stride": Shape((), minimum=1),
              "pad": Shape((), minimum=0),
              "pool_type": Choice("max", "avg", "sum"), "global_pool": Bool(False),
              "pooling_convention": Choice("valid", "full", "same"),
              "count_include_pad": Bool(True),
              "layout": Choice("NCHW", "NCW", "NCDHW", "None"), "cudnn_off": Bool(False)}


def pool_params(attrs, shape):
    """(kernel, stride, pad, dilate, extra) for data of `shape`; extra pads the end of
    each axis for pooling_convention='full' and 'same' (the last, partial windows)."""
    nd = len(shape) - 2
    if attrs["global_pool"]:
        return tuple(shape[2:]), (1,) * nd, (0,) * nd, (1,) * nd, (0,) * nd
    if attrs["pooling_convention"] == "same":
        return _same_params(attrs, shape)
    if len(attrs["kernel"]) != nd:
        raise OpError(f"Pooling: data of shape {shape} needs a {nd}-D kernel (or "
                      f"global_pool=True), got kernel={attrs['kernel']}")
    kernel, stride, pad, dilate = conv_params(attrs)
    extra = (0,) * nd
    if attrs["pooling_convention"] == "full":
        extra = tuple(max((conv_out_size(shape[2 + a], kernel[a], stride[a], pad[a], 1,
                                         ceil=True) - 1) * stride[a] + kernel[a]
                          - shape[2 + a] - 2 * pad[a], 0) for a in range(nd))
    return kernel, stride, pad, (1,) * nd, extra


def _same_params(attrs, shape):
    """pooling_convention='same' (MXNet: 1-D only, no pad): ceil(width / stride) windows,
    the last ones cut at the data's end, as if padded there."""
    if len(shape) != 3:
        raise OpError(f"Pooling: pooling_convention='same' takes 3-D data (batch, channel, "
                      f"width) only, as MXNet; got data of shape {shape}")
    if any(attrs["pad"]):
        raise OpError(f"Pooling: pooling_convention='same' pads by itself; pad must be 0, "
                      f"got pad={attrs['pad']}")
    (kernel,), (stride,), _, _ = conv_params({**attrs, "pad": ()}, nd=1)
    width = shape[2]
    if kernel > width:
        raise OpError(f"Pooling: kernel size ({kernel}) exceeds input ({width})")
    out = -(-width // stride)
    return (kernel,), (stride,), (0,), (1,), (max((out - 1) * stride + kernel - width, 0),)


def _pool_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if len(s) not in (3, 4, 5):
        raise OpError(f"Pooling: data must be 3-, 4- or 5-D (batch, channels, then 1 to 3 "
                      f"spatial axes), got {s}")
    kernel, stride, pad, _, _ = pool_params(attrs, s)
    if attrs["pooling_convention"] == "same" and not attrs["global_pool"]:
        return in_shapes, [s[:2] + (-(-s[2] // stride[0]),)]
    ceil = attrs["pooling_convention"] == "full" and not attrs["global_pool"]
    return in_shapes, [(s[0], s[1]) + tuple(conv_out_size(s[2 + a], kernel[a], stride[a], pad[a],
                                                          1, ceil) for a in range(len(kernel)))]


def _pool_counts(attrs, x, kernel, stride, pad, extra):
    same = attrs["pooling_convention"] == "same"      # MXNet counts the data's part only
    if (attrs["count_include_pad"] and not same) or not any(pad + extra):
        return float(math.prod(kernel))
    ones = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
    window_axes = tuple(range(-len(kernel), 0))
    return _windows(ones, kernel, stride, pad, (1,) * len(kernel), 0.0, extra).sum(
        axis=window_axes)


def _pool_forward(attrs, x):
    kernel, stride, pad, dilate, extra = pool_params(attrs, x.shape)
    window_axes = tuple(range(-len(kernel), 0))
    kind = attrs["pool_type"]
    fill = -np.inf if kind == "max" else 0.0
    win = _windows(x, kernel, stride, pad, dilate, fill, extra)
    if kind == "max":
        return np.ascontiguousarray(win.max(axis=window_axes))
    total = win.sum(axis=window_axes, dtype=np.float64)     # as the compiled loops
    if kind == "sum":
        return total.astype(x.dtype)
    return (total / _pool_counts(attrs, x, kernel, stride, pad, extra)).astype(x.dtype)


def _pool_grad_forward(attrs, og, x, y):
    kernel, stride, pad, dilate, extra = pool_params(attrs, x.shape)
    margins = tuple((p, p + e) for p, e in zip(pad, extra))
    shape = x.shape[:2] + tuple(n + a + b for n, (a, b) in zip(x.shape[2:], margins))
    grad = np.zeros(shape, dtype=og.dtype)
    kind = attrs["pool_type"]
    if kind == "max":
        padded = np.pad(x, ((0, 0), (0, 0)) + margins, constant_values=-np.inf)
        taken = np.zeros(og.shape, dtype=bool)   # the first maximum of a window gets it all
    else:
        share = og / _pool_counts(attrs, x, kernel, stride, pad, extra) if kind == "avg" else og
    for _, where in _offsets(kernel, stride, dilate, og.shape[2:]):
        where = (slice(None), slice(None)) + where
        if kind == "max":
            hit = (padded[where] == y) & ~taken
            taken |= hit
            grad[where] += np.where(hit, og, 0)
        else:
            grad[where] += share
    inner = tuple(slice(p, p + n) for p, n in zip(pad, x.shape[2:]))
    return np.ascontiguousarray(grad[(slice(None), slice(None)) + inner])


register("Pooling", placement="kernel", kernel_ndim=4,
         attrs=dict(POOL_ATTRS), forward=_pool_forward, infer_shape=_pool_shape,
         gradient=lambda F, a, i, o, og: [F._pool_grad(og[0], i[0], o[0], **a)],
         key_attrs=("pool_type", "kernel"),
         doc="Pooling(data, kernel, stride, pad, pool_type='max'|'avg'|'sum', global_pool): "
             "over 1, 2 or 3 spatial axes.")
register("_pool_grad", placement="kernel", kernel_ndim=4,
         inputs=("out_grad", "data", "out"), attrs=dict(POOL_ATTRS),
         forward=_pool_grad_forward, infer_shape=like_input(1),
         doc="Gradient of Pooling.")


# -------------------------------------------------------------- BatchNorm
BN_ATTRS = {"eps": Float(1e-3), "momentum": Float(0.9), "fix_gamma": Bool(True),
            "use_global_stats": Bool(False), "output_mean_var": Bool(False), "axis": Int(1),
            "cudnn_off": Bool(False), "min_calib_range": Float(None),
            "max_calib_range": Float(None)}


def _bn_layout(attrs, x):
    axis = axis_in("BatchNorm", attrs["axis"], x.shape)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return axis, tuple(a for a in range(x.ndim) if a != axis), tuple(shape)


def _bn_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None, None, None]
    channels = (data[axis_in("BatchNorm", attrs["axis"], data)],)
    for name, s in zip(("gamma", "beta", "moving_mean", "moving_var"), in_shapes[1:]):
        if s is not None and tuple(s) != channels:
            raise OpError(f"BatchNorm: {name} has shape {s} but data {data} has {channels[0]} "
                          f"channels on axis {attrs['axis']}")
    return [data] + [channels] * 4, [data, channels, channels]


def _bn_forward(attrs, x, gamma, beta, mean, var, is_train=False):
    axis, reduce_axes, bshape = _bn_layout(attrs, x)
    if attrs["fix_gamma"]:
        gamma = np.ones_like(gamma)
    if is_train and not attrs["use_global_stats"]:
        batch_mean = x.mean(axis=reduce_axes, dtype=np.float64)   # as the compiled kernel
        batch_var = x.var(axis=reduce_axes, dtype=np.float64)
        m = attrs["momentum"]
        new_mean = (mean * m + batch_mean * (1 - m)).astype(mean.dtype)
        new_var = (var * m + batch_var * (1 - m)).astype(var.dtype)
        use_mean, use_var = batch_mean, batch_var
    else:
        new_mean, new_var = mean.copy(), var.copy()
        use_mean, use_var = mean, var
    # per-channel factors in float64 (in float32, mean * gamma * inv of huge values
    # overflows), applied in x's dtype: a float64 pass over x costs 10x. (The compiled
    # kernel applies them in float64: the two differ only where x * scale overflows.)
    inv = 1.0 / np.sqrt(np.asarray(use_var, np.float64) + attrs["eps"])
    scale = gamma * inv
    shift = (beta - use_mean * scale).astype(x.dtype).reshape(bshape)
    return (x * scale.astype(x.dtype).reshape(bshape) + shift).astype(x.dtype, copy=False), \
        new_mean, new_var


def _bn_grad_forward(attrs, og, x, gamma, mean, var):
    axis, reduce_axes, bshape = _bn_layout(attrs, x)
    if attrs["fix_gamma"]:
        gamma = np.ones_like(gamma)
    dbeta = og.sum(axis=reduce_axes)
    if attrs["training"] and not attrs["use_global_stats"]:
        mu = x.mean(axis=reduce_axes)
        inv = 1.0 / np.sqrt(x.var(axis=reduce_axes) + attrs["eps"])
        xhat = (x - mu.reshape(bshape)) * inv.reshape(bshape)
        dgamma = (og * xhat).sum(axis=reduce_axes)
        m = x.size / x.shape[axis]
        dx = (gamma * inv).reshape(bshape) / m * (
            m * og - dbeta.reshape(bshape) - xhat * dgamma.reshape(bshape))
    else:
        inv = 1.0 / np.sqrt(var + attrs["eps"])
        xhat = (x - mean.reshape(bshape)) * inv.reshape(bshape)
        dgamma = (og * xhat).sum(axis=reduce_axes)
        dx = og * (gamma * inv).reshape(bshape)
    if attrs["fix_gamma"]:
        dgamma = np.zeros_like(dgamma)
    return dx.astype(x.dtype, copy=False), dgamma.astype(x.dtype), dbeta.astype(x.dtype)


def _bn_grad(F, attrs, inputs, outputs, out_grads, is_train=False):
    x, gamma, beta, mean, var = inputs
    dx, dgamma, dbeta = F._batchnorm_grad(out_grads[0], x, gamma, mean, var,
                                          training=is_train, **attrs)
    return [dx, dgamma, dbeta, None, None]


register("BatchNorm", placement="kernel",
         inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
         dtype_rule="strict",
         attrs=dict(BN_ATTRS), forward=_bn_forward, infer_shape=_bn_shape, gradient=_bn_grad,
         num_outputs=3, num_visible_outputs=1, aux_inputs=("moving_mean", "moving_var"),
         aux_writeback={1: 3, 2: 4}, needs_train_flag=True,
         output_names=("output", "mean", "var"),
         doc="BatchNorm(data, gamma, beta, moving_mean, moving_var): normalise each channel "
             "with the batch statistics while training (and update the running ones), with "
             "the running statistics otherwise.")
register("_batchnorm_grad", placement="kernel",
         inputs=("out_grad", "data", "gamma", "moving_mean", "moving_var"),
         attrs={**BN_ATTRS, "training": Bool(False)}, forward=_bn_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1], s[2], s[2]]), num_outputs=3,
         doc="Gradient of BatchNorm: (d data, d gamma, d beta).")


# -------------------------------------------------------------- LayerNorm
LN_ATTRS = {"axis": Int(-1), "eps": Float(1e-5), "output_mean_var": Bool(False)}


def _ln_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    channels = (data[axis_in("LayerNorm", attrs["axis"], data)],)
    return [data, channels, channels], [data]


def _ln_stats(attrs, x):
    axis = axis_in("LayerNorm", attrs["axis"], x.shape)
    bshape = [1] * x.ndim
    bshape[axis] = x.shape[axis]
    # statistics in float64, as the compiled kernel keeps them: float32 squares of 3e38
    # overflow to inf and would zero the whole row; applied in x's dtype (fast)
    mu = x.mean(axis=axis, keepdims=True, dtype=np.float64)
    inv = 1.0 / np.sqrt(x.var(axis=axis, keepdims=True, dtype=np.float64) + attrs["eps"])
    if x.dtype != np.float64:
        mu, inv = mu.astype(x.dtype), inv.astype(x.dtype)
    return axis, tuple(bshape), (x - mu) * inv, inv


def _ln_forward(attrs, x, gamma, beta):
    axis, bshape, xhat, _ = _ln_stats(attrs, x)
    return (xhat * gamma.reshape(bshape) + beta.reshape(bshape)).astype(x.dtype, copy=False)


def _ln_grad_forward(attrs, og, x, gamma):
    axis, bshape, xhat, inv = _ln_stats(attrs, x)
    other = tuple(a for a in range(x.ndim) if a != axis)
    dgamma = (og * xhat).sum(axis=other)
    dbeta = og.sum(axis=other)
    g = og * gamma.reshape(bshape)
    n = x.shape[axis]
    dx = inv / n * (n * g - g.sum(axis=axis, keepdims=True)
                    - xhat * (g * xhat).sum(axis=axis, keepdims=True))
    return dx.astype(x.dtype, copy=False), dgamma.astype(x.dtype), dbeta.astype(x.dtype)


register("LayerNorm", placement="kernel", inputs=("data", "gamma", "beta"),
         dtype_rule="strict", attrs=dict(LN_ATTRS),
         forward=_ln_forward, infer_shape=_ln_shape,
         gradient=lambda F, a, i, o, og: list(F._layernorm_grad(og[0], i[0], i[1], **a)),
         doc="LayerNorm(data, gamma, beta, axis=-1): normalise along one axis per sample.")
register("_layernorm_grad", placement="kernel",
         inputs=("out_grad", "data", "gamma"), attrs=dict(LN_ATTRS),
         forward=_ln_grad_forward, infer_shape=lambda attrs, s: (s, [s[1], s[2], s[2]]),
         num_outputs=3, doc="Gradient of LayerNorm: (d data, d gamma, d beta).")


# ---------------------------------------------------------------- Dropout
def _dropout_forward(attrs, x, is_train=False):
    p = attrs["p"]
    if not (is_train or attrs["mode"] == "always") or p == 0:
        return x.copy(), np.ones_like(x)
    if not 0 <= p <= 1:
        raise OpError(f"Dropout: p must be in [0, 1], got {p}")
    shape = list(x.shape)
    for a in attrs["axes"]:
        shape[a] = 1            # one mask value shared along these axes
    if p == 1:                  # MXNet's mask: 0 * (1 / (1 - p)), NaN everywhere
        mask = np.full(shape, np.nan, dtype=x.dtype)
    else:
        mask = ((np.random.random_sample(shape) >= p) / (1.0 - p)).astype(x.dtype)
    return x * mask, np.ascontiguousarray(np.broadcast_to(mask, x.shape))


register("Dropout", placement="kernel",
         attrs={"p": Float(0.5), "mode": Choice("training", "always"),
                "axes": Shape(()), "cudnn_off": Bool(False)},
         forward=_dropout_forward, infer_shape=lambda attrs, s: (s, [s[0], s[0]]),
         gradient=lambda F, a, i, o, og, is_train=False: [og[0] * o[1]],
         num_outputs=2, num_visible_outputs=1, needs_train_flag=True, is_random=True,
         output_names=("output", "mask"),
         key_attrs=("p",), host_when=lambda attrs, shapes: attrs["p"] >= 1,
         doc="Dropout(data, p=0.5): while training, zero each element with probability p "
             "and scale the rest by 1/(1-p); identity otherwise. p=1 gives NaN, as "
             "MXNet's 0 * (1 / 0).")


# ------------------------------------------------------------- UpSampling
# MXNet's nearest-neighbour UpSampling of NCHW data: the output is the first input's size
# times `scale`; every input is repeated up to it (input i by out_h // its h) and the
# results are joined along the channels ('concat') or added ('sum'). The bilinear mode
# takes (data, weight) and is, as in MXNet, a Deconvolution of each channel by its own
# kernel (num_group = channels): kernel 2 * scale - scale % 2, stride scale, pad
# ceil((scale - 1) / 2), which gives scale times the size. Its weight (C, 1, k, k) is
# learnable; init.Bilinear fills it with the bilinear interpolation kernel.
UPSAMPLING_ATTRS = {"scale": Int(required=True, minimum=1), "num_filter": Int(0),
                    "sample_type": Choice("nearest", "bilinear", required=True),
                    "multi_input_mode": Choice("concat", "sum"), "num_args": Int(1, minimum=1),
                    "workspace": Int(512)}


def _bilinear_deconv(attrs, channels):
    """The Deconvolution attributes that bilinear UpSampling of `channels` channels is
    (MXNet's GetDeconvolutionParam)."""
    scale = attrs["scale"]
    if attrs["num_filter"] != channels:
        raise OpError(f"UpSampling: sample_type='bilinear' needs num_filter equal to the "
                      f"data's channels ({channels}), got num_filter={attrs['num_filter']}")
    k, pad = 2 * scale - scale % 2, scale // 2          # scale // 2 = ceil((scale - 1) / 2)
    return OPS["Deconvolution"].cached_attrs({
        "kernel": (k, k), "stride": (scale, scale), "pad": (pad, pad),
        "num_filter": channels, "num_group": channels, "no_bias": True})


def _bilinear_upsampling_shape(attrs, in_shapes):
    if len(in_shapes) != 2:
        raise OpError(f"UpSampling: sample_type='bilinear' takes two inputs, data and "
                      f"weight, got {len(in_shapes)}")
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    if len(data) != 4:
        raise OpError(f"UpSampling: needs 4-D (N, C, H, W) data, got {tuple(data)}")
    deconv = _bilinear_deconv(attrs, data[1])
    return OPS["Deconvolution"].shapes(deconv, in_shapes)


def _upsampling_shape(attrs, in_shapes):
    if attrs["sample_type"] == "bilinear":
        return _bilinear_upsampling_shape(attrs, in_shapes)
    if any(s is None for s in in_shapes):
        return in_shapes, [None]
    if any(len(s) != 4 for s in in_shapes):
        raise OpError(f"UpSampling: needs 4-D (N, C, H, W) inputs, got {in_shapes}")
    n, _, h, w = in_shapes[0]
    out_h, out_w = h * attrs["scale"], w * attrs["scale"]
    for s in in_shapes:
        if s[0] != n or out_h % s[2] or out_w % s[3] or out_h // s[2] != out_w // s[3]:
            raise OpError(f"UpSampling: input of shape {tuple(s)} does not scale up to "
                          f"({out_h}, {out_w}) by one whole factor (inputs {in_shapes})")
    if attrs["multi_input_mode"] == "sum":
        if len({s[1] for s in in_shapes}) > 1:
            raise OpError(f"UpSampling: multi_input_mode='sum' needs inputs with one number "
                          f"of channels, got {in_shapes}")
        channels = in_shapes[0][1]
    else:
        channels = sum(s[1] for s in in_shapes)
    return in_shapes, [(n, channels, out_h, out_w)]


def _upsampling_forward(attrs, *xs):
    if attrs["sample_type"] == "bilinear":
        return _deconv_forward(_bilinear_deconv(attrs, xs[0].shape[1]), *xs)
    out_h = xs[0].shape[2] * attrs["scale"]
    parts = [x.repeat(out_h // x.shape[2], axis=2).repeat(out_h // x.shape[2], axis=3)
             for x in xs]
    if attrs["multi_input_mode"] == "sum":
        return sum(parts[1:], parts[0])
    return np.concatenate(parts, axis=1)


def _upsampling_grad_forward(attrs, og, *xs):
    """The gradient of input `index`: its channels of og (all of them when summed), each
    output block added back onto the pixel it repeats."""
    k, x = attrs["index"], xs[attrs["index"]]
    if attrs["multi_input_mode"] == "concat":
        start = sum(y.shape[1] for y in xs[:k])
        og = og[:, start:start + x.shape[1]]
    n, c, h, w = x.shape
    f = og.shape[2] // h
    return np.ascontiguousarray(og.reshape(n, c, h, f, w, f).sum(axis=(3, 5)))


def _upsampling_gradient(F, attrs, inputs, out_grads):
    if attrs["sample_type"] == "bilinear":
        deconv = dict(_bilinear_deconv(attrs, attrs["num_filter"]))
        return _gradient_via("_deconv_grad_data", "_deconv_grad_weight")(
            F, deconv, inputs, [], out_grads)
    return [F._upsampling_grad(out_grads[0], *inputs, index=k,
                               multi_input_mode=attrs["multi_input_mode"])
            for k in range(len(inputs))]


register("UpSampling", variadic=True, placement="host", attrs=dict(UPSAMPLING_ATTRS),
         forward=_upsampling_forward, infer_shape=_upsampling_shape,
         gradient=lambda F, a, i, o, og: _upsampling_gradient(F, a, i, og),
         doc="UpSampling(*data, scale, sample_type='nearest', multi_input_mode='concat'): "
             "NCHW inputs repeated up to the first one's size times scale, then joined.")
register("_upsampling_grad", variadic=True, placement="host",
         attrs={"index": Int(0), "multi_input_mode": Choice("concat", "sum")},
         forward=_upsampling_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1 + attrs["index"]]]),
         doc="Gradient of UpSampling for input `index`.")


# ------------------------------------------------------------------- LRN
# Local response normalisation across channels (MXNet's, AlexNet's):
#   norm = knorm + alpha / nsize * (sum of x^2 over the nsize channels around c)
#   out = x * norm^-beta
# Its second output, tmp_norm, is `norm` (hidden: MXNet lists it, its gradient reads it).
LRN_ATTRS = {"alpha": Float(1e-4), "beta": Float(0.75), "knorm": Float(2.0),
             "nsize": Int(required=True, minimum=1)}


def _channel_window_sum(x, nsize):
    """Sum over the nsize channels centred on each channel (zeros beyond the ends)."""
    half = nsize // 2
    padded = np.pad(x, [(0, 0), (half, half)] + [(0, 0)] * (x.ndim - 2))
    total = np.cumsum(padded, axis=1)
    total = np.concatenate([np.zeros_like(total[:, :1]), total], axis=1)
    return total[:, nsize:] - total[:, :-nsize]


def _lrn_forward(attrs, x):
    norm = _channel_window_sum(x * x, attrs["nsize"]) * (attrs["alpha"] / attrs["nsize"]) \
        + attrs["knorm"]
    return (x * norm ** -attrs["beta"]).astype(x.dtype), norm.astype(x.dtype)


def _lrn_shape(attrs, in_shapes):
    s = in_shapes[0]
    if attrs["nsize"] % 2 == 0:
        raise OpError(f"LRN: nsize must be odd (a window centred on each channel), got "
                      f"{attrs['nsize']}")
    if s is not None and len(s) < 2:
        raise OpError(f"LRN: needs data with a channel axis (N, C, ...), got shape {tuple(s)}")
    return in_shapes, [s, s]


def _lrn_grad_forward(attrs, og, x, norm):
    beta, salpha = attrs["beta"], attrs["alpha"] / attrs["nsize"]
    inner = _channel_window_sum(og * x * norm ** (-beta - 1.0), attrs["nsize"])
    return (og * norm ** -beta - 2.0 * beta * salpha * inner * x).astype(og.dtype)


register("LRN", placement="host", attrs=dict(LRN_ATTRS), forward=_lrn_forward,
         infer_shape=_lrn_shape,
         gradient=lambda F, a, i, o, og: [F._lrn_grad(og[0], i[0], o[1], **a)],
         num_outputs=2, num_visible_outputs=1, output_names=("output", "tmp_norm"),
         doc="LRN(data, nsize, alpha=1e-4, beta=0.75, knorm=2): data / (knorm + alpha / "
             "nsize * sum of squares over nsize neighbouring channels) ** beta.")
register("_lrn_grad", inputs=("out_grad", "data", "tmp_norm"), placement="host",
         attrs=dict(LRN_ATTRS), forward=_lrn_grad_forward, infer_shape=like_input(1),
         doc="Gradient of LRN (MXNet's formula, from the saved norm).")


# ------------------------------------------------------- SoftmaxActivation
# MXNet's older softmax: mode='instance' over all of an example's values (the axes after
# the first), 'channel' over axis 1.
def _softmax_activation_forward(attrs, x):
    axes = 1 if attrs["mode"] == "channel" else tuple(range(1, x.ndim))
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return (e / e.sum(axis=axes, keepdims=True)).astype(x.dtype)


def _softmax_activation_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is not None and len(s) < 2:
        raise OpError(f"SoftmaxActivation: needs (N, ...) data with at least 2 axes, got "
                      f"shape {tuple(s)}")
    return in_shapes, [s]


def _softmax_activation_gradient(F, attrs, inputs, outputs, out_grads):
    y, og = outputs[0], out_grads[0]
    if attrs["mode"] == "channel":
        dot = F.sum(og * y, axis=1, keepdims=True)
    else:
        dot = F.sum(og * y, axis=0, exclude=True, keepdims=True)
    return [y * F.broadcast_sub(og, dot)]


register("SoftmaxActivation", placement="host", attrs={"mode": Choice("instance", "channel")},
         unnamed_inputs=True,
         forward=_softmax_activation_forward,
         infer_shape=_softmax_activation_shape,
         gradient=_softmax_activation_gradient,
         doc="SoftmaxActivation(data, mode='instance'|'channel'): softmax over each "
             "example's values, or over axis 1.")


# ------------------------------------------- InstanceNorm, GroupNorm, L2Normalization
# MXNet's ops of these names (gluon's layers compose LayerNorm instead, which compiles to a
# kernel). Each normalises groups of a sample's values: the data seen as (N, G, M), each
# of the N x G rows of M values normalised on its own; statistics in float64.

def _rows_stats(x, groups, eps):
    """x as (N, groups, M) rows: (x_hat, mean, 1 / sqrt(var + eps)), in float64."""
    if x.ndim < 2 or x.shape[1] % groups:
        raise OpError(f"cannot split the {x.shape[1] if x.ndim > 1 else 0} channels of data "
                      f"of shape {x.shape} into {groups} groups")
    per_row = math.prod(x.shape[1:]) // groups              # not -1: a batch may be 0
    rows = x.reshape(x.shape[0], groups, per_row).astype(np.float64)
    mean = rows.mean(axis=2, keepdims=True)
    inv = 1.0 / np.sqrt(rows.var(axis=2, keepdims=True) + eps)
    return (rows - mean) * inv, mean, inv


def _rows_grad(og, x, gamma, groups, eps):
    """(d data, d gamma, d beta) of x_hat * gamma + beta per row (the LayerNorm formula)."""
    xhat, _, inv = _rows_stats(x, groups, eps)
    og = og.reshape(xhat.shape).astype(np.float64)
    g = og * gamma.astype(np.float64).reshape(1, -1, 1)
    m = xhat.shape[2]
    dx = inv / m * (m * g - g.sum(2, keepdims=True) - xhat * (g * xhat).sum(2, keepdims=True))
    return (dx.reshape(x.shape).astype(x.dtype), (og * xhat).sum((0, 2)).astype(x.dtype),
            og.sum((0, 2)).astype(x.dtype))


def _affine_rows(xhat, gamma, beta, shape, dtype):
    return (xhat * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)).reshape(shape).astype(dtype)


def _per_group_params(name, groups_of):
    def infer(attrs, s):
        x = s[0]
        if x is None:
            return s, [None] * _norm_count(name, attrs)
        if len(x) < 2:
            raise OpError(f"{name}: needs data with a channel axis (N, C, ...), got shape "
                          f"{tuple(x)}")
        g = groups_of(attrs, x)
        if x[1] is not None and g and x[1] % g:     # at the call, on both engines
            raise OpError(f"{name}: cannot split the {x[1]} channels of data of shape "
                          f"{tuple(x)} into {g} groups")
        for k, p in ((1, "gamma"), (2, "beta")):
            if s[k] is not None and tuple(s[k]) != (g,):
                raise OpError(f"{name}: {p} must have shape ({g},), got {tuple(s[k])}")
        out = [tuple(x)]
        if _norm_count(name, attrs) == 3:
            out += [(x[0], g), (x[0], g)]
        return [tuple(x), (g,), (g,)], out
    return infer


def _norm_count(name, attrs):
    return 3 if name == "GroupNorm" and attrs["output_mean_var"] else 1


def _instance_norm(attrs, x, gamma, beta):
    xhat, _, _ = _rows_stats(x, x.shape[1], attrs["eps"])
    return _affine_rows(xhat, gamma, beta, x.shape, x.dtype)


register("InstanceNorm", inputs=("data", "gamma", "beta"), attrs={"eps": Float(1e-3)},
         forward=_instance_norm, placement="host", dtype_rule="strict",
         infer_shape=_per_group_params("InstanceNorm", lambda attrs, x: x[1]),
         gradient=lambda F, a, i, o, og: list(F._instance_norm_grad(og[0], i[0], i[1], **a)),
         doc="InstanceNorm(data, gamma, beta, eps=1e-3): each channel of each sample "
             "normalised over its positions, then scaled and shifted per channel.")
register("_instance_norm_grad", inputs=("out_grad", "data", "gamma"),
         attrs={"eps": Float(1e-3)}, placement="host", num_outputs=3,
         forward=lambda a, og, x, gamma: _rows_grad(og, x, gamma, x.shape[1], a["eps"]),
         infer_shape=lambda attrs, s: (s, [s[1], s[2], s[2]]),
         doc="Gradient of InstanceNorm: (d data, d gamma, d beta).")


def _group_norm(attrs, x, gamma, beta):
    groups = attrs["num_groups"]
    xhat, mean, inv = _rows_stats(x, groups, attrs["eps"])
    out = _affine_rows(xhat, gamma, beta, x.shape, x.dtype)
    if not attrs["output_mean_var"]:
        return out
    return out, mean[..., 0].astype(x.dtype), (1.0 / inv[..., 0]).astype(x.dtype)


_GN_ATTRS = {"num_groups": Int(1, minimum=1), "eps": Float(1e-5), "output_mean_var": Bool()}
register("GroupNorm", inputs=("data", "gamma", "beta"), attrs=dict(_GN_ATTRS),
         forward=_group_norm, placement="host", dtype_rule="strict",
         num_outputs=lambda attrs: _norm_count("GroupNorm", attrs),
         infer_shape=_per_group_params("GroupNorm", lambda attrs, x: attrs["num_groups"]),
         gradient=lambda F, a, i, o, og: list(F._group_norm_grad(og[0], i[0], i[1], **a)),
         output_names=("output", "mean", "std"),
         doc="GroupNorm(data, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False): "
             "each group of channels of each sample normalised; gamma and beta per group "
             "(MXNet 1.x); with output_mean_var also the groups' means and standard "
             "deviations sqrt(var + eps), shape (N, num_groups).")
register("_group_norm_grad", inputs=("out_grad", "data", "gamma"), attrs=dict(_GN_ATTRS),
         placement="host", num_outputs=3,
         forward=lambda a, og, x, gamma: _rows_grad(og, x, gamma, a["num_groups"], a["eps"]),
         infer_shape=lambda attrs, s: (s, [s[1], s[2], s[2]]),
         doc="Gradient of GroupNorm's output: (d data, d gamma, d beta).")


def _l2_axes(attrs, ndim):
    mode = attrs["mode"]
    need = 2 if mode == "instance" else 3
    if ndim < need:
        raise OpError(f"L2Normalization: mode '{mode}' needs data of at least {need} "
                      f"dimensions, got {ndim}")
    return {"instance": tuple(range(1, ndim)), "channel": (1,),
            "spatial": tuple(range(2, ndim))}[mode]


def _l2_norm(attrs, x):
    """sqrt(sum of squares + eps) over the mode's axes (MXNet adds eps under the root)."""
    axes = _l2_axes(attrs, x.ndim)
    return np.sqrt((x.astype(np.float64) ** 2).sum(axes, keepdims=True) + attrs["eps"])


def _l2_normalization(attrs, x):
    return (x / _l2_norm(attrs, x)).astype(x.dtype)


def _l2_normalization_grad(attrs, og, x):
    """d x = (g - y * sum(g * y)) / norm, summed over the mode's axes."""
    norm = _l2_norm(attrs, x)
    y, g = x / norm, og.astype(np.float64)
    axes = _l2_axes(attrs, x.ndim)
    return ((g - y * (g * y).sum(axes, keepdims=True)) / norm).astype(x.dtype)


def _l2_shape(attrs, s):
    if s[0] is not None:
        _l2_axes(attrs, len(s[0]))
    return s, [s[0]]


_L2_ATTRS = {"eps": Float(1e-10), "mode": Choice("instance", "channel", "spatial")}
register("L2Normalization", attrs=dict(_L2_ATTRS), forward=_l2_normalization,
         placement="host", infer_shape=_l2_shape,
         gradient=lambda F, a, i, o, og: [F._l2_normalization_grad(og[0], i[0], **a)],
         doc="L2Normalization(data, eps=1e-10, mode='instance'): data / sqrt(sum(data^2) + "
             "eps) over each sample ('instance'), each position's channels ('channel') or "
             "each channel's positions ('spatial').")
register("_l2_normalization_grad", inputs=("out_grad", "data"), attrs=dict(_L2_ATTRS),
         forward=_l2_normalization_grad, placement="host", infer_shape=like_input(1),
         doc="Gradient of L2Normalization.")


# ------------------------------------------------------------------- SVMOutput
_SVM_ATTRS = {"margin": Float(1.0), "regularization_coefficient": Float(1.0),
              "use_linear": Bool()}


def _svm_grad(attrs, out, label):
    """MXNet's hinge-loss gradient (it ignores the incoming gradient, as SoftmaxOutput):
    sign = +1 at the label's class, -1 elsewhere; L1: -sign * reg * (margin > sign * x),
    L2 (default): -2 * sign * reg * max(margin - sign * x, 0)."""
    x = out.reshape(out.shape[0], -1).astype(np.float64)
    sign = -np.ones_like(x)
    sign[np.arange(x.shape[0]), label.reshape(-1).astype(np.int64)] = 1.0
    gap = attrs["margin"] - sign * x
    reg = attrs["regularization_coefficient"]
    g = -sign * reg * ((gap > 0) if attrs["use_linear"] else 2 * np.maximum(gap, 0))
    return g.reshape(out.shape).astype(out.dtype)


def _svm_shape(attrs, s):
    x, label = s
    if x is not None and label is not None and tuple(label) != (x[0],):
        raise OpError(f"SVMOutput: label must have shape ({x[0]},), one class per sample of "
                      f"data {tuple(x)}, got {tuple(label)}")
    return [x, label if label is not None or x is None else (x[0],)], [x]


def _svm_check_labels(out, label):
    classes = int(np.prod(out.shape[1:]))
    if label.size and (label.min() < 0 or label.max() >= classes):
        raise OpError(f"SVMOutput: labels must be class indices in [0, {classes}), got "
                      f"values from {label.min()} to {label.max()}")


register("SVMOutput", inputs=("data", "label"), attrs=dict(_SVM_ATTRS), placement="host",
         forward=lambda attrs, x, label: x.copy(), infer_shape=_svm_shape,
         gradient=lambda F, a, i, o, og: [F._svm_output_grad(o[0], i[1], **a), None],
         doc="SVMOutput(data, label, margin=1, regularization_coefficient=1, "
             "use_linear=False): data forward; backward the gradient of the hinge loss "
             "(squared, or linear with use_linear), ignoring the incoming gradient as MXNet.")
register("_svm_output_grad", inputs=("out", "label"), attrs=dict(_SVM_ATTRS),
         placement="host", infer_shape=like_input(0),
         forward=lambda attrs, out, label: (_svm_check_labels(out, label),
                                            _svm_grad(attrs, out, label))[1],
         doc="Gradient of SVMOutput.")


# ---------------------------------------------------- AdaptiveAvgPooling2D
# MXNet's contrib op: NCHW data averaged over windows that tile each plane into
# output_size cells; cell i covers rows floor(i * H / h) .. ceil((i + 1) * H / h) - 1
# (neighbouring windows may overlap by a row when h does not divide H).
def _adaptive_size(attrs, shape):
    size = tuple(attrs["output_size"])
    if len(size) > 2:
        raise OpError(f"AdaptiveAvgPooling2D: output_size is (height, width) or one size, "
                      f"got {size}")
    return (1, 1) if not size else (size[0], size[0]) if len(size) == 1 else size


def _adaptive_windows(count, cells):
    return [(i * count // cells, -(-(i + 1) * count // cells)) for i in range(cells)]


def _adaptive_pool_forward(attrs, x):
    h, w = _adaptive_size(attrs, x.shape)
    out = np.empty(x.shape[:2] + (h, w), dtype=np.float64)
    for i, (r0, r1) in enumerate(_adaptive_windows(x.shape[2], h)):
        for j, (c0, c1) in enumerate(_adaptive_windows(x.shape[3], w)):
            out[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return out.astype(x.dtype)


def _adaptive_pool_grad_forward(attrs, og, x):
    h, w = _adaptive_size(attrs, x.shape)
    grad = np.zeros(x.shape, dtype=np.float64)
    for i, (r0, r1) in enumerate(_adaptive_windows(x.shape[2], h)):
        for j, (c0, c1) in enumerate(_adaptive_windows(x.shape[3], w)):
            grad[:, :, r0:r1, c0:c1] += og[:, :, i:i + 1, j:j + 1] / ((r1 - r0) * (c1 - c0))
    return grad.astype(x.dtype)


def _adaptive_pool_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if len(s) != 4:
        raise OpError(f"AdaptiveAvgPooling2D: needs 4-D (N, C, H, W) data, got {tuple(s)}")
    return in_shapes, [tuple(s[:2]) + _adaptive_size(attrs, s)]


register("_contrib_AdaptiveAvgPooling2D", placement="host",
         attrs={"output_size": Shape(())}, forward=_adaptive_pool_forward,
         infer_shape=_adaptive_pool_shape,
         gradient=lambda F, a, i, o, og: [F._adaptive_avg_pool_grad(og[0], i[0], **a)],
         doc="contrib.AdaptiveAvgPooling2D(data, output_size=()): each NCHW plane averaged "
             "over the windows that tile it into output_size cells (1 x 1 by default).")
register("_adaptive_avg_pool_grad", inputs=("out_grad", "data"), placement="host",
         attrs={"output_size": Shape(())}, forward=_adaptive_pool_grad_forward,
         infer_shape=like_input(1), doc="Gradient of AdaptiveAvgPooling2D.")


# -------------------------------------------------------- BilinearResize2D
# MXNet's contrib op: NCHW planes resized with bilinear interpolation. Each output row
# reads two input rows: source position dst * (in - 1) / (out - 1) with align_corners,
# else (dst + 0.5) * in / out - 0.5 (at least 0). As matrices, y = Rh @ x @ Rw.T, and the
# gradient is Rh.T @ og @ Rw. The output size comes from `mode`.
RESIZE_MODES = ("size", "like", "odd_scale", "to_even_down", "to_even_up", "to_odd_down",
                "to_odd_up")
RESIZE_ATTRS = {"height": Int(1), "width": Int(1), "scale_height": OptFloat(),
                "scale_width": OptFloat(), "mode": Choice(*RESIZE_MODES),
                "align_corners": Bool(True)}


def _resize_size(attrs, shape, like=None):
    """(height, width) of the output for data of `shape` (NCHW)."""
    mode, sizes = attrs["mode"], shape[2:]
    if mode == "like":
        if like is None or len(like) != 4:
            raise OpError("BilinearResize2D: mode 'like' needs a second 4-D input whose "
                          "height and width the output takes")
        return tuple(like[2:])
    scales = (attrs["scale_height"], attrs["scale_width"])
    if mode == "size":
        fixed = (attrs["height"], attrs["width"])
        return tuple(int(n * s) if s is not None else f for n, s, f in zip(sizes, scales, fixed))
    if mode == "odd_scale":
        if None in scales:
            raise OpError("BilinearResize2D: mode 'odd_scale' needs scale_height and "
                          "scale_width")
        return tuple(int(n * s) if n % 2 == 0 else int((n - 1) * s) + 1
                     for n, s in zip(sizes, scales))
    want_even, step = mode.startswith("to_even"), 1 if mode.endswith("up") else -1
    return tuple(n if (n % 2 == 0) == want_even else n + step for n in sizes)


def _resize_matrix(n_in, n_out, align_corners):
    """The (n_out, n_in) interpolation weights along one axis, MXNet's formula."""
    if align_corners:
        src = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0.0)
    low = src.astype(np.int64)
    frac = src - low
    high = np.where(low < n_in - 1, low + 1, low)
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), low), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), high), frac)
    return m


def _resize_inputs(attrs):
    return ("data", "like") if attrs["mode"] == "like" else ("data",)


def _resize_matrices(attrs, shape, like_shape):
    h, w = _resize_size(attrs, shape, like_shape)
    return (_resize_matrix(shape[2], h, attrs["align_corners"]),
            _resize_matrix(shape[3], w, attrs["align_corners"]))


def _resize_forward(attrs, x, like=None):
    rh, rw = _resize_matrices(attrs, x.shape, None if like is None else like.shape)
    return (rh @ x.astype(np.float64) @ rw.T).astype(x.dtype)


def _resize_grad_forward(attrs, og, x, like=None):
    rh, rw = _resize_matrices(attrs, x.shape, None if like is None else like.shape)
    return (rh.T @ og.astype(np.float64) @ rw).astype(x.dtype)


def _resize_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None or (attrs["mode"] == "like" and in_shapes[1] is None):
        return in_shapes, [None]
    if len(s) != 4:
        raise OpError(f"BilinearResize2D: needs 4-D (N, C, H, W) data, got {tuple(s)}")
    size = _resize_size(attrs, s, in_shapes[1] if attrs["mode"] == "like" else None)
    if min(size) < 1:
        raise OpError(f"BilinearResize2D: its attributes give an output of {size} for "
                      f"data {tuple(s)}: choose a height and width of at least 1")
    return in_shapes, [tuple(s[:2]) + size]


register("_contrib_BilinearResize2D", placement="host", inputs=("data", "like"),
         optional_inputs=_resize_inputs, index_inputs=("like",), attrs=dict(RESIZE_ATTRS),
         forward=_resize_forward, infer_shape=_resize_shape,
         gradient=lambda F, a, i, o, og: [F._bilinear_resize_grad(og[0], *i, **a)] + (
             [F.zeros_like(i[1])] if a["mode"] == "like" else []),
         doc="contrib.BilinearResize2D(data, like=None, height=1, width=1, scale_height=None, "
             "scale_width=None, mode='size', align_corners=True): NCHW planes resized by "
             "bilinear interpolation.")
register("_bilinear_resize_grad", placement="host", inputs=("out_grad", "data", "like"),
         optional_inputs=lambda attrs: ("out_grad",) + _resize_inputs(attrs),
         index_inputs=("like",), attrs=dict(RESIZE_ATTRS), forward=_resize_grad_forward,
         infer_shape=like_input(1), doc="Gradient of BilinearResize2D for its data.")


# ---------------------------------------------------------- im2col, col2im
# MXNet's im2col: every kernel-sized patch of NCHW data as a column, (N, C * kh * kw, L)
# with L the patches (row-major over the output positions) and rows ordered channel, then
# kernel row, then kernel column: a Convolution is then a matrix product with
# weight.reshape(num_filter, -1). col2im adds columns back into an image (overlaps sum):
# each is the other's gradient. 2-D kernels only.
COL_ATTRS = {"kernel": Shape(required=True), "stride": Shape(()), "dilate": Shape(()),
             "pad": Shape(())}


def _patch_geometry(op, attrs, spatial):
    """(padding, the row and column of each (kernel offset, output position)) as arrays."""
    kernel = tuple(attrs["kernel"])
    if len(kernel) != 2 or len(spatial) != 2:
        raise OpError(f"{op}: 2-D kernels and NCHW images only, got kernel {kernel} for "
                      f"spatial size {tuple(spatial)}")
    stride, dilate, pad = (tuple(attrs[k]) or (d, d) for k, d in
                           (("stride", 1), ("dilate", 1), ("pad", 0)))
    out = [(n + 2 * p - (d * (k - 1) + 1)) // s + 1
           for n, k, s, d, p in zip(spatial, kernel, stride, dilate, pad)]
    if min(out) < 1:
        raise OpError(f"{op}: kernel {kernel} (dilate {dilate}) does not fit the padded "
                      f"image {tuple(spatial)} + 2 * {pad}")
    ki, kj = np.meshgrid(np.arange(kernel[0]), np.arange(kernel[1]), indexing="ij")
    oi, oj = np.meshgrid(np.arange(out[0]), np.arange(out[1]), indexing="ij")
    rows = ki.reshape(-1, 1) * dilate[0] + oi.reshape(1, -1) * stride[0]
    cols = kj.reshape(-1, 1) * dilate[1] + oj.reshape(1, -1) * stride[1]
    return pad, rows, cols, out


def _im2col_forward(attrs, x):
    pad, rows, cols, _ = _patch_geometry("im2col", attrs, x.shape[2:])
    padded = np.pad(x, [(0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])])
    patches = padded[:, :, rows, cols]                  # (N, C, kh * kw, L)
    return np.ascontiguousarray(patches.reshape(x.shape[0], x.shape[1] * rows.shape[0],
                                                rows.shape[1]))    # (not -1: N may be 0)


def _col2im_forward(attrs, col):
    size = tuple(attrs["output_size"])
    pad, rows, cols, _ = _patch_geometry("col2im", attrs, size)
    n, k, length = col.shape[0], rows.shape[0], rows.shape[1]
    image = np.zeros((n, col.shape[1] // k, size[0] + 2 * pad[0], size[1] + 2 * pad[1]),
                     dtype=col.dtype)
    np.add.at(image, (slice(None), slice(None), rows, cols),
              col.reshape(n, col.shape[1] // k, k, length))
    return np.ascontiguousarray(image[:, :, pad[0]:pad[0] + size[0], pad[1]:pad[1] + size[1]])


def _im2col_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if len(s) != 4:
        raise OpError(f"im2col: needs 4-D (N, C, H, W) data, got {tuple(s)}")
    _, rows, _, _ = _patch_geometry("im2col", attrs, s[2:])
    return in_shapes, [(s[0], s[1] * rows.shape[0], rows.shape[1])]


def _col2im_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    _, rows, _, _ = _patch_geometry("col2im", attrs, attrs["output_size"])
    if len(s) != 3 or s[1] % rows.shape[0] or s[2] != rows.shape[1]:
        raise OpError(f"col2im: data must be (N, C * {rows.shape[0]}, {rows.shape[1]}) for "
                      f"kernel {tuple(attrs['kernel'])} and output_size "
                      f"{tuple(attrs['output_size'])}, got {tuple(s)}")
    return in_shapes, [(s[0], s[1] // rows.shape[0]) + tuple(attrs["output_size"])]


register("im2col", placement="host", attrs=dict(COL_ATTRS), forward=_im2col_forward,
         infer_shape=_im2col_shape,
         gradient=lambda F, a, i, o, og: [F._im2col_grad(og[0], i[0], **a)],
         doc="im2col(data, kernel, stride=(), dilate=(), pad=()): each kernel-sized patch of "
             "NCHW data as a column, (N, C * kh * kw, patches).")
register("_im2col_grad", inputs=("data", "like"), placement="host", attrs=dict(COL_ATTRS),
         forward=lambda attrs, col, like: _col2im_forward(
             dict(attrs, output_size=like.shape[2:]), col),
         index_inputs=("like",), infer_shape=like_input(1),
         doc="col2im to the size of `like` (im2col's gradient).")
register("col2im", placement="host", attrs={"output_size": Shape(required=True), **COL_ATTRS},
         forward=_col2im_forward, infer_shape=_col2im_shape,
         gradient=lambda F, a, i, o, og: [F.im2col(og[0], **{k: a[k] for k in COL_ATTRS})],
         doc="col2im(data, output_size, kernel, stride=(), dilate=(), pad=()): columns "
             "added back into (N, C, *output_size) images, overlaps summed.")
