"""Pass 1: shape and dtype inference over the graph.

A walk in topological order. Each op's `infer_shape` gets the shapes of its
inputs (None where unknown) and returns its output shapes *and* completed input
shapes: that is how a Dense layer's weight learns its shape (5, -1) -> (5, 3)
from the data on the first call (deferred initialisation).

Shapes may also be partly known, as MXNet allows (`var('a', shape=(0, 10))`:
dim 0 unknown, None here). Such shapes flow forwards and backwards: `a + b`
tells each input the other's dims, and an op's output shape, once a later op
knows it, fills its inputs' unknown dims.
"""
from __future__ import annotations

import ast

import time

import numpy as np

from ..ops import OpError
from ..ops.registry import is_complete, show_shape, unify
from .ir import Graph


def _hint(node):
    """A variable's declared shape; dims given as 0 or -1 are unknown (None)."""
    text = node.var_attrs.get("__shape__")
    if not text:
        return None
    try:
        shape = tuple(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError):
        return None
    if not shape or not all(isinstance(d, int) for d in shape):
        return None
    return tuple(d if d > 0 else None for d in shape)


def infer_shapes(graph: Graph, known: dict, partial: bool = False) -> dict:
    """Shapes of every value, keyed (node id, output index). A shape may be partly known
    (None for an unknown dim) or unknown (None). With partial=False a variable whose shape
    stays unknown is an error that names the variables to provide.

    Each op's rule fills in what it can, forwards (outputs from inputs) and backwards
    (inputs from outputs, such as a weight's shape from the data). When a rule learns
    something an earlier node could use, the walk runs again, until nothing changes."""
    shapes: dict = {}
    first_reader: dict = {}          # value -> index of the first node that reads it
    for node in graph.nodes:
        if node.is_var:
            given = known.get(node.name)
            shapes[(node.id, 0)] = tuple(given) if given is not None else _hint(node)
    for index, node in enumerate(graph.nodes):
        for entry in node.inputs:
            first_reader.setdefault(tuple(entry), index)
    for _ in range(len(graph.nodes) + 1):
        again = False
        for index, node in enumerate(graph.nodes):
            if node.is_var:
                continue
            ins = [shapes[tuple(e)] for e in node.inputs]
            outs = [shapes.get((node.id, k)) for k in range(node.num_outputs)]
            try:
                new_ins, new_outs = _node_shapes(node, ins, outs)
            except OpError as err:
                raise OpError(f"node '{node.name}': {err}") from None
            for entry, old, new in zip(node.inputs, ins, new_ins):
                merged = _merge(graph, node, entry, old, new)
                if merged != old:
                    shapes[tuple(entry)] = merged
                    producer = graph.nodes[entry[0]]
                    again |= not producer.is_var or first_reader[tuple(entry)] < index
            for k, (old, new) in enumerate(zip(outs, new_outs)):
                try:
                    shapes[(node.id, k)] = unify(old, new)
                except OpError:
                    raise OpError(f"node '{node.name}' ({node.op.name}): output {k} has shape "
                                  f"{_shown(new)}, but the ops that use it need "
                                  f"{_shown(old)}") from None
        if not again:
            break
    if not partial:
        missing = [graph.nodes[i].name for i in graph.var_ids
                   if not is_complete(shapes[(i, 0)])]
        if missing:
            raise OpError(f"cannot infer the shapes of {missing}: give their shapes "
                          f"(or the shapes of the data they depend on)")
    return shapes


def _merge(graph, node, entry, old, new):
    """What a node's rule says about one of its inputs, merged with what was known."""
    if new is None:
        return old
    try:
        return unify(old, tuple(new))
    except OpError:
        raise OpError(f"node '{node.name}' ({node.op.name}): input "
                      f"'{graph.nodes[entry[0]].name}' has shape {_shown(old)} but "
                      f"must be {_shown(new)}") from None


def _shown(shape):
    return "unknown" if shape is None else str(show_shape(shape))


def _node_shapes(node, ins, outs):
    """(input shapes, output shapes) that one op's rule gives from partly known ones."""
    op, attrs = node.op, node.attrs
    if all(s is None or is_complete(s) for s in ins) and (
            op.infer_shape_partial is None or all(is_complete(s) for s in ins)):
        return op.shapes(attrs, ins)       # the common case: every rule handles this
    if op.infer_shape_partial is not None:
        return op.partial_shapes(attrs, ins, outs)
    return _probe(op, attrs, ins, outs)


# Values for unknown dims while probing a rule (no real shape has dims this large).
_PROBE_BASES = (1_000_003, 2_000_029)


def _probe(op, attrs, ins, outs):
    """Run a rule that only knows complete shapes on partly known ones.

    Each unknown input dim gets a distinct large stand-in value, twice, with two sets of
    values. A dim of the result that is the same both times does not depend on the
    unknown ones: it is known. A dim that is the stand-in of input dim d both times *is*
    that dim (a batch size that passes through a FullyConnected or a Convolution):
    unknown here, and filled from the output when a later op knows the output's shape.
    If the rule refuses distinct values (unknown dims that must match, such as the
    batch dims of batch_dot's inputs), all unknown dims get one value; if it refuses
    that too, only the complete input shapes are used."""
    unknown = [(i, d) for i, s in enumerate(ins) if s is not None
               for d, v in enumerate(s) if v is None]
    for distinct in (True, False):
        runs = _probe_runs(op, attrs, ins, unknown, distinct)
        if runs:
            break
    else:
        return op.shapes(attrs, [s if is_complete(s) else None for s in ins])
    (value1, (ins1, outs1)), (value2, (ins2, outs2)) = runs
    spot_of = {(value1[spot], value2[spot]): spot for spot in unknown} if distinct else {}

    def read(s1, s2):
        if s1 is None or s2 is None or len(s1) != len(s2):
            return None
        return tuple(a if a == b else None for a, b in zip(s1, s2))

    new_ins = [read(a, b) for a, b in zip(ins1, ins2)]
    new_ins = [unify(old, new) if old is not None else new for old, new in zip(ins, new_ins)]
    new_ins = [list(s) if s is not None else None for s in new_ins]
    for out, s1, s2 in zip(outs, outs1, outs2):
        if out is None or s1 is None or len(out) != len(s1):
            continue
        for d, known in enumerate(out):
            spot = spot_of.get((s1[d], s2[d]))
            if known is not None and spot is not None:
                new_ins[spot[0]][spot[1]] = known     # the output tells this input dim
    new_ins = [tuple(s) if s is not None else None for s in new_ins]
    return new_ins, [read(a, b) for a, b in zip(outs1, outs2)]


def _probe_runs(op, attrs, ins, unknown, distinct):
    """The rule's results for two sets of stand-in values, or None if it refuses them."""
    runs = []
    for base in _PROBE_BASES:
        value = {spot: base + (7 * k if distinct else 0) for k, spot in enumerate(unknown)}
        filled = [None if s is None else tuple(value.get((i, d), v) for d, v in enumerate(s))
                  for i, s in enumerate(ins)]
        try:
            runs.append((value, op.shapes(attrs, filled)))
        except OpError:
            return None
    return runs


def symbol_shapes(symbol, known: dict) -> tuple[dict, list]:
    """({variable name: shape}, [output shapes]) of a Symbol from some known input shapes,
    None where a shape stays unknown (what `Symbol.infer_shape_partial` reports). The
    Symbol is converted once; `infer_shapes` walks it again only while a walk learns
    something an earlier node needs."""
    graph = Graph.from_symbol(symbol)
    shapes = infer_shapes(graph, known, partial=True)
    by_name = {graph.nodes[i].name: shapes[(i, 0)] for i in graph.var_ids}
    return by_name, [shapes[entry] for entry in graph.outputs]


def complete_attrs(graph: Graph, known: dict) -> Graph:
    """The graph, or a copy with attributes completed from the shapes inferred (a creation
    op's -1 dims: `Op.complete_attrs`), for running it without annotating it."""
    if not any(not n.is_var and n.op.complete_attrs is not None for n in graph.nodes):
        return graph
    shapes = infer_shapes(graph, known)
    out = graph.copy()
    for node in out.nodes:
        if not node.is_var and node.op.complete_attrs is not None:
            node.attrs = node.op.complete_attrs(
                node.attrs, [shapes[(node.id, k)] for k in range(node.num_outputs)])
    return out


def annotate(graph: Graph, known: dict, dtypes: dict | None = None) -> Graph:
    """A copy of the graph with `shapes` and `dtypes` filled in on every node."""
    start = time.perf_counter()
    shapes = infer_shapes(graph, known)
    out = graph.copy()
    dtypes = dtypes or {}
    for node in out.nodes:
        node.shapes = [shapes[(node.id, k)] for k in range(node.num_outputs)]
        if not node.is_var and node.op.complete_attrs is not None:
            node.attrs = node.op.complete_attrs(node.attrs, node.shapes)
        if node.is_var:
            dt = dtypes.get(node.name, node.var_attrs.get("__dtype__", "float32"))
            node.dtypes = [np.dtype(dt)]
        else:
            # A compiled graph computes each op in one dtype, as MXNet does: mixed data
            # inputs (uint8 images into a float32 Conv2D) would be silently truncated.
            dt = node.op.out_dtype(node.attrs, [out.nodes[i].dtypes[k] for i, k in node.inputs],
                                   where=f"node '{node.name}' ({node.op.name})")
            node.dtypes = [np.dtype(d) for d in dt] if isinstance(dt, list) \
                else [np.dtype(dt)] * node.num_outputs
    out.annotate_seconds = time.perf_counter() - start
    return out

