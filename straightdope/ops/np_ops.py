"""`mx.np` functions that only move elements: roll, rot90, tril, pad, delete, insert, ...

Each output element of these is one input element (or a constant), so one pair of ops
covers them all, with gradients:

  `_np_rearrange(data, function=, args=)`    the NumPy function itself, as the forward;
  `_np_rearrange_grad(out_grad, data)`   its gradient: each output gradient is added
                                             to the input element it came from.

Which element that is, the *index map* says: the function applied to the numbers
1..n laid out in data's shape (a constant it fills in, like pad's or tril's, is 0
there). `_np_insert(data, values)` does the same with two inputs (values count -1..-m).
`args` is the function's other arguments as a Python literal ("(2, (0, 1))"), read
with `ast.literal_eval` (literals only, never code).
"""
import ast

import numpy as np

from .registry import Attr, OpError, is_complete, register, show_shape


def _pad(x, pad_width, mode, constant):
    if mode == "constant":
        return np.pad(x, pad_width, mode, constant_values=constant)
    return np.pad(x, pad_width, mode)


def _resize(x, new_shape):
    flat = x.reshape(-1)
    if flat.size == 0:
        return np.zeros(new_shape, x.dtype)     # NumPy's; MXNet fills zeros too
    return np.resize(flat, new_shape)


def npx_shape(shape, newshape, reverse=False):
    """The shape npx.reshape (MXNet 2.0's codes) gives: -1 infer, -2 copy this axis, -3
    drop this axis (of length 1), -4 copy all the rest, -5 merge two axes, -6 split
    one into the two numbers after it (one may be -1); reverse: read both from the end."""
    if reverse:
        return npx_shape(shape[::-1], tuple(newshape)[::-1], False)[::-1]
    out, src, i, newshape = [], 0, 0, tuple(newshape)
    while i < len(newshape):
        code = newshape[i]
        if code == -2:
            out.append(shape[src])
        elif code == -3:
            if shape[src] != 1:
                raise OpError(f"npx.reshape: -3 drops an axis of length 1, but axis {src} "
                              f"of {tuple(shape)} has length {shape[src]}")
        elif code == -4:
            out.extend(shape[src:])
            src = len(shape) - 1
        elif code == -5:
            out.append(shape[src] * shape[src + 1])
            src += 1
        elif code == -6:
            d0, d1 = newshape[i + 1], newshape[i + 2]
            d0 = shape[src] // d1 if d0 == -1 else d0
            out.extend([d0, shape[src] // d0 if d1 == -1 else d1])
            i += 2
        else:
            out.append(code)                          # a length, or -1 to infer
        src += 1
        i += 1
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // max(known, 1)
    return tuple(out)


# function name -> f(x, *args); args exactly as the mx.np function passes them
REARRANGE = {
    "roll": lambda x, shift, axis: np.roll(x, shift, axis),
    "rot90": lambda x, k, axes: np.rot90(x, k, axes).copy(),     # copies are C-ordered
    "tril": lambda x, k: np.tril(x, k),
    "triu": lambda x, k: np.triu(x, k),
    "pad": _pad,
    "delete": lambda x, obj, axis: np.delete(x, obj, axis),
    "resize": _resize,
    "diagflat": lambda x, k: np.diagflat(x, k),
    "insert_scalar": lambda x, obj, axis, value: np.insert(x, obj, value, axis),
    "atleast_1d": np.atleast_1d,
    "atleast_2d": np.atleast_2d,
    "atleast_3d": np.atleast_3d,
    "moveaxis": lambda x, source, destination: np.moveaxis(x, source, destination).copy(),
    "flip": lambda x, axis: np.flip(x, axis).copy(),
    "diag": lambda x, k: np.diag(x, k),
    "diagonal": lambda x, offset, axis1, axis2: np.diagonal(x, offset, axis1, axis2).copy(),
    "broadcast_to": lambda x, shape: np.broadcast_to(x, shape).copy(),
    "reshape": lambda x, shape: x.reshape(shape),
    "npx_reshape": lambda x, newshape, reverse: x.reshape(npx_shape(x.shape, newshape,
                                                                    reverse)),
    "squeeze": lambda x, axis: np.squeeze(x, axis),
    "transpose": lambda x, axes: np.transpose(x, axes).copy(),
}
FILLS = ("pad", "insert_scalar")     # their last argument is the constant they fill in


def _args(attrs):
    return tuple(_slices(a) for a in ast.literal_eval(attrs["args"]))


def _slices(arg):
    """("slice", start, stop, step), how a slice is written in `args`, as a slice."""
    if isinstance(arg, tuple) and len(arg) == 4 and arg[0] == "slice":
        return slice(*arg[1:])
    return arg


def _apply(attrs, x):
    try:
        return REARRANGE[attrs["function"]](x, *_args(attrs))
    except (ValueError, IndexError, TypeError) as err:
        raise OpError(f"np.{attrs['function']}: {err} (array of shape {x.shape})") from None


def _index_map(attrs, shape):
    """The function applied to 1..n in `shape`: which input each output element is
    (0: a constant). The constant of FILLS is 0 here, whatever the forward fills in."""
    idx = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)
    args = _args(attrs)
    if attrs["function"] == "pad" and args[1] in ("maximum", "minimum"):
        raise OpError(f"np.pad(mode={args[1]!r}) has no gradient here (each padded value "
                      f"is a maximum or minimum): pad with another mode, or stop the "
                      f"gradient (x.detach())")
    if attrs["function"] in FILLS:
        args = args[:-1] + (0,)
    return REARRANGE[attrs["function"]](idx, *args)


def _scatter(mapped, grad, n, shape):
    """Each grad element added to input element mapped - 1 (mapped > 0 only)."""
    keep = mapped.reshape(-1) > 0
    summed = np.bincount(mapped.reshape(-1)[keep] - 1, grad.reshape(-1)[keep], minlength=n)
    return summed.reshape(shape).astype(grad.dtype, copy=False)


def _out_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if not is_complete(shape):
        return in_shapes, [None]
    probe = np.broadcast_to(np.zeros((), np.int8), shape)   # no memory of that shape
    return in_shapes, [_apply(attrs, probe).shape]


def _backward_forward(attrs, og, x):
    return _scatter(_index_map(attrs, x.shape), og, x.size, x.shape)


ATTRS = {"function": Attr("str", required=True, choices=tuple(REARRANGE)),
         "args": Attr("str", "()")}

register("_np_rearrange", inputs=("data",), attrs=dict(ATTRS), placement="host",
         forward=lambda attrs, x: _apply(attrs, x), infer_shape=_out_shape,
         gradient=lambda F, a, i, o, og: [F._np_rearrange_grad(og[0], i[0], **a)],
         key_attrs=("function",),
         doc="An mx.np function that moves elements (`function`: roll, rot90, tril, triu, "
             "pad, delete, resize, diagflat, insert_scalar, atleast_nd, moveaxis, flip, diag, "
             "diagonal, broadcast_to, reshape, npx_reshape, squeeze, transpose) applied with "
             "`args`.")
register("_np_rearrange_grad", inputs=("out_grad", "data"), attrs=dict(ATTRS),
         placement="host", forward=_backward_forward,
         infer_shape=lambda attrs, s: (s, [s[1]]), index_inputs=("data",),
         gradient=lambda F, a, i, o, og: [F._np_rearrange(og[0], **a), F.zeros_like(i[1])],
         doc="The gradient of _np_rearrange: out_grad added back to where each element "
             "came from.")


# ------------------------------------------------------------------- insert
def _insert(attrs, x, values):
    obj, axis = _args(attrs)
    try:
        return np.insert(x, obj, values.astype(x.dtype, copy=False), axis)
    except (ValueError, IndexError) as err:
        raise OpError(f"np.insert: {err} (array of shape {x.shape}, values of shape "
                      f"{values.shape})") from None


def _insert_map(attrs, x_shape, v_shape):
    xs = np.arange(1, int(np.prod(x_shape)) + 1, dtype=np.int64).reshape(x_shape)
    vs = -np.arange(1, int(np.prod(v_shape)) + 1, dtype=np.int64).reshape(v_shape)
    return _insert(attrs, xs, vs)


def _insert_shape(attrs, in_shapes):
    if not all(is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_insert(attrs, *probes).shape]


def _insert_backward(attrs, og, x, values):
    mapped = _insert_map(attrs, x.shape, values.shape)
    return (_scatter(mapped, og, x.size, x.shape),
            _scatter(-mapped, og, values.size, values.shape))


register("_np_insert", inputs=("data", "values"), attrs={"args": Attr("str", "()")},
         placement="host", forward=_insert, infer_shape=_insert_shape,
         index_inputs=("values",),            # cast to data's dtype
         gradient=lambda F, a, i, o, og: list(F._np_insert_grad(og[0], i[0], i[1], **a)),
         doc="np.insert(data, obj, values, axis) with args=(obj, axis); values are cast to "
             "data's dtype.")
register("_np_insert_grad", inputs=("out_grad", "data", "values"),
         attrs={"args": Attr("str", "()")}, placement="host", num_outputs=2,
         forward=_insert_backward, infer_dtype=lambda attrs, dtypes: [dtypes[1], dtypes[2]],
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         output_names=("data_grad", "values_grad"),
         doc="The gradient of _np_insert: out_grad split back to data and values.")


# ------------------------------------------------------------------- linalg
# np.linalg's functions on stacks of matrices (the last two axes), each a host op whose
# gradient is a second host op computed in NumPy from the out-grads, inputs and outputs
# (the formulas of MXNet's own src/operator/numpy/linalg/).
def _t(m):
    return np.swapaxes(m, -1, -2)


def _square(name, shape):
    if shape is not None and (len(shape) < 2 or shape[-1] != shape[-2]):
        raise OpError(f"np.linalg.{name}: needs square matrices in the last two axes "
                      f"(..., n, n), got an array of shape {tuple(shape)}")
    return shape


def _numpy_linalg(name, function, *arrays):
    """function(*arrays); where LAPACK fails (a singular or not positive-definite
    matrix, NaN in the input) the results are NaN, as a failed factorization leaves
    them, rather than an error for the whole batch."""
    with np.errstate(all="ignore"):
        try:
            return function(*arrays)
        except np.linalg.LinAlgError:
            a = arrays[0]          # an input of that shape LAPACK handles: I, or zeros
            safe = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape) \
                if a.shape[-1] == a.shape[-2] else np.zeros_like(a)
            result = function(safe, *arrays[1:])
            nan = lambda r: np.full(np.shape(r), np.nan, np.result_type(r, np.float32))
            return tuple(nan(r) for r in result) if isinstance(result, tuple) else nan(result)


def _solve_np1(a, b):
    """NumPy 1's (and MXNet's) solve: b is a stack of vectors when it has one axis fewer
    than a (NumPy 2 asks for b of one axis)."""
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _inv_grad(og, y):
    return -np.matmul(np.matmul(_t(y), og), _t(y))


def _det_grad(og, a, d):
    return (og * d)[..., None, None] * _t(np.linalg.inv(a)) if a.size else np.zeros_like(a)


def _slogdet_grad(og_sign, og_log, a, sign, log):
    return og_log[..., None, None] * _t(np.linalg.inv(a)) if a.size else np.zeros_like(a)


def _solve_grad(og, a, b, x):
    vector = b.ndim == a.ndim - 1
    gb = _solve_np1(_t(a), og)
    ga = -(gb[..., :, None] * x[..., None, :] if vector else np.matmul(gb, _t(x)))
    return ga, gb


def _copyltu(m):
    """The lower triangle mirrored to the upper one."""
    return np.tril(m) + _t(np.tril(m, -1))


def _cholesky_grad(og, l):
    if l.size == 0:
        return np.zeros_like(l)
    l_inv = np.linalg.inv(l)
    return 0.5 * np.matmul(np.matmul(_t(l_inv), _copyltu(np.matmul(_t(l), og))), l_inv)


def _read_triangle(g, uplo):
    """The gradient of a symmetric matrix's function with respect to the triangle eigh
    reads (UPLO): each entry off the diagonal stands for two."""
    tri = np.tril if uplo == "L" else np.triu
    return tri(g) + tri(g, -1 if uplo == "L" else 1)


def _eigh_grad(og_w, og_v, a, w, v, uplo):
    """V (diag(w') + F o (V^T V')) V^T, F_ij = 1 / (w_j - w_i) off the diagonal, on the
    triangle read."""
    if a.size == 0:
        return np.zeros_like(a)
    diff = w[..., None, :] - w[..., :, None]
    with np.errstate(divide="ignore"):
        f = np.where(diff == 0, 0.0, 1.0 / np.where(diff == 0, 1.0, diff))
    inner = f * np.matmul(_t(v), og_v) + og_w[..., :, None] * np.eye(w.shape[-1])
    g = np.matmul(np.matmul(v, inner), _t(v))
    return _read_triangle(0.5 * (g + _t(g)), uplo)


def _eigvalsh_grad(og, a, w, uplo):
    if a.size == 0:
        return np.zeros_like(a)
    _, v = np.linalg.eigh(a, uplo)
    return _read_triangle(np.matmul(v * og[..., None, :], _t(v)), uplo)


def _svd_grad(og_ut, og_l, og_v, a, ut, l, v):
    """MXNet's gesvd backward (a = ut diag(l) v, a of shape (..., m, n), m <= n)."""
    if a.size == 0:
        return np.zeros_like(a)
    m = v.shape[-2]
    li, lj = l[..., :, None], l[..., None, :]
    with np.errstate(all="ignore"):
        e = 1.0 / np.maximum(li - lj, 1e-20) / np.maximum(li + lj, 1e-20)
    upper = np.triu(np.ones((m, m), bool), 1)
    e = np.where(upper, e, 0.0)
    e = e - _t(e)
    g1 = np.matmul(og_v / li, _t(v)) * lj + np.matmul(_t(og_ut), ut)
    x = g1 * e
    g2 = np.eye(m) * og_l[..., None, :] + (x + _t(x)) * lj - np.matmul(og_v, _t(v)) / li * np.eye(m)
    return np.matmul(ut, np.matmul(g2, v) + og_v / li)


def _svd_forward(attrs, a):
    if a.shape[-2] > a.shape[-1]:
        raise OpError(f"np.linalg.svd: needs matrices of at most as many rows as columns "
                      f"(..., m, n), m <= n (as in MXNet), got shape {a.shape}")
    if a.size == 0:
        m, n = a.shape[-2:]
        return (np.zeros(a.shape[:-1] + (m,), a.dtype), np.zeros(a.shape[:-1], a.dtype),
                np.zeros(a.shape, a.dtype))
    u, s, vh = _numpy_linalg("svd", lambda m: np.linalg.svd(m, full_matrices=False), a)
    return u.astype(a.dtype), s.astype(a.dtype), vh.astype(a.dtype)


def _eigh_forward(attrs, a):
    _square("eigh", a.shape)
    if a.size == 0:
        return np.zeros(a.shape[:-1], a.dtype), np.zeros(a.shape, a.dtype)
    w, v = _numpy_linalg("eigh", lambda m: np.linalg.eigh(m, attrs["UPLO"]), a)
    return w.astype(a.dtype), v.astype(a.dtype)


def _eig_forward(attrs, a, vectors):
    """Real eigen-decomposition, as MXNet's (it refuses complex eigenvalues)."""
    _square("eig", a.shape)
    if a.size == 0:
        w, v = np.zeros(a.shape[:-1], a.dtype), np.zeros(a.shape, a.dtype)
    else:
        w, v = _numpy_linalg("eig", np.linalg.eig, a)
        if np.iscomplexobj(w) and np.any(w.imag != 0):
            raise OpError("np.linalg.eig: this matrix has complex eigenvalues, which "
                          "mx.np does not represent (as in MXNet)")
        w, v = w.real.astype(a.dtype), v.real.astype(a.dtype)
    return (w, v) if vectors else w


def _linalg_shapes(name, rule):
    def infer(attrs, in_shapes):
        a = in_shapes[0]
        if not is_complete(a):
            return in_shapes, [None] * len(rule(a if a is not None else (0, 0)))
        if name != "svd":
            _square(name, a)
        return in_shapes, rule(tuple(a))
    return infer


def _register_linalg(name, forward, shapes, grad, num_outputs=1, attrs=None, inputs=("A",),
                     output_names=("output",), checks_values=False):
    """`_npi_<name>` and, with a gradient, `_npi_<name>_grad`, whose inputs are the
    out-grads, the inputs and the outputs (NumPy's function `grad` computes from them)."""
    attrs = attrs or {}
    back = f"_npi_{name}_grad"
    if grad is not None:
        def gradient(F, a, i, o, og):
            result = getattr(F, back)(*og, *i, *o, **a)
            return list(result) if len(i) > 1 else [result]
        outs = [f"out{k}" for k in range(num_outputs)]
        register(back, inputs=tuple(f"og{k}" for k in range(num_outputs)) + inputs
                 + tuple(outs), attrs=dict(attrs), placement="host",
                 num_outputs=len(inputs), index_inputs=inputs + tuple(outs),
                 forward=lambda at, *args: _cast_all(grad(*args, **at), args[0].dtype),
                 infer_shape=lambda at, s: (s, list(s[num_outputs:num_outputs + len(inputs)])),
                 doc=f"The gradient of np.linalg.{name}.")
    else:
        gradient = None
    register(f"_npi_{name}", inputs=inputs, attrs=dict(attrs), placement="host",
             num_outputs=num_outputs, output_names=output_names, forward=forward,
             infer_shape=shapes, gradient=gradient, checks_values=checks_values,
             doc=f"np.linalg.{name}.")


def _cast_all(result, dtype):
    if isinstance(result, tuple):
        return tuple(r.astype(dtype, copy=False) for r in result)
    return result.astype(dtype, copy=False)


def _one(name, function):
    return lambda attrs, a: _cast_all(_empty_result(name, a, function), a.dtype)


def _empty_result(name, a, function):
    _square(name, a.shape)
    if a.size:
        return _numpy_linalg(name, function, a)
    return {"det": np.ones(a.shape[:-2], a.dtype), "inv": np.zeros_like(a),
            "cholesky": np.zeros_like(a)}[name]


_register_linalg("det", _one("det", np.linalg.det), _linalg_shapes("det", lambda a: [a[:-2]]),
                 lambda og, a, d: _det_grad(og, a, d))
_register_linalg("slogdet",
                 lambda attrs, a: _cast_all(tuple(np.linalg.slogdet(a)) if _square(
                     "slogdet", a.shape) and a.size else
                                            (np.ones(a.shape[:-2], a.dtype),
                                             np.zeros(a.shape[:-2], a.dtype)), a.dtype),
                 _linalg_shapes("slogdet", lambda a: [a[:-2], a[:-2]]),
                 lambda og1, og2, a, s, l: _slogdet_grad(og1, og2, a, s, l), num_outputs=2,
                 output_names=("sign", "logabsdet"))
_register_linalg("inv", _one("inv", np.linalg.inv), _linalg_shapes("inv", lambda a: [a]),
                 lambda og, a, y: _inv_grad(og, y))
_register_linalg("cholesky", _one("cholesky", np.linalg.cholesky),
                 _linalg_shapes("cholesky", lambda a: [a]), lambda og, a, l: _cholesky_grad(og, l))
_register_linalg("eigvalsh", lambda attrs, a: _eigh_forward(attrs, a)[0],
                 _linalg_shapes("eigvalsh", lambda a: [a[:-1]]),
                 lambda og, a, w, UPLO: _eigvalsh_grad(og, a, w, UPLO),
                 attrs={"UPLO": Attr("str", "L", choices=("L", "U"))})
_register_linalg("eigh", _eigh_forward, _linalg_shapes("eigh", lambda a: [a[:-1], a]),
                 lambda og1, og2, a, w, v, UPLO: _eigh_grad(og1, og2, a, w, v, UPLO), num_outputs=2,
                 attrs={"UPLO": Attr("str", "L", choices=("L", "U"))},
                 output_names=("w", "v"))
_register_linalg("eigvals", lambda attrs, a: _eig_forward(attrs, a, False),
                 _linalg_shapes("eigvals", lambda a: [a[:-1]]), None,
                 checks_values=True)        # refuses complex eigenvalues, at the call
_register_linalg("eig", lambda attrs, a: _eig_forward(attrs, a, True),
                 _linalg_shapes("eig", lambda a: [a[:-1], a]), None, num_outputs=2,
                 output_names=("w", "v"), checks_values=True)
_register_linalg("svd", _svd_forward,
                 _linalg_shapes("svd", lambda a: [a[:-1] + (a[-2],), a[:-1], a]),
                 lambda o1, o2, o3, a, ut, l, v: _svd_grad(o1, o2, o3, a, ut, l, v),
                 num_outputs=3, output_names=("ut", "l", "v"))


def _solve_shapes(attrs, in_shapes):
    a, b = in_shapes
    if not (is_complete(a) and is_complete(b)):
        return in_shapes, [b]
    _square("solve", a)
    rows = b[-1] if len(b) == len(a) - 1 else b[-2] if len(b) >= 2 else None
    if rows != a[-1]:
        raise OpError(f"np.linalg.solve: a of shape {tuple(a)} and b of shape {tuple(b)} "
                      f"do not match (b needs {a[-1]} rows)")
    return in_shapes, [tuple(b)]


_register_linalg("solve", lambda attrs, a, b: _cast_all(
                     _numpy_linalg("solve", _solve_np1, a, b) if a.size and b.size
                     else np.zeros(b.shape, b.dtype), a.dtype),
                 _solve_shapes, lambda og, a, b, x: _solve_grad(og, a, b, x),
                 inputs=("A", "B"))


# tensorinv and tensorsolve: inv and solve of the array read as one matrix
def _tensorinv_forward(attrs, a):
    ind = attrs["ind"]
    rows = int(np.prod(a.shape[:ind]))
    inv = _numpy_linalg("tensorinv", np.linalg.inv, a.reshape(rows, -1))
    return inv.reshape(a.shape[ind:] + a.shape[:ind]).astype(a.dtype)


def _tensorinv_grad(og, a, y, ind):
    rows = int(np.prod(a.shape[:ind]))
    ym = y.reshape(-1, rows)
    return _inv_grad(og.reshape(ym.shape), ym).reshape(a.shape)


def _tensorinv_shapes(attrs, in_shapes):
    a, ind = in_shapes[0], attrs["ind"]
    if not is_complete(a):
        return in_shapes, [None]
    if int(np.prod(a[:ind])) != int(np.prod(a[ind:])):
        raise OpError(f"np.linalg.tensorinv: the first {ind} axes of shape {tuple(a)} must "
                      f"hold as many elements as the others")
    return in_shapes, [tuple(a[ind:]) + tuple(a[:ind])]


_register_linalg("tensorinv", _tensorinv_forward, _tensorinv_shapes,
                 lambda og, a, y, ind: _tensorinv_grad(og, a, y, ind),
                 attrs={"ind": Attr("int", 2, minimum=1)})


def _tensorsolve_x_shape(a_shape, b_shape):
    """x's shape, NumPy's rule: a's last a.ndim - b.ndim axes (all of them when a and b
    have as many axes, none for a 0-d a), whose product squared must be a's size."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    x_shape = a_shape[-(len(a_shape) - len(b_shape)):]
    n = int(np.prod(x_shape))
    if n * n != int(np.prod(a_shape)) or n != int(np.prod(b_shape)):
        raise OpError(f"np.linalg.tensorsolve: a of shape {a_shape} and b of shape "
                      f"{b_shape}: x would have shape {x_shape}, so a must hold "
                      f"{n}*{n} elements and b {n}")
    return x_shape, n


def _tensorsolve_order(axes, ndim):
    """The order of a's axes that moves `axes` (a literal, "None": none) to the end."""
    axes = ast.literal_eval(axes or "None")
    if axes is None:
        return tuple(range(ndim))
    moved = [k % ndim for k in ((axes,) if isinstance(axes, int) else axes)]
    return tuple(k for k in range(ndim) if k not in moved) + tuple(moved)


def _tensorsolve_forward(attrs, a, b):
    a = np.transpose(a, _tensorsolve_order(attrs["axes"], a.ndim))
    x_shape, n = _tensorsolve_x_shape(a.shape, b.shape)
    x = _numpy_linalg("tensorsolve", np.linalg.solve, a.reshape(n, n), b.reshape(n))
    return x.reshape(x_shape).astype(a.dtype)


def _tensorsolve_grad(og, a, b, x, axes):
    order = _tensorsolve_order(axes, a.ndim)
    at = np.transpose(a, order)
    _, n = _tensorsolve_x_shape(at.shape, b.shape)
    ga, gb = _solve_grad(og.reshape(n), at.reshape(n, n), b.reshape(n), x.reshape(n))
    return np.transpose(ga.reshape(at.shape), np.argsort(order)), gb.reshape(b.shape)


def _tensorsolve_shapes(attrs, in_shapes):
    a, b = in_shapes
    if not (is_complete(a) and is_complete(b)):
        return in_shapes, [None]
    a = tuple(a[k] for k in _tensorsolve_order(attrs["axes"], len(a)))
    return in_shapes, [_tensorsolve_x_shape(a, b)[0]]


_register_linalg("tensorsolve", _tensorsolve_forward, _tensorsolve_shapes, _tensorsolve_grad,
                 inputs=("A", "B"), attrs={"axes": Attr("str", None)})


def _pinv_forward(attrs, a, rcond):
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    return _numpy_linalg("pinv", lambda m: np.linalg.pinv(
        m, rcond.astype(np.float64), hermitian=attrs["hermitian"]), a).astype(a.dtype)


register("_npi_pinv", inputs=("A", "rcond"), attrs={"hermitian": Attr("bool", False)},
         placement="host", forward=_pinv_forward, index_inputs=("rcond",),
         infer_shape=lambda attrs, s: (s, [None if not is_complete(s[0]) else
                                           tuple(s[0][:-2]) + (s[0][-1], s[0][-2])]),
         doc="np.linalg.pinv(A, rcond, hermitian): the pseudo-inverse (no gradient, as in "
             "MXNet).")


# ------------------------------------------------------- diff and nan_to_num
def _diff_grad(attrs, og, x):
    """diff is linear; its transpose, n times: minus diff of og padded with zeros."""
    for _ in range(attrs["n"]):
        og = -np.diff(og, 1, attrs["axis"], prepend=0, append=0)
    return og.astype(x.dtype, copy=False) if og.shape == x.shape else np.zeros_like(x)


def _diff_shape(attrs, in_shapes):
    a = in_shapes[0]
    if not is_complete(a):
        return in_shapes, [None]
    if not a:
        raise OpError("np.diff: needs an array of at least one axis, got a 0-d one")
    out, axis = list(a), attrs["axis"] % len(a)
    out[axis] = max(a[axis] - attrs["n"], 0)
    return in_shapes, [tuple(out)]


DIFF_ATTRS = {"n": Attr("int", 1, minimum=0), "axis": Attr("int", -1)}
register("_npi_diff", inputs=("a",), attrs=dict(DIFF_ATTRS), placement="host",
         forward=lambda attrs, x: np.diff(x, attrs["n"], attrs["axis"]), infer_shape=_diff_shape,
         gradient=lambda F, a, i, o, og: [F._npi_diff_grad(og[0], i[0], **a)],
         doc="np.diff(a, n, axis): the n-th differences along axis.")
register("_npi_diff_grad", inputs=("out_grad", "a"), attrs=dict(DIFF_ATTRS), placement="host",
         forward=_diff_grad, infer_shape=lambda attrs, s: (s, [s[1]]), index_inputs=("a",),
         doc="The gradient of np.diff.")


def _nan_to_num(attrs, x):
    if x.dtype.kind not in "fc":
        return x.copy()
    return np.nan_to_num(x, nan=attrs["nan"], posinf=attrs["posinf"], neginf=attrs["neginf"])


NAN_ATTRS = {"nan": Attr("float", 0.0), "posinf": Attr("float_or_none", None),
             "neginf": Attr("float_or_none", None)}
register("_npi_nan_to_num", inputs=("data",), attrs=dict(NAN_ATTRS), placement="host",
         forward=_nan_to_num, infer_shape=lambda attrs, s: (s, [s[0]]),
         gradient=lambda F, a, i, o, og: [F._npi_nan_to_num_grad(og[0], i[0])],
         doc="np.nan_to_num: NaN and infinities replaced by `nan`, `posinf`, `neginf` (the "
             "dtype's largest and smallest numbers by default).")
register("_npi_nan_to_num_grad", inputs=("out_grad", "data"), placement="host",
         forward=lambda attrs, og, x: og * np.isfinite(x) if x.dtype.kind in "fc" else og,
         infer_shape=lambda attrs, s: (s, [s[1]]), index_inputs=("data",),
         doc="The gradient of np.nan_to_num: out_grad where data is finite, 0 elsewhere.")


def _literal_values(attrs, name):
    """The numbers of to_begin/to_end ("" for none: a str attribute "None" is None)."""
    if not attrs[name]:
        return None
    return np.ravel(np.asarray(ast.literal_eval(attrs[name]), np.float64))


def _ediff1d(attrs, x):
    begin, end = _literal_values(attrs, "to_begin"), _literal_values(attrs, "to_end")
    parts = [np.diff(x.reshape(-1))]
    parts = ([] if begin is None else [begin]) + parts + ([] if end is None else [end])
    return np.concatenate(parts).astype(x.dtype, copy=False)


def _ediff1d_grad(attrs, og, x):
    begin = _literal_values(attrs, "to_begin")
    start = 0 if begin is None else begin.size
    middle = og[start:start + max(x.size - 1, 0)]
    if x.size <= 1:
        return np.zeros_like(x)
    return (-np.diff(middle, prepend=0, append=0)).reshape(x.shape).astype(og.dtype)


def _ediff1d_shape(attrs, in_shapes):
    if not is_complete(in_shapes[0]):
        return in_shapes, [None]
    extra = sum(0 if v is None else v.size
                for v in (_literal_values(attrs, "to_begin"), _literal_values(attrs, "to_end")))
    return in_shapes, [(max(int(np.prod(in_shapes[0])) - 1, 0) + extra,)]


EDIFF_ATTRS = {"to_begin": Attr("str", ""), "to_end": Attr("str", "")}
register("_npi_ediff1d", inputs=("data",), attrs=dict(EDIFF_ATTRS), placement="host",
         forward=_ediff1d, infer_shape=_ediff1d_shape,
         gradient=lambda F, a, i, o, og: [F._npi_ediff1d_grad(og[0], i[0], **a)],
         doc="np.ediff1d(data, to_end, to_begin) with the numbers to put before and after "
             "as literals (arrays are joined with concat).")
register("_npi_ediff1d_grad", inputs=("out_grad", "data"), attrs=dict(EDIFF_ATTRS),
         placement="host", forward=_ediff1d_grad, infer_shape=lambda attrs, s: (s, [s[1]]),
         index_inputs=("data",), doc="The gradient of np.ediff1d.")



# ------------------------------------------------- stacking: several inputs
# The same index maps over several inputs: input k's elements are numbered after those
# of the inputs before it, so the gradient is split back by ranges.
COMBINE = {"hstack": np.hstack, "vstack": np.vstack, "dstack": np.dstack,
           "column_stack": np.column_stack}


def _combine(attrs, *xs):
    try:
        return COMBINE[attrs["function"]](xs)
    except ValueError as err:
        raise OpError(f"np.{attrs['function']}: {err} (arrays of shapes "
                      f"{[x.shape for x in xs]})") from None


def _combine_grad(attrs, og, *xs):
    offsets = np.cumsum([0] + [x.size for x in xs])
    numbered = [np.arange(1, x.size + 1, dtype=np.int64).reshape(x.shape) + start
                for x, start in zip(xs, offsets)]
    mapped = _combine(attrs, *numbered)
    total = _scatter(mapped, og, int(offsets[-1]), (int(offsets[-1]),))
    return tuple(total[a:b].reshape(x.shape).astype(x.dtype, copy=False)
                 for a, b, x in zip(offsets, offsets[1:], xs))


def _combine_shape(attrs, in_shapes):
    if not all(is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_combine(attrs, *probes).shape]


COMBINE_ATTRS = {"function": Attr("str", required=True, choices=tuple(COMBINE)),
                 "num_args": Attr("int_or_none", None)}
register("_np_combine", variadic=True, attrs=dict(COMBINE_ATTRS), placement="host",
         infer_dtype=lambda attrs, dtypes: np.result_type(*dtypes),    # NumPy's promotion
         forward=_combine, infer_shape=_combine_shape, key_attrs=("function",),
         gradient=lambda F, a, i, o, og: list(_parts(F._np_combine_grad(
             og[0], *i, function=a["function"], num_args=len(i)), len(i))),
         doc="np.hstack, vstack, dstack or column_stack (`function`) of the inputs.")
register("_np_combine_grad", variadic=True, attrs=dict(COMBINE_ATTRS), placement="host",
         num_outputs=lambda attrs: attrs["num_args"], forward=_combine_grad,
         infer_dtype=lambda attrs, dtypes: list(dtypes[1:]),
         infer_shape=lambda attrs, s: (s, list(s[1:])),
         doc="The gradient of _np_combine: out_grad split back to the inputs.")


def _parts(result, count):
    """An op's outputs as a list (one output comes back alone)."""
    return [result] if count == 1 else [result[k] for k in range(count)]


# ------------------------------------------------------------------ sampling
# np.random's distributions as one op: parameters that are arrays are its inputs, the
# others numbers in `scalars` (None where an input goes). Samples come from NumPy's
# global generator, as nd.random's do (mx.random.seed seeds it). The reparameterizable
# ones have gradients: d sample / d parameter, from the sample and the parameters.
def _sample_grads(name, x, p):
    """[d x / d p_k] for the distribution `name` (None: no gradient for that one)."""
    with np.errstate(all="ignore"):
        if name in ("normal", "logistic", "gumbel"):       # loc + scale * a standard draw
            return [np.ones_like(x), (x - p[0]) / p[1]]
        if name == "uniform":
            width = p[1] - p[0]
            return [(p[1] - x) / width, (x - p[0]) / width]
        if name == "lognormal":
            return [x, x * (np.log(x) - p[0]) / p[1]]
        if name in ("exponential", "rayleigh"):
            return [x / p[0]]
        if name == "weibull":
            return [-x * np.log(x) / p[0]]
        if name == "pareto":
            return [-(x + 1) * np.log(x + 1) / p[0]]
    return None


SAMPLERS = {"normal": 2, "uniform": 2, "lognormal": 2, "exponential": 1, "rayleigh": 1,
            "weibull": 1, "pareto": 1, "gamma": 2, "beta": 2, "chisquare": 1, "logistic": 2,
            "gumbel": 2, "power": 1, "bernoulli": 1}
# parameters MXNet requires positive (NumPy allows some to be 0) -> their positions
POSITIVE = {"gamma": (0, 1), "weibull": (0,), "pareto": (0,), "power": (0,)}
SAMPLE_ATTRS = {"distribution": Attr("str", required=True, choices=tuple(SAMPLERS)),
                "scalars": Attr("str", "()"), "size": Attr("shape_or_none", None),
                "dtype": Attr("str", "float32"), "num_args": Attr("int_or_none", None),
                "batch_shape": Attr("shape_or_none", None)}


def _params(attrs, arrays):
    arrays = iter(arrays)
    return [next(arrays) if s is None else np.float64(s)
            for s in ast.literal_eval(attrs["scalars"])]


def _sample_shape(attrs, shapes):
    """`size`; else the parameters' broadcast shape, after `batch_shape` (npx's _n
    samplers: that many draws of each)."""
    if attrs["size"] is not None:
        return tuple(attrs["size"])
    shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    return tuple(attrs["batch_shape"] or ()) + shape


def _check_parameters(name, params):
    for k in POSITIVE.get(name, ()):
        if np.any(np.asarray(params[k]) <= 0):
            raise OpError(f"np.random.{name}: its parameter {k} must be positive (as in "
                          f"MXNet), got {np.min(params[k])}")
    if name == "bernoulli" and np.any((np.asarray(params[0]) < 0) |
                                      (np.asarray(params[0]) > 1)):
        raise OpError("npx.random.bernoulli: prob must be between 0 and 1")


def _sample(attrs, *arrays):
    name, params = attrs["distribution"], _params(attrs, arrays)
    shape = _sample_shape(attrs, [np.shape(p) for p in params])
    _check_parameters(name, params)
    try:
        if name == "gamma":      # MXNet's and NumPy's: shape, scale
            draw = np.random.gamma(params[0], params[1], shape)
        elif name == "bernoulli":
            draw = np.random.random_sample(shape) < params[0]
        else:
            draw = getattr(np.random, name)(*params, size=shape)
    except ValueError as err:
        raise OpError(f"np.random.{name}: {err}") from None
    return np.asarray(draw).astype(attrs["dtype"])


def _sample_grad(attrs, og, x, *arrays):
    name, params = attrs["distribution"], _params(attrs, arrays)
    grads = _sample_grads(name, x.astype(np.float64), params)
    if grads is None:
        raise OpError(f"np.random.{name} has no gradient (its samples are not a "
                      f"differentiable function of its parameters): stop the gradient "
                      f"(x.detach()) or use a reparameterizable distribution")
    out, arrays = [], list(arrays)
    for scalar, g in zip(ast.literal_eval(attrs["scalars"]), grads):
        if scalar is None:
            like = arrays.pop(0)
            total = og * g
            while total.ndim > like.ndim:        # undo broadcasting to the sample's shape
                total = total.sum(axis=0)
            for axis, n in enumerate(like.shape):
                if n == 1 and total.shape[axis] != 1:
                    total = total.sum(axis=axis, keepdims=True)
            out.append(total.astype(like.dtype))
    return tuple(out) if len(out) != 1 else out[0]


def _sample_infer(attrs, in_shapes):
    if not all(is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    return in_shapes, [_sample_shape(attrs, [tuple(s) for s in in_shapes])]


register("_npi_sample", variadic=True, attrs=dict(SAMPLE_ATTRS), placement="host",
         is_random=True, forward=_sample, infer_shape=_sample_infer,
         dtype_rule="attr", key_attrs=("distribution",),
         gradient=lambda F, a, i, o, og: _parts(F._npi_sample_grad(
             og[0], o[0], *i, **dict(a, num_args=len(i))), len(i)) if i else [],
         doc="np.random.<distribution>(parameters..., size, dtype): array parameters are "
             "the inputs, numbers are in `scalars`.")
register("_npi_sample_grad", variadic=True, attrs=dict(SAMPLE_ATTRS), placement="host",
         num_outputs=lambda attrs: attrs["num_args"], forward=_sample_grad,
         infer_dtype=lambda attrs, dtypes: list(dtypes[2:]),     # each parameter's
         infer_shape=lambda attrs, s: (s, list(s[2:])),
         doc="The gradient of _npi_sample with respect to its array parameters.")


def _multivariate_normal(attrs, mean, cov):
    """mean + L z, L the Cholesky factor of cov, z standard normal of shape
    size + broadcast(mean, cov's rows)."""
    shape = _mvn_shape(attrs, mean.shape, cov.shape)
    try:
        factor = np.linalg.cholesky(cov.astype(np.float64))
    except np.linalg.LinAlgError:
        raise OpError("np.random.multivariate_normal: cov must be symmetric "
                      "positive-definite") from None
    z = np.random.standard_normal(shape)
    return (mean + np.einsum("...ij,...j->...i", factor, z)).astype(mean.dtype)


def _mvn_shape(attrs, mean, cov):
    if len(cov) < 2 or cov[-1] != cov[-2] or not mean or mean[-1] != cov[-1]:
        raise OpError(f"np.random.multivariate_normal: needs mean (..., n) and cov "
                      f"(..., n, n), got shapes {tuple(mean)} and {tuple(cov)}")
    return tuple(attrs["size"] or ()) + tuple(np.broadcast_shapes(tuple(mean),
                                                                  tuple(cov[:-1])))


register("_npi_multivariate_normal", inputs=("mean", "cov"),
         attrs={"size": Attr("shape_or_none", None)}, placement="host", is_random=True,
         forward=_multivariate_normal,
         infer_shape=lambda attrs, s: (s, [_mvn_shape(attrs, *s) if all(
             x is not None and is_complete(x) for x in s) else None]),
         doc="np.random.multivariate_normal(mean, cov, size): normal samples with the "
             "given means and covariances (batches broadcast). No gradient, as in MXNet.")


def choice_probabilities(p):
    """p for NumPy's choice: float64, rescaled to sum to exactly 1 when it does up to
    float32 rounding (1e-5), or its own dtype's (NumPy's tolerance, sqrt(eps)): float32
    weights stored as float64 fail NumPy's float64 check, while MXNet samples from them."""
    if p is None:
        return None
    p = np.asarray(p)
    wide = p.astype(np.float64).reshape(-1)
    tolerance = max(1e-5, np.sqrt(np.finfo(p.dtype if p.dtype.kind == "f" else
                                           np.float64).eps))
    total = wide.sum()
    return wide / total if wide.size and abs(total - 1) <= tolerance else wide


def _choice(attrs, a, p=None):
    if a.ndim != 1:
        raise OpError(f"np.random.choice: a must be 1-D, got shape {a.shape}")
    size = attrs["size"]
    try:
        picked = np.random.choice(a, size, attrs["replace"], choice_probabilities(p))
    except ValueError as err:
        raise OpError(f"np.random.choice: {err}") from None
    return np.asarray(picked, a.dtype)


register("_npi_choice", inputs=("a", "p"),
         optional_inputs=lambda attrs: ("a", "p") if attrs["weighted"] else ("a",),
         attrs={"size": Attr("shape_or_none", None), "replace": Attr("bool", True),
                "weighted": Attr("bool", False)},
         placement="host", is_random=True, forward=_choice, index_inputs=("p",),
         infer_shape=lambda attrs, s: (s, [tuple(attrs["size"] or ())]),
         doc="np.random.choice(a, size, replace, p) of a 1-D array a (how sym.np traces "
             "it). No gradient.")


# ---------------------------------------------------------------- tensordot
def _tensordot_axes(attrs, a_ndim, b_ndim):
    """(a's summed axes, b's) from `axes`: a number N (a's last N with b's first N), two
    lists, or "dot": NumPy's dot (a's last with b's second-to-last; none for a 0-d one)."""
    axes = ast.literal_eval(attrs["axes"])
    if axes == "dot":
        if a_ndim == 0 or b_ndim == 0:
            return [], []
        return [a_ndim - 1], [max(b_ndim - 2, 0)]
    if isinstance(axes, int):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    return [x % a_ndim for x in a_axes], [x % b_ndim for x in b_axes]


def _tensordot(attrs, a, b):
    a_axes, b_axes = _tensordot_axes(attrs, a.ndim, b.ndim)
    try:
        return np.tensordot(a, b, (a_axes, b_axes)).astype(a.dtype, copy=False)
    except ValueError as err:
        raise OpError(f"np.tensordot: {err} (summing axes {a_axes} of {a.shape} with "
                      f"{b_axes} of {b.shape})") from None


def _tensordot_grad(attrs, og, a, b):
    a_axes, b_axes = _tensordot_axes(attrs, a.ndim, b.ndim)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    n = len(a_free)
    # what is left of b (a) is in its own axis order; each left axis pairs with one of a (b)
    ga = np.tensordot(og, b, (list(range(n, og.ndim)), b_free))
    ga_axes = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    gb = np.tensordot(a, og, (a_free, list(range(n))))
    gb_axes = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + b_free
    return (np.transpose(ga, np.argsort(ga_axes)).astype(a.dtype, copy=False),
            np.transpose(gb, np.argsort(gb_axes)).astype(b.dtype, copy=False))


def _tensordot_shape(attrs, in_shapes):
    if not all(is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_tensordot(attrs, *probes).shape]


def _tensordot_partial(attrs, in_shapes, out_shapes):
    """_tensordot_shape from partly known shapes: a summed axis known on one side fills
    the other (x.dot(w) with w of shape (-1, 100) learns w's first dim from x, Gluon's
    deferred initialisation), and the free axes fill the output and back."""
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, out_shapes
    a, b = list(a), list(b)
    a_axes, b_axes = _tensordot_axes(attrs, len(a), len(b))
    for i, j in zip(a_axes, b_axes):
        if a[i] is not None and b[j] is not None and a[i] != b[j]:
            raise OpError(f"np.tensordot: summed axes {a_axes} of {show_shape(a)} and "
                          f"{b_axes} of {show_shape(b)} differ in size")
        a[i] = b[j] = a[i] if b[j] is None else b[j]
    free = [(a, i) for i in range(len(a)) if i not in a_axes] + \
        [(b, j) for j in range(len(b)) if j not in b_axes]
    out = out_shapes[0] if out_shapes and out_shapes[0] is not None else None
    if out is not None and len(out) == len(free):
        for (shape, k), d in zip(free, out):
            if shape[k] is None:
                shape[k] = d
    return [tuple(a), tuple(b)], [tuple(shape[k] for shape, k in free)]


_tensordot_shape.partial = _tensordot_partial


TENSORDOT_ATTRS = {"axes": Attr("str", "2")}
register("_npi_tensordot", inputs=("a", "b"), attrs=dict(TENSORDOT_ATTRS), placement="host",
         forward=_tensordot, infer_shape=_tensordot_shape,
         gradient=lambda F, a, i, o, og: list(F._npi_tensordot_grad(og[0], i[0], i[1], **a)),
         doc="np.tensordot(a, b, axes): sums of products over the given axes (`axes`: a "
             "number, or two lists, as a literal).")
register("_npi_tensordot_grad", inputs=("out_grad", "a", "b"), attrs=dict(TENSORDOT_ATTRS),
         placement="host", num_outputs=2, forward=_tensordot_grad,
         index_inputs=("a", "b"), infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="The gradient of np.tensordot.")


# ------------------------------------------- arrays made from numbers alone
MAKE = {"hanning": np.hanning, "hamming": np.hamming, "blackman": np.blackman,
        "indices": lambda dimensions: np.indices(dimensions),
        "eye": lambda n, m, k: np.eye(n, m, k),
        "arange": lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype),
        "logspace": lambda start, stop, num, endpoint, base, dtype: np.logspace(
            start, stop, num, endpoint=endpoint, base=base, dtype=dtype),
        "linspace": lambda start, stop, num, endpoint, dtype: np.linspace(
            start, stop, num, endpoint=endpoint, dtype=dtype)}


def _make(attrs):
    return np.asarray(MAKE[attrs["function"]](*ast.literal_eval(attrs["args"]))) \
        .astype(attrs["dtype"])


register("_np_make", inputs=(), attrs={"function": Attr("str", required=True,
                                                          choices=tuple(MAKE)),
                                         "args": Attr("str", "()"),
                                         "dtype": Attr("str", "float32")},
         placement="host", forward=_make, dtype_rule="attr", key_attrs=("function",),
         infer_shape=lambda attrs, s: (s, [_make(attrs).shape]),
         doc="An array NumPy's `function` (hanning, hamming, blackman, indices, eye, "
             "linspace, logspace, arange) makes "
             "from the numbers in `args`: how sym.np traces them.")
