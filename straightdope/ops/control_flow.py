"""Control flow as operators: `_foreach`, `_while_loop`, `_cond` (MXNet 1.x's names).

Imperatively a loop is just Python (`nd.contrib.foreach` calls the body T times).
Traced, it becomes ONE node that holds its body as a graph (a *subgraph*, kept in
the node's `subgraphs` attribute, as MXNet keeps it in the node's JSON). The
node's inputs are, in this order, the sequences it iterates over, the initial
loop states, and every other value the body reads ("remain": parameters,
values computed before the loop). The `*_locs` attributes say which input of
the subgraph each of them feeds.

Everything the graph code does to a node it does to a loop node through this
file: shape inference runs the body's shape inference, the NumPy forward runs
the body with the reference executor once per step, and the gradient of a
`foreach` is another `foreach` that walks the sequence backwards
(backpropagation through time) whose body is the gradient of the body.
"""
from __future__ import annotations

import numpy as np

from .registry import Int, OpError, Shape, Subgraphs, alias, register

_GRAPHS: dict = {}      # id(subgraph Symbol) -> (Symbol, Graph): convert each body once


def body_graph(subgraph):
    """The `graph.Graph` of a subgraph Symbol (cached: a loop runs it at every step)."""
    hit = _GRAPHS.get(id(subgraph))
    if hit is not None and hit[0] is subgraph:
        return hit[1]
    from ..graph import Graph
    if len(_GRAPHS) > 512:
        _GRAPHS.clear()
    graph = Graph.from_symbol(subgraph)
    _GRAPHS[id(subgraph)] = (subgraph, graph)
    return graph


def _run(graph, feeds, is_train):
    from ..graph import run_reference
    return run_reference(graph, feeds, is_train)


def _infer(op_name, graph, known):
    from ..graph import infer_shapes
    try:
        return infer_shapes(graph, known, partial=True)
    except OpError as err:
        raise OpError(f"{op_name} body: {err}") from None


def _var_shape(graph, shapes, loc):
    return shapes[(graph.var_ids[loc], 0)]


def _fmt(shape):
    return "unknown" if shape is None else str(tuple(shape))


# ------------------------------------------------------------------ foreach
def _foreach_counts(attrs):
    return len(attrs["in_data_locs"]), len(attrs["in_state_locs"]), attrs["num_out_data"]


def _foreach_forward(attrs, *arrays, is_train=False):
    body = body_graph(attrs["subgraphs"][0])
    n_data, n_states, n_out = _foreach_counts(attrs)
    data, states = arrays[:n_data], list(arrays[n_data:n_data + n_states])
    feeds = [None] * len(body.input_names)
    for loc, value in zip(attrs["remain_locs"], arrays[n_data + n_states:]):
        feeds[loc] = value
    steps = data[0].shape[0]
    outputs, seen = [], []
    for t in range(steps):
        for loc, value in zip(attrs["in_data_locs"], data):
            feeds[loc] = value[t]
        for loc, value in zip(attrs["in_state_locs"], states):
            feeds[loc] = value
        seen.append(states)
        results = _run(body, feeds, is_train)
        _check_step("foreach", t, results[:n_out], outputs[0] if outputs else None,
                    results[n_out:], states)
        outputs.append(results[:n_out])
        states = results[n_out:]
    stacked = [np.stack([o[k] for o in outputs]) for k in range(n_out)]
    history = [np.stack([s[k] for s in seen]) for k in range(n_states)]
    return tuple(stacked + list(states) + history)


def _check_step(op_name, t, outs, first_outs, new_states, old_states):
    """A loop body must give every step the same shapes (they are stacked, and a
    state is fed back in)."""
    for k, (new, old) in enumerate(zip(new_states, old_states)):
        if new.shape != old.shape:
            raise OpError(f"{op_name}: at step {t} the body returns loop state {k} with "
                          f"shape {new.shape}, but it came in with shape {old.shape}. A loop "
                          f"state must keep its shape from step to step.")
    if first_outs is not None:
        for k, (now, then) in enumerate(zip(outs, first_outs)):
            if now.shape != then.shape:
                raise OpError(f"{op_name}: the body's output {k} has shape {now.shape} at "
                              f"step {t} but {then.shape} at step 0; the outputs of all "
                              f"steps are stacked, so they must have one shape.")


def _foreach_shapes(attrs, in_shapes):
    body = body_graph(attrs["subgraphs"][0])
    n_data, n_states, n_out = _foreach_counts(attrs)
    names = body.input_names
    data_locs, state_locs = attrs["in_data_locs"], attrs["in_state_locs"]
    locs = list(data_locs) + list(state_locs) + list(attrs["remain_locs"])
    known = {}
    steps = None
    for k, (loc, shape) in enumerate(zip(locs, in_shapes)):
        if shape is None:
            continue
        if k < n_data:
            if len(shape) == 0:
                raise OpError(f"foreach: data {k} is a scalar; foreach iterates over axis 0 "
                              f"of its data")
            if steps is not None and shape[0] != steps:
                raise OpError(f"foreach: every data array must have the same length along "
                              f"axis 0, got {in_shapes[:n_data]}")
            steps = shape[0]
            shape = shape[1:]
        known[names[loc]] = tuple(shape)
    shapes = _infer("foreach", body, known)
    new_ins = []
    for k, loc in enumerate(locs):
        inner = _var_shape(body, shapes, loc)
        if k < n_data:
            new_ins.append(None if inner is None or steps is None else (steps,) + inner)
        else:
            new_ins.append(inner)
    outs = [shapes[tuple(e)] for e in body.outputs]
    for k, loc in enumerate(state_locs):
        came, went = new_ins[n_data + k], outs[n_out + k]
        if came is not None and went is not None and tuple(came) != tuple(went):
            raise OpError(f"foreach: loop state {k} comes into the body with shape "
                          f"{_fmt(came)} but the body returns it with shape {_fmt(went)}; "
                          f"a loop state must keep its shape from step to step.")
    stacked = [None if s is None or steps is None else (steps,) + tuple(s) for s in outs[:n_out]]
    states = [new_ins[n_data + k] if new_ins[n_data + k] is not None else outs[n_out + k]
              for k in range(n_states)]
    history = [None if s is None or steps is None else (steps,) + tuple(s) for s in states]
    return new_ins, stacked + states + history


def _foreach_gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """Backpropagation through time: a foreach over the reversed sequence. Its data are
    the output gradients, the inputs and the states each step saw; its states carry the
    gradient of the loop state backwards and add up the gradients of the rest."""
    from ..graph.autodiff import gradient_symbols
    body = attrs["subgraphs"][0]
    names = body.list_inputs()
    n_data, n_states, n_out = _foreach_counts(attrs)
    n_vis = n_out + n_states
    data, init, remain = inputs[:n_data], inputs[n_data:n_data + n_states], \
        inputs[n_data + n_states:]
    head = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs[:n_vis])]
    history = outputs[n_vis:]

    def step(seq, carried):
        o_grads, xs, states = seq[:n_out], seq[n_out:n_out + n_data], seq[n_out + n_data:]
        s_grads, sums = carried[:n_states], carried[n_states:]
        mapping = {names[loc]: x for loc, x in zip(attrs["in_data_locs"], xs)}
        mapping.update({names[loc]: s for loc, s in zip(attrs["in_state_locs"], states)})
        mapping.update({names[loc]: r for loc, r in zip(attrs["remain_locs"], remain)})
        outs = list(body.substitute(mapping))
        grads = gradient_symbols(outs, list(o_grads) + list(s_grads),
                                 list(xs) + list(states) + list(remain), is_train)
        g_x, g_s, g_r = grads[:n_data], grads[n_data:n_data + n_states], \
            grads[n_data + n_states:]
        g_x = [g if g is not None else F.zeros_like(x) for g, x in zip(g_x, xs)]
        g_s = [g if g is not None else F.zeros_like(s) for g, s in zip(g_s, s_grads)]
        sums = [a if g is None else a + g for a, g in zip(sums, g_r)]
        return g_x, g_s + sums

    backwards = [F.reverse(x, axis=0) for x in list(head[:n_out]) + list(data) + list(history)]
    g_data, finals = F.contrib.foreach(step, backwards,
                                       list(head[n_out:]) + [F.zeros_like(r) for r in remain],
                                       _drop_unused=True)
    g_data = [F.reverse(g, axis=0) for g in g_data]
    return g_data + list(finals)


def _foreach_outputs(attrs):
    return attrs["num_outputs"] + len(attrs["in_state_locs"])


register("_foreach", variadic=True, needs_train_flag=True,
         attrs={"num_args": Int(0), "num_outputs": Int(required=True),
                "num_out_data": Int(required=True), "in_state_locs": Shape(()),
                "in_data_locs": Shape(()), "remain_locs": Shape(()),
                "subgraphs": Subgraphs()},
         forward=_foreach_forward, infer_shape=_foreach_shapes, gradient=_foreach_gradient,
         num_outputs=_foreach_outputs, num_visible_outputs=lambda attrs: attrs["num_outputs"],
         doc="foreach over axis 0 of the data (see straightdope.symbol.contrib.foreach). "
             "Outputs: the stacked step outputs, the final states, then (internal) the "
             "states each step saw, which its gradient reads.")


# --------------------------------------------------------------- while_loop
def _while_counts(attrs):
    return len(attrs["func_var_locs"]), attrs["num_out_data"]


def _while_forward(attrs, *arrays, is_train=False):
    cond, func = (body_graph(g) for g in attrs["subgraphs"])
    n_vars, n_out = _while_counts(attrs)
    loop_vars = list(arrays[:n_vars])
    outputs = []
    for t in range(attrs["max_iterations"]):
        values = list(loop_vars) + list(arrays[n_vars:])
        if not bool(np.asarray(_run(cond, [values[i] for i in attrs["cond_input_locs"]],
                                    is_train)[0]).reshape(-1)[0]):
            break
        results = _run(func, [values[i] for i in attrs["func_input_locs"]], is_train)
        _check_step("while_loop", t, results[:n_out], outputs[0] if outputs else None,
                    results[n_out:], loop_vars)
        outputs.append(results[:n_out])
        loop_vars = results[n_out:]
    if not outputs:
        raise OpError("while_loop: the condition is false before the first step, so the "
                      "body never ran and its outputs have no shape; make sure the loop "
                      "runs at least once")
    padded = []
    for k in range(n_out):
        out = np.zeros((attrs["max_iterations"],) + outputs[0][k].shape, outputs[0][k].dtype)
        out[:len(outputs)] = np.stack([o[k] for o in outputs])
        padded.append(out)
    return tuple(padded + list(loop_vars))


def _while_shapes(attrs, in_shapes):
    cond, func = (body_graph(g) for g in attrs["subgraphs"])
    n_vars, n_out = _while_counts(attrs)
    known_func = {func.input_names[k]: tuple(in_shapes[i])
                  for k, i in enumerate(attrs["func_input_locs"]) if in_shapes[i] is not None}
    known_cond = {cond.input_names[k]: tuple(in_shapes[i])
                  for k, i in enumerate(attrs["cond_input_locs"]) if in_shapes[i] is not None}
    _infer("while_loop condition", cond, known_cond)
    shapes = _infer("while_loop", func, known_func)
    new_ins = list(in_shapes)
    for k, i in enumerate(attrs["func_input_locs"]):
        new_ins[i] = new_ins[i] or _var_shape(func, shapes, k)
    outs = [shapes[tuple(e)] for e in func.outputs]
    for j, loc in enumerate(attrs["func_var_locs"]):
        came, went = new_ins[j], outs[n_out + j]
        if came is not None and went is not None and tuple(came) != tuple(went):
            raise OpError(f"while_loop: loop variable {j} comes into the body with shape "
                          f"{_fmt(came)} but the body returns it with shape {_fmt(went)}; "
                          f"loop variables must keep their shapes.")
    stacked = [None if s is None else (attrs["max_iterations"],) + tuple(s)
               for s in outs[:n_out]]
    return new_ins, stacked + [new_ins[j] for j in range(n_vars)]


register("_while_loop", variadic=True, needs_train_flag=True,
         attrs={"num_args": Int(0), "num_outputs": Int(required=True),
                "num_out_data": Int(required=True), "max_iterations": Int(required=True),
                "cond_input_locs": Shape(()), "func_input_locs": Shape(()),
                "func_var_locs": Shape(()), "subgraphs": Subgraphs()},
         forward=_while_forward, infer_shape=_while_shapes, num_outputs=-1,
         doc="while_loop(cond, func, loop_vars, max_iterations) traced: outputs stacked "
             "and padded with zeros to max_iterations steps, then the final loop "
             "variables. (No gradient yet: use foreach for loops you train through.)")


# --------------------------------------------------------------------- cond
def _cond_forward(attrs, *arrays, is_train=False):
    pred, then, other = (body_graph(g) for g in attrs["subgraphs"])
    take = lambda locs: [arrays[i] for i in locs]   # noqa: E731
    flag = np.asarray(_run(pred, take(attrs["cond_input_locs"]), is_train)[0])
    if bool(flag.reshape(-1)[0]):
        return tuple(_run(then, take(attrs["then_input_locs"]), is_train))
    return tuple(_run(other, take(attrs["else_input_locs"]), is_train))


def _cond_shapes(attrs, in_shapes):
    graphs = [body_graph(g) for g in attrs["subgraphs"]]
    new_ins = list(in_shapes)
    results = []
    for what, graph, locs in zip(("condition", "then branch", "else branch"), graphs,
                                 ("cond_input_locs", "then_input_locs", "else_input_locs")):
        known = {graph.input_names[k]: tuple(in_shapes[i])
                 for k, i in enumerate(attrs[locs]) if in_shapes[i] is not None}
        shapes = _infer(f"cond {what}", graph, known)
        for k, i in enumerate(attrs[locs]):
            new_ins[i] = new_ins[i] or _var_shape(graph, shapes, k)
        results.append([shapes[tuple(e)] for e in graph.outputs])
    _, then, other = results
    for k, (a, b) in enumerate(zip(then, other)):
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise OpError(f"cond: output {k} has shape {_fmt(a)} in then_func but {_fmt(b)} "
                          f"in else_func; both branches must return the same shapes.")
    return new_ins, [a if a is not None else b for a, b in zip(then, other)]


def _cond_gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """The gradient of a cond is a cond of the two branches' gradients."""
    from ..graph.autodiff import gradient_symbols
    pred_g, then_g, else_g = attrs["subgraphs"]
    heads = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs)]

    def branch(graph, locs):
        def grads():
            names = graph.list_inputs()
            outs = list(graph.substitute({names[k]: inputs[i] for k, i in enumerate(locs)}))
            wrt = [inputs[i] for i in sorted(set(locs))]
            found = dict(zip(sorted(set(locs)), gradient_symbols(outs, heads, wrt, is_train)))
            return [found.get(i) if found.get(i) is not None else F.zeros_like(x)
                    for i, x in enumerate(inputs)]
        return grads

    names = pred_g.list_inputs()
    pred = pred_g.substitute({names[k]: inputs[i]
                              for k, i in enumerate(attrs["cond_input_locs"])})
    return list(F.contrib.cond(pred, branch(then_g, attrs["then_input_locs"]),
                               branch(else_g, attrs["else_input_locs"])))


register("_cond", variadic=True, needs_train_flag=True,
         attrs={"num_args": Int(0), "num_outputs": Int(required=True),
                "cond_input_locs": Shape(()), "then_input_locs": Shape(()),
                "else_input_locs": Shape(()), "subgraphs": Subgraphs()},
         forward=_cond_forward, infer_shape=_cond_shapes, gradient=_cond_gradient,
         num_outputs=-1,
         doc="cond(pred, then_func, else_func) traced: runs one branch, chosen by pred.")


CONTROL_FLOW_OPS = ("_foreach", "_while_loop", "_cond")


# ------------------------------------------------------------------ reverse
def _reverse_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is not None:
        for axis in attrs["axis"]:
            if not -len(s) <= axis < len(s):
                raise OpError(f"reverse: axis {axis} is out of range for shape {s}")
    return in_shapes, [s]


register("reverse", attrs={"axis": Shape(required=True)},
         forward=lambda attrs, x: np.ascontiguousarray(np.flip(x, axis=attrs["axis"])),
         infer_shape=_reverse_shape,
         gradient=lambda F, attrs, i, o, og: [F.reverse(og[0], axis=attrs["axis"])],
         doc="reverse(data, axis): the elements in reverse order along `axis` (a sequence "
             "read backwards: bidirectional RNNs, backpropagation through time).")
alias("flip", "reverse")
