"""Pass 2: fusion. Chains of elementwise ops become one loop.

Every op node of the lowered graph lands in exactly one *step*:

* `fused`: elementwise ops (placement "fused" in the registry: those with a
  `scalar_expr`, plus a few broadcasting helpers that codegen writes itself) over
  one iteration domain (the output shape). One loop reads each
  outside operand once per element, keeps the intermediate results in local
  variables and stores only what is needed later. `relu(dot(x, w) + b)` is
  `dot` (a kernel) followed by *one* loop doing the add and the max.
* `kernel`: everything else (matrix products, convolution, pooling, reductions,
  softmax, ...), one call each. These cut fusion chains.
* `view`: reshapes and copies that only reinterpret a buffer (placement "view"): no
  code at all.

An elementwise node joins the group of one of its producers when its output has
the group's shape, the group is not full (`MAX_LOOP_OPS`) and joining does not create a
cycle (a path that leaves the group and comes back, e.g. `a -> dot -> add(a, .)`).
The steps are then put in a topological order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..graph import Graph

# A loop holds at most this many ops: Numba's and LLVM's cost grows faster than linearly
# with the length of a function, and a long chain cut into equal pieces is one loop
# function called many times in the steps tier.
MAX_LOOP_OPS = 16


def is_fusible(node) -> bool:
    return node.op.placement == "fused"


def reads(node) -> list[int]:
    """Which inputs an elementwise node actually reads (zeros_like only needs a shape).
    The built-in forms without a `scalar_expr` read every input if they take any number
    (add_n), else their first (broadcast_to, Cast, `_unreduce`'s gradient; not `like`)."""
    if node.op.scalar_expr is None:
        return list(range(len(node.inputs))) if node.op.variadic else [0][:len(node.inputs)]
    expr = node.op.scalar_expr
    expr = expr(node.attrs) if callable(expr) else expr
    return sorted({int(k) for k in re.findall(r"\{(\d+)\}", expr)})


@dataclass
class Step:
    id: int
    kind: str                                   # fused | kernel | view
    nodes: list = field(default_factory=list)   # node ids, in topological order
    inputs: list = field(default_factory=list)  # values read from outside the step
    outputs: list = field(default_factory=list)  # values stored (read later or returned)

    def label(self, graph):
        ops = [graph.nodes[i].op.name for i in self.nodes]
        return f"{self.kind} {'+'.join(ops)}"


class Fused:
    """The result of the fusion pass: the lowered graph and its steps in order."""

    def __init__(self, graph: Graph, steps: list[Step], rewrites: list[str]):
        self.graph, self.steps, self.rewrites = graph, steps, rewrites
        self.step_of = {n: s.id for s in steps for n in s.nodes}

    @property
    def groups(self) -> list[Step]:
        """The fused loops (the groups the book draws as boxes)."""
        return [s for s in self.steps if s.kind == "fused"]

    def clusters(self) -> dict:
        """node id -> group name, for `Graph.to_dot(clusters=...)` (fused groups only)."""
        return {n: f"loop {k}" for k, s in enumerate(self.groups) for n in s.nodes
                if len(s.nodes) > 1}

    def to_dot(self, hide_params=False, title=None) -> str:
        return self.graph.to_dot(hide_params=hide_params, clusters=self.clusters(),
                                 title=title or f"{len(self.steps)} steps, "
                                                f"{len(self.groups)} fused loops")

    def __str__(self):
        g = self.graph
        lines = [f"fused: {len(g.op_nodes)} ops -> {len(self.steps)} steps "
                 f"({len(self.groups)} loops, "
                 f"{sum(s.kind == 'kernel' for s in self.steps)} kernels, "
                 f"{sum(s.kind == 'view' for s in self.steps)} views)"]
        for r in sorted(set(self.rewrites)):
            lines.append(f"  rewrite: {r} (x{self.rewrites.count(r)})")
        for s in self.steps:
            ins = ", ".join(g._value(e) for e in s.inputs)
            outs = ", ".join(g._value(e) for e in s.outputs)
            shape = g.shape_of(s.outputs[0]) if s.outputs else None
            lines.append(f"  step {s.id}: {s.label(g)}({ins}) -> {outs or '-'}"
                         + (f"  {tuple(shape)}" if shape is not None else ""))
        return "\n".join(lines)

    __repr__ = __str__


def fuse(graph: Graph, rewrites: list[str] | None = None) -> Fused:
    steps: list[Step] = []
    step_of: dict[int, int] = {}
    # node id -> the steps it depends on, transitively, as the bits of an int (a set of
    # step ids per node would need memory quadratic in the length of a chain)
    ancestors: dict[int, int] = {}
    for node in graph.nodes:
        deps = 0
        for s, _ in node.inputs:
            deps |= ancestors[s]
            if s in step_of:
                deps |= 1 << step_of[s]
        ancestors[node.id] = deps
        if node.is_var:
            continue
        if node.op.placement == "view":
            kind = "view"
        elif is_fusible(node):
            kind = "fused"
            target = _joinable(graph, node, steps, step_of, ancestors)
            if target is not None:
                target.nodes.append(node.id)
                step_of[node.id] = target.id
                continue
        else:
            kind = "kernel"
        step = Step(len(steps), kind, [node.id])
        steps.append(step)
        step_of[node.id] = step.id
    steps = _toposort(graph, steps, step_of)
    step_of = {n: s.id for s in steps for n in s.nodes}
    _boundaries(graph, steps, step_of)
    return Fused(graph, steps, list(rewrites or []))


def _joinable(graph, node, steps, step_of, ancestors):
    """The fused group (of one of the node's producers) it can join, or None."""
    shape = node.shapes[0]
    for s, _ in node.inputs:
        if s not in step_of:
            continue
        group = steps[step_of[s]]
        if (group.kind != "fused" or graph.nodes[group.nodes[0]].shapes[0] != shape
                or len(group.nodes) >= MAX_LOOP_OPS):
            continue
        # joining must not close a cycle: no other input may depend on the group
        if any(step_of.get(q) != group.id and ancestors[q] >> group.id & 1
               for q, _ in node.inputs):
            continue
        # ancestors[] is per node; a group that grew since may reach the group through
        # another member, so check the steps themselves too
        if any(step_of.get(q) not in (None, group.id) and
               _step_reaches(graph, steps, step_of, step_of[q], group.id)
               for q, _ in node.inputs):
            continue
        return group
    return None


def _step_reaches(graph, steps, step_of, start, target) -> bool:
    """Whether step `start` depends on step `target`, through any member of any step."""
    seen, todo = {start}, [start]
    while todo:
        for n in steps[todo.pop()].nodes:
            for q, _ in graph.nodes[n].inputs:
                dep = step_of.get(q)
                if dep == target:
                    return True
                if dep is not None and dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
    return False


def _toposort(graph, steps, step_of):
    """Order the steps so each runs after the steps it reads from (Kahn, stable)."""
    needs = {s.id: set() for s in steps}
    for s in steps:
        for n in s.nodes:
            for q, _ in graph.nodes[n].inputs:
                if q in step_of and step_of[q] != s.id:
                    needs[s.id].add(step_of[q])
    done, order = set(), []
    pending = list(steps)
    while pending:
        for k, s in enumerate(pending):
            if needs[s.id] <= done:
                order.append(s)
                done.add(s.id)
                del pending[k]
                break
        else:
            raise AssertionError("fusion produced a cycle")
    for k, s in enumerate(order):
        s.id = k
    return order


def _boundaries(graph, steps, step_of):
    """Fill each step's outside inputs and the outputs it must store."""
    outputs = {tuple(e) for e in graph.outputs}
    used_outside = set()
    for n in graph.nodes:
        for e in n.inputs:
            if step_of.get(e[0]) != step_of.get(n.id):
                used_outside.add(tuple(e))
    for s in steps:
        members = set(s.nodes)
        ins = []
        for n in s.nodes:
            node = graph.nodes[n]
            read = reads(node) if s.kind == "fused" else range(len(node.inputs))
            for k in read:
                e = tuple(node.inputs[k])
                if e[0] not in members and e not in ins:
                    ins.append(e)
        s.inputs = ins
        outs = []
        for n in s.nodes:
            for k in range(graph.nodes[n].num_outputs):
                e = (n, k)
                if s.kind != "fused" or e in used_outside or e in outputs:
                    outs.append(e)
        s.outputs = outs
