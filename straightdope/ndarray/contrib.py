"""`nd.contrib`: the control-flow operators run imperatively (plain Python loops).

They take the same functions as `sym.contrib`'s, so a `hybrid_forward` that calls
`F.contrib.foreach(...)` works with either `F`: here the body runs once per step on
real arrays (and autograd records every op), there it is traced once into a graph.
"""
from __future__ import annotations

from ..ops import OpError
from .ndarray import NDArray


def _as_list(x, what):
    if isinstance(x, NDArray):
        return [x], True
    if isinstance(x, (list, tuple)) and all(isinstance(a, NDArray) for a in x):
        return list(x), False
    raise TypeError(f"{what} must be an NDArray or a list of NDArrays, got "
                    f"{type(x).__name__}")


def _check_shapes(op_name, t, new, old, kind):
    for k, (a, b) in enumerate(zip(new, old)):
        if a.shape != b.shape:
            raise OpError(f"{op_name}: at step {t} the body returns {kind} {k} with shape "
                          f"{a.shape}, but it had shape {b.shape} "
                          f"{'when it came in' if kind.startswith('loop') else 'at step 0'}; "
                          f"{'a loop state must keep its shape' if kind.startswith('loop') else 'outputs are stacked, so every step must give one shape'}.")


def foreach(body, data, init_states, name="foreach", _drop_unused=False):
    """Run `body(data_t, states) -> (outputs_t, new_states)` for every t along axis 0
    of `data`; return (outputs stacked along axis 0, final states)."""
    from . import split, stack
    data_list, data_single = _as_list(data, "foreach: data")
    states, states_single = ([], False) if isinstance(init_states, (list, tuple)) and \
        not init_states else _as_list(init_states, "foreach: init_states")
    steps = data_list[0].shape[0]
    if any(d.shape[0] != steps for d in data_list):
        raise OpError(f"foreach: every data array must have the same length along axis 0, "
                      f"got shapes {[d.shape for d in data_list]}")
    slices = [split(d, num_outputs=steps, axis=0, squeeze_axis=True) if steps > 1 else
              [d.reshape(d.shape[1:])] for d in data_list]
    slices = [[s] if isinstance(s, NDArray) else list(s) for s in slices]
    outputs, out_single = [], True
    for t in range(steps):
        xs = [s[t] for s in slices]
        out, new_states = body(xs[0] if data_single else xs,
                               states[0] if states_single else states)
        outs, out_single = ([], False) if isinstance(out, (list, tuple)) and not out else \
            _as_list(out, "foreach: the body's outputs")
        new_list = [] if isinstance(new_states, (list, tuple)) and not new_states else \
            _as_list(new_states, "foreach: the body's states")[0]
        if len(new_list) != len(states):
            raise OpError(f"foreach: the body returns {len(new_list)} states but was given "
                          f"{len(states)}; return one new value per loop state")
        _check_shapes("foreach", t, new_list, states, "loop state")
        if outputs:
            _check_shapes("foreach", t, outs, outputs[0], "output")
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
    if max_iterations is None:
        raise OpError("while_loop: max_iterations is required (MXNet asks for it too, so "
                      "that the same code can be hybridized); pass the most steps the loop "
                      "may take")
    outputs = []
    for t in range(int(max_iterations)):
        if not bool(cond(*loop_vars).asnumpy().reshape(-1)[0]):
            break
        out, new_vars = func(*loop_vars)
        outs = [] if isinstance(out, (list, tuple)) and not out else \
            _as_list(out, "while_loop: func's outputs")[0]
        new_vars = _as_list(new_vars, "while_loop: func's new loop_vars")[0]
        if len(new_vars) != len(loop_vars):
            raise OpError(f"while_loop: func returns {len(new_vars)} loop variables but was "
                          f"given {len(loop_vars)}")
        _check_shapes("while_loop", t, new_vars, loop_vars, "loop variable")
        if outputs:
            _check_shapes("while_loop", t, outs, outputs[0], "output")
        outputs.append(outs)
        loop_vars = new_vars
    stacked = [stack(*[o[k] for o in outputs], axis=0) for k in range(len(outputs[0]))] \
        if outputs else []
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func, name="cond"):
    """`then_func()` if `pred` (a one-element array) is nonzero, else `else_func()`."""
    if not isinstance(pred, NDArray):
        raise TypeError(f"cond: pred must be an NDArray, got {type(pred).__name__}")
    return then_func() if bool(pred.asnumpy().reshape(-1)[0]) else else_func()


__all__ = ["foreach", "while_loop", "cond"]
