"""The Numba executor backend: the passes, in order, and what runs them per call.

    traced graph -> shapes -> (lower +) fuse -> plan memory -> generate source
                 -> on-disk cache / Numba compile -> run(inputs) -> outputs

`NumbaBackend().compile(graph)` returns an executable for inputs of any shape
(`graph.AnyShape`): for each input shapes it meets, one `Executable` made from the
graph annotated for them. An Executable's `stages` are the objects each pass
produced (print them, draw them with `.to_dot()`), its `timings` the seconds each
pass took and whether the compiled code came from a cache. `run()` is the per-call
path and is kept short: get the arena (kept across calls with `static_alloc`), call
the compiled function.

Two tiers share every pass up to the source (`tier=`):

* "graph": ONE `@njit` function for the whole graph. Fastest per call (no Python
  between steps), but Numba types and LLVM optimises the whole function, kernels
  included, so its compile time grows with every layer.
* "steps": the same steps called from a plain Python `run_graph`: the kernels are
  compiled once per machine, each *distinct* fused loop once (see `codegen.Loops`).
  Compiling costs about a second whatever the depth; each step costs a few
  microseconds of Python per call, which only small graphs notice.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict

import numpy as np

from .. import config
from ..graph import AnyShape, Graph
from . import cache
from .codegen import generate
from .dtypes import dtypes_without_arithmetic
from .fuse import fuse
from .lower import lower
from .memory import plan_memory
from . import kernels



def _seed_numba(seed_state):
    kernels.random.seed(seed_state)


def _register_seed_hook():
    """`mx.random.seed(s)` seeds Numba's generator too (compiled Dropout)."""
    from .. import random as _sd_random
    if _seed_numba not in _sd_random._SEED_HOOKS:
        _sd_random._SEED_HOOKS.append(_seed_numba)


_register_seed_hook()


# ------------------------------------------------ the passes: (executable, stages so far)
def _traced(ex, stages):
    """The graph as traced: the given graph without its shapes and dtypes."""
    traced = ex.graph.copy()
    for n in traced.nodes:
        n.shapes = n.dtypes = None
    return traced


def _shapes(ex, stages):
    """Shapes and dtypes on every value: the given graph itself (its caller, CachedOp or
    graph.AnyShape, annotated it for these input shapes)."""
    return ex.graph


def _fused(ex, stages):
    """Lowered to simpler ops, elementwise chains grouped into loops (lower.py, fuse.py)."""
    lowered, rewrites = lower(stages["shapes"], ex.is_train)
    return fuse(lowered, rewrites)


def _memory(ex, stages):
    """Where every value lives: arena offsets, buffers reused, in place (memory.py)."""
    return plan_memory(stages["fused"], stages["shapes"])


def _source(ex, stages):
    """The generated source, with its record (`codegen.Generated`: kernel calls, arenas,
    the sizes it reads, the steps tier's distinct loops)."""
    return generate(stages["fused"], stages["memory"], ex.is_train,
                    loops_apart=ex.tier == "steps")


# The pipeline, in order: (the stage a pass produces, the timing key of that pass, the
# pass). This one list runs the passes (Executable._passes) and names the stages, the
# timings, STRAIGHTDOPE_DEBUG's output and the tabs of widgets.graph_view;
# "numba_compile" is the last phase (loading or compiling the source).
PIPELINE = (("traced", None, _traced),
            ("shapes", "shapes", _shapes),
            ("fused", "fuse", _fused),
            ("memory", "plan", _memory),
            ("source", "codegen", _source))
STAGES = tuple(stage for stage, _, _ in PIPELINE)
PHASES = tuple(key for _, key, _ in PIPELINE if key) + ("numba_compile",)
TIERS = ("graph", "steps")
# Up to this many ops a graph gets the whole-graph tier: it compiles in a second or two
# and small graphs are where the steps tier's Python between steps would show.
GRAPH_TIER_MAX_OPS = 32


# Ops whose kernels live in kernels/conv.py: a whole-graph function that calls them has
# Numba and LLVM compile the convolutions (im2col, Winograd) into it again, seconds per
# graph (LeNet's training step: 9.4 s against 1.15 s as steps), while the steps tier
# calls them precompiled and costs LeNet ~4% per call.
CONV_OPS = frozenset(name for name, emit in kernels.EMITTERS.items()
                     if emit.__module__ == kernels.conv.__name__)


def choose_tier(graph: Graph) -> str:
    """'graph' for small graphs without convolutions, 'steps' for the others (see the
    module docstring and CONV_OPS)."""
    if len(graph.op_nodes) > GRAPH_TIER_MAX_OPS or any(
            n.op.name in CONV_OPS for n in graph.op_nodes):
        return "steps"
    return "graph"


class Executable:
    """A graph compiled by `NumbaBackend` for its input shapes: `run(arrays) -> arrays`.

    Other input shapes are `AnyShape`'s business (graph/specialize.py): it makes one
    Executable per input shapes. The arrays `run` returns are new on every call and
    share memory with nothing (not the arena, not the inputs, not each other: outputs
    that would be views or repeats are copied), so callers may keep them:
    `fresh_outputs`."""
    fresh_outputs = True

    def __init__(self, graph: Graph, is_train=False, static_alloc=False, tier="auto",
                 compile=True):
        """compile=False runs the passes only (`stages`, `timings`, `job()`); `compile()`
        then has Numba compile (or load) what they wrote."""
        if any(n.shapes is None or n.dtypes is None for n in graph.nodes):
            raise ValueError("NumbaBackend.compile needs an annotated graph "
                             "(straightdope.graph.annotate)")
        tier = choose_tier(graph) if tier == "auto" else tier
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}: choose one of {TIERS}")
        self.graph, self.tier = graph, tier
        self.is_train, self.static_alloc = is_train, static_alloc
        self._input_dtypes = [np.dtype(n.dtypes[0]) for n in graph.nodes if n.is_var]
        self._in_shapes = [tuple(n.shapes[0]) for n in graph.nodes if n.is_var]
        self.fn = None                     # the compiled run_graph, after compile()
        self._per_thread = threading.local() if static_alloc else None
        self.stages, self.timings = self._passes()
        if compile:
            self.compile()

    # ------------------------------------------------------------ compiling
    def _passes(self) -> tuple[dict, dict]:
        """Run the pipeline up to the source: (stages, timings)."""
        stages, t = OrderedDict(), {}
        for stage, key, run in PIPELINE:
            mark = time.perf_counter()
            stages[stage] = run(self, stages)
            if key:
                t[key] = time.perf_counter() - mark
        t["shapes"] += self.graph.annotate_seconds      # inferred by the caller: see _shapes
        t["distinct_loops"] = len(stages["source"].loops)  # (steps tier; 0 in graph tier)
        return stages, t

    def job(self) -> list:
        """What Numba has to compile (or load) for this tier, as (function, example
        arguments) pairs: the whole-graph function, or the steps tier's loops and the
        kernels it calls. A worker process compiles them into the caches (tiers.py)."""
        source = self.stages["source"]
        if self.tier == "graph":
            return [(("module", source, "run_graph"), self._examples(source))]
        items = [(("kernel", kernel.py_func.__module__.rsplit(".", 1)[1], kernel.__name__),
                  args) for kernel, args in _kernel_calls(source.calls, self._inputs())]
        for text, signatures in source.loops:
            for dtypes in signatures:
                items.append((("module", text, "loop"), _loop_examples(dtypes)))
        return items

    def placements(self) -> list:
        """(lowered graph, op node, "fused" | "kernel" | "view"): how each op runs,
        read from the plan (the fusion pass's steps). FullyConnected and the other
        "lowered" ops are not among them: the lowering pass replaced them."""
        fused = self.stages["fused"]
        return [(fused.graph, fused.graph.nodes[n], step.kind)
                for step in fused.steps for n in step.nodes]

    def missing(self) -> list:
        """The items of `job()` that are not compiled in the caches yet."""
        return cache.missing(self.job())

    def _inputs(self) -> list:
        return [np.empty((0,) * len(s), dt) for s, dt in zip(self._in_shapes,
                                                               self._input_dtypes)]

    def _examples(self, source) -> list:
        """Empty arrays with the types run_graph is compiled for."""
        return self._inputs() + [np.empty(0, d) for d in source.arenas] \
            + [np.empty(0, np.int64)]

    def compile(self):
        """The last phase: Numba compiles the source (or loads it from a cache)."""
        start = time.perf_counter()
        cache.preload_blas()            # before any compiled np.dot runs: see there
        t, source = self.timings, self.stages["source"]
        meta, loop_sources = source.meta, source.loops
        lowered = self.stages["fused"].graph
        self.arena_specs = [(np.dtype(d), self.stages["memory"].arena_sizes.get(d, 0))
                            for d in source.arenas]
        if self.tier == "graph":
            module, info = cache.load(source)
            fn, loops = module.run_graph, None
            compiled = cache.compile_function(fn, self._examples(source))
            meta = np.array(meta, dtype=np.int64)
        else:
            fn, loops, info, compiled = self._compile_steps(source, loop_sources)
            meta = list(meta)           # read from Python: a list is faster than an array
        if any(n.op.is_random for n in lowered.op_nodes):
            from .kernels import random as _random
            _random.ensure_seeded()
        t["numba_compile"] = time.perf_counter() - start
        in_memory = info["memory"]
        t["cache_hit"] = bool(in_memory or compiled["cache_hit"])
        t["cache"] = "memory" if in_memory else ("disk" if compiled["cache_hit"] else
                                                 ("off" if not compiled["jit"] else "miss"))
        t["cache_file"] = info["path"]
        t["cache_file_status"] = info["file"]      # reused | written | rebuilt (was damaged)
        t["total"] = sum(t[k] for k in PHASES)
        t["tier"] = self.tier
        self.meta, self.loops = meta, loops    # loops: the steps tier's functions (else None)
        self.out_plan = _output_plan(lowered)  # None when outputs need no fixing up
        self.fn = fn
        if self.tier == choose_tier(self.graph):     # what a tiered first call looks for
            from . import ready
            ready.mark_ready(ready.job_key(ready.describe(self.graph, self.is_train)))
        self._debug()

    def _compile_steps(self, source, loop_sources):
        """run_graph as plain Python, and its loops, each compiled (or loaded) once; the
        kernels it calls are loaded now too (from Numba's cache, without the half second
        of Numba start-up that a first call from Python would cost: cache._fast_load)."""
        namespace: dict = {}
        exec(compile(source, "<straightdope steps>", "exec"), namespace)  # our own text
        loops, hits, memory, compiled = [], [], [], False
        for kernel, examples in _kernel_calls(source.calls, self._inputs()):
            hits.append(cache.compile_function(kernel, examples, freeze=False)["cache_hit"])
        for text, signatures in loop_sources:
            module, info = cache.load(text)
            memory.append(info["memory"])
            for dtypes in signatures:
                result = cache.compile_function(module.loop, _loop_examples(dtypes),
                                                freeze=False)
                hits.append(result["cache_hit"])
                compiled = compiled or result["jit"]
            loops.append(module.loop)
        info = {"memory": bool(memory) and all(memory), "path": None,
                "file": f"{len(loops)} loop modules"}
        return namespace["run_graph"], tuple(loops), info, \
            {"cache_hit": all(hits), "jit": compiled}

    def _debug(self):
        level = config.debug_level()
        if level <= 0:
            return
        t = self.timings
        print(f"[straightdope] compiled {len(self.graph.op_nodes)} ops ({self.tier} tier): "
              + " ".join(f"{k}={t[k] * 1e3:.1f}ms" for k in PHASES)
              + f" cache={t['cache']}", file=sys.stderr)
        if level >= 2:
            print(self.stages["fused"], file=sys.stderr)
            print(self.stages["memory"], file=sys.stderr)
        if level >= 3:
            print(self.stages["source"], file=sys.stderr)

    # --------------------------------------------------------------- running
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

    def _after_inputs(self) -> tuple:
        """run_graph's arguments after the inputs: the arenas, then `meta`. With
        static_alloc made once per thread and kept (`run` finds them there), else new."""
        if self._per_thread is None:
            return (*self.new_arenas(), self.meta)
        after = self._per_thread.after_inputs = (*self.arenas, self.meta)
        return after

    def run(self, inputs: list) -> list:
        # the arguments after the inputs, as this thread's last call passed them (one
        # tuple, looked up once: this runs on every call of a hybridized block)
        after = getattr(self._per_thread, "after_inputs", None) or self._after_inputs()
        if self.loops is not None:
            return self._run_steps(inputs, after)
        try:
            outs = self.fn(*inputs, *after)
        except TypeError:
            # not the compiled types (non-contiguous, read-only, another dtype): convert
            if not hasattr(self.fn, "overloads"):
                raise
            inputs = [np.array(x, dtype=dt, order="C", copy=True)
                      for x, dt in zip(inputs, self._input_dtypes)]
            outs = self.fn(*inputs, *after)
        if self.out_plan is None:
            return list(outs)
        return _finish(self.out_plan, outs, inputs)

    def _run_steps(self, inputs, after):
        # the kernels take C-contiguous arrays of the compiled dtypes: convert others
        inputs = [x if x.flags.c_contiguous and x.flags.writeable and x.dtype == dt
                  else np.array(x, dtype=dt, order="C", copy=True)
                  for x, dt in zip(inputs, self._input_dtypes)]
        outs = self.fn(*inputs, *after, self.loops)
        if self.out_plan is None:
            return list(outs)
        return _finish(self.out_plan, outs, inputs)


def _loop_examples(dtypes) -> list:
    """Example arguments of a loop function: arrays of these dtypes, 'int' for integers."""
    return [0 if d == "int" else np.empty(0, d) for d in dtypes]


def call_examples(call, inputs: list, integer=int) -> list:
    """Example arguments of one recorded kernel call (`codegen.KernelCall`): input K is
    `inputs[K]`, a flag `integer(n)` (the whole-graph tier's Numba types it as a
    constant: the warm-up passes `warmup.Literal`), the rest empty arrays and zeros."""
    args = []
    for kind, *what in call.args:
        if kind == "input":
            args.append(inputs[what[0]])
        elif kind == "array":
            args.append(np.empty(0, what[0]))
        elif kind == "flag":
            args.append(integer(what[0]))
        elif kind == "tuple":
            args.append((0,) * what[0])
        else:
            args.append(0.0 if kind == "float" else 0)
    return args


def _kernel_calls(calls, inputs: list) -> list:
    """(kernel, example arguments) for every distinct kernel call a steps-tier source
    makes (its record's `calls`). The `k_util` helpers are NumPy there
    (`util.in_python`), not kernels."""
    import importlib
    seen, found = set(), []
    for call in calls:
        args = call_examples(call, inputs)
        key = (call.module, call.func, tuple(_kind(a) for a in args))
        if call.module != "util" and key not in seen:
            seen.add(key)
            module = importlib.import_module(f"{__package__}.kernels.{call.module}")
            found.append((getattr(module, call.func), args))
    return found


def _kind(arg) -> tuple:
    """What Numba's type of an example argument depends on (cheaper than numba.typeof)."""
    if isinstance(arg, np.ndarray):
        return arg.dtype.str, arg.ndim
    return type(arg).__name__, len(arg) if isinstance(arg, tuple) else 0


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


def _reference_for(graph: Graph, is_train: bool, dtypes: list):
    """The NumPy executor for a graph Numba cannot compile, with a warning that says why."""
    import warnings
    from ..graph.interpret import ReferenceExecutable
    names = " and ".join(dtypes)
    warnings.warn(f"this graph has {names} values and Numba has no {names} arithmetic, so "
                  f"it runs on the NumPy executor (the speed of imperative code). Cast the "
                  f"net and its inputs to float32 to compile it (net.cast('float32')), or "
                  f"hybridize(executor='numpy') to choose the NumPy executor outright.",
                  RuntimeWarning, stacklevel=2)
    executable = ReferenceExecutable(graph, is_train)
    executable.tier = "reference"       # what net._cached_op.stats() shows
    return executable


class NumbaBackend:
    """`compile(annotated graph, ...)` -> an executable for inputs of any shape
    (`graph.AnyShape`): per input shapes, one of the executables below."""
    name = "numba"

    def compile(self, graph: Graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False, tier: str = "auto"):
        """tier: 'graph', 'steps' or 'auto' (by the graph's size: `choose_tier`).
        (`tiers.TieredBackend` is the same with the reference tier first.)"""
        return AnyShape(graph, lambda shaped: self.for_shapes(shaped, is_train, static_alloc,
                                                              tier), static_shape)

    def for_shapes(self, graph: Graph, is_train=False, static_alloc=False, tier="auto",
                   compile=True):
        """The executable for the input shapes `graph` is annotated with (compile=False:
        planned only, see `Executable`)."""
        from . import loops
        odd = dtypes_without_arithmetic(graph)
        if odd:         # float16: run it rather than refuse it, and say so
            return _reference_for(graph, is_train, odd)
        if loops.needs_loops(graph):     # loop nodes: compiled segments + compiled bodies
            return loops.LoopExecutable(graph, self, is_train, static_alloc, compile)
        return Executable(graph, is_train, static_alloc, tier, compile)

    def without_loops(self, graph: Graph, is_train=False, static_alloc=False, compile=True):
        """The Executable of a graph without loop nodes (a segment of a LoopExecutable:
        loops.py asks here, and so imports nothing of this module)."""
        return Executable(graph, is_train, static_alloc, "auto", compile)
