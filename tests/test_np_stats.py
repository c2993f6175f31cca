"""mx.np's counting and summarising functions (ops/np_stats.py) against NumPy:
histogram (one op with nd.histogram), bincount, unique, diag_indices_from,
broadcast_arrays; npx's erfinv, gamma, constraint_check. Imperative and traced alike."""
import numpy as onp
import pytest
from scipy import special

import straightdope as mx
from straightdope import autograd
from straightdope.gluon import HybridBlock

np, npx = mx.np, mx.npx


class Call(HybridBlock):
    """A HybridBlock that calls `function(F, *inputs)`: the traced form of a call."""

    def __init__(self, function):
        super().__init__()
        self._function = function

    def hybrid_forward(self, F, *inputs):
        return self._function(F, *inputs)


def both(function, *inputs):
    """function's results imperatively and hybridized, as lists of NumPy arrays."""
    results = []
    for hybridize in (False, True):
        block = Call(function)
        if hybridize:
            block.hybridize()
        out = block(*inputs)
        out = out if isinstance(out, (list, tuple)) else [out]
        results.append([o.asnumpy() for o in out])
    return results


def test_histogram_counts_and_edges_match_numpy_for_np_nd_and_sym():
    data = onp.random.default_rng(0).uniform(-3, 12, size=(4, 5))
    edges = onp.array([0.0, 1.0, 2.5, 7.0, 10.0])
    want_n = onp.histogram(data, 7, range=(0.0, 10.0))
    want_e = onp.histogram(data, edges)
    for got in both(lambda F, a: F.np.histogram(a, bins=7, range=(0.0, 10.0)), np.array(data)):
        onp.testing.assert_array_equal(got[0], want_n[0])
        onp.testing.assert_allclose(got[1], want_n[1])
    for got in both(lambda F, a, b: F.np.histogram(a, bins=b), np.array(data), np.array(edges)):
        onp.testing.assert_array_equal(got[0], want_e[0])
        onp.testing.assert_allclose(got[1], edges)
    counts, bounds = mx.nd.histogram(mx.nd.array(data), bins=5)      # range: data's
    onp.testing.assert_array_equal(counts.asnumpy(), onp.histogram(data.astype("float32"), 5)[0])
    assert counts.dtype == onp.int64
    x = mx.sym.Variable("x")
    ex = mx.sym.histogram(a=x, bins=7, range=(0.0, 10.0)).bind(mx.cpu(), {"x": mx.nd.array(data)})
    onp.testing.assert_array_equal(ex.forward()[0].asnumpy(), want_n[0])
    with pytest.raises(NotImplementedError, match="density"):
        np.histogram(np.array(data), density=True)


def test_bincount_with_and_without_weights_and_minlength():
    data = onp.array([3, 0, 3, 5, 1], dtype="int32")
    weights = onp.array([0.5, 1.0, 2.0, -1.0, 4.0])
    for got in both(lambda F, a: F.np.bincount(a, minlength=8), np.array(data, dtype="int32")):
        onp.testing.assert_array_equal(got[0], onp.bincount(data, minlength=8))
    for got in both(lambda F, a, w: F.np.bincount(a, w), np.array(data, dtype="int32"),
                    np.array(weights)):
        onp.testing.assert_allclose(got[0], onp.bincount(data, weights))
    assert np.bincount(np.array(onp.zeros(0, "int64"), dtype="int64")).shape == (0,)
    with pytest.raises(mx.base.MXNetError, match="non-negative"):
        np.bincount(np.array([1, -2], dtype="int32")).asnumpy()


@pytest.mark.parametrize("shape, axis", [((7,), None), ((4, 3), None), ((5, 2), 0),
                                         ((2, 5), 1), ((3, 0), None)])
def test_unique_gives_numpys_four_results(shape, axis):
    data = onp.random.default_rng(1).integers(0, 3, size=shape).astype("float32")
    if axis is not None:
        data = onp.concatenate([data, data], axis=axis)
    want = onp.unique(data, True, True, True, axis)
    for got in both(lambda F, a: F.np.unique(a, True, True, True, axis), np.array(data)):
        assert len(got) == 4
        for g, w in zip(got, want):
            assert g.shape == w.shape
            onp.testing.assert_array_equal(g, w)
    alone = np.unique(np.array(data))
    onp.testing.assert_array_equal(alone.asnumpy(), onp.unique(data))


def test_diag_indices_from_is_one_row_per_axis_as_mxnet():
    for got in both(lambda F, a: F.np.diag_indices_from(a), np.zeros((4, 4, 4))):
        onp.testing.assert_array_equal(got[0], onp.stack(onp.diag_indices_from(
            onp.zeros((4, 4, 4)))))
    with pytest.raises(mx.base.MXNetError, match="all of one length"):
        np.diag_indices_from(np.zeros((2, 3)))


def test_broadcast_arrays_including_zero_sizes():
    shapes = [(0,), (), (2, 1), (1, 0), (3, 2, 1)]
    arrays = [onp.arange(int(onp.prod(s))).reshape(s).astype("int32") for s in shapes]
    got = np.broadcast_arrays(*[np.array(a, dtype="int32") for a in arrays])
    for g, w in zip(got, onp.broadcast_arrays(*arrays)):
        assert g.shape == w.shape and g.dtype == w.dtype


def test_npx_special_functions_and_their_gradients():
    x = onp.linspace(-0.9, 0.9, 7)
    for name, grad in (("erfinv", lambda v: onp.sqrt(onp.pi) / 2
                        * onp.exp(special.erfinv(v) ** 2)),
                       ("erf", lambda v: 2 / onp.sqrt(onp.pi) * onp.exp(-v ** 2))):
        a = np.array(x)
        a.attach_grad()
        with autograd.record():
            out = getattr(npx, name)(a)
        out.backward()
        onp.testing.assert_allclose(out.asnumpy(), getattr(special, name)(x), rtol=1e-6)
        onp.testing.assert_allclose(a.grad.asnumpy(), grad(x), rtol=1e-6)
    onp.testing.assert_allclose(npx.gammaln(np.array([0.5, 3.0])).asnumpy(),
                                special.gammaln([0.5, 3.0]), rtol=1e-6)


def test_constraint_check_passes_true_and_raises_the_message():
    assert bool(npx.constraint_check(np.ones((2, 3), dtype="bool"), "fine").asnumpy())
    for hybridize in (False, True):
        block = Call(lambda F, b: F.npx.constraint_check(b, "values must be positive"))
        if hybridize:
            block.hybridize()
        with pytest.raises(ValueError, match="values must be positive"):
            block(np.array([True, False])).asnumpy()


def test_functions_without_gradient_say_so_at_backward():
    a = np.array([1.0, 2.0, 2.0])
    a.attach_grad()
    with autograd.record():
        counts = np.histogram(a, bins=2, range=(0.0, 3.0))[0]
    with pytest.raises(mx.base.MXNetError, match="_histogram has no gradient"):
        counts.backward()


def test_matmul_refuses_numbers_and_mismatched_shapes_and_null_grad_is_none():
    for sa, sb in (((), (2,)), ((2, 3), (2,)), ((2, 2, 1), (3, 1, 2))):
        with pytest.raises(mx.base.MXNetError, match="np.matmul"):
            np.matmul(np.ones(sa), np.ones(sb))
    a, b = np.ones((2, 3)), np.ones((3,))
    a.attach_grad(grad_req="null")
    b.attach_grad()
    with autograd.record():
        out = np.matmul(a, b)
    out.backward()
    assert a.grad is None               # MXNet keeps no gradient for grad_req 'null'
    onp.testing.assert_array_equal(b.grad.asnumpy(), [2.0, 2.0, 2.0])


def test_sum_to_a_narrower_dtype_rounds_the_wide_sum_once():
    x = onp.random.default_rng(2).uniform(-1, 1, size=(40, 3)).astype("float32")
    want = x.astype("float64").sum(axis=0).astype("float16")
    onp.testing.assert_array_equal(np.array(x).sum(axis=0, dtype="float16").asnumpy(), want)
    got = both(lambda F, a: F.np.sum(a, axis=0, dtype="float16"), np.array(x))
    for g in got:
        assert g[0].dtype == onp.float16
        onp.testing.assert_array_equal(g[0], want)


def test_var_std_cumsum_argmax_clip_methods_trace_and_follow_numpy():
    x = onp.random.default_rng(3).integers(-16, 16, size=(3, 4)).astype("int32")
    calls = [
        (lambda m, a: a.var(axis=1, ddof=1), lambda a: a.var(axis=1, ddof=1)),
        (lambda m, a: a.std(axis=(0, 1), dtype="float64"), lambda a: a.std()),
        (lambda m, a: a.cumsum(axis=0), lambda a: a.cumsum(axis=0)),
        (lambda m, a: a.argmax(1), lambda a: a.argmax(1)),
        (lambda m, a: a.argmin(), lambda a: a.argmin()),
        (lambda m, a: a.astype("float32").clip(None, 3), lambda a: a.clip(None, 3)),
        (lambda m, a: m.mean(a, axis=0, dtype="int8"), lambda a: a.mean(axis=0, dtype="int8")),
    ]
    for ours, numpys in calls:
        want = numpys(x)
        for got in both(lambda F, a: ours(F.np, a), np.array(x, dtype="int32")):
            onp.testing.assert_allclose(got[0], want, rtol=1e-6)
    assert np.array(x).argmax().dtype == onp.int64
    assert np.array(x).var().dtype == onp.float32          # MXNet's default float for ints
    with pytest.raises(mx.base.MXNetError, match="empty sequence"):
        np.argmax(np.zeros((2, 0)), axis=1)
    with pytest.raises(ValueError, match="both None"):
        np.clip(np.array(x), None, None)


@pytest.mark.parametrize("shape, call", [
    ((1, 0), lambda m, a: m.reshape(a, (0,))), ((), lambda m, a: m.reshape(a, (1, 1, 1))),
    ((), lambda m, a: m.squeeze(a, -1)), ((1, 0, 1, 1), lambda m, a: m.squeeze(a, (-1, -4))),
    ((), lambda m, a: a.flatten()), ((2, 0, 1), lambda m, a: a.flatten()),
    ((3, 4), lambda m, a: a.flatten()), ((), lambda m, a: m.transpose(a, ()))])
def test_shape_functions_on_0d_and_empty_arrays_follow_numpy(shape, call):
    data = onp.random.default_rng(4).uniform(size=shape).astype("float32")
    want = call(onp, data)
    x = np.array(data)
    x.attach_grad()
    with autograd.record():
        out = call(np, x)
    out.backward()
    assert out.shape == want.shape
    onp.testing.assert_array_equal(out.asnumpy(), want)
    onp.testing.assert_array_equal(x.grad.asnumpy(), onp.ones(shape))


def test_where_broadcasts_and_sends_gradients_to_the_picked_side():
    cond = onp.array([[1, 0, 1]])
    x, y = np.ones((2, 1)), np.zeros(())
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        out = np.where(np.array(cond, dtype="int32"), x, y)
    out.backward()
    onp.testing.assert_array_equal(out.asnumpy(), onp.where(cond, onp.ones((2, 1)), 0.0))
    onp.testing.assert_array_equal(x.grad.asnumpy(), [[2.0], [2.0]])
    assert float(y.grad.asnumpy()) == 2.0
    for got in both(lambda F, c, a, b: F.np.where(c, a, b), np.array(cond, dtype="int32"),
                    np.ones((2, 1)), np.zeros(())):
        onp.testing.assert_array_equal(got[0], onp.where(cond, onp.ones((2, 1)), 0.0))


def test_creation_functions_trace_and_follow_numpys_dtypes():
    fill = np.array([1, 2, 3], dtype="int64")
    for got in both(lambda F, v: F.np.full((2, 3), v, dtype="float32"), fill):
        assert got[0].dtype == onp.float32
        onp.testing.assert_array_equal(got[0], onp.full((2, 3), [1, 2, 3], dtype="float32"))
    for got in both(lambda F, x: x + F.np.arange(1, -10, -4, dtype="int32"),
                    np.zeros((), dtype="int32")):
        onp.testing.assert_array_equal(got[0], onp.arange(1, -10, -4))
    for got in both(lambda F, x: x + F.np.logspace(0, 2, 3), np.zeros(())):
        onp.testing.assert_allclose(got[0], [1.0, 10.0, 100.0], rtol=1e-6)
    for got in both(lambda F, x: x + F.np.linspace(-2, 4, 30, dtype="int32"),
                    np.zeros((), dtype="int32")):
        onp.testing.assert_array_equal(got[0], onp.linspace(-2, 4, 30, dtype="int32"))
    for got in both(lambda F, x: F.np.full_like(x, 2, dtype="int8"), np.array([True, False])):
        onp.testing.assert_array_equal(got[0], [2, 2])
    with pytest.raises(mx.base.MXNetError, match="num must be an integer"):
        np.linspace(0, 1, 2.5)


@pytest.mark.parametrize("shape, newshape, reverse, want", [
    ((2, 3, 5, 4), (-1, -2, -2), False, (8, 3, 5)), ((2, 1, 4, 5), (-2, -3, -2, -2), False,
                                                      (2, 4, 5)),
    ((2, 3, 5, 6), (6, 1, -4), False, (6, 1, 5, 6)), ((2, 3, 5, 6), (-5, -1), False, (6, 30)),
    ((64, 1, 2, 3), (-6, 16, -1, -4), False, (16, 4, 1, 2, 3)),
    ((8, 5, 4, 6), (-4, -1, 3, -6), True, (8, 5, 4, 2, 3))])
def test_npx_reshape_reads_mxnet_2s_codes(shape, newshape, reverse, want):
    data = onp.arange(int(onp.prod(shape)), dtype="float32").reshape(shape)
    for got in both(lambda F, a: F.npx.reshape(a, newshape, reverse=reverse), np.array(data)):
        onp.testing.assert_array_equal(got[0], data.reshape(want))
    with pytest.raises(mx.base.MXNetError, match="-3 drops an axis of length 1"):
        npx.reshape(np.zeros((2, 3)), (-3, -2))


def test_any_and_all_count_without_overflow_and_read_an_empty_axis_tuple():
    x = onp.ones((4, 6, 9), dtype="int8")              # 216 ones: an int8 count wraps
    for got in both(lambda F, a: F.np.any(a), np.array(x, dtype="int8")):
        assert bool(got[0])
    y = onp.array([[0, 2], [3, 0]], dtype="int32")
    for got in both(lambda F, a: F.np.all(a, axis=()), np.array(y, dtype="int32")):
        onp.testing.assert_array_equal(got[0], onp.all(y, axis=()))


def test_broadcast_to_a_zero_length_keeps_minus_two_axes():
    x = np.ones((1, 5))
    out = np.broadcast_to(x, (0, -2))
    assert out.shape == (0, 5)


def test_npx_batch_dot_of_more_than_three_axes_and_its_gradients():
    rng = onp.random.default_rng(6)
    a, b = rng.uniform(-1, 1, (3, 2, 3, 2)), rng.uniform(-1, 1, (3, 2, 2, 3))
    want = onp.matmul(onp.swapaxes(a, -1, -2), onp.swapaxes(b, -1, -2))
    for got in both(lambda F, x, y: F.npx.batch_dot(x, y, transpose_a=True, transpose_b=True),
                    np.array(a), np.array(b)):
        onp.testing.assert_allclose(got[0], want, rtol=1e-6)
    x, y = np.array(a), np.array(b)
    x.attach_grad()
    with autograd.record():
        out = npx.batch_dot(x, y, transpose_a=True, transpose_b=True)
    out.backward()
    og = onp.ones(want.shape)               # out = a^T b^T, so the gradient of a is (og b)^T
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.swapaxes(onp.matmul(
        og, b), -1, -2), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="batch axes must agree"):
        npx.batch_dot(np.ones((2, 5, 3, 1)), np.ones((2, 4, 3, 1)), transpose_a=True)
