"""`straightdope.npx`: the neural-network ops in MXNet 2.0's spelling.

`npx.set_np()` exists so that MXNet 2.0 code runs unchanged. Unlike MXNet it
switches nothing off: `nd`, `sym` and `np` share one array type here, so
1.x-style and 2.0-style code can run side by side in one process.
"""
from .. import numpy as _np
from ..context import cpu, gpu, num_gpus  # noqa: F401

_NP_MODE = {"array": False, "shape": False}


def set_np(shape=True, array=True, dtype=False):
    """Turn on NumPy semantics (recorded only; every front end keeps working)."""
    _NP_MODE.update(array=bool(array), shape=bool(shape))


def reset_np():
    _NP_MODE.update(array=False, shape=False)


def is_np_array():
    return _NP_MODE["array"]


def is_np_shape():
    return _NP_MODE["shape"]


# npx name -> registry op name
_NAMES = {"relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax",
          "log_softmax": "log_softmax", "activation": "Activation", "leaky_relu": "LeakyReLU",
          "fully_connected": "FullyConnected", "convolution": "Convolution",
          "pooling": "Pooling", "batch_norm": "BatchNorm", "layer_norm": "LayerNorm",
          "dropout": "Dropout", "embedding": "Embedding", "pick": "pick", "one_hot": "one_hot",
          "reshape_like": "reshape_like", "batch_dot": "batch_dot", "slice_axis": "slice_axis",
          "stop_gradient": "BlockGrad"}
for _npx_name, _op in _NAMES.items():
    if _op:
        globals()[_npx_name] = _np._dispatching(_op)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshape with MXNet's special codes (-1 infer, -2 copy rest, ...)."""
    return _np._world(a).reshape(a, shape=newshape, reverse=reverse)
