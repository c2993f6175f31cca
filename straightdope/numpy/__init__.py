"""`straightdope.np`: the MXNet 2.0 / NumPy-style front end over the same registry.

Each function looks at its arguments: given arrays it computes now (like `nd`),
given Symbols it adds a graph node (like `sym`). That is how a 2.0-style
`forward(self, x)` written with `np.dot` can be traced by `hybridize()`.
Its arrays are `np.ndarray`s (multiarray.py): NDArrays that print, compare and
report their dtype as NumPy does, as in MXNet.
"""
import builtins as _builtins   # this module defines any, all, sum, max... as NumPy does
import functools
import operator as _operator

import numpy as _onp

from .. import ndarray as _nd
from ..base import MXNetError as _MXNetError
from .. import symbol as _sym
from ..ndarray import NDArray as _NDArray
from ..ops.shape import np_binary_dtype as _np_binary_dtype
from ..symbol import NpSymbol as _NpSymbol
from ..symbol import Symbol as _Symbol
from . import _internal, random  # noqa: F401
from .multiarray import ndarray

float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
int8, int32, int64, uint8, bool_ = _onp.int8, _onp.int32, _onp.int64, _onp.uint8, _onp.bool_
int16, uint16, uint32, uint64 = _onp.int16, _onp.uint16, _onp.uint32, _onp.uint64
bool = _onp.bool_                   # mx.np.bool, as NumPy 2 has it again
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None


def _world(*args):
    """`sym` if any argument is a Symbol (we are being traced), else `nd`."""
    return _sym if _builtins.any(isinstance(a, _Symbol) for a in args) else _nd


def _dispatching(op_name, doc=None):
    def function(*args, **kwargs):
        return getattr(_world(*args, *kwargs.values()), op_name)(*args, **kwargs)
    function.__name__ = op_name
    function.__doc__ = doc or f"NumPy-style `{op_name}` (computes on NDArrays, traces on Symbols)."
    return function


def _c_order(function, order):
    if order != "C":
        raise NotImplementedError(f"np.{function}: order={order!r}: arrays are row-major "
                                  f"(order='C') only, as in MXNet")


def array(object, dtype=None, ctx=None, device=None):
    return _nd.array(object, ctx=ctx or device, dtype=dtype)


def asarray(object, dtype=None):
    return object if isinstance(object, ndarray) and dtype is None else array(object, dtype)


def zeros(shape, dtype=None, order="C", ctx=None, device=None):
    _c_order("zeros", order)
    return _nd.zeros(shape, ctx=ctx or device, dtype=dtype)


def ones(shape, dtype=None, order="C", ctx=None, device=None):
    _c_order("ones", order)
    return _nd.ones(shape, ctx=ctx or device, dtype=dtype)


def full(shape, fill_value, dtype=None, order="C", ctx=None, device=None):
    """An array of `shape` filled with `fill_value`: a number, or an array broadcast to
    shape (in its own dtype unless dtype says otherwise)."""
    _c_order("full", order)
    if isinstance(fill_value, (_NDArray, _Symbol)):
        shape = (int(shape),) if isinstance(shape, (int, _onp.integer)) else tuple(shape)
        value = fill_value if dtype is None else fill_value.astype(_onp.dtype(dtype).name)
        return _rearrange("broadcast_to", value, shape)
    return _nd.full(shape, fill_value, ctx=ctx or device, dtype=dtype)


def empty(shape, dtype=None, order="C", ctx=None, device=None):
    """A new array of `shape` (zero-filled here: the values are unspecified in NumPy)."""
    _c_order("empty", order)
    return zeros(shape, dtype, ctx=ctx, device=device)


def arange(start, stop=None, step=None, dtype=None, ctx=None, device=None):
    """Evenly spaced values in [start, stop) (or [0, start)), NumPy's; float32 unless
    dtype says otherwise (MXNet's default)."""
    values = _onp.arange(start, stop, 1 if step is None else step,
                         dtype=_onp.dtype(dtype or "float32"))
    return array(values, values.dtype, ctx or device)


def dot(a, b, out=None):
    """NumPy's dot: a product for a 0-d operand, else sums over a's last axis and b's
    second-to-last (its only one when 1-D)."""
    if out is not None:
        raise NotImplementedError("np.dot: out= is not supported; use the result")
    if isinstance(a, _NDArray) and isinstance(b, _NDArray) and 0 < a.ndim <= 2 \
            and 0 < b.ndim <= 2:
        return _nd.dot(a, b)            # the compiled kernel
    return _world(a, b)._npi_tensordot(a, b, axes=repr("dot"))


def matmul(a, b, out=None):
    """Matrix products over the last two axes, the others broadcast (a 1-D operand is a
    row or column vector); gradients flow to both."""
    if out is not None:
        raise NotImplementedError("np.matmul: out= is not supported; use the result")
    return _world(a, b)._npi_matmul(a, b)


def _operands(name, x1, x2):
    """x1 and x2 of a binary function as two arrays (or Symbols) of one dtype, mx.np's
    promoted one (float32 * bool is float32). A Python number becomes an array of the
    other's dtype (a float and an int array: float32, as mx.np's operators)."""
    arrays = [isinstance(x, (_NDArray, _Symbol)) for x in (x1, x2)]
    if not _builtins.any(arrays):
        raise TypeError(f"np.{name}: needs at least one mx.np array, got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    if not _builtins.all(arrays):
        like, number = (x1, x2) if arrays[0] else (x2, x1)
        if isinstance(number, (float, _onp.floating)):
            like = like._promote("float") if isinstance(like, _NpSymbol) else \
                like if isinstance(like, _Symbol) or like.dtype.kind == "f" else \
                like.astype("float32")
        value = full_like(like, number)
        return (like, value) if arrays[0] else (value, like)
    if isinstance(x1, _Symbol) or isinstance(x2, _Symbol):
        return _sym._np_promote_with(x1, x2), _sym._np_promote_with(x2, x1)
    dtype = _np_binary_dtype(x1.dtype, x2.dtype)
    return x1.astype(dtype, copy=False), x2.astype(dtype, copy=False)


def _binary_ufunc(name, compute, doc):
    """A NumPy binary ufunc: compute(x1, x2), with NumPy's keywords checked as MXNet does
    (the defaults only) and out= written."""
    def function(x1, x2, out=None, **kwargs):
        _ufunc_arguments(name, **kwargs)
        return _write_out(name, compute(x1, x2), out)
    function.__name__ = name
    function.__doc__ = doc
    return function


def _legacy(op_name):
    """compute(x1, x2) with a broadcasting legacy op, on operands promoted to one dtype."""
    def compute(x1, x2):
        x1, x2 = _operands(op_name, x1, x2)
        return getattr(_world(x1, x2), op_name)(x1, x2)
    return compute


def _npi_binary(function):
    def compute(x1, x2):
        x1, x2 = _operands(function, x1, x2)
        return _world(x1, x2)._npi_binary(x1, x2, function=function)
    return compute


def _float_valued(compute):
    """compute(x1, x2) of a function whose values are not integers (hypot, arctan2):
    integer and bool operands become float32 first (mx.np's default float)."""
    def floats(x1, x2):
        return compute(*(x.astype("float32") if isinstance(x, _NDArray) and
                         _onp.dtype(x.dtype).kind in "biu" else
                         x._promote("float") if isinstance(x, _NpSymbol) else x
                         for x in (x1, x2)))
    return floats


_BINARY_UFUNCS = {
    # name: (compute, doc); operators promote dtypes themselves (multiarray.py, NpSymbol)
    "add": (_operator.add, "x1 + x2, broadcast."),
    "subtract": (_operator.sub, "x1 - x2, broadcast."),
    "multiply": (_operator.mul, "x1 * x2, broadcast."),
    "divide": (_operator.truediv, "x1 / x2, broadcast (float32 for ints, as MXNet)."),
    "true_divide": (_operator.truediv, "x1 / x2, broadcast (float32 for ints, as MXNet)."),
    "power": (_operator.pow, "x1 ** x2, broadcast."),
    "mod": (_operator.mod, "x1 % x2 (the sign of x2, Python's), broadcast; gradient 0 for "
                           "integer data, as MXNet."),
    "remainder": (_operator.mod, "x1 % x2 (the sign of x2, Python's), broadcast."),
    "equal": (_operator.eq, "x1 == x2 as a bool array."),
    "not_equal": (_operator.ne, "x1 != x2 as a bool array."),
    "greater": (_operator.gt, "x1 > x2 as a bool array."),
    "greater_equal": (_operator.ge, "x1 >= x2 as a bool array."),
    "less": (_operator.lt, "x1 < x2 as a bool array."),
    "less_equal": (_operator.le, "x1 <= x2 as a bool array."),
    "maximum": (_legacy("maximum"), "The larger of x1 and x2, element by element (NaN "
                                    "from either)."),
    "minimum": (_legacy("minimum"), "The smaller of x1 and x2, element by element."),
    "hypot": (_float_valued(_legacy("broadcast_hypot")),
              "sqrt(x1**2 + x2**2), element by element."),
    "copysign": (_float_valued(_npi_binary("copysign")), "x1's magnitude with x2's sign."),
    "arctan2": (_float_valued(_npi_binary("arctan2")),
                "The angle of the point (x2, x1), in radians."),
    "ldexp": (_npi_binary("ldexp"), "x1 * 2**x2 (float32 for int data)."),
    "fmod": (_npi_binary("fmod"), "The C remainder of x1 / x2 (the sign of x1)."),
    "lcm": (_npi_binary("lcm"), "The least common multiple of integers."),
    "gcd": (_npi_binary("gcd"), "The greatest common divisor of integers."),
    "bitwise_and": (_npi_binary("bitwise_and"), "x1 & x2 of integer or bool arrays."),
    "bitwise_or": (_npi_binary("bitwise_or"), "x1 | x2 of integer or bool arrays."),
    "bitwise_xor": (_npi_binary("bitwise_xor"), "x1 ^ x2 of integer or bool arrays."),
}
for _name, (_compute, _doc) in _BINARY_UFUNCS.items():
    globals()[_name] = _binary_ufunc(_name, _compute, _doc)


def sum(a, axis=None, dtype=None, keepdims=False):
    if isinstance(a, (ndarray, _NpSymbol)):     # NumPy's result dtype (multiarray.py)
        return a.sum(axis=axis, dtype=dtype, keepdims=keepdims)
    a = a if dtype is None else a.astype(dtype)     # NumPy sums in `dtype`
    return _world(a).sum(a, axis=axis, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """The mean over `axis` (all axes when None): float32 for bool and ints, a float
    array's own dtype; with `dtype`, computed wide and rounded once to it."""
    if out is not None:
        raise NotImplementedError("np.mean: out= is not supported; use the result")
    if dtype is not None and isinstance(a, (ndarray, _NpSymbol)):
        return _world(a)._npi_mean(a, axis=_axis_literal(axis), dtype=_onp.dtype(dtype).name,
                                   keepdims=_builtins.bool(keepdims))
    if isinstance(a, (ndarray, _NpSymbol)):
        return a.mean(axis=axis, dtype=dtype, keepdims=keepdims)
    a = a if dtype is None else a.astype(dtype)
    return _world(a).mean(a, axis=axis, keepdims=keepdims)


def max(a, axis=None, keepdims=False):
    return _world(a).max(a, axis=axis, keepdims=keepdims)


def min(a, axis=None, keepdims=False):
    return _world(a).min(a, axis=axis, keepdims=keepdims)


def _edge_case(a):
    """A 0-d or empty array: the legacy shape ops read () and 0 in MXNet 1.x's way (a 0
    is "keep this length"), so these go through NumPy's own function (_np_rearrange)."""
    return isinstance(a, _NDArray) and (a.ndim == 0 or a.size == 0)


def reshape(a, newshape, order="C"):
    _c_order("reshape", order)
    newshape = (int(newshape),) if isinstance(newshape, (int, _onp.integer)) else \
        tuple(newshape)
    if 0 in newshape or _edge_case(a):
        return _rearrange("reshape", a, newshape)
    return _world(a).reshape(a, shape=newshape)


def transpose(a, axes=None):
    if _edge_case(a) or (axes is not None and len(axes) == 0):
        return _rearrange("transpose", a, None if axes is None else tuple(axes))
    return _world(a).transpose(a, axes=axes or ())


def expand_dims(a, axis):
    return _world(a).expand_dims(a, axis=axis)


def concatenate(seq, axis=0, out=None):
    """Join arrays along `axis` (flattened first when axis is None, as NumPy)."""
    F = _world(*seq)
    if axis is None:
        seq, axis = [F.reshape(a, shape=(-1,)) for a in seq], 0
    result = F.concat(*seq, dim=axis)
    if out is not None:
        out[...] = result
        return out
    return result


def stack(arrays, axis=0):
    return _world(*arrays).stack(*arrays, axis=axis)


def broadcast_to(array, shape):
    """`array` repeated along its axes of length 1 (and new leading axes) to `shape`; -2
    keeps the array's length there (npx). A number gives a full array."""
    shape = (shape,) if isinstance(shape, (int, _onp.integer)) else tuple(shape)
    if not isinstance(array, (_NDArray, _Symbol)):
        return full(shape, array)
    if 0 in shape and isinstance(array, _NDArray):   # the op reads 0 as 1.x's "keep"
        lead = len(shape) - array.ndim               # -2: keep the array's length there
        shape = tuple(array.shape[k - lead] if d == -2 and k >= lead else d
                      for k, d in enumerate(shape))
        return _rearrange("broadcast_to", array, shape)
    return _world(array).broadcast_to(array, shape=shape)


def where(condition, x, y):
    """x where condition is nonzero, else y; the three broadcast together (numbers are
    arrays of the other's dtype). Gradients flow to x and y."""
    arrays = [v for v in (condition, x, y) if isinstance(v, (_NDArray, _Symbol))]
    if not _builtins.all(isinstance(v, (_NDArray, _Symbol)) for v in (condition, x, y)):
        if _builtins.any(isinstance(v, _Symbol) for v in arrays):
            return _world(condition, x, y).where(condition, x, y)   # legacy: same shapes
        like = x if isinstance(x, _NDArray) else y if isinstance(y, _NDArray) else None
        dtype = None if like is None else like.dtype
        condition, x, y = (v if isinstance(v, _NDArray) else array(v, dtype)
                           for v in (condition, x, y))
    return _world(condition, x, y)._npi_where(condition, x, y)


def clip(a, a_min, a_max, out=None):
    """a's elements limited to [a_min, a_max]; a bound of None is no limit (not both)."""
    if a_min is None and a_max is None:
        raise ValueError("np.clip: a_min and a_max are both None; give at least one")
    if not isinstance(a, (_NDArray, _Symbol)):
        return _onp.clip(a, a_min, a_max)
    low = -_onp.inf if a_min is None else a_min
    high = _onp.inf if a_max is None else a_max
    return _write_out("clip", _world(a).clip(a, a_min=low, a_max=high), out)


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _ufunc_arguments(name, where=True, casting="same_kind", order="K", dtype=None,
                     subok=True):
    """NumPy's ufunc keywords: the defaults are honoured, anything else is refused (as in
    MXNet): NotImplementedError for a valid value we do not support, TypeError for an
    invalid one."""
    if dtype is not None:
        _onp.dtype(dtype)                      # a TypeError for a name that is no dtype
        raise NotImplementedError(f"np.{name}: dtype= is not supported; cast the result "
                                  f"(.astype(dtype))")
    if casting not in _CASTINGS:
        raise TypeError(f"np.{name}: casting must be one of {list(_CASTINGS)}, got {casting!r}")
    for key, value, default in (("where", where, True), ("casting", casting, "same_kind"),
                                ("order", order, "K"), ("subok", subok, True)):
        if value is not default and value != default:
            raise NotImplementedError(f"np.{name}: {key}={value!r} is not supported (only "
                                      f"{key}={default!r}, as in MXNet)")


def _write_out(name, result, out):
    """`out=`: the result written into `out`, which must have its dtype."""
    if out is None:
        return result
    if _onp.dtype(out.dtype) != _onp.dtype(result.dtype):
        raise TypeError(f"np.{name}: out= has dtype {_onp.dtype(out.dtype).name}, the "
                        f"result {_onp.dtype(result.dtype).name}")
    out[...] = result
    return out


def _ufunc(name, compute, doc=None):
    def function(x, out=None, **kwargs):
        _ufunc_arguments(name, **kwargs)
        return _write_out(name, compute(x), out)
    function.__name__ = name
    function.__doc__ = doc or f"NumPy-style `{name}` (computes on NDArrays, traces on Symbols)."
    return function


for _name in ("exp", "log", "sqrt", "square", "abs", "tanh", "sign", "sin", "cos",
              "negative", "tan", "sinh", "cosh", "arcsin", "arccos",
              "arctan", "arcsinh", "arccosh", "arctanh", "log2", "log10", "log1p", "expm1",
              "reciprocal", "cbrt", "floor", "ceil", "trunc", "fix", "rint", "degrees",
              "radians"):
    globals()[_name] = _ufunc(_name, _dispatching(_name))
for _name in ("zeros_like", "ones_like"):
    globals()[_name] = _dispatching(_name)
absolute = _ufunc("absolute", _dispatching("abs"))
rad2deg = _ufunc("rad2deg", _dispatching("degrees"))
deg2rad = _ufunc("deg2rad", _dispatching("radians"))
logical_not = _ufunc("logical_not", lambda x: (x == 0).astype("bool"),
                     "Whether each element is zero, as a bool array.")


def around(a, decimals=0, out=None):
    """Rounded half to even (as NumPy and rint) at `decimals` places (negative: tens...)."""
    if out is not None:
        raise NotImplementedError("np.around: out= is not supported; use the result")
    return _world(a)._npi_around(a, decimals=int(decimals))


round = round_ = around  # noqa: A001


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, ctx=None,
             device=None):
    """`num` evenly spaced values from start to stop (float32 unless dtype says otherwise)."""
    if not isinstance(num, (int, _onp.integer)) or num < 0:
        raise _MXNetError(f"np.linspace: num must be an integer of at least 0, got {num!r}")
    dtype = _onp.dtype(dtype or "float32")      # ints are rounded down, as NumPy's
    values = _onp.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype)
    if retstep:
        return array(values[0], dtype, ctx or device), values[1]
    return array(values, dtype, ctx or device)


def eye(N, M=None, k=0, dtype=None, ctx=None, device=None):
    """An N x M array of ones on diagonal k, zeros elsewhere."""
    if N < 0 or (M is not None and M < 0):
        raise _MXNetError(f"np.eye: N and M must be at least 0, got N={N}, M={M}")
    return array(_onp.eye(N, M, k), dtype, ctx or device)


def _window(name, M, dtype, ctx, device):
    return array(getattr(_onp, name)(M), dtype or "float32", ctx or device)


def hanning(M, dtype=None, ctx=None, device=None):
    """The Hann window of M points (empty for M < 1)."""
    return _window("hanning", M, dtype, ctx, device)


def hamming(M, dtype=None, ctx=None, device=None):
    """The Hamming window of M points (empty for M < 1)."""
    return _window("hamming", M, dtype, ctx, device)


def blackman(M, dtype=None, ctx=None, device=None):
    """The Blackman window of M points (empty for M < 1)."""
    return _window("blackman", M, dtype, ctx, device)


def indices(dimensions, dtype=None, ctx=None, device=None):
    """The index of each position along each axis of a grid of `dimensions`: shape
    (len(dimensions),) + dimensions (int64 by default)."""
    return array(_onp.indices(tuple(dimensions)), dtype or "int64", ctx or device)


def identity(n, dtype=None, ctx=None, device=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx, device=device)


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    """Coordinate grids from 1-D arrays: each reshaped along its own axis, then broadcast
    (registry ops, so gradients flow back). indexing='xy' swaps the first two axes."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"np.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    sizes = [x.size for x in xi]
    axes = list(range(len(xi)))
    if indexing == "xy" and len(xi) > 1:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for x, axis in zip(xi, axes):
        shape = [1] * len(xi)
        shape[axis] = -1
        g = _world(x).reshape(x, shape=tuple(shape))
        grids.append(g if sparse else _world(g).broadcast_to(g, shape=tuple(sizes)))
    return grids


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sums along `axis` (of the flattened array when None); bool and ints sum as
    int64 unless dtype says otherwise. Gradients flow."""
    if out is not None:
        raise NotImplementedError("np.cumsum: out= is not supported; use the result")
    return _world(a)._npi_cumsum(a, axis=None if axis is None else int(axis),
                                 dtype="" if dtype is None else _onp.dtype(dtype).name)


_NDArray.cumsum = cumsum


def prod(a, axis=None, dtype=None, keepdims=False):
    if isinstance(a, (ndarray, _NpSymbol)):
        return a.prod(axis=axis, dtype=dtype, keepdims=keepdims)
    a = a if dtype is None else a.astype(dtype)
    return _world(a).prod(a, axis=axis, keepdims=keepdims)


def argmax(a, axis=None, out=None):
    """The index of the largest element along `axis` (of the flattened array when None),
    as int64; an empty axis is refused."""
    if out is not None:
        raise NotImplementedError("np.argmax: out= is not supported; use the result")
    return _world(a)._npi_argextreme(a, function="argmax", axis=axis)


def argmin(a, axis=None, out=None):
    """The index of the smallest element along `axis`, as int64 (see argmax)."""
    if out is not None:
        raise NotImplementedError("np.argmin: out= is not supported; use the result")
    return _world(a)._npi_argextreme(a, function="argmin", axis=axis)


def squeeze(a, axis=None):
    """a without the axes of length 1 (only those of `axis` when given)."""
    if axis is not None or _edge_case(a):
        return _rearrange("squeeze", a, axis if not isinstance(axis, list) else tuple(axis))
    return _world(a).squeeze(a, axis=axis)


def tile(a, reps):
    return _world(a).tile(a, reps=tuple(_onp.atleast_1d(reps).tolist()))


def repeat(a, repeats, axis=None):
    if not isinstance(repeats, (int, _onp.integer)):
        raise NotImplementedError(f"np.repeat: repeats must be one int (as in MXNet), got "
                                  f"{type(repeats).__name__}")
    return _world(a).repeat(a, repeats=int(repeats), axis=axis)


def split(ary, indices_or_sections, axis=0):
    """Parts of `ary` along `axis`: `indices_or_sections` equal ones, or the parts between
    the given split points (one `_split_v2` node, traced too), as a list."""
    length = None if isinstance(ary, _Symbol) else ary.shape[axis]
    attrs = _split_points("split", length, indices_or_sections, equal=True)
    return _parts(_world(ary)._split_v2(ary, axis=axis, **attrs))


def _split_points(function, length, indices_or_sections, equal):
    """The split ops' attributes for NumPy's indices_or_sections: split points, or a
    number of sections (`equal`: np.split's, refusing a remainder of `length`)."""
    if not isinstance(indices_or_sections, (int, _onp.integer)):
        return {"indices": (0,) + tuple(int(i) for i in indices_or_sections)}
    n = int(indices_or_sections)
    if n <= 0:
        raise ValueError(f"np.{function}: the number of sections must be larger than 0")
    if equal and length is not None and length % n:
        raise ValueError(f"np.{function}: array split does not result in an equal "
                         f"division: an axis of length {length} into {n} parts")
    return {"sections": n}


def _parts(parts):
    if isinstance(parts, _Symbol):
        return [_Symbol.__getitem__(parts, i) for i in range(len(parts.list_outputs()))]
    return parts if isinstance(parts, list) else [parts]


def array_split(ary, indices_or_sections, axis=0):
    """np.split that allows unequal parts: of n sections, the first len % n are longer."""
    attrs = _split_points("array_split", None, indices_or_sections, equal=False)
    return _parts(_world(ary)._npi_array_split(ary, axis=axis, **attrs))


def hsplit(ary, indices_or_sections):
    """np.split along axis 1 (axis 0 of a 1-D array)."""
    attrs = _split_points("hsplit", None, indices_or_sections, equal=True)
    return _parts(_world(ary)._npi_hsplit(ary, **attrs))


def vsplit(ary, indices_or_sections):
    """np.split along axis 0 of an array of at least 2 dimensions."""
    if not isinstance(ary, _Symbol) and ary.ndim < 2:
        raise ValueError("np.vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """np.split along axis 2 of an array of at least 3 dimensions."""
    if not isinstance(ary, _Symbol) and ary.ndim < 3:
        raise ValueError("np.dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, axis=2)


def _axis_literal(axis):
    """`axis` as the np ops' attribute: "" for None, else a literal int or tuple."""
    if axis is None:
        return ""
    return repr(tuple(int(k) for k in axis) if isinstance(axis, (list, tuple)) else int(axis))


def var(a, axis=None, dtype=None, out=None, keepdims=False, ddof=0):
    """mean((a - mean(a))**2) over `axis`, divided by n - ddof (computed in float64; a
    float array's dtype, float32 for ints, unless dtype says otherwise). Gradients
    flow."""
    if out is not None:
        raise NotImplementedError("np.var: out= is not supported; use the result")
    return _world(a)._npi_moment(a, axis=_axis_literal(axis), ddof=int(ddof),
                                 keepdims=_builtins.bool(keepdims), std=False,
                                 dtype="" if dtype is None else _onp.dtype(dtype).name)


def std(a, axis=None, dtype=None, out=None, keepdims=False, ddof=0):
    """The square root of np.var (the same arguments)."""
    if out is not None:
        raise NotImplementedError("np.std: out= is not supported; use the result")
    return _world(a)._npi_moment(a, axis=_axis_literal(axis), ddof=int(ddof),
                                 keepdims=_builtins.bool(keepdims), std=True,
                                 dtype="" if dtype is None else _onp.dtype(dtype).name)


def _sortable(function, a, axis, order):
    """(F, data, axis) for sort/argsort: axis None sorts the flattened array, as NumPy."""
    if order is not None:
        raise NotImplementedError(f"np.{function}: order= (fields of structured arrays) is "
                                  f"not supported, as in MXNet")
    F = _world(a)
    return (F, F.reshape(a, shape=(-1,)), -1) if axis is None else (F, a, axis)


def sort(a, axis=-1, kind=None, order=None):
    """Sorted along `axis` (of the flattened array when None); `kind` is accepted, the
    result is the same whichever NumPy algorithm it names."""
    F, a, axis = _sortable("sort", a, axis, order)
    return F.sort(a, axis=axis)


def argsort(a, axis=-1, kind=None, order=None):
    F, a, axis = _sortable("argsort", a, axis, order)
    return F.argsort(a, axis=axis, dtype="int64")


bitwise_not = invert = _ufunc("bitwise_not", lambda x: -x - 1,
                              "~x of integers (two's complement: -x - 1).")
# NaN is the one value unequal to itself, and compares False with everything
isnan = _ufunc("isnan", lambda x: (x != x).astype("bool"), "Whether each element is NaN.")
isinf = _ufunc("isinf", lambda x: (_world(x).abs(x) == _onp.inf).astype("bool"),
               "Whether each element is infinite.")
isposinf = _ufunc("isposinf", lambda x: (x == _onp.inf).astype("bool"),
                  "Whether each element is +inf.")
isneginf = _ufunc("isneginf", lambda x: (x == -_onp.inf).astype("bool"),
                  "Whether each element is -inf.")
isfinite = _ufunc("isfinite", lambda x: (_world(x).abs(x) < _onp.inf).astype("bool"),
                  "Whether each element is finite (neither NaN nor infinite).")


def shape(a):
    return a.shape


def size(a):
    return a.size


def ravel(a, order="C"):
    """The elements in one axis (a reshape, so gradients flow and it traces)."""
    _c_order("ravel", order)
    return _world(a).reshape(a, shape=(-1,))


def swapaxes(a, axis1, axis2):
    return _world(a).swapaxes(a, dim1=axis1, dim2=axis2)


def moveaxis(a, source, destination):
    return _rearrange("moveaxis", a, source, destination)


def flip(m, axis=None):
    """The elements in reverse order along `axis` (every axis when None)."""
    return _rearrange("flip", m, axis)


def flipud(m):
    return flip(m, 0)


def fliplr(m):
    return flip(m, 1)


def take(a, indices, axis=None, mode="raise", out=None):
    """Elements (or slices along `axis`) of `a` at `indices`; axis None reads the flattened
    array. mode 'raise' refuses an index out of range, 'wrap' and 'clip' map it inside."""
    if out is not None:
        raise NotImplementedError("np.take: out= is not supported; use the result")
    F = _world(a, indices)
    if axis is None:
        a, axis = ravel(a), 0
    if not isinstance(indices, (_NDArray, _Symbol)):
        indices = array(indices, dtype="int64")
    return F.take(a, indices, axis=axis, mode=mode)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal `offset` of the axes axis1, axis2 (moved last); empty when it does not
    exist, as in NumPy."""
    return _rearrange("diagonal", a, int(offset), int(axis1), int(axis2))


def diag(v, k=0):
    """A 2-D array with v on diagonal k (v 1-D), or diagonal k of a 2-D array."""
    return _rearrange("diag", v, int(k))


def diagflat(v, k=0):
    """A 2-D array with v's elements (flattened) on diagonal k."""
    return _rearrange("diagflat", v, int(k))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """The sum along diagonal `offset` of axes axis1, axis2."""
    d = diagonal(a, offset, axis1, axis2)
    return _write_out("trace", sum(d, axis=-1, dtype=dtype), out)


def outer(a, b):
    F = _world(a, b)
    return F.broadcast_mul(F.reshape(a, shape=(-1, 1)), F.reshape(b, shape=(1, -1)))


def vdot(a, b):
    """The dot product of the flattened arrays."""
    return sum(ravel(a) * ravel(b))


def tensordot(a, b, axes=2):
    """Sum products over the last `axes` axes of a and the first of b (or the given
    pairs of axes)."""
    if not isinstance(axes, (int, _onp.integer)):
        axes = tuple(_literal(x) if isinstance(x, (list, tuple)) else int(x) for x in axes)
    return _world(a, b)._npi_tensordot(a, b, axes=repr(_literal(axes)))


def inner(a, b):
    """Sum of products over the last axes of a and b (a product for a 0-d one)."""
    if not isinstance(a, _Symbol) and not isinstance(b, _Symbol) and (a.ndim == 0 or
                                                                      b.ndim == 0):
        return a * b
    return tensordot(a, b, ([-1], [-1]))


def _truth(function, a, axis, keepdims, test):
    F = _world(a)
    if axis == ():                  # no axis reduced: each element's own truth
        return F.Cast(F._not_equal_scalar(a, scalar=0.0), dtype="bool")
    hits = F.Cast(getattr(F, test)(a, scalar=0.0), dtype="int64")   # int8 counts overflow
    counted = F.sum(hits, axis=axis, keepdims=keepdims)
    found = F._greater_scalar(counted, scalar=0.0)
    return F.Cast(found if function == "any" else F._equal_scalar(found, scalar=0.0),
                  dtype="bool")


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether some element (along `axis`) is nonzero, as a bool array."""
    return _write_out("any", _truth("any", a, axis, keepdims, "_not_equal_scalar"), out)


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether every element (along `axis`) is nonzero, as a bool array."""
    return _write_out("all", _truth("all", a, axis, keepdims, "_equal_scalar"), out)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None, ctx=None,
               device=None):
    """A new array shaped like `prototype` (zero-filled here: NumPy leaves it unset)."""
    return full_like(prototype, 0, dtype, order, subok, shape, ctx, device)


def full_like(a, fill_value, dtype=None, order="C", subok=False, shape=None, ctx=None,
              device=None):
    """An array of `fill_value` with a's shape and dtype (or the given ones)."""
    _c_order("full_like", order)
    if isinstance(a, _Symbol):
        zeros = _sym.zeros_like(a) if dtype is None else \
            _sym.zeros_like(a).astype(_onp.dtype(dtype).name)
        return zeros + fill_value            # in the result's dtype, as NumPy's
    return full(a.shape if shape is None else shape, fill_value,
                dtype=a.dtype if dtype is None else dtype, ctx=ctx, device=device)


def _at_least(ndim, arrays):
    out = [_rearrange(f"atleast_{ndim}d", a) for a in arrays]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    return _at_least(1, arys)


def atleast_2d(*arys):
    return _at_least(2, arys)


def atleast_3d(*arys):
    return _at_least(3, arys)


def _combine(function, tup):
    arrays = [a if isinstance(a, (_NDArray, _Symbol)) else array(a) for a in tup]
    return _world(*arrays)._np_combine(*arrays, function=function, num_args=len(arrays))


def vstack(tup):
    """The arrays (at least 2-D) joined along axis 0."""
    return _combine("vstack", tup)


def row_stack(tup):
    return vstack(tup)


def hstack(tup):
    """The arrays joined along axis 1 (axis 0 for 1-D ones)."""
    return _combine("hstack", tup)


def dstack(tup):
    """The arrays (at least 3-D) joined along axis 2."""
    return _combine("dstack", tup)


def column_stack(tup):
    """1-D arrays as columns, joined with 2-D ones along axis 1."""
    return _combine("column_stack", tup)


def append(arr, values, axis=None):
    """values joined after arr (both flattened when axis is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def unravel_index(indices, shape, order="C"):
    """The coordinates of flat `indices` in an array of `shape`, one array per axis."""
    _c_order("unravel_index", order)
    shape = (int(shape),) if isinstance(shape, (int, _onp.integer)) else tuple(shape)
    if not isinstance(indices, (_NDArray, _Symbol)):
        return tuple(_onp.unravel_index(indices, shape))
    coords = _world(indices)._unravel_index(indices, shape=tuple(shape))
    return tuple(coords[i] for i in range(len(shape))) if isinstance(coords, _NDArray) \
        else coords


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None,
             device=None):
    """base ** (num values evenly spaced from start to stop)."""
    if axis != 0:
        raise NotImplementedError("np.logspace: axis must be 0")
    values = _onp.power(base, _onp.linspace(start, stop, num, endpoint=endpoint))
    return array(values, dtype, ctx or device)


def shares_memory(a, b, max_work=None):
    """Whether a and b use some of the same memory (views of one array do)."""
    return bool(_onp.shares_memory(a._data, b._data))


def may_share_memory(a, b, max_work=None):
    return bool(_onp.may_share_memory(a._data, b._data))


# ------------------------------------------- functions that move elements (ops/np_ops.py)
def _literal(value):
    """An argument written as a Python literal, for the `args` attribute of the
    `_np_rearrange` ops (arrays of indices as lists, a slice as ("slice", ...))."""
    if isinstance(value, _NDArray):
        return value.asnumpy().tolist()
    if isinstance(value, slice):
        return ("slice",) + tuple(_literal(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, _onp.ndarray):
        return value.tolist()
    if isinstance(value, _onp.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_literal(v) for v in value)
    return value


def _rearrange(function, a, *args):
    if not isinstance(a, (_NDArray, _Symbol)):
        a = array(a)
    return _world(a)._np_rearrange(a, function=function, args=repr(_literal(args)))


def roll(a, shift, axis=None):
    """Elements shifted by `shift` along `axis` (of the flattened array when None),
    wrapping around."""
    return _rearrange("roll", a, shift, axis)


def rot90(m, k=1, axes=(0, 1)):
    """Rotated by 90 degrees k times in the plane of `axes` (from the first towards the
    second)."""
    axes = tuple(axes)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"np.rot90: axes must be two different axes, got {axes}")
    return _rearrange("rot90", m, int(k), axes)


def tril(m, k=0):
    """The elements on and below diagonal k of the last two axes; zeros above."""
    return _rearrange("tril", m, int(k))


def triu(m, k=0):
    """The elements on and above diagonal k of the last two axes; zeros below."""
    return _rearrange("triu", m, int(k))


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum")


def pad(x, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    """x with `pad_width` = ((before, after), ...) elements added on each axis, as NumPy's
    pad in `mode`. Gradients flow back to x (not through 'maximum'/'minimum')."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"np.pad: mode={mode!r} is not supported; use one of "
                                  f"{list(_PAD_MODES)}")
    if reflect_type != "even":
        raise NotImplementedError("np.pad: reflect_type='odd' is not supported (as in MXNet)")
    return _rearrange("pad", x, pad_width, mode, constant_values)


def resize(a, new_shape):
    """An array of `new_shape` filled with a's elements in order, repeated as needed."""
    if isinstance(new_shape, (int, _onp.integer)):
        new_shape = (int(new_shape),)
    return _rearrange("resize", a, tuple(new_shape))


def _in_axis(function, arr, axis):
    if isinstance(arr, _Symbol):
        raise NotImplementedError(f"np.{function} with index arrays on a Symbol: give "
                                  f"ints or slices, or call it on arrays")
    return arr.size if axis is None else arr.shape[axis]


def delete(arr, obj, axis=None):
    """arr without the entries `obj` (an int, a slice or indices) along `axis` (of the
    flattened array when None). Indices outside the axis are ignored, as in MXNet."""
    if isinstance(obj, (_NDArray, _onp.ndarray, list, tuple)):
        if isinstance(obj, (_NDArray, _onp.ndarray)) and _onp.dtype(obj.dtype).kind == "b":
            raise NotImplementedError("np.delete: boolean masks are not supported; give "
                                      "the indices (np.nonzero(mask))")
        length = _in_axis("delete", arr, axis)
        obj = [int(i) for i in _onp.asarray(_literal(obj)).reshape(-1) if 0 <= i < length]
    return _rearrange("delete", arr, obj, axis)


def insert(arr, obj, values, axis=None):
    """arr with `values` inserted before the entries `obj` (an int, a slice or indices)
    along `axis` (of the flattened array when None); values take arr's dtype. Gradients
    flow to arr and to values."""
    if isinstance(obj, (_NDArray, _onp.ndarray)) and _onp.dtype(obj.dtype).kind not in "iu":
        raise TypeError(f"np.insert: obj must be integers, got dtype {obj.dtype}")
    args = repr(_literal((obj, axis)))
    if not isinstance(values, (_NDArray, _Symbol)):
        if _onp.ndim(values) == 0:
            return _rearrange("insert_scalar", arr, obj, axis, _literal(values))
        values = array(values, dtype=arr.dtype if isinstance(arr, _NDArray) else None)
    return _world(arr, values)._np_insert(arr, values, args=args)



def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th differences along `axis` (after joining prepend and append there)."""
    if n < 0:
        raise ValueError(f"np.diff: order must be non-negative, got n={n}")
    if prepend is not None or append is not None:
        F = _world(a)
        parts = [_edge(F, v, a, axis) for v in (prepend,)] if prepend is not None else []
        parts.append(a)
        if append is not None:
            parts.append(_edge(F, append, a, axis))
        a = concatenate(parts, axis=axis)
    return _world(a)._npi_diff(a, n=int(n), axis=int(axis))


def _edge(F, value, a, axis):
    """prepend/append of np.diff: a number becomes a slice of length 1 along axis."""
    if isinstance(value, (_NDArray, _Symbol)):
        return value
    shape = list(a.shape)
    shape[axis] = 1
    return full(tuple(shape), value, dtype=a.dtype)


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened array, with to_begin before and to_end after
    (numbers, or arrays)."""
    arrays = {k: v for k, v in (("to_begin", to_begin), ("to_end", to_end))
              if isinstance(v, (_NDArray, _Symbol))}
    numbers = {k: "" if k in arrays or v is None else repr(_onp.ravel(v).tolist())
               for k, v in (("to_begin", to_begin), ("to_end", to_end))}
    out = _world(ary)._npi_ediff1d(ary, **numbers)
    if not arrays:
        return out
    parts = [ravel(arrays["to_begin"])] if "to_begin" in arrays else []
    parts.append(out)
    if "to_end" in arrays:
        parts.append(ravel(arrays["to_end"]))
    return concatenate(parts, axis=0)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with NaN replaced by `nan` and infinities by posinf/neginf (the dtype's largest
    and smallest numbers by default); gradients flow where x is finite. copy=False writes
    the result into x (an array, not while recording)."""
    if not isinstance(x, (_NDArray, _Symbol)):
        return _onp.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    out = _world(x)._npi_nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    if not copy and isinstance(x, _NDArray):
        x[...] = out
        return x
    return out


# ---------------------------------- counting and summarising values (ops/np_stats.py)
def histogram(a, bins=10, range=None, normed=None, weights=None, density=None):  # noqa: A002
    """(counts, bin edges) of a's elements: `bins` equal bins over `range` (a's min to
    max when None), or the edges `bins` (an array). One op with nd.histogram; no
    gradient, as in MXNet."""
    if normed or density or weights is not None:
        raise NotImplementedError("np.histogram: normed=, density= and weights= are not "
                                  "supported (as in MXNet); divide the counts yourself")
    F = _world(a, bins)
    if isinstance(bins, (_NDArray, _Symbol)):
        return tuple(_parts(F._histogram(a, bins)))
    if not isinstance(bins, (int, _onp.integer)):
        raise ValueError(f"np.histogram: bins must be an int or an array of edges, got "
                         f"{type(bins).__name__}")
    span = "" if range is None else repr(tuple(float(r) for r in range))
    return tuple(_parts(F._histogram(a, bin_cnt=int(bins), range=span)))


def bincount(x, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in x (non-negative ints), or the sum of its
    weights there; at least `minlength` long. No gradient, as in MXNet."""
    return _world(x, weights)._npi_bincount(x, weights, minlength=int(minlength),
                                            has_weights=weights is not None)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted distinct values (slices along `axis`) and, as asked, the indices of
    their first occurrences, the indices that rebuild ar, and their counts."""
    flags = (return_index, return_inverse, return_counts)
    out = _world(ar)._npi_unique(ar, return_index=_builtins.bool(return_index),
                                 return_inverse=_builtins.bool(return_inverse),
                                 return_counts=_builtins.bool(return_counts), axis=axis)
    return tuple(_parts(out)) if _builtins.any(flags) else out


def diag_indices_from(arr):
    """The indices of arr's main diagonal, one row per axis: an array of shape
    (arr.ndim, n), as MXNet returns it (NumPy: a tuple of the rows)."""
    return _world(arr)._npi_diag_indices_from(arr)


def average(a, axis=None, weights=None, returned=False, out=None):
    """sum(a * weights) / sum(weights) over `axis` (all axes when None); 1-D weights run
    along the one axis averaged. returned: also sum(weights). Gradients flow to a and
    the weights."""
    if out is not None:
        raise NotImplementedError("np.average: out= is not supported; use the result")
    if isinstance(axis, (list, tuple)):
        axis = tuple(int(k) for k in axis)
    axis = "" if axis is None else repr(axis)
    result = _world(a, weights)._npi_average(a, weights, axis=axis,
                                             returned=_builtins.bool(returned),
                                             weighted=weights is not None)
    return tuple(_parts(result)) if returned else result


def polyval(p, x):
    """The polynomial with coefficients p (highest power first) at each element of x;
    gradients flow to p and x."""
    p = p if isinstance(p, (_NDArray, _Symbol)) else array(p)
    if not isinstance(x, (_NDArray, _Symbol)):
        x = array(x, dtype=None if isinstance(p, _Symbol) else p.dtype)
    return _world(p, x)._npi_polyval(p, x)


def einsum(*operands, optimize=False, out=None):
    """np.einsum(subscripts, *operands): sums of products as the subscripts say
    (NumPy's notation, '...' and implicit output included); gradients flow to every
    operand. `optimize` is accepted (the result is the same)."""
    if out is not None:
        raise NotImplementedError("np.einsum: out= is not supported; use the result")
    if not operands or not isinstance(operands[0], str):
        raise TypeError("np.einsum: the first argument must be the subscripts string "
                        "(the interleaved operand, sublist form is not supported)")
    arrays = [a if isinstance(a, (_NDArray, _Symbol)) else array(a) for a in operands[1:]]
    return _world(*arrays)._npi_einsum(*arrays, subscripts=operands[0],
                                       num_args=len(arrays), optimize=int(_builtins.bool(optimize)))


def broadcast_arrays(*args):
    """The arrays broadcast to their common shape (registry broadcasts: gradients
    flow back)."""
    if _builtins.any(isinstance(a, _Symbol) for a in args):
        raise NotImplementedError("np.broadcast_arrays on Symbols: their shapes are not "
                                  "known while tracing; use np.broadcast_to with the shape")
    shape = _onp.broadcast_shapes(*(a.shape for a in args))
    return [a if a.shape == shape else broadcast_to(a, shape) for a in args]


from . import linalg  # noqa: E402,F401


def _as_np(result, args=()):
    """A function's result as mx.np.ndarray(s). A new NDArray changes its class in place
    (it keeps its identity, which the autograd tape knows it by); an argument given back
    unchanged is re-viewed instead, so the caller's array stays what it was."""
    if type(result) is _NDArray:
        if _builtins.any(result is a for a in args):
            return result.as_np_ndarray()
        result.__class__ = ndarray
        return result
    if type(result) is _Symbol:          # traced: an np Symbol
        return result.as_np_ndarray()
    if type(result) in (list, tuple):
        return type(result)(_as_np(r, args) for r in result)
    if type(result) is dict:
        return {k: _as_np(v, args) for k, v in result.items()}
    return result


def _returning_np(function):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        return _as_np(function(*args, **kwargs), args)
    return wrapped


def _np_functions(namespace, module_name):
    """Every public function of an `np` module returns mx.np.ndarrays, as in MXNet."""
    for name, value in list(namespace.items()):
        if not name.startswith("_") and callable(value) and not isinstance(value, type) \
                and getattr(value, "__module__", None) == module_name \
                and name not in ("shape", "size", "seed"):
            namespace[name] = _returning_np(value)


_np_functions(globals(), __name__)
_np_functions(random.__dict__, random.__name__)


def _clip_method(self, min=None, max=None, out=None):  # noqa: A002 (NumPy's names)
    return clip(self, min, max, out=out)


def _flatten_method(self, order="C"):
    """The elements in one axis, as NumPy's flatten (MXNet 1.x's keeps the first axis)."""
    _c_order("flatten", order)
    return _rearrange("reshape", self, (-1,))


_array_mean, _symbol_mean = ndarray.mean, _NpSymbol.mean     # the dtype=None rules


def _mean_method(self, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is None and out is None:
        plain = _array_mean if isinstance(self, ndarray) else _symbol_mean
        return plain(self, axis=axis, keepdims=keepdims)
    return mean(self, axis, dtype, out, keepdims)


# np.ndarray's (and traced np Symbols') methods that are these functions
for _name, _function in (("var", var), ("std", std), ("cumsum", cumsum), ("argmax", argmax),
                         ("argmin", argmin), ("clip", _clip_method), ("mean", _mean_method),
                         ("flatten", _flatten_method)):
    setattr(ndarray, _name, _function)
    setattr(_NpSymbol, _name, _function)
_np_functions(linalg.__dict__, linalg.__name__)
