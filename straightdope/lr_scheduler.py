"""Learning-rate schedules: the learning rate as a function of the update count.

An optimizer asks its scheduler ``lr_scheduler(num_update)`` before every update, where
``num_update`` counts the optimizer steps taken so far (1 for the first one)::

    sched = FactorScheduler(step=100, factor=0.5)      # halve the rate every 100 updates
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1, 'lr_scheduler': sched})

As in MXNet, the optimizer overwrites ``base_lr`` with its own ``learning_rate``, and the
schedulers keep a little state (how far they have decayed): give each optimizer its own.
"""
from __future__ import annotations

import logging
import math

__all__ = ['LRScheduler', 'FactorScheduler', 'MultiFactorScheduler', 'PolyScheduler',
           'CosineScheduler']


class LRScheduler:
    """Base class: a constant rate after an optional warm-up.

    Warm-up: for the first ``warmup_steps`` updates the rate goes from ``warmup_begin_lr``
    to ``base_lr`` (``warmup_mode='linear'``) or stays at ``warmup_begin_lr`` ('constant').
    Large learning rates are often unstable at the very start of training; warm-up avoids that.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be an int >= 0, got {warmup_steps!r}")
        if warmup_mode not in ('linear', 'constant'):
            raise ValueError(f"warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}")
        if warmup_begin_lr > base_lr:
            raise ValueError(f"warmup_begin_lr ({warmup_begin_lr}) must not exceed base_lr "
                             f"({base_lr}): warm-up climbs up to the base rate")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        if self.warmup_mode == 'constant':
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        return self.base_lr

    def __repr__(self):
        return f"{type(self).__name__}(base_lr={self.base_lr})"


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, never below ``stop_factor_lr``.

    With step=2, factor=0.5 and base_lr=1: updates 1-2 use 1, updates 3-4 use 0.5, ...
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"step must be >= 1 (updates between decays), got {step}")
        if factor > 1.0:
            raise ValueError(f"factor must be <= 1 so that the rate decreases, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0          # the update count at which the last decay happened

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # `while`, not `if`: a resumed run (load_states) may jump several steps at once.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: learning rate reached its floor %0.5e",
                             num_update, self.base_lr)
            else:
                logging.info("Update[%d]: learning rate changed to %0.5e",
                             num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` after each update count listed in ``step``.

    ``MultiFactorScheduler(step=[30, 60], factor=0.1)``: updates 1-30 use base_lr, 31-60
    use base_lr/10, from 61 on base_lr/100 (the classic ImageNet ResNet schedule, per epoch).
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or not step:
            raise ValueError(f"step must be a non-empty list of update counts, got {step!r}")
        for i, s in enumerate(step):
            if s < 1:
                raise ValueError(f"every step must be >= 1, got {list(step)}")
            if i and s <= step[i - 1]:
                raise ValueError(f"steps must increase, got {list(step)}")
        if factor > 1.0:
            raise ValueError(f"factor must be <= 1 so that the rate decreases, got {factor}")
        self.step = list(step)
        self.factor = factor
        self.cur_step_ind = 0   # the next entry of `step` still to pass
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: learning rate changed to %0.5e", num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Decay from ``base_lr`` to ``final_lr`` along ``(1 - progress) ** pwr`` over
    ``max_update`` updates (after the warm-up), then stay at ``final_lr``.
    ``pwr=1`` is a straight line; larger powers drop quickly and then flatten out."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update(max_update, warmup_steps)
        self.power, self.final_lr = pwr, final_lr
        self.base_lr_orig = base_lr         # where the decay starts (base_lr moves)
        self.max_update = max_update
        self.max_steps = max_update - warmup_steps

    def _shape(self, progress):
        return (1.0 - progress) ** self.power

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                self._shape(progress)
        return self.base_lr


class CosineScheduler(PolyScheduler):
    """Decay from ``base_lr`` to ``final_lr`` along half a cosine wave over ``max_update``
    updates (after the warm-up): slow at first, fastest in the middle, slow at the end."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(max_update, base_lr, 1, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _shape(self, progress):
        return (1.0 + math.cos(math.pi * progress)) / 2.0


def _check_max_update(max_update, warmup_steps):
    if not isinstance(max_update, int) or max_update < 1:
        raise ValueError(f"max_update must be a positive int (the update count where the "
                         f"decay ends), got {max_update!r}")
    if max_update <= warmup_steps:
        raise ValueError(f"max_update ({max_update}) must be larger than warmup_steps "
                         f"({warmup_steps}): the decay starts after the warm-up")
