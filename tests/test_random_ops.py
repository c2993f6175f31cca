"""nd.random.multinomial as MXNet's _sample_multinomial: inverse-transform draws from
unnormalised rows, log-probabilities with a gradient, (1,) for one draw of a 1-D row."""
import numpy as np
import pytest

import straightdope as mx
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


def test_symbolic_samplers_are_seeded_nodes_with_the_right_moments():
    """sym.random.X: a `_random_X` node for numbers, `_sample_X` for Symbols; a seeded
    bound executor draws the same again."""
    x = mx.sym.var("x")
    y = mx.sym.random.normal(loc=2.0, scale=0.5, shape=(400, 50)) + x
    exe = y.bind(mx.cpu(), {"x": mx.nd.zeros((400, 50))})
    mx.random.seed(11)
    first = exe.forward()[0].asnumpy()
    mx.random.seed(11)
    assert (exe.forward()[0].asnumpy() == first).all()
    assert abs(first.mean() - 2.0) < 0.02 and abs(first.std() - 0.5) < 0.02
    assert "_random_normal" in y.tojson()

    lam = mx.sym.var("lam")
    draws = mx.sym.random.exponential(scale=lam, shape=(4000,))   # rate 1 / scale
    out = draws.eval(lam=mx.nd.array([[0.5, 2.0]]))[0].asnumpy()
    assert out.shape == (1, 2, 4000)
    np.testing.assert_allclose(out.mean(-1), [[0.5, 2.0]], rtol=0.1)
    with pytest.raises(ValueError, match="all numbers or all Symbols"):
        mx.sym.random.uniform(0.0, mx.sym.var("high"))


def test_symbolic_like_samplers_and_shuffle():
    data = mx.sym.var("data")
    out = mx.sym.random.uniform_like(data, low=3.0, high=4.0).eval(
        data=mx.nd.zeros((5, 6), dtype="float64"))[0]
    assert out.shape == (5, 6) and out.dtype == np.float64
    assert ((out.asnumpy() >= 3) & (out.asnumpy() < 4)).all()
    rows = mx.nd.arange(12).reshape((4, 3))
    shuffled = mx.sym.random.shuffle(data).eval(data=rows)[0].asnumpy()
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, rows.asnumpy()))
    assert (shuffled[:, 1:] - shuffled[:, :1] == [1, 2]).all()     # rows move whole


def test_densities_match_scipy():
    ss = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2)
    x, a, b = rng.uniform(0.2, 2, (2, 5)), rng.uniform(1, 3, (2,)), rng.uniform(0.5, 2, (2,))
    k = rng.integers(0, 6, (2, 5)).astype(np.float64)
    cases = [("normal", x, (a, b), ss.norm.pdf(x, a[:, None], b[:, None])),
             ("gamma", x, (a, b), ss.gamma.pdf(x, a[:, None], 0, 1 / b[:, None])),
             ("exponential", x, (a,), ss.expon.pdf(x, 0, 1 / a[:, None])),
             ("poisson", k, (a,), ss.poisson.pmf(k, a[:, None])),
             ("negative_binomial", k, (a, b / 3), ss.nbinom.pmf(k, a[:, None], b[:, None] / 3)),
             ("generalized_negative_binomial", k, (a, b / 3),
              ss.nbinom.pmf(k, 3 / b[:, None], 1 / (a[:, None] * b[:, None] / 3 + 1)))]
    for dist, sample, params, want in cases:
        op = getattr(nd, f"random_pdf_{dist}")
        args = [nd.array(sample, dtype="float64")] + [nd.array(p, dtype="float64")
                                                       for p in params]
        np.testing.assert_allclose(op(*args).asnumpy(), want, rtol=1e-10, err_msg=dist)
        np.testing.assert_allclose(op(*args, is_log=True).asnumpy(), np.log(want),
                                   rtol=1e-10, err_msg=dist)
    alpha = np.array([[1.5, 2.0, 0.7]])
    v = rng.dirichlet(alpha[0], (1, 4))
    got = nd.random_pdf_dirichlet(nd.array(v, dtype="float64"), nd.array(alpha, dtype="float64"),
                                  is_log=True).asnumpy()
    np.testing.assert_allclose(got[0], ss.dirichlet.logpdf(v[0].T, alpha[0]), rtol=1e-10)


def test_nd_like_samplers_take_datas_shape_and_dtype():
    random.seed(5)
    out = nd.random.normal_like(data=nd.ones((300, 200), dtype="float64"), loc=3.0, scale=0.5)
    assert out.shape == (300, 200) and out.dtype == np.float64
    assert abs(out.asnumpy().mean() - 3.0) < 0.01 and abs(out.asnumpy().std() - 0.5) < 0.01
    random.seed(5)
    again = nd.random.normal_like(data=nd.ones((300, 200), dtype="float64"), loc=3.0, scale=0.5)
    assert (again.asnumpy() == out.asnumpy()).all()


def test_unique_zipfian_rows_are_distinct_log_uniform_draws():
    """_sample_unique_zipfian: distinct classes per row, in [0, range_max), int64, and the
    number of draws that took (at least one per sample); too many samples are refused."""
    mx.random.seed(7)
    classes, tries = nd._internal._sample_unique_zipfian(range_max=1000, shape=(3, 50))
    assert classes.dtype == np.int64 and tries.dtype == np.int64 and tries.shape == (3,)
    for row, n in zip(classes.asnumpy(), tries.asnumpy()):
        assert len(set(row)) == 50 and row.min() >= 0 and row.max() < 1000
        assert 50 <= n < 1000
    with pytest.raises(ValueError, match="cannot draw 5 distinct classes out of range_max=4"):
        nd._internal._sample_unique_zipfian(range_max=4, shape=(1, 5))


def test_rand_zipfian_expected_counts_follow_the_formula():
    """nd and sym contrib.rand_zipfian: sampled classes in range, expected counts as
    (log(c + 2) - log(c + 1)) / log(range_max + 1) * num_sampled."""
    def expected(c, n, r):
        return (np.log(c + 2.0) - np.log(c + 1.0)) / np.log(r + 1) * n
    true = nd.array([0, 3, 7], dtype="int32")
    sampled, count_true, count_sampled = nd.contrib.rand_zipfian(true, 200, 10)
    s = sampled.asnumpy()
    assert sampled.dtype == np.int64 and s.min() >= 0 and s.max() < 10
    np.testing.assert_allclose(count_true.asnumpy(), expected(np.array([0, 3, 7]), 200, 10))
    np.testing.assert_allclose(count_sampled.asnumpy(), expected(s, 200, 10))
    assert (np.bincount(s, minlength=10)[0] > np.bincount(s, minlength=10)[9])  # log-uniform
    out = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 50, 10)))
    got = out.bind(mx.cpu(), {"t": true}).forward()
    np.testing.assert_allclose(got[2].asnumpy(), expected(got[0].asnumpy(), 50, 10))
    np.testing.assert_allclose(got[1].asnumpy(), count_true.asnumpy() / 4)
