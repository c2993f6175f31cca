"""softmax / log_softmax along an axis, and the softmax losses with their gradients.

The input is viewed as (A, C, B) with C the softmax axis, so one kernel serves
every axis: for the usual last axis B is 1 and the inner loop is contiguous.
Maxima are subtracted before `exp` (stable), sums are taken in float64.
"""
import numpy as np
from numba import njit

from ..emitting import Flag
from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


@njit(**JIT)
def softmax(x, xo, y, yo, A, C, B, temperature, log):
    if C == 0:                  # an empty axis: nothing to write (and no 1 / sum of nothing)
        return
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    Y = y[yo:yo + A * C * B].reshape((A, C, B))
    for a in range(A):
        for b in range(B):
            row, out = X[a, :, b], Y[a, :, b]
            m = -np.inf
            for c in range(C):
                m = max(m, row[c] / temperature)
            s = 0.0
            for c in range(C):
                s += np.exp(row[c] / temperature - m)
            if log:             # (x - m) - log(s), NumPy's order: m + log(s) would
                ls = np.log(s)  # lose log(s) next to a huge m
                for c in range(C):
                    out[c] = (row[c] / temperature - m) - ls
            else:
                inv = 1.0 / s
                for c in range(C):
                    out[c] = np.exp(row[c] / temperature - m) * inv


@njit(**JIT)
def _log_softmax_row(row, c):
    """(log of the normaliser, max) of one row: log_softmax[j] = row[j] - m - log(s)."""
    m = -np.inf
    for j in range(c):
        m = max(m, row[j])
    s = 0.0
    for j in range(c):
        s += np.exp(row[j] - m)
    return np.log(s), m


@njit(**JIT)
def softmax_ce(x, xo, label, lo, y, yo, N, C):
    """y[0] = -sum_n log_softmax(x)[n, label[n]] (labels clipped into range)."""
    X = x[xo:xo + N * C].reshape((N, C))
    L = label[lo:lo + N]
    total = 0.0
    for n in range(N):
        logs, m = _log_softmax_row(X[n], C)
        k = min(max(int(L[n]), 0), C - 1)
        total -= X[n, k] - m - logs
    y[yo] = total


@njit(**JIT)
def softmax_ce_grad(og, ogo, x, xo, label, lo, g, go, N, C):
    """(softmax(x) - one_hot(label)) * og[0]."""
    X = x[xo:xo + N * C].reshape((N, C))
    G = g[go:go + N * C].reshape((N, C))
    L = label[lo:lo + N]
    scale = og[ogo]
    for n in range(N):
        logs, m = _log_softmax_row(X[n], C)
        k = min(max(int(L[n]), 0), C - 1)
        for c in range(C):
            p = np.exp(X[n, c] - m - logs)
            G[n, c] = (p - (1.0 if c == k else 0.0)) * scale


@njit(**JIT)
def sparse_softmax_ce(x, xo, label, lo, y, yo, A, C, B):
    """y[a, b] = -log_softmax(x[a, :, b])[label[a, b]] (labels clipped into range)."""
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    L = label[lo:lo + A * B].reshape((A, B))
    Y = y[yo:yo + A * B].reshape((A, B))
    for a in range(A):
        for b in range(B):
            row = X[a, :, b]
            logs, m = _log_softmax_row(row, C)
            k = min(max(int(L[a, b]), 0), C - 1)
            Y[a, b] = logs - (row[k] - m)        # NumPy's order (see softmax)


@njit(**JIT)
def sparse_softmax_ce_grad(og, ogo, x, xo, label, lo, g, go, A, C, B):
    """(softmax(x) - one_hot(label)) * og, along the class axis C."""
    OG = og[ogo:ogo + A * B].reshape((A, B))
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    L = label[lo:lo + A * B].reshape((A, B))
    G = g[go:go + A * C * B].reshape((A, C, B))
    for a in range(A):
        for b in range(B):
            row = X[a, :, b]
            logs, m = _log_softmax_row(row, C)
            k = min(max(int(L[a, b]), 0), C - 1)
            for c in range(C):
                G[a, c, b] = (np.exp(row[c] - m - logs) - (1.0 if c == k else 0.0)) * OG[a, b]


@njit(**JIT)
def softmax_output_grad(y, yo, label, lo, g, go, A, C, B, batch, grad_scale, ignore_label,
                        use_ignore, normalization):
    """SoftmaxOutput's gradient: (y - one_hot(label)) * scale; labels per (a, b);
    normalization 0 null, 1 batch (divide by y.shape[0]), 2 valid (by the labels kept)."""
    Yv = y[yo:yo + A * C * B].reshape((A, C, B))
    G = g[go:go + A * C * B].reshape((A, C, B))
    L = label[lo:lo + A * B].reshape((A, B))
    ignore = int(ignore_label)
    scale = grad_scale
    if normalization == 1:
        scale /= batch
    elif normalization == 2:
        valid = 0
        for a in range(A):
            for b in range(B):
                if not use_ignore or int(L[a, b]) != ignore:
                    valid += 1
        scale /= max(valid, 1)
    for a in range(A):
        for b in range(B):
            raw = int(L[a, b])
            k = min(max(raw, 0), C - 1)
            drop = use_ignore and raw == ignore
            for c in range(C):
                if drop:
                    G[a, c, b] = 0.0
                else:
                    G[a, c, b] = (Yv[a, c, b] - (1.0 if c == k else 0.0)) * scale


# ------------------------------------------------------------------ emitters
def split_axis(x, axis):
    """(A, C, B) sizes of x around `axis` (dims as code)."""
    axis %= max(len(x.dims), 1)
    return ("*".join(x.dims[:axis]) or "1", x.dims[axis] if x.dims else "1",
            "*".join(x.dims[axis + 1:]) or "1")


def emit_softmax(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    A, C, B = split_axis(x, node.attrs["axis"])
    cg.call("softmax", "softmax", x.args, y.args, A, C, B,
            cg.lit(float(node.attrs["temperature"])), Flag(node.op.name == "log_softmax"))


def emit_softmax_output(cg, node):
    x, y = cg.ref(node.inputs[0]), cg.out(node)
    A, C, B = split_axis(x, 1 if node.attrs["multi_output"] else -1)
    cg.call("softmax", "softmax", x.args, y.args, A, C, B, "1.0", Flag(0))


def emit_softmax_output_grad(cg, node):
    y, label, g = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    a = node.attrs
    A, C, B = split_axis(y, 1 if a["multi_output"] else -1)
    norm = {"null": 0, "batch": 1, "valid": 2}[a["normalization"]]
    cg.call("softmax", "softmax_output_grad", y.args, label.args, g.args, A, C, B,
            y.dims[0] if y.dims else "1", cg.lit(float(a["grad_scale"])),
            cg.lit(float(a["ignore_label"])), int(a["use_ignore"]), norm)


def emit_softmax_ce(cg, node):
    x, label, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    cg.call("softmax", "softmax_ce", x.args, label.args, y.args, x.dims[0], x.dims[1])


def emit_softmax_ce_grad(cg, node):
    og, x, label = (cg.ref(e) for e in node.inputs)
    g = cg.out(node)
    cg.call("softmax", "softmax_ce_grad", og.args, x.args, label.args, g.args, x.dims[0],
            x.dims[1])


def emit_sparse_softmax_ce(cg, node):
    x, label, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    cg.call("softmax", "sparse_softmax_ce", x.args, label.args, y.args,
            *split_axis(x, node.attrs["axis"]))


def emit_sparse_softmax_ce_grad(cg, node):
    og, x, label = (cg.ref(e) for e in node.inputs)
    cg.call("softmax", "sparse_softmax_ce_grad", og.args, x.args, label.args,
            cg.out(node).args, *split_axis(x, node.attrs["axis"]))


EMITTERS = {"softmax": emit_softmax, "log_softmax": emit_softmax,
            "SoftmaxOutput": emit_softmax_output, "Softmax": emit_softmax_output,
            "_softmax_output_grad": emit_softmax_output_grad,
            "softmax_cross_entropy": emit_softmax_ce,
            "_softmax_cross_entropy_grad": emit_softmax_ce_grad,
            "_sparse_softmax_ce": emit_sparse_softmax_ce,
            "_sparse_softmax_ce_grad": emit_sparse_softmax_ce_grad}
