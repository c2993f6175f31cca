"""`np.random`: NumPy's argument names (size=), straightdope arrays."""
from ..ndarray import random as _r


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None):
    return _r.uniform(low, high, size if size is not None else (), dtype=dtype)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _r.normal(loc, scale, size if size is not None else (), dtype=dtype)


def randint(low, high=None, size=None, dtype=None, ctx=None, device=None):
    if high is None:
        low, high = 0, low
    return _r.randint(low, high, size if size is not None else (), dtype=dtype or "int64")


def seed(seed):
    from .. import random
    random.seed(seed)
