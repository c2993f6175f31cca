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


def rand(*size, dtype=None, ctx=None, device=None):
    """Uniform samples in [0, 1) of the given shape: np.random.rand(2, 3)."""
    return uniform(0.0, 1.0, size, dtype=dtype)


def randn(*size, dtype=None, ctx=None, device=None):
    """Standard normal samples of the given shape: np.random.randn(2, 3)."""
    return normal(0.0, 1.0, size, dtype=dtype)


def multinomial(n, pvals, size=None):
    """Counts of each outcome in `n` draws with probabilities `pvals` (NumPy's), shape
    size + (len(pvals),). float32 probabilities that sum to 1 up to rounding are fine."""
    import numpy as _onp
    from ..ndarray import array
    pvals = pvals.asnumpy() if hasattr(pvals, "asnumpy") else _onp.asarray(pvals)
    pvals = _onp.asarray(pvals, dtype=_onp.float64).reshape(-1)
    total = pvals.sum()
    if len(pvals) and _onp.isclose(total, 1.0, atol=1e-5):
        pvals = pvals / total          # float32 rounding would fail NumPy's sum <= 1 check
    return array(_onp.random.multinomial(n, pvals, size), "int64")


def choice(a, size=None, replace=True, p=None):
    import numpy as _onp
    from ..ndarray import array
    p = p.asnumpy() if hasattr(p, "asnumpy") else p
    return array(_onp.random.choice(a, size, replace, p))


def shuffle(x):
    """Shuffle the first axis of `x` in place."""
    import numpy as _onp
    _onp.random.shuffle(x._data)
