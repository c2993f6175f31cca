"""BatchNorm and LayerNorm, forward and backward.

The data is viewed as (A, C, B) around the normalised axis (BatchNorm: the
channel axis, statistics over A and B; LayerNorm: statistics over C for each
(a, b)). Statistics are computed in float64 with two passes (mean, then the
squared deviations), as `np.var` does.
"""
import numpy as np
from numba import njit

from ..codegen import Flag
from .softmax import split_axis

JIT = dict(cache=True, nogil=True, boundscheck=False)


@njit(**JIT)
def _channel_stats(x, xo, A, C, B, c):
    n = A * B
    s = 0.0
    for a in range(A):
        base = xo + (a * C + c) * B
        for b in range(B):
            s += x[base + b]
    mu = s / n if n > 0 else 0.0
    v = 0.0
    for a in range(A):
        base = xo + (a * C + c) * B
        for b in range(B):
            d = x[base + b] - mu
            v += d * d
    return mu, (v / n if n > 0 else 0.0)


@njit(**JIT)
def batchnorm(x, xo, gamma, go, beta, bo, mean, mo, var, vo, y, yo, nm, nmo, nv, nvo,
              A, C, B, eps, momentum, fix_gamma, batch_stats):
    for c in range(C):
        if batch_stats:
            mu, v = _channel_stats(x, xo, A, C, B, c)
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
            base = (a * C + c) * B
            for b in range(B):
                y[yo + base + b] = x[xo + base + b] * scale + shift


@njit(**JIT)
def batchnorm_grad(og, ogo, x, xo, gamma, go, mean, mo, var, vo, dx, dxo, dg, dgo, db, dbo,
                   A, C, B, eps, fix_gamma, batch_stats):
    m = A * B
    for c in range(C):
        g = 1.0 if fix_gamma else gamma[go + c]
        if batch_stats:
            mu, v = _channel_stats(x, xo, A, C, B, c)
        else:
            mu, v = mean[mo + c], var[vo + c]
        inv = 1.0 / np.sqrt(v + eps)
        sum_og = 0.0
        sum_og_xhat = 0.0
        for a in range(A):
            base = (a * C + c) * B
            for b in range(B):
                o = og[ogo + base + b]
                sum_og += o
                sum_og_xhat += o * (x[xo + base + b] - mu) * inv
        db[dbo + c] = sum_og
        dg[dgo + c] = 0.0 if fix_gamma else sum_og_xhat
        for a in range(A):
            base = (a * C + c) * B
            for b in range(B):
                o = og[ogo + base + b]
                if batch_stats:
                    xhat = (x[xo + base + b] - mu) * inv
                    dx[dxo + base + b] = g * inv / m * (m * o - sum_og - xhat * sum_og_xhat)
                else:
                    dx[dxo + base + b] = o * g * inv


@njit(**JIT)
def layernorm(x, xo, gamma, go, beta, bo, y, yo, A, C, B, eps):
    for a in range(A):
        for b in range(B):
            base = a * C * B + b
            s = 0.0
            for c in range(C):
                s += x[xo + base + c * B]
            mu = s / C
            v = 0.0
            for c in range(C):
                d = x[xo + base + c * B] - mu
                v += d * d
            inv = 1.0 / np.sqrt(v / C + eps)
            for c in range(C):
                i = base + c * B
                y[yo + i] = (x[xo + i] - mu) * inv * gamma[go + c] + beta[bo + c]


@njit(**JIT)
def layernorm_grad(og, ogo, x, xo, gamma, go, dx, dxo, dg, dgo, db, dbo, A, C, B, eps):
    dgam = np.zeros(C, np.float64)
    dbet = np.zeros(C, np.float64)
    for a in range(A):
        for b in range(B):
            base = a * C * B + b
            s = 0.0
            for c in range(C):
                s += x[xo + base + c * B]
            mu = s / C
            v = 0.0
            for c in range(C):
                d = x[xo + base + c * B] - mu
                v += d * d
            inv = 1.0 / np.sqrt(v / C + eps)
            sum_g = 0.0
            sum_g_xhat = 0.0
            for c in range(C):
                i = base + c * B
                xhat = (x[xo + i] - mu) * inv
                o = og[ogo + i]
                dgam[c] += o * xhat
                dbet[c] += o
                gg = o * gamma[go + c]
                sum_g += gg
                sum_g_xhat += gg * xhat
            for c in range(C):
                i = base + c * B
                xhat = (x[xo + i] - mu) * inv
                gg = og[ogo + i] * gamma[go + c]
                dx[dxo + i] = inv / C * (C * gg - sum_g - xhat * sum_g_xhat)
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
