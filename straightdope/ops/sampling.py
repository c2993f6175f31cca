"""Random sampling ops with a gradient: `_sample_multinomial` (nd.random.multinomial).

MXNet draws category k of each row of probabilities `data` by inverse transform: the
first k whose running sum reaches a uniform draw in [0, 1) (the rows are not
normalised). With get_prob it also returns log(data[k]) of each draw, whose gradient
(REINFORCE-style) flows back to `data`.
"""
import numpy as np

from .registry import Bool, Choice, OpError, Shape, register

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
