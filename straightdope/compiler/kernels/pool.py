"""2-D pooling (max, avg, sum; padding, 'full' convention, global) and its gradient.

Direct loops over each output window, clipped to the image: the padding is
never materialised. For avg pooling the divisor is the window size, or, with
`count_include_pad=False`, the number of pixels the window really covers.
The max gradient goes to the first maximum of each window (row-major order),
as in the NumPy reference.
"""
import numpy as np
from numba import njit

from ..emitting import Flag
from ..numba_internals import DISK_CACHE
from .util import nan_max

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)
MAX, AVG, SUM = 0, 1, 2


@njit(**JIT)
def _inside_2x2(H, W, OH, OW, kh, kw, sh, sw, ph, pw):
    """A 2x2 window without padding that never leaves the image."""
    return (kh == 2 and kw == 2 and ph == 0 and pw == 0 and (OH - 1) * sh + 2 <= H
            and (OW - 1) * sw + 2 <= W)


@njit(**JIT)
def pool2d(x, xo, y, yo, NC, H, W, OH, OW, kh, kw, sh, sw, ph, pw, kind, full_count):
    X = x[xo:xo + NC * H * W].reshape((NC, H, W))
    Y = y[yo:yo + NC * OH * OW].reshape((NC, OH, OW))
    if kind == MAX and _inside_2x2(H, W, OH, OW, kh, kw, sh, sw, ph, pw):
        for p in range(NC):                    # the common 2x2 window: straight-line code
            plane, out = X[p], Y[p]
            for oh in range(OH):
                r0, r1, dst = plane[oh * sh], plane[oh * sh + 1], out[oh]
                for ow in range(OW):
                    c = ow * sw
                    dst[ow] = nan_max(nan_max(r0[c], r0[c + 1]), nan_max(r1[c], r1[c + 1]))
        return
    for p in range(NC):
        plane, out = X[p], Y[p]
        for oh in range(OH):
            h0 = oh * sh - ph
            hs, he = max(h0, 0), min(h0 + kh, H)
            for ow in range(OW):
                w0 = ow * sw - pw
                ws, we = max(w0, 0), min(w0 + kw, W)
                if kind == MAX:
                    m = -np.inf
                    for h in range(hs, he):
                        for w in range(ws, we):
                            m = nan_max(m, plane[h, w])
                    out[oh, ow] = m
                else:
                    s = 0.0
                    for h in range(hs, he):
                        for w in range(ws, we):
                            s += plane[h, w]
                    if kind == AVG:
                        count = kh * kw if full_count else max((he - hs) * (we - ws), 1)
                        s /= count
                    out[oh, ow] = s


@njit(**JIT)
def pool2d_grad(og, ogo, x, xo, y, yo, dx, dxo, NC, H, W, OH, OW, kh, kw, sh, sw, ph, pw,
                kind, full_count):
    X = x[xo:xo + NC * H * W].reshape((NC, H, W))
    DX = dx[dxo:dxo + NC * H * W].reshape((NC, H, W))
    Y = y[yo:yo + NC * OH * OW].reshape((NC, OH, OW))
    OG = og[ogo:ogo + NC * OH * OW].reshape((NC, OH, OW))
    DX[...] = 0
    if kind == MAX and _inside_2x2(H, W, OH, OW, kh, kw, sh, sw, ph, pw):
        for p in range(NC):
            plane, dplane, out, grad = X[p], DX[p], Y[p], OG[p]
            for oh in range(OH):
                h = oh * sh
                r0, r1, d0, d1 = plane[h], plane[h + 1], dplane[h], dplane[h + 1]
                for ow in range(OW):
                    c, m, g = ow * sw, out[oh, ow], grad[oh, ow]
                    if r0[c] == m:                 # the first maximum, row-major
                        d0[c] += g
                    elif r0[c + 1] == m:
                        d0[c + 1] += g
                    elif r1[c] == m:
                        d1[c] += g
                    elif r1[c + 1] == m:
                        d1[c + 1] += g
        return
    for p in range(NC):
        plane, dplane, out, grad = X[p], DX[p], Y[p], OG[p]
        for oh in range(OH):
            h0 = oh * sh - ph
            hs, he = max(h0, 0), min(h0 + kh, H)
            for ow in range(OW):
                w0 = ow * sw - pw
                ws, we = max(w0, 0), min(w0 + kw, W)
                g = grad[oh, ow]
                if kind == MAX:
                    target = out[oh, ow]
                    done = False
                    for h in range(hs, he):
                        for w in range(ws, we):
                            if not done and plane[h, w] == target:
                                dplane[h, w] += g
                                done = True
                else:
                    if kind == AVG:
                        count = kh * kw if full_count else max((he - hs) * (we - ws), 1)
                        g = g / count
                    for h in range(hs, he):
                        for w in range(ws, we):
                            dplane[h, w] += g


# ------------------------------------------------------------------ emitters
def pool_args(cg, node, x, out):
    from ...ops.nn import pool_params
    kernel, stride, pad, _, extra = pool_params(node.attrs, x.shape)
    kind = Flag({"max": MAX, "avg": AVG, "sum": SUM}[node.attrs["pool_type"]])
    full_count = node.attrs["count_include_pad"] or not any(tuple(pad) + tuple(extra))
    lit = cg.lit
    if node.attrs["global_pool"]:
        kh, kw = x.dims[2], x.dims[3]           # the whole image: runtime sizes
    else:
        kh, kw = lit(kernel[0]), lit(kernel[1])
    return (f"{x.dims[0]}*{x.dims[1]}", x.dims[2], x.dims[3], out.dims[2], out.dims[3],
            kh, kw, lit(stride[0]), lit(stride[1]), lit(pad[0]), lit(pad[1]), kind,
            int(full_count))


def emit_pool(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    cg.call("pool", "pool2d", x.args, y.args, *pool_args(cg, node, x, y))


def emit_pool_grad(cg, node):
    og, x, y = (cg.ref(e) for e in node.inputs)
    cg.call("pool", "pool2d_grad", og.args, x.args, y.args, cg.out(node).args,
            *pool_args(cg, node, x, og))


def dims_pool(cg, node, k):
    x = cg.ref(node.inputs[0])
    shape = node.shapes[0]
    if node.attrs["global_pool"]:
        return [x.dims[0], x.dims[1], "1", "1"]
    return [x.dims[0], x.dims[1], cg.rt(shape[2], "s"), cg.rt(shape[3], "s")]


EMITTERS = {"Pooling": emit_pool, "_pool_grad": emit_pool_grad}
DIMS = {"Pooling": dims_pool}
