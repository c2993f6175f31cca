"""Plain-NumPy baselines: per-layer functions, im2col convolution, hand-written backward.

This is what a careful NumPy programmer writes without a framework: one function
per layer, each returning what its backward needs. float32 throughout.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


# ------------------------------------------------------------------ layers
def dense(x, w, b):
    return x @ w.T + b


def relu(x):
    return np.maximum(x, 0, out=x)          # in place: the pre-activation is not kept


def softmax_ce(logits, labels):
    """Summed cross entropy and its gradient (softmax - one_hot)."""
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = -np.log(p[rows, labels]).sum()
    p[rows, labels] -= 1.0
    return loss, p


def conv2d(x, w, b):
    """3x3 (any k) valid convolution, stride 1, as im2col + one matrix product."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    cols = sliding_window_view(x, (kh, kw), axis=(2, 3))          # (N, C, OH, OW, kh, kw)
    oh, ow = cols.shape[2], cols.shape[3]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
    y = cols @ w.reshape(f, -1).T + b                             # (N*OH*OW, F)
    return np.ascontiguousarray(y.reshape(n, oh, ow, f).transpose(0, 3, 1, 2)), cols


def conv2d_backward(dy, cols, x_shape, w, need_dx):
    n, c, h, wd = x_shape
    f, _, kh, kw = w.shape
    oh, ow = dy.shape[2], dy.shape[3]
    dy2 = dy.transpose(0, 2, 3, 1).reshape(-1, f)                 # (N*OH*OW, F)
    dw = (dy2.T @ cols).reshape(w.shape)
    db = dy2.sum(axis=0)
    dx = None
    if need_dx:
        dcols = (dy2 @ w.reshape(f, -1)).reshape(n, oh, ow, c, kh, kw)
        dx = np.zeros(x_shape, dtype=dy.dtype)
        for i in range(kh):
            for j in range(kw):
                dx[:, :, i:i + oh, j:j + ow] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dx, dw, db


def maxpool2(x):
    """2x2, stride 2 (odd sizes drop the last row/column, like 'valid' pooling)."""
    n, c, h, w = x.shape
    h2, w2 = h // 2, w // 2
    xs = x[:, :, :h2 * 2, :w2 * 2].reshape(n, c, h2, 2, w2, 2)
    y = xs.max(axis=(3, 5))
    return y, xs


def maxpool2_backward(dy, xs, y, x_shape):
    mask = xs == y[:, :, :, None, :, None]
    # the first maximum of each window takes the gradient (as the library does)
    first = mask & (np.cumsum(np.cumsum(mask, axis=3), axis=5) == 1)
    n, c, h, w = x_shape
    dx = np.zeros(x_shape, dtype=dy.dtype)
    h2, w2 = y.shape[2], y.shape[3]
    dx[:, :, :h2 * 2, :w2 * 2] = (first * dy[:, :, :, None, :, None]).reshape(n, c, h2 * 2,
                                                                               w2 * 2)
    return dx


# -------------------------------------------------------------------- MLP
def mlp_forward(x, p):
    h1 = relu(dense(x, p["w1"], p["b1"]))
    h2 = relu(dense(h1, p["w2"], p["b2"]))
    return dense(h2, p["w3"], p["b3"])


def mlp_train_step(x, labels, p, lr):
    h1 = relu(dense(x, p["w1"], p["b1"]))
    h2 = relu(dense(h1, p["w2"], p["b2"]))
    out = dense(h2, p["w3"], p["b3"])
    loss, d3 = softmax_ce(out, labels)
    d2 = (d3 @ p["w3"]) * (h2 > 0)
    d1 = (d2 @ p["w2"]) * (h1 > 0)
    grads = {"w3": d3.T @ h2, "b3": d3.sum(axis=0), "w2": d2.T @ h1, "b2": d2.sum(axis=0),
             "w1": d1.T @ x, "b1": d1.sum(axis=0)}
    scale = lr / len(labels)
    for k, g in grads.items():
        p[k] -= scale * g
    return loss


# ------------------------------------------------------------------ LeNet
def lenet_forward(x, p):
    c1, _ = conv2d(x, p["c1w"], p["c1b"])
    a1, _ = maxpool2(relu(c1))
    c2, _ = conv2d(a1, p["c2w"], p["c2b"])
    a2, _ = maxpool2(relu(c2))
    f = a2.reshape(len(x), -1)
    h1 = relu(dense(f, p["d1w"], p["d1b"]))
    h2 = relu(dense(h1, p["d2w"], p["d2b"]))
    return dense(h2, p["d3w"], p["d3b"])


def lenet_train_step(x, labels, p, lr):
    c1, cols1 = conv2d(x, p["c1w"], p["c1b"])
    r1 = relu(c1)
    a1, xs1 = maxpool2(r1)
    c2, cols2 = conv2d(a1, p["c2w"], p["c2b"])
    r2 = relu(c2)
    a2, xs2 = maxpool2(r2)
    f = a2.reshape(len(x), -1)
    h1 = relu(dense(f, p["d1w"], p["d1b"]))
    h2 = relu(dense(h1, p["d2w"], p["d2b"]))
    out = dense(h2, p["d3w"], p["d3b"])
    loss, d3 = softmax_ce(out, labels)
    g = {"d3w": d3.T @ h2, "d3b": d3.sum(axis=0)}
    dh2 = (d3 @ p["d3w"]) * (h2 > 0)
    g["d2w"], g["d2b"] = dh2.T @ h1, dh2.sum(axis=0)
    dh1 = (dh2 @ p["d2w"]) * (h1 > 0)
    g["d1w"], g["d1b"] = dh1.T @ f, dh1.sum(axis=0)
    df = (dh1 @ p["d1w"]).reshape(a2.shape)
    dr2 = maxpool2_backward(df, xs2, a2, r2.shape) * (r2 > 0)
    da1, g["c2w"], g["c2b"] = conv2d_backward(dr2, cols2, a1.shape, p["c2w"], True)
    dr1 = maxpool2_backward(da1, xs1, a1, r1.shape) * (r1 > 0)
    _, g["c1w"], g["c1b"] = conv2d_backward(dr1, cols1, x.shape, p["c1w"], False)
    scale = lr / len(labels)
    for k, v in g.items():
        p[k] -= scale * v
    return loss
