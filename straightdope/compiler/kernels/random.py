"""Randomness inside compiled code: Dropout, and seeding Numba's generator.

Numba has its own random generator (per thread), separate from NumPy's, so
`mx.random.seed(s)` calls `seed()` here too (a hook registered by
`straightdope.compiler`). A process that never called it gets a seed derived
from NumPy's current state, so `np.random.seed` alone is also reproducible.
"""
import hashlib

import numpy as np
from numba import njit

from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False)
_seeded = False


@njit(**JIT)
def _numba_seed(s):
    np.random.seed(s)


def seed(seed_state):
    global _seeded
    _numba_seed(int(seed_state) % (2 ** 32))
    _seeded = True


def ensure_seeded():
    """Before the first compiled graph with a random op runs."""
    if not _seeded:
        state = np.random.get_state()[1]
        seed(int.from_bytes(hashlib.sha256(state.tobytes()).digest()[:4], "little"))


@njit(**JIT)
def dropout(x, xo, y, yo, mask, mo, dims, shared, p):
    """y = x * mask, mask = (u >= p) / (1 - p), x viewed with 6 `dims`. Along the
    `shared` axes (Dropout's `axes`) one mask value is reused: it is drawn at index 0."""
    scale = 1.0 / (1.0 - p)
    d0, d1, d2, d3, d4, d5 = dims
    s0, s1, s2, s3, s4, s5 = shared
    n = d0 * d1 * d2 * d3 * d4 * d5
    X, Y, M = x[xo:xo + n], y[yo:yo + n], mask[mo:mo + n]
    i = 0
    for i0 in range(d0):
        for i1 in range(d1):
            for i2 in range(d2):
                for i3 in range(d3):
                    for i4 in range(d4):
                        for i5 in range(d5):
                            if (s0 and i0) or (s1 and i1) or (s2 and i2) or (s3 and i3) \
                                    or (s4 and i4) or (s5 and i5):
                                j = (0 if s0 else i0)
                                j = j * d1 + (0 if s1 else i1)
                                j = j * d2 + (0 if s2 else i2)
                                j = j * d3 + (0 if s3 else i3)
                                j = j * d4 + (0 if s4 else i4)
                                j = j * d5 + (0 if s5 else i5)
                                keep = M[j]
                            else:
                                keep = scale if np.random.random() >= p else 0.0
                            M[i] = keep
                            Y[i] = X[i] * keep
                            i += 1


def six_dims(dims, flags):
    """Merge neighbouring axes with the same flag, then pad to 6: (dims, flags) of
    length 6 for the generic 6-d kernels."""
    merged = []
    for d, f in zip(dims, flags):
        if merged and merged[-1][1] == f:
            merged[-1] = (merged[-1][0] + [d], f)
        else:
            merged.append(([d], f))
    if len(merged) > 6:
        raise NotImplementedError("more than 6 alternating axis groups")
    merged = [(["1"], 0)] * (6 - len(merged)) + merged
    return ["*".join(d) for d, _ in merged], [f for _, f in merged]


def emit_dropout(cg, node):
    x, y, mask = cg.ref(node.inputs[0]), cg.out(node, 0), cg.out(node, 1)
    ndim = len(x.shape)
    shared = {a % ndim for a in node.attrs["axes"]} if ndim else set()
    dims, flags = six_dims(x.dims, [int(a in shared) for a in range(ndim)])
    cg.call("random", "dropout", x.args, y.args, mask.args, "(" + ", ".join(dims) + ")",
            "(" + ", ".join(map(str, flags)) + ")", cg.lit(float(node.attrs["p"])))


EMITTERS = {"Dropout": emit_dropout}
