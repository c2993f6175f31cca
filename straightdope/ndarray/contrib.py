"""`nd.contrib`: the control-flow operators run imperatively (plain Python loops), and
the value tests isinf / isfinite / isnan (at the end).

They take the same functions as `sym.contrib`'s, so a `hybrid_forward` that calls
`F.contrib.foreach(...)` works with either `F`: here the body runs once per step on
real arrays (and autograd records every op), there it is traced once into a graph.
"""
from __future__ import annotations

import numpy as _np_module

from ..ops import OpError
from ..ops.control_flow import (as_list, check_count, check_max_iterations, check_pred, check_step,
                                check_steps)
from .ndarray import NDArray


def _as_list(x, what):
    return as_list(x, NDArray, what)


def foreach(body, data, init_states, name="foreach", _drop_unused=False):
    """Run `body(data_t, states) -> (outputs_t, new_states)` for every t along axis 0
    of `data`; return (outputs stacked along axis 0, final states)."""
    from . import split, stack
    data_list, data_single = _as_list(data, "foreach: data")
    states, states_single = _as_list(init_states, "foreach: init_states")
    steps = data_list[0].shape[0]
    if any(d.shape[0] != steps for d in data_list):
        raise OpError(f"foreach: every data array must have the same length along axis 0, "
                      f"got shapes {[d.shape for d in data_list]}")
    check_steps(steps, [d.shape for d in data_list])
    slices = [split(d, num_outputs=steps, axis=0, squeeze_axis=True) if steps > 1 else
              [d.reshape(d.shape[1:])] for d in data_list]
    slices = [[s] if isinstance(s, NDArray) else list(s) for s in slices]
    outputs, out_single = [], True
    for t in range(steps):
        xs = [s[t] for s in slices]
        out, new_states = body(xs[0] if data_single else xs,
                               states[0] if states_single else states)
        outs, out_single = _as_list(out, "foreach: the body's first result (its outputs)")
        new_list, _ = _as_list(new_states, "foreach: the body's second result (its states)")
        check_count("foreach", "the body", len(new_list), len(states), "loop state")
        check_step("foreach", t, outs, outputs[0] if outputs else None, new_list, states)
        outputs.append(outs)
        states = new_list
    stacked = [stack(*[o[k] for o in outputs], axis=0) for k in range(len(outputs[0]))] \
        if outputs else []
    return (stacked[0] if out_single and stacked else stacked), \
        (states[0] if states_single else states)


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Repeat `func(*loop_vars) -> (outputs, new_loop_vars)` while `cond(*loop_vars)` is
    true, at most `max_iterations` times. Returns (outputs stacked along axis 0 for the
    steps taken, final loop variables)."""
    from . import stack
    loop_vars, single = _as_list(loop_vars, "while_loop: loop_vars")
    outputs = []
    for t in range(check_max_iterations(max_iterations)):
        if not bool(cond(*loop_vars).asnumpy().reshape(-1)[0]):
            break
        out, new_vars = func(*loop_vars)
        outs, _ = _as_list(out, "while_loop: func's outputs")
        new_vars, _ = _as_list(new_vars, "while_loop: func's new loop_vars")
        check_count("while_loop", "func", len(new_vars), len(loop_vars), "loop variable")
        check_step("while_loop", t, outs, outputs[0] if outputs else None, new_vars,
                   loop_vars, "loop variable")
        outputs.append(outs)
        loop_vars = new_vars
    stacked = [stack(*[o[k] for o in outputs], axis=0) for k in range(len(outputs[0]))] \
        if outputs else []
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func, name="cond"):
    """`then_func()` if `pred` (a one-element array) is nonzero, else `else_func()`."""
    if not isinstance(pred, NDArray):
        raise TypeError(f"cond: pred must be an NDArray, got {type(pred).__name__}")
    check_pred(pred.size, pred.shape)
    return then_func() if bool(pred.asnumpy().reshape(-1)[0]) else else_func()


__all__ = ["foreach", "while_loop", "cond"]


def _flags(test, doc):
    def function(data):
        return NDArray(test(data._data).astype(data._data.dtype), data._ctx)
    function.__doc__ = doc
    return function


isinf = _flags(_np_module.isinf, "1 where the value is +inf or -inf, else 0.")
isfinite = _flags(_np_module.isfinite, "1 where the value is finite, else 0.")
isnan = _flags(_np_module.isnan, "1 where the value is NaN, else 0.")
