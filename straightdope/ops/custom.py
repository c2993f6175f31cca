"""`Custom`: an op written in Python by the user, MXNet's `mx.operator.CustomOp`.

The user registers a `CustomOpProp` class under a name (`@mx.operator.register("sqr")`,
see straightdope/operator.py); `nd.Custom(x, op_type="sqr")` and `sym.Custom(...)` then
run it. The prop says what the op looks like: its inputs (`list_arguments`, then
`list_auxiliary_states`), its outputs (`list_outputs`), their shapes (`infer_shape`) and
dtypes (`infer_type`); `create_operator` makes the `CustomOp` whose `forward` and
`backward` compute, on NDArrays, writing into the arrays they are handed.

Here both are host ops (NumPy in, NumPy out), which a compiled graph runs between its
compiled segments: `Custom` calls the op's forward, `_backward_Custom` its backward (the
gradient rule of `Custom` is one `_backward_Custom` node, so imperative autograd and
compiled graphs share it). The attributes other than `op_type` are the keyword arguments
of the prop's constructor, as strings (MXNet's rule: they travel through the graph's JSON).

A failure inside the user's code is an OpError naming the op type, as MXNet turns it into
an MXNetError.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..context import cpu
from .registry import Attr, OpError, register

# Filled by straightdope/operator.py (a layer above this one): op_type -> CustomOpProp
# class; "wrap" (a NumPy array as the NDArray, or mx.np.ndarray, the user's code gets,
# sharing its memory) and "pause" (autograd's: the user's ops are not recorded).
PROPS: dict = {}
FRONT: dict = {}

_PROP_CACHE: dict = {}     # (prop class, attributes) -> prop instance
_INSTANCES: dict = {}      # id(a forward's first output) -> (weakref to it, its CustomOp)


def prop_of(attrs):
    """The CustomOpProp instance for a node's attributes (made once per spelling)."""
    op_type = attrs["op_type"]
    try:
        cls = PROPS[op_type]
    except KeyError:
        raise OpError(f"Custom: no custom op registered as op_type={op_type!r}; register "
                      f"its CustomOpProp with @mx.operator.register({op_type!r}) first "
                      f"(registered: {sorted(PROPS)})") from None
    kwargs = {k: v for k, v in attrs.items() if k != "op_type"}
    key = (cls, tuple(sorted(kwargs.items())))
    prop = _PROP_CACHE.get(key)
    if prop is None:
        try:
            prop = cls(**kwargs)
        except Exception as err:        # noqa: BLE001  (the user's constructor)
            raise _failed(op_type, "CustomOpProp(...)", err) from err
        if len(_PROP_CACHE) > 1024:
            _PROP_CACHE.clear()
        _PROP_CACHE[key] = prop
    return prop


def _failed(op_type, where, err):
    if isinstance(err, OpError):
        return err
    return OpError(f"Custom (op_type={op_type!r}): {where} raised "
                   f"{type(err).__name__}: {err}")


def _counts(prop):
    return (len(prop.list_arguments()), len(prop.list_outputs()),
            len(prop.list_auxiliary_states()))


def _input_names(attrs):
    prop = prop_of(attrs)
    return tuple(prop.list_arguments()) + tuple(prop.list_auxiliary_states())


def _num_outputs(attrs):
    return len(prop_of(attrs).list_outputs())


def _call_infer_shape(prop, op_type, in_shapes):
    n_args, n_out, n_aux = _counts(prop)
    if len(in_shapes) != n_args + n_aux:
        raise OpError(f"Custom (op_type={op_type!r}): takes {n_args + n_aux} inputs "
                      f"{list(prop.list_arguments()) + list(prop.list_auxiliary_states())}, "
                      f"got {len(in_shapes)}")
    try:
        result = prop.infer_shape([list(s) for s in in_shapes[:n_args]])
    except Exception as err:            # noqa: BLE001
        raise _failed(op_type, "infer_shape", err) from err
    ins, outs = result[0], result[1]
    aux = result[2] if len(result) > 2 and len(result[2]) else in_shapes[n_args:]
    if len(ins) != n_args or len(outs) != n_out or len(aux) != n_aux:
        raise OpError(f"Custom (op_type={op_type!r}): infer_shape must return "
                      f"{n_args} input, {n_out} output and {n_aux} auxiliary shapes")
    def tidy(shape):
        return None if shape is None else tuple(int(d) for d in shape)
    return [tidy(s) for s in list(ins) + list(aux)], [tidy(s) for s in outs]


def _shape(attrs, in_shapes):
    prop = prop_of(attrs)
    n_args, n_out, _ = _counts(prop)
    if any(s is None or None in s for s in in_shapes[:n_args]):
        return in_shapes, [None] * n_out        # the prop needs every argument's shape
    return _call_infer_shape(prop, attrs["op_type"], in_shapes)


def _dtypes(prop, op_type, in_dtypes):
    n_args, n_out, _ = _counts(prop)
    try:
        result = prop.infer_type([np.dtype(d).type for d in in_dtypes[:n_args]])
    except Exception as err:            # noqa: BLE001
        raise _failed(op_type, "infer_type", err) from err
    return [np.dtype(t) for t in result[1]]


def _infer_dtype(attrs, in_dtypes):
    return _dtypes(prop_of(attrs), attrs["op_type"], in_dtypes)


def _wrap(array):
    return FRONT["wrap"](array)


def _forward(attrs, *arrays, is_train=False):
    op_type, prop = attrs["op_type"], prop_of(attrs)
    n_args, n_out, n_aux = _counts(prop)
    _, out_shapes = _call_infer_shape(prop, op_type, [a.shape for a in arrays])
    out_dtypes = _dtypes(prop, op_type, [a.dtype for a in arrays])
    outs = [np.zeros(s, d) for s, d in zip(out_shapes, out_dtypes)]
    with FRONT["pause"](train_mode=is_train):
        in_data = [_wrap(a) for a in arrays[:n_args]]
        aux = [_wrap(a) for a in arrays[n_args:]]       # written in place by the op
        out_data = [_wrap(o) for o in outs]
        try:
            instance = prop.create_operator(cpu(), [a.shape for a in arrays],
                                            [a.dtype for a in arrays])
            instance.forward(is_train, ["write"] * n_out, in_data, out_data, aux)
            results = tuple(o.asnumpy() for o in out_data)   # waits for what it pushed
        except Exception as err:        # noqa: BLE001  (the user's code)
            raise _failed(op_type, "forward", err) from err
    _remember(results[0] if results else None, instance)
    return results


def _remember(output, instance):
    """Keep the CustomOp that computed `output`, so that its backward runs on the same
    instance (state it kept in forward), as in MXNet. Imperative autograd hands backward
    this very array; a compiled graph hands it a copy, and backward there runs on a new
    instance from create_operator (state kept in `self` between the two is not seen)."""
    if output is None:
        return
    if len(_INSTANCES) > 4096:
        for key in [k for k, (ref, _) in _INSTANCES.items() if ref() is None]:
            del _INSTANCES[key]
    _INSTANCES[id(output)] = (weakref.ref(output), instance)


def _instance_for(output, prop, arrays):
    ref, instance = _INSTANCES.get(id(output), (None, None))
    if ref is not None and ref() is output:
        return instance
    return prop.create_operator(cpu(), [a.shape for a in arrays], [a.dtype for a in arrays])


def _gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    n_args, _, n_aux = _counts(prop_of(attrs))
    if n_args == 0:
        return [None] * n_aux
    out_grads = [F.zeros_like(o) if g is None else g for g, o in zip(out_grads, outputs)]
    grads = F._backward_Custom(*out_grads, *inputs, *outputs, **attrs)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if n_args > 1 and len(grads) == 1:       # a Symbol with several outputs
        grads = [grads[0][k] for k in range(n_args)]
    return grads + [None] * n_aux


def _backward_forward(attrs, *arrays, is_train=True):
    op_type, prop = attrs["op_type"], prop_of(attrs)
    n_args, n_out, n_aux = _counts(prop)
    out_grad = arrays[:n_out]
    ins = arrays[n_out:n_out + n_args + n_aux]
    outs = arrays[n_out + n_args + n_aux:]
    in_grads = [np.zeros(a.shape, a.dtype) for a in ins[:n_args]]
    with FRONT["pause"](train_mode=is_train):
        try:
            instance = _instance_for(outs[0] if outs else None, prop, ins)
            grad_arrays = [_wrap(g) for g in in_grads]
            instance.backward(["write"] * n_args, [_wrap(g) for g in out_grad],
                              [_wrap(a) for a in ins[:n_args]], [_wrap(o) for o in outs],
                              grad_arrays, [_wrap(a) for a in ins[n_args:]])
            return tuple(g.asnumpy() for g in grad_arrays)
        except Exception as err:        # noqa: BLE001  (the user's code)
            raise _failed(op_type, "backward", err) from err


def _backward_shape(attrs, in_shapes):
    n_args, n_out, _ = _counts(prop_of(attrs))
    return in_shapes, list(in_shapes[n_out:n_out + n_args])


def _backward_dtype(attrs, in_dtypes):
    n_args, n_out, _ = _counts(prop_of(attrs))
    return list(in_dtypes[n_out:n_out + n_args])


def _backward_names(attrs):
    prop = prop_of(attrs)
    return (tuple(f"{n}_grad" for n in prop.list_outputs()) + _input_names(attrs)
            + tuple(prop.list_outputs()))


CUSTOM_ATTRS = dict(op_type=Attr("str", required=True))

register("Custom", inputs=(), variadic=True, open_attrs=True, optional_inputs=_input_names,
         aux_inputs=lambda attrs: tuple(prop_of(attrs).list_auxiliary_states()),
         attrs=dict(CUSTOM_ATTRS), forward=_forward, infer_shape=_shape,
         infer_dtype=_infer_dtype, gradient=_gradient, num_outputs=_num_outputs,
         needs_train_flag=True, placement="host",
         doc="Run the Python op registered as `op_type` (mx.operator.register): its "
             "CustomOp's forward, and backward for the gradient. Other keywords go to its "
             "CustomOpProp's constructor, as strings.")
register("_backward_Custom", inputs=(), variadic=True, open_attrs=True,
         optional_inputs=_backward_names, attrs=dict(CUSTOM_ATTRS),
         forward=_backward_forward, infer_shape=_backward_shape, infer_dtype=_backward_dtype,
         num_outputs=lambda attrs: _counts(prop_of(attrs))[0], needs_train_flag=True,
         placement="host", doc="The gradient of Custom: its CustomOp's backward.")
