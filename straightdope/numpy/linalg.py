"""`np.linalg`: norms, decompositions and solvers on stacks of matrices (the last two
axes). Each is a registry op (ops/np_ops.py), so it is traced by hybridize() and, but for
eig, eigvals and pinv (as in MXNet), recorded by autograd."""
import numpy as _onp

from .. import ndarray as _nd
from .. import symbol as _sym


def _F(*args):
    return _sym if any(isinstance(a, _sym.Symbol) for a in args) else _nd


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's norm: with ord None, or ord 1 or 2 of vectors, the legacy `norm` op (which
    the compiler fuses); any other order (p-norms, inf, the matrix norms, 'fro', 'nuc')
    through `_npi_norm`. `ord` may be 'inf' or '-inf', as MXNet's."""
    if isinstance(ord, str) and ord in ("inf", "-inf"):
        ord = float(ord)
    if isinstance(axis, list):
        axis = tuple(axis)
    vector = isinstance(axis, int) or (axis is None and isinstance(x, _nd.NDArray) and
                                       x.ndim == 1)     # (a Symbol's ndim is not known)
    if ord is None or (ord in (1, 2) and vector and not isinstance(ord, bool)):
        # the fluent method: an NDArray computes, a Symbol (a traced forward) adds a node
        return x.norm(ord=1 if ord == 1 else 2, axis=axis, keepdims=keepdims)
    return _F(x)._npi_norm(x, ord=repr(ord), axis=repr(axis), keepdims=bool(keepdims))


def det(a):
    return _F(a)._npi_det(a)


def slogdet(a):
    """(sign, log of the absolute value) of the determinant."""
    return tuple(_F(a)._npi_slogdet(a))


def inv(a):
    return _F(a)._npi_inv(a)


def cholesky(a):
    """The lower-triangular L with L @ L.T == a (a symmetric positive-definite)."""
    return _F(a)._npi_cholesky(a)


def solve(a, b):
    """x with a @ x == b; b is a stack of vectors when it has one axis fewer than a."""
    return _F(a, b)._npi_solve(a, b)


def eigh(a, UPLO="L"):
    """(eigenvalues ascending, eigenvectors) of a symmetric matrix read from its lower
    (UPLO='L') or upper triangle."""
    return tuple(_F(a)._npi_eigh(a, UPLO=UPLO))


def eigvalsh(a, UPLO="L"):
    return _F(a)._npi_eigvalsh(a, UPLO=UPLO)


def eig(a):
    """(eigenvalues, eigenvectors), real ones only (as in MXNet): no gradient."""
    return tuple(_F(a)._npi_eig(a))


def eigvals(a):
    return _F(a)._npi_eigvals(a)


def svd(a):
    """(ut, l, v) with a == ut @ diag(l) @ v, for a of shape (..., m, n), m <= n (MXNet's
    form: NumPy's u, s, vh of full_matrices=False)."""
    return tuple(_F(a)._npi_svd(a))


def tensorinv(a, ind=2):
    """The inverse of a read as a matrix of its first `ind` axes by the others."""
    return _F(a)._npi_tensorinv(a, ind=ind)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b; `axes`: a's axes that x sums over, moved to
    the end first (NumPy's)."""
    axes = None if axes is None else tuple(int(k) for k in axes)
    return _F(a, b)._npi_tensorsolve(a, b, axes=repr(axes))


def pinv(a, rcond=1e-15, hermitian=False):
    """The pseudo-inverse (singular values below rcond * the largest count as 0); no
    gradient, as in MXNet."""
    F = _F(a, rcond)
    if not isinstance(rcond, (_nd.NDArray, _sym.Symbol)):
        rcond = _nd.array(_onp.asarray(rcond, _onp.float64), dtype="float64") if F is _nd \
            else _sym.full(_onp.shape(rcond), float(rcond), dtype="float64")
    return F._npi_pinv(a, rcond, hermitian=hermitian)
