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

from ..numba_internals import DISK_CACHE
from . import winograd
from .util import copy_into

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


CHUNK = 1 << 21        # elements of the column matrix per batch of images (8 MB in float32)


@njit(**JIT)
def _valid(off, step, size, n_out):
    """Output positions o in [lo, hi) with 0 <= o * step + off < size."""
    lo = 0 if off >= 0 else (-off + step - 1) // step
    hi = (size - off + step - 1) // step if size - off > 0 else 0
    return min(lo, n_out), max(min(hi, n_out), min(lo, n_out))


@njit(**JIT)
def _segment(dst, d0, src, s0, n, step):
    """dst[d0 + t] = src[s0 + t * step] for t < n. Unsigned indices: no negative-index
    checks, so the contiguous case (step 1) vectorizes like a memcpy."""
    d, s, st = np.uint64(d0), np.uint64(s0), np.uint64(step)
    if step == 1:
        for t in range(np.uint64(n)):
            dst[d + t] = src[s + t]
    else:
        for t in range(np.uint64(n)):
            dst[d + t] = src[s + t * st]


@njit(**JIT)
def im2col_rows(x, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw,
                col):
    """col[(c, i, j), (b, oh, ow)] = image n0 + b of x (N, C, H, W) at channel c0 + c, row
    oh*sh - ph + i*dh, column ow*sw - pw + j*dw (0 outside). col is flat, row-major."""
    P = OH * OW
    width = nb * P
    for c in range(Cg):
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                row = ((c * kh + i) * kw + j) * width
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                for b in range(nb):
                    plane = xo + ((n0 + b) * C + c0 + c) * H * W
                    base = row + b * P
                    col[base:base + oh_lo * OW] = 0
                    col[base + oh_hi * OW:base + P] = 0
                    for oh in range(oh_lo, oh_hi):
                        dst = base + oh * OW
                        src = plane + (oh * sh - ph + i * dh) * W + ow_lo * sw - pw + j * dw
                        for t in range(ow_lo):
                            col[dst + t] = 0
                        _segment(col, dst + ow_lo, x, src, ow_hi - ow_lo, sw)
                        for t in range(ow_hi, OW):
                            col[dst + t] = 0


@njit(**JIT)
def col2im_rows(col, dx, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh,
                dw):
    """The adjoint of im2col: add each column entry back onto the pixel it came from."""
    P = OH * OW
    width = nb * P
    for c in range(Cg):
        for i in range(kh):
            oh_lo, oh_hi = _valid(i * dh - ph, sh, H, OH)
            for j in range(kw):
                row = ((c * kh + i) * kw + j) * width
                ow_lo, ow_hi = _valid(j * dw - pw, sw, W, OW)
                n = ow_hi - ow_lo
                for b in range(nb):
                    plane = xo + ((n0 + b) * C + c0 + c) * H * W
                    for oh in range(oh_lo, oh_hi):
                        src = np.uint64(row + b * P + oh * OW + ow_lo)
                        dst = np.uint64(plane + (oh * sh - ph + i * dh) * W + ow_lo * sw - pw
                                        + j * dw)
                        step = np.uint64(sw)
                        for t in range(np.uint64(n)):
                            dx[dst + t * step] += col[src + t]


@njit(**JIT)
def window_offsets(nb, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw):
    """off[(i, j), (b, oh, ow)]: where kernel tap (i, j) of output pixel (oh, ow) of image b
    reads, counted from channel 0 of image 0 (-1: in the padding). The same for every
    channel, so im2col and col2im compute it once and then run one flat loop per row."""
    P = OH * OW
    off = np.empty((kh * kw, nb * P), np.int64)
    for i in range(kh):
        for j in range(kw):
            for b in range(nb):
                for oh in range(OH):
                    h = oh * sh - ph + i * dh
                    for ow in range(OW):
                        w = ow * sw - pw + j * dw
                        inside = 0 <= h < H and 0 <= w < W
                        off[i * kw + j, (b * OH + oh) * OW + ow] = (
                            (b * C * H + h) * W + w if inside else -1)
    return off


@njit(**JIT)
def im2col_table(x, xo, n0, C, H, W, c0, Cg, off, width, col):
    """col[(c, i, j), (b, oh, ow)] = channel c0 + c of image n0 + b of x (N, C, H, W) at
    tap (i, j) of output pixel (oh, ow), 0 in the padding: `width` columns of `off`."""
    taps = off.shape[0]
    for c in range(Cg):
        src = x[xo + (n0 * C + c0 + c) * H * W:]
        for t in range(taps):
            where = off[t]
            row = col[(c * taps + t) * width:(c * taps + t + 1) * width]
            for q in range(width):
                s = where[q]
                row[q] = src[s] if s >= 0 else 0


@njit(**JIT)
def col2im_table(col, dx, xo, n0, C, H, W, c0, Cg, off, width):
    """The adjoint of im2col_table: add each column entry back onto its pixel."""
    taps = off.shape[0]
    for c in range(Cg):
        dst = dx[xo + (n0 * C + c0 + c) * H * W:]
        for t in range(taps):
            where = off[t]
            row = col[(c * taps + t) * width:(c * taps + t + 1) * width]
            for q in range(width):
                s = where[q]
                if s >= 0:
                    dst[s] += row[q]


# Small images (ResNet's 8x8 to 2x2) make the row copies a few elements long, and the
# loops around them cost more than the copies: up to this many output pixels per image,
# im2col and col2im run one flat loop per column-matrix row through a table of offsets.
TABLE_MAX = 64


@njit(**JIT)
def offsets(nb, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw):
    """The offset table of a batch of nb images if im2col will use it, else an empty one."""
    return window_offsets(nb if OH * OW <= TABLE_MAX else 0, C, H, W, OH, OW, kh, kw, sh, sw,
                          ph, pw, dh, dw)


@njit(**JIT)
def im2col(x, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, off, col):
    """col[(c, i, j), (b, oh, ow)] = channel c0 + c of image n0 + b of x (N, C, H, W) at
    row oh*sh - ph + i*dh, column ow*sw - pw + j*dw (0 outside)."""
    if OH * OW <= TABLE_MAX:
        im2col_table(x, xo, n0, C, H, W, c0, Cg, off, nb * OH * OW, col)
    else:
        im2col_rows(x, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, col)


@njit(**JIT)
def col2im(col, dx, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, off):
    """The adjoint of im2col: add each column entry back onto the pixel it came from."""
    if OH * OW <= TABLE_MAX:
        col2im_table(col, dx, xo, n0, C, H, W, c0, Cg, off, nb * OH * OW)
    else:
        col2im_rows(col, dx, xo, n0, nb, C, H, W, c0, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh,
                    dw)


@njit(**JIT)
def _chunk(N, K, P):
    """Images per column matrix: all of them when it fits in CHUNK elements."""
    return max(1, min(N, CHUNK // max(K * P, 1)))


@njit(**JIT)
def _winograd_pays(kh, kw, sh, sw, dh, dw, N, Cg, Fg, OH, OW):
    """3x3, stride 1, no dilation, with enough channels and 2x2 output tiles. Per tile,
    Winograd saves ~20 * Cg * Fg multiplications and transforms ~16 * (Cg + Fg) values:
    with few channels (LeNet's 1 -> 6 -> 16) the transforms cost more than they save; with
    fewer than ~32 tiles the 16 thin products read more transformed weights than im2col's
    one product reads weights (ResNet's 2x2 images)."""
    return (kh == 3 and kw == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1
            and Cg * Fg >= 8 * (Cg + Fg) and N * ((OH + 1) // 2) * ((OW + 1) // 2) >= 32)


@njit(**JIT)
def conv2d(x, xo, w, wo, y, yo, N, C, H, W, F, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw, G):
    """y = conv(x, w): for each batch of images and group, ONE matrix product
    (Fg, K) @ (K, images * OH * OW) on BLAS, then the result is put in NCHW order.
    3x3 stride-1 kernels go to Winograd's F(2x2, 3x3) instead (winograd.py)."""
    if _winograd_pays(kh, kw, sh, sw, dh, dw, N, C // G, F // G, OH, OW):
        winograd.conv3x3(x, xo, w, wo, False, y, yo, N, C, H, W, F, OH, OW, ph, pw, G)
        return
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    chunk = _chunk(N, K, P)
    off = offsets(chunk, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw)
    colbuf = np.empty(K * chunk * P, x.dtype)
    outbuf = np.empty(Fg * chunk * P, x.dtype)
    for n0 in range(0, N, chunk):
        nb = min(chunk, N - n0)
        col = colbuf[:K * nb * P]
        out = outbuf[:Fg * nb * P]
        for g in range(G):
            im2col(x, xo, n0, nb, C, H, W, g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw,
                   off, col)
            wg = w[wo + g * Fg * K:wo + (g + 1) * Fg * K].reshape((Fg, K))
            np.dot(wg, col.reshape((K, nb * P)), out.reshape((Fg, nb * P)))
            for f in range(Fg):
                for b in range(nb):
                    dst = yo + ((n0 + b) * F + g * Fg + f) * P
                    copy_into(y[dst:dst + P], out[(f * nb + b) * P:(f * nb + b + 1) * P])


@njit(**JIT)
def conv2d_grad_weight(og, ogo, x, xo, dw_, dwo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                       ph, pw, dh, dw, G):
    """dW[g] = dy[g] @ col.T, with dy gathered as (Fg, images * OH * OW); for 3x3 stride-1
    kernels Winograd's F(2x2, 3x3) run backwards (winograd.py)."""
    if _winograd_pays(kh, kw, sh, sw, dh, dw, N, C // G, F // G, OH, OW):
        winograd.conv3x3_grad_weight(og, ogo, x, xo, dw_, dwo, N, C, H, W, F, OH, OW, ph, pw,
                                     G)
        return
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    chunk = _chunk(N, K, P)
    off = offsets(chunk, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw)
    colbuf = np.empty(K * chunk * P, x.dtype)
    ogbuf = np.empty(Fg * chunk * P, x.dtype)
    part = np.empty(Fg * K, x.dtype)
    for n0 in range(0, N, chunk):
        nb = min(chunk, N - n0)
        col = colbuf[:K * nb * P]
        ogt = ogbuf[:Fg * nb * P]
        for g in range(G):
            im2col(x, xo, n0, nb, C, H, W, g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw,
                   off, col)
            for f in range(Fg):
                for b in range(nb):
                    src = ogo + ((n0 + b) * F + g * Fg + f) * P
                    copy_into(ogt[(f * nb + b) * P:(f * nb + b + 1) * P], og[src:src + P])
            # the first batch of images writes dW[g], the others add to it
            dWg = dw_[dwo + g * Fg * K:dwo + (g + 1) * Fg * K]
            np.dot(ogt.reshape((Fg, nb * P)), col.reshape((K, nb * P)).T,
                   (dWg if n0 == 0 else part).reshape((Fg, K)))
            if n0 > 0:
                for k in range(part.size):
                    dWg[k] += part[k]


@njit(**JIT)
def conv2d_grad_data(og, ogo, w, wo, dx, dxo, N, C, H, W, F, OH, OW, kh, kw, sh, sw,
                     ph, pw, dh, dw, G):
    """dcol = W[g].T @ dy[g], then col2im adds the columns back onto dx. For a 3x3
    stride-1 kernel, dx is the convolution of dy padded by 2 - pad with the kernel rotated
    by 180 degrees (in and out channels swapped): Winograd's F(2x2, 3x3) again."""
    if _winograd_pays(kh, kw, sh, sw, dh, dw, N, C // G, F // G, H, W):
        winograd.conv3x3(og, ogo, w, wo, True, dx, dxo, N, F, OH, OW, C, H, W, 2 - ph, 2 - pw,
                         G)
        return
    Cg, Fg = C // G, F // G
    K, P = Cg * kh * kw, OH * OW
    chunk = _chunk(N, K, P)
    off = offsets(chunk, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw)
    colbuf = np.empty(K * chunk * P, og.dtype)
    ogbuf = np.empty(Fg * chunk * P, og.dtype)
    dx[dxo:dxo + N * C * H * W] = 0
    for n0 in range(0, N, chunk):
        nb = min(chunk, N - n0)
        col = colbuf[:K * nb * P]
        ogt = ogbuf[:Fg * nb * P]
        for g in range(G):
            for f in range(Fg):
                for b in range(nb):
                    src = ogo + ((n0 + b) * F + g * Fg + f) * P
                    copy_into(ogt[(f * nb + b) * P:(f * nb + b + 1) * P], og[src:src + P])
            wg = w[wo + g * Fg * K:wo + (g + 1) * Fg * K].reshape((Fg, K))
            np.dot(wg.T, ogt.reshape((Fg, nb * P)), col.reshape((K, nb * P)))
            col2im(col, dx, dxo, n0, nb, C, H, W, g * Cg, Cg, OH, OW, kh, kw, sh, sw, ph, pw,
                   dh, dw, off)


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
        from ..emitting import CodegenError
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
