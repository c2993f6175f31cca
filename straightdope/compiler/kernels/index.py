"""Ops that index with data: pick (and its gradient), one_hot, Embedding (and its gradient).

Indices may arrive as floats (MXNet's labels usually are): they are truncated
to integers and clipped into range, exactly like the NumPy reference.
"""
from numba import njit

from ..numba_internals import DISK_CACHE
from .softmax import split_axis
from .util import copy_into

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)


@njit(**JIT)
def pick(x, xo, index, io, y, yo, A, C, B):
    """y[a, b] = x[a, index[a, b], b]."""
    X = x[xo:xo + A * C * B].reshape((A, C, B))
    I = index[io:io + A * B].reshape((A, B))
    Y = y[yo:yo + A * B].reshape((A, B))
    for a in range(A):
        for b in range(B):
            Y[a, b] = X[a, min(max(int(I[a, b]), 0), C - 1), b]


@njit(**JIT)
def pick_grad(og, ogo, index, io, g, go, A, C, B):
    OG = og[ogo:ogo + A * B].reshape((A, B))
    I = index[io:io + A * B].reshape((A, B))
    G = g[go:go + A * C * B].reshape((A, C, B))
    G[...] = 0
    for a in range(A):
        for b in range(B):
            G[a, min(max(int(I[a, b]), 0), C - 1), b] = OG[a, b]


@njit(**JIT)
def one_hot(idx, io, y, yo, M, depth, on, off):
    I = idx[io:io + M]
    Y = y[yo:yo + M * depth].reshape((M, depth))
    for m in range(M):
        k = int(I[m])
        for d in range(depth):
            Y[m, d] = on if d == k else off


@njit(**JIT)
def embedding(idx, io, w, wo, y, yo, M, V, D):
    I = idx[io:io + M]
    Wt = w[wo:wo + V * D].reshape((V, D))
    Y = y[yo:yo + M * D].reshape((M, D))
    for m in range(M):
        copy_into(Y[m], Wt[min(max(int(I[m]), 0), V - 1)])


@njit(**JIT)
def embedding_grad(og, ogo, idx, io, g, go, M, V, D):
    OG = og[ogo:ogo + M * D].reshape((M, D))
    I = idx[io:io + M]
    G = g[go:go + V * D].reshape((V, D))
    G[...] = 0
    for m in range(M):
        row = G[min(max(int(I[m]), 0), V - 1)]
        src = OG[m]
        for d in range(D):
            row[d] += src[d]


# ------------------------------------------------------------------ emitters
def emit_pick(cg, node):
    x, index, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    cg.call("index", "pick", x.args, index.args, y.args, *split_axis(x, node.attrs["axis"]))


def emit_pick_grad(cg, node):
    og, x, index = (cg.ref(e) for e in node.inputs)
    cg.call("index", "pick_grad", og.args, index.args, cg.out(node).args,
            *split_axis(x, node.attrs["axis"]))


def emit_one_hot(cg, node):
    idx, y = cg.ref(node.inputs[0]), cg.out(node)
    a = node.attrs
    cg.call("index", "one_hot", idx.args, y.args, idx.n, cg.lit(int(a["depth"])),
            cg.lit(float(a["on_value"])), cg.lit(float(a["off_value"])))


def emit_embedding(cg, node):
    idx, w, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
    cg.call("index", "embedding", idx.args, w.args, y.args, idx.n, w.dims[0], w.dims[1])


def emit_embedding_grad(cg, node):
    og, idx, w = (cg.ref(e) for e in node.inputs)
    cg.call("index", "embedding_grad", og.args, idx.args, cg.out(node).args, idx.n,
            w.dims[0], w.dims[1])


EMITTERS = {"pick": emit_pick, "_pick_grad": emit_pick_grad, "one_hot": emit_one_hot,
            "Embedding": emit_embedding, "_embedding_grad": emit_embedding_grad}
