"""Lowering: rewrite a few ops into simpler ones before fusion.

The rewrites only use ops from the registry, so the lowered graph prints and
runs (with the reference executor) like any other graph:

* `FullyConnected(x, w, b)` -> `dot(flatten(x), w, transpose_b=True)` then
  `broadcast_add(., b)`: the matrix product goes to BLAS and the bias add becomes
  an elementwise op that fuses with the activation after it.
* `Convolution(x, w, b)` -> `Convolution(x, w, no_bias=True)` then a broadcast
  add of `reshape(b, (1, F, 1, 1))`, for the same reason.
* ops that do nothing for these shapes become `_copy`, which the memory planner
  turns into a *view* (no loop, no buffer): `_sum_to_like` of equal shapes,
  `Cast` to the same dtype, `broadcast_to` a shape it already has, `Dropout` at
  inference, a `transpose` that only moves axes of length 1, `add_n` of one array.
* `_np_promote_with(x, y)` (a traced mx.np binary op's operand in the promoted dtype)
  -> `Cast` to that dtype, or x itself when it has that dtype already.
* `norm(x)` -> `sum(abs(x))` (ord=1) or `sqrt(sum(square(x)))` (ord=2): elementwise
  ops and a reduction, which fuse.
* `where(cond, x, y)` with a 1-D `cond` that picks rows gets `cond` reshaped to
  `(N, 1, ..., 1)`, so that the fused loop broadcasts it along the rows.
* `_unreduce(g, x)` gets `g` reshaped to the keep-dims shape, so that the fused
  loop can broadcast it like any other operand.

Each rule is a small function registered for its op names in `REWRITES`; a node
without a rule, or whose rule returns None, is copied unchanged. Variables are
copied in their original order: the lowered graph takes the same
inputs as the traced one.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph, Node
from ..ops import get_op
from ..ops.elemwise import row_condition_shape, selects_rows
from ..ops.reduce import norm_axes, reduced_shape


class Builder:
    """Builds a new annotated graph node by node (ids are positions), and keeps the log
    of the rewrites applied."""

    def __init__(self, is_train: bool):
        self.nodes: list[Node] = []
        self.is_train = is_train
        self.log: list[str] = []

    def copy(self, node: Node, inputs: list) -> list:
        new = Node(len(self.nodes), node.name, node.op, dict(node.attrs), list(inputs),
                   node.num_outputs, dict(node.var_attrs), node.kind, list(node.shapes),
                   list(node.dtypes))
        self.nodes.append(new)
        return [(new.id, k) for k in range(new.num_outputs)]

    def shape(self, entry):
        return self.nodes[entry[0]].shapes[entry[1]]

    def dtype(self, entry):
        return self.nodes[entry[0]].dtypes[entry[1]]

    def add(self, op_name: str, inputs: list, name: str, dtype=None, **attrs):
        """Add one registry op; its output shapes come from the op's own shape inference."""
        op = get_op(op_name)
        parsed = op.parse_attrs(attrs)
        _, out_shapes = op.shapes(parsed, [self.shape(e) for e in inputs])
        dt = dtype if dtype is not None else self.dtype(inputs[0])
        n = op.output_count(parsed)
        node = Node(len(self.nodes), name, op, parsed, list(inputs), n, {}, "op",
                    [tuple(s) for s in out_shapes], [np.dtype(dt)] * n)
        self.nodes.append(node)
        return (node.id, 0)


def _view(b: Builder, x, name):
    return b.add("_copy", [x], name)


def lower(graph: Graph, is_train: bool) -> tuple[Graph, list[str]]:
    """The lowered copy of an annotated graph and a log of what was rewritten."""
    b = Builder(is_train)
    remap: dict = {}
    for node in graph.nodes:
        ins = [remap[tuple(e)] for e in node.inputs]
        rule = None if node.is_var else REWRITES.get(node.op.name)
        outs = rule(b, node, ins, [b.shape(e) for e in ins]) if rule else None
        if outs is None:
            outs = b.copy(node, ins)
        for k, entry in enumerate(outs):
            remap[(node.id, k)] = entry
    lowered = Graph(b.nodes, [remap[tuple(e)] for e in graph.outputs])
    assert lowered.input_names == graph.input_names
    return lowered, b.log


# ------------------------------------------------------------------ the rules
REWRITES: dict = {}


def rewrites(*op_names):
    """Register a rule fn(builder, node, inputs, input_shapes) -> the replacement output
    entries, or None to keep the node as it is."""
    def register(fn):
        for name in op_names:
            REWRITES[name] = fn
        return fn
    return register


@rewrites("FullyConnected")
def _fully_connected(b, node, ins, shapes):
    name, a = node.name, node.attrs
    x = ins[0]
    if len(shapes[0]) != 2:
        x = b.add("Flatten" if a["flatten"] else "_flatten_leading", [x], name + "/flat")
    y = b.add("dot", [x, ins[1]], name + "/dot", transpose_b=True)
    if b.shape(y) != node.shapes[0]:
        y = b.add("reshape", [y], name + "/unflat", shape=node.shapes[0])
    if not a["no_bias"]:
        y = b.add("broadcast_add", [y, ins[2]], name + "/bias")
    b.log.append("FullyConnected -> dot(transpose_b)" + (" + bias add" if not a["no_bias"] else ""))
    return [y]


@rewrites("Convolution")
def _convolution(b, node, ins, shapes):
    name, a = node.name, node.attrs
    if a["no_bias"]:
        return None
    y = b.add("Convolution", ins[:2], name + "/conv", **dict(a, no_bias=True))
    bias = b.add("reshape", [ins[2]], name + "/bias4d", shape=(1, shapes[2][0], 1, 1))
    b.log.append("Convolution -> Convolution(no_bias) + bias add")
    return [b.add("broadcast_add", [y, bias], name + "/bias")]


@rewrites("dot")
def _dot(b, node, ins, shapes):
    name, a = node.name, node.attrs
    nd0, nd1 = len(shapes[0]), len(shapes[1])
    x, w = ins
    if 0 in (nd0, nd1):
        b.log.append("dot with a 0-d operand -> broadcast_mul")
        if nd0 == 0 and a["transpose_b"] or nd1 == 0 and a["transpose_a"]:
            other = 1 if nd0 == 0 else 0
            transposed = b.add("transpose", [ins[other]], name + "/t")
            x, w = (x, transposed) if other == 1 else (transposed, w)
        return [b.add("broadcast_mul", [x, w], name)]
    # BLAS transposes matrices only: an N-d operand is transposed first
    big_a, big_b = a["transpose_a"] and nd0 > 2, a["transpose_b"] and nd1 > 2
    if not (big_a or big_b):
        return None
    if big_a:       # the axis it sums over (the first) moves to the end (ops/nn.py)
        x = b.add("transpose", [x], name + "/ta", axes=tuple(range(1, nd0)) + (0,))
    if big_b:       # and rhs's last axis to the front
        w = b.add("transpose", [w], name + "/tb", axes=(nd1 - 1,) + tuple(range(nd1 - 1)))
    b.log.append("dot of transposed N-d arrays -> transpose + dot")
    return [b.add("dot", [x, w], name, transpose_a=a["transpose_a"] and not big_a,
                  transpose_b=a["transpose_b"] and not big_b)]


@rewrites("_sum_to_like")
def _sum_to_like(b, node, ins, shapes):
    if shapes[0] != shapes[1]:
        return None
    b.log.append("_sum_to_like of equal shapes -> view")
    return [_view(b, ins[0], node.name)]


@rewrites("Cast", "_cast_like")
def _cast(b, node, ins, shapes):
    if np.dtype(node.dtypes[0]) != b.dtype(ins[0]):
        return None
    b.log.append(f"{node.op.name} to the same dtype -> view")
    return [_view(b, ins[0], node.name)]


@rewrites("_np_promote_with")
def _np_promote_with(b, node, ins, shapes):
    if np.dtype(node.dtypes[0]) == b.dtype(ins[0]):
        # the operand itself (not a view: a _copy between two elementwise ops would split
        # their fused loop); the node only ever feeds the binary op it was made for
        b.log.append("_np_promote_with to the same dtype -> its operand")
        return [ins[0]]
    b.log.append("_np_promote_with -> Cast")
    cast = b.add("Cast", [ins[0]], node.name, dtype=node.dtypes[0])
    b.nodes[cast[0]].attrs["dtype"] = np.dtype(node.dtypes[0]).name    # its attribute too
    return [cast]


@rewrites("broadcast_to", "broadcast_like")
def _broadcast(b, node, ins, shapes):
    if shapes[0] != node.shapes[0]:
        return None
    b.log.append(f"{node.op.name} to the same shape -> view")
    return [_view(b, ins[0], node.name)]


@rewrites("add_n")
def _add_n(b, node, ins, shapes):
    return [_view(b, ins[0], node.name)] if len(ins) == 1 else None


@rewrites("Dropout")
def _dropout(b, node, ins, shapes):
    a = node.attrs
    if a["p"] != 0 and (b.is_train or a["mode"] == "always"):
        return None
    b.log.append("Dropout at inference -> view (+ a mask of ones)")
    return [_view(b, ins[0], node.name), b.add("ones_like", [ins[0]], node.name + "/mask")]


@rewrites("transpose")
def _transpose(b, node, ins, shapes):
    perm = _perm(node.attrs["axes"], len(shapes[0]))
    moved = [p for p in perm if shapes[0][p] != 1]
    if moved != sorted(moved):
        return None
    b.log.append("transpose of length-1 axes -> view")
    if tuple(shapes[0]) == tuple(node.shapes[0]):     # 0-d, 1-d: the same shape (reshape's
        return [_view(b, ins[0], node.name)]          # shape=() would mean "unchanged")
    return [b.add("reshape", [ins[0]], node.name, shape=node.shapes[0])]


@rewrites("norm")
def _norm(b, node, ins, shapes):
    name, a = node.name, node.attrs
    inner = "abs" if a["ord"] == 1 else "square"
    y = b.add(inner, [ins[0]], f"{name}/{inner}")
    y = b.add("sum", [y], name + "/sum", axis=a["axis"], keepdims=a["keepdims"])
    if a["ord"] == 2:
        y = b.add("sqrt", [y], name + "/sqrt")
    if a["out_dtype"] is not None and np.dtype(a["out_dtype"]) != b.dtype(y):
        y = b.add("Cast", [y], name + "/cast", dtype=a["out_dtype"])
    b.log.append("norm -> " + ("sum(abs)" if a["ord"] == 1 else "sqrt(sum(square))"))
    return [y]


@rewrites("where")
def _where(b, node, ins, shapes):
    # a fused loop broadcasts NumPy's way (trailing axes): a row-selecting condition
    # (N,) is first viewed as (N, 1, ..., 1)
    if not selects_rows(shapes[0], shapes[1]):
        return None
    cond = b.add("reshape", [ins[0]], node.name + "/rows",
                 shape=row_condition_shape(shapes[1]))
    b.log.append("where with a row condition -> reshape + where")
    return b.copy(node, [cond, ins[1], ins[2]])


@rewrites("_unreduce")
def _unreduce(b, node, ins, shapes):
    a = node.attrs
    keep = reduced_shape(shapes[1], norm_axes(a["axis"], len(shapes[1]), a["exclude"]), True)
    if shapes[0] == keep:
        return None
    g = b.add("reshape", [ins[0]], node.name + "/keepdims", shape=keep)
    return b.copy(node, [g, ins[1]])


def _perm(axes, ndim):
    return tuple(a % ndim for a in axes) if axes else tuple(range(ndim))[::-1]
