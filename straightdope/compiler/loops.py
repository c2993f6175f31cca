"""Loops in compiled graphs: a loop body is compiled ONCE and run once per step.

Unrolling a recurrent network writes every time step into the graph, so the
graph, and the time Numba takes to compile it, grow with the sequence length. A
traced `foreach` instead is one node holding its body. Here a graph with such
nodes is cut into pieces:

    segment 0 (one compiled function) -> foreach (body compiled once, run T times)
              -> segment 1 (one compiled function) -> ...

Each segment is an ordinary graph for `backend.Executable` (made by the backend's
`without_loops`); a loop node runs its compiled body in a Python loop, writing each
step's outputs (and the states each step saw, which the backward pass reads) into arrays
allocated once per call with a leading time axis. Compile time therefore does not depend
on the number of steps, only on the size of the body. The backward pass of a `foreach`
is itself a `foreach` (over the reversed sequence), so it runs the same way; the weight
gradients it adds up step by step leave its body and become one matrix product
over all steps after the loop (`fission_sums`, "loop fission").

The ops that have no Numba kernel (placement "host" in the registry: `reverse`,
`sort`, `_while_loop`, `_cond`, ...) run with their NumPy forward between segments,
as loop nodes do ("host steps"); so do ops whose kernel covers images only
(`kernel_ndim`) on other data, or not all of their attributes (`host_when`). A
`reverse` in time that only loops read becomes a view that walks the sequence backwards.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, annotate
from ..ops.control_flow import CONTROL_FLOW_OPS, _foreach_counts, body_graph, saving_body


def placement(graph: Graph, node) -> str:
    """Where this op node runs: its op's placement, or "host" for data or attributes its
    kernel does not cover (a Convolution kernel covers 2-D images: 4-D data; softmax's
    covers no `length` input): the registry entry decides (`Op.placement_for`)."""
    shapes = [graph.shape_of(tuple(e)) for e in node.inputs]
    return node.op.placement_for(node.attrs, shapes)


def runs_on_host(graph: Graph, node) -> bool:
    """Does this op node run outside the compiled code (a loop, or NumPy)?"""
    return node.op is not None and placement(graph, node) in ("host", "loop")


def needs_loops(graph: Graph) -> bool:
    return any(runs_on_host(graph, n) for n in graph.nodes)


class _Segment:
    """Consecutive compiled ops: one Executable, its input and output values."""

    def __init__(self, graph, nodes, later_uses, backend_exe, is_train, flags):
        ids = {n.id for n in nodes}
        inputs, seen = [], set()
        for n in nodes:
            for e in n.inputs:
                e = tuple(e)
                if e[0] not in ids and e not in seen:
                    seen.add(e)
                    inputs.append(e)
        self.inputs = inputs
        self.outputs = [(n.id, k) for n in nodes for k in range(n.num_outputs)
                        if (n.id, k) in later_uses]
        built, remap = [], {}
        for e in inputs:
            src = graph.nodes[e[0]]
            remap[e] = (len(built), 0)
            built.append(Node(len(built), f"in{len(built)}", None, kind="data",
                              shapes=[src.shapes[e[1]]], dtypes=[src.dtypes[e[1]]]))
        for n in nodes:
            new = Node(len(built), n.name, n.op, dict(n.attrs),
                       [remap[tuple(e)] for e in n.inputs], n.num_outputs, {}, "op",
                       list(n.shapes), list(n.dtypes))
            built.append(new)
            for k in range(n.num_outputs):
                remap[(n.id, k)] = (new.id, k)
        self.graph = Graph(built, [remap[e] for e in self.outputs])
        self.exe = backend_exe(self.graph, is_train, **flags)

    def run(self, values):
        return self.exe.run([values[e] for e in self.inputs])


class _HostStep:
    """An op without a kernel (NumPy), or a loop node run by the classes below."""

    def __init__(self, graph, node, backend, is_train, later_uses, compile=True):
        self.node, self.is_train = node, is_train
        self.inputs = [tuple(e) for e in node.inputs]
        self.outputs = [(node.id, k) for k in range(node.num_outputs)]

    def run(self, values):
        return self.node.op.run(self.node.attrs, [values[e] for e in self.inputs],
                                self.is_train)


class _Reverse(_HostStep):
    """`reverse` along the time axis whose result only loops read, as data: a view that
    walks the sequence backwards instead of a copy of it (each step's slice is still
    contiguous). Backpropagation through time reverses every sequence it reads."""

    def run(self, values):
        return [values[self.inputs[0]][::-1]]


def _read_only_by_loops(graph, entry, users):
    """Whether every user of `entry` is a foreach that reads it as data (not a state)."""
    def as_data(user):
        node = graph.nodes[user]
        n_data = len(node.attrs["in_data_locs"]) if node.op.name == "_foreach" else 0
        return entry in [tuple(e) for e in node.inputs[:n_data]] and \
            entry not in [tuple(e) for e in node.inputs[n_data:]]
    return bool(users) and all(as_data(u) for u in users)


class _Foreach(_HostStep):
    """A foreach node: its body compiled once, then run once per step.

    The body's outputs are written, step by step, into arrays with a leading time
    axis: the stacked outputs, and, when a backward pass will read them, the states
    each step saw and the values each step saved for the gradient (the node's hidden
    outputs, see `ops.control_flow.saving_body`). All of them are views of ONE buffer
    allocated before the first step; the node's outputs that nothing reads are not
    computed at all (an inference call saves nothing). States that only add up a
    product over steps leave the body (`fission_sums`) and are computed after the loop."""

    def __init__(self, graph, node, backend, is_train, later_uses, compile=True):
        super().__init__(graph, node, backend, is_train, later_uses)
        a = node.attrs
        self.n_data, self.n_states, self.n_out = _foreach_counts(a)
        n_vis = self.n_out + self.n_states
        saving, n_saved = saving_body(a)
        hidden = range(n_vis, node.num_outputs)
        keep = any((node.id, k) in later_uses for k in hidden)
        body = saving if keep and n_saved else body_graph(a["subgraphs"][0])
        self.n_saved = n_saved if body is saving else 0
        self.keep_history = keep
        self.outputs = self.outputs[:n_vis + (self.n_states + self.n_saved if keep else 0)]
        self.data_locs, self.state_locs = a["in_data_locs"], a["in_state_locs"]
        self.remain_locs = a["remain_locs"]
        self.n_feeds = len(body.input_names)
        locs = list(self.data_locs) + list(self.state_locs) + list(self.remain_locs)
        shapes, dtypes = {}, {}
        for k, (loc, e) in enumerate(zip(locs, self.inputs)):
            shape = graph.shape_of(e)
            name = body.input_names[loc]
            shapes[name] = tuple(shape[1:]) if k < self.n_data else tuple(shape)
            dtypes[name] = graph.dtype_of(e)
        shaped = annotate(body, shapes, dtypes)
        self.sums, n_extra = [], 0
        if not keep:        # a sum's running value per step is not kept: only without history
            shaped, self.sums, n_extra = fission_sums(shaped, self.n_out, self.data_locs,
                                                      self.state_locs)
        hoisted = {s.state for s in self.sums}
        self.carried = [k for k in range(self.n_states) if k not in hoisted]
        specs = [(tuple(shaped.shape_of(e)), np.dtype(shaped.dtype_of(e)))
                 for e in shaped.outputs]
        n_carried = len(self.carried)
        # per-step outputs: the body's outputs, saved values and the sums' operands
        self.per_step_specs = specs[:self.n_out] + specs[self.n_out + n_carried:]
        self.n_extra = n_extra
        # static_alloc: the body's scratch memory is reused from step to step; the graph
        # tier: one compiled call per step, no Python between the body's kernels
        self.body = backend.for_shapes(shaped, is_train=is_train, static_alloc=True,
                                       tier="graph", compile=compile)

    def _buffers(self, steps, states):
        """Views of one new buffer, each with a leading time axis: the per-step outputs
        (stacked outputs, saved values, the sums' operands), then the states each step
        saw if a backward pass reads them."""
        specs = list(self.per_step_specs)
        if self.keep_history:
            specs += [(s.shape, s.dtype) for s in states]
        sizes = [steps * int(np.prod(shape, dtype=np.int64)) for shape, _ in specs]
        views, buffers = [], {}
        for dt in {dt for _, dt in specs}:
            buffers[dt] = [np.empty(sum(n for n, (_, d) in zip(sizes, specs) if d == dt), dt), 0]
        for n, (shape, dt) in zip(sizes, specs):
            buf = buffers[dt]
            views.append(buf[0][buf[1]:buf[1] + n].reshape((steps,) + shape))
            buf[1] += n
        return views

    def run(self, values):
        arrays = [values[e] for e in self.inputs]
        data = arrays[:self.n_data]
        states = arrays[self.n_data:self.n_data + self.n_states]
        feeds = [None] * self.n_feeds
        for loc, value in zip(self.remain_locs, arrays[self.n_data + self.n_states:]):
            feeds[loc] = value
        for s in self.sums:             # the body no longer reads them
            feeds[self.state_locs[s.state]] = states[s.state]
        carried = [states[k] for k in self.carried]
        carried_locs = [self.state_locs[k] for k in self.carried]
        steps = data[0].shape[0]
        views = self._buffers(steps, carried)
        n_out, n_carried, n_rest = self.n_out, len(carried), len(self.per_step_specs) - self.n_out
        stacked, rest, history = views[:n_out], views[n_out:n_out + n_rest], views[n_out + n_rest:]
        for t in range(steps):
            for loc, value in zip(self.data_locs, data):
                feeds[loc] = value[t]
            for loc, value in zip(carried_locs, carried):
                feeds[loc] = value
            for seen, value in zip(history, carried):
                seen[t] = value
            results = self.body.run(feeds)
            for out, r in zip(stacked, results):
                out[t] = r
            for out, r in zip(rest, results[n_out + n_carried:]):
                out[t] = r
            carried = results[n_out:n_out + n_carried]
        finals = list(states)
        for k, value in zip(self.carried, carried):
            finals[k] = np.asarray(value)
        extras = rest[len(rest) - self.n_extra:]
        for s in self.sums:
            finals[s.state] = s.total(states[s.state], data, stacked, extras)
        return stacked + finals + history + rest[:len(rest) - self.n_extra]


# ------------------------------------------------------------------ loop fission
# A backward foreach adds up each weight's gradient in a loop state, one small matrix
# product per step: dW += dot(h_t, dgates_t, transpose_a=True). The sum over steps of
# those products is ONE product of the steps side by side (T*N rows), which BLAS runs
# much closer to its peak, and the loop loses a product and an addition per step.
# MXNet's fused CPU LSTM (src/operator/rnn_impl.h) computes the input weights' gradient
# so, after its loop, and adds up the hidden weights' one step by step; here both leave.
_ADDS = ("broadcast_add", "elemwise_add")
# (dot's gradient wraps its operands and result in `_dot_matrix` and `reshape_like`: on
# matrices both keep values and shape)
_SAME_VALUES = ("Flatten", "reshape", "reshape_like", "_sum_to_like", "_copy", "identity",
                "_dot_matrix")


class _Sum:
    """A loop state the body only adds to: `state += dot(a_t, b_t, transpose_a=True)`
    or `state += sum(a_t, axis=0)`. `operands` say where each step's a_t (and b_t) is
    after the loop: ("data", k) the k-th sequence the loop reads, ("out", k) its k-th
    stacked output, ("extra", k) an output added to the body for this."""

    def __init__(self, state, kind, operands):
        self.state, self.kind, self.operands = state, kind, operands

    def total(self, start, data, stacked, extras):
        """start + the sum over all steps, as ONE product (or sum) of all steps' rows."""
        where = {"data": data, "out": stacked, "extra": extras}
        a, *b = [_rows_of_all_steps(where[kind][k]) for kind, k in self.operands]
        step_sum = np.dot(a.T, b[0]) if self.kind == "dot" else a.sum(axis=0)
        return (start + step_sum).astype(start.dtype, copy=False)


def _rows_of_all_steps(x):
    """(T, N, P) -> (T*N, P): the steps' rows one under the other (a copy only for a
    sequence read backwards, whose steps must stay paired with the other operand's)."""
    return x.reshape(-1, x.shape[-1])


def _same_value(graph, entry):
    """The entry whose numbers `entry` holds: through ops that keep values and shape."""
    while True:
        node = graph.nodes[entry[0]]
        if node.is_var or node.op.name not in _SAME_VALUES or \
                graph.shape_of(entry) != graph.shape_of(tuple(node.inputs[0])):
            return entry
        entry = tuple(node.inputs[0])


def _sum_kind(graph, node):
    """'dot' or 'sum' if `node` is a product or sum over the batch axis (axis 0 of 2-D
    per-step values), else None."""
    if node.is_var or any(len(graph.shape_of(tuple(e))) != 2 for e in node.inputs):
        return None
    a = node.attrs
    if node.op.name == "dot" and a["transpose_a"] and not a["transpose_b"]:
        return "dot"
    axis = a.get("axis")
    if node.op.name == "sum" and axis is not None and tuple(np.atleast_1d(axis)) == (0,) \
            and not a["keepdims"] and not a["exclude"]:
        return "sum"
    return None


def fission_sums(body: Graph, n_out, data_locs, state_locs):
    """Loop fission, a pass on an annotated foreach body: the states that only add up a
    product or sum over the batch axis leave the body (`_Sum`); the per-step operands
    that are neither a sequence the loop reads nor one of its stacked outputs become
    extra outputs (after the others). Returns (new body, sums, number of extra outputs);
    the new body keeps every input, so the loop feeds it as before."""
    users, outputs = body.consumers(), [tuple(e) for e in body.outputs]
    var_ids = body.var_ids
    data = [(var_ids[loc], 0) for loc in data_locs]
    stacked = [_same_value(body, e) for e in outputs[:n_out]]
    sums, extras = [], []
    for k, loc in enumerate(state_locs):
        state, new = (var_ids[loc], 0), outputs[n_out + k]
        add = body.nodes[new[0]]
        if add.is_var or add.op.name not in _ADDS or users.get(state) != [add.id] or \
                outputs.count(new) != 1 or new in users:
            continue
        terms = [tuple(e) for e in add.inputs if tuple(e) != state]
        if len(terms) != 1 or body.shape_of(terms[0]) != body.shape_of(state):
            continue
        term = body.nodes[_same_value(body, terms[0])[0]]
        kind = _sum_kind(body, term)
        if kind is None:
            continue
        operands = []
        for e in term.inputs:
            e = _same_value(body, tuple(e))
            if e in data:
                operands.append(("data", data.index(e)))
            elif e in stacked:
                operands.append(("out", stacked.index(e)))
            else:
                operands.append(("extra", len(extras)))
                extras.append(e)
        sums.append(_Sum(k, kind, operands))
    if not sums:
        return body, [], 0
    hoisted = {s.state for s in sums}
    kept = outputs[:n_out] + [e for k, e in enumerate(outputs[n_out:n_out + len(state_locs)])
                              if k not in hoisted] + outputs[n_out + len(state_locs):]
    return _pruned(body, kept + extras), sums, len(extras)


def _pruned(graph, outputs):
    """The graph that computes only `outputs`; every variable stays, in its order."""
    keep, stack = set(graph.var_ids), [e[0] for e in outputs]
    while stack:
        i = stack.pop()
        if i not in keep:
            keep.add(i)
            stack.extend(e[0] for e in graph.nodes[i].inputs)
    new_id, nodes = {}, []
    for n in graph.nodes:
        if n.id in keep:
            new_id[n.id] = len(nodes)
            nodes.append(Node(len(nodes), n.name, n.op, dict(n.attrs),
                              [(new_id[i], k) for i, k in n.inputs], n.num_outputs,
                              dict(n.var_attrs), n.kind, list(n.shapes), list(n.dtypes)))
    return Graph(nodes, [(new_id[i], k) for i, k in outputs])


class LoopExecutable:
    """A graph with loop nodes, run as compiled segments and loops (see the module
    docstring) for one input shape. Same interface as `backend.Executable`:
    `run(inputs) -> outputs`."""
    fresh_outputs = True

    def __init__(self, graph: Graph, backend, is_train=False, static_alloc=False,
                 compile=True):
        """compile=False: planned only (see backend.Executable)."""
        self.graph, self.is_train = graph, is_train
        flags = dict(static_alloc=static_alloc, compile=compile)
        uses = {}
        for n in graph.nodes:
            for e in n.inputs:
                uses.setdefault(tuple(e), []).append(n.id)
        outputs = {tuple(e) for e in graph.outputs}
        self.steps, pending = [], []

        def close():
            if pending:
                ids = {n.id for n in pending}
                later = {e for e, users in uses.items() if e[0] in ids and
                         any(u not in ids for u in users)} | {e for e in outputs if e[0] in ids}
                self.steps.append(_Segment(graph, list(pending), later,
                                           backend.without_loops, is_train, flags))
                pending.clear()

        for n in graph.nodes:
            if n.is_var:
                continue
            if runs_on_host(graph, n):
                close()
                later = {e for e, users in uses.items() if e[0] == n.id} | outputs
                kind = _Foreach if n.op.placement == "loop" else _HostStep
                if n.op.name == "reverse" and tuple(n.attrs["axis"]) == (0,) and \
                        (n.id, 0) not in outputs and \
                        _read_only_by_loops(graph, (n.id, 0), uses.get((n.id, 0))):
                    kind = _Reverse
                self.steps.append(kind(graph, n, backend, is_train, later, compile))
            else:
                pending.append(n)
        close()
        self.var_entries = [(n.id, 0) for n in graph.nodes if n.is_var]
        self.stages = {"shapes": graph, "steps": self.describe()}
        self.timings = {}

    def describe(self) -> str:
        lines = []
        for k, step in enumerate(self.steps):
            if isinstance(step, _Segment):
                lines.append(f"step {k}: compiled segment of {len(step.graph.op_nodes)} ops")
            elif isinstance(step, _Foreach):
                body = step.body.graph
                saves = f", {step.n_saved} saved per step for the backward" if step.n_saved \
                    else ""
                sums = f", {len(step.sums)} sums over steps after the loop (loop fission)" \
                    if step.sums else ""
                lines.append(f"step {k}: {step.node.op.name} '{step.node.name}', body of "
                             f"{len(body.op_nodes)} ops compiled once, run per step{saves}{sums}")
            elif isinstance(step, _Reverse):
                lines.append(f"step {k}: reverse '{step.node.name}' (a view, read backwards)")
            else:
                lines.append(f"step {k}: {step.node.op.name} '{step.node.name}' (NumPy)")
        return "\n".join(lines)

    def placements(self) -> list:
        """(graph, op node, how it runs) for every op node of the plan, loop bodies
        included: "host", "loop", or the compiled segments' "fused" | "kernel" | "view"."""
        found = []
        for step in self.steps:
            if isinstance(step, _Segment):
                found += step.exe.placements()
            else:
                found.append((self.graph, step.node,
                              "loop" if isinstance(step, _Foreach) else "host"))
                if isinstance(step, _Foreach):
                    found += step.body.placements()
        return found

    def run(self, inputs: list) -> list:
        values = dict(zip(self.var_entries, inputs))
        for step in self.steps:
            values.update(zip(step.outputs, step.run(values)))
        results, seen = [], set()
        for e in self.graph.outputs:
            e = tuple(e)
            value = values[e]
            # fresh arrays: an input or a repeated output is copied
            fresh = e not in seen and not self.graph.nodes[e[0]].is_var
            results.append(np.asarray(value) if fresh else np.array(value, copy=True))
            seen.add(e)
        return results


__all__ = ["LoopExecutable", "needs_loops", "placement", "CONTROL_FLOW_OPS"]
