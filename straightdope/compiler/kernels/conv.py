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
def im2col(X, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, col):
    """col[(c, i, j), oh, ow] = X[c0 + c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], 0 outside.
    X is one image (C, H, W); col is (Cg*kh*kw, OH, OW). Rows are copied as slices."""
    H, W = X.shape[1], X.shape[2]
    for c in range(Cg):
        plane = X[c0 + c]
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                dst = col[(c * kh + i) * kw + j]
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                dst[:oh_lo, :] = 0
                dst[oh_hi:, :] = 0
                for oh in range(oh_lo, oh_hi):
                    row = plane[oh * sh - ph + i * dh]
                    out = dst[oh]
                    out[:ow_lo] = 0
                    start = ow_lo * sw - pw + j * dw
                    if sw == 1:
                        out[ow_lo:ow_hi] = row[start:start + ow_hi - ow_lo]
                    else:
                        for ow in range(ow_hi - ow_lo):
                            out[ow_lo + ow] = row[start + ow * sw]
                    out[ow_hi:] = 0


@njit(**JIT)
def col2im(col, DX, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw):
    """The adjoint of im2col: add each column entry back onto the pixel it came from."""
    H, W = DX.shape[1], DX.shape[2]
    for c in range(Cg):
        plane = DX[c0 + c]
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                src = col[(c * kh + i) * kw + j]
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                for oh in range(oh_lo, oh_hi):
                    row = plane[oh * sh - ph + i * dh]
                    line = src[oh]
                    start = ow_lo * sw - pw + j * dw
                    for ow in range(ow_hi - ow_lo):
                        row[start + ow * sw] += line[ow_lo + ow]


@njit(**JIT)
def conv2d(x, xo, w, wo, y, yo, N, C, H, W, F, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    X = x[xo:xo + N * C * H * W].reshape((N, C, H, W))
    Wm = w[wo:wo + F * K].reshape((F, K))
    Y = y[yo:yo + N * F * P].reshape((N, F, P))
    col = np.empty((K, OH, OW), x.dtype)
    cols = col.reshape((K, P))
    for n in range(N):
        for g in range(G):
            im2col(X[n], g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, col)
            np.dot(Wm[g * Fg:(g + 1) * Fg], cols, Y[n, g * Fg:(g + 1) * Fg])


@njit(**JIT)
def conv2d_grad_weight(og, ogo, x, xo, dw_, dwo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                       ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    X = x[xo:xo + N * C * H * W].reshape((N, C, H, W))
    OG = og[ogo:ogo + N * F * P].reshape((N, F, P))
    DW = dw_[dwo:dwo + F * K].reshape((F, K))
    DW[...] = 0
    col = np.empty((K, OH, OW), x.dtype)
    cols = col.reshape((K, P))
    part = np.empty((Fg, K), x.dtype)
    for n in range(N):
        for g in range(G):
            im2col(X[n], g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, col)
            np.dot(OG[n, g * Fg:(g + 1) * Fg], cols.T, part)
            for f in range(Fg):
                row, src = DW[g * Fg + f], part[f]
                for k in range(K):
                    row[k] += src[k]


@njit(**JIT)
def conv2d_grad_data(og, ogo, w, wo, dx, dxo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                     ph, pw, dh, dw, G):
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    Wm = w[wo:wo + F * K].reshape((F, K))
    OG = og[ogo:ogo + N * F * P].reshape((N, F, P))
    DX = dx[dxo:dxo + N * C * H * W].reshape((N, C, H, W))
    DX[...] = 0
    col = np.empty((K, OH, OW), og.dtype)
    cols = col.reshape((K, P))
    for n in range(N):
        for g in range(G):
            np.dot(Wm[g * Fg:(g + 1) * Fg].T, OG[n, g * Fg:(g + 1) * Fg], cols)
            col2im(col, DX[n], g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw)


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
