"""The graph IR that the compiler passes, the executors and the widgets all share.

A `Graph` is a flat list of `Node`s in topological order (inputs first), built
from a Symbol. Values are named by (node id, output index). Passes return new
Graphs (or annotate copies): nothing here is redrawn for display; `str(graph)`
and `graph.to_dot()` show the very object that runs.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from ..ops import Op
from ..symbol.symbol import Node as SymbolNode, Symbol

@dataclass
class Node:
    id: int
    name: str
    op: Op | None                       # None: a variable (data, parameter or aux state)
    attrs: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)     # [(node id, output index)]
    num_outputs: int = 1
    var_attrs: dict = field(default_factory=dict)
    kind: str = "op"                    # op | data | param | aux
    shapes: list | None = None          # filled by infer_shapes
    dtypes: list | None = None

    @property
    def is_var(self):
        return self.op is None

    @property
    def label(self):
        if self.op is None:
            return self.name
        keys = self.op.key_attrs or (("scalar",) if "scalar" in self.attrs else ())
        bits = []
        for k in keys:
            v = self.attrs.get(k)
            if v is None or v == ():
                continue
            if isinstance(v, tuple):
                v = "x".join(map(str, v))
            bits.append(f"{v:g}" if isinstance(v, float) else str(v))
        if self.subgraphs:
            ops = sum(1 for g in self.subgraphs for n in g.walk() if n.op is not None)
            bits.append(f"(body: {ops} ops)")
        return " ".join([self.op.name] + bits)

    @property
    def subgraphs(self):
        """The graphs a control-flow node runs (its loop body, its branches): Symbols.
        `Graph.from_symbol(node.subgraphs[0])` is the body as a Graph."""
        return () if self.op is None else self.attrs.get("subgraphs", ())


class Graph:
    """Nodes in topological order plus the list of output values."""

    def __init__(self, nodes: list[Node], outputs: list[tuple[int, int]]):
        self.nodes = nodes
        self.outputs = list(outputs)
        # Seconds graph.annotate took to fill in shapes and dtypes (0 if it did not):
        # compilers report it as their "shapes" phase, since they get graphs annotated.
        self.annotate_seconds = 0.0

    # ---------------------------------------------------------- construction
    @classmethod
    def from_symbol(cls, symbol, data_names=()) -> "Graph":
        order = symbol.walk()
        ids = {id(n): k for k, n in enumerate(order)}
        aux = set(symbol.list_auxiliary_states()) if any(
            n.op is not None and n.op.aux_inputs for n in order) else set()
        nodes = []
        for k, n in enumerate(order):
            if n.is_var:
                kind = "aux" if n.name in aux else ("data" if n.name in data_names else "param")
            else:
                kind = "op"
            nodes.append(Node(k, n.name, n.op, dict(n.attrs),
                              [(ids[id(c)], i) for c, i in n.inputs], n.num_outputs(),
                              dict(n.var_attrs), kind))
        return cls(nodes, [(ids[id(n)], i) for n, i in symbol.entries])

    def to_symbol(self):
        built = []
        for n in self.nodes:
            built.append(SymbolNode(n.op, n.name, dict(n.attrs),
                               [(built[s], i) for s, i in n.inputs], dict(n.var_attrs)))
        return Symbol([(built[s], i) for s, i in self.outputs])

    def copy(self) -> "Graph":
        return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        nodes = [Node(n.id, n.name, n.op, dict(n.attrs), list(n.inputs), n.num_outputs,
                      dict(n.var_attrs), n.kind, None if n.shapes is None else list(n.shapes),
                      None if n.dtypes is None else list(n.dtypes)) for n in self.nodes]
        return Graph(nodes, list(self.outputs))

    # -------------------------------------------------------------- queries
    @property
    def var_ids(self) -> list[int]:
        return [n.id for n in self.nodes if n.is_var]

    @property
    def input_names(self) -> list[str]:
        """The names an executor expects its inputs under, in this order."""
        return [n.name for n in self.nodes if n.is_var]

    @property
    def op_nodes(self) -> list[Node]:
        return [n for n in self.nodes if not n.is_var]

    def consumers(self) -> dict[tuple[int, int], list[int]]:
        users: dict = {}
        for n in self.nodes:
            for entry in n.inputs:
                users.setdefault(tuple(entry), []).append(n.id)
        return users

    def shape_of(self, entry) -> tuple | None:
        node = self.nodes[entry[0]]
        return None if node.shapes is None else node.shapes[entry[1]]

    def dtype_of(self, entry):
        node = self.nodes[entry[0]]
        return None if node.dtypes is None else node.dtypes[entry[1]]

    def num_params(self, node: Node) -> int:
        """Parameter elements that feed an op node directly (for labels and summaries)."""
        total = 0
        for s, i in node.inputs:
            child = self.nodes[s]
            if child.kind in ("param", "aux") and child.shapes and child.shapes[0]:
                total += int(np.prod(child.shapes[0]))
        return total

    # ------------------------------------------------------------- printing
    def _value(self, entry):
        node = self.nodes[entry[0]]
        suffix = f".{entry[1]}" if node.num_outputs > 1 else ""
        return f"%{entry[0]}{suffix}"

    def _type(self, node, k=0):
        if node.shapes is None or node.shapes[k] is None:
            return ""
        dt = node.dtypes[k] if node.dtypes else None
        return f"{tuple(node.shapes[k])}" + (f" {np.dtype(dt).name}" if dt is not None else "")

    def __str__(self):
        lines = []
        for n in self.nodes:
            if n.is_var:
                lines.append(f"  %{n.id} = {n.kind} {n.name!r}  {self._type(n)}".rstrip())
                continue
            args = ", ".join(self._value(e) for e in n.inputs)
            attrs = ", ".join(f"{k}={v}" for k, v in n.attrs.items()
                              if k != "subgraphs" and v != n.op.spec(k).default)
            call = f"{n.op.name}({args}{'; ' + attrs if attrs else ''})"
            types = ", ".join(filter(None, (self._type(n, k) for k in range(n.num_outputs))))
            lines.append(f"  %{n.id} = {call}  # {n.name}" + (f"  -> {types}" if types else ""))
            for g in n.subgraphs:        # a loop body prints like any graph, indented
                body = str(Graph.from_symbol(g)).splitlines()
                lines.extend("    " + ln for ln in ["body " + body[0]] + body[1:])
        outs = ", ".join(self._value(e) for e in self.outputs)
        return "graph {\n" + "\n".join(lines) + f"\n  return {outs}\n}}"

    __repr__ = __str__

    def to_dot(self, hide_params=False, clusters=None, colors=None, title=None) -> str:
        """Graphviz DOT source of this graph. `clusters` maps node id -> group name (fused
        groups are drawn as boxes around their nodes); `colors` maps node id -> a colour
        (e.g. one per memory buffer)."""
        lines = ["digraph G {", "  rankdir=BT;", '  node [fontname="Helvetica", fontsize=11];',
                 '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
        if title:
            lines.append(f"  label={_dot_quote(title)}; labelloc=t;")
        hidden = {n.id for n in self.nodes if hide_params and n.kind in ("param", "aux")}
        # nodes, grouped by cluster (None: outside any cluster)
        body = {}
        for n in self.nodes:
            if n.id not in hidden:
                label, style = self._dot_label_and_style(n, colors or {})
                body.setdefault((clusters or {}).get(n.id), []).append(
                    f"  n{n.id} [label={_dot_quote(label)}, {style}, "
                    f"tooltip={_dot_quote(n.name)}];")
        for index, (group, node_lines) in enumerate(body.items()):
            if group is None:
                lines.extend(node_lines)
            else:
                lines.append(f"  subgraph cluster_{index} {{")
                lines.append(f'    label={_dot_quote(group)}; style="dashed"; color="#cc6600";')
                lines.extend("  " + ln for ln in node_lines)
                lines.append("  }")
        # edges, each labelled with the value's shape and dtype
        for n in self.nodes:
            for s, i in n.inputs:
                if n.id not in hidden and s not in hidden:
                    label = _dot_quote(self._value_label(s, i))
                    lines.append(f"  n{s} -> n{n.id} [label={label}];")
        for k, (s, i) in enumerate(self.outputs):
            if s not in hidden:
                lines.append(f'  out{k} [label="output {k}", shape=plaintext];')
                lines.append(f"  n{s} -> out{k} [style=bold];")
        lines.append("}")
        return "\n".join(lines)

    def _dot_label_and_style(self, n: Node, colors: dict):
        """A variable is an oval (data blue, parameters grey, auxiliary states dashed); an
        op a rounded box, with a thick border if it is an output of the graph."""
        if n.is_var:
            style = {"data": 'shape=oval, style=filled, fillcolor="#cfe8ff"',
                     "param": 'shape=oval, style=filled, fillcolor="#eeeeee", fontsize=9',
                     "aux": 'shape=oval, style="filled,dashed", fillcolor="#eeeeee", '
                            'fontsize=9'}[n.kind]
            label = n.name + (f"\n{tuple(n.shapes[0])}" if n.shapes and n.shapes[0] else "")
            return label, style
        style = f'shape=box, style="rounded,filled", fillcolor="{colors.get(n.id, "#fff2cc")}"'
        if n.id in {e[0] for e in self.outputs}:
            style += ", penwidth=2.5"
        params = self.num_params(n)
        return n.label + (f"\n{params:,} params" if params else ""), style

    def _value_label(self, node_id: int, output: int) -> str:
        """'64x256 float32' once shapes are inferred, else ''."""
        src = self.nodes[node_id]
        if src.shapes is None or src.shapes[output] is None:
            return ""
        label = "x".join(map(str, src.shapes[output])) or "()"
        if src.dtypes:
            label += f" {np.dtype(src.dtypes[output]).name}"
        return label


def _dot_quote(text) -> str:
    """A DOT string literal: backslashes and quotes escaped, newlines as \\n."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'
