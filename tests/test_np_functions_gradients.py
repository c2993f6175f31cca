"""mx.np functions that used to compute in NumPy (dropping gradients without a word) run
registry ops: their gradients match finite differences of NumPy's own function. The one
left in NumPy (cumsum) refuses autograd.record(); arguments it cannot honour are refused."""
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


def test_cumsum_refuses_record_for_an_array_that_needs_a_gradient():
    x = np.array([1.0, 2.0, 3.0])
    onp.testing.assert_array_equal(np.cumsum(x).asnumpy(), [1, 3, 6])
    with autograd.record():
        np.cumsum(np.array([1.0, 2.0]))        # nothing to differentiate: computed
        x.attach_grad()
        with pytest.raises(NotImplementedError, match="np.cumsum has no gradient"):
            np.cumsum(x)


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
