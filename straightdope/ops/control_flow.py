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

import math

import numpy as np

from .registry import Int, OpError, Shape, Subgraphs, alias, is_complete, register

# A subgraph is a Symbol: turning it into a graph, shaping, running and differentiating
# it is the code of the layers above this one (graph/, symbol/autodiff.py), which depend
# on ops/ and never the reverse. When imported (by `import straightdope`), graph/ puts
# those functions here: Graph (from_symbol), infer_shapes, ReferenceExecutable,
# differentiate, gradient_symbols, and the Symbol class.
SUBGRAPH_CODE: dict = {}


def _code(name):
    try:
        return SUBGRAPH_CODE[name]
    except KeyError:
        raise RuntimeError(f"control-flow ops: '{name}' comes from straightdope.graph, "
                           f"which is not loaded; import straightdope (it loads it)") from None


_GRAPHS: dict = {}      # id(subgraph Symbol) -> (Symbol, Graph): convert each body once


def body_graph(subgraph):
    """The `graph.Graph` of a subgraph Symbol (cached: a loop runs it at every step)."""
    hit = _GRAPHS.get(id(subgraph))
    if hit is not None and hit[0] is subgraph:
        return hit[1]
    if len(_GRAPHS) > 512:
        _GRAPHS.clear()
    graph = _code("Graph").from_symbol(subgraph)
    _GRAPHS[id(subgraph)] = (subgraph, graph)
    return graph


_EXECUTABLES: dict = {}  # (id(Graph), is_train) -> (Graph, its ReferenceExecutable)


def _run(graph, feeds, is_train):
    """Run a body graph on NumPy arrays (its steps are listed once, not at every step)."""
    hit = _EXECUTABLES.get((id(graph), is_train))
    if hit is None or hit[0] is not graph:
        if len(_EXECUTABLES) > 512:
            _EXECUTABLES.clear()
        executable = _code("ReferenceExecutable")(graph, is_train)
        hit = _EXECUTABLES[(id(graph), is_train)] = (graph, executable)
    return hit[1].run(feeds)


def _infer(op_name, graph, known):
    try:
        return _code("infer_shapes")(graph, known, partial=True)
    except OpError as err:
        raise OpError(f"{op_name} body: {err}") from None


def _var_shape(graph, shapes, loc):
    return shapes[(graph.var_ids[loc], 0)]


def _fmt(shape):
    return "unknown" if shape is None else str(tuple(shape))


# ------------------------------------------------------------------ foreach
_GRADIENTS: dict = {}   # id(subgraph Symbol) -> (Symbol, Differentiated or the error)


def body_gradient(subgraph):
    """The body differentiated once with respect to all its inputs
    (`symbol.autodiff.differentiate`): `.forward` gives the body's outputs and then the
    values its gradient reads ("saved"), `.backward` takes the body's inputs, those
    saved values and the output gradients. Raises OpError if the body has no gradient."""
    hit = _GRADIENTS.get(id(subgraph))
    if hit is None or hit[0] is not subgraph:
        try:
            found = _code("differentiate")(subgraph, subgraph.list_inputs(), is_train=True)
        except Exception as err:   # an op without a gradient: the loop still runs forward
            found = OpError(f"foreach: the loop body has no gradient: {err}")
        if len(_GRADIENTS) > 512:
            _GRADIENTS.clear()
        hit = _GRADIENTS[id(subgraph)] = (subgraph, found)
    if isinstance(hit[1], Exception):
        raise hit[1]
    return hit[1]


def saving_body(attrs):
    """(graph, number of saved values): the body that also returns, after its outputs,
    the values the gradient reads, so that the backward pass never recomputes a step;
    the plain body (0 saved) if it has no gradient."""
    subgraph = attrs["subgraphs"][0]
    try:
        grad = body_gradient(subgraph)
    except OpError:
        return body_graph(subgraph), 0
    return body_graph(grad.forward), len(grad.saved_names)


def _foreach_counts(attrs):
    return len(attrs["in_data_locs"]), len(attrs["in_state_locs"]), attrs["num_out_data"]


def _foreach_forward(attrs, *arrays, is_train=False, keep_hidden=True):
    """Run the body once per step. With `keep_hidden` (a backward pass will read them)
    the body also returns the values its gradient reads, and those and the states each
    step saw are kept, stacked; without, the hidden outputs are None (nothing saved)."""
    body, n_saved = saving_body(attrs) if keep_hidden else (body_graph(attrs["subgraphs"][0]), 0)
    n_data, n_states, n_out = _foreach_counts(attrs)
    data, states = arrays[:n_data], list(arrays[n_data:n_data + n_states])
    check_steps(data[0].shape[0], [d.shape for d in data])
    feeds = [None] * len(body.input_names)
    for loc, value in zip(attrs["remain_locs"], arrays[n_data + n_states:]):
        feeds[loc] = value
    steps = data[0].shape[0]
    outputs, seen, saved = [], [], []
    for t in range(steps):
        for loc, value in zip(attrs["in_data_locs"], data):
            feeds[loc] = value[t]
        for loc, value in zip(attrs["in_state_locs"], states):
            feeds[loc] = value
        if keep_hidden:
            seen.append(states)
        results = _run(body, feeds, is_train)
        check_step("foreach", t, results[:n_out], outputs[0] if outputs else None,
                   results[n_out:n_out + n_states], states)
        outputs.append(results[:n_out])
        states = results[n_out:n_out + n_states]
        saved.append(results[n_out + n_states:])
    stacked = [np.stack([o[k] for o in outputs]) for k in range(n_out)]
    if not keep_hidden:
        return tuple(stacked + list(states)) + (None,) * (_foreach_outputs(attrs) - n_out
                                                         - n_states)
    history = [np.stack([s[k] for s in seen]) for k in range(n_states)]
    saved = [np.stack([s[k] for s in saved]) for k in range(n_saved)]
    return tuple(stacked + list(states) + history + saved)


# -------------------------------------------------- checks shared with nd/sym.contrib
# `nd.contrib` (Python loops on arrays) and `sym.contrib` (tracing into one node) take
# the same functions, so they check them alike, here, with the same messages.

def as_list(x, kind, what):
    """(a list of `kind` values, whether `x` was one value rather than a list); `kind` is
    NDArray for nd.contrib, Symbol for sym.contrib. An empty list stays empty."""
    if isinstance(x, kind):
        return [x], True
    if isinstance(x, (list, tuple)) and all(isinstance(a, kind) for a in x):
        return list(x), False
    raise TypeError(f"{what} must be one {kind.__name__} or a list of them, got "
                    f"{type(x).__name__}")


def flatten(x, kind, what):
    """(the `kind` values of `x`, a value or a nested list of them, in order; its format
    for `regroup`): 0 for one value, a list of formats for a list, as MXNet's
    `_flatten`. Loop states, loop variables and outputs may be nested lists."""
    if isinstance(x, kind):
        return [x], 0
    if isinstance(x, (list, tuple)):
        flat, fmt = [], []
        for item in x:
            values, f = flatten(item, kind, what)
            flat.extend(values)
            fmt.append(f)
        return flat, fmt
    raise TypeError(f"{what} must be one {kind.__name__} or a (nested) list of them, got "
                    f"{type(x).__name__}")


def regroup(flat, fmt):
    """The nesting `fmt` (from `flatten`) rebuilt around the values `flat`."""
    def take(values, f):
        if f == 0:
            return values[0], values[1:]
        out = []
        for sub in f:
            item, values = take(values, sub)
            out.append(item)
        return out, values
    return take(list(flat), fmt)[0]


def step_results(result, kind, who):
    """A loop function's (outputs, new states) flattened; None for either is no values
    (MXNet accepts `return None, new_vars` from a while_loop func)."""
    if not isinstance(result, (list, tuple)) or len(result) != 2:
        raise TypeError(f"{who} must return a pair (outputs, new states), got "
                        f"{type(result).__name__}")
    out, new = (x if x is not None else [] for x in result)
    outs, out_fmt = flatten(out, kind, f"{who}'s first result (its outputs)")
    new_flat, new_fmt = flatten(new, kind, f"{who}'s second result (its new states)")
    return outs, out_fmt, new_flat, new_fmt


def check_count(op_name, who, returned, given, noun):
    """A loop function must return one new value per loop state (or loop variable)."""
    if returned != given:
        raise OpError(f"{op_name}: {who} returns {returned} {noun}s but was given {given}; "
                      f"return one new value per {noun}")


def check_steps(steps, shapes):
    """foreach needs at least one step: its outputs are the steps' outputs stacked, and
    zero steps give nothing to take their shape from (MXNet refuses too)."""
    if steps == 0:
        raise OpError(f"foreach: the data has length 0 along axis 0 (shapes {list(shapes)}): "
                      f"there is no step to run, so the outputs have no shape; skip the loop "
                      f"when the sequence is empty")


def check_pred(size, shape):
    """cond's condition is one number, as in MXNet (which refuses any other size)."""
    if size != 1:
        raise OpError(f"cond: the condition must be one value (e.g. shape (1,)), got shape "
                      f"{tuple(shape)}; reduce it first, e.g. with .sum() or .max()")


def check_loaded(op_name, attrs, n_inputs):
    """A control-flow node read from a file: its counts and *_locs must fit its subgraphs
    and its inputs (the file may be damaged or hostile), else an OpError saying which."""
    def need(ok, why):
        if not ok:
            raise OpError(f"{op_name}: its attributes do not fit its subgraphs: {why}")

    expected = {"_foreach": 1, "_while_loop": 2, "_cond": 3}.get(op_name)
    if expected is None:        # another op holding a graph (_CachedOp): its own checks
        return
    graphs = attrs["subgraphs"]
    need(len(graphs) == expected, f"it needs {expected} subgraph(s), the node has {len(graphs)}")
    graphs = [body_graph(g) for g in graphs]

    def locs_fit(name, graph, bound):
        locs = attrs[name]
        need(len(locs) == len(graph.input_names) and all(0 <= i < bound for i in locs),
             f"{name} {list(locs)} must give each of the subgraph's {len(graph.input_names)} "
             f"inputs an index below {bound}")

    if op_name == "_foreach":
        body, states = graphs[0], len(attrs["in_state_locs"])
        locs = list(attrs["in_data_locs"]) + list(attrs["in_state_locs"]) + list(attrs["remain_locs"])
        need(sorted(locs) == list(range(len(body.input_names))) == list(range(n_inputs)),
             f"the *_locs {locs} must number the body's {len(body.input_names)} inputs and "
             f"the node's {n_inputs} once each")
        outputs = [len(body.outputs)]
        counts = (attrs["num_out_data"] + states,)
    elif op_name == "_while_loop":
        cond, func = graphs
        need(len(cond.outputs) == 1, "the condition must have one output")
        locs_fit("cond_input_locs", cond, n_inputs)
        locs_fit("func_input_locs", func, n_inputs)
        need(all(0 <= i < len(func.input_names) for i in attrs["func_var_locs"]),
             f"func_var_locs {list(attrs['func_var_locs'])} point outside the body's inputs")
        outputs = [len(func.outputs)]
        counts = (attrs["num_out_data"] + len(attrs["func_var_locs"]),)
    else:
        pred, then, other = graphs
        need(len(pred.outputs) == 1, "the condition must have one output")
        for name, graph in zip(("cond_input_locs", "then_input_locs", "else_input_locs"), graphs):
            locs_fit(name, graph, n_inputs)
        outputs = [len(then.outputs), len(other.outputs)]
        counts = ()
    for n in outputs + list(counts):
        need(n == attrs["num_outputs"], f"num_outputs is {attrs['num_outputs']}, but the "
             f"subgraphs and counts give {outputs + list(counts)} outputs")


def check_max_iterations(max_iterations):
    """while_loop needs a bound, imperatively too: the same code must also trace."""
    if max_iterations is None:
        raise OpError("while_loop: max_iterations is required (as in MXNet): a traced loop "
                      "needs a fixed size for its stacked outputs, and the same code runs "
                      "imperatively and hybridized. Pass max_iterations=<the most steps the "
                      "loop can take>.")
    return int(max_iterations)


def check_step(op_name, t, outs, first_outs, new_states, old_states, noun="loop state"):
    """A loop body must give every step the same shapes (the outputs are stacked, and a
    state is fed back in). Takes NumPy arrays or NDArrays."""
    for k, (new, old) in enumerate(zip(new_states, old_states)):
        if new.shape != old.shape:
            raise OpError(f"{op_name}: at step {t} the body returns {noun} {k} with shape "
                          f"{new.shape}, but it had shape {old.shape} when it came in; a "
                          f"{noun} must keep its shape from step to step.")
    if first_outs is not None:
        for k, (now, then) in enumerate(zip(outs, first_outs)):
            if now.shape != then.shape:
                raise OpError(f"{op_name}: at step {t} the body returns output {k} with "
                              f"shape {now.shape}, but it had shape {then.shape} at step 0; "
                              f"the outputs of all steps are stacked, so they must have one "
                              f"shape.")


def _foreach_shapes(attrs, in_shapes):
    body, n_saved = saving_body(attrs)
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
            if None not in (steps, shape[0]) and shape[0] != steps:
                raise OpError(f"foreach: every data array must have the same length along "
                              f"axis 0, got {in_shapes[:n_data]}")
            steps = shape[0] if shape[0] is not None else steps   # None: not known yet
            check_steps(steps, in_shapes[:n_data])
            shape = shape[1:]
        known[names[loc]] = tuple(shape)
    shapes = _infer("foreach", body, known)
    new_ins = []
    for k, loc in enumerate(locs):
        inner = _var_shape(body, shapes, loc)
        if k < n_data:      # the number of steps may be unknown (None) while the rest is
            new_ins.append(None if inner is None else (steps,) + tuple(inner))
        else:
            new_ins.append(inner)
    outs = [shapes[tuple(e)] for e in body.outputs]
    for k, loc in enumerate(state_locs):
        came, went = new_ins[n_data + k], outs[n_out + k]
        if came is not None and went is not None and tuple(came) != tuple(went):
            raise OpError(f"foreach: loop state {k} comes into the body with shape "
                          f"{_fmt(came)} but the body returns it with shape {_fmt(went)}; "
                          f"a loop state must keep its shape from step to step.")
    stacked = [None if s is None else (steps,) + tuple(s) for s in outs[:n_out]]
    states = [new_ins[n_data + k] if new_ins[n_data + k] is not None else outs[n_out + k]
              for k in range(n_states)]
    history = [None if s is None else (steps,) + tuple(s) for s in states]
    saved = [None if s is None else (steps,) + tuple(s) for s in outs[n_out + n_states:]]
    return new_ins, stacked + states + history + saved


def _foreach_dtypes(attrs, in_dtypes):
    """One dtype per output: a loop's sequences and states may differ (float32 data with
    int32 counters), so each output takes the dtype the body gives it (MXNet does too)."""
    n_data, n_states, n_out = _foreach_counts(attrs)
    subgraph = attrs["subgraphs"][0]
    try:
        body = body_gradient(subgraph).forward        # the body that also saves values
    except OpError:
        body = subgraph
    names = subgraph.list_inputs()
    locs = list(attrs["in_data_locs"]) + list(attrs["in_state_locs"]) + list(attrs["remain_locs"])
    _, outs, _ = body.infer_type_partial(**{names[loc]: dt for loc, dt in zip(locs, in_dtypes)})
    outs = [np.dtype(t) if t is not None else np.dtype(in_dtypes[0]) for t in outs]
    states = outs[n_out:n_out + n_states]
    return outs[:n_out] + states + states + outs[n_out + n_states:]


def _foreach_gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """Backpropagation through time: a foreach over the reversed sequence whose body is
    the body's own backward graph (`body_gradient`). Its data are the output gradients,
    and, as far as that graph reads them, the inputs, the states each step saw and the
    values each step saved; its states carry the gradient of the loop state backwards
    and add up the gradients of the rest."""
    grad = body_gradient(attrs["subgraphs"][0])
    names = attrs["subgraphs"][0].list_inputs()
    n_data, n_states, n_out = _foreach_counts(attrs)
    n_vis = n_out + n_states
    data, remain = inputs[:n_data], inputs[n_data + n_states:]
    head = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs[:n_vis])]
    history, saved = outputs[n_vis:n_vis + n_states], outputs[n_vis + n_states:]
    # the sequences the backward body reads, by the name it reads them under
    reads = set(grad.backward.list_inputs())
    sequences = [(names[loc], x) for loc, x in zip(attrs["in_data_locs"], data)]
    sequences += [(names[loc], h) for loc, h in zip(attrs["in_state_locs"], history)]
    sequences += list(zip(grad.saved_names, saved))
    sequences = [(name, x) for name, x in sequences if name in reads]
    fixed = {names[loc]: r for loc, r in zip(attrs["remain_locs"], remain)}

    def step(seq, carried):
        o_grads, values = seq[:n_out], seq[n_out:]
        s_grads, sums = carried[:n_states], carried[n_states:]
        mapping = dict(fixed)
        mapping.update({name: v for (name, _), v in zip(sequences, values)})
        mapping.update(zip(grad.head_names, list(o_grads) + list(s_grads)))
        grads = list(grad.backward.substitute(mapping))
        by_name = dict(zip(grad.wrt, grads))
        g_x = [by_name[names[loc]] for loc in attrs["in_data_locs"]]
        g_s = [by_name[names[loc]] for loc in attrs["in_state_locs"]]
        sums = [a + by_name[names[loc]] for a, loc in zip(sums, attrs["remain_locs"])]
        return g_x, g_s + sums

    backwards = [F.reverse(x, axis=0) for x in list(head[:n_out]) + [x for _, x in sequences]]
    g_data, finals = F.contrib.foreach(step, backwards,
                                       list(head[n_out:]) + [F.zeros_like(r) for r in remain],
                                       _drop_unused=True)
    g_data = [F.reverse(g, axis=0) for g in g_data]
    return g_data + list(finals)


def _foreach_outputs(attrs):
    return attrs["num_outputs"] + len(attrs["in_state_locs"]) + saving_body(attrs)[1]


register("_foreach", placement="loop", variadic=True, needs_train_flag=True, hidden_on_demand=True,
         attrs={"num_args": Int(0), "num_outputs": Int(required=True),
                "num_out_data": Int(required=True), "in_state_locs": Shape(()),
                "in_data_locs": Shape(()), "remain_locs": Shape(()),
                "subgraphs": Subgraphs()},
         forward=_foreach_forward, infer_shape=_foreach_shapes, gradient=_foreach_gradient,
         infer_dtype=_foreach_dtypes,
         num_outputs=_foreach_outputs, num_visible_outputs=lambda attrs: attrs["num_outputs"],
         doc="foreach over axis 0 of the data (see straightdope.symbol.contrib.foreach). "
             "Outputs: the stacked step outputs, the final states, then (internal) the "
             "states each step saw and the values each step saved, which its gradient "
             "reads.")


# --------------------------------------------------------------- while_loop
def _while_counts(attrs):
    return len(attrs["func_var_locs"]), attrs["num_out_data"]


def _while_forward(attrs, *arrays, is_train=False, keep_hidden=True):
    cond, func = (body_graph(g) for g in attrs["subgraphs"])
    n_vars, n_out = _while_counts(attrs)
    loop_vars = list(arrays[:n_vars])
    outputs, seen = [], []
    for t in range(attrs["max_iterations"]):
        values = list(loop_vars) + list(arrays[n_vars:])
        if not bool(np.asarray(_run(cond, [values[i] for i in attrs["cond_input_locs"]],
                                    is_train)[0]).reshape(-1)[0]):
            break
        results = _run(func, [values[i] for i in attrs["func_input_locs"]], is_train)
        check_step("while_loop", t, results[:n_out], outputs[0] if outputs else None,
                   results[n_out:], loop_vars, "loop variable")
        outputs.append(results[:n_out])
        seen.append(loop_vars)
        loop_vars = results[n_out:]
    steps, ran = attrs["max_iterations"], len(outputs)
    # no step ran: the body once more, its results thrown away, gives the outputs'
    # shapes and dtypes (all rows are then padding, as in MXNet)
    like = outputs[0] if outputs else \
        _run(func, [(list(loop_vars) + list(arrays[n_vars:]))[i]
                    for i in attrs["func_input_locs"]], is_train)[:n_out]
    padded = []
    for k in range(n_out):
        out = np.zeros((steps,) + like[k].shape, like[k].dtype)
        if ran:
            out[:ran] = np.stack([o[k] for o in outputs])
        padded.append(out)
    if not keep_hidden:
        return tuple(padded + list(loop_vars)) + (None,) * (n_vars + 1)
    # hidden, for the gradient: the loop variables each step saw (the steps that did
    # not run see the final ones), and 1 for the steps that ran
    history = [np.stack([s[k] for s in seen] + [loop_vars[k]] * (steps - ran))
               for k in range(n_vars)]
    mask = (np.arange(steps) < ran).astype(arrays[0].dtype).reshape(steps, 1)
    return tuple(padded + list(loop_vars) + history + [mask])


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
    steps = attrs["max_iterations"]
    stacked = [None if s is None else (steps,) + tuple(s) for s in outs[:n_out]]
    final = [new_ins[j] for j in range(n_vars)]
    history = [None if s is None else (steps,) + tuple(s) for s in final]
    return new_ins, stacked + final + history + [(steps, 1)]


def _while_gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """Backpropagation through the steps that ran: a foreach over all max_iterations
    steps, backwards, that recomputes each step's body from the loop variables it saw
    and takes its gradient. A step that did not run (mask 0) passes the gradient of the
    loop variables through unchanged and adds nothing to the others."""
    gradient_symbols = _code("gradient_symbols")
    func = attrs["subgraphs"][1]
    names = func.list_inputs()
    n_vars, n_out = _while_counts(attrs)
    n_vis = n_out + n_vars
    head = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs[:n_vis])]
    history, ran = outputs[n_vis:n_vis + n_vars], outputs[n_vis + n_vars]
    locs = attrs["func_input_locs"]          # func input k reads node input locs[k]
    fixed = sorted({i for i in locs if i >= n_vars})

    def step(seq, carried):
        o_grads, seen, ran_t = seq[:n_out], seq[n_out:n_out + n_vars], seq[-1]
        v_grads, sums = carried[:n_vars], carried[n_vars:]
        value = {i: (seen[i] if i < n_vars else inputs[i]) for i in set(locs)}
        outs = list(func.substitute({names[k]: value[i] for k, i in enumerate(locs)}))
        wrt = list(seen) + [inputs[i] for i in fixed]
        grads = gradient_symbols(outs, list(o_grads) + list(v_grads), wrt, is_train)
        grads = [g if g is not None else F.zeros_like(x) for g, x in zip(grads, wrt)]

        def when_ran(g, otherwise):
            return F.where(F.broadcast_like(ran_t, g), g, otherwise)
        new_v = [when_ran(g, v) for g, v in zip(grads[:n_vars], v_grads)]
        sums = [a + when_ran(g, F.zeros_like(g)) for a, g in zip(sums, grads[n_vars:])]
        return [], new_v + sums

    backwards = [F.reverse(x, axis=0) for x in list(head[:n_out]) + list(history) + [ran]]
    _, finals = F.contrib.foreach(step, backwards,
                                  list(head[n_out:]) + [F.zeros_like(inputs[i]) for i in fixed],
                                  _drop_unused=True)
    found = dict(zip(range(n_vars), finals[:n_vars]))
    found.update(zip(fixed, finals[n_vars:]))
    return [found.get(i) for i in range(len(inputs))]


def _while_outputs(attrs):
    return attrs["num_outputs"] + len(attrs["func_var_locs"]) + 1


register("_while_loop", placement="host",
         variadic=True, needs_train_flag=True, hidden_on_demand=True,
         attrs={"num_args": Int(0), "num_outputs": Int(required=True),
                "num_out_data": Int(required=True), "max_iterations": Int(required=True),
                "cond_input_locs": Shape(()), "func_input_locs": Shape(()),
                "func_var_locs": Shape(()), "subgraphs": Subgraphs()},
         forward=_while_forward, infer_shape=_while_shapes, gradient=_while_gradient,
         num_outputs=_while_outputs, num_visible_outputs=lambda attrs: attrs["num_outputs"],
         doc="while_loop(cond, func, loop_vars, max_iterations) traced: outputs stacked "
             "and padded with zeros to max_iterations steps, then the final loop "
             "variables; then (internal, for the gradient) the loop variables each step "
             "saw and a (max_iterations, 1) mask of the steps that ran.")


# --------------------------------------------------------------------- cond
def _cond_forward(attrs, *arrays, is_train=False):
    pred, then, other = (body_graph(g) for g in attrs["subgraphs"])
    take = lambda locs: [arrays[i] for i in locs]   # noqa: E731
    flag = np.asarray(_run(pred, take(attrs["cond_input_locs"]), is_train)[0])
    check_pred(flag.size, flag.shape)
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
    condition, then, other = results
    if condition and is_complete(condition[0]):
        check_pred(math.prod(condition[0]), condition[0])
    for k, (a, b) in enumerate(zip(then, other)):
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise OpError(f"cond: output {k} has shape {_fmt(a)} in then_func but {_fmt(b)} "
                          f"in else_func; both branches must return the same shapes.")
    return new_ins, [a if a is not None else b for a, b in zip(then, other)]


def _cond_gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """The gradient of a cond is a cond of the two branches' gradients."""
    gradient_symbols = _code("gradient_symbols")
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


register("_cond", placement="host", variadic=True, needs_train_flag=True,
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


register("reverse", placement="host", attrs={"axis": Shape(required=True)},
         forward=lambda attrs, x: np.ascontiguousarray(np.flip(x, axis=attrs["axis"])),
         infer_shape=_reverse_shape,
         gradient=lambda F, attrs, i, o, og: [F.reverse(og[0], axis=attrs["axis"])],
         doc="reverse(data, axis): the elements in reverse order along `axis` (a sequence "
             "read backwards: bidirectional RNNs, backpropagation through time).")
alias("flip", "reverse")
