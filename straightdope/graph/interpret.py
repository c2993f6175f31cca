"""The reference executor: walk the graph and run each op's NumPy forward.

Slow but obviously right; every other executor is tested against it.
`STRAIGHTDOPE_EXECUTOR=numpy` makes hybridized blocks use it.
"""
from __future__ import annotations

from .ir import Graph
from .specialize import AnyShape


def run_reference(graph: Graph, inputs: list, is_train: bool = False) -> list:
    """Evaluate `graph` on NumPy arrays given in `graph.input_names` order."""
    values = {}
    feeds = iter(inputs)
    for node in graph.nodes:
        if node.is_var:
            values[(node.id, 0)] = next(feeds)
            continue
        results = node.op.run(node.attrs, [values[tuple(e)] for e in node.inputs], is_train)
        for k, r in enumerate(results):
            values[(node.id, k)] = r
    return [values[tuple(e)] for e in graph.outputs]


def evaluate(symbol, inputs: list) -> list:
    """Evaluate a Symbol on NumPy arrays given in `symbol.list_inputs()` order (what
    `Symbol.eval` runs)."""
    return run_reference(Graph.from_symbol(symbol), inputs)


class ReferenceExecutable:
    """The reference executor for one annotated graph: run(inputs) -> outputs."""

    def __init__(self, graph: Graph, is_train: bool):
        self.graph, self.is_train = graph, is_train
        self.stages = {"graph": graph}

    def run(self, inputs: list) -> list:
        return run_reference(self.graph, inputs, self.is_train)


class ReferenceBackend:
    """`compile(annotated graph)` -> an executable for inputs of any shape (`AnyShape`),
    as every backend returns: for each input shapes, the graph annotated for them."""
    name = "numpy"

    def compile(self, graph: Graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False) -> AnyShape:
        return AnyShape(graph, lambda shaped: ReferenceExecutable(shaped, is_train),
                        static_shape)
