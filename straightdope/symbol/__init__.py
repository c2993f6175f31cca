"""`straightdope.sym`: build graphs. Every op of the registry is a function here.

    >>> import straightdope as mx
    >>> x = mx.sym.var('data')
    >>> y = mx.sym.relu(x - 2)      # nothing is computed: y is a node of a graph
    >>> y.list_arguments()
    ['data']

The functions are *generated* from the op registry (`_make_function`), exactly
as `straightdope.nd`'s are. That is why `F.relu` works for either `F`.
"""
from numbers import Number as _Number
from types import SimpleNamespace as _SimpleNamespace

import numpy as _onp

from ..ndarray import FLUENT_METHODS
from ..ops import OPS as _OPS, OpError
from ..ops.registry import bind_call as _bind_call
from .symbol import (HIDDEN_KEYS, Group, Node, NpSymbol, Symbol, Variable, _create,  # noqa: F401
                     topological, user_attrs, var)
from .serialize import SymbolFileError, load, load_json  # noqa: F401


def _refuse_arrays(op, args, kwargs):
    """An array among a traced op's arguments: made inside forward, it cannot be in the
    graph (which reads only its inputs and Parameters). Say so, instead of a confusing
    message about the attribute the array lands on."""
    from ..ndarray import NDArray
    for where, value in list(enumerate(args)) + list(kwargs.items()):
        if isinstance(value, NDArray):
            what = f"argument {where}" if isinstance(where, int) else f"argument '{where}'"
            raise OpError(
                f"{op.name}: {what} is an array of shape {value.shape}, not a Symbol: a "
                f"traced graph reads only the block's inputs and Parameters, so an array "
                f"made inside forward cannot be part of it. Make it a Parameter "
                f"(self.params.get_constant(name, value) for a constant), build it from "
                f"an input (F.ones_like(x), np.ones_like(x)), or pass it in as an input")


def _own_attrs(op, attr, kwargs):
    """A node's own attributes: `attr={...}` plus keywords that are MXNet's hidden keys
    (`lr_mult=0`) or `__underscored__`, taken out of `kwargs` (the op's arguments)."""
    own = dict(attr or {})
    for key in [k for k in kwargs if k not in op.attrs and k not in op.inputs
                and (k in HIDDEN_KEYS or k.startswith("__") and k.endswith("__"))]:
        own[key] = kwargs.pop(key)
    return own


def _make_function(op, called):
    """A `sym.<called>` function (`called`: the op's name or an alias, e.g. flip for
    reverse, which names the nodes it adds): bind the call, add a node. Missing parameter
    inputs become variables named after the node (`fc1_weight`), as in MXNet's symbol API."""
    hint = called.lstrip("_").lower()

    def function(*args, attr=None, **kwargs):
        _refuse_arrays(op, args, kwargs)
        own = _own_attrs(op, attr, kwargs)
        inputs, attrs, name = _bind_call(op, args, kwargs, lambda x: isinstance(x, Symbol))
        names = op.input_names(attrs, len(inputs))
        if any(x is None for x in inputs):
            from .. import name as _name
            name = _name.current().get(name, hint)
            # made variables get the op's __underscored__ attributes, as in MXNet
            hidden = {k: v for k, v in user_attrs(own).items() if k.startswith("__")}
            for k, (input_name, x) in enumerate(zip(names, inputs)):
                if x is None:       # sym.FullyConnected(num_hidden=10) too: compose later,
                    inputs[k] = var(f"{name}_{input_name}", attr=hidden)  # net(fc1_data=...)
        return _create(op.name, inputs, attrs, name=name, parsed=True, hint=hint,
                       extra_attrs=own)
    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = op.doc
    return function


for _name, _op in _OPS.items():
    globals()[_name] = _make_function(_op, _name)

# MXNet keeps the ops whose names start with "_" in `sym._internal` too.
_internal = _SimpleNamespace(**{_name: globals()[_name] for _name in _OPS
                                if _name.startswith("_")})
# and the linear-algebra ops `_linalg_gelqf` as `sym.linalg.gelqf`
linalg = _SimpleNamespace(**{_name[len("_linalg_"):]: globals()[_name] for _name in _OPS
                             if _name.startswith("_linalg_")})


def _scalar_or_symbol(key, on_numbers):
    """sym.maximum(a, b) and co., as MXNet's: Symbols and numbers in either place; two
    numbers give a number."""
    def function(lhs, rhs):
        if isinstance(lhs, Symbol):
            return lhs._binary(key, rhs)
        if isinstance(rhs, Symbol):
            return rhs._binary(key, lhs, reflected=True)
        if isinstance(lhs, _Number) and isinstance(rhs, _Number):
            return on_numbers(lhs, rhs)
        raise TypeError(f"sym.{key}: types ({type(lhs).__name__}, {type(rhs).__name__}) "
                        f"not supported: give Symbols or numbers")
    function.__name__ = key
    return function


maximum = _scalar_or_symbol("maximum", max)
minimum = _scalar_or_symbol("minimum", min)
pow = power = _scalar_or_symbol("pow", lambda base, exp: base ** exp)  # noqa: A001
hypot = _scalar_or_symbol("hypot", _onp.hypot)


def zeros(shape, dtype="float32", **kwargs):
    return globals()["_zeros"](shape=shape, dtype=dtype, **kwargs)


def ones(shape, dtype="float32", **kwargs):
    return globals()["_ones"](shape=shape, dtype=dtype, **kwargs)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split as NumPy's np.split (see nd.split_v2), as a graph node."""
    attrs = {"axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, _Number):
        attrs["sections"] = int(indices_or_sections)
    else:
        attrs["indices"] = (0,) + tuple(int(i) for i in indices_or_sections)
    return globals()["_split_v2"](ary, **attrs)


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002
    """nd.histogram as a graph node: `bins` a number of bins (over `range`) or a Symbol
    of edges."""
    if isinstance(bins, Symbol):
        return globals()["_histogram"](a, bins, **kwargs)
    span = "" if range is None else repr(tuple(float(r) for r in range))
    return globals()["_histogram"](a, bin_cnt=int(bins), range=span, **kwargs)

def eye(N, M=0, k=0, dtype="float32", **kwargs):
    """An N x M (M=0: N) matrix with ones on diagonal k, as a graph node."""
    return globals()["_eye"](N=N, M=M, k=k, dtype=dtype or "float32", **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None,
           **kwargs):
    """start, start + step, ... below stop, each `repeat` times, as a graph node."""
    kwargs.pop("ctx", None)
    return globals()["_arange"](start=start, stop=stop, step=step, repeat=repeat,
                                infer_range=infer_range, dtype=dtype or "float32", name=name,
                                **kwargs)


def full(shape, val, dtype="float32", **kwargs):
    return globals()["_full"](shape=shape, value=val, dtype=dtype, **kwargs)



def stack(*data, axis=0, **kwargs):
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = data[0]
    return globals()["concat"](*[globals()["expand_dims"](d, axis=axis) for d in data], dim=axis)


# Symbol methods that are just ops, e.g. s.reshape((0, -1)), s.sum(axis=1): NDArray's
# list, plus the ones NDArray implements itself (as views or copies)
_METHODS = FLUENT_METHODS + ("transpose", "flatten", "expand_dims", "squeeze", "reshape_like",
                             "broadcast_like", "broadcast_to", "zeros_like", "ones_like",
                             "astype")
for _name in _METHODS:
    if _name not in globals() and _name != "astype":
        continue

    def _method(self, *args, _n=_name, **kwargs):
        if _n in ("flatten", "expand_dims", "squeeze"):
            # NDArray's inplace=True asks for a view sharing memory; a value in a graph
            # has no memory of its own, so code traced with it means the plain op.
            kwargs.pop("inplace", None)
        return globals()["Cast" if _n == "astype" else _n](self, *args, **kwargs)
    _method.__name__ = _name
    setattr(Symbol, _name, _method)


def _reshape(self, *shape, **kwargs):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return globals()["reshape"](self, shape=kwargs.pop("shape", shape), **kwargs)


Symbol.reshape = _reshape
Symbol.T = property(lambda self: globals()["transpose"](self))
from . import contrib  # noqa: E402,F401  (foreach, while_loop, cond)
from . import random  # noqa: E402,F401  (sym.random.uniform, ...)
from ..ndarray.contrib import _contrib_ops  # noqa: E402
_contrib_ops(vars(contrib), globals())       # _contrib_allclose: contrib.allclose
from . import image  # noqa: E402
_contrib_ops(vars(image), globals(), "_image_")  # _image_normalize: image.normalize


def __getattr__(attr):
    # F.np / F.npx inside hybrid_forward(self, F, x): the NumPy-style front ends, which
    # dispatch on their arguments (compute on NDArrays, trace on Symbols); sym.np also
    # traces the functions that have no array argument (np.zeros(shape)).
    if attr in ("np", "npx"):
        import importlib
        return importlib.import_module({"np": "straightdope.numpy._symbol",
                                        "npx": "straightdope.numpy_extension"}[attr])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
