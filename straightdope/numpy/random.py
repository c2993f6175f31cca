"""`np.random`: NumPy's argument names (size=), straightdope arrays.

The distributions are one registry op (`_npi_sample`, ops/np_ops.py): array parameters
are traced by hybridize() and, for the reparameterizable distributions (normal,
uniform, lognormal, exponential, rayleigh, weibull, pareto, logistic, gumbel), get
gradients."""
import contextvars as _contextvars
import numbers as _numbers

import numpy as _onp

from .. import ndarray as _nd
from .. import symbol as _sym
from ..context import check_context as _check_context


# True while sym.np.random (numpy/_symbol.py) calls these: a graph node is added even
# when every parameter is a number (there is no Symbol argument to tell)
_TRACING = _contextvars.ContextVar("tracing", default=False)


def _sample(distribution, params, size, dtype, ctx=None, device=None, batch_shape=None):
    if ctx is not None or device is not None:
        _check_context(ctx or device)
    arrays = [p for p in params if isinstance(p, (_nd.NDArray, _sym.Symbol))]
    scalars = []
    for p in params:
        if isinstance(p, (_nd.NDArray, _sym.Symbol)):
            scalars.append(None)
        elif isinstance(p, _numbers.Real):
            scalars.append(float(p))
        else:                                   # a list or NumPy array of parameters
            raise TypeError(f"np.random.{distribution}: parameters must be numbers or "
                            f"arrays, got {type(p).__name__}; wrap it in np.array(...)")
    if isinstance(size, (int, _onp.integer)):
        size = (int(size),)
    traced = _TRACING.get() or any(isinstance(a, _sym.Symbol) for a in arrays)
    F = _sym if traced else _nd
    return F._npi_sample(*arrays, distribution=distribution, scalars=repr(tuple(scalars)),
                         size=None if size is None else tuple(size),
                         dtype="float32" if dtype is None else _onp.dtype(dtype).name,
                         num_args=len(arrays), batch_shape=batch_shape)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("uniform", (low, high), size, dtype, ctx, device)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("normal", (loc, scale), size, dtype, ctx, device)


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("lognormal", (mean, sigma), size, dtype, ctx, device)


def logistic(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("logistic", (loc, scale), size, dtype, ctx, device)


def gumbel(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("gumbel", (loc, scale), size, dtype, ctx, device)


def power(a, size=None, dtype=None, ctx=None, device=None):
    """Samples in [0, 1] with density a * x**(a - 1) (a > 0)."""
    return _sample("power", (a,), size, dtype, ctx, device)


def exponential(scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("exponential", (scale,), size, dtype, ctx, device)


def rayleigh(scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("rayleigh", (scale,), size, dtype, ctx, device)


def weibull(a, size=None, dtype=None, ctx=None, device=None):
    return _sample("weibull", (a,), size, dtype, ctx, device)


def pareto(a, size=None, dtype=None, ctx=None, device=None):
    return _sample("pareto", (a,), size, dtype, ctx, device)


def gamma(shape, scale=1.0, size=None, dtype=None, ctx=None, device=None):
    return _sample("gamma", (shape, scale), size, dtype, ctx, device)


def beta(a, b, size=None, dtype=None, ctx=None, device=None):
    return _sample("beta", (a, b), size, dtype, ctx, device)


def chisquare(df, size=None, dtype=None, ctx=None, device=None):
    return _sample("chisquare", (df,), size, dtype, ctx, device)


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None):
    """Normal samples of shape size + broadcast(mean, cov's rows): mean (..., n), cov
    (..., n, n) symmetric positive-definite. No gradient, as in MXNet."""
    if check_valid is not None or tol is not None:
        raise NotImplementedError("np.random.multivariate_normal: check_valid= and tol= "
                                  "are not supported (as in MXNet)")
    if isinstance(size, (int, _onp.integer)):
        size = (int(size),)
    traced = _TRACING.get() or any(isinstance(a, _sym.Symbol) for a in (mean, cov))
    return (_sym if traced else _nd)._npi_multivariate_normal(
        mean, cov, size=None if size is None else tuple(size))


def randint(low, high=None, size=None, dtype=None, ctx=None, device=None):
    """Integers in [low, high) (or [0, low)), drawn in `dtype` (int64 by default)."""
    if high is None:
        low, high = 0, low
    if ctx is not None or device is not None:
        _check_context(ctx or device)
    dtype = _onp.dtype(dtype or "int64")
    return _nd.array(_onp.random.randint(low, high, size, dtype=dtype), dtype=dtype)


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
    """Samples of a's elements (of range(a) for an int a), with probabilities p; traced
    when a or p is a Symbol (`_npi_choice`). No gradient."""
    if isinstance(size, (int, _onp.integer)):
        size = (int(size),)
    traced = _TRACING.get() or any(isinstance(v, _sym.Symbol) for v in (a, p))
    if not traced:
        from ..ops.np_ops import choice_probabilities
        p = choice_probabilities(p.asnumpy() if hasattr(p, "asnumpy") else p)
        a = a.asnumpy() if hasattr(a, "asnumpy") else a
        picked = _onp.asarray(_onp.random.choice(a, size, replace, p))
        return _nd.array(picked, dtype=picked.dtype)
    if not isinstance(a, _sym.Symbol) and _onp.ndim(a) == 0:
        a = _sym.arange(int(a), dtype="int64")
    if not all(isinstance(v, _sym.Symbol) for v in (a, p) if v is not None):
        raise NotImplementedError("np.random.choice while tracing: give a as an int or a "
                                  "Symbol, and p as a Symbol (inputs of the block)")
    inputs = [a] if p is None else [a, p]
    return _sym._npi_choice(*inputs, size=None if size is None else tuple(size),
                            replace=bool(replace), weighted=p is not None).as_np_ndarray()


def shuffle(x):
    """Shuffle the first axis of `x` in place."""
    import numpy as _onp
    _onp.random.shuffle(x._data)
