"""Pass 3: memory planning. Which buffer holds each intermediate value.

Imperatively, every op allocates a fresh array for its result. A compiled graph
knows the whole program in advance, so it can do better:

1. *liveness*: a value is live from the step that writes it to the last step
   that reads it (through any view of it);
2. *reuse*: walking the steps in order, a value takes a free buffer whose
   previous value is dead (best fit by size), or a new one;
3. *in place*: a fused loop may write its result into the buffer of an operand
   that dies in that very loop, since element i is read before it is written.

Values that need no buffer at all: graph inputs (the caller's arrays), graph
outputs (fresh arrays each call: the caller may keep them), views (they share
their source's buffer) and the temporaries inside fused loops (registers).
All planned buffers of one dtype live in one flat array, the *arena*; a value is
an offset into it. With `static_alloc` the arena is allocated once and kept.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fuse import Fused

ALIGN = 64        # bytes: every buffer starts on a cache line


@dataclass
class Buffer:
    id: int
    dtype: np.dtype
    size: int = 0          # elements
    offset: int = 0        # elements, in the arena of its dtype
    values: list = None    # values (entries) it holds over time

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize


class MemoryPlan:
    """Buffer per value, with the liveness it was derived from, and the byte counts."""

    def __init__(self, fused: Fused):
        self.fused = fused
        self.graph = fused.graph
        self.buffers: list[Buffer] = []
        self.buffer_of: dict = {}      # planned value -> buffer id
        self.root: dict = {}           # value -> the value whose storage it uses (views)
        self.storage: dict = {}        # root value -> "input" | "output" | "arena"
        self.live: dict = {}           # root value -> (first step, last step)
        self.inplace: list = []        # (value, operand) pairs written in place
        self.arena_sizes: dict = {}    # dtype name -> elements
        self.bytes_imperative = 0
        self.bytes_planned = 0
        self.fused_away = []           # values that only exist inside fused loops

    # ------------------------------------------------------------- queries
    def offset(self, entry) -> int:
        buf = self.buffers[self.buffer_of[self.root[tuple(entry)]]]
        return buf.offset

    def where(self, entry) -> str:
        return self.storage[self.root[tuple(entry)]]

    def colors(self) -> dict:
        """node id -> colour, one colour per buffer (for Graph.to_dot)."""
        palette = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                   "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"]
        out = {}
        for e, root in self.root.items():
            where = self.storage.get(root)
            if where == "arena" and root in self.buffer_of:
                out[e[0]] = palette[self.buffer_of[root] % len(palette)]
            elif where == "output":
                out.setdefault(e[0], "#ffffff")
        return out

    def to_dot(self, hide_params=True, title=None) -> str:
        return self.graph.to_dot(
            hide_params=hide_params, colors=self.colors(),
            clusters=self.fused.clusters(),
            title=title or f"{_count(len(self.buffers), 'buffer')}: {self.bytes_planned:,} bytes "
                           f"(imperative: {self.bytes_imperative:,})")

    def __str__(self):
        g = self.graph
        ratio = self.bytes_planned / self.bytes_imperative if self.bytes_imperative else 0.0
        lines = [f"memory: intermediates need {self.bytes_imperative:,} bytes imperatively "
                 f"(one buffer per value), {self.bytes_planned:,} bytes planned "
                 f"({ratio:.0%}) in {_count(len(self.buffers), 'buffer')}"]
        for b in self.buffers:
            vals = ", ".join(g._value(v) + ("*" if any(v == w for w, _ in self.inplace) else "")
                             for v in b.values)
            lines.append(f"  buffer {b.id}: {b.nbytes:>10,} bytes {b.dtype.name:8s} "
                         f"@{b.offset * b.dtype.itemsize:<9,} <- {vals}")
        if self.fused_away:
            lines.append(f"  in registers (fused away): "
                         + ", ".join(g._value(v) for v in self.fused_away))
        if self.inplace:
            lines.append("  * written in place over a dying operand: " + ", ".join(
                f"{g._value(v)} over {g._value(w)}" for v, w in self.inplace))
        return "\n".join(lines)

    __repr__ = __str__


def _numel(shape):
    return int(np.prod(shape)) if shape else 1


def imperative_bytes(graph) -> int:
    """Bytes of all intermediate values if each got its own array (what nd does)."""
    outputs = {tuple(e) for e in graph.outputs}
    total = 0
    for n in graph.op_nodes:
        for k in range(n.num_outputs):
            if (n.id, k) not in outputs:
                total += _numel(n.shapes[k]) * np.dtype(n.dtypes[k]).itemsize
    return total


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def plan_memory(fused: Fused, reference_graph=None) -> MemoryPlan:
    """Assign buffers to the values of `fused.graph`, in five named phases.
    `reference_graph` (the graph before lowering) is what the imperative byte count is
    measured on."""
    plan = MemoryPlan(fused)
    _storage_roots(plan)
    _forward_into_outputs(plan, fused.steps)
    _liveness(plan)
    _assign_buffers(plan)
    _lay_out(plan, reference_graph if reference_graph is not None else fused.graph)
    return plan


def _storage_roots(plan):
    """Phase 1: where each value lives. Inputs are the caller's arrays, outputs fresh
    arrays, the rest arena buffers; a view shares its input's storage (its root), except
    a view that is itself an output: it gets a fresh array (codegen copies into it)."""
    g, fused = plan.graph, plan.fused
    outputs = {tuple(e) for e in g.outputs}
    for n in g.nodes:
        for k in range(n.num_outputs):
            e = (n.id, k)
            if n.is_var:
                plan.root[e] = e
                plan.storage[e] = "input"
            elif fused.steps[fused.step_of[n.id]].kind == "view" and e not in outputs:
                plan.root[e] = plan.root[tuple(n.inputs[0])]
            else:
                plan.root[e] = e
                plan.storage[e] = "output" if e in outputs else "arena"


def _liveness(plan):
    """Phase 3: each arena value is live from the step that writes it to the last step
    that reads it (through any view of it); values no step stores live in registers."""
    g, steps = plan.graph, plan.fused.steps
    stored = {e for s in steps for e in s.outputs}
    first, last = {}, {}
    for s in steps:
        for e in s.outputs:
            r = plan.root[e]
            first.setdefault(r, s.id)
            last[r] = max(last.get(r, s.id), s.id)
        for e in s.inputs:
            r = plan.root[e]
            last[r] = max(last.get(r, -1), s.id)
    for n in g.op_nodes:
        for k in range(n.num_outputs):
            if (n.id, k) not in stored and plan.root[(n.id, k)] == (n.id, k):
                plan.fused_away.append((n.id, k))
                plan.storage[(n.id, k)] = "register"
    plan.live = {r: (first[r], last[r]) for r in first if plan.storage.get(r) == "arena"}


def _assign_buffers(plan):
    """Phase 4, greedy in step order: a value a loop writes may take over the buffer of
    an operand that dies in that loop (in place); else the best-fitting free buffer of
    its dtype; else a new one. A buffer is free again after its value's last step."""
    g = plan.graph
    free: dict = {}                      # dtype name -> [buffer ids]
    dying_at: dict = {}
    for r, (_, end) in plan.live.items():
        dying_at.setdefault(end, []).append(r)
    for s in plan.fused.steps:
        taken_inplace = set()
        for e in s.outputs:
            r = plan.root[e]
            if r != e or plan.storage[r] != "arena":
                continue
            n = g.nodes[e[0]]
            dt = np.dtype(n.dtypes[e[1]])
            size = _numel(n.shapes[e[1]])
            buf = None
            if s.kind == "fused":
                buf = _inplace_candidate(plan, s, e, dt, size, taken_inplace)
            if buf is None:
                buf = _best_fit(plan, free.setdefault(dt.name, []), dt, size)
            plan.buffer_of[r] = buf.id
            buf.values.append(r)
            buf.size = max(buf.size, size)
        for r in dying_at.get(s.id, []):
            b = plan.buffers[plan.buffer_of[r]]
            if b.values[-1] == r:          # not taken over in place by a later value
                free.setdefault(b.dtype.name, []).append(b.id)


def _lay_out(plan, reference_graph):
    """Phase 5: the buffers' offsets, one arena per dtype, each buffer on a cache line;
    and the byte counts the book compares."""
    for b in plan.buffers:
        start = plan.arena_sizes.get(b.dtype.name, 0)
        step = max(ALIGN // b.dtype.itemsize, 1)
        start = -(-start // step) * step
        b.offset = start
        plan.arena_sizes[b.dtype.name] = start + b.size
    plan.bytes_planned = sum(n * np.dtype(d).itemsize for d, n in plan.arena_sizes.items())
    plan.bytes_imperative = imperative_bytes(reference_graph)


def _forward_into_outputs(plan, steps):
    """Phase 2: a kernel result read only by the loop that turns it into a graph output (the
    product before its bias add, in a training forward) is written straight into that
    output's fresh array; the loop then updates it in place. No buffer at all."""
    g = plan.graph
    readers: dict = {}
    for s in steps:
        for e in s.inputs:
            readers.setdefault(plan.root[e], set()).add(s.id)
    taken = set()
    for s in steps:
        if s.kind != "fused":
            continue
        for e in s.outputs:
            if plan.root[e] != e or plan.storage.get(e) != "output":
                continue
            for d in s.inputs:
                if (plan.root[d] != d or plan.storage.get(d) != "arena" or d in taken
                        or readers.get(d) != {s.id}
                        or g.shape_of(d) != g.shape_of(e)
                        or np.dtype(g.dtype_of(d)) != np.dtype(g.dtype_of(e))):
                    continue
                taken.add(d)
                for v, r in list(plan.root.items()):
                    if r == d:
                        plan.root[v] = e
                del plan.storage[d]
                plan.inplace.append((e, d))
                break


def _best_fit(plan, free, dt, size):
    fitting = [b for b in free if plan.buffers[b].size >= size]
    if fitting:
        pick = min(fitting, key=lambda b: plan.buffers[b].size)
    elif free:
        pick = max(free, key=lambda b: plan.buffers[b].size)     # grow the biggest
    else:
        buf = Buffer(len(plan.buffers), dt, 0, 0, [])
        plan.buffers.append(buf)
        return buf
    free.remove(pick)
    return plan.buffers[pick]


def _inplace_candidate(plan, step, e, dt, size, taken):
    """A buffer of an operand of this loop that dies here, read element for element."""
    g = plan.graph
    out_shape = g.shape_of(e)
    for operand in step.inputs:
        r = plan.root[operand]
        if plan.storage.get(r) != "arena" or r in taken or plan.live[r][1] != step.id:
            continue
        if g.shape_of(operand) != out_shape or np.dtype(g.dtype_of(operand)) != dt:
            continue
        # every alias of the root must be read at the same index: the root itself
        # has the operand's size (a view of it would have the same number of elements)
        buf = plan.buffers[plan.buffer_of[r]]
        if buf.values[-1] != r or _numel(g.shape_of(r)) != size:
            continue
        taken.add(r)
        plan.inplace.append((e, operand))
        return buf
    return None
