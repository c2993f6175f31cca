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
    ("lognormal", (0.0, 0.5), onp.exp(0.125)), ("pareto", (5.0,), 0.25)])
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
