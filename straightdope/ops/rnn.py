"""`RNN`: MXNet's fused recurrent op (rnn_relu, rnn_tanh, lstm, gru), with its gradient.

    out, h, c = nd.RNN(x, params, h0, c0, state_size=20, num_layers=2, mode='lstm',
                       state_outputs=True)       # x: (T, N, C) -> out: (T, N, 20)

MXNet's gluon.rnn layers export their graphs with this one node, so a model saved
by MXNet (`-symbol.json`) runs here for inference. All weights and biases sit in
one flat `parameters` vector, in MXNet's order: every layer's and direction's
i2h weight (gates*H, input) and h2h weight (gates*H, H), then their i2h and h2h
biases. Gates are packed as in gluon.rnn (lstm: input, forget, cell, output;
gru: reset, update, candidate).

Dropout (`p`) applies in training only, as in MXNet's rnn_impl.h: every layer's output
but the last one's is zeroed with probability p, the rest scaled by 1 / (1 - p), before
the next layer reads it (the states returned are the layers' own, undropped). The masks
are drawn from a generator seeded by one number drawn from NumPy's global generator (so
`mx.random.seed` repeats them); that number is a hidden output, -1 when nothing was
dropped, and the backward (`_rnn_grad`) draws the same masks again from it.

The backward runs the forward again keeping every step's states, then goes back through
time (BPTT), one layer and direction at a time from the top; each step's gates are
recomputed from the saved input projection and previous state.
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


def _num_visible(attrs):
    if not attrs["state_outputs"]:
        return 1
    return 3 if attrs["mode"] == "lstm" else 2


def _num_outputs(attrs):
    return _num_visible(attrs) + 1          # + the hidden dropout seed


def parameter_count(attrs, input_size):
    """How many numbers the flat `parameters` vector holds (attrs: the op's, or a call's
    keywords, where bidirectional may be left out)."""
    hidden, gates = attrs["state_size"], GATES[attrs["mode"]]
    directions = 2 if attrs.get("bidirectional") else 1
    total, size = 0, input_size
    for _ in range(attrs["num_layers"]):
        total += directions * gates * hidden * (size + hidden + 2)
        size = hidden * directions
    return total


def _shape(attrs, in_shapes):
    _unsupported(attrs)
    if not 0 <= attrs["p"] <= 1:
        raise OpError(f"RNN: dropout p must be in [0, 1], got {attrs['p']}")
    data = in_shapes[0]
    hidden = attrs["state_size"]
    directions = 2 if attrs["bidirectional"] else 1
    if data is None:
        return in_shapes, [None] * _num_visible(attrs) + [(1,)]
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
    return expected, outs + [(1,)]


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


def _rows_times(a, m):
    """(T, N, K) @ m as ONE matrix product over all T * N rows: NumPy would otherwise
    multiply step by step (3-10x slower for 300 steps)."""
    return (a.reshape(-1, a.shape[-1]) @ m).reshape(a.shape[:-1] + (m.shape[-1],))


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


def _step_backward(mode, x_proj, h_prev, c_prev, h, c, h2h_w, h2h_b, dh, dc):
    """The gradients of one step, its gates recomputed from the saved values: (d x_proj,
    d h_proj, the part of d h_prev that skips h2h (gru), d c_prev). dh, dc: d h, d c."""
    if mode in ("rnn_tanh", "rnn_relu"):
        d_total = dh * (1.0 - h * h) if mode == "rnn_tanh" else dh * (h > 0)
        return d_total, d_total, 0.0, None
    h_proj = h_prev @ h2h_w.T + h2h_b
    if mode == "lstm":
        i, f, g, o = np.split(x_proj + h_proj, 4, axis=1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        tanh_c = np.tanh(c)
        dc = dc + dh * o * (1.0 - tanh_c * tanh_c)
        d_gates = np.concatenate([dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f),
                                  dc * i * (1.0 - g * g), dh * tanh_c * o * (1.0 - o)], axis=1)
        return d_gates, d_gates, 0.0, dc * f
    x_r, x_z, x_n = np.split(x_proj, 3, axis=1)
    h_r, h_z, h_n = np.split(h_proj, 3, axis=1)
    reset, update = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
    new = np.tanh(x_n + reset * h_n)
    d_new = dh * (1.0 - update) * (1.0 - new * new)
    d_reset = d_new * h_n * reset * (1.0 - reset)
    d_update = dh * (h_prev - new) * update * (1.0 - update)
    return (np.concatenate([d_reset, d_update, d_new], axis=1),
            np.concatenate([d_reset, d_update, d_new * reset], axis=1), dh * update, c_prev)


def _direction(mode, projected, h, c, h2h_w, h2h_b, reverse):
    """One layer's cell in one direction over every step: (outputs, lstm cells or None,
    last h, last c)."""
    out = np.empty(projected.shape[:2] + (h.shape[1],), projected.dtype)
    cells = np.empty_like(out) if mode == "lstm" else None
    for t in (range(len(out) - 1, -1, -1) if reverse else range(len(out))):
        h, c = _step(mode, projected[t], h, c, h2h_w, h2h_b)
        out[t] = h
        if cells is not None:
            cells[t] = c
    return out, cells, h, c


def _dropout_masks(attrs, seed, shape, dtype):
    """The masks between layers (0 or 1 / (1 - p)), drawn again alike from the seed."""
    if seed < 0:
        return
    p = attrs["p"]
    rng, scale = np.random.default_rng(int(seed)), 1.0 / (1.0 - p) if p < 1 else 0.0
    for _ in range(attrs["num_layers"] - 1):
        yield np.where(rng.random(shape, dtype=np.float32) < p, 0.0, scale).astype(dtype)


def _layers(attrs, data, params, state, state_cell, seed, keep=False):
    """Every layer in turn: (output, last h per layer and direction, last c, and with
    `keep` what the backward needs: per layer its input, its dropout mask, and per
    direction (projected input, outputs, cells))."""
    mode, directions = attrs["mode"], 2 if attrs["bidirectional"] else 1
    weights = _unpack(attrs, params, data.shape[2])
    masks = _dropout_masks(attrs, seed, data.shape[:2] + (attrs["state_size"] * directions,),
                           data.dtype)
    x, mask, last_h, last_c, saved = data, None, [], [], []
    for layer in range(attrs["num_layers"]):
        if layer > 0:
            mask = next(masks, None)
            x = x if mask is None else x * mask
        outs, runs = [], []
        for d in range(directions):
            k = layer * directions + d
            i2h_w, h2h_w, i2h_b, h2h_b = weights[k]
            projected = _rows_times(x, i2h_w.T) + i2h_b      # every step's input at once
            c = state_cell[k] if state_cell is not None else None
            out, cells, h, c = _direction(mode, projected, state[k], c, h2h_w, h2h_b, d == 1)
            outs.append(out)
            runs.append((projected, out, cells))
            last_h.append(h)
            last_c.append(c)
        if keep:
            saved.append((x, mask, runs))
        x = np.concatenate(outs, axis=2) if directions == 2 else outs[0]
    return x, last_h, last_c, saved


def _forward(attrs, data, params, state, state_cell=None, is_train=False):
    _unsupported(attrs)
    dropping = is_train and attrs["p"] > 0 and attrs["num_layers"] > 1
    exact = 2 ** (np.finfo(data.dtype).nmant + 1)   # integers the dtype holds exactly
    seed = np.random.randint(min(exact, 2 ** 31)) if dropping else -1
    x, last_h, last_c, _ = _layers(attrs, data, params, state, state_cell, seed)
    results = [x.astype(data.dtype, copy=False)]
    if attrs["state_outputs"]:
        results.append(np.stack(last_h).astype(data.dtype, copy=False))
        if attrs["mode"] == "lstm":
            results.append(np.stack(last_c).astype(data.dtype, copy=False))
    return tuple(results) + (np.array([seed], data.dtype),)


def _direction_backward(mode, x_proj_steps, out, cells, h0, c0, h2h_w, h2h_b, d_out, dh, dc,
                        reverse):
    """Back through time for one layer and direction: (d projected, d h2h_w, d h2h_b,
    d h0, d c0). d_out: the gradient of every step's output; dh, dc: of the last state."""
    d_proj, d_hidden = np.empty_like(x_proj_steps), np.empty_like(x_proj_steps)
    # the state each step read: h0, then the outputs (the other way round when reversed)
    previous = np.concatenate([out[1:], h0[None]]) if reverse else \
        np.concatenate([h0[None], out[:-1]])
    steps = len(out)
    for t in (range(steps) if reverse else range(steps - 1, -1, -1)):
        before = t + 1 if reverse else t - 1
        c_prev = None if cells is None else (cells[before] if 0 <= before < steps else c0)
        c = None if cells is None else cells[t]
        d_proj[t], d_hidden[t], dh_skip, dc = _step_backward(
            mode, x_proj_steps[t], previous[t], c_prev, out[t], c, h2h_w, h2h_b,
            dh + d_out[t], dc)
        dh = d_hidden[t] @ h2h_w + dh_skip
    rows = d_hidden.reshape(-1, d_hidden.shape[2])         # h2h's gradient: one product
    d_h2h_w = rows.T @ previous.reshape(-1, previous.shape[2])
    return d_proj, d_h2h_w, rows.sum(axis=0), dh, dc


def _backward(attrs, *arrays):
    """`_rnn_grad`: (d data, d parameters, d state[, d state_cell])."""
    lstm = attrs["mode"] == "lstm"
    g_out, g_state, g_cell = arrays[0], arrays[1], arrays[2] if lstm else None
    data, params, state = arrays[3:6] if lstm else arrays[2:5]
    state_cell = arrays[6] if lstm else None
    seed = arrays[-1][0]
    _, _, _, saved = _layers(attrs, data, params, state, state_cell, seed, keep=True)
    directions, hidden = 2 if attrs["bidirectional"] else 1, attrs["state_size"]
    d_params = np.zeros_like(params)
    weights, d_weights = _unpack(attrs, params, data.shape[2]), _unpack(attrs, d_params,
                                                                        data.shape[2])
    d_state = np.zeros_like(state)
    d_cell = np.zeros_like(state_cell) if lstm else None
    d_above = g_out                    # the gradient of the layer's output
    for layer in range(attrs["num_layers"] - 1, -1, -1):
        x, mask, runs = saved[layer]
        d_x = np.zeros_like(x)
        for d, (projected, out, cells) in enumerate(runs):
            k = layer * directions + d
            i2h_w, h2h_w, _, h2h_b = weights[k]
            d_i2h_w, d_h2h_w, d_i2h_b, d_h2h_b = d_weights[k]
            c0 = state_cell[k] if lstm else None
            dc = g_cell[k] if lstm else None
            d_proj, dw, db, d_state[k], dc = _direction_backward(
                attrs["mode"], projected, out, cells, state[k], c0, h2h_w, h2h_b,
                d_above[:, :, d * hidden:(d + 1) * hidden], g_state[k], dc, d == 1)
            if lstm:
                d_cell[k] = dc
            rows = d_proj.reshape(-1, d_proj.shape[2])
            d_i2h_w += rows.T @ x.reshape(-1, x.shape[2])
            d_i2h_b += rows.sum(axis=0)
            d_h2h_w += dw
            d_h2h_b += db
            d_x += _rows_times(d_proj, i2h_w)
        d_above = d_x if mask is None else d_x * mask
    grads = [d_above.astype(data.dtype, copy=False), d_params, d_state]
    return tuple(grads + [d_cell] if lstm else grads)


def _gradient(F, attrs, inputs, outputs, out_grads, is_train=False):
    """Missing head gradients (outputs not used, states not returned) are zeros."""
    visible = _num_visible(attrs)
    heads = [out_grads[k] if k < len(out_grads) and out_grads[k] is not None
             else F.zeros_like(outputs[k]) for k in range(visible)]
    if not attrs["state_outputs"]:
        heads += [F.zeros_like(x) for x in inputs[2:]]      # state (and state_cell)
    return list(F._rnn_grad(*heads, *inputs, outputs[visible], **attrs))


def _grad_inputs(attrs):
    heads = ("out_grad", "state_grad", "state_cell_grad")
    inputs = _inputs(attrs)
    return heads[:len(inputs) - 1] + inputs + ("seed",)


def _grad_shape(attrs, in_shapes):
    count = len(_inputs(attrs))
    return in_shapes, list(in_shapes[count - 1:2 * count - 1])


register("RNN", inputs=("data", "parameters", "state", "state_cell"), attrs=ATTRS,
         optional_inputs=_inputs, forward=_forward, infer_shape=_shape,
         num_outputs=_num_outputs, num_visible_outputs=_num_visible,
         output_names=("output", "state", "statecell", "dropout_seed"),
         gradient=_gradient, needs_train_flag=True, is_random=True, placement="host",
         doc="RNN(data, parameters, state[, state_cell], state_size, num_layers, mode, p): "
             "MXNet's fused recurrent layers, dropout p between layers while training "
             "(see ops/rnn.py).")
register("_rnn_grad", inputs=("out_grad", "state_grad", "state_cell_grad", "data",
                              "parameters", "state", "state_cell", "seed"),
         attrs=ATTRS, optional_inputs=_grad_inputs, forward=_backward, infer_shape=_grad_shape,
         num_outputs=lambda attrs: len(_inputs(attrs)), placement="host",
         doc="Gradient of RNN: (d data, d parameters, d state[, d state_cell]).")
