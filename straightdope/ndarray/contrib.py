"""`nd.contrib`: the control-flow operators run imperatively (plain Python loops), and
the value tests isinf / isfinite / isnan (at the end).

They take the same functions as `sym.contrib`'s, so a `hybrid_forward` that calls
`F.contrib.foreach(...)` works with either `F`: here the body runs once per step on
real arrays (and autograd records every op), there it is traced once into a graph.
"""
from __future__ import annotations

import numpy as _np_module

from ..ops import OpError
from ..ops.control_flow import (check_count, check_max_iterations, check_pred, check_step,
                                check_steps, flatten, regroup, step_results)
from .ndarray import NDArray, invoke


def _stack_steps(outputs, fmt, steps=None):
    """The steps' outputs stacked along a new axis 0 (zero rows added up to `steps`),
    nested as `fmt`, the format of one step's outputs."""
    if not outputs:
        return []
    stacked = []
    for k in range(len(outputs[0])):
        out = invoke("concat", [o[k].expand_dims(0) for o in outputs], {"dim": 0})  # stack
        if steps is not None and steps > len(outputs):
            pad = NDArray(_np_module.zeros((steps - len(outputs),) + out.shape[1:], out.dtype))
            out = invoke("concat", [out, pad], {"dim": 0})
        stacked.append(out)
    return regroup(stacked, fmt)


def foreach(body, data, init_states, name="foreach", _drop_unused=False):
    """Run `body(data_t, states) -> (outputs_t, new_states)` for every t along axis 0
    of `data`; return (outputs stacked along axis 0, final states). Data, states and
    outputs may each be one array or a (nested) list of them, as in MXNet."""
    data_list, data_fmt = flatten(data, NDArray, "foreach: data")
    states, states_fmt = flatten(init_states, NDArray, "foreach: init_states")
    if not data_list:
        raise OpError("foreach: data is an empty list; give at least one array to iterate over")
    steps = data_list[0].shape[0]
    if any(d.shape[0] != steps for d in data_list):
        raise OpError(f"foreach: every data array must have the same length along axis 0, "
                      f"got shapes {[d.shape for d in data_list]}")
    check_steps(steps, [d.shape for d in data_list])
    slices = [invoke("split", [d], {"num_outputs": steps, "axis": 0, "squeeze_axis": True})
              if steps > 1 else
              [d.reshape(d.shape[1:])] for d in data_list]
    slices = [[s] if isinstance(s, NDArray) else list(s) for s in slices]
    outputs, out_fmt = [], []
    for t in range(steps):
        xs = regroup([s[t] for s in slices], data_fmt)
        outs, out_fmt, new_list, _ = step_results(
            body(xs, regroup(states, states_fmt)), NDArray, "foreach: the body")
        check_count("foreach", "the body", len(new_list), len(states), "loop state")
        check_step("foreach", t, outs, outputs[0] if outputs else None, new_list, states)
        outputs.append(outs)
        states = new_list
    return _stack_steps(outputs, out_fmt), regroup(states, states_fmt)


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Repeat `func(*loop_vars) -> (outputs, new_loop_vars)` while `cond(*loop_vars)` is
    true, at most `max_iterations` times. Returns (outputs stacked along axis 0, with
    zero rows after the steps taken up to max_iterations rows, as the traced loop gives
    them; final loop variables). func may return None for no outputs; a single output
    comes back as one array, as in MXNet (whose padding rows are uninitialised)."""
    max_iterations = check_max_iterations(max_iterations)
    flat, vars_fmt = flatten(loop_vars, NDArray, "while_loop: loop_vars")
    if not flat:
        raise OpError("while_loop: loop_vars is empty; give at least one loop variable")
    # func and cond take the loop variables as positional arguments
    args = (lambda values: regroup(values, vars_fmt) if vars_fmt != 0 else [values[0]])
    outputs, out_fmt = [], []
    for t in range(max_iterations):
        if not bool(cond(*args(flat)).asnumpy().reshape(-1)[0]):
            break
        outs, out_fmt, new_vars, _ = step_results(func(*args(flat)), NDArray,
                                                  "while_loop: func")
        check_count("while_loop", "func", len(new_vars), len(flat), "loop variable")
        check_step("while_loop", t, outs, outputs[0] if outputs else None, new_vars,
                   flat, "loop variable")
        outputs.append(outs)
        flat = new_vars
    return _stack_steps(outputs, out_fmt, max_iterations), regroup(flat, vars_fmt)


def cond(pred, then_func, else_func, name="cond"):
    """`then_func()` if `pred` (a one-element array) is nonzero, else `else_func()`."""
    if not isinstance(pred, NDArray):
        raise TypeError(f"cond: pred must be an NDArray, got {type(pred).__name__}")
    check_pred(pred.size, pred.shape)
    return then_func() if bool(pred.asnumpy().reshape(-1)[0]) else else_func()


__all__ = ["foreach", "while_loop", "cond", "rand_zipfian"]


def zipfian(uniform, true_classes, num_sampled, range_max, ctx=None):
    """rand_zipfian with `uniform` nd's or sym's random.uniform (the rest are methods of
    either, MXNet's code): `num_sampled`
    classes of [0, range_max) drawn with replacement from the log-uniform distribution
    P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1), and the expected
    counts of the true and of the sampled classes (float64)."""
    import math
    log_range = math.log(range_max + 1)
    kwargs = {} if ctx is None else {"ctx": ctx}
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64", **kwargs)
    sampled = (rand.exp() - 1).astype("int64") % range_max
    true = true_classes.astype("float64")
    count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
    drawn = sampled.astype("float64")
    count_sampled = ((drawn + 2.0) / (drawn + 1.0)).log() / log_range * num_sampled
    return sampled, count_true, count_sampled


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draw from the approximately log-uniform (Zipfian) distribution over [0, range_max):
    (sampled classes int64, expected count of each true class, of each sampled class)."""
    from .random import uniform
    return zipfian(uniform, true_classes, num_sampled, range_max, ctx)


def _flags(test, doc):
    def function(data):
        return NDArray(test(data._data).astype(data._data.dtype), data._ctx)
    function.__doc__ = doc
    return function


isinf = _flags(_np_module.isinf, "1 where the value is +inf or -inf, else 0.")
isfinite = _flags(_np_module.isfinite, "1 where the value is finite, else 0.")
isnan = _flags(_np_module.isnan, "1 where the value is NaN, else 0.")


def _contrib_ops(namespace, functions, prefix="_contrib_"):
    """The registry's `_contrib_X` op functions (in `functions`) as `contrib.X` (in
    `namespace`), as MXNet names them; nd.contrib and sym.contrib both. (Also the
    `_image_X` ops as `image.X`, with that prefix.)"""
    for name, function in list(functions.items()):
        if name.startswith(prefix) and name[len(prefix):] not in namespace:
            namespace[name[len(prefix):]] = function
