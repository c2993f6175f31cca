"""Every layer of gluon.nn: outputs and gradients are the same before and after
hybridize(), for shapes and settings that hypothesis picks; plus each layer's own rules.

These comparisons run the traced graph with the NumPy reference executor: they check the
Gluon side (tracing, parameter plumbing, the backward graph built from the ops' gradient
rules). The Numba executor is compared with the reference in test_hybridize.py and in the
compiler's own tests. Everything runs in float64, so the tolerance can be tight.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import straightdope as mx
from straightdope import autograd, nd
from straightdope.gluon import nn

SETTINGS = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
ACTIVATIONS = [None, "relu", "tanh", "sigmoid", "softrelu", "softsign"]


def run_once(net, x, head, train, grad_x):
    """Forward + backward of sum(net(x) * head): output, dx, parameter grads and values."""
    params = net.collect_params()
    if grad_x:
        x.attach_grad()
    with autograd.record(train_mode=train):
        y = net(x)
        loss = (y * head).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in params.items() if p.grad_req != "null"}
    values = {k: p.data().asnumpy().copy() for k, p in params.items()}
    return y.asnumpy(), (x.grad.asnumpy().copy() if grad_x else None), grads, values


def assert_same_before_and_after_hybridize(make, x, train=True, grad_x=True, seed=0):
    """Build the layer in float64, run it imperatively, hybridize, run again, compare
    outputs, input gradient, parameter gradients and (BatchNorm) running statistics."""
    net = make()
    net.cast("float64")
    net.initialize(mx.init.Uniform(0.5))
    x = nd.array(x, dtype="float64")
    with autograd.pause():
        y = net(x)                       # finishes deferred initialisation
    start = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items()}
    head = nd.array(np.random.RandomState(seed).normal(size=y.shape), dtype="float64")

    def restore():
        for k, p in net.collect_params().items():
            p.set_data(start[k])

    before = run_once(net, x, head, train, grad_x)
    restore()
    net.hybridize(executor="numpy")
    after = run_once(net, x, head, train, grad_x)
    assert net.trace_count == 1
    tol = dict(rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(after[0], before[0], err_msg="output", **tol)
    if grad_x:
        np.testing.assert_allclose(after[1], before[1], err_msg="input gradient", **tol)
    assert after[2].keys() == before[2].keys()
    for k in before[2]:
        np.testing.assert_allclose(after[2][k], before[2][k], err_msg=f"grad {k}", **tol)
    for k in before[3]:
        np.testing.assert_allclose(after[3][k], before[3][k], err_msg=f"value {k}", **tol)
    return net, before


def rand(*shape):
    return np.random.normal(size=shape)


# ------------------------------------------------------------------ Dense
@SETTINGS
@given(units=st.integers(1, 6), batch=st.integers(1, 4),
       features=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       flatten=st.booleans(), activation=st.sampled_from(ACTIVATIONS),
       use_bias=st.booleans(), give_in_units=st.booleans())
def test_dense(units, batch, features, flatten, activation, use_bias, give_in_units):
    in_units = int(np.prod(features)) if flatten else features[-1]
    net, (y, *_) = assert_same_before_and_after_hybridize(
        lambda: nn.Dense(units, activation=activation, use_bias=use_bias, flatten=flatten,
                         in_units=in_units if give_in_units else 0),
        rand(batch, *features))
    assert net.weight.shape == (units, in_units)
    assert y.shape == ((batch, units) if flatten else (batch, *features[:-1], units))
    assert (net.bias is None) == (not use_bias)


# ----------------------------------------------------------------- Conv2D
@SETTINGS
@given(channels_per_group=st.integers(1, 3), groups=st.integers(1, 2),
       in_per_group=st.integers(1, 2), kernel=st.integers(1, 3), stride=st.integers(1, 2),
       pad=st.integers(0, 1), dilation=st.integers(1, 2), batch=st.integers(1, 2),
       size=st.tuples(st.integers(5, 8), st.integers(5, 8)),
       activation=st.sampled_from(ACTIVATIONS), use_bias=st.booleans())
def test_conv2d(channels_per_group, groups, in_per_group, kernel, stride, pad, dilation,
                batch, size, activation, use_bias):
    channels, in_channels = channels_per_group * groups, in_per_group * groups
    net, (y, *_) = assert_same_before_and_after_hybridize(
        lambda: nn.Conv2D(channels, kernel, strides=stride, padding=pad, dilation=dilation,
                          groups=groups, activation=activation, use_bias=use_bias),
        rand(batch, in_channels, *size))
    assert net.weight.shape == (channels, in_per_group, kernel, kernel)
    span = dilation * (kernel - 1) + 1
    assert y.shape == (batch, channels) + tuple((s + 2 * pad - span) // stride + 1
                                                for s in size)


# ---------------------------------------------------------------- pooling
@SETTINGS
@given(kind=st.sampled_from(["max", "avg"]), pool=st.integers(1, 3), data=st.data(),
       ceil_mode=st.booleans(), count_include_pad=st.booleans(),
       shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(4, 7),
                       st.integers(4, 7)))
def test_pooling(kind, pool, data, ceil_mode, count_include_pad, shape):
    stride = data.draw(st.integers(1, pool))
    # with ceil_mode and padding a window can lie wholly in the padding (max: -inf,
    # avg without count_include_pad: 0/0): keep padding to floor mode
    pad = 0 if ceil_mode else data.draw(st.integers(0, pool // 2))
    if kind == "max":
        make = lambda: nn.MaxPool2D(pool, stride, pad, ceil_mode=ceil_mode)  # noqa: E731
    else:
        make = lambda: nn.AvgPool2D(pool, stride, pad, ceil_mode=ceil_mode,  # noqa: E731
                                    count_include_pad=count_include_pad)
    _, (y, *_) = assert_same_before_and_after_hybridize(make, rand(*shape))
    assert y.shape[:2] == shape[:2]


@pytest.mark.parametrize("layer, reduce", [(nn.GlobalAvgPool2D, np.mean),
                                           (nn.GlobalMaxPool2D, np.max)])
def test_global_pooling(layer, reduce):
    x = rand(2, 3, 4, 5)
    _, (y, *_) = assert_same_before_and_after_hybridize(layer, x)
    np.testing.assert_allclose(y, reduce(x, axis=(2, 3), keepdims=True))


# ---------------------------------------------------------- normalisation
@SETTINGS
@given(shape=st.sampled_from([(4, 3), (3, 2), (2, 3, 2, 2), (3, 1, 3, 2)]),
       center=st.booleans(), scale=st.booleans(), train=st.booleans(),
       momentum=st.floats(0.1, 0.9), use_global_stats=st.booleans())
def test_batchnorm(shape, center, scale, train, momentum, use_global_stats):
    net, _ = assert_same_before_and_after_hybridize(
        lambda: nn.BatchNorm(momentum=momentum, center=center, scale=scale,
                             use_global_stats=use_global_stats),
        rand(*shape) * 3 + 1, train=train)
    assert net.running_mean.grad_req == net.running_var.grad_req == "null"
    assert (net.gamma.grad_req == "write") == scale and (net.beta.grad_req == "write") == center


@SETTINGS
@given(shape=st.sampled_from([(2, 5), (3, 4, 2), (2, 3, 2, 4)]), axis=st.sampled_from([-1, 1]),
       center=st.booleans(), scale=st.booleans())
def test_layernorm(shape, axis, center, scale):
    x = rand(*shape)
    _, (y, *_) = assert_same_before_and_after_hybridize(
        lambda: nn.LayerNorm(axis=axis, center=center, scale=scale), x)
    if not center and not scale:       # plain normalisation along the axis
        want = (x - x.mean(axis, keepdims=True)) / np.sqrt(x.var(axis, keepdims=True) + 1e-5)
        np.testing.assert_allclose(y, want, rtol=1e-6)


# ------------------------------------------------------------ activations
ACTIVATION_LAYERS = [
    lambda: nn.Activation("relu"), lambda: nn.Activation("sigmoid"),
    lambda: nn.Activation("tanh"), lambda: nn.Activation("softrelu"),
    lambda: nn.Activation("softsign"), lambda: nn.LeakyReLU(0.1), lambda: nn.ELU(0.7),
    nn.SELU, nn.GELU, lambda: nn.Swish(1.5), nn.SiLU, nn.Flatten, nn.Identity,
    lambda: nn.HybridLambda("tanh"),
    lambda: nn.HybridLambda(lambda F, x: F.relu(x) * 2.0 - x),
]


@SETTINGS
@given(index=st.integers(0, len(ACTIVATION_LAYERS) - 1),
       shape=st.lists(st.integers(1, 4), min_size=2, max_size=4))
def test_activations_and_shape_layers(index, shape):
    x = rand(*shape)
    x[np.abs(x) < 1e-3] = 0.5              # keep away from relu's kink
    assert_same_before_and_after_hybridize(ACTIVATION_LAYERS[index], x)


def test_activation_values():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]])

    def out(layer):
        layer.initialize()
        return layer(nd.array(x, dtype="float64")).asnumpy()

    np.testing.assert_allclose(out(nn.LeakyReLU(0.1)), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(out(nn.ELU(1.0)), np.where(x > 0, x, np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(out(nn.Swish()), x / (1 + np.exp(-x)), rtol=1e-6)
    assert out(nn.Flatten()).shape == (1, 4)
    selu = out(nn.SELU())
    np.testing.assert_allclose(selu[0, 3], 1.5 * nn.SELU.SCALE, rtol=1e-6)


# -------------------------------------------------------------- embedding
@SETTINGS
@given(input_dim=st.integers(2, 6), output_dim=st.integers(1, 4),
       shape=st.tuples(st.integers(1, 3), st.integers(1, 4)), data=st.data())
def test_embedding(input_dim, output_dim, shape, data):
    indices = np.array(data.draw(st.lists(st.integers(0, input_dim - 1),
                                          min_size=int(np.prod(shape)),
                                          max_size=int(np.prod(shape))))).reshape(shape)
    net, (y, *_) = assert_same_before_and_after_hybridize(
        lambda: nn.Embedding(input_dim, output_dim), indices, grad_x=False)
    np.testing.assert_array_equal(y, net.weight.data().asnumpy()[indices])


# --------------------------------------------------- small architectures
def _layer(kind, size):
    return {"dense": lambda: nn.Dense(size, activation="tanh"),
            "dense_linear": lambda: nn.Dense(size),
            "batchnorm": lambda: nn.BatchNorm(),
            "layernorm": lambda: nn.LayerNorm(),
            "relu": lambda: nn.Activation("relu"),
            "dropout0": lambda: nn.Dropout(0.0),
            "lambda": lambda: nn.HybridLambda(lambda F, x: F.sigmoid(x) * x)}[kind]()


@SETTINGS
@given(kinds=st.lists(st.sampled_from(["dense", "dense_linear", "batchnorm", "layernorm",
                                       "relu", "dropout0", "lambda"]), min_size=1, max_size=5),
       sizes=st.lists(st.integers(1, 5), min_size=5, max_size=5), nested=st.booleans(),
       batch=st.integers(2, 4), train=st.booleans())
def test_small_random_architectures(kinds, sizes, nested, batch, train):
    def make():
        net = nn.HybridSequential()
        inner = nn.HybridSequential() if nested else net
        for kind, size in zip(kinds, sizes):
            inner.add(_layer(kind, size))
        if nested:
            net.add(inner, nn.Dense(2))
        return net

    assert_same_before_and_after_hybridize(make, rand(batch, 3), train=train)


def test_concurrent_branches():
    def make():
        net = nn.HybridConcurrent(axis=1)
        net.add(nn.Dense(3), nn.Dense(2, activation="relu"), nn.Identity())
        return net

    _, (y, *_) = assert_same_before_and_after_hybridize(make, rand(4, 5))
    assert y.shape == (4, 3 + 2 + 5)
    plain = nn.Concurrent(axis=1)
    plain.add(nn.Dense(3), nn.Lambda(lambda x: x * 2))
    plain.initialize()
    assert plain(nd.ones((2, 4))).shape == (2, 7)


# ---------------------------------------------------------------- dropout
@pytest.mark.parametrize("hybrid", [False, True])
def test_dropout_scales_kept_values_and_masks_the_gradient(hybrid):
    layer = nn.Dropout(0.4)
    if hybrid:
        layer.hybridize(executor="numpy")
    x = nd.array(np.random.uniform(1, 2, size=(200, 50)))
    np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())      # predicting
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    kept = y.asnumpy() != 0
    assert 0.5 < kept.mean() < 0.7
    np.testing.assert_allclose(y.asnumpy()[kept], x.asnumpy()[kept] / 0.6, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), kept / 0.6, rtol=1e-6)
    shared = nn.Dropout(0.5, axes=(1,))
    with autograd.train_mode():
        rows = shared(nd.ones((20, 8))).asnumpy()
    assert all(len(set(row)) == 1 for row in rows)          # one mask value per row
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        nn.Dropout(1.0)


# ---------------------------------------------------------- layer details
def test_layer_reprs():
    assert repr(nn.Dense(5)) == "Dense(-1 -> 5, linear)"
    assert repr(nn.Dense(5, in_units=3)) == "Dense(3 -> 5, linear)"
    assert repr(nn.Dense(5, in_units=3, activation="relu")) == \
        "Dense(3 -> 5, Activation(relu))"
    assert repr(nn.Conv2D(6, 3, activation="relu")) == \
        "Conv2D(-1 -> 6, kernel_size=(3, 3), stride=(1, 1), Activation(relu))"
    assert repr(nn.Conv2D(8, (3, 5), padding=1, groups=2, in_channels=4, use_bias=False)) == \
        "Conv2D(4 -> 8, kernel_size=(3, 5), stride=(1, 1), padding=(1, 1), groups=2, bias=False)"
    assert repr(nn.MaxPool2D(pool_size=2, strides=2)) == \
        ("MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, "
         "global_pool=False, pool_type=max, layout=NCHW)")
    assert repr(nn.GlobalAvgPool2D()).startswith("GlobalAvgPool2D(size=(1, 1)")
    assert repr(nn.BatchNorm()) == ("BatchNorm(axis=1, eps=1e-05, momentum=0.9, "
                                    "fix_gamma=False, use_global_stats=False, in_channels=None)")
    assert repr(nn.LayerNorm(in_channels=4)).endswith("in_channels=4)")
    assert repr(nn.Dropout(0.5)) == "Dropout(p = 0.5, axes=())"
    assert repr(nn.Activation("tanh")) == "Activation(tanh)"
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(0.1)"
    assert repr(nn.Embedding(10, 4)) == "Embedding(10 -> 4, float32)"
    assert repr(nn.Flatten()) == "Flatten"
    assert repr(nn.Lambda("tanh")) == "Lambda(tanh)"
    assert repr(nn.HybridLambda(lambda F, x: x)) == "HybridLambda(<lambda>)"


def test_layers_refuse_what_they_cannot_do():
    with pytest.raises(ValueError, match="unknown activation 'swish'.*nn.Swish"):
        nn.Dense(3, activation="swish")
    with pytest.raises(ValueError, match="layout='NCHW'.*transpose"):
        nn.Conv2D(3, 3, layout="CHWN")        # NCHW and NHWC are the layouts it takes
    with pytest.raises(ValueError, match="kernel_size must be an int or a pair"):
        nn.Conv2D(3, (1, 2, 3))
    with pytest.raises(ValueError, match="not divisible by groups"):
        nn.Conv2D(3, 3, groups=2)
    conv = nn.Conv2D(4, 3, groups=2)
    conv.initialize()
    with pytest.raises(ValueError, match="3 input channels do not split into groups=2"):
        conv(nd.ones((1, 3, 5, 5)))
    with pytest.raises(ValueError, match="no operator 'nonsense'"):
        nn.HybridLambda("nonsense")
    with pytest.raises(ValueError, match="alpha"):
        nn.LeakyReLU(-1)


def test_known_input_sizes_initialize_at_once():
    layers = [nn.Dense(4, in_units=3), nn.Conv2D(2, 3, in_channels=3),
              nn.BatchNorm(in_channels=3), nn.LayerNorm(in_channels=3), nn.Embedding(5, 2)]
    for layer in layers:
        layer.initialize()
        for p in layer.collect_params().values():
            assert p.data() is not None                # no deferral needed


def test_batchnorm_statistics_and_modes():
    bn = nn.BatchNorm(momentum=0.5, in_channels=2)
    bn.initialize()
    x = nd.array(np.random.normal(3.0, 2.0, size=(50, 2)))
    bn(x)                                   # predicting: running stats untouched
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), [0, 0])
    with autograd.record():
        y = bn(x)
    np.testing.assert_allclose(y.asnumpy().mean(0), [0, 0], atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), x.asnumpy().mean(0) * 0.5,
                               rtol=1e-5)
    fixed = nn.BatchNorm(scale=False, in_channels=2)
    fixed.initialize()
    assert fixed.gamma.grad_req == "null"
    fixed.gamma.set_data(nd.array([5.0, 5.0]))    # fix_gamma: gamma is treated as 1
    with autograd.record():
        z = fixed(x)
    np.testing.assert_allclose(z.asnumpy().std(0), [1, 1], rtol=1e-3)


def test_dense_flatten_false_and_dtype():
    layer = nn.Dense(3, flatten=False, dtype="float64")
    layer.initialize()
    y = layer(nd.ones((2, 4, 5), dtype="float64"))
    assert y.shape == (2, 4, 3) and y.dtype == np.float64 and layer.weight.shape == (3, 5)



def test_a_dense_subclass_with_its_own_hybrid_forward_runs_it_imperatively():
    # Dense.forward has an imperative fast path; a subclass's hybrid_forward must still win
    class DoubledDense(nn.Dense):
        def hybrid_forward(self, F, x, weight, bias=None):
            return 2 * super().hybrid_forward(F, x, weight, bias)

    plain, doubled = nn.Dense(3, in_units=4), DoubledDense(3, in_units=4)
    plain.initialize(mx.init.One())
    doubled.initialize(mx.init.One())
    x = nd.array(np.arange(8.0).reshape(2, 4))
    np.testing.assert_allclose(doubled(x).asnumpy(), 2 * plain(x).asnumpy())


def test_hooks_on_a_dense_layers_activation_see_its_input_and_output_imperatively():
    layer = nn.Dense(2, activation="relu", in_units=3)
    layer.initialize(mx.init.One())
    seen = []
    layer.act.register_forward_hook(lambda block, inputs, output: seen.append(
        (inputs[0].asnumpy(), output.asnumpy())))
    y = layer(nd.array([[1.0, -3.0, 1.0]]))
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0][0], [[-1.0, -1.0]])
    np.testing.assert_allclose(seen[0][1], y.asnumpy())
    np.testing.assert_allclose(y.asnumpy(), [[0.0, 0.0]])


def test_an_imperative_dense_records_its_gradient_like_the_ops_it_runs():
    layer = nn.Dense(2, activation="relu", in_units=3)
    layer.initialize(mx.init.Uniform(1.0))
    x = nd.array(np.random.RandomState(0).normal(size=(4, 3)))
    w, b = layer.weight.data(), layer.bias.data()
    x.attach_grad()
    with autograd.record():
        layer(x).sum().backward()
    by_layer = x.grad.asnumpy().copy(), layer.weight.grad().asnumpy().copy()
    with autograd.record():
        nd.relu(nd.FullyConnected(x, w, b, num_hidden=2)).sum().backward()
    np.testing.assert_allclose(by_layer[0], x.grad.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(by_layer[1], layer.weight.grad().asnumpy(), rtol=1e-6)

def test_lambda_blocks():
    assert nn.Lambda("relu")(nd.array([-1.0, 2.0])).asnumpy().tolist() == [0, 2]
    seq = nn.Sequential()
    seq.add(nn.Dense(2, in_units=2), nn.Lambda(lambda x: x * 0))
    seq.initialize()
    assert seq(nd.ones((1, 2))).asnumpy().sum() == 0
    with pytest.raises(ValueError, match="no operator"):
        nn.Lambda("nonsense")
    with pytest.raises(ValueError, match="expected a function"):
        nn.Lambda(3)
