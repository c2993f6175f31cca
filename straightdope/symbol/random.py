"""`sym.random`: random samplers as graph nodes (MXNet's mxnet.symbol.random).

Each function adds one node of a registry op (ops/sampling.py): numbers as parameters
give `_random_X` (one distribution, `shape` samples); Symbols give `_sample_X` (`shape`
samples per element of the parameter arrays), as MXNet's `_random_helper` chooses.
"""
from numbers import Number as _Number

from ..ops import OpError
from .symbol import Symbol, _create


def _op(op_name):
    """A node maker: op(*inputs, name=None, **attributes)."""
    def make(*inputs, name=None, attr=None, **attrs):
        return _create(op_name, list(inputs), attrs, name=name, hint=op_name.lstrip("_"),
                       extra_attrs=attr)
    return make


def _helper(dist, params, shape, dtype, kwargs):
    """_random_<dist> for numbers, _sample_<dist> for Symbols (all of them), as MXNet."""
    shape = () if shape is None else (shape,) if isinstance(shape, int) else tuple(shape)
    if all(isinstance(p, Symbol) for p in params.values()):
        return _op(f"_sample_{dist}")(*params.values(), shape=shape, dtype=dtype, **kwargs)
    if all(isinstance(p, _Number) for p in params.values()):
        return _op(f"_random_{dist}")(**params, shape=shape, dtype=dtype, **kwargs)
    raise OpError(f"random.{dist}: the parameters ({', '.join(params)}) must be all numbers "
                  f"or all Symbols, got {[type(p).__name__ for p in params.values()]}")


def _drop_ctx(kwargs):
    kwargs.pop("ctx", None)          # one device here
    kwargs.pop("out", None)
    return kwargs


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Samples of U(low, high)."""
    return _helper("uniform", {"low": low, "high": high}, shape, dtype, _drop_ctx(kwargs))


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Samples of N(loc, scale ** 2)."""
    return _helper("normal", {"loc": loc, "scale": scale}, shape, dtype, _drop_ctx(kwargs))


def randn(*shape, loc=0, scale=1, dtype=None, **kwargs):
    """normal(loc, scale, shape): the shape given positionally."""
    return normal(loc, scale, shape, dtype, **kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Samples of Gamma(alpha, scale beta)."""
    return _helper("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, _drop_ctx(kwargs))


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Samples of the exponential distribution of mean `scale` (rate 1 / scale)."""
    lam = 1.0 / scale
    return _helper("exponential", {"lam": lam}, shape, dtype, _drop_ctx(kwargs))


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    return _helper("poisson", {"lam": lam}, shape, dtype, _drop_ctx(kwargs))


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Failures before the k-th success of trials succeeding with probability p."""
    return _helper("negative_binomial", {"k": k, "p": p}, shape, dtype, _drop_ctx(kwargs))


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Negative binomial of mean mu and dispersion alpha."""
    return _helper("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape,
                   dtype, _drop_ctx(kwargs))


def _like(dist, data, params, kwargs):
    if data is None:
        raise OpError(f"random.{dist}_like: needs `data`, the Symbol whose shape it takes")
    return _op(f"_random_{dist}_like")(data, **params, **_drop_ctx(kwargs))


def uniform_like(data=None, low=0, high=1, **kwargs):
    return _like("uniform", data, {"low": low, "high": high}, kwargs)


def normal_like(data=None, loc=0, scale=1, **kwargs):
    return _like("normal", data, {"loc": loc, "scale": scale}, kwargs)


def gamma_like(data=None, alpha=1, beta=1, **kwargs):
    return _like("gamma", data, {"alpha": alpha, "beta": beta}, kwargs)


def exponential_like(data=None, lam=1, **kwargs):
    return _like("exponential", data, {"lam": lam}, kwargs)


def poisson_like(data=None, lam=1, **kwargs):
    return _like("poisson", data, {"lam": lam}, kwargs)


def negative_binomial_like(data=None, k=1, p=1, **kwargs):
    return _like("negative_binomial", data, {"k": k, "p": p}, kwargs)


def generalized_negative_binomial_like(data=None, mu=1, alpha=1, **kwargs):
    return _like("generalized_negative_binomial", data, {"mu": mu, "alpha": alpha}, kwargs)


def randint(low, high, shape=None, dtype="int32", **kwargs):
    shape = () if shape is None else (shape,) if isinstance(shape, int) else tuple(shape)
    return _op("_random_randint")(low=low, high=high, shape=shape, dtype=dtype,
                                  **_drop_ctx(kwargs))


def multinomial(data, shape=(), get_prob=False, dtype="int32", **kwargs):
    """Category draws from the probabilities in data's last axis (with get_prob, also
    their log-probabilities)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _op("_sample_multinomial")(data, shape=shape, get_prob=get_prob, dtype=dtype,
                                      **_drop_ctx(kwargs))


def shuffle(data, **kwargs):
    """data's rows (first axis) in a random order."""
    return _op("_shuffle")(data, **_drop_ctx(kwargs))
