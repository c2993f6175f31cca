"""The compiler: named passes over the graph IR, ending in one Numba function.

    traced -> shapes -> fused -> memory -> source      (executable.stages)

* `lower.py`   rewrites a few ops into simpler ones (FullyConnected = dot + bias add)
* `fuse.py`    groups elementwise chains into loops (pass 2)
* `memory.py`  liveness and buffer reuse (pass 3)
* `codegen.py` writes the Python source of the whole graph (pass 4)
* `cache.py`   the on-disk cache of generated modules and their machine code
* `backend.py` NumbaBackend / Executable: for one set of input shapes (graph.AnyShape
               keeps one per shapes met), runs the passes (its PIPELINE list), then the
               code, as one whole-graph function ("graph" tier) or as steps called from
               Python, one function per distinct loop ("steps" tier, for large graphs)
* `tiers.py`   hybridize(compile="tiered"), the default: the NumPy reference tier while a
               background process compiles the final tier into the caches, then a switch
* `loops.py`   graphs with loops: compiled segments, and loop bodies compiled once
* `kernels/`   precompiled Numba kernels for everything that is not a fused loop

`STRAIGHTDOPE_DEBUG=1` prints the compile times of every graph, `=2` also the
fused steps and the memory plan, `=3` also the generated source.
"""
from .backend import STAGES, Executable, NumbaBackend  # noqa: F401
from .codegen import CodegenError  # noqa: F401
from . import kernels as _kernels
from . import loops as _loops

_kernels.install()
_loops.install()


def _seed_numba(seed_state):
    from .kernels import random as _random
    _random.seed(seed_state)


def _register_seed_hook():
    from .. import random as _sd_random
    if _seed_numba not in _sd_random._SEED_HOOKS:
        _sd_random._SEED_HOOKS.append(_seed_numba)


_register_seed_hook()
