"""MXNet 1.9 behaviours of the gluon side (metrics, optimizers, schedulers, losses, layers,
Block/Parameter rules), each checked against numbers worked out by hand or with NumPy."""
import json
import math
import sys

import numpy as np
import pytest

import straightdope as mx
from straightdope import lr_scheduler, metric, nd, optimizer


# ======================================================================= metrics
SCORES = np.array([[0.3, 0.7], [0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.2, 0.8]])
LABELS = np.array([1, 1, 0, 0, 1])     # predicted 1, 0, 1, 0, 1 -> tp 2, fn 1, fp 1, tn 1


def test_f1_is_the_harmonic_mean_of_precision_and_recall():
    f1 = metric.create('f1')
    f1.update([nd.array(LABELS)], [nd.array(SCORES)])
    precision, recall = 2 / 3, 2 / 3
    assert f1.get() == ('f1', pytest.approx(2 * precision * recall / (precision + recall)))


def test_f1_macro_averages_batches_and_micro_pools_the_counts():
    macro, micro = metric.F1(average='macro'), metric.F1(average='micro')
    batches = [(LABELS[:2], SCORES[:2]), (LABELS[2:], SCORES[2:])]
    for label, score in batches:
        macro.update([nd.array(label)], [nd.array(score)])
        micro.update([nd.array(label)], [nd.array(score)])
    # batch 1: tp 1, fn 1 -> f1 2/3; batch 2: tp 1, fp 1, tn 1 -> f1 2/3
    assert macro.get()[1] == pytest.approx(2 / 3)
    assert micro.get()[1] == pytest.approx(2 / 3)          # pooled: tp 2, fp 1, fn 1
    micro.update([nd.array([1, 1])], [nd.array([[0.9, 0.1], [0.9, 0.1]])])   # two misses
    assert micro.get()[1] == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))


def test_mcc_of_a_classifier_that_always_says_yes_is_zero():
    mcc = metric.create('mcc')
    mcc.update([nd.array([0, 1, 0, 1])], [nd.array([[0.1, 0.9]] * 4)])
    assert mcc.get() == ('mcc', 0.0)
    mcc.reset()
    mcc.update([nd.array(LABELS)], [nd.array(SCORES)])
    tp, fp, fn, tn = 2, 1, 1, 1
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert mcc.get()[1] == pytest.approx(expected)


def test_binary_metrics_refuse_three_classes_and_say_what_to_use():
    with pytest.raises(ValueError, match="binary.*pcc"):
        metric.F1().update([nd.array([0, 1, 2])], [nd.array(np.eye(3))])


def test_perplexity_is_exp_of_the_mean_negative_log_probability():
    perp = metric.create('perplexity', ignore_label=None)
    probs = np.array([[0.3, 0.7], [0.0, 1.0], [0.4, 0.6]])
    perp.update([nd.array([0, 1, 1])], [nd.array(probs)])
    expected = math.exp(-(math.log(0.3) + math.log(1.0) + math.log(0.6)) / 3)
    assert perp.get() == ('perplexity', pytest.approx(expected))


def test_perplexity_leaves_out_the_ignored_label():
    perp = metric.Perplexity(ignore_label=-1)
    perp.update([nd.array([0, -1])], [nd.array([[0.5, 0.5], [0.01, 0.99]])])
    assert perp.get()[1] == pytest.approx(2.0) and perp.num_inst == 1


def test_nll_loss_by_name_is_the_mean_negative_log_likelihood():
    nll = metric.create('nll_loss')
    nll.update([nd.array([2, 0])], [nd.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])])
    assert nll.get()[0] == 'nll-loss'
    assert nll.get()[1] == pytest.approx(-(math.log(0.5) + math.log(0.6)) / 2, rel=1e-6)


def test_pearsonr_macro_matches_numpy_and_micro_pools_all_batches():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 10)), rng.normal(size=(2, 10))
    macro, micro = metric.create('pearsonr'), metric.PearsonCorrelation(average='micro')
    for label, pred in zip(a, b):
        macro.update([nd.array(label)], [nd.array(pred)])
        micro.update([nd.array(label)], [nd.array(pred)])
    per_batch = [np.corrcoef(p, l)[0, 1] for l, p in zip(a, b)]
    assert macro.get() == ('pearsonr', pytest.approx(np.mean(per_batch), rel=1e-5))
    assert micro.get()[1] == pytest.approx(np.corrcoef(b.ravel(), a.ravel())[0, 1], rel=1e-5)


def test_pcc_on_two_classes_equals_mcc_and_grows_with_new_classes():
    pcc, mcc = metric.create('pcc'), metric.MCC()
    pcc.update([nd.array(LABELS)], [nd.array(SCORES)])
    mcc.update([nd.array(LABELS)], [nd.array(SCORES)])
    assert pcc.get()[1] == pytest.approx(mcc.get()[1])
    pcc.reset()
    pcc.update([nd.array([0, 1, 2, 2])], [nd.array([0, 1, 2, 2])])   # class indices
    assert pcc.get()[1] == pytest.approx(1.0) and pcc.confusion.shape == (3, 3)


def test_a_metric_config_in_json_recreates_the_same_metric():
    for name, kwargs in [('acc', {'axis': 0}), ('f1', {}), ('perplexity', {'ignore_label': -1}),
                         ('nll_loss', {}), ('pcc', {}), ('loss', {}), ('top_k_accuracy',
                                                                       {'top_k': 3})]:
        original = metric.create(name, **kwargs)
        copy = metric.create(json.dumps(original.get_config()))
        assert type(copy) is type(original) and copy.get_config() == original.get_config()


def test_a_composite_metric_survives_a_json_round_trip():
    composite = metric.create(['acc', 'f1'])
    copy = metric.create(json.dumps(composite.get_config()))
    assert [type(m) for m in copy.metrics] == [metric.Accuracy, metric.F1]


def test_json_configs_are_parsed_as_data_and_unknown_names_are_refused():
    with pytest.raises(ValueError, match="Unknown metric 'os.system'"):
        metric.create('{"metric": "os.system"}')


def test_metric_np_wraps_a_numpy_function():
    m = metric.np(lambda label, pred: float(np.abs(label - pred).sum()), name='l1')
    m.update([nd.array([1.0, 2.0])], [nd.array([1.5, 2.0])])
    assert m.get() == ('l1', 0.5)


# ==================================================================== optimizers
def _one_step(name, weight, grad, steps=1, **kwargs):
    opt = optimizer.create(name, **kwargs)
    w, g = nd.array(weight), nd.array(grad)
    state = opt.create_state(0, w)
    for _ in range(steps):
        opt.update(0, w, g, state)
    return w.asnumpy(), state


W0 = np.array([0.5, -1.0, 2.0], dtype=np.float32)
G0 = np.array([0.1, -0.2, 0.3], dtype=np.float32)


def test_trainer_knows_the_optimizers_by_their_mxnet_names():
    for name in ['sgd', 'nag', 'adam', 'adamax', 'nadam', 'rmsprop', 'adagrad', 'adadelta',
                 'signum', 'ftml', 'lamb', 'sgld', 'dcasgd', 'ftrl']:
        assert isinstance(optimizer.create(name), optimizer.Optimizer)
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'lamb', {'learning_rate': 0.01})
    assert type(trainer._optimizer).__name__ == 'LAMB'


def test_adamax_first_step_moves_each_weight_by_the_learning_rate():
    # t=1: mean = 0.1 g, u = |g|, lr_t = lr / 0.1  ->  step = lr * sign(g)
    w, _ = _one_step('adamax', W0, G0, learning_rate=0.002)
    np.testing.assert_allclose(w, W0 - 0.002 * np.sign(G0), rtol=1e-6)


def test_signum_steps_by_the_sign_of_the_momentum():
    w, mom = _one_step('signum', W0, G0, learning_rate=0.1, momentum=0.9)
    np.testing.assert_allclose(mom.asnumpy(), -0.1 * G0, rtol=1e-6)
    np.testing.assert_allclose(w, W0 - 0.1 * np.sign(G0), rtol=1e-6)
    w, _ = _one_step('signum', W0, G0, learning_rate=0.1, momentum=0.0, wd_lh=0.5)
    np.testing.assert_allclose(w, (1 - 0.05) * W0 - 0.1 * np.sign(G0), rtol=1e-6)


def test_adadelta_first_step_by_hand():
    rho, eps = 0.9, 1e-5
    w, (acc_g, acc_delta) = _one_step('adadelta', W0, G0, rho=rho, epsilon=eps)
    acc = (1 - rho) * G0.astype(np.float64) ** 2
    delta = np.sqrt(eps) / np.sqrt(acc + eps) * G0
    np.testing.assert_allclose(acc_g.asnumpy(), acc, rtol=1e-5)
    np.testing.assert_allclose(acc_delta.asnumpy(), (1 - rho) * delta ** 2, rtol=1e-4)
    np.testing.assert_allclose(w, W0 - delta, rtol=1e-5)


def test_ftml_first_step_by_hand():
    b1, b2, eps, lr = 0.6, 0.999, 1e-8, 0.1
    w, (d, v, z) = _one_step('ftml', W0, G0, learning_rate=lr, beta1=b1, beta2=b2,
                             epsilon=eps)
    v1 = (1 - b2) * G0.astype(np.float64) ** 2
    d1 = (1 - b1) / lr * (np.sqrt(v1 / (1 - b2)) + eps)
    z1 = (1 - b1) * G0 - d1 * W0
    np.testing.assert_allclose(d.asnumpy(), d1, rtol=1e-5)
    np.testing.assert_allclose(w, -z1 / d1, rtol=1e-5)


def test_lamb_scales_adams_direction_by_the_trust_ratio():
    lr, wd = 0.01, 0.1
    w, _ = _one_step('lamb', W0, G0, learning_rate=lr, wd=wd)
    # t=1 with bias correction: mean_hat = g, var_hat = g**2 -> direction ~ sign(g)
    direction = G0 / (np.abs(G0) + 1e-6) + wd * W0
    ratio = np.linalg.norm(W0) / np.linalg.norm(direction)
    np.testing.assert_allclose(w, W0 - lr * ratio * direction, rtol=1e-5)


def test_lamb_bounds_clip_the_weight_norm():
    w, _ = _one_step('lamb', W0, G0, learning_rate=0.01, upper_bound=0.1)
    direction = G0 / (np.abs(G0) + 1e-6)
    np.testing.assert_allclose(w, W0 - 0.01 * 0.1 / np.linalg.norm(direction) * direction,
                               rtol=1e-5)


def test_nadam_first_step_by_hand():
    lr, b1, b2, eps, decay = 0.001, 0.9, 0.999, 1e-8, 0.004
    w, _ = _one_step('nadam', W0, G0, learning_rate=lr)
    g = G0.astype(np.float64)
    mom1 = b1 * (1 - 0.5 * 0.96 ** (1 * decay))
    mom2 = b1 * (1 - 0.5 * 0.96 ** (2 * decay))
    m_bar = (1 - mom1) * g / (1 - mom1) + mom2 * (1 - b1) * g / (1 - mom1 * mom2)
    v_hat = (1 - b2) * g ** 2 / (1 - b2)
    np.testing.assert_allclose(w, W0 - lr * m_bar / (np.sqrt(v_hat) + eps), rtol=1e-5)


def test_sgld_is_half_a_gradient_step_plus_seeded_noise():
    lr = 0.04
    mx.random.seed(7)
    w, _ = _one_step('sgld', W0, G0, learning_rate=lr)
    mx.random.seed(7)
    noise = nd.random.normal(0, math.sqrt(lr), shape=W0.shape).asnumpy()
    np.testing.assert_allclose(w, W0 - lr / 2 * G0 + noise, rtol=1e-5)


def test_ftrl_sets_weights_with_small_accumulated_gradients_to_zero():
    w, (z, n) = _one_step('ftrl', W0, G0, learning_rate=0.1, lamda1=0.15)
    z1 = G0 - (np.abs(G0) - 0) * W0 / 0.1
    expected = np.where(np.abs(z1) > 0.15,
                        (np.sign(z1) * 0.15 - z1) / ((1 + np.abs(G0)) / 0.1), 0)
    np.testing.assert_allclose(w, expected, rtol=1e-5, atol=1e-7)


def test_dcasgd_without_history_is_plain_sgd_with_weight_decay():
    w, (mom, previous) = _one_step('dcasgd', W0, G0, learning_rate=0.1, wd=0.01)
    np.testing.assert_allclose(w, W0 - 0.1 * (G0 + 0.01 * W0), rtol=1e-6)
    np.testing.assert_allclose(previous.asnumpy(), W0) and mom is None


def test_multi_precision_float16_weights_update_through_a_float32_copy():
    opt = optimizer.create('sgd', learning_rate=0.1, multi_precision=True)
    w = nd.array([1.0, 2.0], dtype=np.float16)
    state = opt.create_state_multi_precision(0, w)
    momentum, master = state                # SGD's order in MXNet: (state, master copy)
    assert momentum is None and master.dtype == np.float32
    opt.update_multi_precision(0, w, nd.array([1e-3, 1e-3], dtype=np.float16), state)
    assert w.dtype == np.float16
    np.testing.assert_allclose(master.asnumpy(), [1.0 - 1e-4, 2.0 - 1e-4], rtol=1e-6)
    adam = optimizer.create('adam', multi_precision=True)
    master, (mean, var) = adam.create_state_multi_precision(0, w)   # the others: master first
    assert master.dtype == mean.dtype == np.float32


def test_a_list_of_parameters_updates_each_of_them():
    opt = optimizer.create('adam')
    ws = [nd.array(W0), nd.array(W0 * 2)]
    gs = [nd.array(G0), nd.array(G0)]
    states = [opt.create_state(i, w) for i, w in enumerate(ws)]
    opt.update_multi_precision([0, 1], ws, gs, states)
    for w, start in zip(ws, (W0, W0 * 2)):
        np.testing.assert_allclose(w.asnumpy(), start - 0.001 * np.sign(G0), rtol=1e-4)


# ===================================================================== schedules
def test_the_schedules_base_lr_is_the_learning_rate_when_none_is_given():
    sched = lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    assert optimizer.Optimizer(lr_scheduler=sched).learning_rate == 1024
    given = optimizer.Optimizer(lr_scheduler=lr_scheduler.FactorScheduler(step=1),
                                learning_rate=0.3)
    assert given.learning_rate == 0.3
    given.lr_scheduler.base_lr = 0.4
    assert given.learning_rate == 0.4


def test_poly_and_cosine_schedules_by_hand():
    poly = lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.0)
    assert [poly(t) for t in (0, 5, 10, 20)] == pytest.approx([1.0, 0.25, 0.0, 0.0])
    cos = lr_scheduler.CosineScheduler(max_update=10, base_lr=2.0, final_lr=1.0)
    assert [cos(t) for t in (0, 5, 10)] == pytest.approx([2.0, 1.5, 1.0])
    warm = lr_scheduler.CosineScheduler(max_update=12, base_lr=1.0, warmup_steps=2,
                                        warmup_begin_lr=0.5)
    assert warm(1) == pytest.approx(0.75) and warm(7) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="max_update"):
        lr_scheduler.PolyScheduler(max_update=0)


# ======================================================================== losses
from straightdope import autograd, gluon  # noqa: E402


@pytest.mark.parametrize("hybridize", [False, True])
def test_cosine_embedding_loss_pulls_similar_pairs_together(hybridize):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    label = np.array([1, -1, 1, -1])
    loss_fn = gluon.loss.CosineEmbeddingLoss(margin=0.2)
    if hybridize:
        loss_fn.hybridize()
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        loss = loss_fn(x, nd.array(b), nd.array(label))
    loss.backward()
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = np.where(label == 1, 1 - cos, np.maximum(cos - 0.2, 0))
    assert loss.shape == (4, 1)
    np.testing.assert_allclose(loss.asnumpy().ravel(), expected, rtol=1e-5)
    eps = 1e-3            # finite differences of the summed loss w.r.t. a[0, 0]
    bumped = a.copy()
    bumped[0, 0] += eps
    cos_b = (bumped * b).sum(1) / (np.linalg.norm(bumped, axis=1) * np.linalg.norm(b, axis=1))
    numeric = (np.where(label == 1, 1 - cos_b, np.maximum(cos_b - 0.2, 0)).sum()
               - expected.sum()) / eps
    assert x.grad.asnumpy()[0, 0] == pytest.approx(numeric, rel=1e-2)


@pytest.mark.parametrize("hybridize", [False, True])
def test_poisson_nll_loss_is_one_mean_over_all_elements(hybridize):
    rng = np.random.default_rng(2)
    pred, target = rng.uniform(1, 5, (2, 3)), rng.uniform(0.5, 5, (2, 3))
    logits = gluon.loss.PoissonNLLLoss()
    full = gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True)
    if hybridize:
        logits.hybridize()
        full.hybridize()
    got = logits(nd.array(pred), nd.array(target)).asnumpy()
    assert got.size == 1
    assert got.item() == pytest.approx(np.mean(np.exp(pred) - target * pred), rel=1e-5)
    stirling = (target * np.log(target) - target + 0.5 * np.log(2 * np.pi * target)) * (target > 1)
    expected = np.mean(pred - target * np.log(pred + 1e-8) + stirling)
    assert full(nd.array(pred), nd.array(target)).asnumpy().item() == pytest.approx(expected,
                                                                                   rel=1e-5)


# =============================================================== Block, Parameter
def test_replacing_a_child_block_by_another_type_raises_type_error():
    block = gluon.Block()
    block.child = gluon.Block()
    block.child = gluon.Block()                # same type: fine, and re-registered
    assert list(block._children.values()) == [block.child]
    with pytest.raises(TypeError, match="child is a Block; it cannot be replaced by a tuple"):
        block.child = (2,)


def test_replacing_a_parameter_attribute_by_another_type_raises_type_error():
    block = gluon.Block()
    block.weight = gluon.Parameter('weight', shape=(2,))
    with pytest.raises(TypeError, match="weight is a Parameter"):
        block.weight = None


def test_initializers_built_alike_are_equal_and_a_shared_parameter_keeps_its_init():
    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.factor = self.params.get('factor', shape=(1,),
                                              init=mx.init.Constant(-10.0))

        def hybrid_forward(self, F, x, factor):
            return F.broadcast_mul(x, factor)

    first = Scale()
    shared, other = Scale(params=first.collect_params()), Scale()
    assert shared.factor is first.factor and shared.factor.init is first.factor.init
    assert other.factor.init == first.factor.init and other.factor is not first.factor
    assert mx.init.Constant(1) != mx.init.Constant(2) and mx.init.Constant(1) != mx.init.One()


def test_a_constant_initializer_holding_an_array_dumps_to_json():
    init = mx.init.Constant(nd.ones((2, 2)))
    assert json.loads(init.dumps()) == ['constant', {'value': [[1.0, 1.0], [1.0, 1.0]]}]
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'
    assert json.loads(mx.init.Constant(np.zeros(2)).dumps())[1] == {'value': [0.0, 0.0]}


# ======================================================================== layers
from straightdope.gluon import nn  # noqa: E402


def _run(layer, x, hybridize):
    """Forward and the gradient of sum(output * weights) w.r.t. the input."""
    layer.initialize()
    if hybridize:
        layer.hybridize()
    data = nd.array(x)
    data.attach_grad()
    with autograd.record():
        out = layer(data)
    heads = np.linspace(-1, 1, out.size).reshape(out.shape).astype(np.float32)
    out.backward(nd.array(heads))
    return out.asnumpy(), data.grad.asnumpy(), heads


def _numeric_grad(f, x, heads, eps=1e-3):
    grad = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = ((f(up) - f(down)) * heads).sum() / (2 * eps)
    return grad


@pytest.mark.parametrize("hybridize", [False, True])
def test_conv1d_has_mxnets_weight_shape_and_matches_numpy(hybridize):
    x = np.random.default_rng(3).normal(size=(2, 3, 9)).astype(np.float32)
    layer = nn.Conv1D(4, 3, strides=2, padding=1, in_channels=3)
    out, grad, heads = _run(layer, x, hybridize)
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    assert w.shape == (4, 3, 3) and out.shape == (2, 4, 5)

    def conv(x):
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1)))
        return np.stack([np.einsum('ncw,fcw->nf', padded[:, :, 2 * o:2 * o + 3], w)
                         for o in range(5)], axis=2) + b[None, :, None]
    np.testing.assert_allclose(out, conv(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grad, _numeric_grad(conv, x.astype(np.float64), heads),
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("hybridize", [False, True])
def test_1d_pooling_takes_windows_along_the_sequence(hybridize):
    x = np.arange(16, dtype=np.float32).reshape(1, 2, 8) % 5
    out, _, _ = _run(nn.MaxPool1D(2), x, hybridize)
    np.testing.assert_array_equal(out, x.reshape(1, 2, 4, 2).max(-1))
    out, _, _ = _run(nn.AvgPool1D(4, strides=2), x, hybridize)
    np.testing.assert_allclose(out, np.stack([x[..., i:i + 4].mean(-1) for i in (0, 2, 4)], -1))


@pytest.mark.parametrize("hybridize", [False, True])
def test_global_pools_reduce_every_axis_after_the_channels(hybridize):
    x = np.random.default_rng(4).normal(size=(2, 3, 2, 3, 4)).astype(np.float32)
    out, _, _ = _run(nn.GlobalMaxPool3D(), x, hybridize)
    np.testing.assert_allclose(out, x.max(axis=(2, 3, 4), keepdims=True))
    out, _, _ = _run(nn.GlobalAvgPool1D(), x[:, :, 0, 0], hybridize)
    np.testing.assert_allclose(out, x[:, :, 0, 0].mean(-1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("hybridize", [False, True])
def test_instance_norm_normalises_each_channel_of_each_sample(hybridize):
    x = np.random.default_rng(5).normal(2, 3, size=(2, 3, 4, 4)).astype(np.float32)
    layer = nn.InstanceNorm(scale=True, gamma_initializer=mx.init.Constant(2.0),
                            beta_initializer=mx.init.Constant(0.5))
    out, grad, heads = _run(layer, x, hybridize)
    assert layer.gamma.shape == (3,) and layer.beta.shape == (3,)

    def norm(x):
        mean, var = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
        return 2.0 * (x - mean) / np.sqrt(var + 1e-5) + 0.5
    np.testing.assert_allclose(out, norm(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad, _numeric_grad(norm, x.astype(np.float64), heads),
                               rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("hybridize", [False, True])
def test_group_norm_normalises_groups_of_channels_with_one_gamma_per_group(hybridize):
    x = np.random.default_rng(6).normal(size=(2, 4, 3, 3)).astype(np.float32)
    layer = nn.GroupNorm(num_groups=2)
    out, grad, heads = _run(layer, x, hybridize)
    assert layer.gamma.shape == (2,)

    def norm(x):
        g = x.reshape(2, 2, -1)
        g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
        return g.reshape(x.shape)
    np.testing.assert_allclose(out, norm(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad, _numeric_grad(norm, x.astype(np.float64), heads),
                               rtol=1e-2, atol=1e-3)


def test_group_norm_says_when_channels_do_not_split_into_groups():
    layer = nn.GroupNorm(num_groups=3)
    layer.initialize()
    with pytest.raises(ValueError, match="4 channels do not split into num_groups=3"):
        layer(nd.ones((1, 4, 2, 2)))


@pytest.mark.parametrize("hybridize", [False, True])
def test_reflection_pad_mirrors_the_border_without_repeating_it(hybridize):
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    out, grad, heads = _run(nn.ReflectionPad2D(2), x, hybridize)
    expected = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode='reflect')
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(grad, _numeric_grad(
        lambda v: np.pad(v, ((0, 0), (0, 0), (2, 2), (2, 2)), mode='reflect'),
        x.astype(np.float64), heads), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="padding"):
        nn.ReflectionPad2D((1, 0, 0, 0, 1, 1, 1, 1))


# ============================================= 1-D/3-D and transposed convolutions
def _imperative_and_hybridized(layer, x):
    """(output, data gradient) imperatively, then the same after hybridize()."""
    results = []
    for hybrid in (False, True):
        if hybrid:
            layer.hybridize()
        data = nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            out = layer(data)
        out.backward()
        results.append((out.asnumpy(), data.grad.asnumpy()))
    return results


def test_conv3d_is_a_sum_of_2d_convolutions_over_the_depth_offsets():
    from straightdope.gluon import nn
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5, 5)).astype(np.float32)
    layer = nn.Conv3D(4, (2, 3, 3), in_channels=3, use_bias=False)
    layer.initialize()
    w = layer.weight.data().asnumpy()
    got = layer(nd.array(x)).asnumpy()
    want = np.stack([sum(nd.Convolution(nd.array(x[:, :, d + i]), nd.array(w[:, :, i]),
                                        kernel=(3, 3), num_filter=4, no_bias=True).asnumpy()
                         for i in range(2)) for d in range(3)], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert layer.weight.shape == (4, 3, 2, 3, 3)


def test_conv3d_and_3d_pools_give_the_same_numbers_hybridized():
    from straightdope.gluon import nn
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6, 5)).astype(np.float32)
    for layer in (nn.Conv3D(3, 3, strides=2, padding=1, groups=1, activation='relu'),
                  nn.MaxPool3D(2), nn.AvgPool3D(3, 2, 1, count_include_pad=False)):
        layer.initialize()
        (out, dx), (out_h, dx_h) = _imperative_and_hybridized(layer, x)
        np.testing.assert_allclose(out_h, out, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dx_h, dx, rtol=1e-5, atol=1e-6)


def test_max_pool_3d_takes_the_largest_value_of_each_cube():
    from straightdope.gluon import nn
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 4, 6)).astype(np.float32)
    out = nn.MaxPool3D((2, 2, 3))(nd.array(x)).asnumpy()
    want = x.reshape(1, 2, 2, 2, 2, 2, 2, 3).max(axis=(3, 5, 7))
    np.testing.assert_array_equal(out, want)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv(x, w), y> == <x, conv_transpose(y, w)> for every x, y: the transposed
    # convolution is exactly the gradient of the convolution wrt its data.
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)      # (out, in, kh, kw)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    attrs = dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0), no_bias=True)
    y = nd.Convolution(nd.array(x), nd.array(w), num_filter=4, **attrs)
    g = rng.standard_normal(y.shape).astype(np.float32)
    back = nd.Deconvolution(nd.array(g), nd.array(w), num_filter=3, **attrs)
    assert back.shape == x.shape
    np.testing.assert_allclose((y.asnumpy() * g).sum(), (x * back.asnumpy()).sum(),
                               rtol=1e-4)


def test_conv_transpose_output_size_follows_mxnet_formula():
    from straightdope.gluon import nn
    # (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + 1 + output_padding
    for layer, shape, want in [
            (nn.Conv1DTranspose(5, 3, strides=2), (1, 4, 10), (1, 5, 21)),
            (nn.Conv2DTranspose(16, (3, 4), strides=4, output_padding=3, in_channels=4),
             (1, 4, 20, 20), (1, 16, 82, 83)),
            (nn.Conv2DTranspose(6, 3, padding=1, dilation=2, groups=2), (2, 4, 5, 5),
             (2, 6, 7, 7)),
            (nn.Conv3DTranspose(2, (1, 2, 3), strides=(1, 2, 1)), (1, 3, 2, 3, 4),
             (1, 2, 2, 6, 6))]:
        layer.initialize()
        assert layer(nd.ones(shape)).shape == want
    assert layer.weight.shape == (3, 2, 1, 2, 3)                  # (in, out // groups, ...)


def test_conv2d_transpose_trains_the_same_hybridized():
    from straightdope.gluon import nn
    layer = nn.Conv2DTranspose(4, 3, strides=2, groups=2, in_channels=2, activation='tanh')
    layer.initialize()
    x = np.random.default_rng(4).standard_normal((2, 2, 4, 5)).astype(np.float32)
    (out, dx), (out_h, dx_h) = _imperative_and_hybridized(layer, x)
    np.testing.assert_allclose(out_h, out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx_h, dx, rtol=1e-5, atol=1e-5)


def test_channels_last_pooling_equals_channels_first_transposed():
    from straightdope.gluon import nn
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 8)).astype(np.float32)
    first = nn.AvgPool2D(3, 2, 1, count_include_pad=False)(nd.array(x)).asnumpy()
    last = nn.AvgPool2D(3, 2, 1, count_include_pad=False, layout='NHWC')(
        nd.array(x.transpose(0, 2, 3, 1))).asnumpy()
    np.testing.assert_allclose(last, first.transpose(0, 2, 3, 1), rtol=1e-6)
    seq = x[:, :, 0]
    np.testing.assert_allclose(
        nn.MaxPool1D(3, layout='NWC')(nd.array(seq.transpose(0, 2, 1))).asnumpy(),
        nn.MaxPool1D(3)(nd.array(seq)).asnumpy().transpose(0, 2, 1))
    with pytest.raises(ValueError, match="layout"):
        nn.Conv2DTranspose(2, 3, layout='NHWC')


def test_softmax_cross_entropy_is_the_same_imperatively_and_hybridized():
    # imperatively the loss is one fused op; hybridized it keeps MXNet's log_softmax/pick
    from straightdope import gluon
    rng = np.random.default_rng(6)
    for axis, shape, label_shape in [(-1, (5, 4), (5,)), (1, (3, 4, 2), (3, 2))]:
        pred = rng.standard_normal(shape).astype(np.float32)
        label = rng.integers(0, 4, label_shape).astype(np.float32)
        weight = rng.uniform(0.5, 2, (shape[0], 1)).astype(np.float32)
        results = []
        for hybrid in (False, True):
            loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(axis=axis, weight=0.5)
            if hybrid:
                loss_fn.hybridize()
            p = nd.array(pred)
            p.attach_grad()
            with mx.autograd.record():
                loss = loss_fn(p, nd.array(label), nd.array(weight) if axis == -1 else None)
            loss.backward()
            results.append((loss.asnumpy(), p.grad.asnumpy()))
        np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)
        assert results[0][0].shape == (shape[0],)


# ======================================================================= CTCLoss
def _ctc_by_enumeration(scores, label, blank):
    """-log of the summed probability of every path that collapses to `label`."""
    import itertools
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(scores.shape[1]), repeat=scores.shape[0]):
        merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in merged if k != blank] == list(label):
            total += np.prod([probs[t, k] for t, k in enumerate(path)])
    return -np.log(total)


def test_ctc_loss_sums_the_probability_of_every_alignment():
    from straightdope import gluon
    rng = np.random.default_rng(7)
    scores = rng.standard_normal((2, 5, 3))                       # NTC, blank is class 2
    labels = [[0, 1], [1, 1]]                                     # a repeat needs a blank
    loss = gluon.loss.CTCLoss()(nd.array(scores, dtype='float64'),
                                nd.array([[0, 1, -1], [1, 1, -1]]))
    want = [_ctc_by_enumeration(scores[n], labels[n], blank=2) for n in range(2)]
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-10)


def test_ctc_loss_counts_only_the_given_frames_and_labels():
    from straightdope import gluon
    rng = np.random.default_rng(8)
    scores = rng.standard_normal((2, 6, 4))
    short = gluon.loss.CTCLoss()(nd.array(scores[:, :4]), nd.array([[2, 1], [0, 0]]))
    padded = gluon.loss.CTCLoss()(nd.array(scores), nd.array([[2, 1, 0], [0, 0, 3]]),
                                  nd.array([4, 4]), nd.array([2, 2]))
    np.testing.assert_allclose(padded.asnumpy(), short.asnumpy(), rtol=1e-5)
    only_labels = gluon.loss.CTCLoss()(nd.array(scores[:, :4]), nd.array([[2, 1, 3], [0, 0, 1]]),
                                       None, nd.array([2, 2]))
    np.testing.assert_allclose(only_labels.asnumpy(), short.asnumpy(), rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="outside 0..3"):
        gluon.loss.CTCLoss()(nd.array(scores), nd.array([[5, 1]]))


def test_ctc_loss_trains_the_same_hybridized_and_its_gradient_is_softmax_minus_posterior():
    from straightdope import gluon
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 7, 5)).astype(np.float32)
    label = nd.array([[1, 2, 3], [4, -1, -1], [0, 0, -1]])
    results = []
    for hybrid in (False, True):
        loss_fn = gluon.loss.CTCLoss()
        if hybrid:
            loss_fn.hybridize()
        data = nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            loss = loss_fn(data, label)
        loss.backward()
        results.append((loss.asnumpy(), data.grad.asnumpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
    # each frame's gradient sums to 0: softmax sums to 1, and so do the posteriors
    np.testing.assert_allclose(results[0][1].sum(axis=2), 0, atol=1e-5)


# ============================================== PReLU, Bilinear, Dataset.shard
def test_prelu_learns_one_slope_or_one_per_channel():
    from straightdope.gluon import nn
    x = nd.array([[[-1.0, 2.0], [-2.0, 3.0], [-4.0, 0.5]]])          # (1, 3 channels, 2)
    prelu = nn.PReLU()
    prelu.initialize()
    np.testing.assert_allclose(prelu(x).asnumpy(), np.where(x.asnumpy() >= 0, x.asnumpy(),
                                                            0.25 * x.asnumpy()))
    per_channel = nn.PReLU(mx.init.Constant(nd.array([0.1, 0.25, 0.5])), in_channels=3)
    per_channel.initialize()
    np.testing.assert_allclose(per_channel(x).asnumpy(),
                               [[[-0.1, 2.0], [-0.5, 3.0], [-2.0, 0.5]]])
    with mx.autograd.record():
        out = per_channel(x)
    out.backward()
    np.testing.assert_allclose(per_channel.alpha.grad().asnumpy(), [-1.0, -2.0, -4.0])


def test_bilinear_initializer_gives_an_upsampling_kernel():
    weight = nd.zeros((2, 1, 4, 4))
    mx.init.Bilinear()._init_weight('up_weight', weight)
    ramp = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(weight.asnumpy()[1, 0], np.outer(ramp, ramp))


def test_dataset_shard_splits_into_contiguous_parts_the_first_ones_larger():
    from straightdope.gluon.data import SimpleDataset
    data = SimpleDataset(list(range(9)))
    parts = [list(data.shard(4, i)) for i in range(4)]
    assert parts == [[0, 1, 2], [3, 4], [5, 6], [7, 8]]
    with pytest.raises(ValueError, match="index"):
        data.shard(4, 4)


# =================================== HybridBlock inputs: None, numbers, mixing, contexts
class _AddOptional(mx.gluon.HybridBlock):
    """a + b, where either may be None (then the other one is returned)."""

    def hybrid_forward(self, F, a, b=None):
        if a is None:
            return b
        return a if b is None else a + b


@pytest.mark.parametrize("hybridize", [False, True])
def test_none_inputs_reach_hybrid_forward_and_all_none_is_refused(hybridize):
    block = _AddOptional()
    if hybridize:
        block.hybridize()
    ones = nd.ones((3,))
    assert block(None, ones).asnumpy().tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="at least one NDArray or Symbol"):
        _AddOptional()(None, None)


def test_a_hybridized_block_runs_the_same_graph_when_a_default_none_is_passed():
    block = _AddOptional()
    block.hybridize()
    ones = nd.ones((2,))
    assert block(ones).asnumpy().tolist() == [1, 1]
    assert block(ones, None).asnumpy().tolist() == [1, 1]       # same structure, no re-trace
    assert block.trace_count == 1
    with pytest.raises(ValueError, match="was traced for calls with"):
        block(ones, ones)


def test_numbers_are_fine_imperatively_but_a_hybridized_block_refuses_them():
    block = _AddOptional()
    assert block(nd.ones((2,)), 3).asnumpy().tolist() == [4, 4]
    block.hybridize()
    with pytest.raises(ValueError, match="got int: 3"):           # MXNet: ValueError
        block(nd.ones((2,)), 3)


def test_mixing_ndarrays_and_symbols_in_one_call_is_refused():
    with pytest.raises(ValueError, match="both NDArrays and Symbols"):
        _AddOptional()(nd.ones((2,)), mx.sym.var("b"))


def test_a_hybridized_block_refuses_inputs_on_two_contexts():
    block = _AddOptional()
    block.hybridize()
    with pytest.raises(ValueError, match=r"several contexts \['cpu\(1\)', 'cpu\(2\)'\]"):
        block(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))


def test_contrib_nn_is_a_real_module_for_from_imports():
    import importlib
    contrib_nn = importlib.import_module("straightdope.gluon.contrib.nn")
    assert contrib_nn.__spec__ is not None
    assert contrib_nn.HybridConcurrent is mx.gluon.nn.HybridConcurrent


def test_save_params_writes_names_that_a_symbol_block_of_the_export_can_load(tmp_path):
    net = mx.gluon.nn.HybridSequential(prefix="")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(4, prefix="hidden_"), mx.gluon.nn.Dense(2, prefix="out_"))
    net.initialize()
    x = nd.ones((1, 3))
    want = net(x)
    with pytest.warns(DeprecationWarning):
        net.save_params(str(tmp_path / "legacy.params"))
    assert sorted(nd.load(str(tmp_path / "legacy.params"))) == [
        "hidden_bias", "hidden_weight", "out_bias", "out_weight"]
    graph = net(mx.sym.var("data"))
    block = mx.gluon.SymbolBlock(outputs=graph, inputs=mx.sym.var("data"))
    with pytest.warns(DeprecationWarning):
        block.load_params(str(tmp_path / "legacy.params"))
    np.testing.assert_allclose(block(x).asnumpy(), want.asnumpy(), rtol=1e-6)


# ============================================== DataLoader: auto_reload, pin_memory
def test_auto_reload_starts_loading_before_the_loop_and_each_epoch_gives_the_same_batches():
    import threading
    read = threading.Event()

    class Numbers(mx.gluon.data.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            read.set()
            return np.full((2,), i, dtype=np.float32)

    loader = mx.gluon.data.DataLoader(Numbers(), batch_size=4, num_workers=2,
                                      auto_reload=True)
    assert read.wait(10)                   # the first epoch started at construction
    for _ in range(2):
        firsts = [batch.asnumpy()[:, 0].tolist() for batch in loader]
        assert firsts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


@pytest.mark.parametrize("np_mode", [False, True])
def test_pin_memory_labels_the_batches_cpu_pinned(np_mode):
    data = mx.gluon.data.ArrayDataset(np.arange(6, dtype=np.float32), np.arange(6))
    with mx.util.np_array(np_mode), mx.util.np_shape(np_mode):
        plain = next(iter(mx.gluon.data.DataLoader(data, batch_size=3)))
        pinned = next(iter(mx.gluon.data.DataLoader(data, batch_size=3, pin_memory=True,
                                                    pin_device_id=1)))
    assert plain[0].context == mx.cpu(0)
    assert [b.context for b in pinned] == [mx.context.cpu_pinned(1)] * 2
    assert [type(b) for b in pinned] == [type(b) for b in plain]     # np stays np
    assert pinned[0].asnumpy().tolist() == [0, 1, 2]


# ===================================================================== op hooks
def test_an_op_hook_sees_every_op_output_and_with_monitor_all_its_inputs_by_name():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(2, in_units=3), mx.gluon.nn.Activation("relu"))
    net.initialize(mx.init.One())
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, array: seen.append((name, op, array.asnumpy())))
    out = net(nd.ones((4, 3)))
    assert [(n, op) for n, op, _ in seen] == [("net_dense0_fwd_output", "FullyConnected"),
                                              ("net_relu0_fwd_output", "Activation")]
    np.testing.assert_allclose(seen[-1][2], out.asnumpy())          # 1 + 1 + 1 + bias 1
    seen.clear()
    net.register_op_hook(lambda name, op, array: seen.append(name), monitor_all=True)
    net(nd.ones((4, 3)))
    # MXNet names an op's inputs by its argument names; Activation's are unnamed: input0
    assert seen == [
        "net_dense0_fwd_data", "net_dense0_fwd_weight", "net_dense0_fwd_bias",
        "net_dense0_fwd_output", "net_relu0_fwd_input0", "net_relu0_fwd_output"]


def test_a_hybridized_blocks_op_hook_names_inputs_as_the_executors_monitor_does():
    """MXNet's test_op_all_names_monitor: SoftmaxActivation's input is unnamed (input0),
    for a block's op hook as for a bound executor's monitor."""
    class Soft(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.SoftmaxActivation(x, name="softmax")
    net = Soft()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, array: seen.append(name), monitor_all=True)
    net(nd.ones((2, 3)))
    executor = mx.sym.SoftmaxActivation(mx.sym.var("data"), name="softmax").bind(
        mx.cpu(), {"data": nd.ones((2, 3))})
    monitored = []
    executor.set_monitor_callback(lambda name, array: monitored.append(name), monitor_all=True)
    executor.forward()
    assert monitored == ["data", "softmax_input0", "softmax_output"]   # MXNet's expectation
    assert seen == ["soft0_softmax_input0", "soft0_softmax_output"]    # under the block's prefix


def test_one_dimensional_pooling_is_one_pooling_op_in_the_graph():
    graph = mx.gluon.nn.MaxPool1D(3, 2)(mx.sym.var("data"))
    ops = [node["op"] for node in json.loads(graph.tojson())["nodes"] if node["op"] != "null"]
    assert ops == ["Pooling"]


@pytest.mark.parametrize("layer", [lambda: mx.gluon.nn.GroupNorm(num_groups=2),
                                   lambda: mx.gluon.nn.InstanceNorm()])
def test_normalising_a_constant_input_gives_an_exactly_zero_gradient(layer):
    for hybridize in (False, True):
        norm = layer()
        norm.initialize()
        if hybridize:
            norm.hybridize()
        x = nd.ones((2, 4, 5, 5))
        x.attach_grad()
        with mx.autograd.record():
            y = norm(x)
        y.backward()
        assert np.all(x.grad.asnumpy() == 0), hybridize


def test_an_unknown_storage_type_name_is_refused_as_mxnet_asserts_it():
    with pytest.raises(AssertionError, match="stype must be one of"):
        mx.gluon.Parameter("w", shape=(2,), stype="dense")
    with pytest.raises(ValueError, match="grad_stype must be one of"):
        mx.gluon.Parameter("w", shape=(2,), grad_stype="invalid")


def test_softmax_cross_entropy_gives_one_value_per_sample_with_or_without_sample_weights():
    rng = np.random.default_rng(3)
    pred = nd.array(rng.standard_normal((5, 3)).astype(np.float32))
    label = nd.array([0, 2, 1, 1, 0])
    weight = nd.array([[1.0], [0.0], [2.0], [1.0], [0.5]])
    p = pred.asnumpy()
    want = -(p - np.log(np.exp(p).sum(1, keepdims=True)))[np.arange(5), [0, 2, 1, 1, 0]]
    for hybridize in (False, True):
        unweighted, weighted = mx.gluon.loss.SoftmaxCELoss(), mx.gluon.loss.SoftmaxCELoss()
        if hybridize:
            unweighted.hybridize()
            weighted.hybridize()
        assert unweighted(pred, label).shape == (5,)
        np.testing.assert_allclose(unweighted(pred, label).asnumpy(), want, rtol=1e-5)
        np.testing.assert_allclose(weighted(pred, label, weight).asnumpy(),
                                   want * weight.asnumpy()[:, 0], rtol=1e-5)


# ===================================================================== download
class _Response:
    """What requests.get returns, as MXNet's test_gluon_utils builds it."""
    def __init__(self, status_code, content):
        self.status_code, self._content = status_code, content

    def iter_content(self, chunk_size):
        for start in range(0, len(self._content), chunk_size):
            yield self._content[start:start + chunk_size]


def test_download_goes_through_requests_and_leaves_one_file(monkeypatch, tmp_path):
    """MXNet's test_download_successful and test_download_ssl_verify (requests.get mocked)."""
    requests = pytest.importorskip("requests")
    calls = []
    monkeypatch.setattr(requests, "get", lambda url, **kw: calls.append((url, kw)) or
                        _Response(200, b"MOCK CONTENT" * 100))
    target = tmp_path / "README.md"
    assert mx.gluon.utils.download("https://example.org/README.md", path=str(target)) == \
        str(target)
    assert target.read_bytes() == b"MOCK CONTENT" * 100
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]       # no temp file left
    with pytest.warns(UserWarning, match="^Unverified HTTPS request"):
        mx.gluon.utils.download("https://example.org/index.html", path=str(tmp_path),
                                verify_ssl=False)
    assert calls[-1][1]["verify"] is False


def test_download_retries_then_names_the_url_and_where_the_file_goes(monkeypatch, tmp_path):
    """MXNet's test_download_retries: a connection error on every try raises."""
    requests = pytest.importorskip("requests")
    tries = []

    def refuse(url, **kw):
        tries.append(url)
        raise requests.exceptions.ConnectionError("refused")
    monkeypatch.setattr(requests, "get", refuse)
    with pytest.raises(OSError, match="could not download http://doesnotexist.notfound"):
        mx.gluon.utils.download("http://doesnotexist.notfound", path=str(tmp_path), retries=3)
    assert len(tries) == 3
    monkeypatch.setattr(requests, "get", lambda url, **kw: _Response(404, b""))
    with pytest.raises(OSError, match="HTTP 404"):
        mx.gluon.utils.download("https://example.org/missing", path=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("requests_installed", [True, False])
def test_download_of_a_file_url_or_without_requests_uses_the_standard_library(
        monkeypatch, tmp_path, requests_installed):
    if not requests_installed:
        monkeypatch.setitem(sys.modules, "requests", None)      # import requests fails
    source = tmp_path / "source.bin"
    source.write_bytes(bytes(range(256)) * 10)
    got = mx.gluon.utils.download(source.as_uri(), path=str(tmp_path / "copy.bin"))
    assert open(got, "rb").read() == source.read_bytes()
