"""Winograd's minimal filtering F(2x2, 3x3): a 3x3 stride-1 convolution with 2.25x fewer
multiplications (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015).

Each 2x2 block of outputs reads a 4x4 tile d of the input. With small constant matrices

    B^T = [1  0 -1  0]      G = [ 1    0    0 ]      A^T = [1  1  1  0]
          [0  1  1  0]          [1/2  1/2  1/2]            [0  1 -1 -1]
          [0 -1  1  0]          [1/2 -1/2  1/2]
          [0  1  0 -1]          [ 0    0    1 ]

the block is  Y = A^T [(G g G^T) * (B^T d B)] A,  `*` elementwise on 4x4. Summed over the
input channels, the 16 elementwise products become 16 matrix products, one per position k
of the 4x4 tile, over all tiles of all images at once:

    U[k] = (G g G^T)[k]   (out, in)        the weights, transformed
    V[k] = (B^T d B)[k]   (in, tiles)      the input tiles, transformed
    M[k] = U[k] @ V[k]    (out, tiles)     16 BLAS products
    y    = A^T M A        per tile         the 2x2 outputs

16 products per 4 outputs instead of 36 (9 per output); the transforms are additions,
linear in the data. The gradient wrt the data of a 3x3 stride-1 convolution is again one:
the output gradient convolved with the kernel rotated by 180 degrees, in and out swapped.
"""
import numpy as np
from numba import njit

from ..numba_internals import DISK_CACHE
from .util import copy_into

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)

CHUNK = 1 << 18        # elements of V plus M per batch of images (1 MB in float32: L2-sized)
# The 16 matrices of U (V, M) lie SKEW elements more than their size apart: at a multiple
# of 4 KB apart, the 16 streams of writes of a transform fall into the same cache sets and
# evict each other ("4K aliasing": 4-5x slower transforms).
SKEW = 16


@njit(**JIT)
def _const(a, value):
    """value in the dtype of the array a (a float64 literal would promote float32 math)."""
    h = np.empty(1, a.dtype)
    h[0] = value
    return h[0]


@njit(inline="always")
def _g(a, b, c, half):
    """G @ (a, b, c): the weight transform along one axis."""
    return a, (a + b + c) * half, (a - b + c) * half, c


@njit(inline="always")
def _bt(a, b, c, d):
    """B^T @ (a, b, c, d): the input transform along one axis."""
    return a - c, b + c, c - b, b - d


@njit(inline="always")
def _at(a, b, c, d):
    """A^T @ (a, b, c, d): the output transform along one axis."""
    return a + b + c, b - c - d


@njit(**JIT)
def transform_weights(w, wo, g, Co, Ci, U, su):
    """U[k, o, i] = (G w[o, i] G^T)[k] (matrix k at U[k * su:]) for the out/in channels of
    group g of w (F, C // G, 3, 3)."""
    half = _const(U, 0.5)
    for o in range(Co):
        for i in range(Ci):
            base = wo + ((g * Co + o) * Ci + i) * 9
            # G down each of the kernel's three columns, then along each row
            c0 = _g(w[base], w[base + 3], w[base + 6], half)
            c1 = _g(w[base + 1], w[base + 4], w[base + 7], half)
            c2 = _g(w[base + 2], w[base + 5], w[base + 8], half)
            at = np.uint64(o * Ci + i)
            for r in range(4):
                u = _g(c0[r], c1[r], c2[r], half)
                for c in range(4):
                    U[np.uint64((4 * r + c) * su) + at] = u[c]


@njit(**JIT)
def transform_tiles(x, xo, n0, nb, C, H, W, c0, Ci, ph, pw, TH, TW, pad, V, sv):
    """V[k, c, t] = (B^T d B)[k] (matrix k at V[k * sv:]) for every 4x4 input tile d (2
    apart, from -ph, -pw) of channels c0 + c of images n0 .. n0 + nb. The tiles are read
    from a zero-padded copy `pad` of the planes: the transform needs no bounds checks."""
    Hp, Wp = 2 * TH + 2, 2 * TW + 2
    T = nb * TH * TW
    pad[:] = 0
    for c in range(Ci):
        for b in range(nb):
            plane = xo + ((n0 + b) * C + c0 + c) * H * W
            lo, hi = max(0, -pw), min(W, Wp - pw)
            for h in range(max(0, -ph), min(H, Hp - ph)):
                row = ((c * nb + b) * Hp + h + ph) * Wp + pw
                copy_into(pad[row + lo:row + hi], x[plane + h * W + lo:plane + h * W + hi])
    for c in range(Ci):
        for b in range(nb):
            for th in range(TH):
                p0 = np.uint64(((c * nb + b) * Hp + 2 * th) * Wp)
                t0 = np.uint64(c * T + (b * TH + th) * TW)
                for tw in range(np.uint64(TW)):
                    p = p0 + 2 * tw
                    d0 = _bt(pad[p], pad[p + 1], pad[p + 2], pad[p + 3])
                    p += Wp
                    d1 = _bt(pad[p], pad[p + 1], pad[p + 2], pad[p + 3])
                    p += Wp
                    d2 = _bt(pad[p], pad[p + 1], pad[p + 2], pad[p + 3])
                    p += Wp
                    d3 = _bt(pad[p], pad[p + 1], pad[p + 2], pad[p + 3])
                    for m in range(4):
                        v = _bt(d0[m], d1[m], d2[m], d3[m])
                        for r in range(4):
                            V[np.uint64((4 * r + m) * sv) + t0 + tw] = v[r]


@njit(**JIT)
def untransform_tiles(M, sm, Co, TH, TW, y, yo, n0, nb, F, OH, OW, f0):
    """y[n0 + b, f0 + o] = A^T M A (matrix k of M at M[k * sm:]): each tile's 2x2 outputs,
    those inside OH x OW."""
    T = nb * TH * TW
    for o in range(Co):
        for b in range(nb):
            plane = yo + ((n0 + b) * F + f0 + o) * OH * OW
            for th in range(TH):
                for tw in range(TW):
                    t = np.uint64(o * T + (b * TH + th) * TW + tw)
                    s = np.uint64(sm)
                    s0 = _at(M[t], M[s + t], M[2 * s + t], M[3 * s + t])
                    s1 = _at(M[4 * s + t], M[5 * s + t], M[6 * s + t], M[7 * s + t])
                    s2 = _at(M[8 * s + t], M[9 * s + t], M[10 * s + t], M[11 * s + t])
                    s3 = _at(M[12 * s + t], M[13 * s + t], M[14 * s + t], M[15 * s + t])
                    for j in range(2):
                        ow = 2 * tw + j
                        col = _at(s0[j], s1[j], s2[j], s3[j])
                        for i in range(2):
                            oh = 2 * th + i
                            if oh < OH and ow < OW:
                                y[plane + oh * OW + ow] = col[i]


# Rotating a 3x3 kernel by 180 degrees only swaps rows 0 and 3 (and columns 0 and 3) of
# its transform G g G^T: the data gradient reuses U, read at these positions, transposed.
ROTATED = (15, 13, 14, 12, 7, 5, 6, 4, 11, 9, 10, 8, 3, 1, 2, 0)


@njit(**JIT)
def conv3x3(x, xo, w, wo, rotate, y, yo, N, C, H, W, F, OH, OW, ph, pw, G):
    """y (N, F, OH, OW) = the 3x3 stride-1 convolution of x (N, C, H, W) padded by (ph, pw),
    by F(2x2, 3x3). rotate: the data gradient's convolution, whose kernel is w (C, F // G,
    3, 3) rotated by 180 degrees, in and out channels swapped."""
    Ci, Co = C // G, F // G
    TH, TW = (OH + 1) // 2, (OW + 1) // 2
    nb_max = max(1, min(N, CHUNK // (16 * (Ci + Co) * TH * TW)))
    su = Co * Ci + SKEW
    sv, sm = Ci * nb_max * TH * TW + SKEW, Co * nb_max * TH * TW + SKEW
    U, V, M = np.empty(16 * su, x.dtype), np.empty(16 * sv, x.dtype), np.empty(16 * sm, x.dtype)
    pad = np.empty(Ci * nb_max * (2 * TH + 2) * (2 * TW + 2), x.dtype)
    for g in range(G):
        if rotate:
            transform_weights(w, wo, g, Ci, Co, U, su)
        else:
            transform_weights(w, wo, g, Co, Ci, U, su)
        for n0 in range(0, N, nb_max):
            nb = min(nb_max, N - n0)
            T = nb * TH * TW
            transform_tiles(x, xo, n0, nb, C, H, W, g * Ci, Ci, ph, pw, TH, TW,
                            pad[:Ci * nb * (2 * TH + 2) * (2 * TW + 2)], V, sv)
            for k in range(16):
                Vk = V[k * sv:k * sv + Ci * T].reshape((Ci, T))
                Mk = M[k * sm:k * sm + Co * T].reshape((Co, T))
                if rotate:
                    q = ROTATED[k]
                    np.dot(U[q * su:q * su + Co * Ci].reshape((Ci, Co)).T, Vk, Mk)
                else:
                    np.dot(U[k * su:k * su + Co * Ci].reshape((Co, Ci)), Vk, Mk)
            untransform_tiles(M, sm, Co, TH, TW, y, yo, n0, nb, F, OH, OW, g * Co)


# ------------------------------------------------------- the gradient wrt the weights
# y = A^T (U * V) A is linear in U, and U = G w G^T linear in w, so the weight gradient
# runs the same algorithm backwards with the transposed matrices (the adjoints):
#     dM[k] = (A dy A^T)[k]          (out, tiles)    per 2x2 block of output gradients
#     dU[k] = dM[k] @ V[k]^T         (out, in)       16 BLAS products, summed over tiles
#     dw    = G^T dU G               per (out, in)   back to 3x3

@njit(inline="always")
def _a(a, b):
    """A @ (a, b): the adjoint of the output transform along one axis."""
    return a, a + b, a - b, -b


@njit(inline="always")
def _gt(a, b, c, d, half):
    """G^T @ (a, b, c, d): the adjoint of the weight transform along one axis."""
    return a + (b + c) * half, (b - c) * half, (b + c) * half + d


@njit(**JIT)
def transform_grads(og, ogo, n0, nb, F, OH, OW, f0, Co, TH, TW, M, sm):
    """M[k, o, t] = (A dy A^T)[k] for the 2x2 block dy of output gradients of each tile
    (zero outside OH x OW), channels f0 + o: the adjoint of untransform_tiles."""
    T = nb * TH * TW
    zero = _const(M, 0.0)
    for o in range(Co):
        for b in range(nb):
            plane = ogo + ((n0 + b) * F + f0 + o) * OH * OW
            for th in range(TH):
                for tw in range(TW):
                    oh, ow = 2 * th, 2 * tw
                    p = plane + oh * OW + ow
                    right, down = ow + 1 < OW, oh + 1 < OH
                    y00 = og[p]
                    y01 = og[p + 1] if right else zero
                    y10 = og[p + OW] if down else zero
                    y11 = og[p + OW + 1] if right and down else zero
                    e0, e1 = _a(y00, y01), _a(y10, y11)
                    t = np.uint64(o * T + (b * TH + th) * TW + tw)
                    for c in range(4):
                        col = _a(e0[c], e1[c])
                        for r in range(4):
                            M[np.uint64((4 * r + c) * sm) + t] = col[r]


@njit(**JIT)
def untransform_weights(U, su, Co, Ci, g, dw, dwo):
    """dw[g * Co + o, i] = G^T dU[o, i] G for the channels of group g: the adjoint of
    transform_weights."""
    half = _const(U, 0.5)
    for o in range(Co):
        for i in range(Ci):
            at = np.uint64(o * Ci + i)
            u = U[at:]                     # u[k * su] is dU[k, o, i]
            # G^T along each of the four rows, then down each of the three columns
            h0 = _gt(u[0], u[su], u[2 * su], u[3 * su], half)
            h1 = _gt(u[4 * su], u[5 * su], u[6 * su], u[7 * su], half)
            h2 = _gt(u[8 * su], u[9 * su], u[10 * su], u[11 * su], half)
            h3 = _gt(u[12 * su], u[13 * su], u[14 * su], u[15 * su], half)
            out = dwo + ((g * Co + o) * Ci + i) * 9
            for c in range(3):
                col = _gt(h0[c], h1[c], h2[c], h3[c], half)
                for r in range(3):
                    dw[out + 3 * r + c] = col[r]


@njit(**JIT)
def conv3x3_grad_weight(og, ogo, x, xo, dw, dwo, N, C, H, W, F, OH, OW, ph, pw, G):
    """dw (F, C // G, 3, 3) of the F(2x2, 3x3) convolution of x (N, C, H, W) padded by
    (ph, pw), given the output gradient og (N, F, OH, OW)."""
    Ci, Co = C // G, F // G
    TH, TW = (OH + 1) // 2, (OW + 1) // 2
    nb_max = max(1, min(N, CHUNK // (16 * (Ci + Co) * TH * TW)))
    su = Co * Ci + SKEW
    sv, sm = Ci * nb_max * TH * TW + SKEW, Co * nb_max * TH * TW + SKEW
    U, V, M = np.empty(16 * su, x.dtype), np.empty(16 * sv, x.dtype), np.empty(16 * sm, x.dtype)
    part = np.empty(Co * Ci, x.dtype)
    pad = np.empty(Ci * nb_max * (2 * TH + 2) * (2 * TW + 2), x.dtype)
    for g in range(G):
        for n0 in range(0, N, nb_max):
            nb = min(nb_max, N - n0)
            T = nb * TH * TW
            transform_tiles(x, xo, n0, nb, C, H, W, g * Ci, Ci, ph, pw, TH, TW,
                            pad[:Ci * nb * (2 * TH + 2) * (2 * TW + 2)], V, sv)
            transform_grads(og, ogo, n0, nb, F, OH, OW, g * Co, Co, TH, TW, M, sm)
            for k in range(16):
                dU = U[k * su:k * su + Co * Ci]
                # the first batch of images writes dU, the others add to it
                np.dot(M[k * sm:k * sm + Co * T].reshape((Co, T)),
                       V[k * sv:k * sv + Ci * T].reshape((Ci, T)).T,
                       (dU if n0 == 0 else part).reshape((Co, Ci)))
                if n0 > 0:
                    for j in range(part.size):
                        dU[j] += part[j]
        untransform_weights(U, su, Co, Ci, g, dw, dwo)
