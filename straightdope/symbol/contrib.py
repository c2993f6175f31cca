"""`sym.contrib`: control flow that stays in the graph (MXNet 1.x's `F.contrib`).

    outputs, states = F.contrib.foreach(body, data, init_states)
    outputs, loop_vars = F.contrib.while_loop(cond, func, loop_vars, max_iterations)
    results = F.contrib.cond(pred, then_func, else_func)

Here the Python functions run ONCE, on placeholder variables, and what they build
becomes the body of one node (`_foreach`, `_while_loop`, `_cond`). The node reads
whatever the body reads from outside (parameters, earlier values) as extra inputs,
so the body itself is a closed graph: a *subgraph*. With `F = nd` the same calls
run the Python functions on real arrays (`straightdope.ndarray.contrib`).
"""
from __future__ import annotations

from .. import name as _name
from ..attribute import AttrScope, unique_subgraph_name
from ..ops import OpError, get_op
from ..ops.control_flow import (as_list, check_count, check_max_iterations, flatten, regroup,
                                step_results)
from .symbol import Node, NpSymbol, Symbol, topological, var


def rand_zipfian(true_classes, num_sampled, range_max):
    """nd.contrib.rand_zipfian as graph nodes (MXNet's same composition of ops)."""
    from ..ndarray.contrib import zipfian
    from .random import uniform
    return zipfian(uniform, true_classes, num_sampled, range_max)


def _as_list(x, what):
    return as_list(x, Symbol, what)


def _next_serial():
    """Nodes made from now on have serials >= this one (see Node.serial)."""
    return Node(None, "_mark").serial + 1


def _close(outputs, start, placeholders):
    """Make the body graph built since `start` closed: every value it reads from outside
    (a node made before `start`, or any variable but the loop's own `placeholders`) is
    replaced by a new variable of the body. Returns (body Symbol, [(that variable's
    name, the outside value)])."""
    own = {id(p.entries[0][0]) for p in placeholders}
    stand_ins, outside = {}, []

    def inside(node):
        return id(node) in own or (node.serial >= start and not node.is_var)

    def entry(node, k):
        if inside(node):
            return (node, k)
        if (id(node), k) not in stand_ins:
            name = node.name if node.is_var else node.output_name(k)
            while name in {n for n, _ in outside}:
                name += "_"
            stand_ins[(id(node), k)] = Node(None, name, var_attrs=dict(node.var_attrs)
                                            if node.is_var else {})
            outside.append((name, Symbol([(node, k)])))
        return (stand_ins[(id(node), k)], 0)

    heads = [s.entries[0] for s in outputs]
    for node in topological(heads):
        if inside(node) and not node.is_var:
            node.inputs = [entry(c, k) for c, k in node.inputs]
    return Symbol([entry(n, k) for n, k in heads]), outside


def _placeholders(prefix, count):
    return [var(f"{prefix}{i}") for i in range(count)]


class UnusedLoopInput(OpError, AssertionError):
    """A foreach data array or state the body never reads. Also an AssertionError, the
    type MXNet raises for it, so that code catching MXNet's error still catches it."""


def _locs(body, symbols, what, op_name, drop_unused=False):
    names = body.list_inputs()
    locs, kept = [], []
    for k, s in enumerate(symbols):
        if s.name in names:
            locs.append(names.index(s.name))
            kept.append(k)
        elif not drop_unused:
            raise UnusedLoopInput(f"{op_name}: the body does not use {what} {k}; every "
                                  f"{what} must be read by the body (drop the ones it does "
                                  f"not need)")
    return locs, kept


def foreach(body, data, init_states, name="foreach", _drop_unused=False):
    """Run `body(data_t, states) -> (outputs_t, new_states)` for every t along axis 0
    of `data`; return (outputs stacked along axis 0, final states)."""
    data_list, data_fmt = flatten(data, Symbol, "foreach: data")
    states_list, states_fmt = flatten(init_states, Symbol, "foreach: init_states")
    subgraph = unique_subgraph_name(name)       # MXNet numbers the name as given
    name = _name.current().get(name, "foreach")
    start = _next_serial()
    xs = _placeholders(f"{name}_data", len(data_list))
    ss = _placeholders(f"{name}_state", len(states_list))
    with AttrScope(__subgraph_name__=subgraph):
        result = body(regroup(xs, data_fmt), regroup(ss, states_fmt))
    outs, out_fmt, new_list, _ = step_results(result, Symbol, "foreach: the body")
    check_count("foreach", "the body", len(new_list), len(states_list), "loop state")
    graph, outside = _close(outs + new_list, start, xs + ss)
    data_locs, keep_data = _locs(graph, xs, "data array", "foreach", _drop_unused)
    if not data_locs:
        raise OpError("foreach: the body reads none of the data arrays, so there is nothing "
                      "to iterate over")
    state_locs, _ = _locs(graph, ss, "loop state", "foreach")
    names = graph.list_inputs()
    remain_locs = [names.index(n) for n, _ in outside]
    inputs = [data_list[k] for k in keep_data] + states_list + [s for _, s in outside]
    attrs = {"num_args": len(inputs) + 1, "num_outputs": len(outs) + len(new_list),
             "num_out_data": len(outs), "in_state_locs": tuple(state_locs),
             "in_data_locs": tuple(data_locs), "remain_locs": tuple(remain_locs),
             "subgraphs": (graph,)}
    results = _node("_foreach", name, inputs, attrs)
    return regroup(results[:len(outs)], out_fmt), regroup(results[len(outs):], states_fmt)


def _node(op_name, name, inputs, attrs):
    op = get_op(op_name)
    node = Node(op, name, op.parse_attrs(attrs), [s.entries[0] for s in inputs])
    kind = NpSymbol if any(type(s) is NpSymbol for s in inputs) else Symbol   # np in, np out
    return [kind([(node, i)]) for i in range(node.num_visible())]


def _gather(inputs, index, graph, outside, fixed=None):
    """Where each input of a closed graph comes from among the node's `inputs` (which
    grow by the outside values not seen yet); `fixed` pins names to input positions."""
    by_name, locs = dict(outside), []
    for n in graph.list_inputs():
        if fixed and n in fixed:
            locs.append(fixed[n])
            continue
        source = by_name[n]
        key = source.entries[0]
        key = (id(key[0]), key[1])
        if key not in index:
            index[key] = len(inputs)
            inputs.append(source)
        locs.append(index[key])
    return tuple(locs)


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Repeat `func(*loop_vars) -> (outputs, new_loop_vars)` while `cond(*loop_vars)`,
    at most `max_iterations` times. Returns (outputs stacked along axis 0 and padded
    with zeros to max_iterations steps, final loop variables)."""
    vars_list, vars_fmt = flatten(loop_vars, Symbol, "while_loop: loop_vars")
    max_iterations = check_max_iterations(max_iterations)
    if not vars_list:
        raise OpError("while_loop: loop_vars is empty; give at least one loop variable")
    args = (lambda values: regroup(values, vars_fmt) if vars_fmt != 0 else [values[0]])
    given, name = name, _name.current().get(name, "while_loop")
    start = _next_serial()
    vs = _placeholders(f"{name}_var", len(vars_list))
    with AttrScope(__subgraph_name__=unique_subgraph_name(f"{given}_cond")):
        pred = cond(*args(vs))
    pred, _ = _as_list(pred, "while_loop: cond's result")
    cond_graph, cond_outside = _close(pred, start, vs)
    start = _next_serial()
    vs2 = _placeholders(f"{name}_var", len(vars_list))
    with AttrScope(__subgraph_name__=unique_subgraph_name(f"{given}_func")):
        result = func(*args(vs2))
    outs, out_fmt, new_list, _ = step_results(result, Symbol, "while_loop: func")
    check_count("while_loop", "func", len(new_list), len(vars_list), "loop variable")
    func_graph, func_outside = _close(outs + new_list, start, vs2)
    # The loop variables are the node's first inputs; what the bodies read follows.
    inputs, index = list(vars_list), {}
    cond_locs = _gather(inputs, index, cond_graph, cond_outside,
                        {v.name: j for j, v in enumerate(vs)})
    func_locs = _gather(inputs, index, func_graph, func_outside,
                        {v.name: j for j, v in enumerate(vs2)})
    func_names = func_graph.list_inputs()
    missing = [j for j, v in enumerate(vs2) if v.name not in func_names]
    if missing:
        raise OpError(f"while_loop: func does not read loop variable {missing[0]}; every "
                      f"loop variable must be used by func")
    attrs = {"num_args": len(inputs) + 2, "num_outputs": len(outs) + len(new_list),
             "num_out_data": len(outs), "max_iterations": int(max_iterations),
             "cond_input_locs": cond_locs, "func_input_locs": func_locs,
             "func_var_locs": tuple(func_names.index(v.name) for v in vs2),
             "subgraphs": (cond_graph, func_graph)}
    results = _node("_while_loop", name, inputs, attrs)
    return regroup(results[:len(outs)], out_fmt), regroup(results[len(outs):], vars_fmt)


def cond(pred, then_func, else_func, name="cond"):
    """Run `then_func()` if `pred` (a one-element Symbol) is nonzero, else `else_func()`.
    Both branches must return the same number of outputs with the same shapes."""
    given, name = name, _name.current().get(name, "cond")
    closed = []
    for fn, what in ((lambda: pred, "pred"), (then_func, "then_func"), (else_func, "else_func")):
        start = _next_serial()
        with AttrScope(__subgraph_name__=unique_subgraph_name(f"{given}_{what[:4]}")):
            result = fn()
        outs, single = _as_list(result, f"cond: {what}'s result")
        closed.append((outs, single, start))
    (pred_outs, _, _), (then_outs, then_single, s1), (else_outs, _, s2) = closed
    if len(then_outs) != len(else_outs):
        raise OpError(f"cond: then_func returns {len(then_outs)} outputs but else_func "
                      f"returns {len(else_outs)}; both branches must return as many.")
    graphs = [_close(pred_outs, _next_serial(), []), _close(then_outs, s1, []),
              _close(else_outs, s2, [])]
    inputs, index = [], {}
    locs = [_gather(inputs, index, g, outside) for g, outside in graphs]
    attrs = {"num_args": len(inputs) + 3, "num_outputs": len(then_outs),
             "cond_input_locs": locs[0], "then_input_locs": locs[1],
             "else_input_locs": locs[2], "subgraphs": tuple(g for g, _ in graphs)}
    results = _node("_cond", name, inputs, attrs)
    return results[0] if then_single else results


__all__ = ["foreach", "while_loop", "cond"]
