"""`straightdope.random`: seeding, and the same random functions as `nd.random`."""
import numpy as _np

from .ndarray.random import normal, randint, randn, shuffle, uniform  # noqa: F401


def seed(seed_state, ctx="all"):
    """Seed every random source: NumPy's generator and, when it is loaded, Numba's.
    Any integer, as MXNet (a negative one too: NumPy takes it modulo 2**32)."""
    seed_state = int(seed_state) % 2 ** 32
    _np.random.seed(seed_state)
    for hook in _SEED_HOOKS:
        hook(seed_state)


_SEED_HOOKS = []   # the compiler registers Numba's seeding here
