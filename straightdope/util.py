"""MXNet's NumPy-semantics switches (`np_shape`, `np_array`, `set_np`, `use_np`) and
`getenv`/`setenv`.

In MXNet these switches change what a shape means: without NumPy shape semantics
a 0 in a shape means "unknown", with them it means an axis of length 0, and -1 (or
None for a whole shape) means unknown. Here `np_shape` changes how an *unknown*
shape is reported by `infer_shape_partial` (`()` without, `None` with), and
`np_array` makes DataLoader batches `mx.np.ndarray`s. What else MXNet ties to the
flags comes from the types here: `mx.np.ndarray` and np Symbols carry NumPy's
semantics, so classic and NumPy-style code run side by side in one process.
"""
import functools
import inspect
import threading


class _Flags(threading.local):
    np_shape = False
    np_array = False


_flags = _Flags()


def is_np_shape() -> bool:
    """Are NumPy shape semantics on?"""
    return _flags.np_shape


def is_np_array() -> bool:
    """Is the NumPy array front end (`mx.np`) the default?"""
    return _flags.np_array


def set_np_shape(active) -> bool:
    """Turn NumPy shape semantics on or off; returns the previous setting."""
    previous, _flags.np_shape = _flags.np_shape, bool(active)
    return previous


def set_np_array(active) -> bool:
    previous, _flags.np_array = _flags.np_array, bool(active)
    return previous


class _Scope:
    """`with np_shape(True):` ... sets a flag for the block and restores it after."""

    def __init__(self, setter, active):
        self._setter, self._active, self._previous = setter, active, None

    def __enter__(self):
        self._previous = self._setter(self._active)
        return self

    def __exit__(self, *exc):
        self._setter(self._previous)


def np_shape(active=True):
    return _Scope(set_np_shape, active)


class _NumpyArrayScope(_Scope):
    """The scope `np_array(active)` returns (MXNet's name for it); `_is_np_array` is the
    setting it applies. The flag itself is per thread (`_flags`)."""

    def __init__(self, is_np_array):
        super().__init__(set_np_array, is_np_array)
        self._is_np_array = bool(is_np_array)


def np_array(active=True):
    return _NumpyArrayScope(active)


def set_np(shape=True, array=True, dtype=False):
    """MXNet 2.0 style: NumPy shapes and arrays on (straightdope: recorded only)."""
    set_np_shape(shape)
    set_np_array(array)


def reset_np():
    set_np(False, False)


def _functions_of(cls):
    """The names of the plain functions a class has, its own and inherited (MXNet's
    use_np scopes every method; static and class methods are left as they are)."""
    for name in dir(cls):
        if not isinstance(inspect.getattr_static(cls, name), (staticmethod, classmethod)) \
                and inspect.isfunction(getattr(cls, name)):
            yield name


def _decorator(setter_pairs):
    def decorate(func):
        if isinstance(func, type):
            # Every method, as MXNet's use_np: then initialize() makes mx.np Parameters
            # and the block's calls and traces see is_np_array().
            for name in list(_functions_of(func)):
                method = getattr(func, name)
                if not getattr(method, "_np_scoped", False):
                    setattr(func, name, decorate(method))
            return func

        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            previous = [setter(True) for setter in setter_pairs]
            try:
                return func(*args, **kwargs)
            finally:
                for setter, value in zip(setter_pairs, previous):
                    setter(value)
        wrapped._np_scoped = True
        return wrapped
    return decorate


use_np_shape = _decorator([set_np_shape])
use_np_array = _decorator([set_np_array])
use_np = _decorator([set_np_shape, set_np_array])


def getenv(name):
    """The value of environment variable `name`, or None (MXNet's `util.getenv`, which reads
    the backend's copy of the environment; here the backend is this process)."""
    import os
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable `name` to the string `value`; None removes it."""
    import os
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)
