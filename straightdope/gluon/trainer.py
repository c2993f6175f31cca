"""Trainer: applies an optimizer to a set of Parameters, one step per batch.

    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    with autograd.record():
        l = loss_fn(net(X), y)
    l.backward()                     # gradients land in each parameter's .grad()
    trainer.step(X.shape[0])         # weight -= lr * grad / batch_size (for plain SGD)

``step(batch_size)`` divides the gradients by `batch_size` (through the optimizer's
``rescale_grad``) because ``backward()`` on a per-sample loss vector *sums* the
per-sample gradients: the update then uses their mean, and the learning rate does not
depend on the batch size.

MXNet's Trainer also synchronises gradients across devices and machines (the "kvstore").
straightdope runs on one CPU, so ``allreduce_grads`` has nothing to do and
``kvstore`` is accepted only in its single-device forms.
"""
from __future__ import annotations

import math
import numbers

from .. import optimizer as opt
from ..serialization import load_arrays, save_arrays
from .parameter import Parameter

__all__ = ['Trainer']


class Trainer:
    """Updates `params` with `optimizer`.

    Parameters
    ----------
    params : ParameterDict, dict of Parameters, or list of Parameters
        usually ``net.collect_params()``. Dict entries are taken in sorted key order (as in
        MXNet 1.x), which fixes each parameter's index in saved optimizer states.
    optimizer : str or Optimizer
        a name ('sgd', 'nag', 'adam', 'rmsprop', 'adagrad') or an Optimizer instance
    optimizer_params : dict
        keyword arguments for the optimizer, e.g. ``{'learning_rate': 0.1, 'wd': 1e-4}``
        (only with a name)
    kvstore : 'device', 'local', None or False   single-device values only
    update_on_kvstore : None or False            there is no kvstore to update on
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        if hasattr(params, 'keys') and hasattr(params, '__getitem__'):
            params = [params[key] for key in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"Trainer needs a list or dict of Parameters (usually "
                             f"net.collect_params()), got {type(params).__name__}")
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(f"Trainer: element {i} is a {type(param).__name__}, not a "
                                 f"Parameter; pass net.collect_params()")
            if param.name in self._param2idx:
                raise ValueError(f"Trainer: Parameter '{param.name}' is given twice")
            self._param2idx[param.name] = i
            self._params.append(param)
        if kvstore not in ('device', 'local', None, False):
            raise ValueError(f"kvstore={kvstore!r}: straightdope trains on one CPU and has no "
                             f"distributed kvstore; use the default ('device') or None")
        if update_on_kvstore:
            raise ValueError("update_on_kvstore=True needs a kvstore that applies updates; "
                             "straightdope updates locally: leave it None or False")
        if compression_params:
            raise ValueError("compression_params compress gradients sent between machines; "
                             "straightdope trains on one CPU: leave it None")
        self._kvstore = None
        self._update_on_kvstore = False
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad
        # Gradient buffers as of the last update, to recognise a gradient that no backward()
        # has written since (see _check_fresh).
        self._last_grads: dict = {}

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError("optimizer_params are for an optimizer given by name; this "
                                 "one is already an Optimizer instance, configure it directly")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        elif isinstance(optimizer, str):
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        else:
            raise TypeError(f"optimizer must be a name such as 'sgd' or an Optimizer, got "
                            f"{type(optimizer).__name__}")
        self._updaters = [opt.get_updater(self._optimizer)]

    # -------------------------------------------------------------- lr
    @property
    def optimizer(self):
        return self._optimizer

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Change the learning rate (e.g. to decay it by hand between epochs)."""
        self._optimizer.set_learning_rate(lr)

    # ------------------------------------------------------------ steps
    def step(self, batch_size, ignore_stale_grad=False):
        """One optimization step: gradients / batch_size, then the optimizer's update.

        ignore_stale_grad=True skips (instead of failing on) parameters whose gradient no
        backward() has written since the last step, e.g. a branch not used in this batch.
        """
        self._optimizer.rescale_grad = self._scale / _checked(batch_size, "step")
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum gradients across devices: with one CPU there is nothing to sum. Kept so that
        ``allreduce_grads(); <clip or inspect gradients>; update(batch_size)`` works."""
        self._allreduce_grads()

    def _allreduce_grads(self):
        pass

    def update(self, batch_size, ignore_stale_grad=False):
        """The second half of step(): rescale and apply the update (after allreduce_grads)."""
        self._optimizer.rescale_grad = self._scale / _checked(batch_size, "update")
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        # frozen ones (e.g. BatchNorm running statistics) are skipped; all are checked for
        # initialization before any is checked for a fresh gradient
        trained = [(i, param, *self._data_and_grad(param))
                   for i, param in enumerate(self._params) if param._grad_req != 'null']
        indices, grads, weights = [], [], []
        last = self._last_grads
        for i, param, weight, grad in trained:
            # fresh (the usual case) when a backward() bumped the stamp since the last update
            if (last.get(i, 0) == weight._grad_stamp
                    and not self._check_fresh(i, param, weight, ignore_stale_grad)):
                continue
            indices.append(i)
            grads.append(grad)
            weights.append(weight)
        if indices:
            self._updaters[0](indices, grads, weights)
        for i, weight in zip(indices, weights):
            last[i] = weight._grad_stamp

    @staticmethod
    def _data_and_grad(param):
        weight, grad = param._data, param._grad
        if weight is not None and grad is not None:
            return weight, grad
        # Parameter's own errors say what to do (initialize, or run one forward pass first
        # when shapes are deferred); keep their type and add where they happened.
        try:
            return param.data(), param.grad()
        except Exception as err:
            raise type(err)(f"trainer.step(): {err}") from None

    def _check_fresh(self, index, param, weight, ignore_stale_grad):
        """Was `param`'s gradient written by a backward() since the last update?

        Every backward() that writes an array's gradient bumps its `_grad_stamp` (MXNet
        keeps a "fresh gradient" flag for the same purpose); an unchanged stamp means no
        backward() reached the parameter (its block was not used, or backward was not
        called). Returns False to skip a stale parameter when that is allowed.
        """
        stale = self._last_grads.get(index, 0) == weight._grad_stamp
        if not stale:
            return True
        if ignore_stale_grad:
            return False
        if weight._grad_stamp == 0:        # weight decay and momentum would still move it
            raise UserWarning(
                f"trainer.step(): Parameter '{param.name}' has no gradient yet: no backward() "
                f"has reached it. Compute the loss inside autograd.record() and call "
                f"loss.backward() before trainer.step(batch_size).")
        raise UserWarning(
            f"Gradient of Parameter '{param.name}' has not been updated by backward since the "
            f"last step. This could mean a bug in your model that made it only use a subset "
            f"of the Parameters (Blocks) for this iteration, or that backward() was not "
            f"called. If you are intentionally only using a subset, call "
            f"step(batch_size, ignore_stale_grad=True) to skip the Parameters with stale "
            f"gradients.")

    # --------------------------------------------------------- save / load
    def save_states(self, fname):
        """Save the optimizer's states (momentum, Adam's averages, update counts, settings)
        to `fname` (.npz arrays, written atomically). Save the weights separately with
        ``net.save_parameters``."""
        save_arrays(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Restore what save_states wrote; the Trainer must use the same optimizer over
        parameters of the same shapes."""
        arrays = load_arrays(fname)
        updater = self._updaters[0]
        updater.set_states(arrays)
        for index, state in updater.states.items():
            if not isinstance(index, int) or not 0 <= index < len(self._params):
                raise ValueError(f"{fname}: holds states for parameter #{index}, but this "
                                 f"Trainer has {len(self._params)} parameters: it was saved "
                                 f"for a different network")
            param = self._params[index]
            parts = () if state is None else (state,) if not isinstance(state, tuple) \
                else state
            for part in parts:
                if param.shape is not None and tuple(part.shape) != tuple(param.shape):
                    raise ValueError(f"{fname}: the state of parameter #{index} "
                                     f"('{param.name}') has shape {part.shape}, but the "
                                     f"parameter has shape {param.shape}: it was saved for "
                                     f"a different network")
        self._optimizer.param_dict = dict(enumerate(self._params))
        self._last_grads = {}


def _checked(batch_size, method):
    """batch_size must be a positive finite number: the gradients are divided by it
    (0 divides by zero, a negative one climbs the loss, NaN turns every weight NaN)."""
    if (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Real)
            or not math.isfinite(batch_size) or batch_size <= 0):
        raise ValueError(f"trainer.{method}(batch_size={batch_size!r}): batch_size must be a "
                         f"positive number, how many samples the gradients were summed over "
                         f"(e.g. X.shape[0]; 1 if the loss is already a mean)")
    return batch_size
