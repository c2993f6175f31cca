"""`np.linalg`: the norms d2l and NumPy code use, built on straightdope ops."""


def norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm of a vector (the Frobenius norm of a matrix) or, with ord=1, the sum of
    absolute values; recorded by autograd like any other op."""
    if ord not in (None, 1, 2, "fro"):
        raise ValueError(f"np.linalg.norm: ord must be None, 1, 2 or 'fro', got {ord!r}")
    # the fluent method: an NDArray computes, a Symbol (a traced forward) adds a node
    return x.norm(ord=1 if ord == 1 else 2, axis=axis, keepdims=keepdims)
