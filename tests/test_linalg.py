"""MXNet's linalg ops: values MXNet's documentation gives, and the gradients of the ops
that read only one triangle of a symmetric input (potrf, syevd), checked the way MXNet's
tests check them: through a symmetrised input, 0.5 * (A + A^T)."""
import numpy as np
import pytest

from straightdope import autograd, nd


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def _symmetrised(op, head):
    """(value of sum(head * op(sym(A))), its gradient) as functions of A."""
    def value(a):
        x = nd.array(a, dtype="float64")
        s = 0.5 * (x + x.transpose((0, 2, 1)))
        return float((op(s) * nd.array(head, dtype="float64")).sum().asscalar())

    def grad(a):
        x = nd.array(a, dtype="float64")
        x.attach_grad()
        with autograd.record():
            s = 0.5 * (x + x.transpose((0, 2, 1)))
            y = (op(s) * nd.array(head, dtype="float64")).sum()
        y.backward()
        return x.grad.asnumpy()
    return value, grad


def _spd(rng, n):
    a = rng.uniform(-1, 1, (2, n, n))
    return a @ a.transpose(0, 2, 1) + n * np.eye(n)


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_gradient_on_symmetric_input(lower):
    rng = np.random.default_rng(0)
    a, head = _spd(rng, 3), rng.uniform(-1, 1, (2, 3, 3))
    value, grad = _symmetrised(lambda s: nd.linalg.potrf(s, lower=lower), head)
    np.testing.assert_allclose(grad(a), _numeric_grad(value, a), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("output", [0, 1])
def test_syevd_gradient_on_symmetric_input(output):
    rng = np.random.default_rng(1)
    a = _spd(rng, 4)
    head = rng.uniform(-1, 1, (2, 4, 4) if output == 0 else (2, 4))
    value, grad = _symmetrised(lambda s: nd.linalg.syevd(s)[output], head)
    np.testing.assert_allclose(grad(a), _numeric_grad(value, a), rtol=1e-5, atol=1e-7)


def test_syevd_matches_mxnet_documentation():
    """MXNet's docstring example: U's rows are eigenvectors, signed positive at their
    largest entry; L ascending."""
    u, lam = nd.linalg.syevd(nd.array([[1., 2.], [2., 4.]], dtype="float64"))
    np.testing.assert_allclose(u.asnumpy(), [[0.89442718, -0.44721359],
                                             [0.44721359, 0.89442718]], rtol=1e-7)
    np.testing.assert_allclose(lam.asnumpy(), [0., 5.], atol=1e-12)


def test_trian_round_trip_and_order():
    """extracttrian reads the lower triangle row by row; the upper one as its transpose."""
    a = nd.array(np.arange(9.0).reshape(3, 3))
    assert nd.linalg.extracttrian(a).asnumpy().tolist() == [0, 3, 4, 6, 7, 8]
    assert nd.linalg.extracttrian(a, lower=False).asnumpy().tolist() == [0, 1, 4, 2, 5, 8]
    assert nd.linalg.extracttrian(a, offset=1).asnumpy().tolist() == [1, 2, 5]
    back = nd.linalg.maketrian(nd.linalg.extracttrian(a, offset=-1), offset=-1).asnumpy()
    assert (back == np.tril(a.asnumpy(), -1)).all()


def test_bad_shapes_name_the_op():
    with pytest.raises(ValueError, match="linalg.potrf: needs square matrices"):
        nd.linalg.potrf(nd.ones((2, 3)))
    with pytest.raises(ValueError, match="linalg.gemm: cannot multiply"):
        nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(ValueError, match="not a triangle"):
        nd.linalg.maketrian(nd.ones((4,)))


def test_potrf_refuses_a_matrix_that_is_not_positive_definite():
    """As MXNet's CPU potrf (LAPACK's failure is an error), in a batch too; a NaN input
    gives NaN (nothing to refuse)."""
    batch = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]])       # the second: eigenvalue -1
    with pytest.raises(ValueError, match="linalg.potrf: 1 matrix.*not symmetric positive "
                                         "definite"):
        nd.linalg.potrf(nd.array(batch))
    with pytest.raises(ValueError, match="linalg.potrf"):
        nd.linalg.potrf(nd.zeros((2, 2)))
    factor = nd.linalg.potrf(nd.array([[np.nan, 0.0], [0.0, 1.0]])).asnumpy()
    assert np.isnan(factor[np.tril_indices(2)]).all()
