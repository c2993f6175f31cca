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


def _output_shape(name, signature, call):
    """The shape a draw returns, known before it runs (MXNet's shape inference): `out`'s;
    else the array parameters' shape, followed by `shape` when it was given; else `shape`.
    Array parameters of different shapes are a bad call: an OpError now, on both engines."""
    args = call.arguments
    if args.get("out") is not None:
        return args["out"].shape
    params = list(signature.parameters)[:list(signature.parameters).index("shape")]
    shapes = [tuple(args[p].shape) for p in params if hasattr(args[p], "shape")]
    if any(s != shapes[0] for s in shapes):
        raise OpError(f"{name}: the parameters ({', '.join(params)}) must have one shape, "
                      f"got {shapes}: one draw per element needs arrays of one shape")
    extra = () if args["shape"] is None else _size(args["shape"])
    if not shapes:
        return extra
    return shapes[0] + (extra if args["shape"] != signature.parameters["shape"].default else ())


def _errors_at_read(function):
    """A shape or argument error raises an OpError at the call, as MXNet's shape inference
    does. A bad value (scale < 0) raises an MXNetError naming the draw, as in MXNet: at
    once under NaiveEngine; under the threaded engine the array comes back with its shape
    and reading it (or waitall) raises. As in MXNet, whose random ops all write one
    generator state, a failed draw fails the draws after it with the same error until that
    error has been raised. The draws themselves run in the front end, so NumPy's generator
    is used in program order on both engines."""
    signature = inspect.signature(function)
    name = f"random.{function.__name__}"

    @functools.wraps(function)
    def draw(*args, **kwargs):
        from .. import engine
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        shape = _output_shape(name, signature, call)
        failed = engine.failed_generator()
        if failed is None:
            try:
                return function(*args, **kwargs)
            except ValueError as err:
                error = OpError(f"{name}: {err}")
            if engine.engine_type() == engine.NAIVE or call.arguments.get("out") is not None:
                raise error from None
        dtype = call.arguments.get("dtype") or _np.float32
        return engine.deferred_failure(error if failed is None else None, name, shape, dtype,
                                       call.arguments.get("ctx"), after=failed)
    return draw


def _per_element(a, b, shape):
    """Array parameters draw `shape` samples per element (a number goes with every one):
    the parameters get trailing axes of 1 and the shape becomes theirs + `shape`."""
    if not (_np.ndim(a) or _np.ndim(b)):
        return a, b, shape
    base = _np.broadcast_shapes(_np.shape(a), _np.shape(b))
    shape = base + (tuple(_size(shape)) if shape != (1,) else ())
    spread = base + (1,) * (len(shape) - len(base))
    a, b = (_np.broadcast_to(v, base).reshape(spread) for v in (a, b))
    return a, b, shape


@_errors_at_read
def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U(low, high); `low`/`high` may be arrays (one draw per element then)."""
    low, high, shape = _per_element(_value(low), _value(high), shape)
    return _make(_np.random.uniform(low, high, _size(shape, out)), dtype, ctx, out)


@_errors_at_read
def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2); `loc`/`scale` may be arrays (one draw per element)."""
    loc, scale, shape = _per_element(_value(loc), _value(scale), shape)
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


def multinomial(data, shape=(), get_prob=False, out=None, dtype="int32", **kwargs):
    """Draw category indices from the probabilities in the last axis of `data` (MXNet's
    `_sample_multinomial`); with get_prob, [draws, their log-probabilities] (a list, as
    MXNet), the second with a gradient to `data`."""
    from . import _internal
    result = _internal._sample_multinomial(data, shape=_size(shape) if shape != () else (),
                                           get_prob=get_prob, dtype=dtype)
    return list(result) if get_prob else result


def _sample(draw, params, shape, dtype):
    """MXNet's sample_* ops: parameters are arrays of one shape; each element draws
    `shape` samples, so the result has the parameters' shape + `shape`; float32 unless
    dtype says otherwise."""
    params = [_np.asarray(_value(p)) for p in params]
    extra = () if shape is None else _size(shape)
    base = params[0].shape              # one shape: the wrapper checked
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


def _like(dist, defaults):
    def draw(data=None, out=None, **params):
        """`dist` samples shaped like data (MXNet's _random_<dist>_like)."""
        from . import _internal
        params = {k: _value(params.get(k, v)) for k, v in defaults.items()}
        result = getattr(_internal, f"_random_{dist}_like")(data, **params)
        if out is not None:
            out[:] = result
            return out
        return result
    draw.__name__ = f"{dist}_like"
    return draw


uniform_like = _like("uniform", {"low": 0.0, "high": 1.0})
normal_like = _like("normal", {"loc": 0.0, "scale": 1.0})
gamma_like = _like("gamma", {"alpha": 1.0, "beta": 1.0})
exponential_like = _like("exponential", {"lam": 1.0})
poisson_like = _like("poisson", {"lam": 1.0})
negative_binomial_like = _like("negative_binomial", {"k": 1, "p": 1.0})
generalized_negative_binomial_like = _like("generalized_negative_binomial",
                                           {"mu": 1.0, "alpha": 1.0})
