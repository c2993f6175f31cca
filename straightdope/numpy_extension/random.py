"""`npx.random`: MXNet 2.0's samplers beyond NumPy's: bernoulli, and the `_n` forms that
draw `batch_shape` samples of each parameter. One registry op with np.random's
(`_npi_sample`, ops/np_ops.py), so they trace and the `_n` ones have gradients."""
import numpy as _onp

from .. import numpy as _np
from ..numpy import random as _random


def seed(seed, ctx="all"):
    """Seed the generator all samplers use (mx.random.seed)."""
    _random.seed(seed)


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, device=None):
    """1 with probability `prob` (or sigmoid(`logit`)), else 0; exactly one of the two.
    Probabilities outside [0, 1] are refused (a ValueError)."""
    if (prob is None) == (logit is None):
        raise ValueError("npx.random.bernoulli: give exactly one of prob and logit, got "
                         f"{'both' if prob is not None else 'neither'}")
    if logit is not None:
        prob = (_np._world(logit).sigmoid(logit) if hasattr(logit, "shape")
                else 1.0 / (1.0 + _onp.exp(-logit)))
    return _random._sample("bernoulli", (prob,), size, dtype, ctx, device)


def _batch(batch_shape):
    if batch_shape is None:
        return ()
    return (int(batch_shape),) if isinstance(batch_shape, int) else tuple(batch_shape)


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None, device=None):
    """Uniform samples of shape batch_shape + the parameters' broadcast shape."""
    return _random._sample("uniform", (low, high), None, dtype, ctx, device,
                           batch_shape=_batch(batch_shape))


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None, device=None):
    """Normal samples of shape batch_shape + the parameters' broadcast shape."""
    return _random._sample("normal", (loc, scale), None, dtype, ctx, device,
                           batch_shape=_batch(batch_shape))
