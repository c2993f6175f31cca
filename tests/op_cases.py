"""One small example call per op: inputs, attributes, and which inputs get gradients.

Shared by the op tests (imperative forward vs NumPy, gradients vs finite
differences, symbol eval, JSON round trip) and by the compiler tests (Numba vs
reference), so that every op is exercised the same way everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    op: str
    make: object                       # rng -> list of input arrays (float64 unless said)
    attrs: dict = field(default_factory=dict)
    wrt: tuple = (0,)                  # inputs to check gradients for
    train: bool = False                # run in training mode (BatchNorm)
    expected: object = None            # optional: (inputs, attrs) -> expected outputs (NumPy)
    label: str = ""

    @property
    def id(self):
        return self.label or self.op + ("" if not self.attrs else "-" + "-".join(
            f"{k}={v}" for k, v in self.attrs.items()))


def away_from(values, points, gap=0.15):
    """Push values away from kinks (relu at 0, clip at its bounds) for finite differences."""
    for p in points:
        close = np.abs(values - p) < gap
        values = np.where(close, p + np.sign(values - p + 1e-12) * gap * 1.5, values)
    return values


def U(shape, low=-2.0, high=2.0, kinks=()):
    def make(rng):
        return away_from(rng.uniform(low, high, shape), kinks)
    return make


def as_dtype(a, dtype):
    """An input cast to the float dtype a test runs in; integer inputs (bincount's data)
    stay integers."""
    a = np.asarray(a)
    return a if a.dtype.kind in "iu" else a.astype(dtype)


def inputs(*makers):
    return lambda rng: [m(rng) for m in makers]


def labels(shape, classes):
    return lambda rng: rng.integers(0, classes, shape).astype(np.float64)


def distinct(shape):
    """Values with no ties (max/min/maximum gradients are only defined without ties)."""
    def make(rng):
        n = int(np.prod(shape))
        return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(np.float64)
    return make


CASES: list[Case] = []
add = CASES.append

unary = {"negative": U((3, 4)), "abs": U((3, 4), kinks=(0,)), "exp": U((3, 4)),
         "log": U((3, 4), 0.5, 3), "sqrt": U((3, 4), 0.5, 3), "square": U((3, 4)),
         "sin": U((3, 4)), "cos": U((3, 4)), "relu": U((3, 4), kinks=(0,)),
         "sigmoid": U((3, 4)), "tanh": U((3, 4)), "softrelu": U((3, 4)),
         "softsign": U((3, 4), kinks=(0,)), "_copy": U((2, 3))}
formulas = {"negative": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
            "sqrt": np.sqrt, "square": np.square, "sin": np.sin, "cos": np.cos,
            "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
            "tanh": np.tanh, "softrelu": lambda x: np.log1p(np.exp(x)),
            "softsign": lambda x: x / (1 + np.abs(x)), "_copy": lambda x: x}
for name, make in unary.items():
    add(Case(name, inputs(make), expected=lambda ins, a, f=formulas[name]: [f(ins[0])]))
# more maths (issue 14): name -> (inputs, NumPy formula)
_half_steps = tuple(k / 2 for k in range(-5, 6))      # rounding jumps, for finite differences
more_unary = {
    "tan": (U((3, 4), -1.2, 1.2), np.tan), "sinh": (U((3, 4)), np.sinh),
    "cosh": (U((3, 4)), np.cosh), "arcsin": (U((3, 4), -0.9, 0.9), np.arcsin),
    "arccos": (U((3, 4), -0.9, 0.9), np.arccos), "arctan": (U((3, 4)), np.arctan),
    "arcsinh": (U((3, 4)), np.arcsinh), "arccosh": (U((3, 4), 1.2, 3), np.arccosh),
    "arctanh": (U((3, 4), -0.9, 0.9), np.arctanh), "log2": (U((3, 4), 0.5, 3), np.log2),
    "log10": (U((3, 4), 0.5, 3), np.log10), "log1p": (U((3, 4), -0.5, 3), np.log1p),
    "expm1": (U((3, 4)), np.expm1), "reciprocal": (U((3, 4), 0.5, 3), np.reciprocal),
    "rsqrt": (U((3, 4), 0.5, 3), lambda x: 1 / np.sqrt(x)),
    "cbrt": (U((3, 4), 0.5, 3), np.cbrt),
    "erf": (U((3, 4)), lambda x: np.vectorize(__import__("math").erf)(x)),
    "erfinv": (U((3, 4), -0.9, 0.9), lambda x: __import__("scipy.special").special.erfinv(x)),
    "mish": (U((3, 4), -4, 4), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "round": (U((3, 4), kinks=_half_steps), lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    "rint": (U((3, 4), kinks=_half_steps), np.rint),
    "floor": (U((3, 4), kinks=_half_steps), np.floor),
    "ceil": (U((3, 4), kinks=_half_steps), np.ceil),
    "trunc": (U((3, 4), kinks=_half_steps), np.trunc),
    "fix": (U((3, 4), kinks=_half_steps), np.fix),
}
for name, (make, f) in more_unary.items():
    add(Case(name, inputs(make), expected=lambda ins, a, f=f: [f(ins[0])]))
add(Case("squeeze", inputs(U((2, 1, 3, 1))), {"axis": (1,)},
         expected=lambda ins, a: [ins[0].squeeze(axis=1)]))
add(Case("squeeze", inputs(U((2, 1, 3, 1))), expected=lambda ins, a: [ins[0].squeeze()]))
for act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
    add(Case("Activation", inputs(U((2, 5), kinks=(0,))), {"act_type": act},
             expected=lambda ins, a, f=formulas[act]: [f(ins[0])]))
add(Case("LeakyReLU", inputs(U((2, 5), kinks=(0,))), {"act_type": "leaky", "slope": 0.1},
         expected=lambda ins, a: [np.where(ins[0] > 0, ins[0], 0.1 * ins[0])]))
add(Case("LeakyReLU", inputs(U((2, 5), kinks=(0,))), {"act_type": "elu", "slope": 1.0},
         expected=lambda ins, a: [np.where(ins[0] > 0, ins[0], np.expm1(ins[0]))]))
add(Case("LeakyReLU", inputs(U((2, 5))), {"act_type": "gelu"}))
add(Case("LeakyReLU", inputs(U((3, 4), kinks=(0,)), U((4,), 0.1, 0.5)), {"act_type": "prelu"},
         wrt=(0, 1), expected=lambda ins, a: [np.where(ins[0] > 0, ins[0], ins[1] * ins[0])]))
add(Case("LeakyReLU", inputs(U((2, 3, 2, 2), kinks=(0,)), U((2, 3), 0.1, 0.5)),
         {"act_type": "prelu"}, wrt=(0, 1), label="LeakyReLU-prelu-4d",   # gamma on axes 0, 1
         expected=lambda ins, a: [np.where(ins[0] > 0, ins[0], ins[1][..., None, None] * ins[0])]))
add(Case("LeakyReLU", inputs(U((2, 5), kinks=(0,))), {"act_type": "selu"},
         expected=lambda ins, a: [1.0507009873554804934193349852946 * np.where(
             ins[0] > 0, ins[0], 1.6732632423543772848170429916717 * np.expm1(ins[0]))]))
add(Case("clip", inputs(U((3, 4), kinks=(-0.5, 0.8))), {"a_min": -0.5, "a_max": 0.8},
         expected=lambda ins, a: [np.clip(ins[0], -0.5, 0.8)]))
add(Case("BlockGrad", inputs(U((2, 2))), wrt=()))
# gradient is ones, not the output gradient: checked in test_mxnet_wider, not by differences
add(Case("make_loss", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [ins[0]]))
add(Case("cast_storage", inputs(U((2, 3))), {"stype": "default"},
         expected=lambda ins, a: [ins[0]]))
add(Case("_identity_with_attr_like_rhs", inputs(U((2, 3)), U((2, 3))),
         expected=lambda ins, a: [ins[0]]))

binary = {"broadcast_add": np.add, "broadcast_sub": np.subtract, "broadcast_mul": np.multiply,
          "broadcast_div": np.divide, "broadcast_power": np.power,
          "broadcast_maximum": np.maximum, "broadcast_minimum": np.minimum}
for name, f in binary.items():
    lo = 0.5 if name in ("broadcast_div", "broadcast_power") else -2.0
    for sa, sb in [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((2, 3, 4), (4,))]:
        make_a = U(sa, lo, 2.0) if "imum" not in name else distinct(sa)
        make_b = U(sb, lo, 2.0) if "imum" not in name else (
            lambda rng, s=sb: distinct(s)(rng) + 0.05)
        add(Case(name, inputs(make_a, make_b), wrt=(0, 1),
                 expected=lambda ins, a, f=f: [f(ins[0], ins[1])],
                 label=f"{name}-{sa}-{sb}"))
add(Case("_linalg_gelqf", inputs(U((2, 3, 4))),
         expected=lambda ins, a: [np.swapaxes(np.linalg.qr(np.swapaxes(ins[0], -1, -2))[k], -1, -2)
                                  for k in (0, 1)]))
# modulo: inputs kept away from the jumps (where a / b crosses an integer)
add(Case("broadcast_mod", inputs(U((3, 4), 2.2, 2.6), U((1, 4), 1.0, 1.05)), wrt=(0, 1),
         expected=lambda ins, a: [np.mod(ins[0], ins[1])]))
add(Case("_mod_scalar", inputs(U((3, 4), -1.5, -0.2)), {"scalar": 1.7},
         expected=lambda ins, a: [np.mod(ins[0], 1.7)]))
add(Case("_rmod_scalar", inputs(U((3, 4), 0.95, 1.5)), {"scalar": 1.7},
         expected=lambda ins, a: [np.mod(1.7, ins[0])]))
COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
           "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal}
for name, f in COMPARE.items():
    add(Case(f"broadcast_{name}", inputs(U((3, 4)), U((1, 4))), wrt=(),
             expected=lambda ins, a, f=f: [f(ins[0], ins[1]).astype(np.float64)]))
    add(Case(f"_{name}_scalar", inputs(lambda r: np.round(r.uniform(-2, 2, (3, 4)), 1)),
             {"scalar": 0.5}, wrt=(),
             expected=lambda ins, a, f=f: [f(ins[0], 0.5).astype(np.float64)]))

scalar = {"_plus_scalar": lambda x, s: x + s, "_minus_scalar": lambda x, s: x - s,
          "_rminus_scalar": lambda x, s: s - x, "_mul_scalar": lambda x, s: x * s,
          "_div_scalar": lambda x, s: x / s, "_rdiv_scalar": lambda x, s: s / x,
          "_power_scalar": lambda x, s: x ** s, "_rpower_scalar": lambda x, s: s ** x,
          "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum}
for name, f in scalar.items():
    positive = name in ("_rdiv_scalar", "_power_scalar")
    add(Case(name, inputs(U((3, 4), 0.5 if positive else -2, 2, kinks=(0.3,))),
             {"scalar": 0.3 if "imum" in name else 1.7},
             expected=lambda ins, a, f=f: [f(ins[0], a["scalar"])]))
add(Case("sign", inputs(U((3, 4), kinks=(0,))), expected=lambda ins, a: [np.sign(ins[0])]))
add(Case("prod", inputs(U((2, 3), kinks=(0,))), {"axis": 1},
         expected=lambda ins, a: [ins[0].prod(axis=1)]))
add(Case("where", inputs(lambda r: (r.uniform(size=(3, 4)) > 0.5).astype(np.float64),
                         U((3, 4)), U((3, 4))), wrt=(1, 2),
         expected=lambda ins, a: [np.where(ins[0] != 0, ins[1], ins[2])]))
add(Case("add_n", inputs(U((2, 3)), U((2, 3)), U((2, 3))), wrt=(0, 1, 2),
         expected=lambda ins, a: [ins[0] + ins[1] + ins[2]]))

for name, f in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}.items():
    maker = distinct((2, 3, 4)) if name in ("max", "min") else U((2, 3, 4))
    for attrs in ({}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": -1}):
        add(Case(name, inputs(maker), attrs,
                 expected=lambda ins, a, f=f: [f(ins[0], axis=a.get("axis"),
                                                 keepdims=a.get("keepdims", False))]))
add(Case("sum", inputs(U((2, 3, 4))), {"axis": 1, "exclude": True},
         expected=lambda ins, a: [ins[0].sum(axis=(0, 2))]))
for attrs in ({}, {"axis": 1}, {"ord": 1, "axis": (0, 2), "keepdims": True},
              {"ord": 1}):
    add(Case("norm", inputs(U((2, 3, 4), kinks=(0,))), attrs,
             expected=lambda ins, a: [np.linalg.norm(
                 ins[0].reshape(-1) if a.get("axis") is None else ins[0],
                 ord=a.get("ord", 2), axis=a.get("axis"), keepdims=a.get("keepdims", False))
                 if not isinstance(a.get("axis"), tuple) else
                 np.abs(ins[0]).sum(axis=a["axis"], keepdims=True)]))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


add(Case("softmax", inputs(U((3, 5))), expected=lambda ins, a: [_softmax(ins[0], -1)]))
add(Case("softmax", inputs(U((3, 5))), {"axis": 0},
         expected=lambda ins, a: [_softmax(ins[0], 0)]))
add(Case("log_softmax", inputs(U((3, 5))),
         expected=lambda ins, a: [np.log(_softmax(ins[0], -1))]))
def _masked_softmax(x, length, axis, log=False):
    """softmax (log_softmax) of the first length[...] entries along axis; 0 after them."""
    keep = np.arange(x.shape[axis]).reshape(-1, 1) < np.expand_dims(length, axis)
    e = np.where(keep, np.exp(x - x.max(axis=axis, keepdims=True)), 0.0)
    p = e / e.sum(axis=axis, keepdims=True)
    return np.where(keep, np.log(np.where(keep, p, 1.0)), 0.0) if log else p


def lengths(shape, longest):
    return lambda rng: rng.integers(1, longest + 1, shape).astype(np.float64)


for name in ("softmax", "log_softmax"):       # with a length: the host forward and backward
    add(Case(name, inputs(U((2, 4, 3)), lengths((2, 3), 4)), {"axis": 1, "use_length": True},
             expected=lambda ins, a, log=name == "log_softmax": [
                 _masked_softmax(ins[0], ins[1].astype(int), 1, log)]))
    add(Case(name, inputs(U((3, 5))), {"dtype": "float64"}, label=f"{name}-dtype",
             expected=lambda ins, a, log=name == "log_softmax": [
                 np.log(_softmax(ins[0], -1)) if log else _softmax(ins[0], -1)]))
add(Case("softmin", inputs(U((3, 5))), {"dtype": "float64"}, label="softmin-dtype",
         expected=lambda ins, a: [_softmax(-ins[0], -1)]))
add(Case("pick", inputs(U((4, 5)), lambda rng: rng.integers(-9, 10, (4,)).astype(np.float64)),
         {"mode": "wrap"}, expected=lambda ins, a: [ins[0][np.arange(4), ins[1].astype(int) % 5]]))
add(Case("pick", inputs(U((4, 5)), labels((4,), 5)),
         expected=lambda ins, a: [ins[0][np.arange(4), ins[1].astype(int)]]))
add(Case("_sparse_softmax_ce", inputs(U((4, 5)), labels((4,), 5)),
         expected=lambda ins, a: [-np.log(_softmax(ins[0], -1)[
             np.arange(4), ins[1].astype(int)])[:, None]]))
add(Case("_sparse_softmax_ce", inputs(U((3, 4, 2)), labels((3, 2), 4)), {"axis": 1},
         expected=lambda ins, a: [-np.log(np.take_along_axis(
             _softmax(ins[0], 1), ins[1].astype(int)[:, None, :], axis=1))]))
add(Case("one_hot", inputs(labels((4,), 5)), {"depth": 5}, wrt=(),
         expected=lambda ins, a: [np.eye(5)[ins[0].astype(int)].astype(np.float32)]))
for name in ("SoftmaxOutput", "Softmax"):
    add(Case(name, inputs(U((4, 5)), labels((4,), 5)), wrt=(),
             expected=lambda ins, a: [_softmax(ins[0], -1)]))
add(Case("SoftmaxOutput", inputs(U((2, 3, 2)), labels((2, 3), 6)), wrt=(),  # flattened rows
         label="SoftmaxOutput-flattened-rows", expected=lambda ins, a: [_softmax(ins[0].reshape(2, 6), -1).reshape(2, 3, 2)]))
add(Case("SoftmaxOutput", inputs(U((2, 3, 2)), labels((2, 3), 2)), {"preserve_shape": True},
         wrt=(), expected=lambda ins, a: [_softmax(ins[0], -1)]))
add(Case("SoftmaxOutput", inputs(U((2, 3, 2)), labels((2, 2), 3)), {"multi_output": True},
         wrt=(), expected=lambda ins, a: [_softmax(ins[0], 1)]))
add(Case("softmax_cross_entropy", inputs(U((4, 5)), labels((4,), 5)),
         expected=lambda ins, a: [np.array([-np.log(_softmax(ins[0], -1)[
             np.arange(4), ins[1].astype(int)]).sum()])]))

for ta in (False, True):
    for tb in (False, True):
        sa, sb = ((4, 3) if ta else (3, 4)), ((5, 4) if tb else (4, 5))
        add(Case("dot", inputs(U(sa), U(sb)), {"transpose_a": ta, "transpose_b": tb},
                 wrt=(0, 1), expected=lambda ins, a: [
                     (ins[0].T if a["transpose_a"] else ins[0])
                     @ (ins[1].T if a["transpose_b"] else ins[1])]))
add(Case("batch_dot", inputs(U((2, 3, 4)), U((2, 4, 5))), wrt=(0, 1),
         expected=lambda ins, a: [ins[0] @ ins[1]]))
add(Case("batch_dot", inputs(U((2, 3, 4)), U((2, 5, 4))), {"transpose_b": True}, wrt=(0, 1),
         expected=lambda ins, a: [ins[0] @ ins[1].transpose(0, 2, 1)]))
add(Case("FullyConnected", inputs(U((3, 2, 2)), U((5, 4)), U((5,))), {"num_hidden": 5},
         wrt=(0, 1, 2),
         expected=lambda ins, a: [ins[0].reshape(3, -1) @ ins[1].T + ins[2]]))
add(Case("FullyConnected", inputs(U((2, 3, 4)), U((5, 4))),
         {"num_hidden": 5, "no_bias": True, "flatten": False}, wrt=(0, 1),
         expected=lambda ins, a: [ins[0] @ ins[1].T]))


def _conv_ref(x, w, b, stride, pad, dilate, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilate * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilate * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, f, oh, ow))
    per = f // groups
    for o in range(f):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride:i * stride + dilate * (kh - 1) + 1:dilate,
                           j * stride:j * stride + dilate * (kw - 1) + 1:dilate]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


for stride, pad, dilate, groups in [(1, 0, 1, 1), (2, 1, 1, 1), (1, 1, 2, 1), (1, 0, 1, 2)]:
    add(Case("Convolution", inputs(U((2, 2, 5, 5)), U((4, 2 // groups, 3, 3)), U((4,))),
             {"kernel": (3, 3), "num_filter": 4, "stride": (stride, stride), "pad": (pad, pad),
              "dilate": (dilate, dilate), "num_group": groups}, wrt=(0, 1, 2),
             expected=lambda ins, a, s=stride, p=pad, d=dilate, g=groups:
             [_conv_ref(ins[0], ins[1], ins[2], s, p, d, g)],
             label=f"Convolution-s{stride}-p{pad}-d{dilate}-g{groups}"))
for attrs in ({"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"},
              {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
              {"kernel": (2, 2), "pool_type": "sum"},
              {"kernel": (3, 3), "stride": (2, 2), "pool_type": "max",
               "pooling_convention": "full"},
              {"pool_type": "avg", "global_pool": True}):
    add(Case("Pooling", inputs(distinct((2, 2, 5, 5))), attrs))
add(Case("Pooling", inputs(distinct((1, 2, 4, 4))), {"kernel": (2, 2), "stride": (2, 2)},
         expected=lambda ins, a: [ins[0].reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))],
         label="Pooling-max-reference"))
# 1-D and 3-D data: the same op, one spatial axis fewer or more
add(Case("Convolution", inputs(U((2, 2, 7)), U((4, 1, 3)), U((4,))),
         {"kernel": (3,), "num_filter": 4, "stride": (2,), "num_group": 2}, wrt=(0, 1, 2),
         expected=lambda ins, a: [_conv_ref(ins[0][:, :, None], ins[1][:, :, None], ins[2],
                                            2, 0, 1, 2)[:, :, 0]],
         label="Convolution-1d"))


def _conv3d_ref(x, w, b, pad):
    """Stride 1: a 3-D convolution is a sum over depth offsets of 2-D convolutions."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (0, 0), (0, 0)))
    kd = w.shape[2]
    depth = xp.shape[2] - kd + 1
    return np.stack([sum(_conv_ref(xp[:, :, d + i], w[:, :, i], None, 1, pad, 1, 1)
                         for i in range(kd)) for d in range(depth)], axis=2) + \
        b.reshape(1, -1, 1, 1, 1)


add(Case("Convolution", inputs(U((1, 2, 4, 3, 4)), U((3, 2, 2, 2, 3)), U((3,))),
         {"kernel": (2, 2, 3), "num_filter": 3, "pad": (1, 1, 1)}, wrt=(0, 1, 2),
         expected=lambda ins, a: [_conv3d_ref(ins[0], ins[1], ins[2], 1)],
         label="Convolution-3d"))
add(Case("Convolution", inputs(U((1, 4, 5, 5, 5)), U((2, 2, 3, 3, 3))),
         {"kernel": (3, 3, 3), "num_filter": 2, "stride": (2, 2, 2), "num_group": 2,
          "no_bias": True}, wrt=(0, 1), label="Convolution-3d-strided-grouped"))
for attrs in ({"kernel": (2, 2, 2), "stride": (2, 2, 2), "pool_type": "max"},
              {"kernel": (3, 3, 3), "stride": (2, 2, 2), "pad": (1, 1, 1), "pool_type": "avg",
               "count_include_pad": False},
              {"kernel": (3,), "stride": (2,), "pool_type": "max"}):
    add(Case("Pooling", inputs(distinct((1, 2, 4, 5, 4)[:2 + len(attrs["kernel"])])), attrs,
             label=f"Pooling-{len(attrs['kernel'])}d-{attrs['pool_type']}"))
add(Case("Pooling", inputs(distinct((1, 2, 4, 4, 4))), {"kernel": (2, 2, 2), "stride": (2, 2, 2)},
         expected=lambda ins, a: [ins[0].reshape(1, 2, 2, 2, 2, 2, 2, 2).max(axis=(3, 5, 7))],
         label="Pooling-3d-max-reference"))


def _deconv_ref(x, w, stride, pad):
    """Each input position adds its value times the kernel into a window of the output."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    full = np.zeros((n, w.shape[1], (h - 1) * stride + kh, (wd - 1) * stride + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum(
                "nc,cfhw->nfhw", x[:, :, i, j], w)
    return full[:, :, pad:full.shape[2] - pad, pad:full.shape[3] - pad]


add(Case("Deconvolution", inputs(U((2, 3, 3, 4)), U((3, 2, 3, 2))),
         {"kernel": (3, 2), "num_filter": 2, "stride": (2, 2), "pad": (1, 1)}, wrt=(0, 1),
         expected=lambda ins, a: [_deconv_ref(ins[0], ins[1], 2, 1)], label="Deconvolution"))
add(Case("Deconvolution", inputs(U((1, 4, 3, 3)), U((4, 3, 2, 2)), U((6,))),
         {"kernel": (2, 2), "num_filter": 6, "num_group": 2, "adj": (1, 1), "stride": (2, 2),
          "no_bias": False}, wrt=(0, 1, 2), label="Deconvolution-grouped-adj-bias"))
add(Case("Deconvolution", inputs(U((2, 2, 4)), U((2, 3, 3))),
         {"kernel": (3,), "num_filter": 3, "stride": (2,), "dilate": (2,)}, wrt=(0, 1),
         label="Deconvolution-1d"))
add(Case("Deconvolution", inputs(U((1, 2, 2, 3, 2)), U((2, 2, 2, 2, 2))),
         {"kernel": (2, 2, 2), "num_filter": 2, "pad": (1, 0, 0), "stride": (2, 1, 2)},
         wrt=(0, 1), label="Deconvolution-3d"))
add(Case("CTCLoss", inputs(U((5, 2, 4)), labels((2, 2), 3)), {"blank_label": "last"},
         label="CTCLoss"))
add(Case("CTCLoss", inputs(U((6, 2, 3)), lambda rng: np.array([[1.0, 2.0, 2.0], [2.0, 1.0, 0.0]]),
                           lambda rng: np.array([6.0, 4.0]), lambda rng: np.array([3.0, 1.0])),
         {"use_data_lengths": True, "use_label_lengths": True}, label="CTCLoss-lengths"))
add(Case("BatchNorm", inputs(U((4, 3, 2, 2)), U((3,), 0.5, 2), U((3,)), U((3,)),
                             U((3,), 0.5, 2)), {"fix_gamma": False}, wrt=(0, 1, 2), train=True,
         label="BatchNorm-train"))
add(Case("BatchNorm", inputs(U((4, 3)), U((3,), 0.5, 2), U((3,)), U((3,)),
                             U((3,), 0.5, 2)), {"fix_gamma": False}, wrt=(0, 1, 2),
         expected=lambda ins, a: [(ins[0] - ins[3]) / np.sqrt(ins[4] + 1e-3) * ins[1] + ins[2]],
         label="BatchNorm-inference"))
add(Case("LayerNorm", inputs(U((3, 5)), U((5,), 0.5, 2), U((5,))), wrt=(0, 1, 2),
         expected=lambda ins, a: [(ins[0] - ins[0].mean(-1, keepdims=True))
                                  / np.sqrt(ins[0].var(-1, keepdims=True) + 1e-5)
                                  * ins[1] + ins[2]]))
add(Case("Dropout", inputs(U((3, 4))), {"p": 0.5}, wrt=(0,),
         expected=lambda ins, a: [ins[0]], label="Dropout-inference"))

add(Case("reshape", inputs(U((2, 3, 4))), {"shape": (0, -1)},
         expected=lambda ins, a: [ins[0].reshape(2, 12)]))
add(Case("reshape", inputs(U((2, 3, 4))), {"shape": (-3, 4)},
         expected=lambda ins, a: [ins[0].reshape(6, 4)]))
add(Case("reshape", inputs(U((2, 12))), {"shape": (0, -4, 3, -1)},
         expected=lambda ins, a: [ins[0].reshape(2, 3, 4)]))
add(Case("reshape_like", inputs(U((2, 6)), U((3, 4))), wrt=(0,),
         expected=lambda ins, a: [ins[0].reshape(3, 4)]))
add(Case("Flatten", inputs(U((2, 3, 2))), expected=lambda ins, a: [ins[0].reshape(2, 6)]))
add(Case("transpose", inputs(U((2, 3, 4))), {"axes": (1, 0, 2)},
         expected=lambda ins, a: [ins[0].transpose(1, 0, 2)]))
add(Case("transpose", inputs(U((2, 3))), expected=lambda ins, a: [ins[0].T]))
add(Case("expand_dims", inputs(U((2, 3))), {"axis": 1},
         expected=lambda ins, a: [ins[0][:, None]]))
add(Case("concat", inputs(U((2, 3)), U((2, 2))), {"dim": 1}, wrt=(0, 1),
         expected=lambda ins, a: [np.concatenate(ins, axis=1)]))
add(Case("split", inputs(U((2, 6))), {"num_outputs": 3, "axis": 1},
         expected=lambda ins, a: np.split(ins[0], 3, axis=1)))
add(Case("slice_axis", inputs(U((3, 5))), {"axis": 1, "begin": 1, "end": 4},
         expected=lambda ins, a: [ins[0][:, 1:4]]))
add(Case("reverse", inputs(U((3, 4, 2))), {"axis": (0, 2)},
         expected=lambda ins, a: [ins[0][::-1, :, ::-1]]))
add(Case("slice", inputs(U((4, 5))), {"begin": (1, 0), "end": (3, None), "step": (None, 2)},
         expected=lambda ins, a: [ins[0][1:3, ::2]]))
add(Case("broadcast_to", inputs(U((1, 3))), {"shape": (4, 3)},
         expected=lambda ins, a: [np.broadcast_to(ins[0], (4, 3))]))
add(Case("broadcast_like", inputs(U((3, 1)), U((3, 4))), wrt=(0,),
         expected=lambda ins, a: [np.broadcast_to(ins[0], (3, 4))]))
add(Case("zeros_like", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [0 * ins[0]]))
add(Case("ones_like", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [0 * ins[0] + 1]))
add(Case("Embedding", inputs(labels((2, 3), 6), U((6, 4))),
         {"input_dim": 6, "output_dim": 4}, wrt=(1,),
         expected=lambda ins, a: [ins[1][ins[0].astype(int)]]))
for name, fill in (("_zeros", 0.0), ("_ones", 1.0)):
    add(Case(name, lambda rng: [], {"shape": (2, 3)}, wrt=(),
             expected=lambda ins, a, v=fill: [np.full((2, 3), v, np.float32)]))
add(Case("_full", lambda rng: [], {"shape": (2, 3), "value": 2.5}, wrt=(),
         expected=lambda ins, a: [np.full((2, 3), 2.5, np.float32)]))
add(Case("Cast", inputs(U((2, 3))), {"dtype": "float32"},
         expected=lambda ins, a: [ins[0].astype(np.float32)], wrt=()))
# mx.np's promotion: float data passes unchanged (ints: tests/test_np_ndarray.py)
add(Case("_np_promote", inputs(U((2, 3))), {"rule": "mean"},
         expected=lambda ins, a: [ins[0]]))
for name, f in (("argmax", np.argmax), ("argmin", np.argmin)):
    add(Case(name, inputs(distinct((3, 4))), {"axis": 1}, wrt=(),
             expected=lambda ins, a, f=f: [f(ins[0], axis=1).astype(np.float64)]))

# optimizer steps: the new weight (the states they update are written back in place)
W, POS = U((2, 3)), U((2, 3), 0.5, 2.0)
add(Case("sgd_update", inputs(W, W), {"lr": 0.1, "wd": 0.01}, wrt=(),
         expected=lambda ins, a: [(1 - 0.1 * 0.01) * ins[0] - 0.1 * ins[1]]))
add(Case("sgd_mom_update", inputs(W, W, W), {"lr": 0.1, "momentum": 0.9}, wrt=(),
         expected=lambda ins, a: [ins[0] + 0.9 * ins[2] - 0.1 * ins[1]]))
add(Case("nag_mom_update", inputs(W, W, W), {"lr": 0.1, "momentum": 0.9}, wrt=()))
add(Case("signsgd_update", inputs(W, W), {"lr": 0.1}, wrt=(),
         expected=lambda ins, a: [ins[0] - 0.1 * np.sign(ins[1])]))
add(Case("signum_update", inputs(W, W, W), {"lr": 0.1, "momentum": 0.9}, wrt=()))
add(Case("adam_update", inputs(W, W, W, POS), {"lr": 0.01, "clip_gradient": 1.0}, wrt=()))
add(Case("rmsprop_update", inputs(W, W, POS), {"lr": 0.01}, wrt=()))
add(Case("rmspropalex_update", inputs(W, U((2, 3), -0.5, 0.5), U((2, 3), 2.0, 3.0),
                                      U((2, 3), -0.5, 0.5), W), {"lr": 0.01}, wrt=()))
add(Case("ftml_update", inputs(W, W, POS, POS, W), {"lr": 0.01, "t": 3}, wrt=()))
add(Case("ftrl_update", inputs(W, W, W, POS), {"lr": 0.1}, wrt=()))

# gathering by index
add(Case("take", inputs(U((4, 3)), labels((2, 2), 4)), wrt=(0,),
         expected=lambda ins, a: [ins[0][ins[1].astype(int)]]))
add(Case("take", inputs(U((2, 5)), lambda rng: np.array([4.0, 7.0, -1.0])),
         {"axis": 1, "mode": "wrap"}, wrt=(0,),
         expected=lambda ins, a: [ins[0][:, [4, 2, 4]]]))
add(Case("batch_take", inputs(U((3, 4)), labels((3,), 4)), wrt=(),
         expected=lambda ins, a: [ins[0][np.arange(3), ins[1].astype(int)]]))

# the fused RNN op (forward only): lstm, 1 layer, hidden 2 on 2 features = 4*2*(2+2+2)
# parameters; gru, 2 layers, both directions = 2*3*2*(2+2+2) + 2*3*2*(4+2+2)
add(Case("RNN", inputs(U((3, 2, 2), -1, 1), U((48,), -1, 1), U((1, 2, 2)), U((1, 2, 2))),
         {"state_size": 2, "num_layers": 1, "mode": "lstm", "state_outputs": True}, wrt=()))
add(Case("RNN", inputs(U((3, 2, 2), -1, 1), U((168,), -1, 1), U((4, 2, 2))),
         {"state_size": 2, "num_layers": 2, "mode": "gru", "bidirectional": True}, wrt=(),
         label="RNN-gru-bidirectional"))

# elemwise_*: broadcast_* arithmetic without broadcasting (equal shapes)
for name, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
    add(Case(f"elemwise_{name}", inputs(U((2, 3)), U((2, 3))), wrt=(0, 1),
             expected=lambda ins, a, f=f: [f(ins[0], ins[1])]))
add(Case("elemwise_div", inputs(U((2, 3)), U((2, 3), 0.5, 2.0)), wrt=(0, 1),
         expected=lambda ins, a: [ins[0] / ins[1]]))

# issue 14, nd fluent methods: more maths, NaN-skipping reductions, repeating, padding,
# sorting, and writing a slice
for name, (make, f) in {"rcbrt": (U((3, 4), 0.5, 3), lambda x: 1 / np.cbrt(x)),
                        "degrees": (U((3, 4)), np.degrees),
                        "radians": (U((3, 4)), np.radians)}.items():
    add(Case(name, inputs(make), expected=lambda ins, a, f=f: [f(ins[0])]))
add(Case("softmin", inputs(U((3, 5))), expected=lambda ins, a: [_softmax(-ins[0], -1)]))
add(Case("nansum", inputs(U((2, 3, 4))), {"axis": (1, 2)},
         expected=lambda ins, a: [np.nansum(ins[0], axis=(1, 2))]))
add(Case("nanprod", inputs(U((2, 3), kinks=(0,))), {"axis": 1},
         expected=lambda ins, a: [np.nanprod(ins[0], axis=1)]))
add(Case("argmax_channel", inputs(distinct((3, 4))), wrt=(),
         expected=lambda ins, a: [np.argmax(ins[0], axis=-1).astype(np.float64)]))
add(Case("tile", inputs(U((2, 3))), {"reps": (2, 1, 2)},
         expected=lambda ins, a: [np.tile(ins[0], (2, 1, 2))]))
add(Case("repeat", inputs(U((2, 3))), {"repeats": 2, "axis": 1},
         expected=lambda ins, a: [np.repeat(ins[0], 2, axis=1)]))
add(Case("repeat", inputs(U((2, 3))), {"repeats": 3},
         expected=lambda ins, a: [np.repeat(ins[0], 3)]))
add(Case("SwapAxis", inputs(U((2, 3, 4))), {"dim1": 0, "dim2": 2},
         expected=lambda ins, a: [np.swapaxes(ins[0], 0, 2)]))
add(Case("pad", inputs(U((1, 2, 3, 3))),
         {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)},
         expected=lambda ins, a: [np.pad(ins[0], [(0, 0), (0, 0), (1, 2), (2, 1)], "reflect")]))
add(Case("pad", inputs(U((1, 1, 2, 3))),
         {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 0, 2), "constant_value": 5.0},
         expected=lambda ins, a: [np.pad(ins[0], [(0, 0), (0, 0), (1, 1), (0, 2)],
                                         constant_values=5.0)]))
add(Case("slice_like", inputs(U((4, 5)), U((2, 3))), {"axes": (1,)}, wrt=(0,),
         expected=lambda ins, a: [ins[0][:, :3]]))
add(Case("broadcast_axes", inputs(U((2, 1, 3))), {"axis": (1,), "size": (4,)},
         expected=lambda ins, a: [np.broadcast_to(ins[0], (2, 4, 3))]))
add(Case("_split_v2", inputs(U((2, 6))), {"indices": (0, 1, 4), "axis": 1},
         expected=lambda ins, a: np.split(ins[0], [1, 4], axis=1)))
add(Case("shape_array", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [np.array([2, 3])]))
add(Case("size_array", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [np.array([6])]))
add(Case("sort", inputs(distinct((3, 4))), {"axis": 1, "is_ascend": False},
         expected=lambda ins, a: [-np.sort(-ins[0], axis=1)]))
add(Case("argsort", inputs(distinct((3, 4))), {"axis": 0}, wrt=(),
         expected=lambda ins, a: [np.argsort(ins[0], axis=0).astype(np.float32)]))
add(Case("topk", inputs(distinct((3, 5))), {"k": 2, "ret_typ": "value"},
         expected=lambda ins, a: [-np.sort(-ins[0], axis=1)[:, :2]]))
add(Case("topk", inputs(distinct((3, 5))), {"k": 2, "ret_typ": "mask", "axis": 0}, wrt=(),
         expected=lambda ins, a: [(np.argsort(np.argsort(-ins[0], axis=0), axis=0) < 2)
                                  .astype(np.float64)]))
add(Case("_slice_assign", inputs(U((3, 4)), U((2, 2))), {"begin": (1, 0), "end": (3, 2)},
         wrt=(0, 1), expected=lambda ins, a: [np.concatenate(
             [ins[0][:1], np.concatenate([ins[1], ins[0][1:, 2:]], axis=1)])]))
add(Case("_slice_assign_scalar", inputs(U((3, 4))),
         {"scalar": 2.0, "begin": (None, 1), "end": (None, 3)},
         expected=lambda ins, a: [np.concatenate([ins[0][:, :1], np.full((3, 2), 2.0),
                                                  ins[0][:, 3:]], axis=1)]))
# MXNet's Sequence* ops (ops/sequence.py): data (T, B, C), lengths per sequence
for _op in ("SequenceMask", "SequenceLast", "SequenceReverse"):
    add(Case(_op, inputs(U((4, 3, 2)), lambda rng: np.array([4.0, 2.0, 1.0])),
             {"use_sequence_length": True}, label=f"{_op}-lengths"))
    add(Case(_op, inputs(U((4, 3, 2))), label=_op))


def _near_pair(rng):
    """Two arrays within allclose's tolerance of each other, but not equal."""
    x = rng.uniform(-2, 2, (3, 4))
    return [x, x * (1 + 1e-7)]


add(Case("_contrib_allclose", _near_pair, wrt=(),
         expected=lambda ins, a: [np.array(np.allclose(ins[0], ins[1]), dtype=np.uint8)]))
add(Case("_contrib_allclose", inputs(U((2, 3)), U((2, 3))), {"rtol": 1e-3, "atol": 0.1},
         wrt=(), expected=lambda ins, a: [np.array(np.allclose(ins[0], ins[1], 1e-3, 0.1),
                                                   dtype=np.uint8)]))
add(Case("hard_sigmoid", inputs(U((3, 4), -4, 4, kinks=(-2.5, 2.5))),
         expected=lambda ins, a: [np.clip(0.2 * ins[0] + 0.5, 0, 1)]))
add(Case("hard_sigmoid", inputs(U((3, 4), kinks=(-1.0, 1.0))), {"alpha": 0.5, "beta": 0.5},
         expected=lambda ins, a: [np.clip(0.5 * ins[0] + 0.5, 0, 1)]))
add(Case("logical_not", lambda rng: [rng.integers(-2, 2, (3, 4)).astype(np.float64)], wrt=(),
         expected=lambda ins, a: [np.logical_not(ins[0]).astype(np.float64)]))
add(Case("reshape_like", inputs(U((3, 10)), U((4, 2, 5))),
         {"lhs_begin": -1, "rhs_begin": 1}, wrt=(0,),
         expected=lambda ins, a: [ins[0].reshape(3, 2, 5)]))
add(Case("_contrib_arange_like", inputs(U((2, 3))), {"start": 1.5, "step": 0.5, "repeat": 2},
         expected=lambda ins, a: [(1.5 + 0.5 * (np.arange(6) // 2)).reshape(2, 3)]))
add(Case("_contrib_arange_like", inputs(U((2, 3))), {"axis": -1},
         expected=lambda ins, a: [np.arange(3.0)]))
add(Case("_eye", lambda rng: [], {"N": 3, "M": 4, "k": 1}, wrt=(),
         expected=lambda ins, a: [np.eye(3, 4, 1, dtype=np.float32)]))
add(Case("_npi_hsplit", inputs(U((2, 6))), {"sections": 3},
         expected=lambda ins, a: list(np.hsplit(ins[0], 3))))
add(Case("_npi_hsplit", inputs(U((5,))), {"indices": (0, 2)},
         expected=lambda ins, a: list(np.hsplit(ins[0], [2]))))
add(Case("_npi_array_split", inputs(U((7, 2))), {"sections": 3},
         expected=lambda ins, a: list(np.array_split(ins[0], 3))))
add(Case("broadcast_to", inputs(U((1, 4))), {"shape": (2, 3, -2)},
         expected=lambda ins, a: [np.broadcast_to(ins[0], (2, 3, 4))]))
add(Case("broadcast_hypot", inputs(U((3, 4), 0.5, 2), U((1, 4), 0.5, 2)), wrt=(0, 1),
         expected=lambda ins, a: [np.hypot(ins[0], ins[1])]))
add(Case("elemwise_hypot", inputs(U((3, 4), 0.5, 2), U((3, 4), -2, -0.5)), wrt=(0, 1),
         expected=lambda ins, a: [np.hypot(ins[0], ins[1])]))
add(Case("_hypot_scalar", inputs(U((3, 4), 0.5, 2)), {"scalar": 1.5},
         expected=lambda ins, a: [np.hypot(ins[0], 1.5)]))
add(Case("smooth_l1", inputs(U((3, 4), -3, 3, kinks=(-0.25, 0.25))), {"scalar": 2.0},
         expected=lambda ins, a: [np.where(np.abs(ins[0]) > 0.25, np.abs(ins[0]) - 0.125,
                                           2.0 * ins[0] ** 2)]))


def _zero_or_not(shape):
    return lambda rng: rng.integers(-1, 2, shape).astype(np.float64)


for _name, _fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    add(Case(f"broadcast_{_name}", inputs(_zero_or_not((3, 4)), _zero_or_not((1, 4))), wrt=(),
             expected=lambda ins, a, f=_fn: [f(ins[0], ins[1]).astype(np.float64)]))
    add(Case(f"_{_name}_scalar", inputs(_zero_or_not((3, 4))), {"scalar": 0.0}, wrt=(),
             expected=lambda ins, a, f=_fn: [f(ins[0], 0.0).astype(np.float64)]))
add(Case("_contrib_quadratic", inputs(U((3, 4))), {"a": 1.5, "b": -2.0, "c": 0.5},
         expected=lambda ins, a: [1.5 * ins[0] ** 2 - 2.0 * ins[0] + 0.5]))
add(Case("_contrib_div_sqrt_dim", inputs(U((2, 3, 4))),
         expected=lambda ins, a: [ins[0] / 2.0]))
add(Case("_contrib_index_array", inputs(U((2, 3))), wrt=(),
         expected=lambda ins, a: [np.stack(np.indices((2, 3)), axis=-1)]))
add(Case("_contrib_index_array", inputs(U((2, 3, 2))), {"axes": (-1, 0)}, wrt=(),
         expected=lambda ins, a: [np.stack([np.indices((2, 3, 2))[2],
                                            np.indices((2, 3, 2))[0]], axis=-1)]))
add(Case("moments", inputs(U((2, 3, 4))), {"axes": (0, 2)},
         expected=lambda ins, a: [ins[0].mean(axis=(0, 2)), ins[0].var(axis=(0, 2))]))
add(Case("moments", inputs(U((2, 3))), {"keepdims": True},
         expected=lambda ins, a: [ins[0].mean(keepdims=True), ins[0].var(keepdims=True)]))
add(Case("diag", inputs(U((3,))), {"k": -1}, expected=lambda ins, a: [np.diag(ins[0], -1)]))
add(Case("diag", inputs(U((2, 4, 3))), {"k": 1, "axis1": -1, "axis2": 1},
         expected=lambda ins, a: [np.diagonal(ins[0], 1, -1, 1)]))
add(Case("all_finite", inputs(U((2, 3))), wrt=(), expected=lambda ins, a: [np.array([1.0])]))
add(Case("multi_all_finite", lambda rng: [rng.uniform(-1, 1, (2, 2)), np.array([1.0, np.inf])],
         {"num_arrays": 2}, wrt=(), expected=lambda ins, a: [np.array([0.0])]))
add(Case("depth_to_space", inputs(U((2, 8, 2, 3))), {"block_size": 2},
         expected=lambda ins, a: [ins[0].reshape(2, 2, 2, 2, 2, 3).transpose(
             0, 3, 4, 1, 5, 2).reshape(2, 2, 4, 6)]))
add(Case("space_to_depth", inputs(U((2, 1, 4, 6))), {"block_size": 2},
         expected=lambda ins, a: [ins[0].reshape(2, 1, 2, 2, 3, 2).transpose(
             0, 3, 5, 1, 2, 4).reshape(2, 4, 2, 3)]))
add(Case("gather_nd", lambda rng: [rng.uniform(-1, 1, (3, 4, 2)),
                                   np.array([[0, 2, -1], [1, 3, 1]], dtype=np.float64)],
         expected=lambda ins, a: [ins[0][[0, 2, 2], [1, 3, 1]]]))
add(Case("_ravel_multi_index", lambda rng: [np.array([[0, 2, 1], [3, 0, 4]], np.float64)],
         {"shape": (-1, 5)}, wrt=(), expected=lambda ins, a: [np.array([3.0, 10.0, 9.0])]))
add(Case("_unravel_index", lambda rng: [np.array([3.0, 10.0, 9.0])], {"shape": (3, 5)}, wrt=(),
         expected=lambda ins, a: [np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 4.0]])]))
add(Case("UpSampling", inputs(U((1, 2, 2, 3))), {"scale": 2, "sample_type": "nearest"},
         expected=lambda ins, a: [ins[0].repeat(2, axis=2).repeat(2, axis=3)]))
add(Case("UpSampling", inputs(U((1, 1, 4, 2)), U((1, 2, 2, 1))),
         {"scale": 1, "sample_type": "nearest", "num_args": 2}, wrt=(0, 1),
         expected=lambda ins, a: [np.concatenate(
             [ins[0], ins[1].repeat(2, axis=2).repeat(2, axis=3)], axis=1)]))


def _lrn_reference(x, nsize=3, alpha=0.3, beta=0.75, knorm=2.0):
    squares = np.pad(x * x, [(0, 0), (nsize // 2, nsize // 2), (0, 0), (0, 0)])
    window = sum(squares[:, k:k + x.shape[1]] for k in range(nsize))
    norm = knorm + alpha / nsize * window
    return [x * norm ** -beta, norm]


add(Case("LRN", inputs(U((2, 5, 2, 2))), {"nsize": 3, "alpha": 0.3},
         expected=lambda ins, a: _lrn_reference(ins[0])[:1]))      # tmp_norm is hidden
add(Case("SoftmaxActivation", inputs(U((2, 3, 2))),
         expected=lambda ins, a: [np.exp(ins[0]) / np.exp(ins[0]).sum(axis=(1, 2),
                                                                      keepdims=True)]))
add(Case("SoftmaxActivation", inputs(U((2, 3, 2))), {"mode": "channel"},
         expected=lambda ins, a: [np.exp(ins[0]) / np.exp(ins[0]).sum(axis=1, keepdims=True)]))
add(Case("_npi_around", inputs(U((3, 4), -300, 300, kinks=tuple(range(-295, 300, 10)))),
         {"decimals": -1}, expected=lambda ins, a: [np.around(ins[0], -1)]))
add(Case("_npi_around", inputs(U((3, 4))), {"decimals": 1}, wrt=(),
         expected=lambda ins, a: [np.around(ins[0], 1)]))


# mx.np functions that move elements (ops/np_ops.py) and np.linalg's ops
add(Case("_np_rearrange", inputs(U((3, 4))), {"function": "roll", "args": "((1, -1), (0, 1))"},
         expected=lambda ins, a: [np.roll(ins[0], (1, -1), (0, 1))]))
add(Case("_np_rearrange", inputs(U((2, 3))),
         {"function": "pad", "args": "(((1, 0), (2, 1)), 'constant', 1.5)"},
         expected=lambda ins, a: [np.pad(ins[0], ((1, 0), (2, 1)), constant_values=1.5)]))
add(Case("_np_insert", inputs(U((3, 2)), U((2,))), {"args": "(1, 0)"}, wrt=(0, 1),
         expected=lambda ins, a: [np.insert(ins[0], 1, ins[1], 0)]))


def _well_conditioned(shape):
    def make(rng):
        n = shape[-1]
        return rng.uniform(-0.5, 0.5, shape) + 2 * np.eye(n)
    return make


def _spd(shape):
    def make(rng):
        m = rng.uniform(-1, 1, shape)
        return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])
    return make


def _mxnet_solve(a, b):
    return np.linalg.solve(a, b[..., None])[..., 0] if b.ndim == a.ndim - 1 \
        else np.linalg.solve(a, b)


add(Case("_npi_det", inputs(_well_conditioned((2, 3, 3))),
         expected=lambda ins, a: [np.linalg.det(ins[0])]))
add(Case("_npi_slogdet", inputs(_well_conditioned((3, 3))),
         expected=lambda ins, a: list(np.linalg.slogdet(ins[0]))))
add(Case("_npi_inv", inputs(_well_conditioned((2, 3, 3))),
         expected=lambda ins, a: [np.linalg.inv(ins[0])]))
add(Case("_npi_solve", inputs(_well_conditioned((2, 3, 3)), U((2, 3))), wrt=(0, 1),
         expected=lambda ins, a: [_mxnet_solve(ins[0], ins[1])]))
# cholesky reads the lower triangle but its gradient is MXNet's symmetric one, which finite
# differences of single entries do not see: test_np_functions_gradients checks it on a @ a.T
add(Case("_npi_cholesky", inputs(_spd((3, 3))), wrt=(),
         expected=lambda ins, a: [np.linalg.cholesky(ins[0])]))
add(Case("_npi_eigvalsh", inputs(_spd((3, 3))),
         expected=lambda ins, a: [np.linalg.eigvalsh(ins[0])]))
add(Case("_npi_eigh", inputs(_spd((3, 3))),
         expected=lambda ins, a: list(np.linalg.eigh(ins[0]))))
add(Case("_npi_eig", inputs(_spd((3, 3))), wrt=(),
         expected=lambda ins, a: [m.real for m in np.linalg.eig(ins[0])]))
add(Case("_npi_eigvals", inputs(_spd((3, 3))), wrt=(),
         expected=lambda ins, a: [np.linalg.eigvals(ins[0]).real]))
add(Case("_npi_svd", inputs(U((2, 3))), wrt=(),
         expected=lambda ins, a: list(np.linalg.svd(ins[0], full_matrices=False))))
add(Case("_npi_tensorinv", inputs(_well_conditioned((4, 2, 2))), {"ind": 1},
         expected=lambda ins, a: [np.linalg.tensorinv(ins[0], ind=1)]))
add(Case("_npi_tensorsolve", inputs(_well_conditioned((4, 4)), U((4,))), wrt=(0, 1),
         expected=lambda ins, a: [np.linalg.tensorsolve(ins[0], ins[1])]))
add(Case("_npi_pinv", inputs(U((2, 3)), lambda rng: np.array(1e-15)), wrt=(),
         expected=lambda ins, a: [np.linalg.pinv(ins[0])]))
add(Case("_np_combine", inputs(U((2, 3)), U((2, 1))), {"function": "hstack", "num_args": 2},
         wrt=(0, 1), expected=lambda ins, a: [np.hstack(ins)]))
add(Case("_npi_diff", inputs(U((3, 4))), {"n": 2, "axis": 1},
         expected=lambda ins, a: [np.diff(ins[0], 2, 1)]))
add(Case("_npi_ediff1d", inputs(U((2, 3))), {"to_begin": "[1.5]", "to_end": "[2.0, 3.0]"},
         expected=lambda ins, a: [np.ediff1d(ins[0], to_begin=1.5, to_end=[2.0, 3.0])]))
add(Case("_npi_nan_to_num", lambda rng: [np.array([[np.nan, 1.5], [np.inf, -np.inf]])],
         {"nan": 2.0, "posinf": 9.0}, wrt=(),
         expected=lambda ins, a: [np.nan_to_num(ins[0], nan=2.0, posinf=9.0)]))
add(Case("_npi_nan_to_num", inputs(U((2, 3))),
         expected=lambda ins, a: [ins[0]]))
# a normal of scale 0 is deterministic, so every path can compare it (and its gradient)
add(Case("_npi_sample", inputs(U((2, 3))),
         {"distribution": "normal", "scalars": "(None, 0.0)", "dtype": "float64",
          "num_args": 1}, expected=lambda ins, a: [ins[0]]))
add(Case("_npi_tensordot", inputs(U((2, 3, 4)), U((4, 3, 5))), {"axes": "([1, 2], [1, 0])"},
         wrt=(0, 1), expected=lambda ins, a: [np.tensordot(ins[0], ins[1], ([1, 2], [1, 0]))]))
add(Case("_np_make", lambda rng: [], {"function": "hanning", "args": "(5,)", "dtype": "float64"},
         wrt=(), expected=lambda ins, a: [np.hanning(5)]))
add(Case("_np_make", lambda rng: [], {"function": "eye", "args": "(2, 3, 1)",
                                      "dtype": "float64"},
         wrt=(), expected=lambda ins, a: [np.eye(2, 3, 1)]))

# MXNet's linalg ops (issue 32): matrices in the last two axes, stacks in the leading ones
def _spd(shape):
    """Symmetric positive-definite matrices (potrf, syevd need them)."""
    def make(rng):
        a = rng.uniform(-1, 1, shape)
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    return make


def _lower_factor(shape):
    """Lower-triangular matrices with a diagonal away from 0 (solves stay well-posed)."""
    return lambda rng: np.tril(rng.uniform(-1, 1, shape)) + 2 * np.eye(shape[-1])


add(Case("_linalg_gemm", inputs(U((2, 3, 4)), U((2, 5, 4)), U((2, 3, 5))),
         {"transpose_b": True, "alpha": 2.0, "beta": 0.5}, wrt=(0, 1, 2),
         expected=lambda ins, a: [2 * ins[0] @ np.swapaxes(ins[1], 1, 2) + 0.5 * ins[2]]))
add(Case("_linalg_gemm2", inputs(U((2, 3, 4)), U((4, 3, 5))), {"axis": 0}, wrt=(0, 1),
         expected=lambda ins, a: [np.moveaxis(np.moveaxis(ins[0], 0, -2)
                                              @ np.moveaxis(ins[1], 0, -2), -2, 0)]))
add(Case("_linalg_potrf", inputs(_spd((2, 3, 3))), wrt=(),     # gradient: test_linalg.py
         expected=lambda ins, a: [np.linalg.cholesky(ins[0])]))
add(Case("_linalg_potri", inputs(_lower_factor((2, 3, 3))),
         expected=lambda ins, a: [np.linalg.inv(ins[0] @ np.swapaxes(ins[0], 1, 2))]))
add(Case("_linalg_trmm", inputs(_lower_factor((2, 3, 3)), U((2, 4, 3))),
         {"rightside": True, "transpose": True, "alpha": 1.5}, wrt=(0, 1),
         expected=lambda ins, a: [1.5 * ins[1] @ np.swapaxes(ins[0], 1, 2)]))
add(Case("_linalg_trsm", inputs(_lower_factor((2, 3, 3)), U((2, 3, 4))),
         {"lower": False, "alpha": 2.0}, wrt=(0, 1),
         expected=lambda ins, a: [np.linalg.solve(np.triu(ins[0]), 2 * ins[1])]))
add(Case("_linalg_sumlogdiag", inputs(U((2, 3, 3), 0.5, 3)),
         expected=lambda ins, a: [np.log(np.diagonal(ins[0], axis1=1, axis2=2)).sum(-1)]))
add(Case("_linalg_syrk", inputs(U((2, 3, 4))), {"transpose": True, "alpha": 0.5},
         expected=lambda ins, a: [0.5 * np.swapaxes(ins[0], 1, 2) @ ins[0]]))


def _syevd_reference(a):
    """U's rows are the eigenvectors, each signed so that its largest entry is positive."""
    lam, v = np.linalg.eigh(a)
    u = np.ascontiguousarray(np.swapaxes(v, -1, -2))
    for row in u.reshape(-1, u.shape[-1]):
        row *= np.sign(row[np.argmax(np.abs(row))])
    return [u, lam]


add(Case("_linalg_syevd", inputs(_spd((2, 3, 3))), wrt=(),     # gradient: test_linalg.py
         expected=lambda ins, a: _syevd_reference(ins[0])))
add(Case("_linalg_extractdiag", inputs(U((2, 3, 3))), {"offset": -1},
         expected=lambda ins, a: [np.diagonal(ins[0], -1, 1, 2)]))
add(Case("_linalg_makediag", inputs(U((2, 3))), {"offset": 1},
         expected=lambda ins, a: [np.stack([np.diagflat(r, 1) for r in ins[0]])]))
add(Case("_linalg_extracttrian", inputs(U((2, 3, 3))), {"lower": False},
         expected=lambda ins, a: [ins[0][:, [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]]))
add(Case("_linalg_maketrian", inputs(U((2, 3))), {"offset": -1},
         expected=lambda ins, a: [np.stack([[[0, 0, 0], [r[0], 0, 0], [r[1], r[2], 0]]
                                            for r in ins[0]])]))
add(Case("_arange", lambda rng: [], {"start": 1.0, "stop": 3.0, "step": 0.5, "repeat": 2},
         wrt=(), expected=lambda ins, a: [np.repeat(np.arange(1.0, 3.0, 0.5), 2)]))


# MXNet's InstanceNorm, GroupNorm, L2Normalization and SVMOutput ops (issue 32)
def _group_normalised(x, gamma, beta, groups, eps):
    rows = x.reshape(x.shape[0], groups, -1)
    xhat = (rows - rows.mean(2, keepdims=True)) / np.sqrt(rows.var(2, keepdims=True) + eps)
    return (xhat * gamma[None, :, None] + beta[None, :, None]).reshape(x.shape)


add(Case("InstanceNorm", inputs(U((2, 3, 2, 2)), U((3,)), U((3,))), wrt=(0, 1, 2),
         expected=lambda ins, a: [_group_normalised(*ins, 3, 1e-3)]))
add(Case("GroupNorm", inputs(U((2, 4, 3)), U((2,)), U((2,))), {"num_groups": 2}, wrt=(0, 1, 2),
         expected=lambda ins, a: [_group_normalised(*ins, 2, 1e-5)]))
add(Case("L2Normalization", inputs(U((2, 3, 4))), {"mode": "channel"},
         expected=lambda ins, a: [ins[0] / np.sqrt((ins[0] ** 2).sum(1, keepdims=True)
                                                   + 1e-10)]))
add(Case("L2Normalization", inputs(U((2, 3, 4))),
         expected=lambda ins, a: [ins[0] / np.sqrt((ins[0] ** 2).sum((1, 2), keepdims=True)
                                                   + 1e-10)]))
# its backward ignores the output gradient (the hinge loss's): tests/test_nn_ops_mxnet.py
add(Case("SVMOutput", inputs(U((4, 3)), labels((4,), 3)), wrt=(),
         expected=lambda ins, a: [ins[0]]))
# its output's length depends on the index's values (tests/test_boolean_mask.py: hybridized)
add(Case("_contrib_boolean_mask", inputs(U((4, 3)), lambda rng: np.array([0.0, 1, 0, 1])),
         expected=lambda ins, a: [ins[0][[1, 3]]]))
add(Case("_contrib_index_copy", inputs(U((5, 3)), lambda rng: np.array([4.0, 0, 2]),
                                       U((3, 3))), wrt=(0, 2),
         expected=lambda ins, a: [np.stack([ins[2][1], ins[0][1], ins[2][2], ins[0][3],
                                            ins[2][0]])]))
add(Case("gamma", inputs(U((3, 4), 0.5, 3)),
         expected=lambda ins, a: [np.vectorize(__import__("math").gamma)(ins[0])]))
add(Case("gammaln", inputs(U((3, 4), 0.5, 3)),
         expected=lambda ins, a: [np.vectorize(__import__("math").lgamma)(ins[0])]))
add(Case("_digamma", inputs(U((3, 4), 0.5, 3)), wrt=(),
         expected=lambda ins, a: [(np.vectorize(__import__("math").lgamma)(ins[0] + 1e-6)
                                   - np.vectorize(__import__("math").lgamma)(ins[0] - 1e-6))
                                  / 2e-6]))
# one-hot rows: every draw is certain, so the case is deterministic (gradient: test_random_ops.py)
add(Case("_sample_multinomial", lambda rng: [np.array([[0.0, 1, 0], [0, 0, 1]])],
         {"shape": (4,), "get_prob": True, "dtype": "float32"}, wrt=(),
         expected=lambda ins, a: [np.array([[1.0] * 4, [2.0] * 4]), np.zeros((2, 4))]))

# Samplers (ops/sampling.py), with parameters that make every draw certain: the cases are
# deterministic (their distributions: tests/test_random_ops.py)
_CERTAIN = {"uniform": {"low": 1.5, "high": 1.5}, "normal": {"loc": 2.0, "scale": 0.0},
            "gamma": {"alpha": 2.0, "beta": 0.0}, "exponential": {"lam": float("inf")},
            "poisson": {"lam": 0.0}, "negative_binomial": {"k": 2, "p": 1.0},
            "generalized_negative_binomial": {"mu": 0.0, "alpha": 0.5}}
for _dist, _params in _CERTAIN.items():
    _value = float(next(iter(_params.values()))) if _dist in ("uniform", "normal") else 0.0
    add(Case(f"_random_{_dist}", lambda rng: [], dict(_params, shape=(2, 3)), wrt=(),
             expected=lambda ins, a, v=_value: [np.full((2, 3), v, np.float32)]))
    add(Case(f"_random_{_dist}_like", inputs(U((2, 3))), dict(_params),
             expected=lambda ins, a, v=_value: [np.full((2, 3), v)]))
    _arrays = [np.full((2,), float(p)) for p in _params.values()]
    add(Case(f"_sample_{_dist}", lambda rng, arrays=_arrays: [a.copy() for a in arrays],
             {"shape": (3,)}, wrt=(),
             expected=lambda ins, a, v=_value: [np.full((2, 3), v, np.float32)]))
add(Case("_random_randint", lambda rng: [], {"low": 3, "high": 4, "shape": (2, 2)}, wrt=(),
         expected=lambda ins, a: [np.full((2, 2), 3, np.int32)]))
add(Case("_shuffle", inputs(U((1, 4))), wrt=(), expected=lambda ins, a: [ins[0]]))

# densities: parameters of the sample's leading shape, two draws each
_PDF_PARAMS = {"normal": [U((2,), 0.5, 1.0), U((2,), 0.5, 1.5)],
               "uniform": [U((2,), -2.0, -1.5), U((2,), 1.5, 2.0)],
               "gamma": [U((2,), 1.5, 3.0), U((2,), 0.5, 2.0)],
               "exponential": [U((2,), 0.5, 2.0)],
               "poisson": [U((2,), 1.0, 4.0)],
               "negative_binomial": [U((2,), 2.0, 4.0), U((2,), 0.3, 0.7)],
               "generalized_negative_binomial": [U((2,), 1.0, 3.0), U((2,), 0.2, 0.8)]}
_DISCRETE = ("poisson", "negative_binomial", "generalized_negative_binomial")
for _dist, _makers in _PDF_PARAMS.items():
    _sample = (lambda rng: rng.integers(0, 5, (2, 2)).astype(np.float64)) \
        if _dist in _DISCRETE else U((2, 2), 0.2, 1.2)
    _wrt = tuple(range(1, 1 + len(_makers))) if _dist in _DISCRETE else \
        tuple(range(1 + len(_makers)))
    for _log in (False, True):
        add(Case(f"_random_pdf_{_dist}", inputs(_sample, *_makers), {"is_log": _log},
                 wrt=_wrt))
add(Case("_random_pdf_dirichlet",
         lambda rng: [rng.dirichlet([1.5, 2.0, 3.0], (2, 2)), rng.uniform(1.0, 3.0, (2, 3))],
         {"is_log": True}, wrt=(0, 1)))

for _size in ((), (2,), (2, 3)):
    add(Case("_contrib_AdaptiveAvgPooling2D", inputs(U((2, 2, 5, 7))), {"output_size": _size}))
for _attrs in ({"height": 5, "width": 7}, {"height": 3, "width": 2, "align_corners": False},
               {"scale_height": 0.5, "scale_width": 2.0, "mode": "odd_scale"},
               {"mode": "to_even_up"}):
    add(Case("_contrib_BilinearResize2D", inputs(U((1, 2, 4, 5))), _attrs))
add(Case("_contrib_BilinearResize2D", inputs(U((1, 2, 4, 5)), U((1, 1, 3, 3))), {"mode": "like"}))
add(Case("im2col", inputs(U((2, 2, 5, 4))), {"kernel": (2, 3), "stride": (2, 1), "pad": (1, 0)}))
add(Case("col2im", inputs(U((2, 12, 10))),
         {"output_size": (4, 5), "kernel": (2, 3), "dilate": (2, 1), "pad": (0, 1)}))

# mx.np's counting and summarising functions (ops/np_stats.py), argmax/argmin, where, matmul
def _with_repeats(shape, values=4):
    """Whole numbers with ties (unique, bincount have something to count)."""
    return lambda rng: rng.integers(0, values, shape).astype(np.float64)


add(Case("_histogram", inputs(U((3, 4))), {"bin_cnt": 4, "range": "(-2.0, 2.0)"}, wrt=(),
         expected=lambda ins, a: [np.histogram(ins[0], 4, (-2.0, 2.0))[0],
                                  np.histogram(ins[0], 4, (-2.0, 2.0))[1]]))
add(Case("_histogram", inputs(U((10,)), lambda rng: np.array([-2.0, -0.5, 0.5, 2.0])),
         wrt=(), expected=lambda ins, a: [np.histogram(ins[0], ins[1])[0], ins[1]]))
# bincount counts integers only (as NumPy's): its data is int64 in every test
add(Case("_npi_bincount", inputs(lambda rng: rng.integers(0, 4, (7,))), {"minlength": 6},
         wrt=(), expected=lambda ins, a: [np.bincount(ins[0], minlength=6)]))
add(Case("_npi_unique", inputs(_with_repeats((3, 4))),
         {"return_inverse": True, "return_counts": True}, wrt=(),
         expected=lambda ins, a: list(np.unique(ins[0], return_inverse=True,
                                                return_counts=True))))
add(Case("_npi_diag_indices_from", inputs(U((3, 3))), wrt=(),
         expected=lambda ins, a: [np.stack(np.diag_indices_from(ins[0]))]))
add(Case("_npi_average", inputs(U((3, 4)), U((4,), 0.5, 2)),
         {"axis": "1", "weighted": True, "returned": True}, wrt=(0, 1),
         expected=lambda ins, a: list(np.average(ins[0], 1, ins[1], returned=True))))
add(Case("_npi_average", inputs(U((3, 4))), {"axis": "(0, 1)"},
         expected=lambda ins, a: [np.average(ins[0], (0, 1))]))
add(Case("_npi_polyval", inputs(U((3,)), U((2, 3))), wrt=(0, 1),
         expected=lambda ins, a: [np.polyval(ins[0], ins[1])]))
add(Case("_npi_einsum", inputs(U((2, 3)), U((3, 4))), {"subscripts": "ij,jk->ik"},
         wrt=(0, 1), expected=lambda ins, a: [np.einsum("ij,jk->ik", *ins)]))
add(Case("_npi_einsum", inputs(U((3, 3))), {"subscripts": "ii->i"},
         expected=lambda ins, a: [np.einsum("ii->i", ins[0])]))
add(Case("_npi_moment", inputs(U((3, 4))), {"axis": "0", "ddof": 1, "std": True},
         expected=lambda ins, a: [np.std(ins[0], 0, ddof=1)]))
add(Case("_npi_moment", inputs(U((3, 4))), {"axis": "(0, 1)", "keepdims": True},
         expected=lambda ins, a: [np.var(ins[0], (0, 1), keepdims=True)]))
add(Case("_npi_mean", inputs(U((3, 4))), {"axis": "1", "dtype": "float64", "keepdims": True},
         expected=lambda ins, a: [np.mean(ins[0], 1, keepdims=True)]))
add(Case("_npi_cumsum", inputs(U((3, 4))), {"axis": 1},
         expected=lambda ins, a: [np.cumsum(ins[0], 1)]))
add(Case("_npi_cumsum", inputs(U((2, 3))),
         expected=lambda ins, a: [np.cumsum(ins[0])]))
add(Case("_npi_argextreme", inputs(distinct((3, 4))), {"function": "argmax", "axis": 1},
         wrt=(), expected=lambda ins, a: [np.argmax(ins[0], 1)]))
add(Case("_npi_argextreme", inputs(distinct((3, 4))), {"function": "argmin"},
         wrt=(), expected=lambda ins, a: [np.argmin(ins[0])]))
add(Case("_npi_where", inputs(_with_repeats((3, 4), 2), U((3, 4)), U((1, 4))), wrt=(1, 2),
         expected=lambda ins, a: [np.where(ins[0], ins[1], ins[2])]))
add(Case("_npi_matmul", inputs(U((2, 3, 4)), U((4, 5))), wrt=(0, 1), label="_npi_matmul-batch",
         expected=lambda ins, a: [np.matmul(ins[0], ins[1])]))
add(Case("_npi_matmul", inputs(U((3,)), U((2, 3, 4))), wrt=(0, 1), label="_npi_matmul-vector",
         expected=lambda ins, a: [np.matmul(ins[0], ins[1])]))
add(Case("_npx_constraint_check", inputs(U((2, 3), 0.5, 2)), {"msg": "must be positive"},
         wrt=(), expected=lambda ins, a: [np.array(np.all(ins[0] > 0))]))
# random ops made certain: p one-hot always picks a[2]; a covariance of 1e-30 moves the
# samples by ~1e-15 only, below every comparison's tolerance (no gradients, as in MXNet)
add(Case("_npi_choice", inputs(U((4,)), lambda rng: np.array([0.0, 0, 1, 0])),
         {"size": (3,), "weighted": True}, wrt=(),
         expected=lambda ins, a: [np.full(3, ins[0][2])]))
add(Case("_npi_multivariate_normal", inputs(U((3,)), lambda rng: 1e-30 * np.eye(3)),
         {"size": (2,)}, wrt=(),
         expected=lambda ins, a: [np.broadcast_to(ins[0], (2, 3))]))


# ---- spatial: GridGenerator, BilinearSampler, SpatialTransformer, Correlation,
# image.normalize, contrib.quantize/dequantize, contrib.interleaved_matmul_*, bilinear
# UpSampling (loop references of the samplers and Correlation: tests/test_spatial_ops.py)
def _affine_grid_ref(theta, h, w):
    x, y = np.meshgrid(np.linspace(-1, 1, w), np.linspace(-1, 1, h))
    th = theta.reshape(-1, 2, 3)
    return (th[:, :, 0, None, None] * x + th[:, :, 1, None, None] * y
            + th[:, :, 2, None, None])


def _near_identity(batch):
    return lambda rng: np.tile([1.0, 0, 0, 0, 1, 0], (batch, 1)) + rng.uniform(-.2, .2, (batch, 6))


def _bilinear_upsampling_ref(x, w, s):
    k, p = 2 * s - s % 2, s // 2
    n, c, h, wd = x.shape
    out = np.zeros((n, c, (h - 1) * s + k, (wd - 1) * s + k))
    for i in range(h):
        for j in range(wd):
            out[:, :, i * s:i * s + k, j * s:j * s + k] += x[:, :, i, j, None, None] * w[:, 0]
    return out[:, :, p:p + h * s, p:p + wd * s]


def _quantize_ref(x, lo, hi, out_type):
    x = x.astype(np.float32)
    if out_type == "int8":
        real = np.float32(max(abs(lo), abs(hi)))
        q = np.trunc(np.sign(x) * np.minimum(np.abs(x) * (np.float32(127) / real) + np.float32(.5),
                                             np.float32(127)))
        return [q.astype(np.int8), np.array([-real]), np.array([real])]
    q = np.trunc((x - np.float32(lo)) * (np.float32(255) / np.float32(hi - lo)) + np.float32(.5))
    return [q.astype(np.uint8), np.array([lo]), np.array([hi])]


def _interleaved(x, heads, parts):
    return x.reshape(x.shape[0], x.shape[1], heads, parts, -1)


add(Case("GridGenerator", inputs(U((2, 6))), {"transform_type": "affine", "target_shape": (3, 4)},
         expected=lambda ins, a: [_affine_grid_ref(ins[0], 3, 4)]))
add(Case("GridGenerator", inputs(U((2, 2, 3, 4))), {"transform_type": "warp"},
         expected=lambda ins, a: [(ins[0] + np.stack(np.meshgrid(np.arange(4), np.arange(3))))
                                  / np.array([1.5, 1.0]).reshape(1, 2, 1, 1) - 1]))
add(Case("BilinearSampler", inputs(U((2, 3, 4, 5)), U((2, 2, 3, 3), -1.2, 1.2)), wrt=(0, 1)))
add(Case("SpatialTransformer", inputs(U((2, 3, 5, 5)), _near_identity(2)),
         {"target_shape": (4, 4)}, wrt=(0, 1)))
add(Case("Correlation", inputs(U((2, 3, 6, 6)), U((2, 3, 6, 6))),
         {"kernel_size": 3, "max_displacement": 1, "pad_size": 1}, wrt=(0, 1)))
add(Case("Correlation", inputs(U((1, 2, 5, 6)), U((1, 2, 5, 6))),
         {"max_displacement": 2, "stride1": 2, "stride2": 2, "pad_size": 2,
          "is_multiply": False}, wrt=(0, 1)))
add(Case("_image_normalize", inputs(U((2, 3, 4, 4))),
         {"mean": (0.1, 0.2, 0.3), "std": (0.5, 1.0, 2.0)},
         expected=lambda ins, a: [(ins[0] - np.array([.1, .2, .3]).reshape(3, 1, 1))
                                  / np.array([.5, 1, 2]).reshape(3, 1, 1)]))
add(Case("_image_normalize", inputs(U((1, 3, 3))), {"mean": 0.5, "std": 2.0},
         expected=lambda ins, a: [(ins[0] - 0.5) / 2.0]))
add(Case("_contrib_quantize", inputs(U((3, 4), -1.5, 1.5), lambda rng: np.array([-1.0]),
                                     lambda rng: np.array([0.8])), {"out_type": "int8"},
         wrt=(), expected=lambda ins, a: _quantize_ref(ins[0], -1.0, 0.8, "int8")))
add(Case("_contrib_quantize", inputs(U((3, 4), 0, 1), lambda rng: np.array([0.0]),
                                     lambda rng: np.array([1.0])),
         wrt=(), expected=lambda ins, a: _quantize_ref(ins[0], 0.0, 1.0, "uint8")))
add(Case("_contrib_dequantize", inputs(lambda rng: rng.integers(-127, 128, (3, 4)).astype(np.int8),
                                       lambda rng: np.array([-0.5]), lambda rng: np.array([2.0])),
         wrt=(), expected=lambda ins, a: [ins[0] * (2.0 / 127)]))
add(Case("_contrib_dequantize", inputs(lambda rng: rng.integers(0, 256, (3, 4)).astype(np.uint8),
                                       lambda rng: np.array([-0.5]), lambda rng: np.array([2.0])),
         wrt=(), label="_contrib_dequantize-uint8",
         expected=lambda ins, a: [ins[0] * (2.5 / 255) - 0.5]))
add(Case("_contrib_interleaved_matmul_selfatt_qk", inputs(U((4, 2, 12))), {"heads": 2},
         expected=lambda ins, a: [np.einsum(
             "ibhd,jbhd->bhij", _interleaved(ins[0], 2, 3)[..., 0, :],
             _interleaved(ins[0], 2, 3)[..., 1, :]).reshape(4, 4, 4) / np.sqrt(2)]))
add(Case("_contrib_interleaved_matmul_selfatt_valatt", inputs(U((4, 2, 12)), U((4, 4, 4))),
         {"heads": 2}, wrt=(0, 1),
         expected=lambda ins, a: [np.einsum("bhij,jbhd->ibhd", ins[1].reshape(2, 2, 4, 4),
                                            _interleaved(ins[0], 2, 3)[..., 2, :]
                                            ).reshape(4, 2, 4)]))
add(Case("_contrib_interleaved_matmul_encdec_qk", inputs(U((3, 2, 4)), U((5, 2, 8))),
         {"heads": 2}, wrt=(0, 1),
         expected=lambda ins, a: [np.einsum(
             "ibhd,jbhd->bhij", ins[0].reshape(3, 2, 2, 2),
             _interleaved(ins[1], 2, 2)[..., 0, :]).reshape(4, 3, 5) / np.sqrt(2)]))
add(Case("_contrib_interleaved_matmul_encdec_valatt", inputs(U((5, 2, 8)), U((4, 3, 5))),
         {"heads": 2}, wrt=(0, 1),
         expected=lambda ins, a: [np.einsum("bhij,jbhd->ibhd", ins[1].reshape(2, 2, 3, 5),
                                            _interleaved(ins[0], 2, 2)[..., 1, :]
                                            ).reshape(3, 2, 4)]))
add(Case("UpSampling", inputs(U((1, 2, 3, 3)), U((2, 1, 4, 4))),
         {"scale": 2, "sample_type": "bilinear", "num_filter": 2, "num_args": 2},
         wrt=(0, 1), label="UpSampling-bilinear",
         expected=lambda ins, a: [_bilinear_upsampling_ref(ins[0], ins[1], 2)]))
# ---- roi: detection ops (ops/detection.py). tests/test_detection_ops.py compares each
# with plain loops written from MXNet's kernels; these cases have answers by hand: a box
# over a whole 4 x 4 map cut into 2 x 2 bins of 2 x 2 cells
def _rows(*rows):
    return lambda rng: np.array(rows, dtype=np.float64)


def _blocks(x):
    """(N, C, 4, 4) -> (N, C, 2, 2, 2, 2): bin (i, j) is [..., i, :, j, :]."""
    return x.reshape(x.shape[0], x.shape[1], 2, 2, 2, 2)


def _corners_mean(x):
    """The bilinear sample at each cell corner inside the map: the mean of 4 cells."""
    return (x[..., :-1, :-1] + x[..., 1:, :-1] + x[..., :-1, 1:] + x[..., 1:, 1:]) / 4


add(Case("ROIPooling", inputs(distinct((2, 2, 4, 4)), _rows([1, 0, 0, 3, 3])),
         {"pooled_size": (2, 2), "spatial_scale": 1.0},
         expected=lambda ins, a: [_blocks(ins[0][1:]).max(axis=(3, 5))]))
add(Case("_contrib_PSROIPooling", inputs(U((1, 8, 4, 4)), _rows([0, 0, 0, 3, 3])),
         {"spatial_scale": 1.0, "output_dim": 2, "pooled_size": 2},
         expected=lambda ins, a: [np.array([[[[
             _blocks(ins[0])[0, (d * 2 + i) * 2 + j, i, :, j, :].mean() for j in range(2)]
             for i in range(2)] for d in range(2)]])]))
# one sample per bin, at its centre: cells (1, 1), (1, 2), (2, 1), (2, 2)
add(Case("_contrib_ROIAlign", inputs(U((1, 2, 4, 4)), _rows([0, 0.5, 0.5, 2.5, 2.5])),
         {"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 1},
         expected=lambda ins, a: [ins[0][:, :, 1:3, 1:3]]))
# a 2 x 2 box centred on (2, 2): samples at the corners between cells 1..3; turned by
# 180 degrees, the same read backwards
add(Case("_contrib_RROIAlign", inputs(U((1, 2, 4, 4)), _rows([0, 2, 2, 2, 2, 0])),
         {"pooled_size": (2, 2), "spatial_scale": 1.0, "sampling_ratio": 1}, wrt=(),
         expected=lambda ins, a: [_corners_mean(ins[0])[:, :, 1:3, 1:3]]))
add(Case("_contrib_RROIAlign", inputs(U((1, 2, 4, 4)), _rows([0, 2, 2, 2, 2, 180])),
         {"pooled_size": (2, 2), "spatial_scale": 1.0, "sampling_ratio": 1}, wrt=(),
         label="_contrib_RROIAlign-turned",
         expected=lambda ins, a: [_corners_mean(ins[0])[:, :, 1:3, 1:3][:, :, ::-1, ::-1]]))
# proposals: zero gradients by definition (MXNet's), so none is checked here
PROPOSAL_CASE = {"feature_stride": 4, "scales": (2.0,), "ratios": (0.5, 1.0),
                 "rpn_pre_nms_top_n": 8, "rpn_post_nms_top_n": 5, "rpn_min_size": 2,
                 "threshold": 0.6, "output_score": True}
add(Case("_contrib_Proposal", inputs(U((1, 4, 3, 4), 0, 1), U((1, 8, 3, 4), -0.2, 0.2),
                                     _rows([10, 14, 1.0])),
         dict(PROPOSAL_CASE), wrt=()))
add(Case("_contrib_MultiProposal", inputs(U((2, 4, 3, 4), 0, 1), U((2, 8, 3, 4), -0.2, 0.2),
                                          _rows([10, 14, 1.0], [12, 9, 0.5])),
         dict(PROPOSAL_CASE), wrt=()))
# ---- rnnop: the fused RNN op's gradient (all four cells, two layers; p is 0 outside
# training, so these run the plain op). Gradients to data, parameters and states.
for mode, gates, cell in (("lstm", 4, True), ("gru", 3, False), ("rnn_tanh", 1, False),
                          ("rnn_relu", 1, False)):
    # 2 layers, both directions, hidden 2 on 2 features: layer 0 reads 2, layer 1 reads 4
    count = 2 * gates * 2 * (2 + 2 + 2) + 2 * gates * 2 * (4 + 2 + 2)
    add(Case("RNN", inputs(*[U((3, 2, 2), -1, 1), U((count,), -0.8, 0.8), U((4, 2, 2), -1, 1)]
                           + ([U((4, 2, 2), -1, 1)] if cell else [])),
             {"state_size": 2, "num_layers": 2, "mode": mode, "bidirectional": True,
              "state_outputs": True, "p": 0.5},
             wrt=(0, 1, 2, 3) if cell else (0, 1, 2), label=f"RNN-{mode}-gradient"))


def _same_pool_1d(x, kernel, stride, reduce):
    """MXNet's pooling_convention='same' (1-D): ceil(W / stride) windows, cut at the end;
    an average divides by the part of the window inside the data."""
    width = x.shape[2]
    return np.stack([reduce(x[:, :, i:min(i + kernel, width)], axis=2)
                     for i in range(0, width, stride)], axis=2)


# Pooling's pooling_convention='same' (MXNet: 1-D data, no pad; 10 -> ceil(10 / 3) = 4)
for kind, reduce in (("max", np.max), ("avg", np.mean), ("sum", np.sum)):
    add(Case("Pooling", inputs(distinct((2, 3, 10))),
             {"kernel": (4,), "stride": (3,), "pool_type": kind, "pooling_convention": "same"},
             label=f"Pooling-same-{kind}",
             expected=lambda ins, a, reduce=reduce: [_same_pool_1d(ins[0], 4, 3, reduce)]))


def _correlation_loops(ins, a):
    """MXNet's correlation.cc loops, written out: output (i, j), channel per displacement."""
    one, two = (np.pad(x, ((0, 0), (0, 0)) + ((a["pad_size"],) * 2,) * 2) for x in ins)
    k, md, s1, s2 = a["kernel_size"], a["max_displacement"], a["stride1"], a["stride2"]
    border = md + (k - 1) // 2
    height = -(-(one.shape[2] - 2 * border) // s1)
    width = -(-(one.shape[3] - 2 * border) // s1)
    radius = md // s2
    grid = 2 * radius + 1
    out = np.zeros((ins[0].shape[0], grid * grid, height, width))
    for i in range(height):
        for j in range(width):
            y1, x1 = i * s1 + md, j * s1 + md
            for c in range(grid * grid):
                y2, x2 = y1 + (c // grid - radius) * s2, x1 + (c % grid - radius) * s2
                p, q = one[:, :, y1:y1 + k, x1:x1 + k], two[:, :, y2:y2 + k, x2:x2 + k]
                value = p * q if a["is_multiply"] else np.abs(p - q)
                out[:, c, i, j] = value.sum(axis=(1, 2, 3)) / (k * k * ins[0].shape[1])
    return [out]


# Correlation (FlowNet): odd kernels, strides, padding, both comparisons
for label, attrs in (("mul", {"kernel_size": 3, "max_displacement": 1, "stride1": 2,
                              "stride2": 1, "pad_size": 2, "is_multiply": True}),
                     ("abs", {"kernel_size": 1, "max_displacement": 2, "stride1": 1,
                              "stride2": 2, "pad_size": 1, "is_multiply": False})):
    add(Case("Correlation", inputs(U((2, 2, 5, 4)), U((2, 2, 5, 4))), attrs, wrt=(0, 1),
             label=f"Correlation-{label}", expected=_correlation_loops))
# ---- npop2: mx.np's binary ufuncs (_npi_binary) and the traced promotion (_np_promote_with)
add(Case("_npi_binary", inputs(U((3, 4), kinks=(0,)), U((1, 4), kinks=(0,))),
         {"function": "copysign"}, wrt=(0, 1),
         expected=lambda ins, a: [np.copysign(ins[0], ins[1])]))
add(Case("_npi_binary", inputs(U((3, 4), 0.5, 2), U((4,), -2, -0.5)),
         {"function": "arctan2"}, wrt=(0, 1),
         expected=lambda ins, a: [np.arctan2(ins[0], ins[1])]))
add(Case("_npi_binary", inputs(U((2, 3)), U((2, 3), -1, 1)), {"function": "ldexp"},
         wrt=(0, 1), expected=lambda ins, a: [ins[0] * 2.0 ** ins[1]]))
add(Case("_npi_binary", inputs(U((3, 4), 0.2, 0.8), U((1, 4), 1.0, 1.5)),
         {"function": "fmod"}, wrt=(0, 1), expected=lambda ins, a: [np.fmod(ins[0], ins[1])]))
add(Case("_npi_binary", inputs(lambda rng: rng.integers(1, 20, (3, 4)),
                               lambda rng: rng.integers(1, 20, (4,))),
         {"function": "lcm"}, wrt=(), expected=lambda ins, a: [np.lcm(ins[0], ins[1])]))
add(Case("_np_promote_with", inputs(U((2, 3)), U((3,))),
         expected=lambda ins, a: [ins[0]]))
add(Case("_npi_norm", inputs(U((3, 4), kinks=(0,))), {"ord": "3", "axis": "1"},
         expected=lambda ins, a: [np.linalg.norm(ins[0], 3, 1)]))
add(Case("_npi_norm", inputs(U((2, 3, 4), kinks=(0,))), {"ord": "inf", "axis": "(0, 2)",
                                                    "keepdims": True},
         expected=lambda ins, a: [np.linalg.norm(ins[0], np.inf, (0, 2), True)]))
add(Case("_npi_norm", inputs(U((3, 4))), {"ord": "'nuc'"},
         expected=lambda ins, a: [np.linalg.norm(ins[0], "nuc")]))
add(Case("_npi_norm", inputs(U((2, 3, 4))), {"ord": "-2", "axis": "(2, 1)"},
         expected=lambda ins, a: [np.linalg.norm(ins[0], -2, (2, 1))]))
add(Case("_npi_tensorsolve", inputs(lambda rng: np.moveaxis(
             (np.eye(6) * 3 + rng.uniform(-0.5, 0.5, (6, 6))).reshape(6, 2, 3), 0, 2),
             U((6,))), {"axes": "(0, 1)"}, wrt=(0, 1),
         expected=lambda ins, a: [np.linalg.tensorsolve(ins[0], ins[1], axes=(0, 1))]))
# ---- infer: Custom (an op written in Python, mx.operator.CustomOp) and its backward
def _register_case_custom_op():
    """A CustomOp computing scale * a * b, with `scale` a constructor argument (a string,
    as every attribute of a Custom op beyond op_type)."""
    from straightdope import operator

    class ScaledMult(operator.CustomOp):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        # in NumPy: an nd op called here would count as one the compiled graph ran on
        # the host (test_compiler_ops), though it is the user's code that calls it
        def forward(self, is_train, req, in_data, out_data, aux):
            a, b = (x.asnumpy() for x in in_data)
            self.assign(out_data[0], req[0], a * b * self.scale)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            a, b = (x.asnumpy() for x in in_data)
            g = out_grad[0].asnumpy() * self.scale
            self.assign(in_grad[0], req[0], g * b)
            self.assign(in_grad[1], req[1], g * a)

    @operator.register("_case_scaled_mult")
    class ScaledMultProp(operator.CustomOpProp):
        def __init__(self, scale="1"):
            super().__init__()
            self.scale = float(scale)

        def list_arguments(self):
            return ["a", "b"]

        def create_operator(self, ctx, shapes, dtypes):
            return ScaledMult(self.scale)


_register_case_custom_op()
add(Case("Custom", inputs(U((2, 3)), U((2, 3))), {"op_type": "_case_scaled_mult", "scale": "2"},
         wrt=(0, 1), expected=lambda ins, a: [2 * ins[0] * ins[1]]))
add(Case("_backward_Custom", inputs(U((2, 3)), U((2, 3)), U((2, 3)), U((2, 3))),
         {"op_type": "_case_scaled_mult", "scale": "3"}, wrt=(),
         expected=lambda ins, a: [3 * ins[0] * ins[2], 3 * ins[0] * ins[1]]))
# range_max=1: every draw is class 0, found at the first try (distribution: test_random_ops.py)
add(Case("_sample_unique_zipfian", lambda rng: [], {"range_max": 1, "shape": (2, 1)}, wrt=(),
         expected=lambda ins, a: [np.zeros((2, 1), np.int64), np.ones(2, np.int64)]))
# N-d dot as MXNet's: lhs (.., K) . rhs (K, ..); transpose_a moves lhs's first axis to the
# end, transpose_b rhs's last axis to the front (test_dot's shapes)
for _ta, _tb in ((False, False), (True, False), (False, True), (True, True)):
    add(Case("dot", inputs(U((4, 2, 3) if _ta else (2, 3, 4)), U((5, 6, 4) if _tb else (4, 5, 6))),
             {"transpose_a": _ta, "transpose_b": _tb}, wrt=(0, 1), label=f"dot-nd-{_ta}-{_tb}",
             expected=lambda ins, a: [np.tensordot(
                 np.moveaxis(ins[0], 0, -1) if a["transpose_a"] else ins[0],
                 np.moveaxis(ins[1], -1, 0) if a["transpose_b"] else ins[1], axes=1)]))
add(Case("_dot_matrix", inputs(U((2, 3, 5, 6)), U((2, 3, 4)), U((4, 5, 6))), {"role": "out"},
         wrt=(0,), expected=lambda ins, a: [ins[0].reshape(6, 30)]))
add(Case("_dot_matrix", inputs(U((4, 2, 3)), U((4, 2, 3)), U((5, 4))),
         {"role": "lhs", "transpose_a": True, "transpose_b": True}, wrt=(0,),
         expected=lambda ins, a: [ins[0].reshape(4, 6)]))

# ---- symbol operators: MXNet 1.x's elemwise ops that a Symbol's `a OP b` calls
# (one shape for both inputs; NDArray's operators broadcast)
for name, f in {"_power": np.power, "_mod": np.mod, "_maximum": np.maximum,
                "_minimum": np.minimum}.items():
    if name == "_mod":       # away from the jumps (where a / b crosses an integer)
        make_a, make_b = U((3, 4), 2.2, 2.6), U((3, 4), 1.0, 1.05)
    elif name == "_power":
        make_a, make_b = U((3, 4), 0.5, 2.0), U((3, 4), 0.5, 2.0)
    else:
        make_a, make_b = distinct((3, 4)), (lambda rng: distinct((3, 4))(rng) + 0.05)
    add(Case(name, inputs(make_a, make_b), wrt=(0, 1),
             expected=lambda ins, a, f=f: [f(ins[0], ins[1])]))
for name, f in COMPARE.items():
    add(Case(f"_{name}", inputs(lambda r: np.round(r.uniform(-2, 2, (3, 4)), 1),
                                lambda r: np.round(r.uniform(-2, 2, (3, 4)), 1)), wrt=(),
             expected=lambda ins, a, f=f: [f(ins[0], ins[1]).astype(np.float64)]))
