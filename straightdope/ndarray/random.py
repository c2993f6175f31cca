"""Random arrays. They draw from NumPy's global generator, which
`straightdope.random.seed(n)` seeds (and so do Dropout and the initializers)."""
import functools
import inspect
import numbers

import numpy as _np

from ..context import check_context
from ..ops import OpError


def _make(values, dtype, ctx, out=None):
    from .ndarray import NDArray
    check_context(ctx)
    if out is not None:                 # fill `out`, in its own dtype
        out._data[...] = values
        return out
    return NDArray(_np.asarray(values, dtype=_np.dtype(dtype or _np.float32)), ctx)


def _size(shape, out=None):
    if out is not None:
        return out.shape
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _value(x):
    """A parameter given as a number or as an array (per-sample parameters)."""
    return x.asnumpy() if hasattr(x, "asnumpy") else x


def _errors_at_read(function):
    """A bad argument (scale < 0) raises an MXNetError naming the draw, as in MXNet: at
    once under NaiveEngine; under the threaded engine the array comes back and reading it
    (or waitall) raises. As in MXNet, whose random ops all write one generator state, a
    failed draw fails the draws after it with the same error until that error has been
    raised. The draws themselves run in the front end, so NumPy's generator is used in
    program order on both engines."""
    signature = inspect.signature(function)
    name = f"random.{function.__name__}"

    @functools.wraps(function)
    def draw(*args, **kwargs):
        from .. import engine
        failed = engine.failed_generator()
        if failed is None:
            try:
                return function(*args, **kwargs)
            except ValueError as err:
                error = OpError(f"{name}: {err}")
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        if failed is None and (engine.engine_type() == engine.NAIVE
                               or call.arguments.get("out") is not None):
            raise error from None
        shape = _size(call.arguments.get("shape", (1,)))
        dtype = call.arguments.get("dtype") or _np.float32
        return engine.deferred_failure(error if failed is None else None, name, shape, dtype,
                                       call.arguments.get("ctx"), after=failed)
    return draw


@_errors_at_read
def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U(low, high); `low`/`high` may be arrays (one draw per element then)."""
    low, high = _value(low), _value(high)
    if _np.ndim(low) or _np.ndim(high):
        shape = _np.shape(low) + (tuple(_size(shape)) if shape != (1,) else ())
        low = _np.reshape(low, _np.shape(low) + (1,) * (len(shape) - _np.ndim(low)))
        high = _np.reshape(high, low.shape)
    return _make(_np.random.uniform(low, high, _size(shape, out)), dtype, ctx, out)


@_errors_at_read
def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2); `loc`/`scale` may be arrays (one draw per element)."""
    loc, scale = _value(loc), _value(scale)
    if _np.ndim(loc) or _np.ndim(scale):
        shape = _np.shape(loc) + (tuple(_size(shape)) if shape != (1,) else ())
        loc = _np.reshape(loc, _np.shape(loc) + (1,) * (len(shape) - _np.ndim(loc)))
        scale = _np.reshape(scale, loc.shape)
    return _make(_np.random.normal(loc, scale, _size(shape, out)), dtype, ctx, out)


@_errors_at_read
def exponential(scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    return _make(_np.random.exponential(_value(scale), _size(shape, out)), dtype, ctx, out)


@_errors_at_read
def gamma(alpha=1.0, beta=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    return _make(_np.random.gamma(_value(alpha), _value(beta), _size(shape, out)), dtype, ctx,
                 out)


@_errors_at_read
def poisson(lam=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    return _make(_np.random.poisson(_value(lam), _size(shape, out)), dtype, ctx, out)


@_errors_at_read
def negative_binomial(k=1, p=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Failures before the k-th success of trials that succeed with probability p."""
    return _make(_np.random.negative_binomial(_value(k), _value(p), _size(shape, out)), dtype,
                 ctx, out)


@_errors_at_read
def generalized_negative_binomial(mu=1, alpha=1, shape=(1,), dtype=None, ctx=None, out=None,
                                  **kwargs):
    """Negative binomial of mean mu and dispersion alpha, drawn as MXNet does: a Poisson
    whose rate is Gamma(1 / alpha, mu * alpha) (Poisson(mu) when alpha is 0)."""
    mu, alpha, size = _value(mu), _value(alpha), _size(shape, out)
    if _np.any(_np.asarray(alpha) < 0) or _np.any(_np.asarray(mu) < 0):
        raise ValueError(f"mu and alpha must be >= 0, got mu={mu}, alpha={alpha}")
    rate = mu if _np.all(_np.asarray(alpha) == 0) else _np.random.gamma(
        1.0 / _np.asarray(alpha, float), _np.asarray(mu, float) * alpha, size)
    return _make(_np.random.poisson(rate, size), dtype, ctx, out)


def multinomial(data, shape=(), get_prob=False, dtype="int32", **kwargs):
    """Draw category indices from the probabilities in the last axis of `data`."""
    probs = _value(data)
    count = int(_np.prod(_size(shape))) if shape != () else 1
    flat = probs.reshape(-1, probs.shape[-1]).astype(_np.float64)
    draws = _np.stack([_np.random.choice(flat.shape[1], size=count, p=p / p.sum())
                       for p in flat])
    draws = draws.reshape(probs.shape[:-1] + (tuple(_size(shape)) if shape != () else ()))
    return _make(draws, dtype, None)


def _sample(draw, params, shape, dtype):
    """MXNet's sample_* ops: parameters are arrays of one shape; each element draws
    `shape` samples, so the result has the parameters' shape + `shape`; float32 unless
    dtype says otherwise."""
    params = [_np.asarray(_value(p)) for p in params]
    extra = () if shape is None else _size(shape)
    base = params[0].shape
    if any(p.shape != base for p in params):
        raise OpError(f"sample: the parameters must have one shape, got "
                      f"{[p.shape for p in params]}")
    spread = [p.reshape(base + (1,) * len(extra)) for p in params]
    return _make(draw(*spread, base + extra), dtype, None)


@_errors_at_read
def sample_normal(mu, sigma, shape=None, dtype=None, **kwargs):
    """Normal samples: `shape` draws for each pair of mu, sigma elements."""
    return _sample(_np.random.normal, (mu, sigma), shape, dtype)


@_errors_at_read
def sample_uniform(low, high, shape=None, dtype=None, **kwargs):
    """Uniform samples: `shape` draws for each pair of low, high elements."""
    return _sample(_np.random.uniform, (low, high), shape, dtype)


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None):
    return normal(loc, scale, shape, dtype, ctx)


def randint(low, high, shape=(1,), dtype="int32", ctx=None, **kwargs):
    return _make(_np.random.randint(low, high, _size(shape)), dtype, ctx)


def shuffle(data, **kwargs):
    from .ndarray import NDArray
    return NDArray(_np.random.permutation(data.asnumpy()))


def seed(seed_state, ctx="all"):
    _np.random.seed(seed_state)
