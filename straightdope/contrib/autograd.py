"""MXNet's first autograd API (`mx.contrib.autograd`, MXNet 0.11), on top of `mx.autograd`.

    grads, loss = grad_and_loss(f)(x, y)     # d f / d x, d f / d y, and f(x, y)
    with train_section():                    # record and train mode at once
        ...
        with test_section():                 # neither, inside it
            ...

Kept because old tutorials and MXNet's tests use it; new code uses `mx.autograd`.
"""
import functools

from .. import autograd as _autograd
from ..autograd import mark_variables  # noqa: F401  (the same function)

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train):
    """Switch recording and train mode on or off together; returns the previous state."""
    previous = _autograd.set_training(is_train)
    _autograd.set_recording(is_train)
    return previous


class TrainingStateScope:
    """`with` scope that sets recording and train mode together (to `enter_state`)."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, *exc):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """Record operations, in train mode (Dropout drops)."""
    return TrainingStateScope(True)


def test_section():
    """Neither record nor train (Dropout passes through), e.g. inside a train_section."""
    return TrainingStateScope(False)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of a list of outputs; `out_grads` entries may be None (ones)."""
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("contrib.autograd.backward: outputs must be a list or tuple of "
                        f"NDArrays, got {type(outputs).__name__}")
    if out_grads is not None:
        if len(out_grads) != len(outputs):
            raise ValueError(f"contrib.autograd.backward: {len(outputs)} outputs but "
                             f"{len(out_grads)} out_grads")
        from .. import ndarray as nd
        out_grads = [nd.ones_like(y) if g is None else g for y, g in zip(outputs, out_grads)]
    _autograd.backward(list(outputs), out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated name of `backward(outputs)`."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function returning (gradients of `func` for its arguments, `func`'s value).
    `argnum`: the index (or list of indices) of the arguments to differentiate."""
    from ..ndarray import NDArray, zeros_like

    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            variables = [args[i] for i in (argnum if isinstance(argnum, list) else [argnum])]
        for x in variables:
            if not isinstance(x, NDArray):
                raise TypeError(f"grad_and_loss: arguments to differentiate must be "
                                f"NDArrays, got {type(x).__name__}")
        grads = [zeros_like(x) for x in variables]
        mark_variables(list(variables), grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """A function returning the gradients of `func` for its arguments."""
    grad_with_loss = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss)
    def wrapped(*args):
        return grad_with_loss(*args)[0]
    return wrapped
