"""`straightdope.nd`: imperative arrays. Every op of the registry is a function here.

    >>> import straightdope as mx
    >>> x = mx.nd.ones((2, 3))
    >>> mx.nd.relu(x - 2)          # runs at once, like NumPy

The functions below the creation helpers are *generated* from the op registry
(`_make_function`), exactly as `straightdope.sym`'s are: one op, two worlds.
"""
from __future__ import annotations

import numpy as _np

from .. import autograd as _autograd
from ..context import Context, check_context, cpu, current_context  # noqa: F401
from ..ops import OPS as _OPS, OpError
from ..ops.registry import bind_call as _bind_call
from ..serialization import load_arrays as _load_arrays, save_arrays as _save_arrays
from .ndarray import DEFAULT_DTYPE, NDArray, invoke
from . import random  # noqa: F401


def _dtype(dtype, default=DEFAULT_DTYPE):
    return _np.dtype(default if dtype is None else dtype)


def array(source_array, ctx=None, dtype=None, device=None):
    """An NDArray from a list, NumPy array or NDArray (float32 unless dtype says otherwise)."""
    check_context(ctx or device)
    if isinstance(source_array, NDArray):
        data = source_array._data
        return NDArray(data.astype(_dtype(dtype, data.dtype)), ctx)
    data = _np.asarray(source_array)
    if data.dtype == object:
        raise TypeError(f"cannot make an NDArray from {type(source_array).__name__} "
                        f"holding non-numbers")
    return NDArray(_np.array(data, dtype=_dtype(dtype)), ctx)


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def zeros(shape, ctx=None, dtype=None, **kwargs):
    check_context(ctx)
    return NDArray(_np.zeros(_shape(shape), _dtype(dtype)), ctx)


def ones(shape, ctx=None, dtype=None, **kwargs):
    check_context(ctx)
    return NDArray(_np.ones(_shape(shape), _dtype(dtype)), ctx)


def full(shape, val, ctx=None, dtype=None, **kwargs):
    check_context(ctx)
    return NDArray(_np.full(_shape(shape), val, _dtype(dtype)), ctx)


def empty(shape, ctx=None, dtype=None):
    return zeros(shape, ctx, dtype)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs):
    data = _np.arange(start, stop, step) if stop is not None else _np.arange(start)
    return NDArray(_np.repeat(data, repeat).astype(_dtype(dtype)), ctx)


def eye(N, M=0, k=0, ctx=None, dtype=None):
    return NDArray(_np.eye(N, M or None, k, dtype=_dtype(dtype)), ctx)


def stack(*arrays, axis=0, **kwargs):
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = arrays[0]
    return invoke("concat", [a.expand_dims(axis) for a in arrays], {"dim": axis})


def waitall():
    """Nothing to wait for: every straightdope op has finished when it returns."""


def save(fname, data):
    """Save an NDArray, a list or a dict of them (NumPy .npz, no pickle, atomic)."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        arrays = {f"dict:{k}": v.asnumpy() for k, v in data.items()}
    else:
        arrays = {f"list:{i:06d}": v.asnumpy() for i, v in enumerate(data)}
    _save_arrays(fname, arrays)


def load(fname):
    """Load what `save` wrote: a list or a dict of NDArrays. An MXNet file (its nd.save,
    save_parameters or export) loads too, with its names as they are."""
    from .. import mxnet_format
    if mxnet_format.is_mxnet_file(fname):
        arrays, names = mxnet_format.load(fname)
        arrays = [NDArray(a) for a in arrays]
        return dict(zip(names, arrays)) if names else arrays
    arrays = _load_arrays(fname)
    if arrays and all(k.startswith("list:") for k in arrays):
        return [NDArray(arrays[k]) for k in sorted(arrays)]
    return {k.split(":", 1)[-1]: NDArray(v) for k, v in arrays.items()}


def _make_function(op):
    """An `nd.<op>` function: bind the call, run the op now.

    Binding a call is slow Python, so each call spelling (the keyword arguments) is
    bound once and remembered: a training loop calls the same ops the same way."""
    fast: dict = {}            # attribute keywords -> (attrs, array argument names)
    inputs_by_name = op._input_set

    def function(*args, **kwargs):
        try:
            if not kwargs or inputs_by_name.isdisjoint(kwargs):
                # arrays all positional, keywords are attributes: nd.relu(x),
                # nd.Activation(x, act_type='relu')
                attrs, names = fast[tuple(kwargs.items())]
                arrays = args
            else:
                # some arrays by keyword: nd.FullyConnected(x, w, bias=b, num_hidden=4)
                key = tuple([kv for kv in kwargs.items() if kv[0] not in inputs_by_name])
                attrs, names = fast[key]
                arrays = args + tuple([kwargs.get(n) for n in names[len(args):]])
                if len(kwargs) != len(key) + len(names) - len(args):
                    arrays = ()             # an array keyword twice, or unknown: bind slowly
            if len(arrays) == len(names):
                for x in arrays:
                    if type(x) is not NDArray:
                        break
                else:
                    return invoke(op, arrays, attrs, parsed=True)
        except (KeyError, TypeError):
            pass
        out = kwargs.get("out")
        inputs, attrs, _ = _bind_call(op, args, kwargs, lambda x: isinstance(x, NDArray))
        names = op.input_names(attrs, len(inputs))
        for name, x in zip(names, inputs):
            if x is None:
                raise OpError(f"nd.{op.name}: the array argument '{name}' is missing")
        if out is None and not op.variadic:
            try:
                fast[tuple(kv for kv in kwargs.items() if kv[0] not in inputs_by_name)] = (
                    attrs, tuple(names))
            except TypeError:       # unhashable keyword value: no fast path for it
                pass
        result = invoke(op, inputs, attrs, parsed=True)
        if out is not None:
            out._data[...] = result._data
            return out
        return result
    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = op.doc
    return function


def _scalar_or_array(name):
    from .ndarray import _binary

    def function(lhs, rhs):
        if isinstance(lhs, NDArray):
            return _binary(name, lhs, rhs)
        if isinstance(rhs, NDArray):
            return _binary(name, rhs, lhs, reflected=True)
        return array(getattr(_np, name)(lhs, rhs))
    function.__name__ = name
    return function


for _name, _op in _OPS.items():
    globals()[_name] = _make_function(_op)
for _name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal",
              "not_equal", "greater", "greater_equal", "lesser", "lesser_equal"):
    _key = {"subtract": "sub", "multiply": "mul", "divide": "truediv", "power": "pow",
            "equal": "eq", "not_equal": "ne", "greater": "gt", "greater_equal": "ge",
            "lesser": "lt", "lesser_equal": "le"}.get(_name, _name)
    globals()[_name] = _scalar_or_array(_key)


def zeros_like(data, **kwargs):
    return invoke("zeros_like", [data], {})


def ones_like(data, **kwargs):
    return invoke("ones_like", [data], {})


def random_uniform(low=0.0, high=1.0, shape=(1,), ctx=None, dtype=None, **kwargs):
    return random.uniform(low, high, shape, ctx=ctx, dtype=dtype)


def random_normal(loc=0.0, scale=1.0, shape=(1,), ctx=None, dtype=None, **kwargs):
    return random.normal(loc, scale, shape, ctx=ctx, dtype=dtype)


# NDArray methods that are just ops, e.g. x.sum(axis=1), x.relu(), x.exp()
for _name in ("sum", "mean", "max", "min", "prod", "exp", "log", "sqrt", "square", "abs",
              "relu", "sigmoid", "tanh", "softmax", "log_softmax", "clip", "sign", "pick",
              "one_hot", "split", "slice_axis", "dot", "sin", "cos", "argmax", "argmin"):
    def _method(self, *args, _f=globals()[_name], **kwargs):
        return _f(self, *args, **kwargs)
    _method.__name__ = _name
    setattr(NDArray, _name, _method)


def _norm(self, ord=2, axis=None, keepdims=False):
    return sqrt(sum(square(self), axis=axis, keepdims=keepdims))  # noqa: F821


NDArray.norm = _norm
NDArray.square = lambda self: square(self)  # noqa: F821
from . import contrib  # noqa: E402,F401  (foreach, while_loop, cond)
