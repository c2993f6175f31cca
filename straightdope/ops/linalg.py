"""Linear-algebra ops (`nd.linalg`, `sym.linalg`): matrix factorisations with gradients.

Each works on the last two axes and on a stack of matrices in the leading ones, as
MXNet's `linalg.*` ops do. They have no Numba kernel: compiled graphs run their NumPy
forward between compiled segments (`placement="host"`).
"""
import numpy as np

from .registry import OpError, register


def _lq(a):
    """A = L Q with L lower triangular (m, m) and Q (m, n) with orthonormal rows: the QR
    factorisation of A's transpose, transposed back."""
    _gelqf_shape({}, [a.shape])            # the same clear error imperatively
    q, r = np.linalg.qr(np.swapaxes(a, -1, -2))
    return np.swapaxes(q, -1, -2).astype(a.dtype), np.swapaxes(r, -1, -2).astype(a.dtype)


def _gelqf_shape(attrs, in_shapes):
    a = in_shapes[0]
    if a is None:
        return in_shapes, [None, None]
    if len(a) < 2 or a[-2] > a[-1]:
        raise OpError(f"gelqf: needs matrices with at most as many rows as columns (m <= n) "
                      f"in the last two axes, got shape {tuple(a)}; for m > n factorise the "
                      f"transpose")
    return in_shapes, [tuple(a), tuple(a[:-1]) + (a[-2],)]


def _gelqf_gradient(F, attrs, inputs, outputs, out_grads):
    q, l = outputs
    dq, dl = (g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs))
    return [F._linalg_gelqf_grad(dq, dl, q, l)]


def _gelqf_grad_forward(attrs, dq, dl, q, l):
    """dA = L^-T (dQ + copyltu(M) Q) with M = L^T dL - dQ Q^T, where copyltu(M) mirrors
    M's lower triangle onto its upper one (MXNet's formula for the LQ factorisation)."""
    t = lambda x: np.swapaxes(x, -1, -2)      # noqa: E731
    m = t(l) @ dl - dq @ t(q)
    lower = np.tril(m)
    sym = lower + t(np.tril(m, -1))
    rhs = dq + sym @ q
    return np.linalg.solve(t(l), rhs).astype(dq.dtype)


register("_linalg_gelqf", forward=lambda attrs, a: _lq(a), infer_shape=_gelqf_shape,
         gradient=_gelqf_gradient, num_outputs=2, output_names=("Q", "L"), placement="host",
         doc="linalg.gelqf(A) -> (Q, L): the LQ factorisation A = L Q of matrices with "
             "m <= n (L lower triangular m x m, Q with orthonormal rows).")
register("_linalg_gelqf_grad", inputs=("dQ", "dL", "Q", "L"), forward=_gelqf_grad_forward,
         infer_shape=lambda attrs, s: (s, [None if s[2] is None else s[2]]),
         placement="host", doc="The gradient of gelqf with respect to A.")
