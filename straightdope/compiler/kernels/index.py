"""Ops that index with data: pick (and its gradient), one_hot, Embedding (and its gradient).

Indices may arrive as floats (MXNet's labels usually are): they are truncated
to integers and clipped into range, exactly like the NumPy reference.
"""
from numba import njit

from .softmax import split_axis

JIT = dict(cache=True, nogil=True, boundscheck=False)


@njit(**JIT)
def pick(x, xo, index, io, y, yo, A, C, B):
    """y[a, b] = x[a, index[a, b], b]."""
    for a in range(A):
        for b in range(B):
            k = min(max(int(index[io + a * B + b]), 0), C - 1)
            y[yo + a * B + b] = x[xo + (a * C + k) * B + b]


@njit(**JIT)
def pick_grad(og, ogo, index, io, g, go, A, C, B):
    for i in range(A * C * B):
        g[go + i] = 0
    for a in range(A):
        for b in range(B):
            k = min(max(int(index[io + a * B + b]), 0), C - 1)
            g[go + (a * C + k) * B + b] = og[ogo + a * B + b]


@njit(**JIT)
def one_hot(idx, io, y, yo, M, depth, on, off):
    for m in range(M):
        k = int(idx[io + m])
        for d in range(depth):
            y[yo + m * depth + d] = on if d == k else off


@njit(**JIT)
def embedding(idx, io, w, wo, y, yo, M, V, D):
    for m in range(M):
        row = min(max(int(idx[io + m]), 0), V - 1)
        for d in range(D):
            y[yo + m * D + d] = w[wo + row * D + d]


@njit(**JIT)
def embedding_grad(og, ogo, idx, io, g, go, M, V, D):
    for i in range(V * D):
        g[go + i] = 0
    for m in range(M):
        row = min(max(int(idx[io + m]), 0), V - 1)
        for d in range(D):
            g[go + row * D + d] += og[ogo + m * D + d]


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
