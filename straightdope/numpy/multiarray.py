"""`mx.np.ndarray`: the array of MXNet 2.0's NumPy interface.

It is an NDArray (same memory, same ops, same autograd tape) that behaves like a
NumPy array where the two front ends differ in MXNet:

- it prints as NumPy does (`array([1., 2.])`, not `[1. 2.]<NDArray 2 @cpu(0)>`);
- `x.dtype` is a `numpy.dtype` (`dtype('float32')`), not a scalar type;
- comparisons give bool arrays, so `x[x > 0]` is a mask, as in NumPy;
- `format()` takes a format spec only for a 0-d array.

An op given any `np.ndarray` returns `np.ndarray`s, so computing with them gives
`np.ndarray`s; `as_nd_ndarray()` and `as_np_ndarray()` switch between the two views.
"""
import numpy as _onp

from ..ndarray import ndarray as _ndarray_module
from ..ndarray.ndarray import NDArray
from ..ops.shape import np_binary_dtype


class ndarray(NDArray):  # noqa: N801 (NumPy's and MXNet's name)
    """An n-dimensional array with NumPy's conventions (see the module's docstring)."""
    __slots__ = ()

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def grad(self):
        """The gradient written by backward(); None when attached with grad_req 'null'
        (MXNet keeps no gradient buffer then)."""
        return None if self._grad_req == "null" else self._grad

    def __repr__(self):
        """NumPy's repr; as MXNet prints it, float32 (the default) goes unsaid and any
        other dtype is said, bool included."""
        text = repr(self._data)
        if self._data.dtype == _onp.float32:
            if "dtype=" in text:
                text = text[:text.rindex(",")] + ")"
        elif "dtype=" not in text and self._data.dtype != _onp.bool_:
            text = f"{text[:-1]}, dtype={self._data.dtype})"
        return text

    def __str__(self):
        return str(self._data)

    def __format__(self, spec):
        """A 0-d array formats like its number; a bigger one only without a spec (as in
        MXNet: f'{x:.3f}' of a vector is a TypeError)."""
        if self.ndim == 0:
            return format(self._data.item(), spec)
        if spec:
            raise TypeError(f"cannot format an mx.np.ndarray of shape {self.shape} with the "
                            f"format spec {spec!r}; format its elements, e.g. "
                            f"[f'{{v:{spec}}}' for v in x.tolist()]")
        return str(self)

    __hash__ = NDArray.__hash__


def _bool_comparison(name):
    compare = getattr(NDArray, name)

    def method(self, other):
        result = compare(self, other)
        return result if result is NotImplemented else result.astype(_onp.bool_)
    method.__name__ = name
    method.__doc__ = f"x.{name}(y) elementwise, as a bool array (NumPy's convention)."
    return method


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(ndarray, _name, _bool_comparison(_name))


# ------------------------------------------------------------ dtype promotion
# mx.np follows NumPy's promotion rules, with MXNet 2.0's documented deviations
# (docs/mxnet_coverage.md lists them): float32 is the default float, so
#   int / int, int.mean()            -> float32  (NumPy: float64)
#   int array OP Python float        -> float32  (NumPy 2: float64)
#   int array OP float array         -> that float dtype (NumPy: at least float64 for int32)
# and, as in NumPy: bool and int sums are int64 (uint: uint64), mixed ints widen,
# float32 OP float64 is float64, a Python int keeps an int array's dtype.
_DEFAULT_FLOAT = _onp.dtype(_onp.float32)


def _promoted(a, b, divide=False):
    """The dtype of `a OP b` (a is an mx.np.ndarray; b an array or a Python number)."""
    da = a.dtype
    if isinstance(b, NDArray):
        db = b.dtype if isinstance(b, ndarray) else _onp.dtype(b.dtype)
        out = np_binary_dtype(da, db)
    elif isinstance(b, (bool, _onp.bool_)):
        out = da
    elif isinstance(b, (int, _onp.integer)):
        out = da if da.kind != "b" else _onp.dtype(_onp.int64)
    elif isinstance(b, (float, _onp.floating)):
        out = da if da.kind == "f" else _DEFAULT_FLOAT
    else:
        return None
    if divide and out.kind in "biu":
        out = _DEFAULT_FLOAT
    return _onp.dtype(out)


def _cast(x, dtype):
    if isinstance(x, NDArray):
        return x if _onp.dtype(x.dtype) == dtype else x.astype(dtype)
    return x


def _promoting(name, divide=False):
    base = getattr(NDArray, name)

    def method(self, other):
        dtype = _promoted(self, other, divide)
        if dtype is None:
            return base(self, other)
        return base(_cast(self, dtype), _cast(other, dtype))
    method.__name__ = name
    method.__doc__ = f"x.{name}(y) with NumPy's dtype promotion (see mx.np's rules)."
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__pow__", "__rpow__", "__mod__", "__rmod__"):
    setattr(ndarray, _name, _promoting(_name))
for _name in ("__truediv__", "__rtruediv__"):
    setattr(ndarray, _name, _promoting(_name, divide=True))


def sum_dtype(dtype):
    """NumPy's: bool and ints sum as int64 (NumPy: uint64 for unsigned ints, which MXNet
    has no dtype for), floats as themselves."""
    dtype = _onp.dtype(dtype)
    return {"b": _onp.dtype(_onp.int64), "i": _onp.dtype(_onp.int64),
            "u": _onp.dtype(_onp.int64)}.get(dtype.kind, dtype)


def mean_dtype(dtype):
    """Floats keep their dtype; bool and ints average as float32 (MXNet 2.0's default)."""
    dtype = _onp.dtype(dtype)
    return dtype if dtype.kind == "f" else _DEFAULT_FLOAT


def accumulating_dtype(name, dtype):
    """What reduction `name` asked for `dtype` computes in before casting its result to
    it: the widest float or int, so that float32 data summed as float16 is float32's sum
    rounded once, as in MXNet (not a sum of rounded elements). A mean is always a float
    (its gradient, 1/n, too)."""
    wide_float = name == "mean" or _onp.dtype(dtype).kind == "f"
    return _onp.dtype(_onp.float64 if wide_float else _onp.int64)


def _reduction(name, rule):
    base = getattr(NDArray, name)

    def method(self, axis=None, dtype=None, out=None, keepdims=False):
        if dtype is None:
            return base(_cast(self, rule(self.dtype)), axis=axis, keepdims=keepdims)
        result = base(_cast(self, accumulating_dtype(name, dtype)), axis=axis,
                      keepdims=keepdims)
        return _cast(result, _onp.dtype(dtype))
    method.__name__ = name
    method.__doc__ = f"x.{name}(axis, dtype, keepdims) in NumPy's result dtype."
    return method


ndarray.sum = _reduction("sum", sum_dtype)
ndarray.prod = _reduction("prod", sum_dtype)
ndarray.mean = _reduction("mean", mean_dtype)


_ndarray_module.NP_ARRAY = ndarray      # x.as_np_ndarray() makes these
