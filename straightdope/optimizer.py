"""Optimizers: how a gradient turns into a change of the weights.

Every optimizer has one method that matters, ``update(index, weight, grad, state)``: it
changes ``weight`` in place, using ``grad`` and its own per-parameter ``state`` (momentum,
running averages, ... created once by ``create_state``). ``index`` identifies the parameter,
so that per-parameter settings (``lr_mult``, ``wd_mult``) and update counts can be looked up.

Three settings are shared by all optimizers, as in MXNet:

* ``rescale_grad`` multiplies the gradient first. ``gluon.Trainer.step(batch_size)`` sets it
  to ``1/batch_size``, because the loss is usually summed over the batch by ``backward()``.
* ``clip_gradient`` clips every element of the (rescaled) gradient to ``[-c, c]``.
* ``wd`` (weight decay) adds ``wd * weight`` to the gradient: the gradient of an L2 penalty.

The updates below are written in plain NumPy on the arrays' values: updating weights is not
part of any graph and is never recorded by autograd. ``np.asarray(ndarray)`` reads an
NDArray's values without copying them; results are written back with ``weight[...] = ...``.
SGD and Adam run the same formulas as one Numba loop when they can
(``straightdope/compiler/kernels/update.py``): one pass over memory instead of five.

    opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    updater(0, grad, weight)           # weight changes in place
"""
from __future__ import annotations

import math

import numpy as np

from .ndarray import NDArray, random as _random, zeros as _nd_zeros
from .util import is_np_array

__all__ = ['Optimizer', 'SGD', 'NAG', 'Adam', 'RMSProp', 'AdaGrad', 'AdaDelta', 'Adamax',
           'Nadam', 'Signum', 'FTML', 'LAMB', 'SGLD', 'DCASGD', 'Ftrl', 'Updater', 'create',
           'register', 'get_updater']


def _values(x):
    """The values of an NDArray (or NumPy array) as NumPy, without copying: read only!"""
    return np.asarray(x)


_update_kernels = None


def _fused(*arrays):
    """Flat views of `arrays` for the one-pass update loops, or None to use NumPy: the
    loops need C-contiguous float32/float64 arrays of one dtype (and a working Numba)."""
    global _update_kernels
    if _update_kernels is None:
        _update_kernels = _load_update_kernels()
    if _update_kernels is False:
        return None
    flat, kind = [], None
    for a in arrays:
        v = a._data if isinstance(a, NDArray) else np.asarray(a)
        flags = v.flags
        if not (flags.c_contiguous and flags.writeable) or kind not in (None, v.dtype.char):
            return None
        kind = v.dtype.char
        flat.append(v.ravel())          # a view: v is C-contiguous
    return flat if kind in ("f", "d") else None     # float32, float64


def _load_update_kernels():
    """compiler/kernels/update.py, or False when Numba runs interpreted (NUMBA_DISABLE_JIT:
    interpreted loops would be far slower than NumPy)."""
    import numba
    if numba.config.DISABLE_JIT:
        return False
    from .compiler.kernels import update
    return update


def _clip_value(clip_gradient):
    return -1.0 if clip_gradient is None else float(clip_gradient)


class Optimizer:
    """Base class. Subclasses implement ``create_state`` and ``update``.

    Parameters (shared by every optimizer)
    ----------
    learning_rate : float          step size (``None``: the optimizer's default)
    rescale_grad : float           gradients are multiplied by this first
    wd : float                     weight decay (L2 penalty strength)
    clip_gradient : float or None  clip gradient elements to [-clip_gradient, clip_gradient]
    lr_scheduler : LRScheduler     learning rate as a function of the update count
    param_dict : {index: Parameter}  where ``lr_mult``/``wd_mult`` come from (the Trainer sets it)
    """
    opt_registry: dict[str, type] = {}
    default_lr = 0.01
    # How many parameters one update_multi_precision call may take as lists (MXNet's
    # name); 0: the Updater calls it once per parameter, with single values.
    aggregate_num = 0
    _state_before_master = False    # MXNet's SGD and NAG order (state, master copy)

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None:
            self.lr = self.default_lr if learning_rate is None else learning_rate
        elif learning_rate is None:
            self.lr = lr_scheduler.base_lr      # the schedule decides, from its own base_lr
        else:
            # As in MXNet: a learning rate given to the optimizer is the schedule's start.
            self.lr = lr_scheduler.base_lr = lr_scheduler.warmup_final_lr = learning_rate
            if hasattr(lr_scheduler, 'base_lr_orig'):      # Poly/CosineScheduler
                lr_scheduler.base_lr_orig = learning_rate
        self.wd = wd
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count: dict = {}
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})
        # MXNet's flag (made under npx.set_np(): for mx.np arrays). Informational here:
        # mx.np arrays are NDArrays, so every optimizer updates both kinds.
        self.allow_np_array = is_np_array()
        # a Symbol's variables may carry __lr_mult__/__wd_mult__ (sym.var('w', lr_mult=0))
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ----------------------------------------------------------- registry
    @staticmethod
    def register(klass):
        """Class decorator: make ``create('name')`` know an optimizer (lower-cased name)."""
        name = klass.__name__.lower()
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer from its registered name, e.g. ``create_optimizer('adam', wd=1e-4)``."""
        key = name.lower()
        if key not in Optimizer.opt_registry:
            raise ValueError(f"unknown optimizer {name!r}; known: "
                             f"{sorted(Optimizer.opt_registry)}")
        klass = Optimizer.opt_registry[key]
        try:
            return klass(**kwargs)
        except TypeError as err:
            raise TypeError(f"{klass.__name__}: {err}. Check the spelling of the optimizer "
                            f"parameters (e.g. 'learning_rate', 'wd', 'momentum').") from None

    # ------------------------------------------------------------- states
    def create_state(self, index, weight):
        """The per-parameter state (None, an NDArray or a tuple of NDArrays)."""
        return None

    def create_state_multi_precision(self, index, weight):
        """With ``multi_precision=True``, a float16 weight gets a float32 master copy:
        the state is ``(master copy, optimizer state)`` and updates happen on the copy."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            state = self.create_state(index, master)
            return (state, master) if self._state_before_master else (master, state)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def update_multi_precision(self, index, weight, grad, state):
        """Update one parameter, or several given as lists (MXNet's multi-tensor call).
        There are no float16 master copies to keep: weights are updated in their dtype."""
        if isinstance(index, (list, tuple)):
            for i, w, g, st in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, st)
        elif self.multi_precision and weight.dtype == np.float16:
            master, inner = state[::-1] if self._state_before_master else state
            self.update(index, master, grad.astype(np.float32), inner)
            weight[...] = np.asarray(master)
        else:
            self.update(index, weight, grad, state)

    # ------------------------------------------------------- learning rate
    @property
    def learning_rate(self):
        """The current learning rate (the schedule's value when there is a schedule)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning("This optimizer has an lr_scheduler: it decides the learning "
                              "rate, so set_learning_rate() would have no effect. Change "
                              "lr_scheduler.base_lr instead, or create the optimizer "
                              "without a scheduler.")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers by name (Module-style): the
        ``__lr_mult__`` attributes of the ``sym`` given, then ``args_lr_mult``. Gluon
        Parameters carry their own ``lr_mult`` instead, read through ``param_dict``."""
        self.lr_mult = self._sym_mults('__lr_mult__')
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers by name. As in MXNet, parameters known by
        name that are not weights or gammas (biases, betas) get no weight decay; then the
        ``sym``'s ``__wd_mult__`` attributes and ``args_wd_mult`` apply."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith('_weight') or n.endswith('_gamma'))}
        self.wd_mult.update(self._sym_mults('__wd_mult__'))
        self.wd_mult.update(args_wd_mult)

    def _sym_mults(self, key):
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {n: float(attrs[n][key]) for n in arg_names if key in attrs.get(n, {})}

    def _update_count(self, index):
        """Count one more update of `index`; num_update is the largest count (the step)."""
        indices = index if isinstance(index, (list, tuple)) else [index]
        for idx in indices:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _get_lrs(self, indices):
        """The learning rates of these parameters: the scheduler's (asked once) or the
        fixed rate, times each parameter's multiplier."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._multiplier(i, "lr_mult", self.lr_mult) for i in indices]

    def _get_wds(self, indices):
        return [self.wd * self._multiplier(i, "wd_mult", self.wd_mult) for i in indices]

    def _multiplier(self, index, attr, by_key):
        """A Parameter's own lr_mult/wd_mult, else one set on the optimizer for the index,
        else for the parameter's name, else 1."""
        param = self.param_dict.get(index)
        if param is not None:
            return getattr(param, attr)
        if index in by_key:
            return by_key[index]
        name = self.idx2name.get(index)
        return 1.0 if name is None else by_key.get(name, 1.0)

    def _grad(self, grad, weight=None, wd=0.0):
        """rescale -> (+ wd * weight, for optimizers that decay before clipping) -> clip."""
        g = self.rescale_grad * _values(grad)
        if weight is not None and wd:
            g = g + wd * _values(weight)
        if self.clip_gradient is not None:
            g = np.clip(g, -self.clip_gradient, self.clip_gradient)
        return g

    def __repr__(self):
        return f"{type(self).__name__}(learning_rate={self.learning_rate}, wd={self.wd})"


register = Optimizer.register
create = Optimizer.create_optimizer


def _zeros_like(weight):
    return _nd_zeros(weight.shape, dtype=weight.dtype)


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum.

        without momentum:  weight = weight - lr * (grad + wd * weight)
        with momentum:     mom = momentum * mom - lr * (grad + wd * weight)
                           weight = weight + mom

    Momentum keeps a running direction: steps along a consistent direction grow, steps
    that flip sign from batch to batch cancel out.
    """

    _state_before_master = True
    aggregate_num = math.inf        # the Updater hands over all parameters at once

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update      # sparse gradients only: nothing to do here

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        self._step(weight, grad, state, self._get_lr(index), self._get_wd(index))

    def update_multi_precision(self, index, weight, grad, state):
        """Given lists (the Updater does that, see `aggregate_num`), all parameters in one
        call, as MXNet's `multi_sgd_update`: the update count moves once for all of them,
        the learning rates are looked up together, then each is updated, with no
        per-parameter detour through the generic code."""
        if (not isinstance(index, (list, tuple)) or self.multi_precision
                or type(self).update is not SGD.update):    # a subclass's own update()
            return super().update_multi_precision(index, weight, grad, state)
        self._update_count(index)
        for w, g, st, lr, wd in zip(weight, grad, state, self._get_lrs(index),
                                    self._get_wds(index)):
            self._step(w, g, st, lr, wd)

    def _step(self, weight, grad, state, lr, wd):
        flat = _fused(weight, grad) if state is None else _fused(weight, grad, state)
        if flat is not None:
            clip = _clip_value(self.clip_gradient)
            if state is None:
                _update_kernels.sgd(*flat, lr, wd, self.rescale_grad, clip)
            else:
                _update_kernels.sgd_momentum(*flat, lr, wd, self.momentum,
                                             self.rescale_grad, clip)
            return
        g = self._grad(grad)
        w = _values(weight)
        if state is None:
            weight[...] = (1.0 - lr * wd) * w - lr * g
        else:
            state[...] = self.momentum * _values(state) - lr * wd * w - lr * g
            weight[...] = w + _values(state)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient: SGD that looks ahead along the momentum.

        g = grad + wd * weight
        mom = momentum * mom - lr * g
        weight = weight + momentum * mom - lr * g

    The state holds the step (lr folded in), as MXNet's nag_mom_update keeps it.
    """

    _state_before_master = True

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self._grad(grad) + wd * _values(weight)
        if state is None:
            weight[...] = _values(weight) - lr * g
            return
        state[...] = self.momentum * _values(state) - lr * g
        weight[...] = _values(weight) + self.momentum * _values(state) - lr * g


@register
class Adam(Optimizer):
    """Adam: momentum (mean of gradients) divided by the root mean square of gradients.

        g = grad + wd * weight
        mean = beta1 * mean + (1 - beta1) * g
        var  = beta2 * var  + (1 - beta2) * g**2
        weight = weight - lr_t * mean / (sqrt(var) + epsilon)

    with ``lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)`` at the t-th update: the averages
    start at zero, and this factor corrects for that bias in the first steps.
    """
    default_lr = 0.001

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))     # mean, variance

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        mean, var = state
        flat = _fused(weight, grad, mean, var)
        if flat is not None:
            _update_kernels.adam(*flat, lr, wd, self.beta1, self.beta2, self.epsilon,
                                 self.rescale_grad, _clip_value(self.clip_gradient))
            return
        g = self._grad(grad, weight, wd)
        mean[...] = self.beta1 * _values(mean) + (1.0 - self.beta1) * g
        var[...] = self.beta2 * _values(var) + (1.0 - self.beta2) * np.square(g)
        weight[...] = _values(weight) - lr * _values(mean) / (np.sqrt(_values(var)) +
                                                              self.epsilon)


@register
class RMSProp(Optimizer):
    """RMSProp: divide the gradient by a running root mean square of recent gradients.

        g = grad + wd * weight
        n = gamma1 * n + (1 - gamma1) * g**2
        weight = weight - lr * g / sqrt(n + epsilon)

    ``centered=True`` (Graves' variant) also tracks the mean gradient m and divides by
    ``sqrt(n - m**2 + epsilon)`` (an estimate of the variance), with momentum ``gamma2``.
    ``clip_weights`` clips the weights to ``[-clip_weights, clip_weights]`` after the update.
    """
    default_lr = 0.001

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered = centered
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))  # n, m, delta
        return (_zeros_like(weight),)                                              # n

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self._grad(grad, weight, wd)
        g1 = self.gamma1
        if not self.centered:
            n, = state
            n[...] = g1 * _values(n) + (1.0 - g1) * np.square(g)
            weight[...] = _values(weight) - lr * g / np.sqrt(_values(n) + self.epsilon)
        else:
            n, m, delta = state
            n[...] = g1 * _values(n) + (1.0 - g1) * np.square(g)
            m[...] = g1 * _values(m) + (1.0 - g1) * g
            delta[...] = self.gamma2 * _values(delta) - lr * g / np.sqrt(
                _values(n) - np.square(_values(m)) + self.epsilon)
            weight[...] = _values(weight) + _values(delta)
        if self.clip_weights:
            weight[...] = np.clip(_values(weight), -self.clip_weights, self.clip_weights)


@register
class AdaGrad(Optimizer):
    """AdaGrad: each weight's step shrinks with the sum of its squared gradients so far.

        history = history + grad**2
        weight = weight - lr * (grad / sqrt(history + eps) + wd * weight)

    Rarely-updated weights keep large steps; frequently-updated ones slow down.
    """

    def __init__(self, eps=1e-7, epsilon=None, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps if epsilon is None else epsilon

    def create_state(self, index, weight):
        return _zeros_like(weight)          # history of squared gradients

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self._grad(grad)
        state[...] = _values(state) + np.square(g)
        w = _values(weight)
        weight[...] = w - lr * (g / np.sqrt(_values(state) + self.float_stable_eps) + wd * w)


@register
class AdaDelta(Optimizer):
    """AdaDelta: no learning rate to tune; each step is scaled by the ratio of the running
    RMS of past *steps* to the running RMS of gradients (so it has the weight's units).

        acc_g     = rho * acc_g + (1 - rho) * g**2
        delta     = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight    = weight - delta - wd * weight
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index, weight):
        # float32 whatever the weight's dtype, as in MXNet
        return (_nd_zeros(weight.shape), _nd_zeros(weight.shape))     # acc_g, acc_delta

    def update(self, index, weight, grad, state):
        self._update_count(index)
        wd = self._get_wd(index)
        g = self._grad(grad)
        acc_g, acc_delta = state
        rho, eps = self.rho, self.epsilon
        acc_g[...] = rho * _values(acc_g) + (1.0 - rho) * np.square(g)
        delta = np.sqrt(_values(acc_delta) + eps) / np.sqrt(_values(acc_g) + eps) * g
        acc_delta[...] = rho * _values(acc_delta) + (1.0 - rho) * np.square(delta)
        w = _values(weight)
        weight[...] = w - delta - wd * w


@register
class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm: the running RMS becomes a running maximum of
    ``|g|``, which needs no epsilon.

        mean = beta1 * mean + (1 - beta1) * g          (g = grad + wd * weight, clipped)
        u    = max(beta2 * u, |g|)
        weight = weight - lr / (1 - beta1**t) * mean / u
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))     # mean, u

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr /= 1.0 - self.beta1 ** self._index_update_count[index]
        g = self._grad(grad, weight, wd)
        mean, u = state
        mean[...] = self.beta1 * _values(mean) + (1.0 - self.beta1) * g
        u[...] = np.maximum(self.beta2 * _values(u), np.abs(g))
        weight[...] = _values(weight) - lr * _values(mean) / _values(u)


@register
class Nadam(Optimizer):
    """Nadam: Adam with Nesterov momentum; the momentum factor itself follows a warm-up
    schedule ``beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))     # mean, variance

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = self._grad(grad, weight, wd)
        momentum_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        momentum_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= momentum_t
        schedule_next = self.m_schedule * momentum_next
        mean, var = state
        mean[...] = self.beta1 * _values(mean) + (1.0 - self.beta1) * g
        var[...] = self.beta2 * _values(var) + (1.0 - self.beta2) * np.square(g)
        mean_bar = ((1.0 - momentum_t) * g / (1.0 - self.m_schedule)
                    + momentum_next * _values(mean) / (1.0 - schedule_next))
        var_hat = _values(var) / (1.0 - self.beta2 ** t)
        weight[...] = _values(weight) - lr * mean_bar / (np.sqrt(var_hat) + self.epsilon)


@register
class Signum(Optimizer):
    """signSGD / Signum: step by the *sign* of the gradient (of its momentum with
    ``momentum > 0``): every weight moves by exactly ``lr``. ``wd_lh`` is a weight decay
    applied to the weight directly (decoupled from the gradient).

        mom = momentum * mom - (1 - momentum) * (g + wd * weight)
        weight = (1 - lr * wd_lh) * weight + lr * sign(mom)
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = momentum, wd_lh

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w = _values(weight)
        g = self._grad(grad)
        if state is None:
            weight[...] = (1.0 - lr * (wd + self.wd_lh)) * w - lr * np.sign(g)
            return
        state[...] = self.momentum * _values(state) - (1.0 - self.momentum) * (wd * w + g)
        weight[...] = (1.0 - lr * self.wd_lh) * w + lr * np.sign(_values(state))


@register
class FTML(Optimizer):
    """FTML, "Follow the Moving Leader": the weight is the minimiser of a running, decayed
    sum of linearised losses with an Adam-like adaptive penalty ``d``.

        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d_{t-1}) * weight
        weight = -z / d_t
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))  # d, v, z

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = self._grad(grad, weight, wd)
        d, v, z = state
        b1, b2 = self.beta1, self.beta2
        v[...] = b2 * _values(v) + (1.0 - b2) * np.square(g)
        d_t = (1.0 - b1 ** t) / lr * (np.sqrt(_values(v) / (1.0 - b2 ** t)) + self.epsilon)
        z[...] = b1 * _values(z) + (1.0 - b1) * g - (d_t - b1 * _values(d)) * _values(weight)
        d[...] = d_t
        weight[...] = -_values(z) / d_t


@register
class LAMB(Optimizer):
    """LAMB: Adam's direction, with a step scaled per layer by the "trust ratio"
    ``||weight|| / ||direction||``, so that every layer moves by a similar *relative*
    amount (made for very large batches).

        mean, var as in Adam (bias-corrected with ``bias_correction=True``)
        direction = mean / (sqrt(var) + epsilon) + wd * weight
        r1 = ||weight|| (clipped to [lower_bound, upper_bound]),  r2 = ||direction||
        weight = weight - lr * (r1 / r2) * direction      (ratio 1 when r1 or r2 is 0)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))     # mean, variance

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = self._grad(grad)
        mean, var = state
        mean[...] = self.beta1 * _values(mean) + (1.0 - self.beta1) * g
        var[...] = self.beta2 * _values(var) + (1.0 - self.beta2) * np.square(g)
        mean_hat, var_hat = _values(mean), _values(var)
        if self.bias_correction:
            mean_hat = mean_hat / (1.0 - self.beta1 ** t)
            var_hat = var_hat / (1.0 - self.beta2 ** t)
        w = _values(weight)
        direction = mean_hat / (np.sqrt(var_hat) + self.epsilon) + wd * w
        r1 = float(np.linalg.norm(w.astype(np.float64)))
        if self.lower_bound:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        r2 = float(np.linalg.norm(direction.astype(np.float64)))
        ratio = 1.0 if r1 == 0.0 or r2 == 0.0 else r1 / r2
        weight[...] = w - lr * ratio * direction


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: half an SGD step plus Gaussian noise of
    variance ``lr``, so that the weights *sample* from the posterior instead of settling
    at its mode.

        weight = weight - lr / 2 * (g + wd * weight) + normal(0, sqrt(lr))
    """

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w = _values(weight)
        noise = _random.normal(0, math.sqrt(lr), shape=w.shape, dtype=w.dtype).asnumpy()
        weight[...] = w - lr / 2 * (self._grad(grad) + wd * w) + noise


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD: corrects a stale gradient with a cheap
    estimate of how it changed since the weight it was computed at (``lamda * g * g *
    (weight - previous weight)``), plus optional momentum."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.lamda = momentum, lamda

    def create_state(self, index, weight):
        mom = _zeros_like(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())                            # momentum, previous weight

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self._grad(grad)
        mom, previous = state
        w = _values(weight).copy()
        step = -lr * (g + wd * w + self.lamda * g * g * (w - _values(previous)))
        if mom is not None:
            mom[...] = self.momentum * _values(mom) + step
            step = _values(mom)
        previous[...] = w
        weight[...] = w + step


@register
class Ftrl(Optimizer):
    """FTRL-proximal (for sparse linear models): an L1 strength ``lamda1`` drives weights
    to exactly zero while ``z``/``n`` accumulate gradient information per weight.

        z += g - (sqrt(n + g**2) - sqrt(n)) * weight / lr
        n += g**2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)  where |z| > lamda1,
                 0 elsewhere
    """

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = lamda1, beta

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))     # z, n

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self._grad(grad)
        z, n = state
        n_old = _values(n).copy()
        z[...] = _values(z) + g - (np.sqrt(n_old + g * g) - np.sqrt(n_old)) * _values(weight) / lr
        n[...] = n_old + g * g
        zv = _values(z)
        weight[...] = np.where(np.abs(zv) > self.lamda1,
                               (np.sign(zv) * self.lamda1 - zv) /
                               ((self.beta + np.sqrt(_values(n))) / lr + wd), 0)


# --------------------------------------------------------------------- Updater
class Updater:
    """Keeps one optimizer's per-parameter states; ``updater(index, grad, weight)`` updates.

    The Trainer uses one Updater. Its states can be saved as plain arrays
    (``get_states``/``set_states``): no pickle, so a states file can only ever hold numbers.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            index, grad, weight = [index], [grad], [weight]
        for i, w in zip(index, weight):
            if i not in self.states:
                self.states[i] = self.optimizer.create_state_multi_precision(i, w)
                self.states_synced[i] = True
        opt = self.optimizer
        if opt.aggregate_num > 0:                  # in lists of up to aggregate_num
            size = int(min(opt.aggregate_num, max(len(index), 1)))
            for s in range(0, len(index), size):
                part = index[s:s + size]
                opt.update_multi_precision(list(part), list(weight[s:s + size]),
                                           list(grad[s:s + size]),
                                           [self.states[i] for i in part])
        else:
            for i, g, w in zip(index, grad, weight):
                opt.update_multi_precision(i, w, g, self.states[i])

    # ---------------------------------------------------------- save / load
    def get_states(self, dump_optimizer=False):
        """A dict of NumPy arrays: every state, the update counts and (with
        ``dump_optimizer``) the optimizer's numeric settings (lr, wd, momentum, ...)."""
        out = {}
        for index, state in self.states.items():
            key = f"state:{index}"
            if state is None:
                out[f"{key}:len"] = np.array(0)
            elif isinstance(state, NDArray):
                out[f"{key}:len"] = np.array(-1)          # a single array, not a tuple
                out[key] = state.asnumpy()
            else:
                out[f"{key}:len"] = np.array(len(state))
                for k, part in enumerate(state):
                    out[f"{key}:{k}"] = part.asnumpy()
        opt = self.optimizer
        out["optimizer:name"] = np.array(type(opt).__name__.lower())
        out["optimizer:num_update"] = np.array(opt.num_update)
        for index, count in opt._index_update_count.items():
            out[f"count:{index}"] = np.array(count)
        if dump_optimizer:
            for attr, value in vars(opt).items():
                if isinstance(value, (bool, int, float)) and not attr.startswith('_'):
                    out[f"optimizer:{attr}"] = np.array(value)
        return out

    def set_states(self, arrays):
        """Restore what ``get_states`` returned (states by parameter index)."""
        opt = self.optimizer
        saved_name = str(arrays.get("optimizer:name", type(opt).__name__.lower()))
        if saved_name != type(opt).__name__.lower():
            raise ValueError(f"these optimizer states were saved by {saved_name!r}, but this "
                             f"optimizer is {type(opt).__name__.lower()!r}: create the Trainer "
                             f"with the same optimizer before load_states()")
        states = {}
        for key, value in arrays.items():
            if key.startswith("state:") and key.endswith(":len"):
                index = _index(key[len("state:"):-len(":len")])
                n = int(value)
                if n == 0:
                    states[index] = None
                elif n == -1:
                    states[index] = NDArray(np.array(arrays[f"state:{index}"]))
                else:
                    states[index] = tuple(NDArray(np.array(arrays[f"state:{index}:{k}"]))
                                          for k in range(n))
        self.states = states
        self.states_synced = {i: False for i in states}
        opt._index_update_count = {_index(k[len("count:"):]): int(v)
                                   for k, v in arrays.items() if k.startswith("count:")}
        for key, value in arrays.items():
            if key.startswith("optimizer:") and key != "optimizer:name":
                attr = key[len("optimizer:"):]
                current = getattr(opt, attr, None)
                kind = type(current) if isinstance(current, (bool, int, float)) else float
                setattr(opt, attr, kind(value.item()))


def _index(text):
    """State keys hold the parameter index: an int for the Trainer, else a name."""
    return int(text) if text.lstrip('-').isdigit() else text


def get_updater(optimizer):
    """An Updater for `optimizer` (MXNet's name for it)."""
    return Updater(optimizer)
