"""CachedOp: a traced graph, compiled once per input signature, called like a function.

This is what a hybridized block runs instead of its Python code. It appears on
the autograd tape as *one* node: its forward is the compiled forward graph
(which also hands back the values the backward needs) and its backward is the
compiled gradient graph from `graph.autodiff`.

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
from .symbol.symbol import Group, Symbol


def get_backend(name: str | None = None):
    """The executor backend: `name`, else $STRAIGHTDOPE_EXECUTOR, else numba."""
    if config.executor(name) == "numba":
        try:
            from .compiler import NumbaBackend
        except ImportError:        # the compiler package is optional while it is being built
            return ReferenceBackend()
        return NumbaBackend()
    return ReferenceBackend()


class Plan:
    """Everything compiled for one input signature: `shapes` of the inputs, `is_train`,
    `wrt` (the inputs that get gradients; None for a forward-only plan), the compiled
    `forward` (and `backward`) executables and the compile `seconds`."""

    def __init__(self, forward, backward=None, diff=None, seconds=0.0):
        self.forward, self.backward, self.diff, self.seconds = forward, backward, diff, seconds
        self.shapes, self.is_train, self.wrt = {}, False, None
        self.backward_inputs = None     # names the backward graph takes, in order

    def __repr__(self):
        kind = "forward+backward" if self.wrt else "forward"
        return f"<Plan {kind} {self.shapes} train={self.is_train} {self.seconds:.2f}s>"


class CachedOp:
    def __init__(self, symbol: Symbol, data_names, backend=None, static_alloc=False,
                 static_shape=False, compile=None):
        self.symbol = symbol
        self.compile_mode = config.compile_mode(compile)
        self.data_names = list(data_names)
        self.backend = backend if backend is not None and not isinstance(backend, str) \
            else get_backend(backend)
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
        self.input_names = Graph.from_symbol(self.full).input_names
        self._update_index = [self.input_names.index(name) for _, name in self._updates]
        self._data_index = [i for i, n in enumerate(self.input_names) if n in self.data_names]
        self.plans: dict = {}
        self._compiling = threading.Lock()   # threads meeting a new signature compile it once
        self.calls = 0
        self.compiles = 0
        self.last_plan: Plan | None = None

    # ----------------------------------------------------------- compiling
    def _annotated(self, symbol, shapes, dtypes):
        return annotate(Graph.from_symbol(symbol, self.data_names), shapes, dtypes)

    def _compile(self, shapes, dtypes, is_train, wrt):
        start = time.perf_counter()
        kw = dict(static_alloc=self.static_alloc, static_shape=self.static_shape)
        if getattr(self.backend, "name", None) == "numba":
            kw["tiered"] = self.compile_mode == "tiered"
            if kw["tiered"]:
                from .compiler import tiers
                tiers.start()       # it imports Numba while we differentiate and plan
        if wrt is None:
            graph = self._annotated(self.full, shapes, dtypes)
            plan = Plan(self.backend.compile(graph, is_train=is_train, **kw))
        else:
            diff = differentiate(self.symbol, wrt, is_train, extra_outputs=self.extra)
            fwd_graph = self._annotated(diff.forward, shapes, dtypes)
            out_shapes = {}
            out_dtypes = {}
            for k, entry in enumerate(fwd_graph.outputs):
                if k < self.num_visible:
                    name = diff.head_names[k]
                elif k >= diff.num_outputs:
                    name = diff.saved_names[k - diff.num_outputs]
                else:
                    continue
                out_shapes[name] = fwd_graph.shape_of(entry)
                out_dtypes[name] = fwd_graph.dtype_of(entry)
            bwd_graph = self._annotated(diff.backward, {**shapes, **out_shapes},
                                        {**dtypes, **out_dtypes})
            plan = Plan(self.backend.compile(fwd_graph, is_train=is_train, **kw),
                        self.backend.compile(bwd_graph, is_train=is_train, **kw), diff)
        if kw.get("tiered"):             # a quick compile is waited for (compiler/tiers.py)
            from .compiler import tiers
            tiers.settle([plan.forward, plan.backward])
        plan.seconds = time.perf_counter() - start
        self.compiles += 1
        return plan

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

    def call(self, arrays):
        """Run on NDArrays given in `input_names` order.

        This runs on every call of a hybridized block, so it is kept short: the compiled
        plan is found by one tuple of the inputs' shapes and dtypes."""
        is_train = autograd._state.training
        wrt = None
        if autograd._state.recording:
            wrt = tuple([n for n, a in zip(self.input_names, arrays) if autograd.needs_grad(a)])
            wrt = wrt or None
        try:
            data = [a._data for a in arrays]
        except AttributeError:
            missing = [n for n, a in zip(self.input_names, arrays) if a is None]
            raise ValueError(f"the cached graph needs values for {missing}, which have none "
                             f"(a Parameter that is not initialized?)") from None
        if self.static_shape:
            # Shapes are fixed, so only the data inputs need checking: a Parameter cannot
            # change its shape (set_data and load_parameters refuse, cast() re-traces).
            key = (tuple([(data[i].shape, data[i].dtype) for i in self._data_index]),
                   is_train, wrt)
        else:
            key = (tuple([(d.shape, d.dtype) for d in data]), is_train, wrt)
        plan = self.plans.get(key)
        if plan is None:
            with self._compiling:
                plan = self.plans.get(key) or self._new_plan(key, arrays, is_train, wrt)
        self.last_plan = plan
        self.calls += 1
        results = plan.forward.run(data)
        outputs = [NDArray(np.asarray(r)) for r in results[:self.num_visible]]
        if self._updates or wrt is not None:
            self._after_forward(plan, arrays, outputs, results, wrt)
        return outputs

    def _after_forward(self, plan, arrays, outputs, results, wrt):
        """Write new running statistics back; under record(), put one node on the tape."""
        n_main = self.num_visible + len(self._updates)
        for index, value in zip(self._update_index, results[self.num_visible:n_main]):
            arrays[index]._data[...] = value
        if wrt is not None:
            saved = results[n_main:]
            autograd.record_node(arrays, outputs, self._backward_fn(plan, arrays, saved),
                                 "CachedOp",
                                 fresh_grads=getattr(plan.backward, "fresh_outputs", False))

    def _new_plan(self, key, arrays, is_train, wrt):
        shapes = {n: a.shape for n, a in zip(self.input_names, arrays)}
        dtypes = {n: a._data.dtype for n, a in zip(self.input_names, arrays)}
        plan = self.plans[key] = self._compile(shapes, dtypes, is_train,
                                               None if wrt is None else list(wrt))
        plan.shapes, plan.is_train, plan.wrt = shapes, is_train, wrt
        return plan

    def _backward_fn(self, plan, arrays, saved):
        diff = plan.diff
        by_name = dict(zip(self.input_names, arrays))
        if plan.backward_inputs is None:
            plan.backward_inputs = plan.backward.graph.input_names

        def backward(out_grads):
            feeds = dict(zip(diff.head_names, (g._data for g in out_grads)))
            feeds.update(zip(diff.saved_names, saved))
            values = []
            for name in plan.backward_inputs:
                values.append(feeds[name] if name in feeds else by_name[name]._data)
            grads = dict(zip(diff.wrt, plan.backward.run(values)))
            return [NDArray(grads[n]) if n in grads else None for n in self.input_names]
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
                out[part] = {"tier": getattr(ex, "tier", getattr(self.backend, "name", None)),
                             "pending": getattr(ex, "pending", False),
                             "switches": list(getattr(ex, "switches", []))}
        return out
