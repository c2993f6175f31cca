"""Initializers: how a Parameter gets its first values.

As in MXNet, an initializer looks at the parameter's name: `..._weight` gets
the initializer's own rule, `..._bias` and `..._beta` zeros, `..._gamma` ones,
running means zeros and running variances ones (unless it is told otherwise).
"""
from __future__ import annotations

import json

import numpy as np


class InitDesc(str):
    """A parameter name that carries extra attributes (e.g. a per-parameter init)."""

    def __new__(cls, name, attrs=None, global_init=None):
        obj = super().__new__(cls, name)
        obj.attrs = attrs or {}
        obj.global_init = global_init
        return obj


_REGISTRY: dict[str, type] = {}


def register(cls):
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


def create(init):
    """An Initializer from an instance, a class name ('xavier') or None (the default)."""
    if init is None:
        return Uniform()
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        name = init.lower()
        aliases = {"zeros": "zero", "ones": "one"}
        name = aliases.get(name, name)
        if name not in _REGISTRY:
            raise ValueError(f"unknown initializer {init!r}; known: {sorted(_REGISTRY)}")
        return _REGISTRY[name]()
    raise TypeError(f"an initializer must be an Initializer or a name, got {init!r}")


def _plain(value):
    """An NDArray or NumPy array as nested lists (JSON can hold those), else unchanged."""
    if hasattr(value, 'asnumpy'):
        value = value.asnumpy()
    return value.tolist() if isinstance(value, np.ndarray) else value


class Initializer:
    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def dumps(self):
        """JSON string used in a symbol variable's __init__ attribute. Array arguments
        (Constant(nd.ones(3))) are written as nested lists."""
        # Kept converted (as MXNet does): _kwargs then always holds what dumps() wrote.
        self._kwargs = {k: _plain(v) for k, v in self._kwargs.items()}
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __eq__(self, other):
        """Two initializers are equal when they are of one class with equal arguments
        (so that two layers built alike compare equal, as in MXNet)."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self.dumps() == other.dumps()

    __hash__ = None        # equal by value, and mutable: not usable as a dict key

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"

    def __call__(self, desc, arr):
        name = str(desc)
        if name.endswith(("bias", "beta", "running_mean", "moving_mean")):
            self._init_zero(name, arr)
        elif name.endswith(("gamma", "running_var", "moving_var")):
            self._init_one(name, arr)
        else:
            self._init_weight(name, arr)

    def _fill(self, arr, values):
        arr._data[...] = np.asarray(values, dtype=arr._data.dtype).reshape(arr.shape)

    def _init_zero(self, name, arr):
        self._fill(arr, np.zeros(arr.shape))

    def _init_one(self, name, arr):
        self._fill(arr, np.ones(arr.shape))

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} must define _init_weight")


@register
class Zero(Initializer):
    def _init_weight(self, name, arr):
        self._init_zero(name, arr)

    def __call__(self, desc, arr):
        self._init_zero(str(desc), arr)


@register
class One(Initializer):
    def _init_weight(self, name, arr):
        self._init_one(name, arr)

    def __call__(self, desc, arr):
        self._init_one(str(desc), arr)


@register
class Constant(Initializer):
    def __init__(self, value=0.0):
        super().__init__(value=value)
        self.value = value

    def __call__(self, desc, arr):
        self._init_weight(str(desc), arr)

    def _init_weight(self, name, arr):
        # Also the rule when a Parameter names this initializer as its own (init=...).
        self._fill(arr, np.broadcast_to(np.asarray(self.value), arr.shape))


@register
class LSTMBias(Initializer):
    """An LSTM's bias: zeros except the forget gate's (the second of the four packed
    gates), set to `forget_bias`, so the cell starts out remembering (Jozefowicz et al.,
    2015 recommend 1.0). Give it as the bias's own initializer:
    LSTMCell(..., i2h_bias_initializer=init.LSTMBias(1.0))."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def __call__(self, desc, arr):
        self._init_weight(str(desc), arr)

    def _init_weight(self, name, arr):
        if arr.shape[0] % 4:
            raise ValueError(f"LSTMBias: {name} has {arr.shape[0]} rows, not 4 packed gates "
                             f"(an LSTM bias has 4 * hidden_size)")
        values = np.zeros(arr.shape)
        hidden = arr.shape[0] // 4
        values[hidden:2 * hidden] = self.forget_bias
        self._fill(arr, values)


@register
class Uniform(Initializer):
    """Uniform in [-scale, scale]; Gluon's default with scale=0.07."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        self._fill(arr, np.random.uniform(-self.scale, self.scale, arr.shape))


@register
class Normal(Initializer):
    """Normal with mean 0 and standard deviation sigma."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        self._fill(arr, np.random.normal(0, self.sigma, arr.shape))


def _fans(shape):
    if len(shape) < 2:
        raise ValueError(f"Xavier/MSRA need a weight with at least 2 dimensions, got {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


@register
class Xavier(Initializer):
    """Glorot: keep the variance of activations about the same from layer to layer."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian") or factor_type not in ("avg", "in", "out"):
            raise ValueError("Xavier: rnd_type is 'uniform' or 'gaussian', factor_type is "
                             "'avg', 'in' or 'out'")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, magnitude

    def _init_weight(self, name, arr):
        fan_in, fan_out = _fans(arr.shape)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            self._fill(arr, np.random.uniform(-scale, scale, arr.shape))
        else:
            self._fill(arr, np.random.normal(0, scale, arr.shape))


@register
class Bilinear(Initializer):
    """Weights of a bilinear upsampling filter, for a Conv2DTranspose that starts as
    bilinear interpolation (fully convolutional segmentation nets)."""

    def _init_weight(self, name, arr):
        height, width = arr.shape[-2:]
        f = np.ceil(width / 2.0)
        center = (2 * f - 1 - f % 2) / (2.0 * f)
        rows = 1 - np.abs(np.arange(height) / f - center)
        cols = 1 - np.abs(np.arange(width) / f - center)
        self._fill(arr, np.broadcast_to(np.outer(rows, cols), arr.shape))


@register
class MSRAPrelu(Xavier):
    """He initialisation (for ReLU networks)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
