"""`sym.np`: what `F.np` is inside `hybrid_forward(self, F, x)` while a block is traced.

Functions of arrays are `straightdope.np`'s own: they look at their arguments, so
given Symbols they add graph nodes. Functions that make an array from numbers alone
(`zeros`, `ones`, `full`, `empty`, `eye`, `identity`, the windows, `indices`,
`linspace`, `logspace`, `arange`, np.random's samplers) have no argument to look at;
here they add a node, so that `x + F.np.zeros(shape)` traces just as it computes with
`F` being `nd`.
Like `np`'s arrays, these Symbols are np ones (`NpSymbol`, MXNet's `_Symbol`).
(In `numpy/`, above the Symbol, as it reuses mx.np; `sym.np` names it.)
"""
import numpy as _onp

from .. import numpy as _np
from . import random as _np_random
from .. import symbol as _sym
from ..symbol.symbol import NpSymbol as _Symbol  # noqa: F401  (MXNet's name)


def _dtype_name(dtype):
    return "float32" if dtype is None else _onp.dtype(dtype).name   # mx.np's default


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    return _sym.zeros(shape, dtype=_dtype_name(dtype)).as_np_ndarray()


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    return _sym.ones(shape, dtype=_dtype_name(dtype)).as_np_ndarray()


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None):
    if isinstance(fill_value, _sym.Symbol):          # np.full's: broadcast the array
        return _np.full(shape, fill_value, dtype=dtype)
    return _sym.full(shape, fill_value, dtype=_dtype_name(dtype)).as_np_ndarray()


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None,
             device=None):
    if axis != 0:
        raise NotImplementedError("sym.np.logspace: axis must be 0")
    name = _dtype_name(dtype)
    return _make("logspace", (float(start), float(stop), int(num), bool(endpoint),
                              float(base), name), name)


empty = zeros       # the values of np.empty are unspecified; zeros are a fine choice


def _make(function, args, dtype):
    return _sym._np_make(function=function, args=repr(args), dtype=dtype).as_np_ndarray()


def eye(N, M=None, k=0, dtype=None, ctx=None, device=None):
    _np.eye(N, M, k)                 # its checks (sizes of at least 0)
    return _make("eye", (int(N), None if M is None else int(M), int(k)), _dtype_name(dtype))


def hanning(M, dtype=None, ctx=None, device=None):
    return _make("hanning", (int(M),), _dtype_name(dtype))


def hamming(M, dtype=None, ctx=None, device=None):
    return _make("hamming", (int(M),), _dtype_name(dtype))


def blackman(M, dtype=None, ctx=None, device=None):
    return _make("blackman", (int(M),), _dtype_name(dtype))


def indices(dimensions, dtype=None, ctx=None, device=None):
    return _make("indices", (tuple(int(d) for d in dimensions),),
                 "int64" if dtype is None else _onp.dtype(dtype).name)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, ctx=None,
             device=None):
    if retstep:
        raise NotImplementedError("sym.np.linspace: retstep=True is not supported while "
                                  "tracing; compute the step as (stop - start) / (num - 1)")
    _np.linspace(start, stop, num)          # its checks (num an integer of at least 0)
    name = _dtype_name(dtype)
    return _make("linspace", (float(start), float(stop), int(num), bool(endpoint), name), name)


def arange(start, stop=None, step=None, dtype=None, ctx=None, device=None):
    name = _dtype_name(dtype)
    return _make("arange", (start, stop, 1 if step is None else step, name), name)


def identity(n, dtype=None, ctx=None, device=None):
    return eye(n, dtype=dtype)


class _Random:
    """sym.np.random: np.random's samplers, adding a graph node even when every
    parameter is a number (`F.np.random.uniform(size=3)` in hybrid_forward)."""

    def __getattr__(self, name):
        function = getattr(_np.random, name)

        def traced(*args, **kwargs):
            token = _np_random._TRACING.set(True)
            try:
                return function(*args, **kwargs)
            finally:
                _np_random._TRACING.reset(token)
        traced.__name__, traced.__doc__ = name, function.__doc__
        return traced


random = _Random()


def __getattr__(name):
    return getattr(_np, name)
