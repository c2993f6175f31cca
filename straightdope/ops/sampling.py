"""Random sampling ops with a gradient: `_sample_multinomial` (nd.random.multinomial).

MXNet draws category k of each row of probabilities `data` by inverse transform: the
first k whose running sum reaches a uniform draw in [0, 1) (the rows are not
normalised). With get_prob it also returns log(data[k]) of each draw, whose gradient
(REINFORCE-style) flows back to `data`.
"""
import numpy as np

from .registry import (Attr, Bool, Choice, Float, Int, OpError, Shape, alias, register,
                       scipy_special)

_EXACT_UP_TO = {"uint8": 255, "int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1,
                "float16": 2 ** 11, "float32": 2 ** 24, "float64": 2 ** 53}


def _multinomial_shape(attrs, s):
    data = s[0]
    if data is None:
        return s, [None] * (2 if attrs["get_prob"] else 1)
    if len(data) == 0:
        raise OpError("random.multinomial: data must hold probabilities in its last axis, "
                      "got a 0-d array")
    classes = data[-1]
    if classes is not None and classes - 1 > _EXACT_UP_TO[attrs["dtype"]]:
        raise OpError(f"random.multinomial: {classes} categories do not fit in dtype "
                      f"{attrs['dtype']} (its integers are exact up to "
                      f"{_EXACT_UP_TO[attrs['dtype']]}): choose a wider dtype")
    out = tuple(data[:-1]) + tuple(attrs["shape"])
    out = out if out else (1,)           # MXNet: one draw of a 1-D distribution is (1,)
    return s, [out] * (2 if attrs["get_prob"] else 1)


def _multinomial_forward(attrs, data):
    _, shapes = _multinomial_shape(attrs, [data.shape])
    rows = data.reshape(-1, data.shape[-1]).astype(np.float64)
    draws = max(int(np.prod(attrs["shape"])), 1)
    uniform = np.random.random_sample((rows.shape[0], draws))
    cumulative = np.cumsum(rows, axis=1)
    picks = np.stack([np.searchsorted(c, u, side="left") for c, u in zip(cumulative, uniform)])
    picks = np.minimum(picks, rows.shape[1] - 1)     # draws past a row summing below 1
    samples = picks.reshape(shapes[0]).astype(attrs["dtype"])
    if not attrs["get_prob"]:
        return samples
    with np.errstate(divide="ignore"):
        log_prob = np.log(np.take_along_axis(rows, picks, axis=1))
    return samples, log_prob.reshape(shapes[0]).astype(data.dtype)


def _multinomial_grad_forward(attrs, og, data, samples):
    """d data[row, k] = sum over the row's draws of k of og / data[row, k]."""
    rows = data.reshape(-1, data.shape[-1]).astype(np.float64)
    picks = samples.reshape(rows.shape[0], -1).astype(np.int64)
    grad = np.zeros_like(rows)
    weights = og.reshape(picks.shape) / np.take_along_axis(rows, picks, axis=1)
    for r in range(rows.shape[0]):
        np.add.at(grad[r], picks[r], weights[r])
    return grad.reshape(data.shape).astype(data.dtype)


_ATTRS = {"shape": Shape(()), "get_prob": Bool(),
          "dtype": Choice("int32", "uint8", "int64", "float16", "float32", "float64")}
register("_sample_multinomial", attrs=dict(_ATTRS), forward=_multinomial_forward,
         infer_shape=_multinomial_shape, is_random=True, placement="host",
         dtype_rule="attr", infer_dtype=lambda attrs, d: [attrs["dtype"]] + (
             [d[0]] if attrs["get_prob"] else []),
         num_outputs=lambda attrs: 2 if attrs["get_prob"] else 1,
         output_names=("output", "prob"),
         gradient=lambda F, a, i, o, og: [
             None if len(og) < 2 or og[1] is None else
             F._sample_multinomial_grad(og[1], i[0], o[0], **a)],
         doc="random.multinomial(data, shape=(), get_prob=False, dtype='int32'): draws "
             "of category indices from the probabilities in data's last axis; with "
             "get_prob also the log-probability of each draw (it has a gradient).")
register("_sample_multinomial_grad", inputs=("out_grad", "data", "samples"),
         attrs=dict(_ATTRS), forward=_multinomial_grad_forward, placement="host",
         index_inputs=("samples",), infer_shape=lambda attrs, s: (s, [s[1]]),
         doc="Gradient of multinomial's log-probabilities with respect to data.")


# ---------------------------------------------------------------- samplers
# MXNet's random ops, as nodes of a graph (sym.random.*): `_random_X` draws `shape`
# samples of one distribution (its parameters are attributes), `_random_X_like` as many
# as `data` has elements, `_sample_X` `shape` samples per element of its parameter arrays
# (inputs; the output is their shape + `shape`). They draw from NumPy's generator, which
# `mx.random.seed` seeds, so a seeded executor draws the same as before. Their gradient is
# zero, as MXNet's (the draws do not depend on the parameters differentiably here).
def _gen_neg_binomial(mu, alpha, size):
    """A Poisson whose rate is Gamma(1 / alpha, mu * alpha) (Poisson(mu) at alpha 0)."""
    mu, alpha = np.asarray(mu, float), np.asarray(alpha, float)
    safe = np.where(alpha > 0, alpha, 1.0)
    rate = np.where(alpha > 0, np.random.gamma(1.0 / safe, mu * safe, size),
                    np.broadcast_to(mu, size))
    return np.random.poisson(rate, size)


# name: (parameters with their defaults, draw(*parameters, size))
DISTRIBUTIONS = {
    "uniform": ((("low", 0.0), ("high", 1.0)), np.random.uniform),
    "normal": ((("loc", 0.0), ("scale", 1.0)), np.random.normal),
    "gamma": ((("alpha", 1.0), ("beta", 1.0)), np.random.gamma),
    "exponential": ((("lam", 1.0),), lambda lam, size: np.random.exponential(1.0 / lam, size)),
    "poisson": ((("lam", 1.0),), np.random.poisson),
    "negative_binomial": ((("k", 1), ("p", 1.0)), np.random.negative_binomial),
    "generalized_negative_binomial": ((("mu", 1.0), ("alpha", 1.0)), _gen_neg_binomial),
}
# _sample_X names the parameters as MXNet's sample ops do
SAMPLE_INPUTS = {"normal": ("mu", "sigma")}
_DTYPE = Attr("str", None, choices=("float16", "float32", "float64"))


def _checked_draw(op_name, draw, params, size):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return draw(*params, size=size)
    except ValueError as err:            # NumPy's word for a bad parameter (scale < 0)
        raise OpError(f"{op_name}: {err}") from None


def _random_entry(dist, params, draw):
    name = f"_random_{dist}"
    param_attrs = {p: (Int(d) if isinstance(d, int) else Float(d)) for p, d in params}

    def forward(attrs):
        values = [attrs[p] for p, _ in params]
        out = _checked_draw(name, draw, values, attrs["shape"])
        return np.asarray(out).astype(attrs["dtype"] or "float32")

    register(name, inputs=(), placement="host", is_random=True,
             attrs=dict(param_attrs, shape=Shape(()), dtype=_DTYPE, ctx=Attr("str", "")),
             forward=forward, infer_shape=lambda attrs, s: (s, [tuple(attrs["shape"])]),
             infer_dtype=lambda attrs, d: attrs["dtype"] or "float32",
             gradient=lambda F, a, i, o, og: [],
             doc=f"random.{dist}({', '.join(p for p, _ in params)}, shape, dtype): samples "
                 f"of one {dist} distribution.")

    def like_forward(attrs, data):
        values = [attrs[p] for p, _ in params]
        return np.asarray(_checked_draw(name + "_like", draw, values, data.shape)
                          ).astype(data.dtype)

    register(name + "_like", placement="host", is_random=True, attrs=dict(param_attrs),
             forward=like_forward, infer_shape=lambda attrs, s: (s, [s[0]]),
             gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
             doc=f"random.{dist}_like(data, ...): {dist} samples shaped like data.")


def _sample_shape(attrs, in_shapes):
    known = [s for s in in_shapes if s is not None]
    if not known:
        return in_shapes, [None]
    if any(tuple(s) != tuple(known[0]) for s in known):
        raise OpError(f"the parameter arrays must have one shape, got {in_shapes}")
    base = tuple(known[0])
    return [base] * len(in_shapes), [base + tuple(attrs["shape"])]


def _sample_entry(dist, params, draw):
    name = f"_sample_{dist}"
    inputs = SAMPLE_INPUTS.get(dist, tuple(p for p, _ in params))

    def forward(attrs, *arrays):
        extra = tuple(attrs["shape"])
        base = arrays[0].shape
        spread = [a.astype(np.float64).reshape(base + (1,) * len(extra)) for a in arrays]
        if dist == "negative_binomial":
            spread[0] = spread[0].astype(np.int64)
        out = _checked_draw(name, draw, spread, base + extra)
        return np.asarray(out).astype(attrs["dtype"] or "float32")

    register(name, inputs=inputs, placement="host", is_random=True,
             attrs={"shape": Shape(()), "dtype": _DTYPE}, forward=forward,
             infer_shape=_sample_shape, infer_dtype=lambda attrs, d: attrs["dtype"] or "float32",
             gradient=lambda F, a, i, o, og: [F.zeros_like(x) for x in i],
             doc=f"sample_{dist}({', '.join(inputs)}, shape=()): `shape` {dist} samples "
                 f"per element of the parameter arrays.")


for _dist, (_params, _draw) in DISTRIBUTIONS.items():
    _random_entry(_dist, _params, _draw)
    _sample_entry(_dist, _params, _draw)


def _randint_forward(attrs):
    low, high = attrs["low"], attrs["high"]
    if low >= high:
        raise OpError(f"_random_randint: low must be below high, got [{low}, {high})")
    return np.random.randint(low, high, attrs["shape"]).astype(attrs["dtype"])


register("_random_randint", inputs=(), placement="host", is_random=True,
         attrs={"low": Int(required=True), "high": Int(required=True), "shape": Shape(()),
                "dtype": Choice("int32", "int64"), "ctx": Attr("str", "")},
         forward=_randint_forward, dtype_rule="attr",
         infer_shape=lambda attrs, s: (s, [tuple(attrs["shape"])]),
         gradient=lambda F, a, i, o, og: [],
         doc="random.randint(low, high, shape, dtype='int32'): integers in [low, high).")


def _shuffle_forward(attrs, data):
    return data[np.random.permutation(data.shape[0])] if data.ndim else data.copy()


register("_shuffle", placement="host", is_random=True, forward=_shuffle_forward,
         infer_shape=lambda attrs, s: (s, [s[0]]),
         doc="random.shuffle(data): data's rows (first axis) in a random order.")


# ------------------------------------------------------------- densities
# random_pdf_X(sample, *parameters, is_log=False): the density (or mass) of each sample,
# MXNet's pdf ops. The parameters have the leading shape of `sample`, whose further axes
# are the draws of each distribution (dirichlet: its last axis is the K categories, as
# alpha's). Gradients to the sample and the parameters come from d log p, summed over
# the draws for a parameter. Discrete samples (poisson, negative binomials) get none.
def _digamma(x):
    return scipy_special().digamma(x)


def _lgamma(x):
    return scipy_special().gammaln(x)


def _nbinom_logp(x, k, p):
    return _lgamma(x + k) - _lgamma(k) - _lgamma(x + 1) + k * np.log(p) + x * np.log1p(-p)


def _nbinom_dk_dp(x, k, p):
    return _digamma(x + k) - _digamma(k) + np.log(p), k / p - x / (1 - p)


def _gnb_grads(x, mu, alpha):
    k, p = 1 / alpha, 1 / (1 + mu * alpha)
    dk, dp = _nbinom_dk_dp(x, k, p)
    return [np.zeros_like(x), dp * -alpha * p * p, dk * -k * k + dp * -mu * p * p]


# name: (parameters, log p(x, *params), [d log p / d x, d / d params...])
PDFS = {
    "normal": (("mu", "sigma"),
               lambda x, m, s: -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi),
               lambda x, m, s: [-(x - m) / s ** 2, (x - m) / s ** 2,
                                (x - m) ** 2 / s ** 3 - 1 / s]),
    "uniform": (("low", "high"),
                lambda x, lo, hi: np.where((x >= lo) & (x <= hi), -np.log(hi - lo), -np.inf),
                lambda x, lo, hi: [np.zeros_like(x), 1 / (hi - lo) + 0 * x,
                                   -1 / (hi - lo) + 0 * x]),
    "gamma": (("alpha", "beta"),            # beta: the rate
              lambda x, a, b: a * np.log(b) + (a - 1) * np.log(x) - b * x - _lgamma(a),
              lambda x, a, b: [(a - 1) / x - b, np.log(b) + np.log(x) - _digamma(a),
                               a / b - x]),
    "exponential": (("lam",), lambda x, lam: np.log(lam) - lam * x,
                    lambda x, lam: [-lam + 0 * x, 1 / lam - x]),
    "poisson": (("lam",), lambda x, lam: x * np.log(lam) - lam - _lgamma(x + 1),
                lambda x, lam: [np.zeros_like(x), x / lam - 1]),
    "negative_binomial": (("k", "p"), _nbinom_logp,
                          lambda x, k, p: [np.zeros_like(x), *_nbinom_dk_dp(x, k, p)]),
    "generalized_negative_binomial": (
        ("mu", "alpha"),
        lambda x, mu, alpha: _nbinom_logp(x, 1 / alpha, 1 / (1 + mu * alpha)), _gnb_grads),
    "dirichlet": (("alpha",),
                  lambda x, a: (_lgamma(a.sum(-1)) - _lgamma(a).sum(-1)
                                + ((a - 1) * np.log(x)).sum(-1)),
                  lambda x, a: [(a - 1) / x, _digamma(a.sum(-1, keepdims=True))
                                - _digamma(a) + np.log(x)]),
}


def _pdf_spread(dist, sample, params):
    """The parameters reshaped to broadcast against the sample's draws (float64)."""
    x = sample.astype(np.float64)
    lead = params[0].ndim - (1 if dist == "dirichlet" else 0)
    extra = x.ndim - params[0].ndim
    if dist == "dirichlet":
        return x, [p.astype(np.float64).reshape(p.shape[:lead] + (1,) * extra + p.shape[lead:])
                   for p in params]
    return x, [p.astype(np.float64).reshape(p.shape + (1,) * extra) for p in params]


def _pdf_shape(dist):
    def infer(attrs, in_shapes):
        sample, params = in_shapes[0], in_shapes[1:]
        if sample is None:
            return in_shapes, [None]
        known = [tuple(p) for p in params if p is not None]
        if known:
            lead = known[0][:-1] if dist == "dirichlet" else known[0]
            if tuple(sample[:len(lead)]) != lead or any(p != known[0] for p in known) or (
                    dist == "dirichlet" and sample[-1] != known[0][-1]):
                raise OpError(f"random_pdf_{dist}: the parameters {[tuple(p) for p in params]} "
                              f"must share one shape, the leading axes of the sample "
                              f"{tuple(sample)}")
        out = tuple(sample[:-1]) if dist == "dirichlet" else tuple(sample)
        return in_shapes, [out]
    return infer


def _pdf_entry(dist, names, logp, dlogp):
    def forward(attrs, sample, *params):
        x, spread = _pdf_spread(dist, sample, params)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = logp(x, *spread)
        return (out if attrs["is_log"] else np.exp(out)).astype(sample.dtype)

    def grad_forward(attrs, og, sample, *params):
        which = attrs["wrt"]
        x, spread = _pdf_spread(dist, sample, params)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = dlogp(x, *spread)[which]
            scale = og.astype(np.float64)
            if not attrs["is_log"]:
                scale = scale * np.exp(logp(x, *spread))
        if dist == "dirichlet":
            scale = scale[..., None]
        g = np.broadcast_to(d * scale, x.shape)
        if which == 0:
            return g.astype(sample.dtype)
        target = params[which - 1]
        lead = target.ndim - (1 if dist == "dirichlet" else 0)
        axes = tuple(range(lead, x.ndim - (1 if dist == "dirichlet" else 0)))
        return g.sum(axis=axes).reshape(target.shape).astype(target.dtype)

    name = f"_random_pdf_{dist}"
    register(name, inputs=("sample",) + names, placement="host",
             attrs={"is_log": Bool(False)}, forward=forward, infer_shape=_pdf_shape(dist),
             gradient=lambda F, a, i, o, og: [
                 F._random_pdf_grad(og[0], *i, dist=dist, wrt=k, **a) for k in range(len(i))],
             doc=f"random_pdf_{dist}(sample, {', '.join(names)}, is_log=False): the "
                 f"{dist} density of each sample (its log with is_log).")
    alias(f"random_pdf_{dist}", name)        # MXNet's public name
    _PDF_GRADS[dist] = grad_forward


_PDF_GRADS = {}
for _dist, (_names, _logp, _dlogp) in PDFS.items():
    _pdf_entry(_dist, _names, _logp, _dlogp)

register("_random_pdf_grad", variadic=True, placement="host",
         attrs={"dist": Choice(*PDFS), "wrt": Int(0), "is_log": Bool(False)},
         forward=lambda attrs, og, *ins: _PDF_GRADS[attrs["dist"]](attrs, og, *ins),
         infer_shape=lambda attrs, s: (s, [s[1 + attrs["wrt"]]]),
         doc="Gradient of random_pdf_<dist> for its input `wrt` (0: the sample).")


def _unique_zipfian_shape(attrs, s):
    shape = tuple(attrs["shape"])
    if len(shape) != 2:
        raise OpError(f"_sample_unique_zipfian: shape must be (batch size, samples per row), "
                      f"got {shape}")
    if shape[1] > attrs["range_max"]:
        raise OpError(f"_sample_unique_zipfian: cannot draw {shape[1]} distinct classes "
                      f"out of range_max={attrs['range_max']}")
    return s, [shape, shape[:1]]


def _unique_zipfian_forward(attrs):
    """Per row, MXNet's rejection sampler: draw round(exp(u log(range_max))) - 1 with u
    uniform in [0, 1) until `num_sampled` distinct classes came up, in the order they came;
    also how many draws that took. Draws go in chunks (NumPy), their order kept."""
    _unique_zipfian_shape(attrs, [])          # checks the attributes
    batch, num_sampled = attrs["shape"]
    log_range = np.log(attrs["range_max"])
    samples = np.zeros((batch, num_sampled), np.int64)
    tries = np.zeros(batch, np.int64)
    for row in range(batch):
        draws = np.zeros(0, np.int64)
        while True:
            chunk = np.random.random_sample(max(2 * num_sampled, 1024))
            chunk = np.rint(np.exp(chunk * log_range)).astype(np.int64) - 1
            draws = np.concatenate([draws, chunk])
            _, first = np.unique(draws, return_index=True)
            if len(first) >= num_sampled:
                kept = np.sort(first)[:num_sampled]
                break
        samples[row] = draws[kept]
        tries[row] = kept[-1] + 1 if num_sampled else 0
    return samples, tries


register("_sample_unique_zipfian", inputs=(), placement="host", is_random=True,
         attrs={"range_max": Int(required=True, minimum=1), "shape": Shape(())},
         forward=_unique_zipfian_forward, infer_shape=_unique_zipfian_shape,
         num_outputs=2, output_names=("output", "num_tries"), dtype_rule="attr",
         infer_dtype=lambda attrs, d: ["int64", "int64"], gradient=lambda F, a, i, o, og: [],
         doc="_sample_unique_zipfian(range_max, shape=(batch, n)): per row n distinct "
             "classes of [0, range_max) drawn from the log-uniform (Zipfian) distribution, "
             "and how many draws that took.")
