"""Random arrays. They draw from NumPy's global generator, which
`straightdope.random.seed(n)` seeds (and so do Dropout and the initializers)."""
import numpy as _np

from ..context import check_context


def _make(values, dtype, ctx):
    from .ndarray import NDArray
    check_context(ctx)
    return NDArray(_np.asarray(values, dtype=_np.dtype(dtype or _np.float32)), ctx)


def _size(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    return _make(_np.random.uniform(low, high, _size(shape)), dtype, ctx)


def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    return _make(_np.random.normal(loc, scale, _size(shape)), dtype, ctx)


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None):
    return normal(loc, scale, shape, dtype, ctx)


def randint(low, high, shape=(1,), dtype="int32", ctx=None, **kwargs):
    return _make(_np.random.randint(low, high, _size(shape)), dtype, ctx)


def shuffle(data, **kwargs):
    from .ndarray import NDArray
    return NDArray(_np.random.permutation(data.asnumpy()))


def seed(seed_state, ctx="all"):
    _np.random.seed(seed_state)
