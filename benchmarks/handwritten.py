"""The hand-written limit: ONE @njit function per workload, preallocated buffers,
`np.dot(a, b, out)` into them, explicit loops for everything elementwise.

This is the best one can do by hand with the same tools the compiler uses (Numba
+ BLAS), so "hybridized / hand-written" measures what the graph compiler costs.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, boundscheck=False)
def _bias_relu(h, b):
    n, m = h.shape
    for i in range(n):
        for j in range(m):
            v = h[i, j] + b[j]
            h[i, j] = v if v > 0 else 0.0


@njit(cache=True, nogil=True, boundscheck=False)
def mlp_forward(x, w1, b1, w2, b2, w3, b3, h1, h2):
    np.dot(x, w1.T, h1)
    _bias_relu(h1, b1)
    np.dot(h1, w2.T, h2)
    _bias_relu(h2, b2)
    out = np.empty((x.shape[0], w3.shape[0]), dtype=x.dtype)
    np.dot(h2, w3.T, out)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] += b3[j]
    return out


@njit(cache=True, nogil=True, boundscheck=False)
def _sgd(w, g, scale):
    wf, gf = w.reshape(w.size), g.reshape(g.size)
    for i in range(wf.size):
        wf[i] -= scale * gf[i]


@njit(cache=True, nogil=True, boundscheck=False)
def _sgd_bias(b, d, scale):
    """b -= scale * d.sum(axis=0), without a temporary."""
    n, m = d.shape
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += d[i, j]
        b[j] -= scale * s


@njit(cache=True, nogil=True, boundscheck=False)
def mlp_train_step(x, labels, w1, b1, w2, b2, w3, b3, h1, h2, out, d2, d1, g1, g2, g3, lr):
    """Forward, summed softmax cross entropy, backward, SGD (lr on the batch mean)."""
    n = x.shape[0]
    np.dot(x, w1.T, h1)
    _bias_relu(h1, b1)
    np.dot(h1, w2.T, h2)
    _bias_relu(h2, b2)
    np.dot(h2, w3.T, out)
    loss = 0.0
    c = out.shape[1]
    for i in range(n):                       # logits -> softmax - one_hot, in place
        m = -np.inf
        for j in range(c):
            out[i, j] += b3[j]
            m = max(m, out[i, j])
        s = 0.0
        for j in range(c):
            s += np.exp(out[i, j] - m)
        k = labels[i]
        loss -= out[i, k] - m - np.log(s)
        for j in range(c):
            out[i, j] = np.exp(out[i, j] - m) / s - (1.0 if j == k else 0.0)
    scale = lr / n
    np.dot(out, w3, d2)                      # d h2, before w3 changes
    for i in range(n):
        for j in range(d2.shape[1]):
            if h2[i, j] <= 0:
                d2[i, j] = 0.0
    np.dot(d2, w2, d1)                       # d h1, before w2 changes
    for i in range(n):
        for j in range(d1.shape[1]):
            if h1[i, j] <= 0:
                d1[i, j] = 0.0
    np.dot(out.T, h2, g3)
    _sgd(w3, g3, scale)
    _sgd_bias(b3, out, scale)
    np.dot(d2.T, h1, g2)
    _sgd(w2, g2, scale)
    _sgd_bias(b2, d2, scale)
    np.dot(d1.T, x, g1)
    _sgd(w1, g1, scale)
    _sgd_bias(b1, d1, scale)
    return loss
