"""BatchNorm and LayerNorm, forward and backward.

The data is viewed as (A, C, B) around the normalised axis (BatchNorm: the
channel axis, statistics over A and B; LayerNorm: statistics over C for each
(a, b)). Statistics are computed in float64 with two passes (mean, then the
squared deviations), as `np.var` does.
"""
import numpy as np
from numba import njit

from ..emitting import Flag
from ..numba_internals import DISK_CACHE
from .softmax import split_axis

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


@njit(**JIT)
def _channel_stats(X, c):
    """Mean and (population) variance of channel c of X viewed as (A, C, B)."""
    A, B = X.shape[0], X.shape[2]
    n = A * B
    s = 0.0
    for a in range(A):
        row = X[a, c]
        for b in range(B):
            s += row[b]
    mu = s / n if n > 0 else 0.0
    v = 0.0
    for a in range(A):
        row = X[a, c]
        for b in range(B):
            d = row[b] - mu
            v += d * d
    return mu, (v / n if n > 0 else 0.0)


@njit(**JIT)
def batchnorm(x, xo, gamma, go, beta, bo, mean, mo, var, vo, y, yo, nm, nmo, nv, nvo,
              A, C, B, eps, momentum, fix_gamma, batch_stats):
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    Y = y[yo:yo + A * C * B].reshape((A, C, B))
    for c in range(C):
        if batch_stats:
            mu, v = _channel_stats(X, c)
            nm[nmo + c] = mean[mo + c] * momentum + mu * (1.0 - momentum)
            nv[nvo + c] = var[vo + c] * momentum + v * (1.0 - momentum)
        else:
            mu, v = mean[mo + c], var[vo + c]
            nm[nmo + c] = mu
            nv[nvo + c] = v
        g = 1.0 if fix_gamma else gamma[go + c]
        inv = 1.0 / np.sqrt(v + eps)
        scale = g * inv
        shift = beta[bo + c] - mu * scale
        for a in range(A):
            src, dst = X[a, c], Y[a, c]
            for b in range(B):
                dst[b] = src[b] * scale + shift


@njit(**JIT)
def batchnorm_grad(og, ogo, x, xo, gamma, go, mean, mo, var, vo, dx, dxo, dg, dgo, db, dbo,
                   A, C, B, eps, fix_gamma, batch_stats):
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    OG = og[ogo:ogo + A * C * B].reshape((A, C, B))
    DX = dx[dxo:dxo + A * C * B].reshape((A, C, B))
    m = A * B
    for c in range(C):
        g = 1.0 if fix_gamma else gamma[go + c]
        if batch_stats:
            mu, v = _channel_stats(X, c)
        else:
            mu, v = mean[mo + c], var[vo + c]
        inv = 1.0 / np.sqrt(v + eps)
        sum_og = 0.0
        sum_og_xhat = 0.0
        for a in range(A):
            src, grad = X[a, c], OG[a, c]
            for b in range(B):
                sum_og += grad[b]
                sum_og_xhat += grad[b] * (src[b] - mu) * inv
        db[dbo + c] = sum_og
        dg[dgo + c] = 0.0 if fix_gamma else sum_og_xhat
        for a in range(A):
            src, grad, dst = X[a, c], OG[a, c], DX[a, c]
            for b in range(B):
                if batch_stats:
                    xhat = (src[b] - mu) * inv
                    dst[b] = g * inv / m * (m * grad[b] - sum_og - xhat * sum_og_xhat)
                else:
                    dst[b] = grad[b] * g * inv


@njit(**JIT)
def _row_stats(row, C, eps):
    s = 0.0
    for c in range(C):
        s += row[c]
    mu = s / C
    v = 0.0
    for c in range(C):
        d = row[c] - mu
        v += d * d
    return mu, 1.0 / np.sqrt(v / C + eps)


@njit(**JIT)
def layernorm(x, xo, gamma, go, beta, bo, y, yo, A, C, B, eps):
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    Y = y[yo:yo + A * C * B].reshape((A, C, B))
    gam, bet = gamma[go:go + C], beta[bo:bo + C]
    for a in range(A):
        for b in range(B):
            row, out = X[a, :, b], Y[a, :, b]
            mu, inv = _row_stats(row, C, eps)
            for c in range(C):
                out[c] = (row[c] - mu) * inv * gam[c] + bet[c]


@njit(**JIT)
def layernorm_grad(og, ogo, x, xo, gamma, go, dx, dxo, dg, dgo, db, dbo, A, C, B, eps):
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    OG = og[ogo:ogo + A * C * B].reshape((A, C, B))
    DX = dx[dxo:dxo + A * C * B].reshape((A, C, B))
    gam = gamma[go:go + C]
    dgam = np.zeros(C, np.float64)
    dbet = np.zeros(C, np.float64)
    for a in range(A):
        for b in range(B):
            row, grad, out = X[a, :, b], OG[a, :, b], DX[a, :, b]
            mu, inv = _row_stats(row, C, eps)
            sum_g = 0.0
            sum_g_xhat = 0.0
            for c in range(C):
                xhat = (row[c] - mu) * inv
                dgam[c] += grad[c] * xhat
                dbet[c] += grad[c]
                gg = grad[c] * gam[c]
                sum_g += gg
                sum_g_xhat += gg * xhat
            for c in range(C):
                xhat = (row[c] - mu) * inv
                out[c] = inv / C * (C * grad[c] * gam[c] - sum_g - xhat * sum_g_xhat)
    for c in range(C):
        dg[dgo + c] = dgam[c]
        db[dbo + c] = dbet[c]


# ------------------------------------------------------------------ emitters
def emit_batchnorm(cg, node):
    x, gamma, beta, mean, var = (cg.ref(e) for e in node.inputs)
    y, nm, nv = (cg.out(node, k) for k in range(3))
    a = node.attrs
    batch_stats = cg.is_train and not a["use_global_stats"]
    cg.call("norm", "batchnorm", x.args, gamma.args, beta.args, mean.args, var.args, y.args,
            nm.args, nv.args, *split_axis(x, a["axis"]), cg.lit(float(a["eps"])),
            cg.lit(float(a["momentum"])), int(a["fix_gamma"]), Flag(batch_stats))


def emit_batchnorm_grad(cg, node):
    og, x, gamma, mean, var = (cg.ref(e) for e in node.inputs)
    dx, dg, db = (cg.out(node, k) for k in range(3))
    a = node.attrs
    batch_stats = a["training"] and not a["use_global_stats"]
    cg.call("norm", "batchnorm_grad", og.args, x.args, gamma.args, mean.args, var.args,
            dx.args, dg.args, db.args, *split_axis(x, a["axis"]), cg.lit(float(a["eps"])),
            int(a["fix_gamma"]), Flag(batch_stats))


def emit_layernorm(cg, node):
    x, gamma, beta = (cg.ref(e) for e in node.inputs)
    cg.call("norm", "layernorm", x.args, gamma.args, beta.args, cg.out(node).args,
            *split_axis(x, node.attrs["axis"]), cg.lit(float(node.attrs["eps"])))


def emit_layernorm_grad(cg, node):
    og, x, gamma = (cg.ref(e) for e in node.inputs)
    dx, dg, db = (cg.out(node, k) for k in range(3))
    cg.call("norm", "layernorm_grad", og.args, x.args, gamma.args, dx.args, dg.args, db.args,
            *split_axis(x, node.attrs["axis"]), cg.lit(float(node.attrs["eps"])))


EMITTERS = {"BatchNorm": emit_batchnorm, "_batchnorm_grad": emit_batchnorm_grad,
            "LayerNorm": emit_layernorm, "_layernorm_grad": emit_layernorm_grad}
