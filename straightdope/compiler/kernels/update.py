"""Optimizer updates as single in-place loops (MXNet's `sgd_update`, `adam_update`...).

Written with NumPy, one SGD step on a weight is five passes over memory and four
temporary arrays (`rescale * grad`, `(1 - lr * wd) * w`, `lr * g`, their difference).
Here it is one pass and no temporaries: each element is read, updated and written
back once. `straightdope.optimizer` calls these for C-contiguous float arrays and
keeps its NumPy formulas for everything else (and as the readable definition).

All arrays are flat 1-D views; `clip < 0` means "no clipping".
"""
import numpy as np
from numba import njit

from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False, error_model="numpy")


@njit(**JIT)
def _clipped(g, clip):
    if clip >= 0.0:
        return min(max(g, -clip), clip)
    return g


@njit(**JIT)
def sgd(w, grad, lr, wd, rescale, clip):
    """w = (1 - lr*wd) * w - lr * clip(rescale * grad)

    The arithmetic is in the weight's dtype, as MXNet's kernels do it: float32
    weights take float32 factors, so the loop runs twice as many lanes per
    instruction as in float64. Without clipping, lr * rescale is one factor."""
    decay = w.dtype.type(1.0 - lr * wd)
    if clip < 0.0:
        step = w.dtype.type(lr * rescale)
        for i in range(w.size):
            w[i] = decay * w[i] - step * grad[i]
        return
    lr_, rescale_, clip_ = w.dtype.type(lr), w.dtype.type(rescale), w.dtype.type(clip)
    for i in range(w.size):
        w[i] = decay * w[i] - lr_ * min(max(rescale_ * grad[i], -clip_), clip_)


@njit(**JIT)
def sgd_momentum(w, grad, mom, lr, wd, momentum, rescale, clip):
    """mom = momentum * mom - lr*wd * w - lr * clip(rescale * grad); w = w + mom"""
    for i in range(w.size):
        m = momentum * mom[i] - lr * wd * w[i] - lr * _clipped(rescale * grad[i], clip)
        mom[i] = m
        w[i] = w[i] + m


@njit(**JIT)
def adam(w, grad, mean, var, lr_t, wd, beta1, beta2, epsilon, rescale, clip):
    """g = clip(rescale * grad + wd * w); running mean and variance of g;
    w = w - lr_t * mean / (sqrt(var) + epsilon)"""
    for i in range(w.size):
        g = _clipped(rescale * grad[i] + wd * w[i], clip)
        m = beta1 * mean[i] + (1.0 - beta1) * g
        v = beta2 * var[i] + (1.0 - beta2) * g * g
        mean[i] = m
        var[i] = v
        w[i] = w[i] - lr_t * m / (np.sqrt(v) + epsilon)
