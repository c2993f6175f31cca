"""Elementwise ops: unary maths, activations, broadcasting binary ops, scalar forms.

These are the ops the compiler *fuses*: each carries `scalar_expr`, the formula
for one element, written with `{0}`, `{1}` for its inputs and `{name}` for its
(numeric) attributes. A chain such as `relu(x * 2 + b)` becomes one loop.

Gradients are written with `F` and ordinary operators on purpose: the same
lines run imperatively (F = nd) and build the backward graph (F = sym).
"""
import functools

import numpy as np

from .registry import (Attr, Choice, Float, Int, OpError, alias, is_complete, register,
                       scipy_special, show_shape, unify)


def _known(*shapes):
    return all(s is not None for s in shapes)


def same_shape(attrs, in_shapes):
    s = in_shapes[0]
    return in_shapes, [s]


def all_one_shape(attrs, in_shapes, out_shapes):
    """Partly known shapes of an op whose inputs and outputs all have one shape: each
    tells the others, forwards and backwards (relu's output shape is its input's)."""
    s = unify(*in_shapes, *out_shapes)
    return [s] * len(in_shapes), [s] * len(out_shapes)


same_shape.partial = all_one_shape


def broadcast_shapes(attrs, in_shapes):
    a, b = in_shapes
    if not _known(a, b):
        return in_shapes, [None]
    try:
        return in_shapes, [tuple(np.broadcast_shapes(a, b))]
    except ValueError:
        raise _not_broadcastable(a, b) from None


def _not_broadcastable(a, b):
    a, b = show_shape(a), show_shape(b)         # partly known: 0 for an unknown dim
    return OpError(f"shapes {a} and {b} cannot be broadcast together: each dimension must "
                   f"match or be 1 (use reshape/expand_dims to line them up)")


def _broadcast_partial(attrs, in_shapes, out_shapes):
    """Broadcasting with unknown dims (None). An unknown dim facing a known one other than
    1 is taken to be equal to it: MXNet 1.x's Symbol `a + b` is an elementwise op that
    requires equal shapes, and that is what partly known shapes there mean. Backwards, an
    output dim fills an input's unknown dim where the other input's dim is 1."""
    a, b = in_shapes
    out = out_shapes[0]
    if a is None or b is None:
        return in_shapes, out_shapes         # the ranks are unknown: nothing to line up
    n = max(len(a), len(b), len(out) if out is not None else 0)
    a_dims = [1] * (n - len(a)) + list(a)    # leading 1s stand for the missing axes
    b_dims = [1] * (n - len(b)) + list(b)
    out_dims = list(out) if out is not None and len(out) == n else [None] * n
    for k in range(n):
        x, y = a_dims[k], b_dims[k]
        if x is not None and y is not None and x != y and 1 not in (x, y):
            raise _not_broadcastable(a, b)
        if x is None and y not in (None, 1):
            a_dims[k] = x = y
        elif y is None and x not in (None, 1):
            b_dims[k] = y = x
        known = y if x == 1 else x if y == 1 else x if x == y else None
        if known is not None:
            if out_dims[k] not in (None, known):
                raise OpError(f"the output's shape {show_shape(out)} does not match the "
                              f"broadcast of {show_shape(a)} and {show_shape(b)}")
            out_dims[k] = known
        elif out_dims[k] is not None:        # one dim is 1, the other unknown
            if x is None:
                a_dims[k] = out_dims[k]
            else:
                b_dims[k] = out_dims[k]
    return [tuple(a_dims[n - len(a):]), tuple(b_dims[n - len(b):])], [tuple(out_dims)]


broadcast_shapes.partial = _broadcast_partial


# --------------------------------------------------------------- unary ops
def _rounded_from_float64(fn):
    """fn computed in float64 and rounded to the input's dtype. NumPy's float32 exp and
    log are vectorised approximations, one unit in the last place off for about a third
    of the inputs (exp(1) is 2.7182820, not 2.7182817); MXNet's C++ and our compiled
    kernels call the C library's expf/logf, which round correctly. Rounding the float64
    value gives the same float32 numbers."""
    def rounded(x):
        if x.dtype in (np.float32, np.float16):
            return fn(x.astype(np.float64)).astype(x.dtype)
        return fn(x)
    rounded.__name__ = fn.__name__
    return rounded


def _mish_slope(F, x):
    """d mish / dx = tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = softrelu(x)."""
    t = F.tanh(F.softrelu(x))
    return t + x * F.sigmoid(x) * (1.0 - t * t)


# name: (numpy forward, scalar expression, gradient(F, x, y, og))
UNARY = {
    "negative": (np.negative, "(-{0})", lambda F, x, y, og: -og),
    "abs": (np.abs, "abs({0})", lambda F, x, y, og: og * F.sign(x)),
    "sign": (np.sign, "np.sign({0})", lambda F, x, y, og: og * 0.0),   # flat, as rounding
    "exp": (_rounded_from_float64(np.exp), "np.exp({0})", lambda F, x, y, og: og * y),
    "log": (_rounded_from_float64(np.log), "np.log({0})", lambda F, x, y, og: og / x),
    "sqrt": (np.sqrt, "np.sqrt({0})", lambda F, x, y, og: og / (y * 2.0)),
    "square": (np.square, "({0} * {0})", lambda F, x, y, og: og * x * 2.0),
    "sin": (np.sin, "np.sin({0})", lambda F, x, y, og: og * F.cos(x)),
    "cos": (np.cos, "np.cos({0})", lambda F, x, y, og: -og * F.sin(x)),
    # relu's gradient reads the output (y > 0 exactly where x > 0): a compiled training
    # step then keeps only the activations, not the values before relu as well.
    # sign(y) is 1 there, 0 elsewhere, and NaN where x is NaN (as in MXNet).
    "relu": (functools.partial(np.maximum, 0), "max({0}, 0.0)",     # partial: no Python frame
             lambda F, x, y, og: og * F.sign(y)),
    "sigmoid": (lambda x: scipy_special().expit(x), "(1.0 / (1.0 + np.exp(-{0})))",
                lambda F, x, y, og: og * y * (1.0 - y)),
    "tanh": (np.tanh, "np.tanh({0})", lambda F, x, y, og: og * (1.0 - y * y)),
    "softrelu": (lambda x: np.logaddexp(0, x), "np.logaddexp(0.0, {0})",
                 lambda F, x, y, og: og * F.sigmoid(x)),
    "softsign": (lambda x: x / (1 + np.abs(x)), "({0} / (1.0 + abs({0})))",
                 lambda F, x, y, og: og / F.square(F.abs(x) + 1.0)),
    # more maths, with MXNet's names
    "tan": (np.tan, "np.tan({0})", lambda F, x, y, og: og * (y * y + 1.0)),
    "sinh": (np.sinh, "np.sinh({0})", lambda F, x, y, og: og * F.cosh(x)),
    "cosh": (np.cosh, "np.cosh({0})", lambda F, x, y, og: og * F.sinh(x)),
    "arcsin": (np.arcsin, "np.arcsin({0})",
               lambda F, x, y, og: og / F.sqrt(1.0 - F.square(x))),
    "arccos": (np.arccos, "np.arccos({0})",
               lambda F, x, y, og: -og / F.sqrt(1.0 - F.square(x))),
    "arctan": (np.arctan, "np.arctan({0})", lambda F, x, y, og: og / (F.square(x) + 1.0)),
    "arcsinh": (np.arcsinh, "np.arcsinh({0})",
                lambda F, x, y, og: og / F.sqrt(F.square(x) + 1.0)),
    "arccosh": (np.arccosh, "np.arccosh({0})",
                lambda F, x, y, og: og / F.sqrt(F.square(x) - 1.0)),
    "arctanh": (np.arctanh, "np.arctanh({0})", lambda F, x, y, og: og / (1.0 - F.square(x))),
    "log2": (np.log2, "np.log2({0})", lambda F, x, y, og: og / (x * float(np.log(2.0)))),
    "log10": (np.log10, "np.log10({0})", lambda F, x, y, og: og / (x * float(np.log(10.0)))),
    "log1p": (np.log1p, "np.log1p({0})", lambda F, x, y, og: og / (x + 1.0)),
    "expm1": (np.expm1, "np.expm1({0})", lambda F, x, y, og: og * (y + 1.0)),
    "reciprocal": (np.reciprocal, "(1.0 / {0})", lambda F, x, y, og: -og * y * y),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "(1.0 / np.sqrt({0}))",
              lambda F, x, y, og: og * y * y * y * -0.5),
    "cbrt": (np.cbrt, "np.cbrt({0})", lambda F, x, y, og: og / (F.square(y) * 3.0)),
    "rcbrt": (lambda x: 1.0 / np.cbrt(x), "(1.0 / np.cbrt({0}))",
              lambda F, x, y, og: og * y / (x * -3.0)),
    # the gradient reads x (ones_like), as MXNet's backward node does, so that it is on
    # x's graph: a second derivative is then zeros, not "nothing was recorded"
    "degrees": (np.degrees, "({0} * 57.29577951308232)",
                lambda F, x, y, og: og * F.ones_like(x) * 57.29577951308232),
    "radians": (np.radians, "({0} * 0.017453292519943295)",
                lambda F, x, y, og: og * F.ones_like(x) * 0.017453292519943295),
    "erf": (lambda x: scipy_special().erf(x), "math.erf({0})",
            lambda F, x, y, og: og * F.exp(-F.square(x)) * float(2.0 / np.sqrt(np.pi))),
    # gamma' = gamma * digamma, lgamma' = digamma (digamma: a host op, Numba has none)
    "gamma": (lambda x: scipy_special().gamma(x), "math.gamma({0})",
              lambda F, x, y, og: og * y * F._digamma(x)),
    # lgamma(-inf) is +inf in C (MXNet) and Python's math; scipy says -inf
    "gammaln": (lambda x: np.where(np.isneginf(x), np.inf, scipy_special().gammaln(x)),
                "math.lgamma({0})",
                lambda F, x, y, og: og * F._digamma(x)),
    # mish (MXNet 2.0's op, ONNX's Mish): x * tanh(softrelu(x)), a smooth relu
    "mish": (lambda x: x * np.tanh(np.logaddexp(0, x)),
             "({0} * np.tanh(np.logaddexp(0.0, {0})))", lambda F, x, y, og: og * _mish_slope(F, x)),
    # Rounding: flat almost everywhere, so the gradient is zero (as in MXNet).
    # MXNet's round goes half away from zero; rint (and NumPy's round) half to even.
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
              "(np.sign({0}) * np.floor(abs({0}) + 0.5))", lambda F, x, y, og: og * 0.0),
    "rint": (np.rint, "np.rint({0})", lambda F, x, y, og: og * 0.0),
    "floor": (np.floor, "np.floor({0})", lambda F, x, y, og: og * 0.0),
    "ceil": (np.ceil, "np.ceil({0})", lambda F, x, y, og: og * 0.0),
    "trunc": (np.trunc, "np.trunc({0})", lambda F, x, y, og: og * 0.0),
    "fix": (np.fix, "np.trunc({0})", lambda F, x, y, og: og * 0.0),
    # 1 where x is 0, else 0, in x's dtype (MXNet: a zero gradient)
    "logical_not": (np.logical_not, "(1.0 if {0} == 0 else 0.0)", lambda F, x, y, og: og * 0.0),
}


# The ONNX operators that compute the same (the registry's `onnx`: onnx/ translates them)
ONNX = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
        "softsign": "Softsign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs",
        "negative": "Neg", "sign": "Sign", "sin": "Sin", "cos": "Cos", "erf": "Erf",
        "mish": "Mish",
        "broadcast_add": "Add", "broadcast_sub": "Sub", "broadcast_mul": "Mul",
        "broadcast_div": "Div", "broadcast_power": "Pow", "broadcast_maximum": "Max",
        "broadcast_minimum": "Min"}


def _unary_gradient(rule):
    def gradient(F, attrs, inputs, outputs, out_grads):
        return [rule(F, inputs[0], outputs[0], out_grads[0])]
    return gradient


def _unary_forward(fn):
    def forward(attrs, x):
        return fn(x).astype(x.dtype, copy=False)
    return forward


for _name, (_fn, _expr, _rule) in UNARY.items():
    register(_name, forward=_unary_forward(_fn), infer_shape=same_shape,
             gradient=_unary_gradient(_rule) if _rule else None, onnx=ONNX.get(_name),
             scalar_expr=_expr, elementwise=True, doc=f"Elementwise {_name}.")

register("_digamma", placement="host", infer_shape=same_shape,
         forward=_unary_forward(lambda x: scipy_special().psi(x)),
         doc="digamma(x) = d/dx log(gamma(x)): the gradient of gamma and gammaln.")
register("_copy", placement="view", forward=lambda attrs, x: x.copy(), infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [og[0]], scalar_expr="{0}", elementwise=True,
         onnx="Identity",
         doc="Identity (a copy).")
alias("identity", "_copy")
register("BlockGrad", placement="view", forward=lambda attrs, x: x.copy(), infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [None], scalar_expr="{0}", elementwise=True,
         onnx="Identity",
         doc="Identity whose gradient is zero (stop_gradient).")
alias("stop_gradient", "BlockGrad")
# make_loss(x): x is the loss. Its gradient is ones whatever comes from above (MXNet's rule:
# a loss head needs no head gradient).
register("make_loss", forward=lambda attrs, x: x.copy(), infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [F.ones_like(i[0])], scalar_expr="{0}",
         elementwise=True, output_names=("loss",),
         doc="make_loss(data): identity; marks data as a loss, so its gradient is ones.")


def _cast_storage_shape(attrs, in_shapes):
    """A dense copy's shape; a sparse stype is refused here, so graphs refuse it too."""
    if attrs["stype"] != "default":
        raise OpError(f"cast_storage: stype={attrs['stype']!r}: straightdope stores every "
                      f"array densely (sparse storage is not part of it); use 'default'")
    return same_shape(attrs, in_shapes)


_cast_storage_shape.partial = all_one_shape
# cast_storage(x, stype='default'): a dense copy. MXNet's test_utils route every value of a
# finite-difference check through it; its gradient passes through, as MXNet's does.
register("cast_storage", attrs={"stype": Choice("default", "row_sparse", "csr", required=True)},
         forward=lambda attrs, x: x.copy(), infer_shape=_cast_storage_shape,
         gradient=lambda F, a, i, o, og: [og[0]], scalar_expr="{0}", elementwise=True,
         doc="cast_storage(data, stype): a copy in storage `stype` ('default' only: dense).")


# Activation(act_type) dispatches to the unary table: one op in MXNet's JSON.
ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")


def _activation_forward(attrs, x):
    return UNARY[attrs["act_type"]][0](x).astype(x.dtype, copy=False)


def _activation_gradient(F, attrs, inputs, outputs, out_grads):
    return [UNARY[attrs["act_type"]][2](F, inputs[0], outputs[0], out_grads[0])]


# act_type is required, as in MXNet (so it is always written into a graph's JSON)
register("Activation", attrs={"act_type": Choice(*ACT_TYPES, required=True)}, unnamed_inputs=True,
         forward=_activation_forward, infer_shape=same_shape, gradient=_activation_gradient,
         scalar_expr=lambda attrs: UNARY[attrs["act_type"]][1], elementwise=True,
         key_attrs=("act_type",),
         doc="Activation(data, act_type='relu'|'sigmoid'|'tanh'|'softrelu'|'softsign').")

# LeakyReLU(act_type): leaky / elu / gelu, with slope.
_SQRT2 = float(np.sqrt(2.0))
_INV_SQRT2PI = float(1.0 / np.sqrt(2.0 * np.pi))


def _leaky_forward(attrs, x):
    kind, slope = attrs["act_type"], attrs["slope"]
    if kind == "leaky":
        y = np.where(x > 0, x, slope * x)
    elif kind == "elu":
        y = np.where(x > 0, x, slope * np.expm1(np.minimum(x, 0)))
    elif kind == "selu":
        y = _SELU_LAMBDA * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0)))
    else:  # gelu, exact form with erf as in MXNet
        y = 0.5 * x * (1.0 + scipy_special().erf(x / _SQRT2))
    return y.astype(x.dtype, copy=False)


# SELU's constants, as MXNet's (mshadow_op.h)
_SELU_ALPHA, _SELU_LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_LEAKY_EXPR = {
    "leaky": "({0} if {0} > 0 else {slope} * {0})",
    "elu": "({0} if {0} > 0 else {slope} * (np.exp({0}) - 1.0))",
    "gelu": "(0.5 * {0} * (1.0 + math.erf({0} / 1.4142135623730951)))",
    "selu": f"({_SELU_LAMBDA!r} * ({{0}} if {{0}} > 0 else {_SELU_ALPHA!r} * (np.exp({{0}}) - 1.0)))",
}
LEAKY_TYPES = ("leaky", "elu", "gelu", "selu", "prelu")
LEAKY_ATTRS = {"act_type": Choice(*LEAKY_TYPES), "slope": Float(0.25),
               "lower_bound": Float(0.125), "upper_bound": Float(0.334)}


# prelu: a learned slope `gamma` for x < 0. MXNet lines gamma's axes up with data's axes
# 0 and 1 only (from the right: a 1-D gamma is per channel, axis 1), the rest broadcast.
def _prelu_gamma_shape(gamma, data):
    """gamma's shape spread over data's dims, MXNet's expand_shape (leaky_relu-inl.h)."""
    out, s = [1] * len(data), len(gamma) - 1
    for i in range(len(data) - 1, -1, -1):
        if s >= 0 and i <= 1 and (data[i] == gamma[s] or gamma[s] == 1):
            out[i] = gamma[s]
            s -= 1
    if s >= 0:
        raise OpError(f"LeakyReLU: prelu's gamma of shape {tuple(gamma)} does not line up "
                      f"with axes 0 and 1 of data {tuple(data)}: give one slope per channel "
                      f"({data[1] if len(data) > 1 else 1},) or a single one (1,)")
    return tuple(out)


def _leaky_inputs(attrs):
    return ("data", "gamma") if attrs["act_type"] == "prelu" else ("data",)


def _leaky_shape(attrs, in_shapes):
    if attrs["act_type"] != "prelu":
        return same_shape(attrs, in_shapes)
    data, gamma = in_shapes
    if data is not None and gamma is None:
        gamma = (data[1] if len(data) > 1 else 1,)        # MXNet: one slope per channel
    if data is not None:
        _prelu_gamma_shape(gamma, data)
    return [data, gamma], [data]


def _leaky_shape_partial(attrs, in_shapes, out_shapes):
    if attrs["act_type"] != "prelu":
        return all_one_shape(attrs, in_shapes, out_shapes)
    data = unify(in_shapes[0], out_shapes[0])
    if data is not None and not is_complete(data):
        return [data, in_shapes[1]], [data]
    return _leaky_shape(attrs, [data, in_shapes[1]])


_leaky_shape.partial = _leaky_shape_partial


def _prelu_forward(x, gamma):
    g = gamma.reshape(_prelu_gamma_shape(gamma.shape, x.shape))
    return np.where(x > 0, x, g * x).astype(x.dtype, copy=False)


def _prelu_grad_forward(attrs, og, x, gamma):
    """d data (wrt 'data') or d gamma (summed over the axes gamma broadcasts on)."""
    spread = _prelu_gamma_shape(gamma.shape, x.shape)
    if attrs["wrt"] == "data":
        return np.where(x > 0, og, gamma.reshape(spread) * og).astype(x.dtype, copy=False)
    d = np.where(x > 0, 0, x * og)
    axes = tuple(i for i, n in enumerate(spread) if n == 1 and x.shape[i] != 1)
    return d.sum(axis=axes, keepdims=True).reshape(gamma.shape).astype(gamma.dtype)


def _leaky_gradient(F, attrs, inputs, outputs, out_grads):
    if attrs["act_type"] == "prelu":
        return [F._prelu_grad(out_grads[0], *inputs, wrt=w) for w in ("data", "gamma")]
    return [F._leaky_relu_grad(out_grads[0], inputs[0], **attrs)]


def _leaky_dispatch(attrs, x, gamma=None):
    return _prelu_forward(x, gamma) if attrs["act_type"] == "prelu" else \
        _leaky_forward(attrs, x)


register("LeakyReLU", inputs=("data", "gamma"), optional_inputs=_leaky_inputs,
         attrs=dict(LEAKY_ATTRS), forward=_leaky_dispatch, infer_shape=_leaky_shape,
         gradient=_leaky_gradient,
         scalar_expr=lambda attrs: _LEAKY_EXPR[attrs["act_type"]], elementwise=True,
         host_when=lambda attrs, shapes: attrs["act_type"] == "prelu",
         key_attrs=("act_type",),
         doc="LeakyReLU(data, act_type='leaky'|'elu'|'gelu'|'selu', slope=0.25), or "
             "LeakyReLU(data, gamma, act_type='prelu'): gamma * x below zero, gamma per "
             "channel (axis 1) or single.")
register("_prelu_grad", inputs=("out_grad", "data", "gamma"), placement="host",
         attrs={"wrt": Choice("data", "gamma")}, forward=_prelu_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1] if attrs["wrt"] == "data" else s[2]]),
         doc="Gradient of LeakyReLU(act_type='prelu') for data or for gamma.")


def _leaky_grad_forward(attrs, og, x):
    kind, slope = attrs["act_type"], attrs["slope"]
    if kind == "leaky":
        d = np.where(x > 0, 1.0, slope)
    elif kind == "elu":
        d = np.where(x > 0, 1.0, slope * np.exp(np.minimum(x, 0)))
    elif kind == "selu":
        # the derivative; MXNet's kernel writes lambda * (alpha + y), which is off by
        # (lambda - 1) * y below zero
        d = _SELU_LAMBDA * np.where(x > 0, 1.0, _SELU_ALPHA * np.exp(np.minimum(x, 0)))
    else:
        d = 0.5 * (1.0 + scipy_special().erf(x / _SQRT2)) + x * np.exp(-0.5 * x * x) * _INV_SQRT2PI
    return (og * d).astype(og.dtype, copy=False)


_LEAKY_GRAD_EXPR = {
    "leaky": "({0} if {1} > 0 else {slope} * {0})",
    "elu": "({0} if {1} > 0 else {slope} * np.exp({1}) * {0})",
    "gelu": "({0} * (0.5 * (1.0 + math.erf({1} / 1.4142135623730951)) "
            "+ {1} * np.exp(-0.5 * {1} * {1}) * 0.3989422804014327))",
    "selu": f"({{0}} * {_SELU_LAMBDA!r} * (1.0 if {{1}} > 0 else {_SELU_ALPHA!r} * np.exp({{1}})))",
}
register("_leaky_relu_grad", inputs=("out_grad", "data"), attrs=dict(LEAKY_ATTRS),
         forward=_leaky_grad_forward, infer_shape=same_shape,
         scalar_expr=lambda attrs: _LEAKY_GRAD_EXPR[attrs["act_type"]], elementwise=True,
         doc="Gradient of LeakyReLU (an op of its own so that the compiler can fuse it).")


def _clip_forward(attrs, x):
    return np.clip(x, attrs["a_min"], attrs["a_max"]).astype(x.dtype, copy=False)


register("clip", attrs={"a_min": Attr("float", required=True), "a_max": Attr("float", required=True)},
         forward=_clip_forward, infer_shape=same_shape,
         gradient=lambda F, attrs, i, o, og: [
             og[0] * F._greater_equal_scalar(i[0], scalar=attrs["a_min"])
             * F._lesser_equal_scalar(i[0], scalar=attrs["a_max"])],
         scalar_expr="min(max({0}, {a_min}), {a_max})", elementwise=True,
         key_attrs=("a_min", "a_max"),
         doc="clip(data, a_min, a_max).")


# hard_sigmoid(x) = clip(alpha * x + beta, 0, 1); its gradient is alpha strictly inside
# (0, 1), as MXNet's kernel tests the line it clips.
HARD_SIGMOID_ATTRS = {"alpha": Float(0.2), "beta": Float(0.5)}
register("hard_sigmoid", attrs=dict(HARD_SIGMOID_ATTRS),
         forward=lambda attrs, x: np.clip(attrs["alpha"] * x + attrs["beta"], 0, 1).astype(
             x.dtype, copy=False),
         infer_shape=same_shape,
         gradient=lambda F, attrs, i, o, og: [F._hard_sigmoid_grad(og[0], i[0], **attrs)],
         scalar_expr="min(max({alpha} * {0} + {beta}, 0.0), 1.0)", elementwise=True,
         doc="hard_sigmoid(data, alpha=0.2, beta=0.5): max(0, min(1, alpha * data + beta)).")


def _hard_sigmoid_grad_forward(attrs, og, x):
    line = attrs["alpha"] * x + attrs["beta"]
    return np.where((line > 0) & (line < 1), og * attrs["alpha"], 0).astype(og.dtype, copy=False)


register("_hard_sigmoid_grad", inputs=("out_grad", "data"), attrs=dict(HARD_SIGMOID_ATTRS),
         forward=_hard_sigmoid_grad_forward, infer_shape=same_shape,
         scalar_expr="({0} * {alpha} if 0.0 < {alpha} * {1} + {beta} < 1.0 else 0.0)",
         elementwise=True, doc="Gradient of hard_sigmoid.")


# contrib.quadratic(x, a, b, c) = a x^2 + b x + c (MXNet's example of writing an op)
register("_contrib_quadratic", attrs={"a": Float(0.0), "b": Float(0.0), "c": Float(0.0)},
         forward=lambda attrs, x: (attrs["a"] * x * x + attrs["b"] * x + attrs["c"]).astype(
             x.dtype, copy=False),
         infer_shape=same_shape,
         gradient=lambda F, attrs, i, o, og: [og[0] * (i[0] * (2.0 * attrs["a"]) + attrs["b"])],
         scalar_expr="({a} * {0} * {0} + {b} * {0} + {c})", elementwise=True,
         doc="contrib.quadratic(data, a=0, b=0, c=0): a * data**2 + b * data + c.")


# np.around(x, decimals): NumPy's half-to-even rounding to `decimals` places (negative:
# tens, hundreds...), in the data's dtype; flat, so a zero gradient (as MXNet's)
register("_npi_around", attrs={"decimals": Int(0)}, placement="host",
         forward=lambda attrs, x: np.around(x, attrs["decimals"]).astype(x.dtype, copy=False),
         infer_shape=same_shape, gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
         doc="np.around(data, decimals=0): rounded half to even at `decimals` places.")


# -------------------------------------------------------------- binary ops
def _sum_to(F, grad, like):
    """Undo broadcasting: sum `grad` down to the shape of `like`."""
    return F._sum_to_like(grad, like)


BINARY = {
    # name: (numpy, scalar expression, grad wrt lhs, grad wrt rhs)
    "broadcast_add": (np.add, "({0} + {1})",
                      lambda F, a, b, y, og: og, lambda F, a, b, y, og: og),
    "broadcast_sub": (np.subtract, "({0} - {1})",
                      lambda F, a, b, y, og: og, lambda F, a, b, y, og: -og),
    "broadcast_mul": (np.multiply, "({0} * {1})",
                      lambda F, a, b, y, og: og * b, lambda F, a, b, y, og: og * a),
    "broadcast_div": (np.divide, "({0} / {1})",
                      lambda F, a, b, y, og: og / b, lambda F, a, b, y, og: -og * y / b),
    "broadcast_power": (np.power, "({0} ** {1})",
                        lambda F, a, b, y, og: og * b * a ** (b - 1.0),
                        lambda F, a, b, y, og: og * y * F.log(a)),
    # Python's and NumPy's modulo: the result has the sign of the divisor. Its gradients
    # (og, -og * floor(a / b)) are 0 for integer data in MXNet (mshadow_op's mod_grad):
    # np_stats' _npi_binary_grad computes them, knowing the dtype (None here)
    "broadcast_mod": (np.mod, "np.mod({0}, {1})", None, None),
    "broadcast_maximum": (np.maximum, "np.maximum({0}, {1})",     # NaN from either side
                          lambda F, a, b, y, og: og * F.broadcast_greater_equal(a, b),
                          lambda F, a, b, y, og: og * F.broadcast_lesser(a, b)),
    "broadcast_minimum": (np.minimum, "np.minimum({0}, {1})",
                          lambda F, a, b, y, og: og * F.broadcast_lesser_equal(a, b),
                          lambda F, a, b, y, og: og * F.broadcast_greater(a, b)),
    "broadcast_hypot": (np.hypot, "math.hypot({0}, {1})",
                        lambda F, a, b, y, og: og * a / y, lambda F, a, b, y, og: og * b / y),
}
COMPARE = {
    "equal": (np.equal, "=="), "not_equal": (np.not_equal, "!="),
    "greater": (np.greater, ">"), "greater_equal": (np.greater_equal, ">="),
    "lesser": (np.less, "<"), "lesser_equal": (np.less_equal, "<="),
}


def result_dtype(a, b):
    """float32 op int32 stays float32 (NumPy would widen to float64)."""
    if a.dtype.kind == "f" and b.dtype.kind != "f":
        return a.dtype
    if b.dtype.kind == "f" and a.dtype.kind != "f":
        return b.dtype
    return np.result_type(a, b)


def _binary_forward(fn):
    def forward(attrs, a, b):
        return np.asarray(fn(a, b)).astype(result_dtype(a, b), copy=False)
    return forward


def _binary_gradient(ga, gb):
    if ga is None:                      # broadcast_mod, see BINARY
        return lambda F, attrs, i, o, og: list(F._npi_binary_grad(og[0], i[0], i[1],
                                                                   function="mod"))

    def gradient(F, attrs, inputs, outputs, out_grads):
        a, b = inputs
        y, og = outputs[0], out_grads[0]
        return [_sum_to(F, ga(F, a, b, y, og), a), _sum_to(F, gb(F, a, b, y, og), b)]
    return gradient


for _name, (_fn, _expr, _ga, _gb) in BINARY.items():
    register(_name, inputs=("lhs", "rhs"), forward=_binary_forward(_fn),
             infer_shape=broadcast_shapes, gradient=_binary_gradient(_ga, _gb),
             scalar_expr=_expr, elementwise=True, onnx=ONNX.get(_name),
             doc=f"{_name}(lhs, rhs) with broadcasting.")


def same_shapes(attrs, in_shapes):
    """elemwise_*: both inputs have one shape, so either tells the other's."""
    a, b = in_shapes
    if _known(a, b) and tuple(a) != tuple(b):
        if {tuple(a), tuple(b)} == {(), (1,)}:   # a full reduction: MXNet 1.x's is (1,)
            return in_shapes, [(1,)]
        raise OpError(f"shapes {a} and {b} differ: elemwise ops, and a Symbol's + - * / "
                      f"as in MXNet 1.x, need equal shapes; to broadcast, use the broadcast_* "
                      f"op (F.broadcast_mul(a, b), F.broadcast_add, ...)")
    s = a if a is not None else b
    return [s, s], [s]


same_shapes.partial = all_one_shape


# comparisons, as MXNet names them: broadcast_greater broadcasts, _greater (a Symbol's >)
# takes inputs of one shape
for _name, (_fn, _sym) in COMPARE.items():
    for _op, _rule, _how in ((f"broadcast_{_name}", broadcast_shapes, "with broadcasting"),
                             (f"_{_name}", same_shapes, "both of one shape")):
        register(_op, inputs=("lhs", "rhs"), forward=_binary_forward(_fn),
                 infer_shape=_rule, gradient=lambda F, a, i, o, og: [None, None],
                 scalar_expr=f"(1.0 if {{0}} {_sym} {{1}} else 0.0)", elementwise=True,
                 doc=f"1 where lhs {_sym} rhs, else 0 ({_how}); no gradient.")


# Logical ops: 1 where both / either / one of the two is nonzero, else 0 (no gradient)
LOGICAL = {"logical_and": (np.logical_and, "({0} != 0 and {1} != 0)"),
           "logical_or": (np.logical_or, "({0} != 0 or {1} != 0)"),
           "logical_xor": (np.logical_xor, "(({0} != 0) != ({1} != 0))")}
for _name, (_fn, _test) in LOGICAL.items():
    register(f"broadcast_{_name}", inputs=("lhs", "rhs"), forward=_binary_forward(_fn),
             infer_shape=broadcast_shapes, gradient=lambda F, a, i, o, og: [None, None],
             scalar_expr=f"(1.0 if {_test} else 0.0)", elementwise=True,
             doc=f"{_name} of lhs and rhs as 1 or 0 (with broadcasting); no gradient.")
    register(f"_{_name}_scalar", attrs={"scalar": Float(1.0)},
             forward=lambda attrs, x, _fn=_fn: _fn(x, attrs["scalar"]).astype(x.dtype),
             infer_shape=same_shape, gradient=lambda F, a, i, o, og: [None],
             scalar_expr=f"(1.0 if {_test.format('{0}', '{scalar}')} else 0.0)",
             elementwise=True, doc=f"{_name} of data and a scalar as 1 or 0; no gradient.")


# the same-shape twins of broadcasting ops, in MXNet's names (elemwise_add is `_Plus`)
for _name, _twin in [("elemwise_add", "broadcast_add"), ("elemwise_sub", "broadcast_sub"),
                     ("elemwise_mul", "broadcast_mul"), ("elemwise_div", "broadcast_div"),
                     ("elemwise_hypot", "broadcast_hypot"), ("_power", "broadcast_power"),
                     ("_mod", "broadcast_mod"), ("_maximum", "broadcast_maximum"),
                     ("_minimum", "broadcast_minimum")]:
    _fn, _expr, _ga, _gb = BINARY[_twin]
    register(_name, inputs=("lhs", "rhs"), forward=_binary_forward(_fn),
             infer_shape=same_shapes, gradient=_binary_gradient(_ga, _gb),
             scalar_expr=_expr, elementwise=True, onnx=ONNX.get(_twin),
             doc=f"{_twin} for inputs of one shape, where each tells the other's.")
register("_identity_with_attr_like_rhs", inputs=("lhs", "rhs"),
         forward=lambda attrs, lhs, rhs: lhs.copy(), infer_shape=same_shapes,
         gradient=lambda F, a, i, o, og: [og[0], None], scalar_expr="{0}", elementwise=True,
         doc="lhs, unchanged, declared to have rhs's shape: a shape constraint that lets "
             "shape inference fill lhs's (and what it was computed from) from rhs.")
for _old, _new in [("broadcast_plus", "broadcast_add"), ("broadcast_minus", "broadcast_sub"),
                   ("maximum", "broadcast_maximum"), ("minimum", "broadcast_minimum"),
                   ("power", "broadcast_power"), ("_hypot", "elemwise_hypot"),
                   # MXNet 1.x's aliases (elemwise_binary_op_*.cc): the names its Symbol
                   # operators call, `a + b` is _internal._Plus(a, b)
                   ("_Plus", "elemwise_add"), ("_plus", "elemwise_add"), ("_add", "elemwise_add"),
                   ("_Minus", "elemwise_sub"), ("_minus", "elemwise_sub"),
                   ("_sub", "elemwise_sub"), ("_Mul", "elemwise_mul"), ("_mul", "elemwise_mul"),
                   ("_Div", "elemwise_div"), ("_div", "elemwise_div"), ("_Power", "_power"),
                   ("_Mod", "_mod"), ("_Maximum", "_maximum"), ("_Minimum", "_minimum"),
                   ("_Hypot", "elemwise_hypot"), ("_Equal", "_equal"),
                   ("_Not_Equal", "_not_equal"), ("_Greater", "_greater"),
                   ("_Greater_Equal", "_greater_equal"), ("_Lesser", "_lesser"),
                   ("_Lesser_Equal", "_lesser_equal")]:
    alias(_old, _new)


# -------------------------------------------------------------- scalar ops
# x OP scalar, where scalar is a Python number kept as an attribute.
SCALAR = {
    "_plus_scalar": (lambda x, s: x + s, "({0} + {scalar})", lambda F, x, y, og, s: og),
    "_minus_scalar": (lambda x, s: x - s, "({0} - {scalar})", lambda F, x, y, og, s: og),
    "_rminus_scalar": (lambda x, s: s - x, "({scalar} - {0})", lambda F, x, y, og, s: -og),
    "_mul_scalar": (lambda x, s: x * s, "({0} * {scalar})", lambda F, x, y, og, s: og * s),
    "_div_scalar": (lambda x, s: x / s, "({0} / {scalar})", lambda F, x, y, og, s: og / s),
    "_rdiv_scalar": (lambda x, s: s / x, "({scalar} / {0})",
                     lambda F, x, y, og, s: -og * y / x),
    # NumPy computes x ** 0.5 as sqrt(x) (NaN at -inf), C's pow as +inf: follow NumPy
    "_power_scalar": (lambda x, s: x ** s,
                      lambda attrs: "np.sqrt({0})" if attrs["scalar"] == 0.5 else
                      "({0} ** {scalar})",
                      lambda F, x, y, og, s: og * s * x ** (s - 1.0)),
    "_rpower_scalar": (lambda x, s: s ** x, "({scalar} ** {0})",
                       lambda F, x, y, og, s: og * y * float(np.log(s))),
    # np.mod, not a - floor(a / b) * b, which loses everything at 3e38 % 7
    "_mod_scalar": (np.mod, "np.mod({0}, {scalar})",
                    lambda F, x, y, og, s: og),
    "_rmod_scalar": (lambda x, s: np.mod(s, x), "np.mod({scalar}, {0})",
                     lambda F, x, y, og, s: -og * F.floor(F._rdiv_scalar(x, scalar=s))),
    "_maximum_scalar": (np.maximum, "max({0}, {scalar})",
                        lambda F, x, y, og, s: og * F._greater_equal_scalar(x, scalar=s)),
    "_minimum_scalar": (np.minimum, "min({0}, {scalar})",
                        lambda F, x, y, og, s: og * F._lesser_equal_scalar(x, scalar=s)),
    "_hypot_scalar": (np.hypot, "math.hypot({0}, {scalar})", lambda F, x, y, og, s: og * x / y),
    # MXNet's smooth L1 with sigma = scalar: quadratic within 1 / sigma^2 of 0, else |x|
    # less a constant; its derivative sigma^2 x, clipped to [-1, 1]
    "smooth_l1": (lambda x, s: np.where(np.abs(x) > 1.0 / (s * s), np.abs(x) - 0.5 / (s * s),
                                        0.5 * x * x * (s * s)),
                  "(abs({0}) - 0.5 / ({scalar} * {scalar}) if abs({0}) > 1.0 / ({scalar} * "
                  "{scalar}) else 0.5 * {0} * {0} * {scalar} * {scalar})",
                  lambda F, x, y, og, s: og * F.clip(x * (s * s), -1.0, 1.0)),
}


def _scalar_forward(fn):
    def forward(attrs, x):
        return np.asarray(fn(x, attrs["scalar"])).astype(x.dtype, copy=False)
    return forward


def _scalar_gradient(rule):
    def gradient(F, attrs, inputs, outputs, out_grads):
        return [rule(F, inputs[0], outputs[0], out_grads[0], attrs["scalar"])]
    return gradient


# MXNet 1.9's scalar ops all parse NumpyBinaryScalarParam, whose scalar defaults to 1
# (smooth_l1(x) is sigma = 1)
for _name, (_fn, _expr, _rule) in SCALAR.items():
    register(_name, attrs={"scalar": Float(1.0)}, forward=_scalar_forward(_fn),
             infer_shape=same_shape, gradient=_scalar_gradient(_rule),
             scalar_expr=_expr, elementwise=True, doc=f"{_name}(data, scalar).")
for _name, (_fn, _sym) in COMPARE.items():
    register(f"_{_name}_scalar", attrs={"scalar": Float(1.0)},
             forward=_scalar_forward(_fn), infer_shape=same_shape,
             gradient=lambda F, a, i, o, og: [None],
             scalar_expr=f"(1.0 if {{0}} {_sym} {{scalar}} else 0.0)", elementwise=True,
             doc=f"1 where data {_sym} scalar, else 0; no gradient.")


# ------------------------------------------------------------------- where
def selects_rows(cond, x) -> bool:
    """MXNet's second form of `where`: a 1-D condition as long as x's first axis picks
    whole rows (x[i] or y[i]) instead of broadcasting against x's last axis."""
    return len(cond) == 1 and len(x) > 1


def row_condition_shape(x) -> tuple:
    """The shape a row-selecting condition (N,) is viewed as: (N, 1, ..., 1)."""
    return (x[0],) + (1,) * (len(x) - 1)


def _where_shape(attrs, in_shapes):
    cond, x, y = in_shapes
    if not _known(cond, x, y):
        return in_shapes, [x if x is not None else y]
    if x != y or cond != x and not (selects_rows(cond, x) and cond[0] == x[0]):
        rows = f", or ({x[0]},) to pick whole rows" if len(x) > 1 else ""
        raise OpError(f"where: condition {cond}, x {x} and y {y}: x and y must have the "
                      f"same shape, and the condition that shape too{rows}")
    return in_shapes, [x]


def _where_partial(attrs, in_shapes, out_shapes):
    """As MXNet does: nothing is inferred until the condition's shape is known."""
    cond, x, y = in_shapes
    if not is_complete(cond):
        return in_shapes, out_shapes
    ranks = {len(s) for s in (x, y, out_shapes[0]) if s is not None}
    picks_rows = len(cond) == 1 and ranks and max(ranks) > 1
    s = unify(x, y, out_shapes[0]) if picks_rows else unify(x, y, out_shapes[0], cond)
    return [cond, s, s], [s]


_where_shape.partial = _where_partial


def _where_forward(attrs, c, x, y):
    if not c.shape == x.shape == y.shape:      # the same error as shape inference's
        _where_shape(attrs, [c.shape, x.shape, y.shape])
    if selects_rows(c.shape, x.shape):
        c = c.reshape(row_condition_shape(x.shape))
    return np.where(c != 0, x, y).astype(x.dtype, copy=False)


register("where", inputs=("condition", "x", "y"),
         forward=_where_forward,
         infer_shape=_where_shape,
         gradient=lambda F, a, i, o, og: [None, F.where(i[0], og[0], F.zeros_like(og[0])),
                                          F.where(i[0], F.zeros_like(og[0]), og[0])],
         scalar_expr="({1} if {0} != 0 else {2})", elementwise=True,
         doc="where(condition, x, y): x where condition is non-zero, else y; a 1-D condition "
             "as long as x's first axis picks whole rows. The graph-safe replacement for a "
             "Python `if` on a tensor.")


def _add_n_shape(attrs, in_shapes):
    known = [s for s in in_shapes if s is not None]
    if len(known) < len(in_shapes):
        return in_shapes, [known[0] if known else None]
    if any(s != known[0] for s in known):
        raise OpError(f"add_n: all inputs must have the same shape, got {known}")
    return in_shapes, [known[0]]


_add_n_shape.partial = all_one_shape


register("add_n", placement="fused",
         variadic=True, forward=lambda attrs, *xs: sum(xs[1:], xs[0].copy()),
         infer_shape=_add_n_shape, gradient=lambda F, a, i, o, og: [og[0]] * len(i),
         elementwise=True, doc="add_n(*arrays): the sum of same-shaped arrays.")
alias("ElementWiseSum", "add_n")


# Python operators map onto ops: (array OP array, array OP scalar, scalar OP array).
# NDArray and Symbol both read this table, so `x + 1` means the same in both worlds.
OPERATORS = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "truediv": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "eq": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "ne": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "gt": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar"),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar"),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar"),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar"),
}
# What `a OP b` on two (legacy) Symbols calls, as MXNet 1.x's symbol.py writes it
# (`_internal._Plus(a, b)`, a node named _plus0): elemwise ops, whose inputs have one
# shape (so `infer_shape` completes `a * b` from either input), where NDArray's and np's
# operators broadcast. `F.broadcast_mul(a, b)` broadcasts in both.
SYMBOL_OPERATORS = {"add": "_Plus", "sub": "_Minus", "mul": "_Mul", "truediv": "_Div",
                    "pow": "_Power", "mod": "_Mod", "eq": "_equal", "ne": "_not_equal",
                    "gt": "_greater", "ge": "_greater_equal", "lt": "_lesser",
                    "le": "_lesser_equal", "maximum": "_Maximum", "minimum": "_Minimum",
                    "hypot": "_Hypot"}
# the entries that are functions (nd.maximum(x, 1)), not Python operators (x + 1)
FUNCTION_ONLY = frozenset({"maximum", "minimum", "hypot", "logical_and", "logical_or",
                           "logical_xor"})
