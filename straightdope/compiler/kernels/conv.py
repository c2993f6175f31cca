"""2-D convolution (NCHW, groups, stride, padding, dilation) and its two gradients.

Per image and group the input windows are unfolded into a column matrix
(*im2col*: one row per (channel, kernel row, kernel column), one column per
output pixel), so the convolution is one matrix product on BLAS:

    y[n, f, :] = W[f, :] @ col             (F, K) @ (K, OH*OW)
    dW        += dy[n] @ col.T              (F, P) @ (P, K)
    dcol       = W.T @ dy[n],  then col2im scatters dcol back onto dx[n]

The bias is not here: the compiler lowers it to an elementwise add that fuses
with the activation that usually follows.
"""
import numpy as np
from numba import njit

JIT = dict(cache=True, nogil=True, boundscheck=False)


@njit(**JIT)
def _valid(off, step, size, n_out):
    """Output positions o in [lo, hi) with 0 <= o * step + off < size."""
    lo = 0 if off >= 0 else (-off + step - 1) // step
    hi = (size - off + step - 1) // step if size - off > 0 else 0
    return min(lo, n_out), max(min(hi, n_out), min(lo, n_out))


@njit(**JIT)
def im2col(x, xo, c0, Cg, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, col):
    """col[(c, i, j), (oh, ow)] = x[c0 + c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], 0 outside;
    x is one image starting at xo."""
    P = OH * OW
    for c in range(Cg):
        plane = xo + (c0 + c) * H * W
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                row = ((c * kh + i) * kw + j) * P
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                for oh in range(OH):
                    dst = row + oh * OW
                    if oh < oh_lo or oh >= oh_hi:
                        for ow in range(OW):
                            col[dst + ow] = 0
                        continue
                    src = plane + (oh * sh - ph + i * dh) * W + j * dw - pw
                    for ow in range(ow_lo):
                        col[dst + ow] = 0
                    if sw == 1:
                        for ow in range(ow_lo, ow_hi):
                            col[dst + ow] = x[src + ow]
                    else:
                        for ow in range(ow_lo, ow_hi):
                            col[dst + ow] = x[src + ow * sw]
                    for ow in range(ow_hi, OW):
                        col[dst + ow] = 0


@njit(**JIT)
def col2im(col, dx, xo, c0, Cg, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw):
    """The adjoint of im2col: add each column entry back onto the pixel it came from."""
    P = OH * OW
    for c in range(Cg):
        plane = xo + (c0 + c) * H * W
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                row = ((c * kh + i) * kw + j) * P
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                for oh in range(oh_lo, oh_hi):
                    src = row + oh * OW
                    dst = plane + (oh * sh - ph + i * dh) * W + j * dw - pw
                    for ow in range(ow_lo, ow_hi):
                        dx[dst + ow * sw] += col[src + ow]


@njit(**JIT)
def conv2d(x, xo, w, wo, y, yo, N, C, H, W, F, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    col = np.empty(K * P, x.dtype)
    cols = col.reshape((K, P))
    for n in range(N):
        for g in range(G):
            im2col(x, xo + n * C * H * W, g * Cg, Cg, H, W, OH, OW, kh, kw, sh, sw, ph, pw,
                   dh, dw, col)
            wg = w[wo + g * Fg * K:wo + (g + 1) * Fg * K].reshape((Fg, K))
            start = yo + (n * F + g * Fg) * P
            np.dot(wg, cols, y[start:start + Fg * P].reshape((Fg, P)))


@njit(**JIT)
def conv2d_grad_weight(og, ogo, x, xo, dw_, dwo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                       ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    for i in range(F * K):
        dw_[dwo + i] = 0
    col = np.empty(K * P, x.dtype)
    cols = col.reshape((K, P))
    part = np.empty((Fg, K), x.dtype)
    for n in range(N):
        for g in range(G):
            im2col(x, xo + n * C * H * W, g * Cg, Cg, H, W, OH, OW, kh, kw, sh, sw, ph, pw,
                   dh, dw, col)
            start = ogo + (n * F + g * Fg) * P
            np.dot(og[start:start + Fg * P].reshape((Fg, P)), cols.T, part)
            base = dwo + g * Fg * K
            for f in range(Fg):
                for k in range(K):
                    dw_[base + f * K + k] += part[f, k]


@njit(**JIT)
def conv2d_grad_data(og, ogo, w, wo, dx, dxo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                     ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    for i in range(N * C * H * W):
        dx[dxo + i] = 0
    col = np.empty(K * P, og.dtype)
    cols = col.reshape((K, P))
    for n in range(N):
        for g in range(G):
            wg = w[wo + g * Fg * K:wo + (g + 1) * Fg * K].reshape((Fg, K))
            start = ogo + (n * F + g * Fg) * P
            np.dot(wg.T, og[start:start + Fg * P].reshape((Fg, P)), cols)
            col2im(col, dx, dxo + n * C * H * W, g * Cg, Cg, H, W, OH, OW, kh, kw, sh, sw,
                   ph, pw, dh, dw)


# ------------------------------------------------------------------ emitters
def conv_args(cg, node, data, weight, out):
    """The size and attribute arguments shared by the three kernels."""
    from ...ops.nn import conv_params
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = conv_params(node.attrs)
    lit = cg.lit
    return (*data.dims, weight.dims[0], out.dims[2], out.dims[3],
            lit(kh), lit(kw), lit(sh), lit(sw), lit(ph), lit(pw), lit(dh), lit(dw),
            lit(int(node.attrs["num_group"])))


def _check_float(*refs):
    if any(r.dtype.name not in ("float32", "float64") or r.dtype != refs[0].dtype
           for r in refs):
        from ..codegen import CodegenError
        raise CodegenError("Convolution needs float32 or float64 arrays of one dtype")


def emit_conv(cg, node):
    x, w, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    _check_float(x, w, y)
    cg.call("conv", "conv2d", x.args, w.args, y.args, *conv_args(cg, node, x, w, y))


def emit_conv_grad_data(cg, node):
    og, w, x = (cg.ref(e) for e in node.inputs)
    dx = cg.out(node)
    _check_float(og, w, dx)
    cg.call("conv", "conv2d_grad_data", og.args, w.args, dx.args, *conv_args(cg, node, x, w, og))


def emit_conv_grad_weight(cg, node):
    og, x, w = (cg.ref(e) for e in node.inputs)
    dw = cg.out(node)
    _check_float(og, x, dw)
    cg.call("conv", "conv2d_grad_weight", og.args, x.args, dw.args,
            *conv_args(cg, node, x, w, og))


def dims_conv(cg, node, k):
    x, w = cg.ref(node.inputs[0]), cg.ref(node.inputs[1])
    shape = node.shapes[0]
    return [x.dims[0], w.dims[0], cg.rt(shape[2], "s"), cg.rt(shape[3], "s")]


EMITTERS = {"Convolution": emit_conv, "_conv_grad_data": emit_conv_grad_data,
            "_conv_grad_weight": emit_conv_grad_weight}
DIMS = {"Convolution": dims_conv}
