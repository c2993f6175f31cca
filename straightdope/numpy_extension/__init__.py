"""`straightdope.npx`: the neural-network ops in MXNet 2.0's spelling.

`npx.set_np()` exists so that MXNet 2.0 code runs unchanged: it makes Blocks
return `np.ndarray`s. Unlike MXNet it switches nothing off: `np.ndarray` is an
NDArray here, so 1.x-style and 2.0-style code can run side by side in one process.
Like `np`'s, these functions return `np.ndarray`s.
"""
from .. import numpy as _np
from . import random  # noqa: F401
from ..context import cpu, current_context, gpu, num_gpus  # noqa: F401

from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np  # noqa: F401


# npx name -> registry op name
_NAMES = {"relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax",
          "log_softmax": "log_softmax", "activation": "Activation", "leaky_relu": "LeakyReLU",
          "fully_connected": "FullyConnected", "convolution": "Convolution",
          "pooling": "Pooling", "batch_norm": None, "layer_norm": "LayerNorm",
          "dropout": "Dropout", "embedding": "Embedding", "pick": "pick", "one_hot": "one_hot",
          "reshape_like": "reshape_like", "slice_axis": "slice_axis",
          "stop_gradient": "BlockGrad", "slice": "slice", "erf": "erf", "erfinv": "erfinv",
          "gamma": "gamma", "gammaln": "gammaln"}
for _npx_name, _op in _NAMES.items():
    if _op:
        globals()[_npx_name] = _np._dispatching(_op)
# and every registry op MXNet names `_npx_X` (arange_like) as npx.X
for _op in _np._nd._OPS:
    if _op.startswith("_npx_"):
        globals()[_op[len("_npx_"):]] = _np._dispatching(_op)


def batch_norm(x, gamma, beta, running_mean, running_var, eps=1e-3, momentum=0.9,
               fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
               **kwargs):
    """BatchNorm in npx's spelling. output_mean_var=True also returns, as MXNet's op does,
    the mean and the inverse standard deviation 1/sqrt(var + eps) it normalised each
    channel with: the batch's while training (the running ones otherwise). They carry
    no gradient, as in MXNet."""
    F = _np._world(x, gamma, beta, running_mean, running_var)
    out = F.BatchNorm(x, gamma, beta, running_mean, running_var, eps=eps, momentum=momentum,
                      fix_gamma=fix_gamma, use_global_stats=use_global_stats, axis=axis,
                      **kwargs)
    if not output_mean_var:
        return out
    from .. import autograd
    if autograd.is_training() and not use_global_stats:
        ndim = len(x.shape) if isinstance(x, _np._NDArray) else None
        if ndim is None:
            raise NotImplementedError("npx.batch_norm: output_mean_var=True of a traced "
                                      "array is not supported; call it imperatively")
        axis = axis % ndim
        others = tuple(k for k in range(ndim) if k != axis)
        mean = _np.mean(x, axis=others)
        var = _np.var(x, axis=others)
    else:
        mean, var = running_mean, running_var
    inv_std = 1.0 / _np.sqrt(var + eps)
    return [out, F.stop_gradient(mean), F.stop_gradient(inv_std)]


def batch_dot(a, b, transpose_a=False, transpose_b=False, forward_stype=None):
    """Matrix products over the last two axes of arrays with the same leading (batch)
    axes, each operand transposed first if asked. Two 3-D arrays use the `batch_dot`
    kernel; other ones, and traced Symbols, np.matmul's op (`_npi_matmul`)."""
    if forward_stype is not None:
        raise NotImplementedError("npx.batch_dot: forward_stype= (sparse storage) is not "
                                  "supported")
    if isinstance(a, _np._NDArray) and isinstance(b, _np._NDArray) and a.ndim == b.ndim == 3:
        return _np._nd.batch_dot(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    if not isinstance(a, _np._Symbol) and a.shape[:-2] != b.shape[:-2]:
        raise _np._MXNetError(f"npx.batch_dot: the batch axes must agree, got shapes "
                              f"{a.shape} and {b.shape}")
    a = _np.swapaxes(a, -1, -2) if transpose_a else a
    b = _np.swapaxes(b, -1, -2) if transpose_b else b
    return _np._world(a, b)._npi_matmul(a, b)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with MXNet 2.0's codes: -1 infer, -2 copy this axis, -3 drop an axis of
    length 1, -4 copy the rest, -5 merge two axes, -6 split one in two (see
    ops/np_ops.py: npx_shape); gradients flow."""
    _np._c_order("npx.reshape", order)
    newshape = (int(newshape),) if isinstance(newshape, int) else tuple(newshape)
    return _np._rearrange("npx_reshape", a, newshape, bool(reverse))


def waitall():
    """Wait until every op pushed to the engine has run (see nd.waitall)."""
    from .. import engine
    engine.waitall()


def save(file, arr):
    """Save an array, a list or a dict of arrays (as `nd.save`)."""
    from .. import ndarray
    ndarray.save(file, arr)


def load(file):
    from .. import ndarray
    return ndarray.load(file)


def cpu_pinned(device_id=0):
    return cpu(device_id)


_np._np_functions(globals(), __name__)
_np._np_functions(random.__dict__, random.__name__)
