"""`mx.np` functions that only move elements: roll, rot90, tril, pad, delete, insert, ...

Each output element of these is one input element (or a constant), so one pair of ops
covers them all, with gradients:

  `_np_rearrange(data, function=, args=)`    the NumPy function itself, as the forward;
  `_np_rearrange_backward(out_grad, data)`   its gradient: each output gradient is added
                                             to the input element it came from.

Which element that is, the *index map* says: the function applied to the numbers
1..n laid out in data's shape (a constant it fills in, like pad's or tril's, is 0
there). `_np_insert(data, values)` does the same with two inputs (values count -1..-m).
`args` is the function's other arguments as a Python literal ("(2, (0, 1))"), read
with `ast.literal_eval` (literals only, never code).
"""
import ast

import numpy as np

from .registry import Attr, OpError, is_complete, register


def _pad(x, pad_width, mode, constant):
    if mode == "constant":
        return np.pad(x, pad_width, mode, constant_values=constant)
    return np.pad(x, pad_width, mode)


def _resize(x, new_shape):
    flat = x.reshape(-1)
    if flat.size == 0:
        return np.zeros(new_shape, x.dtype)     # NumPy's; MXNet fills zeros too
    return np.resize(flat, new_shape)


# function name -> f(x, *args); args exactly as the mx.np function passes them
REARRANGE = {
    "roll": lambda x, shift, axis: np.roll(x, shift, axis),
    "rot90": lambda x, k, axes: np.ascontiguousarray(np.rot90(x, k, axes)),
    "tril": lambda x, k: np.tril(x, k),
    "triu": lambda x, k: np.triu(x, k),
    "pad": _pad,
    "delete": lambda x, obj, axis: np.delete(x, obj, axis),
    "resize": _resize,
    "diagflat": lambda x, k: np.diagflat(x, k),
    "insert_scalar": lambda x, obj, axis, value: np.insert(x, obj, value, axis),
}
FILLS = ("pad", "insert_scalar")     # their last argument is the constant they fill in


def _args(attrs):
    return tuple(_slices(a) for a in ast.literal_eval(attrs["args"]))


def _slices(arg):
    """("slice", start, stop, step), how a slice is written in `args`, as a slice."""
    if isinstance(arg, tuple) and len(arg) == 4 and arg[0] == "slice":
        return slice(*arg[1:])
    return arg


def _apply(attrs, x):
    try:
        return REARRANGE[attrs["function"]](x, *_args(attrs))
    except (ValueError, IndexError, TypeError) as err:
        raise OpError(f"np.{attrs['function']}: {err} (array of shape {x.shape})") from None


def _index_map(attrs, shape):
    """The function applied to 1..n in `shape`: which input each output element is
    (0: a constant). The constant of FILLS is 0 here, whatever the forward fills in."""
    idx = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)
    args = _args(attrs)
    if attrs["function"] == "pad" and args[1] in ("maximum", "minimum"):
        raise OpError(f"np.pad(mode={args[1]!r}) has no gradient here (each padded value "
                      f"is a maximum or minimum): pad with another mode, or stop the "
                      f"gradient (x.detach())")
    if attrs["function"] in FILLS:
        args = args[:-1] + (0,)
    return REARRANGE[attrs["function"]](idx, *args)


def _scatter(mapped, grad, n, shape):
    """Each grad element added to input element mapped - 1 (mapped > 0 only)."""
    keep = mapped.reshape(-1) > 0
    summed = np.bincount(mapped.reshape(-1)[keep] - 1, grad.reshape(-1)[keep], minlength=n)
    return summed.reshape(shape).astype(grad.dtype, copy=False)


def _out_shape(attrs, in_shapes):
    shape = in_shapes[0]
    if not is_complete(shape):
        return in_shapes, [None]
    probe = np.broadcast_to(np.zeros((), np.int8), shape)   # no memory of that shape
    return in_shapes, [_apply(attrs, probe).shape]


def _backward_forward(attrs, og, x):
    return _scatter(_index_map(attrs, x.shape), og, x.size, x.shape)


ATTRS = {"function": Attr("str", required=True, choices=tuple(REARRANGE)),
         "args": Attr("str", "()")}

register("_np_rearrange", inputs=("data",), attrs=dict(ATTRS), placement="host",
         forward=lambda attrs, x: _apply(attrs, x), infer_shape=_out_shape,
         gradient=lambda F, a, i, o, og: [F._np_rearrange_backward(og[0], i[0], **a)],
         key_attrs=("function",),
         doc="An mx.np function that moves elements (`function`: roll, rot90, tril, triu, "
             "pad, delete, resize, diagflat, insert_scalar) applied with `args`.")
register("_np_rearrange_backward", inputs=("out_grad", "data"), attrs=dict(ATTRS),
         placement="host", forward=_backward_forward,
         infer_shape=lambda attrs, s: (s, [s[1]]), index_inputs=("data",),
         gradient=lambda F, a, i, o, og: [F._np_rearrange(og[0], **a), F.zeros_like(i[1])],
         doc="The gradient of _np_rearrange: out_grad added back to where each element "
             "came from.")


# ------------------------------------------------------------------- insert
def _insert(attrs, x, values):
    obj, axis = _args(attrs)
    try:
        return np.insert(x, obj, values.astype(x.dtype, copy=False), axis)
    except (ValueError, IndexError) as err:
        raise OpError(f"np.insert: {err} (array of shape {x.shape}, values of shape "
                      f"{values.shape})") from None


def _insert_map(attrs, x_shape, v_shape):
    xs = np.arange(1, int(np.prod(x_shape)) + 1, dtype=np.int64).reshape(x_shape)
    vs = -np.arange(1, int(np.prod(v_shape)) + 1, dtype=np.int64).reshape(v_shape)
    return _insert(attrs, xs, vs)


def _insert_shape(attrs, in_shapes):
    if not all(is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_insert(attrs, *probes).shape]


def _insert_backward(attrs, og, x, values):
    mapped = _insert_map(attrs, x.shape, values.shape)
    return (_scatter(mapped, og, x.size, x.shape),
            _scatter(-mapped, og, values.size, values.shape))


register("_np_insert", inputs=("data", "values"), attrs={"args": Attr("str", "()")},
         placement="host", forward=_insert, infer_shape=_insert_shape,
         gradient=lambda F, a, i, o, og: list(F._np_insert_backward(og[0], i[0], i[1], **a)),
         doc="np.insert(data, obj, values, axis) with args=(obj, axis); values are cast to "
             "data's dtype.")
register("_np_insert_backward", inputs=("out_grad", "data", "values"),
         attrs={"args": Attr("str", "()")}, placement="host", num_outputs=2,
         forward=_insert_backward, index_inputs=("data", "values"),
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         output_names=("data_grad", "values_grad"),
         doc="The gradient of _np_insert: out_grad split back to data and values.")
