"""Common-subexpression elimination: compute each repeated expression once.

`(a + b) * (a + b)` written as a Symbol has two `+` nodes that read the same inputs
and compute the same thing. Evaluating both wastes time and memory, so before an
executor runs a graph (MXNet: `simple_bind`, and the graph `get_optimized_symbol`
returns), this pass keeps the first and points every reader of the second at it:

1. *find duplicates*: walking the nodes in topological order, a node is the same
   as an earlier one when both apply the same op, with the same attributes, to
   the same input values (after the inputs themselves were merged, so `(a+b)+c`
   twice collapses in one walk: first the `+ b`, then the `+ c`);
2. *drop duplicates*: rebuild the graph without them, every input and output
   that read a duplicate reading the node it duplicates;
3. *separate outputs*: a graph output that is now the same value as an earlier
   output becomes a `_copy` of it, so that each output is still an array of its
   own (`Group([x * y, x * y])` keeps two outputs, and no node is saved).

Only ops that always compute the same result from the same inputs can be merged.
Never merged (the rules of MXNet's pass, src/executor/eliminate_common_expr_pass.cc,
in terms of the op registry):

* variables (two `Variable('a')` of one name are already one node);
* ops without inputs (`zeros`, a random sampler's creation form);
* random ops (`op.is_random`: two Dropouts draw two masks);
* ops writing into their inputs (`op.aux_writeback`: BatchNorm's running statistics,
  an optimizer's state): merged, the update would happen once instead of twice;
* ops running a subgraph (loops, branches, a nested CachedOp: MXNet's stateful ops).

Attributes are compared as written (`p=0.5` and `p=0.25` differ), so two nodes
that happen to compute the same thing in different words (`a * 2` and `a + a`)
stay two nodes. MXNet's variable `MXNET_ELIMINATE_COMMON_EXPR=0` turns the pass
off (config.eliminate_common_expr). MXNet repeats its search until nothing
changes; walking in topological order finds the same duplicates in one walk.
"""
from __future__ import annotations

from .. import config
from ..ops import get_op
from .ir import Graph, Node


def eliminate_common_expr(graph: Graph) -> Graph:
    """`graph` with each repeated expression computed once; `graph` itself (not a
    copy) when it has no duplicates."""
    same_as = find_duplicates(graph)
    if not same_as:
        return graph
    return separate_outputs(drop_duplicates(graph, same_as))


def optimized_symbol(symbol):
    """The Symbol an executor runs: `symbol` with its common subexpressions merged,
    or `symbol` itself when there are none or $MXNET_ELIMINATE_COMMON_EXPR is 0."""
    if not config.eliminate_common_expr():
        return symbol
    graph = Graph.from_symbol(symbol)
    simpler = eliminate_common_expr(graph)
    return symbol if simpler is graph else simpler.to_symbol()


# ------------------------------------------------------------------ phase 1
def mergeable(node: Node) -> bool:
    """Whether two copies of `node` always compute the same values (see above)."""
    return (not node.is_var and bool(node.inputs) and not node.op.is_random
            and not node.op.aux_writeback and not node.subgraphs)


def find_duplicates(graph: Graph) -> dict[int, int]:
    """{id of a duplicate node: id of the earlier node it computes the same as}."""
    same_as: dict[int, int] = {}
    first: dict = {}                # (op, attributes, inputs) -> id of its first node
    for node in graph.nodes:
        if not mergeable(node):
            continue
        inputs = tuple((same_as.get(s, s), i) for s, i in node.inputs)
        attrs = tuple(sorted((k, str(v)) for k, v in node.attrs.items()))
        key = (node.op.name, attrs, tuple(sorted(node.var_attrs.items())), inputs)
        if key in first:
            same_as[node.id] = first[key]
        else:
            first[key] = node.id
    return same_as


# ------------------------------------------------------------------ phase 2
def drop_duplicates(graph: Graph, same_as: dict[int, int]) -> Graph:
    """A new graph without the duplicate nodes (ids renumbered, order kept)."""
    new_id: dict[int, int] = {}
    nodes = []
    for node in graph.nodes:
        if node.id in same_as:
            continue
        new_id[node.id] = len(nodes)
        inputs = [(new_id[same_as.get(s, s)], i) for s, i in node.inputs]
        nodes.append(Node(len(nodes), node.name, node.op, dict(node.attrs), inputs,
                          node.num_outputs, dict(node.var_attrs), node.kind))
    outputs = [(new_id[same_as.get(s, s)], i) for s, i in graph.outputs]
    return Graph(nodes, outputs)


# ------------------------------------------------------------------ phase 3
def separate_outputs(graph: Graph) -> Graph:
    """Each output that repeats an earlier one replaced by a `_copy` of it, named as
    MXNet names it (`<node>_<k>_copy`, k counting the copies of that value). Changes
    `graph` (the new one phase 2 built) and returns it."""
    copy_op = get_op("_copy")
    copies: dict = {}               # output value -> how many copies it has so far
    outputs = []
    for entry in graph.outputs:
        if entry not in copies:
            copies[entry] = 0
            outputs.append(entry)
            continue
        name = f"{graph.nodes[entry[0]].name}_{copies[entry]}_copy"
        copies[entry] += 1
        copy = Node(len(graph.nodes), name, copy_op, copy_op.parse_attrs({}), [entry])
        graph.nodes.append(copy)
        outputs.append((copy.id, 0))
    graph.outputs = outputs
    return graph
