"""`RNN`: MXNet's fused recurrent op (rnn_relu, rnn_tanh, lstm, gru), and its gradient.

    out, h, c = nd.RNN(x, params, h0, c0, state_size=20, num_layers=2, mode='lstm',
                       state_outputs=True)       # x: (T, N, C) -> out: (T, N, 20)

MXNet's gluon.rnn layers export their graphs with this one node, so a model saved
by MXNet (`-symbol.json`) runs here for inference. All weights and biases sit in
one flat `parameters` vector, in MXNet's order: every layer's and direction's
i2h weight (gates*H, input) and h2h weight (gates*H, H), then their i2h and h2h
biases. Gates are packed as in gluon.rnn (lstm: input, forget, cell, output;
gru: reset, update, candidate). The gluon.rnn layers (RNN, LSTM, GRU) call it, as
MXNet's do.

Compiled and imperatively (float32, float64) it runs compiler/kernels/rnn.py:
one product for all steps' input projections per layer, then per step the hidden
product and one loop over the gates. Its last output, hidden, is the `reserve`:
what the backward (`_rnn_grad`, same kernels) reads, saved by the forward.
`reference_forward` is the plain NumPy version (tests compare against it).
Dropout between layers (`p`) is not implemented: it is refused while training and
skipped at inference (where MXNet skips it too).
"""
import sys

import numpy as np

from .registry import Bool, Choice, Float, Int, OpError, OptFloat, OptInt, register

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}

ATTRS = {"state_size": Int(required=True, minimum=1), "num_layers": Int(required=True, minimum=1),
         "mode": Choice(*GATES, required=True), "bidirectional": Bool(False),
         "state_outputs": Bool(False), "p": Float(0.0),
         # MXNet writes these into every exported gluon.rnn graph; only their defaults
         # (features off) are computed here, others are refused by name (_unsupported).
         "projection_size": OptInt(None), "lstm_state_clip_min": OptFloat(None),
         "lstm_state_clip_max": OptFloat(None), "lstm_state_clip_nan": Bool(False),
         "use_sequence_length": Bool(False)}
OFF = {"projection_size": None, "lstm_state_clip_min": None, "lstm_state_clip_max": None,
       "lstm_state_clip_nan": False, "use_sequence_length": False}


def _unsupported(attrs):
    used = [f"{k}={attrs[k]}" for k, off in OFF.items() if attrs.get(k, off) != off]
    if used:
        raise OpError(f"RNN: {', '.join(used)} is not supported here (only the default: "
                      f"off); export the model from MXNet without it")


def _inputs(attrs):
    names = ("data", "parameters", "state")
    return names + ("state_cell",) if attrs["mode"] == "lstm" else names


def _num_visible(attrs):
    if not attrs["state_outputs"]:
        return 1
    return 3 if attrs["mode"] == "lstm" else 2


def _num_outputs(attrs):
    return _num_visible(attrs) + 1        # + the reserve, hidden


SAVED = {"rnn_relu": 0, "rnn_tanh": 0, "lstm": 5, "gru": 4}


def reserve_size(attrs, steps, batch):
    """How many numbers the forward saves for the backward (kernels/rnn.py's layout):
    per layer but the last its output, per layer and direction SAVED[mode] per hidden
    unit and step."""
    hidden, layers = attrs["state_size"], attrs["num_layers"]
    directions = 2 if attrs["bidirectional"] else 1
    per_step = (layers - 1) * directions * hidden + layers * directions * SAVED[attrs["mode"]] \
        * hidden
    return steps * batch * per_step


def parameter_count(attrs, input_size):
    """How many numbers the flat `parameters` vector holds."""
    hidden, gates = attrs["state_size"], GATES[attrs["mode"]]
    directions = 2 if attrs["bidirectional"] else 1
    total, size = 0, input_size
    for _ in range(attrs["num_layers"]):
        total += directions * gates * hidden * (size + hidden + 2)
        size = hidden * directions
    return total


def _shape(attrs, in_shapes):
    _unsupported(attrs)
    data = in_shapes[0]
    hidden = attrs["state_size"]
    directions = 2 if attrs["bidirectional"] else 1
    if data is None:
        return in_shapes, [None] * _num_outputs(attrs)
    if len(data) != 3:
        raise OpError(f"RNN: data must be 3-d (sequence, batch, features), got shape {data}")
    steps, batch, size = data
    state = (attrs["num_layers"] * directions, batch, hidden)
    expected = [data, (parameter_count(attrs, size),)] + [state] * (len(in_shapes) - 2)
    for name, given, want in zip(_inputs(attrs), in_shapes, expected):
        if given is not None and tuple(given) != want:
            raise OpError(f"RNN: input '{name}' must have shape {want} for data of shape "
                          f"{data} (state_size={hidden}, num_layers={attrs['num_layers']}, "
                          f"bidirectional={attrs['bidirectional']}), got {tuple(given)}")
    outs = [(steps, batch, hidden * directions)] + [state] * (_num_visible(attrs) - 1)
    return expected, outs + [(reserve_size(attrs, steps, batch),)]


def _unpack(attrs, params, input_size):
    """The flat vector as [(i2h_w, h2h_w, i2h_b, h2h_b)] per layer and direction."""
    hidden, gates = attrs["state_size"], GATES[attrs["mode"]]
    directions = 2 if attrs["bidirectional"] else 1
    rows, at, weights, size = gates * hidden, 0, [], input_size
    for _ in range(attrs["num_layers"]):
        for _ in range(directions):
            i2h = params[at:at + rows * size].reshape(rows, size)
            at += rows * size
            h2h = params[at:at + rows * hidden].reshape(rows, hidden)
            at += rows * hidden
            weights.append((i2h, h2h))
        size = hidden * directions
    biases = []
    for _ in weights:
        biases.append((params[at:at + rows], params[at + rows:at + 2 * rows]))
        at += 2 * rows
    return [w + b for w, b in zip(weights, biases)]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _step(mode, x_proj, h, c, h2h_w, h2h_b):
    """One time step of one cell: (h, c) from the projected input and the last state."""
    h_proj = h @ h2h_w.T + h2h_b
    if mode == "lstm":
        i, f, g, o = np.split(x_proj + h_proj, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "gru":
        x_r, x_z, x_n = np.split(x_proj, 3, axis=1)
        h_r, h_z, h_n = np.split(h_proj, 3, axis=1)
        reset, update = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
        return (1.0 - update) * np.tanh(x_n + reset * h_n) + update * h, c
    total = x_proj + h_proj
    return (np.maximum(total, 0) if mode == "rnn_relu" else np.tanh(total)), c


def reference_forward(attrs, data, params, state, state_cell=None):
    """The visible outputs, computed with NumPy one step at a time."""
    _unsupported(attrs)
    mode, directions = attrs["mode"], 2 if attrs["bidirectional"] else 1
    cells = _unpack(attrs, params, data.shape[2])
    x, last_h, last_c = data, [], []
    for layer in range(attrs["num_layers"]):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            i2h_w, h2h_w, i2h_b, h2h_b = cells[k]
            projected = x @ i2h_w.T + i2h_b          # every step's input at once
            h = state[k]
            c = state_cell[k] if state_cell is not None else None
            steps = range(len(x))[::-1] if d == 1 else range(len(x))
            out = np.empty(x.shape[:2] + (h.shape[1],), data.dtype)
            for t in steps:
                h, c = _step(mode, projected[t], h, c, h2h_w, h2h_b)
                out[t] = h
            outs.append(out)
            last_h.append(h)
            last_c.append(c)
        x = np.concatenate(outs, axis=2) if directions == 2 else outs[0]
    results = [x.astype(data.dtype, copy=False)]
    if attrs["state_outputs"]:
        results.append(np.stack(last_h).astype(data.dtype, copy=False))
        if mode == "lstm":
            results.append(np.stack(last_c).astype(data.dtype, copy=False))
    return results[0] if len(results) == 1 else tuple(results)


def _kernels(*arrays):
    """compiler/kernels/rnn.py (importing Numba on first use), or None for dtypes it
    does not compute (NumPy's reference then runs, without a gradient)."""
    if any(a.dtype not in (np.float32, np.float64) or a.dtype != arrays[0].dtype
           for a in arrays):
        return None
    from ..compiler.kernels import rnn
    return rnn


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1)


def _check_dropout(attrs, is_train):
    if is_train and attrs["p"] > 0:
        raise OpError(f"RNN: dropout between layers (p={attrs['p']}) is not implemented "
                      f"while training; the gluon.rnn layers run it as separate ops (pass "
                      f"dropout= to the layer), or train with p=0")


def _forward(attrs, data, params, state, state_cell=None, is_train=False, keep_hidden=True):
    _unsupported(attrs)
    _check_dropout(attrs, is_train)
    lstm = attrs["mode"] == "lstm"
    kernels = _kernels(data, params, state)
    if kernels is None or data.shape[0] == 0:
        out = reference_forward(attrs, data, params, state, state_cell)
        out = list(out) if isinstance(out, tuple) else [out]
        size = reserve_size(attrs, *data.shape[:2]) if keep_hidden else None
        return tuple(out + [None if size is None else np.zeros(size, data.dtype)])
    steps, batch, size = data.shape
    hidden, layers = attrs["state_size"], attrs["num_layers"]
    directions = 2 if attrs["bidirectional"] else 1
    y = np.empty((steps, batch, hidden * directions), data.dtype)
    hy, cy = np.empty(state.shape, data.dtype), np.empty(state.shape, data.dtype)
    reserve = np.empty(reserve_size(attrs, steps, batch) if keep_hidden else 0, data.dtype)
    c0 = _flat(state_cell) if lstm else _flat(state)
    kernels.forward(_flat(data), 0, _flat(params), 0, _flat(state), 0, c0, 0, y.reshape(-1), 0,
                    hy.reshape(-1), 0, cy.reshape(-1), 0, reserve, 0, steps, batch, size,
                    hidden, layers, directions, kernels.MODES[attrs["mode"]], int(keep_hidden),
                    1)
    out = [y] + ([hy] + [cy] * lstm if attrs["state_outputs"] else [])
    return tuple(out + [reserve if keep_hidden else None])


def _gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    lstm = attrs["mode"] == "lstm"
    if attrs["state_outputs"]:
        state_grads = out_grads[1:3 if lstm else 2]
    else:
        state_grads = [F.zeros_like(s) for s in inputs[2:4 if lstm else 3]]
    grads = F._rnn_grad(*inputs, outputs[0], outputs[-1], out_grads[0], *state_grads,
                        **attrs)
    return list(grads)


def _backward_inputs(attrs):
    if attrs["mode"] == "lstm":
        return BACKWARD_INPUTS
    return tuple(n for n in BACKWARD_INPUTS if n not in ("state_cell", "statecell_grad"))


def _backward_shape(attrs, in_shapes):
    known, _ = _shape(attrs, list(in_shapes[:4 if attrs["mode"] == "lstm" else 3]))
    return in_shapes, list(known)


def _backward(attrs, *arrays):
    lstm = attrs["mode"] == "lstm"
    data, params, state = arrays[:3]
    c0 = arrays[3] if lstm else state
    y, reserve, dy, dhy = arrays[3 + lstm:7 + lstm]
    dcy = arrays[7 + lstm] if lstm else dhy
    kernels = _kernels(data, params, state)
    if kernels is None:
        raise OpError(f"RNN: its gradient is computed for float32 and float64 only, got "
                      f"{', '.join(sorted({a.dtype.name for a in arrays}))}")
    steps, batch, size = data.shape
    grads = [np.zeros(data.shape, data.dtype), np.zeros(params.shape, data.dtype),
             np.zeros(state.shape, data.dtype)] + [np.zeros(state.shape, data.dtype)] * lstm
    if steps == 0:
        return tuple(grads)
    dc0 = grads[3] if lstm else grads[2]
    kernels.backward(_flat(data), 0, _flat(params), 0, _flat(state), 0, _flat(c0), 0,
                     _flat(y), 0, _flat(reserve), 0, _flat(dy), 0, _flat(dhy), 0, _flat(dcy), 0,
                     grads[0].reshape(-1), 0, grads[1], 0, grads[2].reshape(-1), 0,
                     dc0.reshape(-1), 0, steps, batch, size, attrs["state_size"],
                     attrs["num_layers"], 2 if attrs["bidirectional"] else 1,
                     kernels.MODES[attrs["mode"]])
    return tuple(grads)


BACKWARD_INPUTS = ("data", "parameters", "state", "state_cell", "output", "reserve",
                   "out_grad", "state_grad", "statecell_grad")

register("RNN", inputs=("data", "parameters", "state", "state_cell"), attrs=ATTRS,
         optional_inputs=_inputs, forward=_forward, infer_shape=_shape, gradient=_gradient,
         num_outputs=_num_outputs, num_visible_outputs=_num_visible,
         output_names=("output", "state", "statecell", "reserve"),
         placement="kernel", needs_train_flag=True, hidden_on_demand=True,
         key_attrs=("mode", "state_size", "num_layers"),
         doc="RNN(data, parameters, state[, state_cell], state_size, num_layers, mode): "
             "MXNet's fused recurrent layers (see ops/rnn.py).")
register("_rnn_grad", inputs=BACKWARD_INPUTS, attrs=ATTRS,
         optional_inputs=_backward_inputs, forward=_backward, infer_shape=_backward_shape,
         num_outputs=lambda attrs: 4 if attrs["mode"] == "lstm" else 3,
         output_names=("data_grad", "parameters_grad", "state_grad", "statecell_grad"),
         placement="kernel",
         doc="Gradient of RNN: (d data, d parameters, d state[, d state_cell]), by "
             "backpropagation through time in one kernel.")
