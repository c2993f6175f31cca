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

from ..ndarray.ndarray import NDArray


class ndarray(NDArray):  # noqa: N801 (NumPy's and MXNet's name)
    """An n-dimensional array with NumPy's conventions (see the module's docstring)."""
    __slots__ = ()

    @property
    def dtype(self):
        return self._data.dtype

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
