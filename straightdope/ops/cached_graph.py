"""`_CachedOp`: a hybridized block's whole graph as ONE node (MXNet's name).

`autograd.get_symbol(y)` turns what `record()` saw into a Symbol. A hybridized block ran
as one step there; as in MXNet, that step becomes one `_CachedOp` node holding the
block's graph as a subgraph, unless the graph has at most `inline_limit` ops
(`hybridize(inline_limit=...)`, 2 by default): then its ops are inlined one by one.
The node runs like any op: its forward runs the subgraph with the reference executor
(in a compiled graph too, between compiled segments), its shapes come from the
subgraph's, its gradient is the subgraph's gradient.
"""
from __future__ import annotations

from .control_flow import _code, _infer, _run, _var_shape, body_graph
from .registry import Int, OpError, Subgraphs, register


def _forward(attrs, *arrays, is_train=False):
    return tuple(_run(body_graph(attrs["subgraphs"][0]), list(arrays), is_train))


def _shapes(attrs, in_shapes):
    graph = body_graph(attrs["subgraphs"][0])
    known = {name: tuple(s) for name, s in zip(graph.input_names, in_shapes) if s is not None}
    shapes = _infer("_CachedOp", graph, known)
    new_ins = [s or _var_shape(graph, shapes, k) for k, s in enumerate(in_shapes)]
    return new_ins, [shapes[tuple(e)] for e in graph.outputs]


def _gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """The subgraph applied to the node's inputs, differentiated (in a graph only)."""
    if not all(isinstance(x, _code("Symbol")) for x in inputs):
        raise OpError("_CachedOp: its gradient is built in a graph; run the Symbol through "
                      "a SymbolBlock or an executor rather than op by op")
    body = attrs["subgraphs"][0]
    heads = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs)]
    outs = list(body.substitute(dict(zip(body.list_inputs(), inputs))))
    return _code("gradient_symbols")(outs, heads, list(inputs), is_train)


register("_CachedOp", variadic=True, needs_train_flag=True, placement="host",
         attrs={"num_outputs": Int(required=True), "subgraphs": Subgraphs()},
         forward=_forward, infer_shape=_shapes, gradient=_gradient, num_outputs=-1,
         doc="A hybridized block's graph as one node (autograd.get_symbol): its inputs "
             "feed the subgraph's variables in list_inputs() order.")
