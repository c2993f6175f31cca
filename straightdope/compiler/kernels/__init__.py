"""Numba kernels for every op that is not a fused elementwise loop.

Each family module holds `@njit(cache=True)` kernels (compiled once per machine,
then loaded from Numba's cache) and, next to them, the *emitters*: small Python
functions that write the call into the generated source, e.g.

    def emit_dot(cg, node):          # cg: codegen.CodeGen
        a, b, y = cg.ref(node.inputs[0]), cg.ref(node.inputs[1]), cg.out(node)
        cg.call("blas", "matmul", a.args, b.args, y.args, m, k, n, ta, tb)

`EMITTERS` maps op names to emitters: the ops whose registry placement is
"kernel" (tests/test_compiler_ops.py checks the two agree). Elementwise ops are
written by `codegen.emit_fused` from their `scalar_expr` instead.
"""
from numba.core.registry import CPUDispatcher

from ..numba_internals import load_first
from . import (blas, conv, index, layout, norm, pool, random, reduce, softmax,  # noqa: F401
               update, util)

MODULES = (blas, conv, index, layout, norm, pool, random, reduce, softmax)

EMITTERS = {}
DIMS = {}          # op name -> rule(cg, node, k) giving an output's symbolic dims
for _module in MODULES:
    EMITTERS.update(_module.EMITTERS)
    DIMS.update(getattr(_module, "DIMS", {}))
# Kernels called from Python (steps-tier runs, imperative losses, optimizer updates) load
# from the cache without Numba's start-up when first called with new types (load_first).
for _module in MODULES + (update, util):
    for _kernel in vars(_module).values():
        if isinstance(_kernel, CPUDispatcher) and _kernel.py_func.__module__ == _module.__name__:
            load_first(_kernel)

