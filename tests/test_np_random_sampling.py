"""np.random's distributions (one op, `_npi_sample`): their samples follow the
distribution, they trace under hybridize(), and the reparameterizable ones give
d sample / d parameter as gradients."""
import numpy as onp
import pytest

import straightdope as mx
from straightdope import autograd

np = mx.np


@pytest.mark.parametrize("name, params, mean", [
    ("exponential", (2.0,), 2.0), ("rayleigh", (1.5,), 1.5 * onp.sqrt(onp.pi / 2)),
    ("gamma", (3.0, 2.0), 6.0), ("beta", (2.0, 6.0), 0.25), ("chisquare", (4.0,), 4.0),
    ("lognormal", (0.0, 0.5), onp.exp(0.125)), ("pareto", (5.0,), 0.25),
    ("logistic", (2.0, 0.5), 2.0), ("gumbel", (1.0, 2.0), 1.0 + 2.0 * onp.euler_gamma),
    ("power", (3.0,), 0.75)])
def test_samples_have_the_distributions_mean(name, params, mean):
    mx.random.seed(7)
    draws = getattr(np.random, name)(*params, size=(20000,))
    assert draws.shape == (20000,) and draws.dtype == onp.float32
    assert abs(draws.asnumpy().mean() - mean) < 0.05 * mean


def test_reparameterized_gradients_match_the_sample_formulas():
    mx.random.seed(3)
    loc, scale = np.zeros((2, 1)), np.array([0.5, 1.0, 2.0])
    a = np.array([0.7, 1.3])
    for p in (loc, scale, a):
        p.attach_grad()
    with autograd.record():
        x = np.random.normal(loc, scale, size=(2, 3))
        w = np.random.weibull(a)
    x.backward()
    w.backward()
    z = x.asnumpy() / scale.asnumpy()                # the standard normal draws
    onp.testing.assert_allclose(loc.grad.asnumpy(), [[3.0], [3.0]])
    onp.testing.assert_allclose(scale.grad.asnumpy(), z.sum(axis=0), rtol=1e-5)
    wv = w.asnumpy().astype(onp.float64)
    onp.testing.assert_allclose(a.grad.asnumpy(), -wv * onp.log(wv) / a.asnumpy(), rtol=1e-4)


def test_a_hybridized_block_samples_from_its_input_parameters():
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, scale):
            return F.np.random.exponential(scale, size=(1000, 2))

    net = Net()
    net.hybridize()
    scale = np.array([1.0, 10.0])
    scale.attach_grad()
    with autograd.record():
        out = net(scale)
    out.backward()
    means = out.asnumpy().mean(axis=0)
    assert out.shape == (1000, 2) and 0.8 < means[0] < 1.2 and 8 < means[1] < 12
    onp.testing.assert_allclose(scale.grad.asnumpy(), out.asnumpy().sum(axis=0) / [1, 10],
                                rtol=1e-4)


def test_no_gradient_and_bad_parameters_are_refused_clearly():
    shape = np.array([2.0])
    shape.attach_grad()
    with autograd.record():
        out = np.random.gamma(shape, 1.0)
    with pytest.raises(mx.base.MXNetError, match="np.random.gamma has no gradient"):
        out.backward()
    with pytest.raises(ValueError, match="np.random.rayleigh"):
        np.random.rayleigh(-1.0).asnumpy()
    with pytest.raises(TypeError, match="wrap it in np.array"):
        np.random.exponential([1.0, 2.0])


def test_logistic_and_gumbel_gradients_are_one_for_loc_and_the_standard_draw_for_scale():
    mx.random.seed(5)
    for name in ("logistic", "gumbel"):
        loc, scale = np.array([1.0, -2.0]), np.array([0.5, 2.0])
        loc.attach_grad()
        scale.attach_grad()
        with autograd.record():
            x = getattr(np.random, name)(loc, scale, size=(3, 2))
        x.backward()
        onp.testing.assert_allclose(loc.grad.asnumpy(), [3.0, 3.0])
        want = ((x.asnumpy() - loc.asnumpy()) / scale.asnumpy()).sum(axis=0)
        onp.testing.assert_allclose(scale.grad.asnumpy(), want, rtol=1e-5)


def test_mxnet_refuses_parameters_numpy_allows():
    for call in (lambda: np.random.gamma(1.0, 0.0), lambda: np.random.gamma(0.0, 1.0),
                 lambda: np.random.weibull(0.0), lambda: np.random.power(-1.0)):
        with pytest.raises(ValueError, match="must be positive"):
            call()


def test_npx_bernoulli_and_the_n_samplers():
    mx.random.seed(11)
    prob = np.array([0.0, 1.0, 0.3])
    draws = mx.npx.random.bernoulli(prob=prob, size=(4000, 3), dtype="int32")
    assert draws.dtype == onp.int32
    onp.testing.assert_allclose(draws.asnumpy().mean(axis=0), [0.0, 1.0, 0.3], atol=0.03)
    logit = mx.npx.random.bernoulli(logit=np.array([-50.0, 50.0]))
    onp.testing.assert_array_equal(logit.asnumpy(), [0.0, 1.0])
    with pytest.raises(ValueError, match="exactly one"):
        mx.npx.random.bernoulli(prob=prob, logit=prob)
    with pytest.raises(ValueError, match="between 0 and 1"):
        mx.npx.random.bernoulli(prob=prob + 2.0)
    out = mx.npx.random.normal_n(np.zeros((2,)), np.ones((2,)), batch_shape=(5, 3))
    assert out.shape == (5, 3, 2)
    assert mx.npx.random.uniform_n(0.0, 1.0, batch_shape=4).shape == (4,)


def test_multivariate_normal_has_the_mean_and_covariance_and_broadcasts_batches():
    mx.random.seed(2)
    mean, cov = np.array([1.0, -3.0]), np.array([[2.0, 0.6], [0.6, 1.0]])
    x = np.random.multivariate_normal(mean, cov, size=(30000,)).asnumpy()
    onp.testing.assert_allclose(x.mean(axis=0), [1.0, -3.0], atol=0.05)
    onp.testing.assert_allclose(onp.cov(x.T), cov.asnumpy(), atol=0.05)
    batched = np.random.multivariate_normal(np.zeros((3, 2)), np.broadcast_to(cov, (4, 3, 2, 2)),
                                            size=2)
    assert batched.shape == (2, 4, 3, 2)


def test_sym_np_random_traces_a_sampler_without_array_parameters():
    class Noisy(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + F.np.random.uniform(size=(2, 3))
    net = Noisy()
    net.hybridize()
    out = net(np.zeros(()))
    assert out.shape == (2, 3)
    assert ((out.asnumpy() >= 0) & (out.asnumpy() < 1)).all()


def test_choice_keeps_the_dtype_of_what_it_picks_from():
    assert np.random.choice(5, 3).dtype == onp.int64
    mask = np.random.choice(np.array([False, True], dtype="bool"), size=(3, 4))
    assert mask.dtype == onp.bool_ and mask.shape == (3, 4)


def test_choice_traces_with_array_and_probabilities():
    class Pick(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, p):
            return F.np.random.choice(a, (2, 3), False, p)
    net = Pick()
    net.hybridize()
    mx.random.seed(4)
    out = net(np.arange(10, dtype="int64"), np.array([0.0] * 4 + [1.0 / 6] * 6))
    assert out.shape == (2, 3) and out.dtype == onp.int64
    values = out.asnumpy().ravel()
    assert len(set(values)) == 6 and values.min() >= 4       # without replacement, p > 0
