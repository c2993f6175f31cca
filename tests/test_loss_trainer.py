"""gluon.loss, gluon.Trainer, mx.optimizer and mx.lr_scheduler.

Losses are checked against their NumPy formulas, their gradients against finite
differences, and hybridized against imperative; optimizers against updates written out
by hand; the Trainer end to end on a tiny network.
"""
import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, lr_scheduler, nd, optimizer
from straightdope.serialization import ArrayFileError


# ====================================================================== optimizers
def run_updates(name, steps, w0, grads, **kw):
    opt = optimizer.create(name, **kw)
    updater = optimizer.get_updater(opt)
    w = nd.array(w0)
    for g in grads[:steps]:
        updater(0, nd.array(g), w)
    return w.asnumpy(), opt, updater


W0 = np.array([1.0, -2.0, 0.5], dtype=np.float32)
GRADS = [np.array([0.5, -1.0, 2.0], dtype=np.float32),
         np.array([0.1, 0.3, -0.2], dtype=np.float32),
         np.array([-0.4, 0.2, 0.6], dtype=np.float32)]


def test_sgd_plain_and_momentum_by_hand():
    lr, wd, mom = 0.1, 0.01, 0.9
    w, _, _ = run_updates('sgd', 3, W0, GRADS, learning_rate=lr, wd=wd)
    ref = W0.astype(np.float64)
    for g in GRADS:
        ref = ref - lr * (g + wd * ref)
    np.testing.assert_allclose(w, ref, rtol=1e-5)

    w, _, updater = run_updates('sgd', 3, W0, GRADS, learning_rate=lr, wd=wd, momentum=mom)
    ref, v = W0.astype(np.float64), np.zeros(3)
    for g in GRADS:
        v = mom * v - lr * (g + wd * ref)
        ref = ref + v
    np.testing.assert_allclose(w, ref, rtol=1e-5)
    np.testing.assert_allclose(updater.states[0].asnumpy(), v, rtol=1e-5)


def test_rescale_and_clip_gradient():
    # rescale first (0.5 * [4, -6, 1] = [2, -3, 0.5]), then clip to [-1, 1].
    w, _, _ = run_updates('sgd', 1, np.zeros(3, np.float32), [np.array([4., -6., 1.])],
                          learning_rate=1.0, rescale_grad=0.5, clip_gradient=1.0)
    np.testing.assert_allclose(w, [-1.0, 1.0, -0.5])


def test_adam_by_hand():
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    w, opt, _ = run_updates('adam', 3, W0, GRADS, learning_rate=lr, wd=wd)
    ref, m, v = W0.astype(np.float64), np.zeros(3), np.zeros(3)
    for t, g in enumerate(GRADS, start=1):
        g = g + wd * ref
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        ref = ref - lr_t * m / (np.sqrt(v) + eps)
    np.testing.assert_allclose(w, ref, rtol=1e-5)
    assert opt.num_update == 3 and optimizer.Adam().learning_rate == 0.001


def test_nag_rmsprop_adagrad_by_hand():
    lr, mom = 0.1, 0.9
    w, _, _ = run_updates('nag', 3, W0, GRADS, learning_rate=lr, momentum=mom)
    ref, v = W0.astype(np.float64), np.zeros(3)
    for g in GRADS:
        v = mom * v + g
        ref = ref - lr * (g + mom * v)
    np.testing.assert_allclose(w, ref, rtol=1e-5)

    w, _, _ = run_updates('rmsprop', 3, W0, GRADS, learning_rate=lr, gamma1=0.9)
    ref, n = W0.astype(np.float64), np.zeros(3)
    for g in GRADS:
        n = 0.9 * n + 0.1 * g * g
        ref = ref - lr * g / np.sqrt(n + 1e-8)
    np.testing.assert_allclose(w, ref, rtol=1e-5)

    w, _, _ = run_updates('rmsprop', 3, W0, GRADS, learning_rate=lr, centered=True,
                          clip_weights=1.5)
    ref, n, m, d = W0.astype(np.float64), np.zeros(3), np.zeros(3), np.zeros(3)
    for g in GRADS:
        n = 0.9 * n + 0.1 * g * g
        m = 0.9 * m + 0.1 * g
        d = 0.9 * d - lr * g / np.sqrt(n - m * m + 1e-8)
        ref = np.clip(ref + d, -1.5, 1.5)
    np.testing.assert_allclose(w, ref, rtol=1e-5)

    w, _, _ = run_updates('adagrad', 3, W0, GRADS, learning_rate=lr, wd=0.01)
    ref, h = W0.astype(np.float64), np.zeros(3)
    for g in GRADS:
        h = h + g * g
        ref = ref - lr * (g / np.sqrt(h + 1e-7) + 0.01 * ref)
    np.testing.assert_allclose(w, ref, rtol=1e-5)


def test_optimizer_registry_and_errors():
    assert isinstance(optimizer.create('SGD'), optimizer.SGD)
    assert isinstance(mx.optimizer.create('rmsprop'), optimizer.RMSProp)
    with pytest.raises(ValueError, match="unknown optimizer 'sgdd'.*'sgd'"):
        optimizer.create('sgdd')
    with pytest.raises(TypeError, match="learning_Rate.*spelling"):
        optimizer.create('sgd', learning_Rate=0.1)

    @optimizer.register
    class HalfStep(optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[...] = weight.asnumpy() - 0.5 * grad.asnumpy()
    w = nd.array([1.0])
    optimizer.get_updater(optimizer.create('halfstep'))(0, nd.array([1.0]), w)
    assert w.asscalar() == 0.5
    del optimizer.Optimizer.opt_registry['halfstep']


def test_lr_mult_wd_mult_from_param_dict():
    class P:            # what the Trainer puts in param_dict: objects with lr_mult/wd_mult
        lr_mult, wd_mult = 0.5, 0.0
    opt = optimizer.create('sgd', learning_rate=0.2, wd=1.0, param_dict={0: P()})
    w = nd.array([1.0])
    optimizer.get_updater(opt)(0, nd.array([1.0]), w)
    assert w.asscalar() == pytest.approx(1.0 - 0.1 * 1.0)     # lr 0.1, no weight decay


def test_updater_states_round_trip():
    _, opt, updater = run_updates('adam', 2, W0, GRADS, learning_rate=0.05)
    arrays = updater.get_states(dump_optimizer=True)
    fresh = optimizer.get_updater(optimizer.create('adam'))
    fresh.set_states(arrays)
    assert fresh.optimizer.lr == 0.05 and fresh.optimizer.num_update == 2
    for a, b in zip(updater.states[0], fresh.states[0]):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    with pytest.raises(ValueError, match="saved by 'adam'.*'sgd'"):
        optimizer.get_updater(optimizer.create('sgd')).set_states(arrays)


# ================================================================== lr schedulers
def test_factor_scheduler():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, stop_factor_lr=0.2, base_lr=1.0)
    assert [sched(t) for t in range(1, 9)] == [1, 1, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2]
    # Jumping ahead (a resumed run) decays as often as needed at once.
    sched = lr_scheduler.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert sched(35) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="factor"):
        lr_scheduler.FactorScheduler(step=1, factor=2)


def test_multifactor_scheduler_and_warmup():
    sched = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    np.testing.assert_allclose([sched(t) for t in range(1, 8)],
                               [1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])
    with pytest.raises(ValueError, match="increase"):
        lr_scheduler.MultiFactorScheduler(step=[5, 2])
    warm = lr_scheduler.FactorScheduler(step=100, base_lr=1.0, warmup_steps=4,
                                        warmup_begin_lr=0.2)
    np.testing.assert_allclose([warm(t) for t in range(6)], [0.2, 0.4, 0.6, 0.8, 1.0, 1.0])


def test_optimizer_follows_its_scheduler():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5)
    opt = optimizer.create('sgd', learning_rate=1.0, lr_scheduler=sched)
    updater = optimizer.get_updater(opt)
    w = nd.array([0.0])
    for _ in range(3):
        updater(0, nd.array([1.0]), w)
    assert w.asscalar() == pytest.approx(-(1.0 + 0.5 + 0.25))   # lr 1, 0.5, 0.25
    assert opt.learning_rate == 0.25
    with pytest.raises(UserWarning, match="lr_scheduler"):
        opt.set_learning_rate(0.1)
