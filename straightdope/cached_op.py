"""CachedOp: a traced graph, compiled once per signature, called like a function.

This is what a hybridized block runs instead of its Python code. It appears on
the autograd tape as *one* node: its forward is the compiled forward graph
(which also hands back the values the backward needs) and its backward is the
compiled gradient graph from `symbol.autodiff`.

The executor that compiles graphs is pluggable: the Numba code generator in
`straightdope.compiler` by default, or the NumPy reference interpreter with
`STRAIGHTDOPE_EXECUTOR=numpy`.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from . import autograd, config
from .ndarray import NDArray
from .graph import Graph, ReferenceBackend, annotate, differentiate
from .ops import get_op
from .ops.registry import is_complete
from .symbol.symbol import Group, Symbol


def get_backend(name: str | None = None, compile_mode: str = "sync"):
    """The executor backend: `name`, else $STRAIGHTDOPE_EXECUTOR, else numba; for numba
    with compile_mode 'tiered', the reference tier first while it compiles
    (compiler/tiers.py, which imports Numba only once compiled code is there)."""
    if config.executor(name) == "vm":
        from .compiler.vm import VMBackend
        return VMBackend()
    if config.executor(name) == "numba":
        if compile_mode == "tiered":
            from .compiler.tiers import TieredBackend
            return TieredBackend()
        from .compiler import NumbaBackend
        return NumbaBackend()
    return ReferenceBackend()


def prepare_backend(name=None, compile_mode=None):
    """What `hybridize()` does ahead of the first call: a tiered Numba backend loads the
    VM now if it is compiled on this machine (compiler/tiers.prepare), so that the
    first call runs compiled code without paying Numba's import."""
    if (name is None or isinstance(name, str)) and config.executor(name) == "numba" \
            and config.compile_mode(compile_mode) == "tiered":
        from .compiler.tiers import prepare
        prepare()


def _backend_for(graph, backend):
    """`backend`, or the NumPy reference interpreter for a graph with a size that only
    running it decides (after boolean_mask): compiled code is planned for known sizes."""
    if all(is_complete(s) for n in graph.nodes for s in n.shapes):
        return backend
    return ReferenceBackend()


class _CompiledOnFirstRun:
    """A backward graph some of whose input sizes only the forward's run decides (an op
    whose output shape depends on values, boolean_mask): compiled for the shapes of the
    values its first run gets; an executable for any shape after that (graph.AnyShape)."""

    def __init__(self, compile_for, names):
        self._compile_for, self._names, self._executable = compile_for, names, None

    def run(self, values):
        if self._executable is None:
            self._executable = self._compile_for(
                {n: tuple(v.shape) for n, v in zip(self._names, values)})
        return self._executable.run(values)

    def __getattr__(self, name):        # timings, stages, ... of the compiled executable
        if name.startswith("_") or self._executable is None:
            raise AttributeError(name)
        return getattr(self._executable, name)


class Plan:
    """What is compiled for one signature: the input `dtypes`, `is_train` and `wrt` (the
    inputs that get gradients; None for a forward-only plan). `forward` (and `backward`)
    are executables for inputs of any shape (`graph.AnyShape`: they specialise for each
    new input shape themselves); `shapes` are the input shapes of the first call, and
    `seconds` what compiling for them took."""

    def __init__(self, forward, backward=None, diff=None):
        self.forward, self.backward, self.diff = forward, backward, diff
        self.shapes, self.dtypes, self.is_train, self.wrt, self.seconds = {}, {}, False, None, 0.0
        self.backward_take = None       # per backward input: where in heads + saved + inputs
        self.wrt_index = None           # per backward output: its index in input_names

    def __repr__(self):
        kind = "forward+backward" if self.wrt else "forward"
        return f"<Plan {kind} {self.shapes} train={self.is_train} {self.seconds:.2f}s>"


class CachedOp:
    def __init__(self, symbol: Symbol, data_names, backend=None, static_alloc=False,
                 static_shape=False, compile=None, inline_limit=2, output_type=NDArray):
        """output_type: the class of the arrays a call returns (NDArray, or mx.np.ndarray
        for a graph traced on np Symbols), made as that class at once."""
        self.symbol, self.output_type = symbol, output_type
        self.compile_mode = config.compile_mode(compile)
        self.data_names = list(data_names)
        self.backend = backend if backend is not None and not isinstance(backend, str) \
            else get_backend(backend, self.compile_mode)
        if static_shape and not static_alloc:
            raise ValueError("static_shape=True needs static_alloc=True (as in MXNet)")
        self.static_alloc, self.static_shape = static_alloc, static_shape
        # Ops such as BatchNorm return new running statistics: extra outputs, written back.
        self._updates = []
        for node in symbol.walk():
            if node.op is not None:
                for out_index, in_index in node.op.aux_writeback.items():
                    child, _ = node.inputs[in_index]
                    if child.is_var:
                        self._updates.append(((node, out_index), child.name))
        self.extra = Group([Symbol([e]) for e, _ in self._updates]) if self._updates else None
        self.full = Group([symbol] + ([self.extra] if self.extra is not None else []))
        self.num_visible = len(symbol)
        # The order every compiled graph takes its inputs in (a Graph's input_names are
        # its variables in this same walk order).
        self.input_names = self.full.list_inputs()
        self._update_index = [self.input_names.index(name) for _, name in self._updates]
        self.recorded_as = self._recorded_as(inline_limit)
        self.plans: dict = {}
        self._compiling = threading.Lock()   # threads meeting a new signature compile it once
        self.calls = 0
        self._last_key_plan = (None, None)     # (key, plan) of the last call

    def _recorded_as(self, inline_limit):
        """What autograd.get_symbol shows for a recorded call (MXNet's inline_limit): this
        graph, whose ops it inlines, when it has at most `inline_limit` ops; else one
        `_CachedOp` node holding it (its inputs in `input_names` order)."""
        n_ops = sum(1 for node in self.symbol.walk() if node.op is not None)
        if n_ops <= inline_limit or self.symbol.list_inputs() != self.input_names:
            return self.symbol
        op, graph = get_op("_CachedOp"), Symbol(self.symbol.entries)  # np or not
        return op, op.parse_attrs({"num_outputs": len(graph), "subgraphs": (graph,)})

    @property
    def compiles(self) -> int:
        """Plans made so far, one per input signature *and* input shapes: each plan's
        forward executable specialises for every new shape (MXNet re-plans too)."""
        return sum(len(plan.forward.specializations) for plan in self.plans.values())

    # ----------------------------------------------------------- compiling
    def _graph(self, symbol, shapes, dtypes, names=()) -> Graph:
        """The Symbol as a Graph (converted once per signature), annotated."""
        return annotate(Graph.from_symbol(symbol, self.data_names + list(names)),
                        shapes, dtypes)

    def _compile(self, shapes, dtypes, is_train, wrt) -> Plan:
        kw = dict(static_alloc=self.static_alloc, static_shape=self.static_shape)
        if wrt is None:
            graph = self._graph(self.full, shapes, dtypes)
            plan = Plan(_backend_for(graph, self.backend).compile(graph, is_train=is_train, **kw))
        else:
            diff = differentiate(self.symbol, wrt, is_train, extra_outputs=self.extra)
            forward = self._graph(diff.forward, shapes, dtypes)
            backend = _backend_for(forward, self.backend)
            # the backward graph's other inputs: output gradients and saved values, whose
            # shapes and dtypes the forward graph knows (they change with the data's shape)
            per_call = diff.head_names + diff.saved_names
            outputs = forward.outputs[:self.num_visible] + forward.outputs[diff.num_outputs:]
            known = {**shapes, **{n: forward.shape_of(e) for n, e in zip(per_call, outputs)}}
            dtypes = {**dtypes, **{n: forward.dtype_of(e) for n, e in zip(per_call, outputs)}}

            def compile_backward(shapes):
                graph = self._graph(diff.backward, shapes, dtypes, per_call)
                return graph, backend.compile(graph, is_train=is_train, **kw)

            if all(map(is_complete, known.values())):
                graph, backward = compile_backward(known)
                names = graph.input_names
            else:   # a size known only when the forward runs (boolean_mask): then compile
                names = Graph.from_symbol(diff.backward, self.data_names + per_call).input_names
                backward = _CompiledOnFirstRun(lambda shapes: compile_backward(shapes)[1],
                                               names)
            plan = Plan(backend.compile(forward, is_train=is_train, **kw), backward, diff)
            plan.backward_take = self._backward_take(diff, names)
            plan.wrt_index = [self.input_names.index(n) for n in diff.wrt]
        return plan

    def _backward_take(self, diff, names) -> list:
        """Where each input of the backward graph comes from, in its order: a position
        in the list output gradients + saved values + this op's inputs."""
        heads, saved = diff.head_names, diff.saved_names
        return [heads.index(n) if n in heads else
                len(heads) + saved.index(n) if n in saved else
                len(heads) + len(saved) + self.input_names.index(n) for n in names]

    # ------------------------------------------------------------- calling
    def __call__(self, data, params: dict):
        """Run on NDArrays: `data` in data_names order, `params` by name."""
        by_name = dict(zip(self.data_names, data))
        by_name.update(params)
        try:
            arrays = [by_name[n] for n in self.input_names]
        except KeyError:
            missing = [n for n in self.input_names if n not in by_name]
            raise ValueError(f"the cached graph needs values for {missing}") from None
        return self.call(arrays)

    @property
    def last_plan(self) -> Plan | None:
        """The plan the last call ran (None before the first)."""
        return self._last_key_plan[1]

    def call(self, arrays):
        """Run on NDArrays given in `input_names` order.

        This runs on every call of a hybridized block, so it is kept short: the plan is
        found by the inputs' dtypes, the training flag and which inputs need gradients;
        the plan's executable looks at the shapes (graph.AnyShape)."""
        state = autograd._state
        is_train, wrt = state.training, None
        if state.recording:
            wrt = tuple([n for n, a in zip(self.input_names, arrays)
                         if autograd.needs_grad(a)]) or None
        try:
            data = [a._data for a in arrays]
        except AttributeError:
            missing = [n for n, a in zip(self.input_names, arrays) if a is None]
            raise ValueError(f"the cached graph needs values for {missing}, which have none "
                             f"(a Parameter that is not initialized?)") from None
        key = (tuple([d.dtype for d in data]), is_train, wrt)
        last_key, plan = self._last_key_plan     # usually the last call's (no hashing)
        if key != last_key:
            plan = self.plans.get(key)
            if plan is None:
                with self._compiling:
                    plan = self.plans.get(key) or self._new_plan(key, data, is_train, wrt)
            self._last_key_plan = (key, plan)
        self.calls += 1
        results = plan.forward.run(data)
        wrap, n = self.output_type, self.num_visible
        # (more results than outputs: new running statistics, values saved for backward)
        outputs = [wrap(np.asarray(r)) for r in (results if len(results) == n else results[:n])]
        if self._updates or wrt is not None:
            self._after_forward(plan, arrays, outputs, results, wrt)
        return outputs

    def _after_forward(self, plan, arrays, outputs, results, wrt):
        """Write new running statistics back; under record(), put one node on the tape."""
        n_main = self.num_visible + len(self._updates)
        for index, value in zip(self._update_index, results[self.num_visible:n_main]):
            arrays[index]._data[...] = value
        if wrt is not None:
            saved = list(results[n_main:])
            autograd.record_node(arrays, outputs, self._backward_fn(plan, arrays, saved),
                                 "CachedOp",
                                 fresh_grads=getattr(plan.backward, "fresh_outputs", False),
                                 op=self.recorded_as)

    def _new_plan(self, key, data, is_train, wrt):
        start = time.perf_counter()
        shapes = {n: d.shape for n, d in zip(self.input_names, data)}
        dtypes = {n: d.dtype for n, d in zip(self.input_names, data)}
        plan = self._compile(shapes, dtypes, is_train, None if wrt is None else list(wrt))
        plan.shapes, plan.dtypes, plan.is_train, plan.wrt = shapes, dtypes, is_train, wrt
        plan.seconds = time.perf_counter() - start
        self.plans[key] = plan
        return plan

    def _backward_fn(self, plan, arrays, saved):
        def backward(out_grads):
            pool = [g._data for g in out_grads] + saved + [a._data for a in arrays]
            values = [pool[k] for k in plan.backward_take]
            grads = [None] * len(arrays)
            for k, grad in zip(plan.wrt_index, plan.backward.run(values)):
                grads[k] = NDArray(grad)
            return grads
        return backward

    def stats(self) -> dict:
        """What ran and what is still compiling: calls, compiles, and per executable of
        the last plan its tier ('graph' or 'steps'), whether a better tier is pending,
        and the switches so far (call number, tier, seconds the worker took)."""
        out = {"calls": self.calls, "compiles": self.compiles, "mode": self.compile_mode}
        plan = self.last_plan
        for part in ("forward", "backward"):
            ex = getattr(plan, part, None) if plan is not None else None
            if ex is not None:
                ex = ex.current                 # the executable for the last shapes
                out[part] = {"tier": getattr(ex, "tier", getattr(self.backend, "name", None)),
                             "pending": getattr(ex, "pending", False),
                             "switches": list(getattr(ex, "switches", []))}
        return out
