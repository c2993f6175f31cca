"""The reference executor: walk the graph and run each op's NumPy forward.

Obviously right, and every other executor is tested against it. It is also the tier
a hybridized net runs on while its compiled code is being built (compiler/tiers.py),
so it is kept lean: `ReferenceExecutable` turns the graph into a list of steps once
(each op's forward with its attributes, and numbered slots for its inputs and
outputs) and each call only walks that list. No NDArray wrappers, no tape, no
dispatch by op name: that is why it is faster than the same net run imperatively.
`STRAIGHTDOPE_EXECUTOR=numpy` makes hybridized blocks use it for good.
"""
from __future__ import annotations

from .ir import Graph
from .shapes import complete_attrs
from .specialize import AnyShape


def run_reference(graph: Graph, inputs: list, is_train: bool = False) -> list:
    """Evaluate `graph` on NumPy arrays given in `graph.input_names` order."""
    return ReferenceExecutable(graph, is_train).run(inputs)


def evaluate(symbol, inputs: list) -> list:
    """Evaluate a Symbol on NumPy arrays given in `symbol.list_inputs()` order (what
    `Symbol.eval` runs)."""
    graph = Graph.from_symbol(symbol)
    graph = complete_attrs(graph, {graph.nodes[i].name: x.shape
                                   for i, x in zip(graph.var_ids, inputs)})
    return run_reference(graph, inputs)


class ReferenceExecutable:
    """The reference executor for one graph: run(inputs) -> outputs.

    Values live in a list of slots: the graph's inputs first (in order), then every
    op's outputs. A step is (forward, attrs, keywords, input slots, output slots)."""

    def __init__(self, graph: Graph, is_train: bool):
        self.graph, self.is_train = graph, is_train
        self.stages = {"graph": graph}
        slots = {}
        for node in graph.nodes:
            if node.is_var:
                slots[(node.id, 0)] = len(slots)
        self.num_inputs = len(slots)
        read = {tuple(e) for node in graph.nodes for e in node.inputs}
        read.update(tuple(e) for e in graph.outputs)
        self.steps = []
        for node in graph.nodes:
            if node.is_var:
                continue
            ins = tuple(slots[tuple(e)] for e in node.inputs)
            outs = tuple(range(len(slots), len(slots) + node.num_outputs))
            slots.update({(node.id, k): s for k, s in enumerate(outs)})
            keywords = {"is_train": is_train} if node.op.needs_train_flag else {}
            if node.op.hidden_on_demand:     # a loop: save values only for a backward
                hidden = range(node.op.visible_count(node.attrs), node.num_outputs)
                keywords["keep_hidden"] = any((node.id, k) in read for k in hidden)
            self.steps.append((node.op.forward, node.attrs, keywords, ins, outs))
        self.num_slots = len(slots)
        self.outputs = [slots[tuple(e)] for e in graph.outputs]

    def run(self, inputs: list) -> list:
        values = list(inputs) + [None] * (self.num_slots - self.num_inputs)
        for forward, attrs, keywords, ins, outs in self.steps:
            result = forward(attrs, *[values[i] for i in ins], **keywords)
            if isinstance(result, tuple):
                for slot, value in zip(outs, result):
                    values[slot] = value
            else:
                values[outs[0]] = result
        return [values[s] for s in self.outputs]


class ReferenceBackend:
    """`compile(annotated graph)` -> an executable for inputs of any shape (`AnyShape`),
    as every backend returns: for each input shapes, the graph annotated for them."""
    name = "numpy"

    def compile(self, graph: Graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False) -> AnyShape:
        return AnyShape(graph, lambda shaped: ReferenceExecutable(shaped, is_train),
                        static_shape)
