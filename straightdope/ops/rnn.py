"""`RNN`: MXNet's fused recurrent op (rnn_relu, rnn_tanh, lstm, gru), forward only.

    out, h, c = nd.RNN(x, params, h0, c0, state_size=20, num_layers=2, mode='lstm',
                       state_outputs=True)       # x: (T, N, C) -> out: (T, N, 20)

MXNet's gluon.rnn layers export their graphs with this one node, so a model saved
by MXNet (`-symbol.json`) runs here for inference. All weights and biases sit in
one flat `parameters` vector, in MXNet's order: every layer's and direction's
i2h weight (gates*H, input) and h2h weight (gates*H, H), then their i2h and h2h
biases. Gates are packed as in gluon.rnn (lstm: input, forget, cell, output;
gru: reset, update, candidate). It has no gradient here: to train, use the
gluon.rnn layers (RNN, LSTM, GRU), which compute the same with differentiable ops.
Dropout between layers (`p`) applies in training only, as in MXNet; here it is
left out, since only inference runs.
"""
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


def _num_outputs(attrs):
    if not attrs["state_outputs"]:
        return 1
    return 3 if attrs["mode"] == "lstm" else 2


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
    outs = [(steps, batch, hidden * directions)] + [state] * (_num_outputs(attrs) - 1)
    return expected, outs


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


def _forward(attrs, data, params, state, state_cell=None):
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


register("RNN", inputs=("data", "parameters", "state", "state_cell"), attrs=ATTRS,
         optional_inputs=_inputs, forward=_forward, infer_shape=_shape,
         num_outputs=_num_outputs, output_names=("output", "state", "statecell"),
         placement="host",
         doc="RNN(data, parameters, state[, state_cell], state_size, num_layers, mode): "
             "MXNet's fused recurrent layers (forward only; see ops/rnn.py).")
