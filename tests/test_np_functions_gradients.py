"""mx.np functions that used to compute in NumPy (dropping gradients without a word) run
registry ops: their gradients match finite differences of NumPy's own function; arguments
they cannot honour are refused."""
import numpy as onp
import pytest

import straightdope as mx
from straightdope import autograd

np = mx.np

CASES = {
    "tile": (lambda m, a: m.tile(a, (2, 3)), (2, 3)),
    "tile_int": (lambda m, a: m.tile(a, 2), (2, 3)),
    "repeat": (lambda m, a: m.repeat(a, 3, axis=1), (2, 3)),
    "repeat_flat": (lambda m, a: m.repeat(a, 2), (2, 3)),
    "std": (lambda m, a: m.std(a, axis=0), (3, 4)),
    "var": (lambda m, a: m.var(a), (3, 4)),
    "var_ddof": (lambda m, a: m.var(a, axis=1, ddof=1, keepdims=True), (3, 4)),
    "sort": (lambda m, a: m.sort(a, axis=1), (3, 4)),
    "split": (lambda m, a: m.split(a, [1, 3], axis=1)[1], (2, 4)),
    "split_sections": (lambda m, a: m.split(a, 2, axis=0)[1], (4, 3)),
    "meshgrid_xy": (lambda m, a: m.meshgrid(a[0], a[1, :2])[0] * m.meshgrid(a[0], a[1, :2])[1],
                    (2, 3)),
    "meshgrid_ij": (lambda m, a: m.meshgrid(a[0], a[1], indexing="ij")[1], (2, 3)),
    # the functions that move elements (ops/np_ops.py's index maps)
    "roll": (lambda m, a: m.roll(a, (1, -2), axis=(0, 1)), (3, 4)),
    "roll_flat": (lambda m, a: m.roll(a, 5), (3, 4)),
    "rot90": (lambda m, a: m.rot90(a, 3, axes=(2, 0)), (2, 3, 4)),
    "tril": (lambda m, a: m.tril(a, -1), (2, 3, 4)),
    "triu": (lambda m, a: m.triu(a, 1), (4, 3)),
    "pad_constant": (lambda m, a: m.pad(a, ((1, 2), (0, 1)), constant_values=3.5), (2, 3)),
    "pad_reflect": (lambda m, a: m.pad(a, ((2, 2), (1, 0)), mode="reflect"), (3, 3)),
    "pad_edge": (lambda m, a: m.pad(a, ((2, 1), (1, 2)), mode="edge"), (2, 3)),
    "resize": (lambda m, a: m.resize(a, (3, 5)), (2, 3)),
    "delete": (lambda m, a: m.delete(a, [0, 2], axis=1), (2, 4)),
    "delete_slice": (lambda m, a: m.delete(a, slice(1, None, 2)), (2, 4)),
    "insert_scalar": (lambda m, a: m.insert(a, 1, 9.0, axis=0), (2, 3)),
    "insert_rows": (lambda m, a: m.insert(a, [0, 2], a[:1] * 2, axis=0), (3, 2)),
    "diagflat": (lambda m, a: m.diagflat(a, -1), (2, 2)),
    # np.linalg: NumPy-computed gradients (MXNet's formulas)
    "det": (lambda m, a: m.linalg.det(a), (2, 3, 3)),
    "slogdet": (lambda m, a: m.linalg.slogdet(a)[1], (2, 3, 3)),
    "inv": (lambda m, a: m.linalg.inv(a), (3, 3)),
    "solve_vectors": (lambda m, a: m.linalg.solve(a[:3], a[3]), (4, 3)),
    "solve_matrix": (lambda m, a: m.linalg.solve(a[:, :2], a[:, 2:]), (2, 4)),
    "cholesky": (lambda m, a: m.linalg.cholesky(m.dot(a, a.T) + 4 * m.eye(3)), (3, 3)),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a + a.T), (3, 3)),
    "tensorinv": (lambda m, a: m.linalg.tensorinv(a, ind=1), (4, 2, 2)),
    # more element moves, and several inputs joined (_np_combine)
    "moveaxis": (lambda m, a: m.moveaxis(a, 0, -1), (2, 3, 4)),
    "flip_all": (lambda m, a: m.flip(a), (2, 3)),
    "diag_of_vector": (lambda m, a: m.diag(a[0], 1), (2, 3)),
    "diagonal": (lambda m, a: m.diagonal(a, -1, 2, 0), (3, 2, 4)),
    "atleast_3d": (lambda m, a: m.atleast_3d(a), (2, 3)),
    "hstack": (lambda m, a: m.hstack([a[0], a[1, :2]]), (2, 3)),
    "vstack": (lambda m, a: m.vstack([a[0], a[1:]]), (3, 2)),
    "dstack": (lambda m, a: m.dstack([a, a[:, ::-1] * 2]), (2, 3)),
    "column_stack": (lambda m, a: m.column_stack([a[0], a[1:].T]), (3, 2)),
    # linear ones with gradient ops of their own
    "diff": (lambda m, a: m.diff(a, 2, axis=0), (4, 3)),
    "ediff1d": (lambda m, a: m.ediff1d(a, to_begin=[-1.0, 2.0], to_end=5.0), (2, 3)),
    "nan_to_num": (lambda m, a: m.nan_to_num(a * 2), (2, 3)),
    "tensordot": (lambda m, a: m.tensordot(a, a[:, ::-1] * 2, ([0, 2], [2, 0])), (2, 3, 2)),
    "tensordot_int": (lambda m, a: m.tensordot(a, a, 1), (3, 3)),
    "inner": (lambda m, a: m.inner(a, a[::-1]), (2, 3)),
    "dot_nd": (lambda m, a: m.dot(a, m.transpose(a, (1, 2, 0))), (2, 3, 2)),
    "dot_nd_vector": (lambda m, a: m.dot(a, a[0, 0]), (2, 3, 2)),
    # ops/np_stats.py: gradient ops of their own (MXNet's formulas)
    "average": (lambda m, a: m.average(a), (2, 3)),
    "average_weighted": (lambda m, a: m.average(a[:, :2], axis=1, weights=a[:, 2:]), (3, 4)),
    "average_weights_1d": (lambda m, a: m.average(a[1:], axis=0, weights=a[0, :2]), (3, 2)),
    "average_returned": (lambda m, a: m.average(a[:2], axis=(0, 1), weights=a[2:],
                                                returned=True)[0], (4, 3)),
    "polyval": (lambda m, a: m.polyval(a[0], a[1:]), (3, 3)),
    "einsum_matmul": (lambda m, a: m.einsum("ij,jk->ik", a[:2], a[1:].T), (4, 3)),
    "einsum_diagonal": (lambda m, a: m.einsum("ii->i", a), (3, 3)),
    "einsum_ellipsis": (lambda m, a: m.einsum("...ij,...jk", a, a), (2, 2, 2)),
    "einsum_sum_one": (lambda m, a: m.einsum("ij,j->", a, a[0]), (2, 3)),
    "einsum_broadcast_one": (lambda m, a: m.einsum("ij,ij->i", a[:1], a), (2, 3)),
    "matmul_batches": (lambda m, a: m.matmul(a[None, :, :2], a[:, None, :, :]), (3, 2, 2)),
    "var_axes": (lambda m, a: m.var(a, axis=(0, 2), ddof=1), (3, 2, 2)),
    "std_keepdims": (lambda m, a: m.std(a, axis=1, keepdims=True), (2, 3)),
    "cumsum": (lambda m, a: m.cumsum(a, axis=1), (2, 3)),
    "cumsum_flat": (lambda m, a: m.cumsum(a), (2, 3)),
    "mean_dtype": (lambda m, a: m.mean(a, axis=0, dtype="float64"), (3, 2)),
    "matmul_vectors": (lambda m, a: m.matmul(a[0], a[1]) + m.matmul(a[0], a).sum(), (3, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_numpy(name):
    function, shape = CASES[name]
    rng = onp.random.default_rng(len(name))
    data = rng.permutation(onp.arange(1, onp.prod(shape) + 1)).reshape(shape) * 0.37
    want = function(onp, data)
    weights = rng.standard_normal(want.shape)

    x = np.array(data, dtype="float64")
    x.attach_grad()
    with autograd.record():
        out = function(np, x)
        (out * np.array(weights, dtype="float64")).sum().backward()
    assert isinstance(out, np.ndarray)
    assert out.shape == want.shape
    onp.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12)

    numeric = onp.zeros(shape)                  # central differences of NumPy's function
    for i in onp.ndindex(shape):
        step = onp.zeros(shape)
        step[i] = 1e-6
        numeric[i] = ((function(onp, data + step) - function(onp, data - step)) * weights
                      ).sum() / 2e-6
    onp.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-6)


def test_tile_inside_record_backpropagates_the_issue_example():
    x = np.ones((2, 3))
    x.attach_grad()
    with autograd.record():
        np.tile(x, 2).sum().backward()
    assert (x.grad.asnumpy() == 2).all()


def test_argsort_and_isnan_give_numpy_values_and_dtypes():
    data = onp.array([[3.0, onp.nan, 1.0], [0.5, 2.0, -1.0]])
    assert np.isnan(np.array(data)).dtype == onp.bool_
    onp.testing.assert_array_equal(np.isnan(np.array(data)).asnumpy(), onp.isnan(data))
    got = np.argsort(np.array(data[1]))
    assert got.dtype == onp.int64
    onp.testing.assert_array_equal(got.asnumpy(), onp.argsort(data[1]))


@pytest.mark.parametrize("call", [
    lambda: np.zeros((2,), order="F"), lambda: np.ones((2,), order="F"),
    lambda: np.full((2,), 1.0, order="F"), lambda: np.empty((2,), order="F"),
    lambda: np.reshape(np.ones((2, 2)), (4,), order="F")])
def test_fortran_order_is_refused_naming_the_function(call):
    with pytest.raises(NotImplementedError, match=r"np\.\w+: order='F'"):
        call()


def test_dtype_of_sum_mean_prod_is_honoured_for_classic_arrays_too():
    data = onp.array([1.5, 2.5, 4.25])
    for name in ("sum", "mean", "prod"):
        want = getattr(onp, name)(data, dtype="int32")
        for x in (mx.nd.array(data), np.array(data)):
            got = getattr(np, name)(x, dtype="int32")
            assert got.dtype == onp.int32 and got.item() == want, (name, type(x))


def test_arange_and_friends_take_their_context():
    for make in (lambda c: np.arange(3, ctx=c), lambda c: np.arange(3, device=c),
                 lambda c: np.linspace(0, 1, 3, ctx=c), lambda c: np.eye(2, device=c)):
        assert make(mx.cpu(1)).context == mx.cpu(1)


def test_traced_functions_that_move_elements_give_the_imperative_values_and_gradients():
    """hybridize() traces these on Symbols, whose shapes are unknown while tracing."""
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, v):
            moved = F.np.roll(F.np.moveaxis(F.np.pad(x, ((1, 0), (0, 2))), 0, 1), 1)
            joined = F.np.vstack([F.np.atleast_2d(F.np.diff(x, axis=0)), x])
            return (F.np.insert(x, 1, v, axis=0).sum() + moved.sum() * 2
                    + (joined * joined).sum() + F.np.linalg.det(F.np.dot(x.T, x)))

    data = onp.arange(6.0).reshape(3, 2) * 0.3 + onp.array([[1.0, 0.0]] * 3)
    results = []
    for hybridize in (False, True):
        net = Net()
        if hybridize:
            net.hybridize()
        x, v = np.array(data, dtype="float64"), np.array([[7.0, 8.0]], dtype="float64")
        x.attach_grad(), v.attach_grad()
        with autograd.record():
            out = net(x, v)
        out.backward()
        results.append((out.item(), x.grad.asnumpy(), v.grad.asnumpy()))
    (y0, gx0, gv0), (y1, gx1, gv1) = results
    assert onp.isclose(y0, y1) and onp.allclose(gx0, gx1) and onp.allclose(gv0, gv1)
    onp.testing.assert_array_equal(gv0, [[1.0, 1.0]])


def test_gradients_of_insert_reach_the_inserted_values():
    x, v = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([10.0, 20.0])
    x.attach_grad(), v.attach_grad()
    weights = np.array(onp.arange(6.0).reshape(3, 2))
    with autograd.record():
        out = np.insert(x, 1, v, axis=0)
        (out * weights).sum().backward()
    onp.testing.assert_array_equal(out.asnumpy(), [[1, 2], [10, 20], [3, 4]])
    onp.testing.assert_array_equal(v.grad.asnumpy(), [2.0, 3.0])
    onp.testing.assert_array_equal(x.grad.asnumpy(), [[0.0, 1.0], [4.0, 5.0]])


def test_delete_ignores_indices_outside_the_axis_as_mxnet_does():
    x = np.array(onp.arange(8.0).reshape(2, 4))
    onp.testing.assert_array_equal(np.delete(x, [0, 9, -1], axis=1).asnumpy(),
                                   onp.delete(onp.arange(8.0).reshape(2, 4), [0], axis=1))


def test_what_has_no_gradient_says_so():
    x = np.array(onp.arange(4.0).reshape(2, 2))
    x.attach_grad()
    with autograd.record():
        out = np.pad(x, ((1, 1), (0, 0)), mode="maximum")
    onp.testing.assert_array_equal(out.asnumpy(), onp.pad(x.asnumpy(), ((1, 1), (0, 0)),
                                                          mode="maximum"))
    with pytest.raises(mx.base.MXNetError, match=r"np.pad\(mode='maximum'\) has no gradient"):
        out.backward()
    with pytest.raises(mx.base.MXNetError, match="complex eigenvalues"):
        np.linalg.eig(np.array([[0.0, -1.0], [1.0, 0.0]]))
    with pytest.raises(mx.base.MXNetError, match=r"square matrices .* shape \(2, 3\)"):
        np.linalg.inv(np.ones((2, 3)))
    with pytest.raises(mx.base.MXNetError, match="N and M must be at least 0"):
        np.eye(-1)


def test_ufunc_keywords_other_than_numpys_defaults_are_refused():
    x = np.array([1.0, 4.0])
    onp.testing.assert_allclose(np.sqrt(x, where=True, casting="same_kind", order="K").asnumpy(),
                                [1.0, 2.0])
    for kwargs in ({"where": False}, {"subok": False}, {"dtype": "int8"},
                   {"casting": "safe"}, {"order": "C"}):
        with pytest.raises(NotImplementedError, match=r"np\.sqrt: (dtype|\w+=)"):
            np.sqrt(x, **kwargs)
    for kwargs in ({"dtype": "abcdefg"}, {"casting": "mxnet"}):
        with pytest.raises(TypeError):
            np.sqrt(x, **kwargs)


def test_bool_functions_match_numpy_and_write_into_out():
    data = onp.array([1.0, onp.inf, -onp.inf, onp.nan, 0.0, -2.5])
    x = np.array(data)
    for name in ("isnan", "isinf", "isposinf", "isneginf", "isfinite", "logical_not"):
        got = getattr(np, name)(x)
        assert got.dtype == onp.bool_, name
        onp.testing.assert_array_equal(got.asnumpy(), getattr(onp, name)(data), err_msg=name)
    out = np.zeros(data.shape, dtype="bool")
    assert np.isnan(x, out) is out and out.asnumpy()[3] and not out.asnumpy()[0]
    with pytest.raises(TypeError, match="out= has dtype float32"):
        np.isnan(x, out=np.zeros(data.shape))
    ints = onp.array([-3, 0, 5], dtype="int32")
    onp.testing.assert_array_equal(np.bitwise_not(np.array(ints, dtype="int32")).asnumpy(),
                                   onp.bitwise_not(ints))


def test_windows_indices_and_eye_compute_and_trace_alike():
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return (x + F.np.hanning(5, dtype="float64") + F.np.blackman(5, dtype="float64"),
                    F.np.indices((2, 3)), F.np.eye(2, 0), F.np.hamming(0))

    x = np.zeros((), dtype="float64")
    want = [onp.hanning(5) + onp.blackman(5), onp.indices((2, 3)), onp.eye(2, 0),
            onp.hamming(0)]
    for hybridize in (False, True):
        net = Net()
        if hybridize:
            net.hybridize()
        got = net(x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            onp.testing.assert_allclose(g.asnumpy(), w, atol=1e-12)
        assert got[1].dtype == onp.int64


def test_out_is_written_or_refused_never_ignored():
    x = np.array([[1.0, 0.0], [2.0, 3.0]])
    out = np.zeros((), dtype="float32")
    assert np.trace(x, out=out) is out and out.item() == 4.0
    flags = np.zeros((2,), dtype="bool")
    assert np.any(x, axis=1, out=flags) is flags
    onp.testing.assert_array_equal(flags.asnumpy(), [True, True])
    assert np.all(x, axis=1, out=flags) is flags
    onp.testing.assert_array_equal(flags.asnumpy(), [False, True])
    with pytest.raises(TypeError, match="out= has dtype"):
        np.all(x, axis=1, out=np.zeros((2,)))
    for call in (lambda: np.dot(x, x, out=np.zeros((2, 2))),
                 lambda: np.cumsum(x, out=np.zeros((4,))),
                 lambda: np.around(x, out=np.zeros((2, 2)))):
        with pytest.raises(NotImplementedError, match="out= is not supported"):
            call()


def test_a_failed_factorization_gives_nan_not_an_error_for_the_whole_batch():
    batch = np.array([[[2.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]]])
    got = np.linalg.inv(batch).asnumpy()
    assert onp.isnan(got).all() and got.shape == (2, 2, 2)
    assert onp.isnan(np.linalg.cholesky(np.array([[-1.0, 0.0], [0.0, 1.0]])).asnumpy()).all()
    onp.testing.assert_allclose(np.linalg.inv(batch[0]).asnumpy(), [[0.5, 0.0], [0.0, 0.5]])
