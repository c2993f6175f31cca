"""Ops on padded batches of sequences, with MXNet's names: SequenceMask, SequenceLast,
SequenceReverse. `data` has the time axis first (axis=0: (T, N, ...)) or second
(axis=1: (N, T, ...)); `sequence_length` (N,) gives each sequence's true length, read
only when `use_sequence_length` is true (else every sequence is T long).

Recurrent cells use them for `unroll(valid_length=...)`: padding steps are zeroed, the
state kept is each sequence's last true step's, and the backward direction of a
bidirectional cell starts at each sequence's own end. No Numba kernels: compiled graphs
run them in NumPy between compiled segments.
"""
import numpy as np

from .registry import Bool, Float, Int, OpError, register


def _inputs(attrs):
    return ("data", "sequence_length") if attrs["use_sequence_length"] else ("data",)


def _lengths(attrs, data, lengths, axis):
    """Each sequence's length as ints, checked against the padded length T."""
    steps, batch = data.shape[axis], data.shape[1 - axis]
    if not attrs["use_sequence_length"]:
        return np.full(batch, steps, dtype=np.int64)
    n = np.asarray(lengths).reshape(-1)
    if n.shape[0] != batch:
        raise OpError(f"sequence_length has {n.shape[0]} values but the batch has {batch} "
                      f"sequences (data shape {data.shape}, time axis {axis})")
    n = n.astype(np.int64)
    if (n < 0).any() or (n > steps).any():
        raise OpError(f"sequence_length {n.tolist()} must lie in [0, {steps}], the padded "
                      f"length along axis {axis} of data {data.shape}")
    return n


def _check_axis(name, attrs, shape, allowed=(0, 1)):
    if attrs["axis"] not in allowed:
        raise OpError(f"{name}: axis must be {' or '.join(map(str, allowed))} (the time "
                      f"axis), got {attrs['axis']}")
    if shape is not None and len(shape) < 2:
        raise OpError(f"{name}: data must have a time and a batch axis, got shape {shape}")


def _steps_mask(attrs, data, lengths):
    """True where a step is padding, shaped to broadcast against data."""
    axis = attrs["axis"]
    n = _lengths(attrs, data, lengths, axis)
    pad = np.arange(data.shape[axis])[:, None] >= n[None, :]           # (T, N)
    pad = pad if axis == 0 else pad.T                                   # as data's axes
    return pad.reshape(pad.shape + (1,) * (data.ndim - 2))


def _mask_forward(attrs, data, lengths=None):
    return np.where(_steps_mask(attrs, data, lengths), data.dtype.type(attrs["value"]), data)


def _mask_shape(attrs, in_shapes):
    _check_axis("SequenceMask", attrs, in_shapes[0])
    return in_shapes, [in_shapes[0]]


def _mask_gradient(F, attrs, inputs, outputs, out_grads):
    grad = F.SequenceMask(out_grads[0], *inputs[1:], use_sequence_length=attrs["use_sequence_length"],
                          value=0.0, axis=attrs["axis"])
    return [grad] + [None] * (len(inputs) - 1)


SEQ_ATTRS = {"use_sequence_length": Bool(False), "axis": Int(0)}
register("SequenceMask", inputs=("data", "sequence_length"), optional_inputs=_inputs,
         checks_values=True,
         attrs={**SEQ_ATTRS, "value": Float(0.0)}, forward=_mask_forward,
         infer_shape=_mask_shape, gradient=_mask_gradient, placement="host",
         infer_dtype=lambda attrs, dtypes: dtypes[0],
         doc="SequenceMask(data, sequence_length, use_sequence_length=False, value=0, "
             "axis=0): the steps past each sequence's length set to `value`.")


def _last_index(attrs, data, lengths):
    n = _lengths(attrs, data, lengths, attrs["axis"])
    if (n < 1).any():
        raise OpError(f"SequenceLast: a sequence of length 0 has no last step "
                      f"(sequence_length {n.tolist()})")
    return n - 1


def _last_forward(attrs, data, lengths=None):
    last = _last_index(attrs, data, lengths)
    batch = np.arange(data.shape[1 - attrs["axis"]])
    return np.ascontiguousarray(data[last, batch] if attrs["axis"] == 0 else data[batch, last])


def _last_shape(attrs, in_shapes):
    s = in_shapes[0]
    _check_axis("SequenceLast", attrs, s)
    if s is None:
        return in_shapes, [None]
    return in_shapes, [tuple(d for k, d in enumerate(s) if k != attrs["axis"])]


def _last_grad_forward(attrs, og, data, lengths=None):
    grad = np.zeros_like(data)
    last = _last_index(attrs, data, lengths)
    batch = np.arange(data.shape[1 - attrs["axis"]])
    if attrs["axis"] == 0:
        grad[last, batch] = og
    else:
        grad[batch, last] = og
    return grad


def _last_gradient(F, attrs, inputs, outputs, out_grads):
    grad = F._sequence_last_grad(out_grads[0], *inputs, **attrs)
    return [grad] + [None] * (len(inputs) - 1)


register("SequenceLast", inputs=("data", "sequence_length"), optional_inputs=_inputs,
         checks_values=True,
         attrs=dict(SEQ_ATTRS), forward=_last_forward, infer_shape=_last_shape,
         gradient=_last_gradient, placement="host", infer_dtype=lambda attrs, dtypes: dtypes[0],
         doc="SequenceLast(data, sequence_length, use_sequence_length=False, axis=0): each "
             "sequence's last true step (the time axis removed).")
register("_sequence_last_grad", inputs=("out_grad", "data", "sequence_length"),
         optional_inputs=lambda attrs: ("out_grad",) + _inputs(attrs), attrs=dict(SEQ_ATTRS),
         forward=_last_grad_forward, infer_shape=lambda attrs, s: (s, [s[1]]), placement="host",
         infer_dtype=lambda attrs, dtypes: dtypes[0],
         doc="Gradient of SequenceLast: out_grad placed at each sequence's last step.")


def _reverse_forward(attrs, data, lengths=None):
    n = _lengths(attrs, data, lengths, 0)
    steps = np.arange(data.shape[0])[:, None]                           # (T, 1)
    source = np.where(steps < n[None, :], n[None, :] - 1 - steps, steps)   # (T, N)
    return np.ascontiguousarray(data[source, np.arange(data.shape[1])[None, :]])


def _reverse_shape(attrs, in_shapes):
    _check_axis("SequenceReverse", attrs, in_shapes[0], allowed=(0,))
    return in_shapes, [in_shapes[0]]


def _reverse_gradient(F, attrs, inputs, outputs, out_grads):
    # reversing the first n steps is its own inverse
    grad = F.SequenceReverse(out_grads[0], *inputs[1:], **attrs)
    return [grad] + [None] * (len(inputs) - 1)


register("SequenceReverse", inputs=("data", "sequence_length"), optional_inputs=_inputs,
         checks_values=True,
         attrs=dict(SEQ_ATTRS), forward=_reverse_forward, infer_shape=_reverse_shape,
         gradient=_reverse_gradient, placement="host", infer_dtype=lambda attrs, dtypes: dtypes[0],
         doc="SequenceReverse(data, sequence_length, use_sequence_length=False, axis=0): "
             "the first sequence_length steps of each sequence in reverse order, the "
             "padding left where it is (time axis 0 only, as in MXNet).")
