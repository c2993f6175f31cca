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


@pytest.mark.parametrize("name,kw", [
    ("sgd", dict(learning_rate=0.1, wd=0.01)),
    ("sgd", dict(learning_rate=0.1, wd=0.01, clip_gradient=0.3)),
    ("sgd", dict(learning_rate=0.1, wd=0.01, momentum=0.9, clip_gradient=0.3)),
    ("adam", dict(learning_rate=0.01, wd=0.1, clip_gradient=0.5)),
])
def test_one_pass_update_loops_match_the_numpy_formulas(name, kw, monkeypatch):
    """SGD and Adam run as one Numba loop on contiguous float arrays; the NumPy
    formulas stay as the definition (and for other arrays). Both must agree."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((7, 5)).astype(np.float32)
    grads = [rng.standard_normal((7, 5)).astype(np.float32) * 3 for _ in range(4)]
    assert optimizer._fused(w0.copy(), grads[0]) is not None       # the loops do run here
    fused, _, fused_updater = run_updates(name, 4, w0, grads, rescale_grad=0.5, **kw)
    monkeypatch.setattr(optimizer, "_fused", lambda *arrays: None)
    plain, _, plain_updater = run_updates(name, 4, w0, grads, rescale_grad=0.5, **kw)
    assert not np.array_equal(fused, w0)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    states = [fused_updater.states[0], plain_updater.states[0]]
    if states[0] is not None:
        for a, b in zip(*[s if isinstance(s, tuple) else (s,) for s in states]):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_update_loops_are_used_only_where_they_apply():
    w = np.zeros((4, 3), np.float32)
    assert [v.shape for v in optimizer._fused(w, np.ones((4, 3), np.float32))] == [(12,), (12,)]
    assert optimizer._fused(w, np.ones((4, 3))) is None               # float64 grad
    assert optimizer._fused(w, np.ones((3, 4), np.float32).T) is None  # not C-contiguous
    assert optimizer._fused(w.astype(np.int32), w.astype(np.int32)) is None
    # a strided weight still updates correctly (through NumPy)
    big = nd.zeros((4, 6))
    view = nd.NDArray(big._data[:, ::2])
    optimizer.get_updater(optimizer.create('sgd', learning_rate=1.0))(0, nd.ones((4, 3)), view)
    np.testing.assert_allclose(big.asnumpy()[:, ::2], -1.0)
    np.testing.assert_allclose(big.asnumpy()[:, 1::2], 0.0)


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


# ========================================================================== losses
from straightdope import gluon  # noqa: E402
from straightdope.gluon import loss as gloss, nn  # noqa: E402
from scipy import special  # noqa: E402

RNG = np.random.default_rng(42)
PRED = RNG.normal(size=(4, 3))
TARGET = RNG.normal(size=(4, 3))
PROB = special.softmax(RNG.normal(size=(4, 3)), axis=-1)
BINARY = (RNG.random((4, 3)) > 0.5).astype(np.float64)
SIGNED = 2 * BINARY - 1
CLASSES = np.array([0, 2, 1, 2], dtype=np.float64)


def np_softplus(x):
    return np.logaddexp(0, x)


def np_log_softmax(x):
    return x - special.logsumexp(x, axis=-1, keepdims=True)


# name -> (loss block factory, label, NumPy reference of the per-sample loss)
LOSSES = {
    'L2': (gloss.L2Loss, TARGET, lambda p, y: 0.5 * ((y - p) ** 2).mean(axis=1)),
    'L1': (gloss.L1Loss, TARGET, lambda p, y: np.abs(y - p).mean(axis=1)),
    'SoftmaxCE': (gloss.SoftmaxCrossEntropyLoss, CLASSES,
                  lambda p, y: -np_log_softmax(p)[np.arange(4), y.astype(int)]),
    'SoftmaxCE-dense': (lambda: gloss.SoftmaxCELoss(sparse_label=False), PROB,
                        lambda p, y: -(np_log_softmax(p) * y).sum(axis=1)),
    'SoftmaxCE-logits': (lambda: gloss.SoftmaxCrossEntropyLoss(from_logits=True), CLASSES,
                         lambda p, y: -p[np.arange(4), y.astype(int)]),
    'SigmoidBCE': (gloss.SigmoidBinaryCrossEntropyLoss, BINARY,
                   lambda p, y: (-(y * np.log(special.expit(p))
                                   + (1 - y) * np.log(1 - special.expit(p)))).mean(axis=1)),
    'SigmoidBCE-prob': (lambda: gloss.SigmoidBCELoss(from_sigmoid=True), BINARY,
                        lambda p, y: (-(y * np.log(special.expit(p) + 1e-12)
                                        + (1 - y) * np.log(1 - special.expit(p) + 1e-12))
                                      ).mean(axis=1)),
    'KLDiv': (gloss.KLDivLoss, PROB, lambda p, y: (y * (np.log(y + 1e-12) - p)).mean(axis=1)),
    'KLDiv-scores': (lambda: gloss.KLDivLoss(from_logits=False), PROB,
                     lambda p, y: (y * (np.log(y + 1e-12) - np_log_softmax(p))).mean(axis=1)),
    'Huber': (lambda: gloss.HuberLoss(rho=0.7), TARGET,
              lambda p, y: np.where(np.abs(y - p) > 0.7, np.abs(y - p) - 0.35,
                                    0.5 / 0.7 * (y - p) ** 2).mean(axis=1)),
    'Hinge': (gloss.HingeLoss, SIGNED, lambda p, y: np.maximum(0, 1 - p * y).mean(axis=1)),
    'SquaredHinge': (gloss.SquaredHingeLoss, SIGNED,
                     lambda p, y: np.maximum(0, 1 - p * y).__pow__(2).mean(axis=1)),
    'Logistic': (gloss.LogisticLoss, SIGNED, lambda p, y: np_softplus(-p * y).mean(axis=1)),
    'Logistic-binary': (lambda: gloss.LogisticLoss(label_format='binary'), BINARY,
                        lambda p, y: np_softplus(-p * (2 * y - 1)).mean(axis=1)),
}


def pred_input(name):
    # from_sigmoid takes probabilities: feed sigmoid(PRED) and compare with the same.
    return special.expit(PRED) if name == 'SigmoidBCE-prob' else PRED


@pytest.mark.parametrize('name', sorted(LOSSES))
def test_loss_matches_numpy(name):
    make, label, ref = LOSSES[name]
    out = make()(nd.array(pred_input(name), dtype='float64'), nd.array(label, dtype='float64'))
    assert out.shape == (4,)
    np.testing.assert_allclose(out.asnumpy(), ref(PRED, label), rtol=1e-6, atol=1e-9)


def numeric_grad(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (f(up) - f(down)) / (2 * eps)
    return grad


def autograd_grad(loss_fn, pred, label):
    p = nd.array(pred, dtype='float64')
    p.attach_grad()
    with autograd.record():
        out = loss_fn(p, nd.array(label, dtype='float64'))
    out.backward()
    return out.asnumpy(), p.grad.asnumpy()


@pytest.mark.parametrize('name', sorted(LOSSES))
def test_loss_gradient_matches_finite_differences(name):
    make, label, _ = LOSSES[name]
    loss_fn = make()
    pred = pred_input(name)
    if name.startswith(('Hinge', 'SquaredHinge', 'Huber')):
        pred = pred + 0.01       # keep away from the kinks, where the slope jumps
    _, grad = autograd_grad(loss_fn, pred, label)

    def total(p):
        return loss_fn(nd.array(p, dtype='float64'),
                       nd.array(label, dtype='float64')).asnumpy().sum()
    np.testing.assert_allclose(grad, numeric_grad(total, pred), rtol=1e-5, atol=1e-7)


# Every loss on the NumPy reference executor; on Numba (compiling costs seconds per graph)
# one loss per kind of op: pick/log_softmax, softrelu, where, plain elementwise.
HYBRID_CASES = [(name, 'numpy') for name in sorted(LOSSES)] + [
    (name, 'numba') for name in ('SoftmaxCE', 'SigmoidBCE', 'Huber', 'L2')]


@pytest.mark.parametrize('name, executor', HYBRID_CASES)
def test_hybridized_loss_equals_imperative(name, executor):
    make, label, _ = LOSSES[name]
    pred = pred_input(name).astype(np.float32)
    label = label.astype(np.float32)
    imperative = make()
    out_i, grad_i = autograd_grad(imperative, pred, label)
    hybrid = make()
    hybrid.hybridize(executor=executor)
    p = nd.array(pred)
    p.attach_grad()
    with autograd.record():
        out_h = hybrid(p, nd.array(label))
    out_h.backward()
    assert hybrid.trace_count == 1
    np.testing.assert_allclose(out_h.asnumpy(), out_i, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.grad.asnumpy(), grad_i, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('name', sorted(LOSSES))
def test_loss_on_symbols(name):
    make, label, ref = LOSSES[name]
    out = make()(mx.sym.var('pred'), mx.sym.var('label'))
    assert isinstance(out, mx.sym.Symbol)
    assert sorted(out.list_arguments()) == ['label', 'pred']
    value = out.eval(pred=nd.array(pred_input(name), dtype='float64'),
                     label=nd.array(label, dtype='float64'))[0]
    np.testing.assert_allclose(value.asnumpy(), ref(PRED, label), rtol=1e-6, atol=1e-9)


def test_weights_and_sample_weights():
    pred, label = nd.array(PRED), nd.array(TARGET)
    base = gloss.L1Loss()(pred, label).asnumpy()
    np.testing.assert_allclose(gloss.L1Loss(weight=3.0)(pred, label).asnumpy(), 3 * base,
                               rtol=1e-6)
    sw = nd.array([[1.0], [0.0], [2.0], [0.5]])
    np.testing.assert_allclose(gloss.L1Loss()(pred, label, sw).asnumpy(),
                               base * [1.0, 0.0, 2.0, 0.5], rtol=1e-6)
    # L2Loss's default weight 1 is halved inside: 0.5 * squared error.
    np.testing.assert_allclose(gloss.L2Loss(weight=2.0)(pred, label).asnumpy(),
                               ((TARGET - PRED) ** 2).mean(axis=1), rtol=1e-5)
    with pytest.raises(TypeError, match="sample_weight"):
        gloss.L1Loss(weight=nd.ones((4,)))(pred, label)


def test_pos_weight_in_sigmoid_bce():
    pw = nd.array([[1.0, 2.0, 0.5]])
    for from_sigmoid in (False, True):
        p = special.expit(PRED) if from_sigmoid else PRED
        out = gloss.SigmoidBCELoss(from_sigmoid=from_sigmoid)(
            nd.array(p, dtype='float64'), nd.array(BINARY, dtype='float64'),
            nd.ones((4, 1), dtype='float64'), nd.array(pw, dtype='float64'))
        s = special.expit(PRED)
        ref = -(BINARY * np.log(s + 1e-12) * pw.asnumpy()
                + (1 - BINARY) * np.log(1 - s + 1e-12)).mean(axis=1)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)


def test_sigmoid_bce_is_stable_for_large_scores():
    out = gloss.SigmoidBCELoss()(nd.array([[1000.0, -1000.0]]), nd.array([[0.0, 1.0]]))
    np.testing.assert_allclose(out.asnumpy(), [1000.0])          # no inf, no nan


def test_label_shapes_and_batch_axis():
    # (batch,) labels for (batch, 1) predictions are reshaped to match.
    out = gloss.L2Loss()(nd.array([[1.0], [2.0]]), nd.array([0.0, 0.0]))
    np.testing.assert_allclose(out.asnumpy(), [0.5, 2.0])
    # batch_axis=1: one value per column.
    out = gloss.L1Loss(batch_axis=1)(nd.array(PRED), nd.array(TARGET))
    np.testing.assert_allclose(out.asnumpy(), np.abs(TARGET - PRED).mean(axis=0), rtol=1e-6)
    # Class axis 1 of a (batch, classes, positions) prediction: loss per sample.
    scores = RNG.normal(size=(2, 5, 3))
    labels = np.array([[0, 4, 2], [1, 1, 3]])
    out = gloss.SoftmaxCELoss(axis=1)(nd.array(scores), nd.array(labels))
    logp = scores - special.logsumexp(scores, axis=1, keepdims=True)
    ref = -np.take_along_axis(logp, labels[:, None, :], axis=1)[:, 0, :].mean(axis=1)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)


def test_triplet_loss():
    a, pos, neg = (RNG.normal(size=(4, 3)) for _ in range(3))
    out = gloss.TripletLoss(margin=0.5)(nd.array(a), nd.array(pos), nd.array(neg))
    ref = np.maximum(0, ((pos - a) ** 2).sum(1) - ((neg - a) ** 2).sum(1) + 0.5)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_loss_repr_and_errors():
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    with pytest.raises(ValueError, match="label_format"):
        gloss.LogisticLoss(label_format='sign')


def test_exported_loss_runs_as_symbolblock(tmp_path):
    loss_fn = gloss.SoftmaxCrossEntropyLoss()
    loss_fn.hybridize()
    pred, label = nd.array(PRED), nd.array(CLASSES)
    expected = loss_fn(pred, label).asnumpy()
    loss_fn.export(str(tmp_path / 'ce'))
    loaded = gluon.SymbolBlock.imports(str(tmp_path / 'ce-symbol.json'), ['data0', 'data1'])
    np.testing.assert_allclose(loaded(pred, label).asnumpy(), expected, rtol=1e-6)


# ========================================================================= Trainer
X = RNG.normal(size=(5, 3)).astype(np.float32)
Y = RNG.normal(size=(5, 2)).astype(np.float32)
W_INIT = np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=np.float32)
B_INIT = np.array([0.05, -0.05], dtype=np.float32)


def dense_net(hybridize=False):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.weight.set_data(nd.array(W_INIT))
    net.bias.set_data(nd.array(B_INIT))
    if hybridize:
        net.hybridize(executor='numpy')
    return net


def l2_grads(w, b):
    """Gradients of sum_i L2Loss_i = sum_i 0.5 * mean_j (x_i W^T + b - y_i)_j^2, by hand."""
    err = X @ w.T + b - Y                       # (5, 2)
    return err.T @ X / 2, err.sum(axis=0) / 2   # the 1/2 is the mean over 2 outputs


def backward_l2(net):
    with autograd.record():
        loss = gloss.L2Loss()(net(nd.array(X)), nd.array(Y))
    loss.backward()


@pytest.mark.parametrize('hybridize', [False, True])
def test_trainer_sgd_step_matches_hand_update(hybridize):
    net = dense_net(hybridize)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
    w, b = W_INIT.astype(np.float64), B_INIT.astype(np.float64)
    for _ in range(3):
        backward_l2(net)
        trainer.step(batch_size=5)
        gw, gb = l2_grads(w, b)
        w, b = w - 0.5 * gw / 5, b - 0.5 * gb / 5      # step() averages over the batch
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5)
    np.testing.assert_allclose(net.bias.data().asnumpy(), b, rtol=1e-5)


def test_the_updater_gives_sgd_all_parameters_in_one_call_with_the_same_result():
    """SGD takes every parameter in one update_multi_precision call (MXNet's aggregated
    multi_sgd_update); the weights, states and update counts are those of one call per
    parameter."""
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3,), (2, 4))]
    grads = [rng.standard_normal(w.shape).astype(np.float32) for w in weights]
    kw = dict(learning_rate=0.1, wd=0.01, momentum=0.9, rescale_grad=0.5)
    seen = []

    class Watched(optimizer.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            seen.append(index)
            super().update_multi_precision(index, weight, grad, state)

    together = Watched(**kw)
    ws = [nd.array(w) for w in weights]
    optimizer.get_updater(together)([0, 1, 2], [nd.array(g) for g in grads], ws)
    assert seen == [[0, 1, 2]]
    alone = optimizer.SGD(**kw)
    updater = optimizer.get_updater(alone)
    for i, (w, g) in enumerate(zip(weights, grads)):
        one = nd.array(w)
        updater(i, nd.array(g), one)
        np.testing.assert_allclose(ws[i].asnumpy(), one.asnumpy(), rtol=1e-6)
    assert together._index_update_count == alone._index_update_count == {0: 1, 1: 1, 2: 1}


def test_an_sgd_subclass_with_its_own_update_is_still_called_per_parameter():
    calls = []

    class HalfStep(optimizer.SGD):
        def update(self, index, weight, grad, state):
            calls.append(index)
            weight[:] = weight - 0.5 * grad

    w = [nd.ones((2,)), nd.ones((3,))]
    optimizer.get_updater(HalfStep())([0, 1], [nd.ones((2,)), nd.ones((3,))], w)
    assert calls == [0, 1]
    np.testing.assert_allclose(w[1].asnumpy(), [0.5, 0.5, 0.5])


def test_sgd_updates_all_parameters_at_once_each_with_its_own_multipliers():
    """SGD's aggregated update (MXNet's multi_sgd_update) asks the scheduler once per
    step and still applies every Parameter's own lr_mult and wd_mult."""
    asked = []

    class Constant(lr_scheduler.LRScheduler):
        def __call__(self, num_update):
            asked.append(num_update)
            return 0.1

    net = dense_net()
    net.bias.lr_mult = 0.0
    net.weight.wd_mult = 2.0
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'lr_scheduler': Constant(), 'wd': 0.01})
    w = W_INIT.astype(np.float64)
    for step in (1, 2):
        backward_l2(net)
        trainer.step(5)
        w = w - 0.1 * (l2_grads(w, B_INIT)[0] / 5 + 0.02 * w)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), B_INIT)
    assert asked == [1, 2]


def test_trainer_adam_with_mults_matches_hand_update():
    net = dense_net()
    net.bias.lr_mult = 0.0            # a frozen-by-learning-rate bias
    net.weight.wd_mult = 2.0
    trainer = gluon.Trainer(net.collect_params(), 'adam',
                            {'learning_rate': 0.1, 'wd': 0.01})
    w, m, v = W_INIT.astype(np.float64), 0.0, 0.0
    for t in (1, 2):
        backward_l2(net)
        trainer.step(5)
        g = l2_grads(w, B_INIT)[0] / 5 + 0.02 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-4)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), B_INIT)


def test_trainer_accepts_dict_list_and_optimizer_instance():
    net = dense_net()
    params = net.collect_params()
    for given in (params, dict(params.items()), list(params.values())):
        trainer = gluon.Trainer(given, optimizer.SGD(learning_rate=0.3))
        assert trainer.learning_rate == 0.3
    # Dicts are taken in sorted key order: bias before weight.
    assert [p.name for p in gluon.Trainer(params, 'sgd')._params] == sorted(params.keys())
    with pytest.raises(ValueError, match="optimizer_params"):
        gluon.Trainer(params, optimizer.SGD(), {'learning_rate': 1.0})
    with pytest.raises(ValueError, match="not a Parameter"):
        gluon.Trainer([net.weight, 'bias'], 'sgd')
    with pytest.raises(ValueError, match="list or dict"):
        gluon.Trainer(net.weight, 'sgd')
    with pytest.raises(ValueError, match="kvstore"):
        gluon.Trainer(params, 'sgd', kvstore='dist_sync')
    with pytest.raises(ValueError, match="unknown optimizer"):
        gluon.Trainer(params, 'sgdd')


def test_learning_rate_property_and_setter():
    trainer = gluon.Trainer(dense_net().collect_params(), 'sgd', {'learning_rate': 0.1})
    assert trainer.learning_rate == 0.1
    trainer.set_learning_rate(0.01)
    assert trainer.learning_rate == 0.01 and trainer.optimizer.lr == 0.01


def test_allreduce_then_update_equals_step():
    nets = [dense_net(), dense_net()]
    trainers = [gluon.Trainer(n.collect_params(), 'sgd', {'learning_rate': 0.2}) for n in nets]
    for net in nets:
        backward_l2(net)
    trainers[0].step(5)
    trainers[1].allreduce_grads()
    trainers[1].update(5)
    np.testing.assert_array_equal(nets[0].weight.data().asnumpy(),
                                  nets[1].weight.data().asnumpy())


def test_uninitialized_and_deferred_parameters_are_named():
    net = nn.Dense(2, in_units=3)
    trainer = gluon.Trainer(net.collect_params(), 'sgd')
    with pytest.raises(RuntimeError, match=r"trainer.step\(\).*dense\d+_(weight|bias).*"
                                           r"initialize"):
        trainer.step(1)
    deferred = nn.Dense(2)
    deferred.initialize()
    trainer = gluon.Trainer(deferred.collect_params(), 'sgd')
    with pytest.raises(gluon.DeferredInitializationError, match="forward pass"):
        trainer.step(1)


def test_stale_gradients_raise_unless_ignored():
    class TwoHeads(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.a = nn.Dense(2, in_units=3)
            self.b = nn.Dense(2, in_units=3)

        def hybrid_forward(self, F, x, use_b):
            return self.a(x) + (self.b(x) if use_b else 0)

    net = TwoHeads()
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})

    def step_with(use_b, **kw):
        with autograd.record():
            loss = gloss.L2Loss()(net.hybrid_forward(nd, nd.array(X), use_b), nd.array(Y))
        loss.backward()
        trainer.step(5, **kw)

    step_with(True)                     # first step: every gradient is fresh
    with pytest.raises(UserWarning, match=r"Parameter '.*dense\d+_(weight|bias)' has not been "
                                          r"updated by backward.*ignore_stale_grad=True"):
        step_with(False)                # head b got no new gradient
    b_before = net.b.weight.data().asnumpy()
    a_before = net.a.weight.data().asnumpy()
    step_with(False, ignore_stale_grad=True)
    np.testing.assert_array_equal(net.b.weight.data().asnumpy(), b_before)   # skipped
    assert not np.array_equal(net.a.weight.data().asnumpy(), a_before)       # updated
    step_with(True)                     # b is used again: fresh again


def test_frozen_parameters_are_skipped():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4), nn.Dense(2, in_units=4))
    net.initialize()
    net[0].collect_params().setattr('grad_req', 'null')        # freeze the first layer
    frozen = net[0].weight.data().asnumpy()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    for _ in range(2):
        backward_l2(net)
        trainer.step(5)
    np.testing.assert_array_equal(net[0].weight.data().asnumpy(), frozen)
    assert net[1].running_mean.grad_req == 'null'


def test_save_and_load_states_resume_exactly(tmp_path):
    def trained(steps, load_from=None, net=None):
        net = net or dense_net()
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.1, 'momentum': 0.9})
        if load_from:
            trainer.load_states(load_from)
        for _ in range(steps):
            backward_l2(net)
            trainer.step(5)
        return net, trainer

    straight, _ = trained(4)
    half, trainer = trained(2)
    path = tmp_path / 'trainer.states'
    trainer.save_states(str(path))
    half.save_parameters(str(tmp_path / 'net.params'))
    resumed = dense_net()
    resumed.load_parameters(str(tmp_path / 'net.params'))
    resumed, trainer2 = trained(2, load_from=str(path), net=resumed)
    np.testing.assert_allclose(resumed.weight.data().asnumpy(),
                               straight.weight.data().asnumpy(), rtol=1e-6)
    assert trainer2.optimizer.num_update == 4 and trainer2.optimizer.momentum == 0.9
    # The file is plain arrays (no pickle) and was written in one piece.
    with np.load(path, allow_pickle=False) as data:
        assert 'state:0' in data.files and 'optimizer:momentum' in data.files
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith('.tmp')] == []


def test_load_states_errors(tmp_path):
    net = dense_net()
    trainer = gluon.Trainer(net.collect_params(), 'adam')
    backward_l2(net)
    trainer.step(5)
    path = str(tmp_path / 'adam.states')
    trainer.save_states(path)
    with pytest.raises(ValueError, match="saved by 'adam'"):
        gluon.Trainer(dense_net().collect_params(), 'sgd').load_states(path)
    bigger = nn.Dense(3, in_units=3)
    bigger.initialize()
    with pytest.raises(ValueError, match="different network"):
        gluon.Trainer(bigger.collect_params(), 'adam').load_states(path)
    (tmp_path / 'junk.states').write_bytes(b'not an npz file')
    with pytest.raises(ArrayFileError):
        trainer.load_states(str(tmp_path / 'junk.states'))


def test_trainer_with_scheduler_decays_per_step():
    sched = lr_scheduler.MultiFactorScheduler(step=[1], factor=0.1)
    net = dense_net()
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 1.0, 'lr_scheduler': sched})
    lrs = []
    for _ in range(3):
        backward_l2(net)
        trainer.step(5)
        lrs.append(trainer.learning_rate)
    np.testing.assert_allclose(lrs, [1.0, 0.1, 0.1])


@pytest.mark.parametrize("axis,keepdims", [(-1, False), (-1, True), (1, True), (0, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_loss_ops_one_pass_loops_match_their_numpy_formulas(axis, keepdims, dtype,
                                                                 monkeypatch):
    """Imperatively, once Numba is loaded, _sparse_softmax_ce and its gradient run as
    one loop (compiler/kernels/softmax.py); NumPy stays the definition, and both agree
    for any class axis, with labels out of range clipped into it."""
    import numba  # noqa: F401  (the loops are used once Numba is loaded)
    import straightdope.compiler  # noqa: F401  (it hands the loops to ops/reduce.py)
    from straightdope.ops import reduce
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, 3, 5)) * 4).astype(dtype)
    label_shape = tuple(n for k, n in enumerate(x.shape) if k != axis % 3)
    label = rng.integers(-1, x.shape[axis] + 1, label_shape).astype(np.float32)
    attrs = {"axis": axis, "keepdims": keepdims}
    assert reduce._compiled_ce_loops(attrs, x, label) is not None
    loss = reduce._sparse_softmax_ce_forward(attrs, x, label)
    og = rng.standard_normal(loss.shape).astype(dtype)
    grad = reduce._sparse_softmax_ce_grad_forward(attrs, og, x, label)
    monkeypatch.setattr(reduce, "_ce_loops", False)
    want_loss = reduce._sparse_softmax_ce_forward(attrs, x, label)
    want_grad = reduce._sparse_softmax_ce_grad_forward(attrs, og, x, label)
    assert loss.shape == want_loss.shape and loss.dtype == want_loss.dtype == dtype
    assert grad.shape == x.shape and grad.dtype == dtype
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)
