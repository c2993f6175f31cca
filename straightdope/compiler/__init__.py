"""The compiler: named passes over the graph IR, ending in one Numba function.

    traced -> shapes -> fused -> memory -> source      (executable.stages)

* `lower.py`   rewrites a few ops into simpler ones (FullyConnected = dot + bias add)
* `fuse.py`    groups elementwise chains into loops (pass 2)
* `memory.py`  liveness and buffer reuse (pass 3)
* `codegen.py` writes the Python source of the whole graph (pass 4), returned with its
               record (`Generated`: kernel calls, arenas, loops, each step's lines)
* `emitting.py` what codegen and the kernels' emitters share (Flag, CodegenError)
* `cache.py`   the on-disk cache of generated modules and their machine code
* `backend.py` NumbaBackend / Executable: for one set of input shapes (graph.AnyShape
               keeps one per shapes met), runs the passes (its PIPELINE list), then the
               code, as one whole-graph function ("graph" tier) or as steps called from
               Python, one function per distinct loop ("steps" tier, for large graphs)
* `ready.py`   what identifies a compile, and the cache dir's "compiled" markers
* `tiers.py`   hybridize(compile="tiered"), the default: the NumPy reference tier while a
               background process compiles the final tier into the caches, then a switch
               (it imports none of the rest, nor Numba, until compiled code is there)
* `loops.py`   graphs with loops: compiled segments, and loop bodies compiled once
* `kernels/`   precompiled Numba kernels for everything that is not a fused loop

`STRAIGHTDOPE_DEBUG=1` prints the compile times of every graph, `=2` also the
fused steps and the memory plan, `=3` also the generated source.
"""
# Importing this package imports neither Numba nor the kernels: `tiers` must stay light
# (a first tiered call never pays Numba's import). The names below load `backend` (and
# with it Numba and the kernels) when first used.
from ..ops import reduce as _reduce

_FROM_BACKEND = ("STAGES", "Executable", "NumbaBackend")


def __getattr__(name):
    if name in _FROM_BACKEND:
        from . import backend
        return getattr(backend, name)
    if name == "CodegenError":
        from .emitting import CodegenError
        return CodegenError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _softmax_loops():
    from .kernels import softmax
    return softmax


# The loss ops' imperative one-pass loops, which ops/reduce.py (below the compiler) loads
# through this function once Numba is loaded; it imports the kernels only when called.
_reduce.COMPILED_LOOPS["softmax"] = _softmax_loops
