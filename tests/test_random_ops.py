"""nd.random.multinomial as MXNet's _sample_multinomial: inverse-transform draws from
unnormalised rows, log-probabilities with a gradient, (1,) for one draw of a 1-D row."""
import numpy as np
import pytest

from straightdope import autograd, nd, random


def test_multinomial_log_prob_gradient_counts_each_draw():
    random.seed(3)
    p = nd.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.25, 0.0]], dtype="float64")
    p.attach_grad()
    with autograd.record():
        draws, log_prob = nd.random.multinomial(p, shape=50, get_prob=True)
        (log_prob * 2).backward()
    d, probs = draws.asnumpy().astype(int), p.asnumpy()
    assert draws.dtype == np.int32 and d.shape == (2, 50) and (d[1] != 3).all()
    np.testing.assert_allclose(log_prob.asnumpy(), np.log(np.take_along_axis(probs, d, 1)))
    counts = np.stack([np.bincount(row, minlength=4) for row in d]) * 2.0
    want = np.divide(counts, probs, out=np.zeros_like(probs), where=probs > 0)
    np.testing.assert_allclose(p.grad.asnumpy(), want)


def test_multinomial_shapes_and_dtype_bounds():
    assert nd.random.multinomial(nd.array([0.5, 0.5])).shape == (1,)
    assert isinstance(nd.random.multinomial(nd.array([0.5, 0.5]), get_prob=True), list)
    with pytest.raises(ValueError, match="300 categories do not fit in dtype uint8"):
        nd.random.multinomial(nd.ones((300,)) / 300, dtype="uint8")


def test_seed_takes_any_integer_as_mxnet():
    random.seed(-12345)
    a = nd.random.uniform(shape=(3,)).asnumpy()
    random.seed(-12345)
    assert (nd.random.uniform(shape=(3,)).asnumpy() == a).all()
    random.seed(2 ** 32 - 12345)           # the same state, modulo 2**32
    assert (nd.random.uniform(shape=(3,)).asnumpy() == a).all()
