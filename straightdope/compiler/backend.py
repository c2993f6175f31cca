"""The Numba executor backend: the passes, in order, and what runs them per call.

    traced graph -> shapes -> (lower +) fuse -> plan memory -> generate source
                 -> on-disk cache / Numba compile -> run(inputs) -> outputs

`NumbaBackend().compile(graph)` returns an `Executable`. Its `stages` are the
objects each pass produced (print them, draw them with `.to_dot()`), its
`timings` the seconds each pass took and whether the compiled code came from a
cache. `run()` is the per-call path and is kept short: check the input shapes
(skipped with `static_shape`), get the arena (kept across calls with
`static_alloc`), call the compiled function.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict

import numpy as np

from ..graph import Graph, annotate
from . import cache
from .codegen import generate
from .fuse import fuse
from .lower import lower
from .memory import plan_memory

STAGES = ("traced", "shapes", "fused", "memory", "source")


def debug_level() -> int:
    try:
        return int(os.environ.get("STRAIGHTDOPE_DEBUG", "0") or 0)
    except ValueError:
        return 0


def _strip(graph: Graph) -> Graph:
    traced = graph.copy()
    for n in traced.nodes:
        n.shapes = n.dtypes = None
    return traced


class Bound:
    """A compiled graph planned for one set of input shapes."""

    def __init__(self, fn, meta, arena_specs, in_shapes, out_plan, static_alloc):
        self.fn, self.meta, self.arena_specs = fn, meta, arena_specs
        self.in_shapes = in_shapes
        self.out_plan = out_plan            # None when outputs need no fixing up
        self._per_thread = threading.local() if static_alloc else None

    @property
    def arenas(self):
        """With static_alloc, this thread's arenas, kept across its calls; else None (a
        fresh arena per call). Each thread has its own: the compiled code runs without
        the GIL, and two threads sharing an arena would overwrite each other's values."""
        if self._per_thread is None:
            return None
        arenas = getattr(self._per_thread, "arenas", None)
        if arenas is None:
            arenas = self._per_thread.arenas = self.new_arenas()
        return arenas

    def new_arenas(self):
        return [np.empty(n, dt) for dt, n in self.arena_specs]


class Executable:
    """A graph compiled by `NumbaBackend`: `run(list of arrays) -> list of arrays`.

    The arrays `run` returns are new on every call and share memory with nothing (not
    the arena, not the inputs, not each other: outputs that would be views or repeats
    are copied), so callers may keep them: `fresh_outputs`."""
    fresh_outputs = True

    def __init__(self, graph: Graph, is_train=False, static_alloc=False, static_shape=False):
        if any(n.shapes is None or n.dtypes is None for n in graph.nodes):
            raise ValueError("NumbaBackend.compile needs an annotated graph "
                             "(straightdope.graph.annotate)")
        self.graph = graph
        self.is_train, self.static_alloc, self.static_shape = is_train, static_alloc, static_shape
        self.traced = _strip(graph)
        self._vars = [n for n in graph.nodes if n.is_var]
        self._dtypes = {n.name: np.dtype(n.dtypes[0]) for n in self._vars}
        self.stages: OrderedDict = OrderedDict()
        self.timings: dict = {}
        shapes = tuple(tuple(n.shapes[0]) for n in self._vars)
        self._first_shapes = shapes
        self._lock = threading.Lock()     # threads meeting a new shape plan it once
        self._bounds = {shapes: self._build(shapes)}
        self._bound = self._bounds[shapes]

    # ------------------------------------------------------------ compiling
    def _build(self, in_shapes) -> Bound:
        t = {}
        start = time.perf_counter()
        known = {n.name: s for n, s in zip(self._vars, in_shapes)}
        shaped = annotate(self.traced, known, self._dtypes)
        t["shapes"] = time.perf_counter() - start

        mark = time.perf_counter()
        lowered, rewrites = lower(shaped, self.is_train)
        fused = fuse(lowered, rewrites)
        t["fuse"] = time.perf_counter() - mark

        mark = time.perf_counter()
        plan = plan_memory(fused, shaped)
        t["plan"] = time.perf_counter() - mark

        mark = time.perf_counter()
        source, meta = generate(fused, plan, self.is_train)
        t["codegen"] = time.perf_counter() - mark

        mark = time.perf_counter()
        in_memory = False
        module, info = cache.load(source)
        in_memory = info["memory"]
        fn = module.run_graph
        arena_specs = [(np.dtype(d), plan.arena_sizes.get(d, 0))
                       for d in _arena_dtypes(source)]
        examples = [np.empty((0,) * len(s), self._dtypes[n.name])
                    for n, s in zip(self._vars, in_shapes)]
        examples += [np.empty(0, dt) for dt, _ in arena_specs] + [np.empty(0, np.int64)]
        compiled = cache.compile_function(fn, examples)
        if any(n.op.is_random for n in lowered.op_nodes):
            from .kernels import random as _random
            _random.ensure_seeded()
        t["numba_compile"] = time.perf_counter() - mark
        t["cache_hit"] = bool(in_memory or compiled["cache_hit"])
        t["cache"] = "memory" if in_memory else ("disk" if compiled["cache_hit"] else
                                                 ("off" if not compiled["jit"] else "miss"))
        t["cache_file"] = info["path"]
        t["cache_file_status"] = info["file"]      # reused | written | rebuilt (was damaged)
        t["total"] = time.perf_counter() - start

        if in_shapes == self._first_shapes:
            shaped = self.graph      # the annotated graph we were given: that very object
        self.stages = OrderedDict([("traced", self.traced), ("shapes", shaped),
                                   ("fused", fused), ("memory", plan), ("source", source)])
        self.timings = t
        bound = Bound(fn, np.array(meta, dtype=np.int64), arena_specs, in_shapes,
                      _output_plan(lowered), self.static_alloc)
        self._debug()
        return bound

    def _debug(self):
        level = debug_level()
        if level <= 0:
            return
        t = self.timings
        print(f"[straightdope] compiled {len(self.graph.op_nodes)} ops: "
              + " ".join(f"{k}={t[k] * 1e3:.1f}ms" for k in
                         ("shapes", "fuse", "plan", "codegen", "numba_compile"))
              + f" cache={t['cache']}", file=sys.stderr)
        if level >= 2:
            print(self.stages["fused"], file=sys.stderr)
            print(self.stages["memory"], file=sys.stderr)
        if level >= 3:
            print(self.stages["source"], file=sys.stderr)

    # --------------------------------------------------------------- running
    def run(self, inputs: list) -> list:
        b = self._bound
        if not self.static_shape:
            shapes = tuple([x.shape for x in inputs])
            if shapes != b.in_shapes:
                b = self._rebind(shapes)
        arenas = b.arenas if self.static_alloc else b.new_arenas()
        try:
            outs = b.fn(*inputs, *arenas, b.meta)
        except TypeError:
            # not the compiled types (non-contiguous, read-only, another dtype): convert
            if not hasattr(b.fn, "overloads"):
                raise
            inputs = [np.array(x, dtype=self._dtypes[n.name], order="C", copy=True)
                      for x, n in zip(inputs, self._vars)]
            outs = b.fn(*inputs, *arenas, b.meta)
        if b.out_plan is None:
            return list(outs)
        return _finish(b.out_plan, outs, inputs)

    def _rebind(self, shapes):
        if len(shapes) != len(self._vars):
            raise ValueError(f"this graph takes {len(self._vars)} inputs "
                             f"{[n.name for n in self._vars]}, got {len(shapes)}")
        with self._lock:
            b = self._bounds.get(shapes)
            if b is None:
                b = self._bounds[shapes] = self._build(shapes)
        self._bound = b
        return b


def _arena_dtypes(source: str) -> list:
    """The arenas the generated function takes, in order (read from its signature)."""
    line = next(ln for ln in source.splitlines() if ln.startswith("def run_graph("))
    return [a.strip()[2:] for a in line[len("def run_graph("):-2].split(",")
            if a.strip().startswith("A_")]


def _output_plan(graph: Graph):
    """How to turn the function's returned tuple into the graph's outputs, or None
    when it already is: outputs that are inputs or repeats are copies, 0-d ones are
    reshaped."""
    plan, seen, returned = [], {}, 0
    simple = True
    for e in graph.outputs:
        e = tuple(e)
        node = graph.nodes[e[0]]
        if node.is_var:
            plan.append(("input", [n.id for n in graph.nodes if n.is_var].index(e[0]), None))
            simple = False
        elif e in seen:
            plan.append(("copy", seen[e], None))
            simple = False
        else:
            seen[e] = len(plan)
            shape = tuple(node.shapes[e[1]])
            plan.append(("ret", returned, shape if len(shape) == 0 else None))
            simple = simple and len(shape) > 0
            returned += 1
    return None if simple else plan


def _finish(plan, outs, inputs):
    results = []
    for kind, index, shape in plan:
        if kind == "ret":
            r = outs[index]
            results.append(r.reshape(shape) if shape is not None else r)
        elif kind == "input":
            results.append(np.array(inputs[index], copy=True))
        else:
            results.append(results[index].copy())
    return results


class NumbaBackend:
    """`compile(graph, ...)` -> Executable (see the module docstring)."""
    name = "numba"

    def compile(self, graph: Graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False) -> Executable:
        from . import loops
        if loops.needs_loops(graph):     # loop nodes: compiled segments + compiled bodies
            return loops.LoopExecutable(graph, self, is_train, static_alloc, static_shape)
        return Executable(graph, is_train, static_alloc, static_shape)
