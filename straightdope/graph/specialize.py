"""Shape specialisation, owned in one place: an executable that runs inputs of any shape.

A backend compiles an *annotated* graph (every value's shape and dtype known) into
an executable for exactly those input shapes. `AnyShape` is what `backend.compile`
returns: it keeps one such executable per input shapes it has met, in
`specializations`. Called with new shapes, it annotates the same graph again for
them (shape inference, nothing else is redone from the Symbol) and asks the backend
for one more. The Numba backend's generated code takes sizes as arguments, so a new
batch size usually plans again in milliseconds and reuses the machine code.

The caller (a `CachedOp`) therefore only decides what changes the *code*: dtypes,
training or not, which inputs get gradients. It never looks at shapes.
"""
from __future__ import annotations

import threading

from .ir import Graph
from .shapes import annotate


class AnyShape:
    """`run(inputs)` for inputs of any shapes: one shape-specific executable per shapes.

    make(annotated graph) -> an executable for its input shapes. With static_shape
    (MXNet's promise that the data's shape stays the same) only the inputs that are not
    parameters are looked at: a parameter cannot change its shape between calls."""

    def __init__(self, graph: Graph, make, static_shape: bool = False):
        self.make = make
        variables = [n for n in graph.nodes if n.is_var]
        self._names = [n.name for n in variables]
        self._dtypes = {n.name: n.dtypes[0] for n in variables}
        self._watched = [k for k, n in enumerate(variables) if n.kind not in ("param", "aux")] \
            if static_shape else None
        shapes = [tuple(n.shapes[0]) for n in variables]
        first = make(graph)
        self.specializations = {self._key(shapes): first}    # shapes -> executable
        self._last = (self._key(shapes), first)               # one tuple: read atomically
        self._lock = threading.Lock()    # threads meeting a new shape specialise it once

    def _key(self, shapes) -> tuple:
        if self._watched is None:
            return tuple(shapes)
        return tuple([shapes[k] for k in self._watched])

    def run(self, inputs: list) -> list:
        watched = self._watched
        if watched is None:
            key = tuple([x.shape for x in inputs])
        elif len(watched) == 1:             # static_shape and one data input: the usual
            key = (inputs[watched[0]].shape,)
        else:
            key = tuple([inputs[k].shape for k in watched])
        last_key, executable = self._last
        if key != last_key:
            executable = self._specialize(key, inputs)
        return executable.run(inputs)

    def _specialize(self, key, inputs):
        if len(inputs) != len(self._names):
            raise ValueError(f"this graph takes {len(self._names)} inputs {self._names}, "
                             f"got {len(inputs)}")
        with self._lock:
            executable = self.specializations.get(key)
            if executable is None:
                shapes = {name: x.shape for name, x in zip(self._names, inputs)}
                graph = annotate(self.graph, shapes, self._dtypes)
                executable = self.specializations[key] = self.make(graph)
            self._last = (key, executable)
        return executable

    # What the executable running now shows (its stages are those of its shapes).
    current = property(lambda self: self._last[1])
    graph = property(lambda self: self.current.graph)
    stages = property(lambda self: self.current.stages)
    timings = property(lambda self: getattr(self.current, "timings", {}))
    tier = property(lambda self: getattr(self.current, "tier", None))
    fresh_outputs = property(lambda self: getattr(self.current, "fresh_outputs", False))
    error = property(lambda self: getattr(self.current, "error", None))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current executable runs compiled code (a tiered compile,
        compiler/tiers.py); False on timeout."""
        wait = getattr(self.current, "wait", None)
        return True if wait is None else wait(timeout)
