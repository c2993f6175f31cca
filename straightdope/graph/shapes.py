"""Pass 1: shape and dtype inference over the graph.

One walk in topological order. Each op's `infer_shape` gets the shapes of its
inputs (None where unknown) and returns its output shapes *and* completed input
shapes: that is how a Dense layer's weight learns its shape (5, -1) -> (5, 3)
from the data on the first call (deferred initialisation).
"""
from __future__ import annotations

import ast

import numpy as np

from ..ops import OpError
from .ir import Graph


def _hint(node):
    """A variable's declared shape, if it is complete (0 or -1 mark unknown dims)."""
    text = node.var_attrs.get("__shape__")
    if not text:
        return None
    try:
        shape = tuple(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError):
        return None
    return shape if shape and all(isinstance(d, int) and d > 0 for d in shape) else None


def infer_shapes(graph: Graph, known: dict, partial: bool = False) -> dict:
    """Shapes of every value, keyed (node id, output index). With partial=False an unknown
    shape is an error that names the variables to provide."""
    shapes: dict = {}
    for node in graph.nodes:
        if node.is_var:
            shapes[(node.id, 0)] = tuple(known[node.name]) if node.name in known else _hint(node)
            continue
        ins = [shapes[e] for e in node.inputs]
        try:
            new_ins, outs = node.op.shapes(node.attrs, ins)
        except OpError as err:
            raise OpError(f"node '{node.name}': {err}") from None
        for entry, old, new in zip(node.inputs, ins, new_ins):
            if new is None:
                continue
            new = tuple(new)
            if old is not None and tuple(old) != new:
                raise OpError(f"node '{node.name}' ({node.op.name}): input "
                              f"'{graph.nodes[entry[0]].name}' has shape {tuple(old)} but "
                              f"must be {new}")
            shapes[tuple(entry)] = new
        for k, s in enumerate(outs):
            shapes[(node.id, k)] = None if s is None else tuple(s)
    if not partial:
        missing = [graph.nodes[i].name for i in graph.var_ids if shapes[(i, 0)] is None]
        if missing:
            raise OpError(f"cannot infer the shapes of {missing}: give their shapes "
                          f"(or the shapes of the data they depend on)")
    return shapes


def symbol_shapes(symbol, known: dict) -> tuple[dict, list]:
    """({variable name: shape}, [output shapes]) of a Symbol from some known input shapes,
    None where a shape stays unknown (what `Symbol.infer_shape_partial` reports).
    One walk learns most variables' shapes (a Dense weight's from the data); another
    walk runs only while some value is still unknown and the last one learnt a
    variable an earlier node may have needed."""
    graph = Graph.from_symbol(symbol)
    known = dict(known)
    while True:
        shapes = infer_shapes(graph, known, partial=True)
        by_name = {graph.nodes[i].name: shapes[(i, 0)] for i in graph.var_ids}
        learnt = {n: s for n, s in by_name.items() if s is not None and n not in known}
        if not learnt or all(s is not None for s in shapes.values()):
            return by_name, [shapes[entry] for entry in graph.outputs]
        known.update(learnt)


def annotate(graph: Graph, known: dict, dtypes: dict | None = None) -> Graph:
    """A copy of the graph with `shapes` and `dtypes` filled in on every node."""
    shapes = infer_shapes(graph, known)
    out = graph.copy()
    dtypes = dtypes or {}
    for node in out.nodes:
        node.shapes = [shapes[(node.id, k)] for k in range(node.num_outputs)]
        if node.is_var:
            dt = dtypes.get(node.name, node.var_attrs.get("__dtype__", "float32"))
            node.dtypes = [np.dtype(dt)]
        else:
            first = out.nodes[node.inputs[0][0]].dtypes[node.inputs[0][1]] if node.inputs \
                else np.dtype(node.attrs.get("dtype", "float32"))
            if node.op.name in ("Cast", "one_hot"):
                first = np.dtype(node.attrs["dtype"])
            elif node.op.name == "_cast_like":
                src = node.inputs[1]
                first = out.nodes[src[0]].dtypes[src[1]]
            elif node.op.name in ("Embedding", "pick") or (node.op.name == "_pick_grad"):
                src = node.inputs[1] if node.op.name == "Embedding" else node.inputs[0]
                first = out.nodes[src[0]].dtypes[src[1]]
            else:
                _check_one_dtype(out, node)
            node.dtypes = [first] * node.num_outputs
    return out


# Inputs that hold indices, labels or only a shape: they may have another dtype.
_NOT_COMPUTED_WITH = {"condition", "index", "indices", "label", "like"}


def _check_one_dtype(graph, node):
    """A compiled graph computes each op in one dtype, as MXNet does. Mixed inputs
    (uint8 images into a float32 Conv2D) would be silently truncated: say so instead."""
    names = node.op.input_names(node.attrs, len(node.inputs))
    dtypes = {name: graph.nodes[i].dtypes[k] for name, (i, k) in zip(names, node.inputs)
              if name not in _NOT_COMPUTED_WITH}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name}: {dt.name}" for name, dt in dtypes.items())
        raise OpError(
            f"node '{node.name}' ({node.op.name}): its inputs have different dtypes ({listed}). "
            f"A hybridized graph computes each op in one dtype: convert the data first, "
            f"e.g. x.astype('float32') (transforms.ToTensor() does it for images), or cast "
            f"the network with net.cast(dtype).")
