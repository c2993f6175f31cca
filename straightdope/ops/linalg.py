"""Linear-algebra ops (`nd.linalg`, `sym.linalg`): matrix factorisations with gradients.

Each works on the last two axes and on a stack of matrices in the leading ones, as
MXNet's `linalg.*` ops do. They have no Numba kernel: compiled graphs run their NumPy
forward between compiled segments (`placement="host"`).
"""
import numpy as np

from .registry import Bool, Float, Int, OpError, register


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


# ------------------------------------------------------------ MXNet's other linalg ops
# Matrices are in the last two axes. Each op's gradient is one `_linalg_<name>_grad` op
# whose NumPy forward follows MXNet's backward (src/operator/tensor/la_op-inl.h), so the
# triangle an op ignores gets no gradient, as in MXNet.

def _t(x):
    return np.swapaxes(x, -1, -2)


def _tri(a, lower):
    """The triangle of `a` an op reads (its diagonal included): BLAS never reads the other."""
    return np.tril(a) if lower else np.triu(a)


def _op(x, transpose):
    return _t(x) if transpose else x


def _trmm(a, b, alpha, rightside, lower, transpose):
    a = _op(_tri(a, lower), transpose)
    return alpha * (b @ a if rightside else a @ b)


def _trsm(a, b, alpha, rightside, lower, transpose):
    a = _op(_tri(a, lower), transpose)
    if rightside:                         # X a = alpha b  <=>  a^T X^T = alpha b^T
        return _t(np.linalg.solve(_t(a), alpha * _t(b)))
    return np.linalg.solve(a, alpha * b)


def _check_square(name, shape):
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise OpError(f"linalg.{name}: needs square matrices in the last two axes, got "
                      f"shape {tuple(shape)}")


def _la(name, forward, infer_shape, backward, inputs=("A",), attrs=None, outputs=("output",),
        doc=""):
    """Register `_linalg_<name>` and its gradient op `_linalg_<name>_grad`, which takes
    (output gradients..., inputs..., outputs...) and returns the inputs' gradients."""
    n_out = len(outputs)

    def run(attrs, *arrays):
        result = forward(attrs, *arrays)
        dtype = arrays[0].dtype
        if isinstance(result, tuple):
            return tuple(np.asarray(r).astype(dtype, copy=False) for r in result)
        return np.asarray(result).astype(dtype, copy=False)

    def run_backward(attrs, *arrays):
        grads = backward(attrs, *arrays)
        return tuple(np.asarray(g).astype(arrays[0].dtype, copy=False) for g in grads)

    def gradient(F, attrs, ins, outs, out_grads):
        heads = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outs)]
        grads = getattr(F, f"_linalg_{name}_grad")(*heads, *ins, *outs, **attrs)
        return list(grads) if len(ins) > 1 else [grads]

    def shape_of_grads(attrs, s):
        return s, list(s[n_out:n_out + len(inputs)])

    register(f"_linalg_{name}", inputs=inputs, attrs=attrs or {}, forward=run,
             infer_shape=infer_shape, gradient=gradient, num_outputs=n_out,
             output_names=outputs, placement="host", doc=doc)
    register(f"_linalg_{name}_grad",
             inputs=tuple(f"d{o}" for o in outputs) + inputs + outputs, attrs=attrs or {},
             forward=run_backward, infer_shape=shape_of_grads, num_outputs=len(inputs),
             placement="host", doc=f"The gradient of linalg.{name}.")


def _batch_shape(*shapes):
    return None if any(s is None for s in shapes) else [tuple(s) for s in shapes]


# gemm / gemm2: `axis` is the axis of the rows (the columns are the last one)
def _rows_last(x, axis):
    return np.moveaxis(x, axis, -2)


def _rows_back(x, axis):
    return np.moveaxis(x, -2, axis)


def _gemm2_shape(attrs, s):
    a, b = s[0], s[1]
    if a is None or b is None:
        return s, [None]
    ax = attrs["axis"]
    ma, mb = (np.moveaxis(np.empty(x, bool), ax, -2).shape for x in (a, b))
    ra, ca = (ma[-1], ma[-2]) if attrs["transpose_a"] else (ma[-2], ma[-1])
    rb, cb = (mb[-1], mb[-2]) if attrs["transpose_b"] else (mb[-2], mb[-1])
    if ma[:-2] != mb[:-2] or ca != rb:
        raise OpError(f"linalg.gemm: cannot multiply matrices of shapes {tuple(a)} and "
                      f"{tuple(b)} (transpose_a={attrs['transpose_a']}, transpose_b="
                      f"{attrs['transpose_b']}, axis={ax})")
    out = np.moveaxis(np.empty(ma[:-2] + (ra, cb), bool), -2, ax).shape
    return s, [tuple(out)]


def _gemm_shape(attrs, s):
    s2, out = _gemm2_shape(attrs, s[:2])
    if out[0] is not None and s[2] is not None and tuple(s[2]) != out[0]:
        raise OpError(f"linalg.gemm: C has shape {tuple(s[2])}, the product {out[0]}")
    return s, [out[0] if out[0] is not None else s[2]]


def _gemm_grads(attrs, dd, a, b):
    ax, alpha, ta, tb = attrs["axis"], attrs["alpha"], attrs["transpose_a"], attrs["transpose_b"]
    dd, a, b = (_rows_last(x, ax) for x in (dd, a, b))
    da = alpha * (_op(b, tb) @ _t(dd) if ta else dd @ _op(b, not tb))
    db = alpha * (_t(dd) @ _op(a, ta) if tb else _op(a, not ta) @ dd)
    return _rows_back(da, ax), _rows_back(db, ax)


def _gemm2(attrs, a, b):
    ax = attrs["axis"]
    a, b = _rows_last(a, ax), _rows_last(b, ax)
    return _rows_back(attrs["alpha"] * (_op(a, attrs["transpose_a"]) @
                                        _op(b, attrs["transpose_b"])), ax)


_mult = {"transpose_a": Bool(), "transpose_b": Bool(), "alpha": Float(1.0), "axis": Int(-2)}
_la("gemm", lambda at, a, b, c: _gemm2(at, a, b) + at["beta"] * c, _gemm_shape,
    lambda at, dd, a, b, c, d: _gemm_grads(at, dd, a, b) + (at["beta"] * dd,),
    inputs=("A", "B", "C"), attrs={**_mult, "beta": Float(1.0)},
    doc="linalg.gemm(A, B, C) = alpha * op(A) op(B) + beta * C.")
_la("gemm2", _gemm2, _gemm2_shape, lambda at, dc, a, b, c: _gemm_grads(at, dc, a, b),
    inputs=("A", "B"), attrs=_mult, doc="linalg.gemm2(A, B) = alpha * op(A) op(B).")


def _square_same(name):
    def infer(attrs, s):
        if s[0] is not None:
            _check_square(name, s[0])
        return s, [s[0]]
    return infer


def _per_matrix(fn, a, *shapes):
    """fn on each matrix of the stack; a matrix it cannot factorise (not positive
    definite, NaN or inf) gives NaN outputs instead of stopping the whole batch."""
    flat = a.reshape((-1,) + a.shape[-2:]).astype(np.float64)
    outs = [np.full((len(flat),) + s, np.nan) for s in shapes]
    for k, m in enumerate(flat):
        try:
            for out, value in zip(outs, fn(m)):
                out[k] = value
        except np.linalg.LinAlgError:
            pass
    return tuple(o.reshape(a.shape[:-2] + o.shape[1:]) for o in outs)


def _potrf(attrs, a):
    _check_square("potrf", a.shape)
    n = a.shape[-1]
    full = _tri(a, True) + _t(np.tril(a, -1))          # reads the lower triangle
    (l,) = _per_matrix(lambda m: (np.linalg.cholesky(m),), full, (n, n))
    failed = np.isnan(l).any(axis=(-2, -1)) & np.isfinite(full).all(axis=(-2, -1))
    if failed.any():        # as MXNet's CPU potrf: LAPACK's failure is an error
        raise OpError(f"linalg.potrf: {int(failed.sum())} matrix(es) of the "
                      f"input of shape {a.shape} are not symmetric positive definite, so they "
                      f"have no Cholesky factor (LAPACK's potrf failed); make them so, e.g. "
                      f"A A^T + eps I")
    return l if attrs["lower"] else _t(l)


def _potrf_grad(attrs, db, a, b):
    lower = attrs["lower"]
    if lower:      # dA = 0.5 B^-T copyLTU(B^T dB) B^-1
        m = _trmm(b, db, 1.0, False, True, True)
        m = np.tril(m) + _t(np.tril(m, -1))
        return (_trsm(b, _trsm(b, m, 1.0, False, True, True), 0.5, True, True, False),)
    m = _trmm(b, db, 1.0, True, False, True)
    m = np.triu(m) + _t(np.triu(m, 1))
    return (_trsm(b, _trsm(b, m, 1.0, False, False, False), 0.5, True, False, True),)


def _potri(attrs, b):
    _check_square("potri", b.shape)
    b = _tri(b, attrs["lower"])
    return np.linalg.inv(b @ _t(b) if attrs["lower"] else _t(b) @ b)


def _potri_grad(attrs, da, b, a):
    lower = attrs["lower"]
    if lower:
        db = _trsm(b, a @ da + a @ _t(da), -1.0, True, True, True)
    else:
        db = _trsm(b, da @ a + _t(da) @ a, -1.0, False, False, True)
    return (_tri(db, lower),)


_lower = {"lower": Bool(True)}
_la("potrf", _potrf, _square_same("potrf"), _potrf_grad, attrs=_lower,
    doc="linalg.potrf(A): the Cholesky factor of a symmetric positive-definite A "
        "(A = L L^T, or U^T U when lower=False), read from A's lower triangle.")
_la("potri", _potri, _square_same("potri"), _potri_grad, attrs=_lower,
    doc="linalg.potri(B): the inverse of A from its Cholesky factor B (A = B B^T).")

_tri_attrs = {"transpose": Bool(), "rightside": Bool(), "lower": Bool(True),
              "alpha": Float(1.0)}


def _tri_args(attrs):
    return attrs["alpha"], attrs["rightside"], attrs["lower"], attrs["transpose"]


def _tri_shape(name):
    def infer(attrs, s):
        a, b = s
        if a is not None:
            _check_square(name, a)
        if a is not None and b is not None:
            n = b[-1] if attrs["rightside"] else b[-2]
            if tuple(a[:-2]) != tuple(b[:-2]) or a[-1] != n:
                raise OpError(f"linalg.{name}: A of shape {tuple(a)} does not fit B of shape "
                              f"{tuple(b)} (rightside={attrs['rightside']})")
        return s, [b]
    return infer


def _tri_da(attrs, dc, other):
    """dA of C = trmm/trsm(A, B) up to the scale: op(dC) op(other) on A's side."""
    t = attrs["transpose"]
    if attrs["rightside"] == t:
        return _op(dc, t) @ _op(other, not t)
    return _op(other, not t) @ _op(dc, t)


def _trmm_grad(attrs, dc, a, b, c):
    alpha, right, lower, t = _tri_args(attrs)
    return (_tri(alpha * _tri_da(attrs, dc, b), lower), _trmm(a, dc, alpha, right, lower, not t))


def _trsm_grad(attrs, dc, a, b, c):
    alpha, right, lower, t = _tri_args(attrs)
    db = _trsm(a, dc, alpha, right, lower, not t)
    return (_tri(-1.0 / alpha * _tri_da(attrs, db, c), lower), db)


_la("trmm", lambda at, a, b: _trmm(a, b, *_tri_args(at)), _tri_shape("trmm"), _trmm_grad,
    inputs=("A", "B"), attrs=_tri_attrs,
    doc="linalg.trmm(A, B) = alpha * op(A) B (or B op(A) when rightside), A triangular.")
_la("trsm", lambda at, a, b: _trsm(a, b, *_tri_args(at)), _tri_shape("trsm"), _trsm_grad,
    inputs=("A", "B"), attrs=_tri_attrs,
    doc="linalg.trsm(A, B): X with op(A) X = alpha B (or X op(A) = alpha B when rightside), "
        "A triangular.")


def _sumlogdiag_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    _check_square("sumlogdiag", s[0])
    return s, [tuple(s[0][:-2])]


def _sumlogdiag_grad(attrs, db, a, b):
    n = a.shape[-1]
    return (np.eye(n) * (db[..., None] / np.diagonal(a, axis1=-2, axis2=-1))[..., None, :],)


_la("sumlogdiag", lambda at, a: np.log(np.diagonal(a, axis1=-2, axis2=-1)).sum(-1),
    _sumlogdiag_shape, _sumlogdiag_grad,
    doc="linalg.sumlogdiag(A): the sum of the logarithms of A's diagonal.")


def _syrk_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    a = tuple(s[0])
    k = a[-1] if attrs["transpose"] else a[-2]
    return s, [a[:-2] + (k, k)]


def _syrk(attrs, a):
    return attrs["alpha"] * (_t(a) @ a if attrs["transpose"] else a @ _t(a))


def _syrk_grad(attrs, db, a, b):
    alpha = attrs["alpha"]
    return (alpha * (a @ db + a @ _t(db)) if attrs["transpose"] else
            alpha * (db @ a + _t(db) @ a),)


_la("syrk", _syrk, _syrk_shape, _syrk_grad, attrs={"transpose": Bool(), "alpha": Float(1.0)},
    doc="linalg.syrk(A) = alpha * A A^T (A^T A when transpose).")


def _syevd(attrs, a):
    """(U, L): A = U^T diag(L) U, L ascending, each row of U signed so that its largest
    entry (by size; the first one on a tie) is positive, as MXNet's SyevdEigenVecSigns."""
    _check_square("syevd", a.shape)
    n = a.shape[-1]
    lam, v = _per_matrix(np.linalg.eigh, a, (n,), (n, n))
    u = _t(v)
    big = np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1)
    return u * np.where(big < 0, -1.0, 1.0), lam


def _syevd_shape(attrs, s):
    if s[0] is None:
        return s, [None, None]
    _check_square("syevd", s[0])
    return s, [tuple(s[0]), tuple(s[0][:-1])]


def _syevd_grad(attrs, du, dl, a, u, lam):
    """dA = U^T Y U with Y[i, j] = (X[i, j] - X[j, i]) / (2 (L[i] - L[j])) off the diagonal,
    dL on it, X = dU U^T; the eigenvalue gap is kept above a tiny eps as in MXNet."""
    x = du @ _t(u)
    eps = 1e-100 if a.dtype == np.float64 else 1e-30
    gap = np.maximum(lam[..., :, None] - lam[..., None, :], eps)
    below = np.tril((x - _t(x)) / (2.0 * gap), -1)
    y = below + _t(below) + dl[..., None] * np.eye(lam.shape[-1])
    return (_t(u) @ y @ u,)


_la("syevd", _syevd, _syevd_shape, _syevd_grad, outputs=("U", "L"),
    doc="linalg.syevd(A) -> (U, L): the eigendecomposition A = U^T diag(L) U of a symmetric A.")

_diag_attrs = {"offset": Int(0)}


def _extractdiag_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    _check_square("extractdiag", s[0])
    n, k = s[0][-1], abs(attrs["offset"])
    if k >= n:
        raise OpError(f"linalg.extractdiag: offset {attrs['offset']} is outside matrices of "
                      f"shape {tuple(s[0][-2:])}")
    return s, [tuple(s[0][:-2]) + (n - k,)]


def _makediag(attrs, d):
    k = attrs["offset"]
    n = d.shape[-1] + abs(k)
    out = np.zeros(d.shape[:-1] + (n, n), d.dtype)
    rows, cols = np.arange(d.shape[-1]) - min(k, 0), np.arange(d.shape[-1]) + max(k, 0)
    out[..., rows, cols] = d
    return out


def _makediag_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    n = s[0][-1] + abs(attrs["offset"])
    return s, [tuple(s[0][:-1]) + (n, n)]


_la("extractdiag", lambda at, a: np.diagonal(a, at["offset"], -2, -1).copy(),
    _extractdiag_shape, lambda at, db, a, b: (_makediag(at, db),), attrs=_diag_attrs,
    doc="linalg.extractdiag(A, offset): the diagonal `offset` of A (above the main one "
        "when positive).")
_la("makediag", _makediag, _makediag_shape,
    lambda at, db, a, b: (np.diagonal(db, at["offset"], -2, -1),), attrs=_diag_attrs,
    doc="linalg.makediag(A, offset): square matrices with A's last axis on diagonal `offset`.")


def _trian_index(n, offset, lower):
    """(rows, cols) of the triangle's entries in MXNet's order: row by row of the lower
    triangle shifted down by |offset|; of the upper one, read as its transpose."""
    k = abs(offset)
    r, c = np.tril_indices(n - k)
    if offset < 0 or (offset == 0 and lower):
        return r + k, c
    return c, r + k


def _extracttrian(attrs, a):
    rows, cols = _trian_index(a.shape[-1], attrs["offset"], attrs["lower"])
    return a[..., rows, cols]


def _maketrian_size(attrs, m):
    side = int(round((np.sqrt(8 * m + 1) - 1) / 2))
    if side * (side + 1) // 2 != m:
        raise OpError(f"linalg.maketrian: {m} entries are not a triangle (1, 3, 6, 10, ...)")
    return side + abs(attrs["offset"])


def _maketrian(attrs, t):
    n = _maketrian_size(attrs, t.shape[-1])
    rows, cols = _trian_index(n, attrs["offset"], attrs["lower"])
    out = np.zeros(t.shape[:-1] + (n, n), t.dtype)
    out[..., rows, cols] = t
    return out


def _extracttrian_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    _extractdiag_shape(attrs, s)
    side = s[0][-1] - abs(attrs["offset"])
    return s, [tuple(s[0][:-2]) + (side * (side + 1) // 2,)]


def _maketrian_shape(attrs, s):
    if s[0] is None:
        return s, [None]
    n = _maketrian_size(attrs, s[0][-1])
    return s, [tuple(s[0][:-1]) + (n, n)]


_trian_attrs = {"offset": Int(0), "lower": Bool(True)}
_la("extracttrian", _extracttrian, _extracttrian_shape,
    lambda at, db, a, b: (_maketrian(at, db),), attrs=_trian_attrs,
    doc="linalg.extracttrian(A, offset, lower): a triangle of A as a flat vector.")
_la("maketrian", _maketrian, _maketrian_shape,
    lambda at, db, a, b: (_extracttrian(at, db),), attrs=_trian_attrs,
    doc="linalg.maketrian(A, offset, lower): square matrices with A's last axis as a triangle.")
