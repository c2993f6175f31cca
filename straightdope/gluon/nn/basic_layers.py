"""Containers (Sequential, HybridSequential, Concurrent) and the basic layers:
Dense, Dropout, BatchNorm, LayerNorm, Embedding, Flatten, Lambda, HybridLambda.

Each layer creates its Parameters with `self.params.get('weight', ...)`, so a
Dense named `dense0_` owns `dense0_weight` and `dense0_bias`, and its
`hybrid_forward` is written once with `F`: it runs on NDArrays (F = nd) and
traces into a graph (F = sym) alike.
"""
import warnings

import numpy as np

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...ndarray.ndarray import run
from ...ops import OpError, get_op
from ..block import Block
from ..hybrid_block import HybridBlock
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "BatchNorm", "LayerNorm",
           "InstanceNorm", "GroupNorm",
           "Embedding", "Flatten", "Lambda", "HybridLambda", "Identity", "Concurrent",
           "HybridConcurrent"]


def _chain(blocks, x, args):
    """Feed each block the previous one's output (a tuple output feeds several inputs)."""
    for block in blocks:
        x = block(x, *args) if args else block(x)
        args = ()
        if type(x) is not NDArray and isinstance(x, (tuple, list)) and len(x) > 1:
            x, args = x[0], tuple(x[1:])
    return (x,) + args if args else x


class Sequential(Block):
    """Stacks blocks: the output of each is the input of the next.

        net = nn.Sequential()
        net.add(nn.Dense(5, activation='relu'), nn.Dense(2))
    """
    _summary_container = True       # summary() lists the layers inside, not the stack

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._warned_all_hybrid = False

    def add(self, *blocks):
        """Append blocks (in order)."""
        for block in blocks:
            self.register_child(block)
        return self

    def forward(self, x, *args):
        return _chain(self._children.values(), x, args)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the children; say so (once) when HybridSequential would do better."""
        if active and not self._warned_all_hybrid and self._children and all(
                isinstance(c, HybridBlock) for c in self._children.values()):
            self._warned_all_hybrid = True
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are "
                          f"HybridBlocks. Consider using HybridSequential for the best "
                          f"performance.", UserWarning, stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Sequential for HybridBlocks: hybridize() traces the whole stack into one graph."""
    _summary_container = True

    def add(self, *blocks):
        for block in blocks:
            self.register_child(block)
        return self

    def forward(self, x, *args):
        return _chain(self._children.values(), x, args)

    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__


_FC, _ACTIVATION = get_op("FullyConnected"), get_op("Activation")


class Dense(HybridBlock):
    """A fully connected layer: `activation(dot(x, weight.T) + bias)`.

    units: output size. in_units: input size; 0 (the default) means "learn it from the
    first input" (deferred initialisation). flatten=True treats every axis after the
    first as features; flatten=False applies the layer to the last axis only.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        # units=0 is accepted here, as MXNet accepts it (a list of Dense(i * 10) layers
        # builds), and refused when the layer is used (_check_units)
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units < 0:
            raise ValueError(f"Dense(units={units!r}): units, the number of outputs, must be "
                             f"a positive integer")
        self._units, self._in_units, self._flatten = units, in_units, flatten
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), dtype=dtype,
                                        init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None
        # For HybridBlock._call's imperative shortcut: the op's attributes, parsed once. A
        # subclass with its own forward or hybrid_forward, or attributes the op refuses
        # (refused at the first call, as before), take the general path.
        try:
            self._fc_attrs = _FC.cached_attrs({"num_hidden": units, "no_bias": not use_bias,
                                               "flatten": flatten})
        except OpError:
            self._array_shortcut = None
        if type(self).hybrid_forward is not Dense.hybrid_forward or \
                type(self).forward is not HybridBlock.forward:
            self._array_shortcut = None

    def _array_shortcut(self, x, *args):
        """HybridBlock._call's imperative shortcut: the registry ops hybrid_forward calls
        with F=nd, with the attributes parsed once (above) instead of bound from keywords
        at every call. None (then forward runs) for extra inputs or parameters not yet
        initialised (deferred shapes)."""
        weight = self.weight._data
        if args or weight is None:
            return None
        if self.bias is None:
            out = run(_FC, [x, weight], self._fc_attrs)
        else:
            bias = self.bias._data
            if bias is None:
                return None
            out = run(_FC, [x, weight, bias], self._fc_attrs)
        act = self.act
        if act is None:
            return out
        if act._forward_hooks or act._forward_pre_hooks:
            return act(out)
        return run(_ACTIVATION, [out], act._attrs)

    def _check_units(self):
        if not self._units:
            raise ValueError(f"{self._describe()} was built with units=0: it has no outputs; give "
                             f"units, the number of outputs, a positive integer")

    def hybrid_forward(self, F, x, weight, bias=None):
        self._check_units()
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None,
                               num_hidden=self._units, flatten=self._flatten, name="fwd")
        if self.act is None:
            return out
        if F is ndarray and not (self.act._forward_hooks or self.act._forward_pre_hooks):
            return F.Activation(out, act_type=self.act._act_type, name="fwd")
        return self.act(out)

    def infer_shape(self, x, *args):
        self._check_units()
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def __repr__(self):
        out_units, in_units = self.weight.shape
        act = self.act if self.act is not None else "linear"
        return f"{type(self).__name__}({in_units} -> {out_units}, {act})"


class Dropout(HybridBlock):
    """While training, zero each element with probability `rate` and scale the rest by
    1/(1-rate); at prediction time it is the identity. `axes`: share the mask along
    these axes."""

    def __init__(self, rate, axes=(), **kwargs):
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
        super().__init__(**kwargs)
        self._rate, self._axes = rate, tuple(axes)

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.identity(x, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


class BatchNorm(HybridBlock):
    """Normalise each channel (axis 1) with the batch's mean and variance while training
    and with running averages at prediction time, then scale (gamma) and shift (beta).

    running_mean/running_var are auxiliary states: updated by the forward pass
    (momentum), never by gradients (grad_req='null').
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        shape = (in_channels,)
        with self.name_scope():
            self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                         shape=shape, init=gamma_initializer,
                                         allow_deferred_init=True, differentiable=scale)
            self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                        shape=shape, init=beta_initializer,
                                        allow_deferred_init=True, differentiable=center)
            self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                                init=running_mean_initializer,
                                                allow_deferred_init=True, differentiable=False)
            self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                               init=running_variance_initializer,
                                               allow_deferred_init=True, differentiable=False)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                           **self._kwargs)

    def infer_shape(self, x, *args):
        channels = x.shape[self._axis]
        for param in (self.gamma, self.beta, self.running_mean, self.running_var):
            param.shape = (channels,)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        channels = self.gamma.shape[0]
        return (f"{type(self).__name__}({content}, "
                f"in_channels={channels if channels > 0 else None})")


class LayerNorm(HybridBlock):
    """Normalise each sample over `axis` (the last by default), then scale and shift."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "center": center, "scale": scale}
        self._axis, self._epsilon = axis, epsilon
        with self.name_scope():
            self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                         shape=(in_channels,), init=gamma_initializer,
                                         allow_deferred_init=True)
            self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                        shape=(in_channels,), init=beta_initializer,
                                        allow_deferred_init=True)

    def hybrid_forward(self, F, x, gamma, beta):
        return F.LayerNorm(x, gamma, beta, axis=self._axis, eps=self._epsilon, name="fwd")

    def infer_shape(self, x, *args):
        channels = x.shape[self._axis]
        self.gamma.shape = (channels,)
        self.beta.shape = (channels,)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        channels = self.gamma.shape[0]
        return (f"{type(self).__name__}({content}, "
                f"in_channels={channels if channels > 0 else None})")


def _normalize_last_axis(F, x, eps):
    """(x - mean) / sqrt(var + eps) along the last axis of a 3-D array: a LayerNorm with
    gamma 1 and beta 0. Its gradient is the closed formula (as MXNet's GroupNorm and
    InstanceNorm kernels use), exactly 0 for a constant input, where the chain rule through
    mean and var leaves rounding noise of 1e-5."""
    unit = F.ones_like(F.sum(x, axis=(0, 1)))       # (size of the last axis,)
    return F.LayerNorm(x, unit, F.zeros_like(unit), axis=-1, eps=eps)


class InstanceNorm(HybridBlock):
    """Normalise each channel of each sample over its own positions (an image's height and
    width), then scale by ``gamma`` and shift by ``beta`` per channel (style transfer,
    small batches: nothing depends on the other samples in the batch).

    Input (N, C, ...), parameters ``gamma`` and ``beta`` of shape (C,).
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        if axis != 1:
            raise ValueError(f"InstanceNorm: only axis=1 (channels second, NCHW) is "
                             f"supported, got axis={axis}; transpose the input first")
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._epsilon = epsilon
        with self.name_scope():
            self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                         shape=(in_channels,), init=gamma_initializer,
                                         allow_deferred_init=True)
            self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                        shape=(in_channels,), init=beta_initializer,
                                        allow_deferred_init=True)

    def hybrid_forward(self, F, x, gamma, beta):
        flat = F.reshape(x, shape=(0, 0, -1))                  # (N, C, positions)
        out = _normalize_last_axis(F, flat, self._epsilon)
        out = F.broadcast_add(F.broadcast_mul(out, F.reshape(gamma, shape=(1, -1, 1))),
                              F.reshape(beta, shape=(1, -1, 1)))
        return F.reshape_like(out, x)

    def infer_shape(self, x, *args):
        self.gamma.shape = self.beta.shape = (x.shape[1],)

    def __repr__(self):
        channels = self.gamma.shape[0]
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return (f"{type(self).__name__}({content}, "
                f"in_channels={channels if channels > 0 else None})")


class GroupNorm(HybridBlock):
    """Split the channels into ``num_groups`` groups and normalise each group of each
    sample over its channels and positions; then scale and shift per group (MXNet 1.x:
    ``gamma`` and ``beta`` have shape (num_groups,)). ``num_groups=1`` normalises a whole
    sample, like LayerNorm over (C, H, W).
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_groups, int) or num_groups < 1:
            raise ValueError(f"GroupNorm: num_groups must be a positive int, got {num_groups!r}")
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups, self._epsilon = num_groups, epsilon
        with self.name_scope():
            self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                         shape=(num_groups,), init=gamma_initializer)
            self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                        shape=(num_groups,), init=beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        shape = x.shape if isinstance(x, ndarray.NDArray) else None   # None while tracing
        if shape is not None and shape[1] % self._num_groups:
            raise ValueError(f"GroupNorm '{self.name}': {shape[1]} channels do not split into "
                             f"num_groups={self._num_groups}")
        groups = F.reshape(x, shape=(0, self._num_groups, -1))   # (N, G, C/G * positions)
        out = _normalize_last_axis(F, groups, self._epsilon)
        out = F.broadcast_add(F.broadcast_mul(out, F.reshape(gamma, shape=(1, -1, 1))),
                              F.reshape(beta, shape=(1, -1, 1)))
        return F.reshape_like(out, x)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({content})"


class Embedding(HybridBlock):
    """Turn integer indices into dense vectors: row i of a (input_dim, output_dim) weight.

    sparse_grad is accepted for MXNet compatibility; the gradient is always dense here.
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim,
                        "dtype": np.dtype(dtype).name, "sparse_grad": sparse_grad}
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return (f"{type(self).__name__}({self._kwargs['input_dim']} -> "
                f"{self._kwargs['output_dim']}, {self._kwargs['dtype']})")


class Flatten(HybridBlock):
    """(batch, d1, d2, ...) -> (batch, d1 * d2 * ...)."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


class Identity(HybridBlock):
    """Returns its input (a placeholder, e.g. a branch that does nothing)."""

    def hybrid_forward(self, F, x):
        return F.identity(x)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _lookup_function(function, namespaces, kind):
    for space in namespaces:
        if not hasattr(space, function):
            raise ValueError(f"{kind}: there is no operator {function!r} in "
                             f"{space.__name__.split('.')[-1]}; use a function instead")
    return function


class Lambda(Block):
    """Wrap a function (or the name of an nd operator) as a Block: `Lambda('tanh')`,
    `Lambda(lambda x: x * 2)`."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _lookup_function(function, [ndarray], "Lambda")
            self._func_impl = getattr(ndarray, function)
            self._func_name = function
        elif callable(function):
            self._func_impl = function
            self._func_name = getattr(function, "__name__", type(function).__name__)
        else:
            raise ValueError(f"Lambda: expected a function or an operator name, got "
                             f"{function!r} of type {type(function).__name__}")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{type(self).__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """Wrap `function(F, x, *args)` (or an operator name available in both nd and sym) as
    a HybridBlock: `HybridLambda('tanh')`, `HybridLambda(lambda F, x: F.relu(x) * 2)`."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _lookup_function(function, [ndarray, symbol], "HybridLambda")
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", type(function).__name__)
        else:
            raise ValueError(f"HybridLambda: expected a function(F, x, ...) or an operator "
                             f"name, got {function!r} of type {type(function).__name__}")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{type(self).__name__}({self._func_name})"


class Concurrent(Sequential):
    """Feed the same input to every child and concatenate their outputs along `axis`
    (the branches of an Inception block)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return ndarray.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Concurrent for HybridBlocks (traced into one graph by hybridize())."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)

    forward = HybridBlock.forward
