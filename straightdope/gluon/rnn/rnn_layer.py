"""Recurrent layers: a whole sequence in one call (MXNet 1.x's RNN, LSTM, GRU).

    layer = rnn.LSTM(hidden_size=100, num_layers=2, layout='TNC')
    output = layer(x)                     # x: (T, N, C) -> (T, N, 100)
    output, [h, c] = layer(x, [h0, c0])   # states (num_layers * directions, N, 100)

Each layer and direction is ONE `F.contrib.foreach` over time: imperatively that
is a Python loop, hybridized it is one graph node whose body (one step) the
compiler builds once, however long the sequence. The input projection of every
step (i2h) is one matrix product over the whole sequence before the loop; the
loop body only adds the hidden projection (h2h) and applies the gates.

Parameter names and shapes are MXNet's (`l0_i2h_weight` (gates*hidden, input),
`r0_...` for the backward direction), so parameter files line up.
"""
from __future__ import annotations

from ... import ndarray
from ...ndarray import NDArray
from ...ops import OpError
from ...symbol import Symbol
from ..hybrid_block import HybridBlock
from . import rnn_cell
from .rnn_cell import check_layout

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: parameters, states, layers and directions."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, dtype="float32", projection_size=None,
                 h2r_weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        check_layout(layout, type(self).__name__)
        if not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout}")
        self._hidden_size, self._num_layers, self._mode = hidden_size, num_layers, mode
        self._layout, self._dropout = layout, dropout
        self._dir = 2 if bidirectional else 1
        self._input_size, self._gates = input_size, _GATES[mode]
        self._initializers = {"i2h_weight_initializer": i2h_weight_initializer,
                              "h2h_weight_initializer": h2h_weight_initializer,
                              "i2h_bias_initializer": i2h_bias_initializer,
                              "h2h_bias_initializer": h2h_bias_initializer}
        # an LSTM with a projection (LSTMP) feeds back h2r_weight @ h, of projection_size
        self._projection_size = projection_size or None
        out = self._projection_size or hidden_size
        rows, cols = self._gates * hidden_size, input_size
        for i in range(num_layers):
            for j in ("l", "r")[:self._dir]:
                for name, shape, init in (
                        ("i2h_weight", (rows, cols), i2h_weight_initializer),
                        ("h2h_weight", (rows, out), h2h_weight_initializer),
                        ("i2h_bias", (rows,), i2h_bias_initializer),
                        ("h2h_bias", (rows,), h2h_bias_initializer),
                        ("h2r_weight", (out, hidden_size), h2r_weight_initializer)):
                    if name == "h2r_weight" and not self._projection_size:
                        continue
                    key = f"{j}{i}_{name}"
                    setattr(self, key, self.params.get(key, shape=shape, init=init, dtype=dtype,
                                                       allow_deferred_init=True))
            cols = out * self._dir

    def __repr__(self):
        cols = self.l0_i2h_weight.shape[1]
        text = f"{type(self).__name__}({cols if cols > 0 else None} -> {self._hidden_size}, " \
            f"{self._layout}"
        if self._num_layers != 1:
            text += f", num_layers={self._num_layers}"
        if self._dropout:
            text += f", dropout={self._dropout}"
        if self._dir == 2:
            text += ", bidirectional"
        return text + ")"

    def _unfuse(self):
        """The layer as a stack of cells (MXNet's `_unfuse`): a `HybridSequentialRNNCell` of
        one cell per layer (a `BidirectionalCell` of two when bidirectional, a `DropoutCell`
        between layers when dropout > 0) with this layer's parameters, shared by name."""
        if self._projection_size:
            raise NotImplementedError(f"{self._describe()}: _unfuse has no cell for a "
                                      f"projection (projection_size); use the layer itself")
        hidden = self._hidden_size

        def make_cell(**kwargs):
            if self._mode == "lstm":
                return rnn_cell.LSTMCell(hidden, **kwargs)
            if self._mode == "gru":
                return rnn_cell.GRUCell(hidden, **kwargs)
            return rnn_cell.RNNCell(hidden, activation=self._mode[4:], **kwargs)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            size = self._input_size
            for i in range(self._num_layers):
                kwargs = dict(self._initializers, input_size=size)
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make_cell(prefix=f"l{i}_", **kwargs),
                                                         make_cell(prefix=f"r{i}_", **kwargs)))
                else:
                    stack.add(make_cell(prefix=f"l{i}_", **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                size = hidden * self._dir
        return stack

    # --------------------------------------------------------------- states
    def state_info(self, batch_size=0):
        shape = (self._num_layers * self._dir, batch_size, self._hidden_size)
        h = shape[:2] + (self._projection_size or self._hidden_size,)
        return [{"shape": h, "__layout__": "LNC"}] + \
            [{"shape": shape, "__layout__": "LNC"}] * (self._mode == "lstm")

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states, zeros by default: a list with one array (two for an LSTM:
        h and c) of shape (num_layers * directions, batch_size, hidden_size)."""
        states = []
        for k, info in enumerate(self.state_info(batch_size)):
            args = {"shape": info["shape"], **kwargs}
            states.append(func(name=f"{self.prefix}h0_{k}", **args))
        return states

    def infer_shape(self, inputs, *args):
        for j in ("l", "r")[:self._dir]:
            getattr(self, f"{j}0_i2h_weight").shape = (self._gates * self._hidden_size,
                                                       inputs.shape[2])

    # -------------------------------------------------------------- calling
    def __call__(self, inputs, states=None):
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        if isinstance(inputs, NDArray) and len(inputs.shape) == 3 \
                and inputs.shape[self._layout.find("T")] == 0:
            raise OpError(f"{self._describe()}: the sequence has length 0 (input shape "
                          f"{inputs.shape}, layout {self._layout}): there is no time step to "
                          f"run, so no output or state to give; skip the layer for an empty "
                          f"sequence")
        if states is not None:
            self._check_states(inputs, states)
            return super().__call__(inputs, list(states))
        return super().__call__(inputs)

    def _check_states(self, inputs, states):
        infos = self.state_info()
        if len(states) != len(infos):
            raise ValueError(f"{self._describe()} takes {len(infos)} state array(s) "
                             f"({'[h, c]' if len(infos) == 2 else '[h]'}), got {len(states)}")
        if isinstance(inputs, NDArray) and len(inputs.shape) != 3:
            raise ValueError(f"{self._describe()}: the input must be 3-d ({self._layout}), "
                             f"got shape {inputs.shape}")
        if isinstance(inputs, NDArray) and all(isinstance(s, NDArray) for s in states):
            batch = inputs.shape[self._layout.find("N")]
            for k, (state, info) in enumerate(zip(states, self.state_info(batch))):
                if state.shape != info["shape"]:
                    raise ValueError(
                        f"{self._describe()}: invalid recurrent state shape. State {k} must "
                        f"be {info['shape']} (num_layers * directions, batch, hidden_size) "
                        f"for an input of shape {inputs.shape} ({self._layout}), got "
                        f"{state.shape}. begin_state(batch_size) makes states that fit.")

    def hybrid_forward(self, F, inputs, states=None, **params):
        x = F.transpose(inputs, axes=(1, 0, 2)) if self._layout == "NTC" else inputs
        given = states is not None
        if not given:
            states = self._zero_states(F, x)
        n_states = len(states)
        # states[k] is (layers * directions, N, H): pick each layer's and direction's
        per_cell = [[F.reshape(F.slice_axis(s, axis=0, begin=c, end=c + 1), shape=(-3, -2))
                     for s in states] for c in range(self._num_layers * self._dir)]
        finals = []
        for i in range(self._num_layers):
            outs = []
            for d, j in enumerate(("l", "r")[:self._dir]):
                p = {k: params[f"{j}{i}_{k}"] for k in ("i2h_weight", "h2h_weight",
                                                        "i2h_bias", "h2h_bias", "h2r_weight")
                     if f"{j}{i}_{k}" in params}
                out, last = self._one_direction(F, x, per_cell[i * self._dir + d], p,
                                                reverse=d == 1, name=f"{j}{i}_")
                outs.append(out)
                finals.append(last)
            x = outs[0] if self._dir == 1 else F.concat(outs[0], outs[1], dim=2)
            if self._dropout and i < self._num_layers - 1:
                x = F.Dropout(x, p=self._dropout)
        new_states = [F.stack(*[f[k] for f in finals], axis=0) for k in range(n_states)]
        out = F.transpose(x, axes=(1, 0, 2)) if self._layout == "NTC" else x
        return (out, new_states) if given else out

    def _zero_states(self, F, x):
        """Zero states shaped from the input (x is TNC), so a traced graph makes them
        for any batch size."""
        if F is ndarray:
            return self.begin_state(x.shape[1], dtype=x.dtype)
        first = F.slice_axis(F.slice_axis(x, axis=0, begin=0, end=1), axis=2, begin=0, end=1)
        return [F.broadcast_to(F.zeros_like(first), shape=(info["shape"][0], 0, info["shape"][2]))
                for info in self.state_info()]

    def _one_direction(self, F, x, states, p, reverse, name):
        """One layer in one direction over the sequence x (T, N, C): (outputs, states)."""
        rows = self._gates * self._hidden_size
        # the input projection of all steps at once: one big matrix product
        i2h = F.FullyConnected(x, p["i2h_weight"], p["i2h_bias"], num_hidden=rows,
                               flatten=False, name=name + "i2h")
        if reverse:
            i2h = F.reverse(i2h, axis=0)
        step = self._step

        def body(i2h_t, state):
            h2h = F.FullyConnected(state[0], p["h2h_weight"], p["h2h_bias"], num_hidden=rows)
            return step(F, i2h_t + h2h, state, p)

        outputs, last = F.contrib.foreach(body, i2h, list(states), name=name + "foreach")
        if reverse:
            outputs = F.reverse(outputs, axis=0)
        return outputs, last

    def _step(self, F, gates, state, p):
        raise NotImplementedError


class RNN(_RNNLayer):
    """Elman RNN layers: h_t = activation(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), with
    activation 'relu' (the default, as in MXNet) or 'tanh'. One state: h."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 **kwargs):
        if activation not in ("relu", "tanh"):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, **kwargs)

    def _step(self, F, gates, state, p):
        h = F.Activation(gates, act_type=self._mode[4:])
        return h, [h]


class LSTM(_RNNLayer):
    """LSTM layers. Gates packed as MXNet: input, forget, cell (candidate), output.
    Two states: h and c. With `projection_size` (LSTMP) the output and the h fed back are
    h2r_weight @ h, of that size (the state h is then (layers*dirs, N, projection_size))."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size=projection_size,
                         h2r_weight_initializer=h2r_weight_initializer, **kwargs)

    def _step(self, F, gates, state, p):
        i, f, g, o = F.split(gates, num_outputs=4, axis=1)
        c = F.sigmoid(f) * state[1] + F.sigmoid(i) * F.tanh(g)
        h = F.sigmoid(o) * F.tanh(c)
        if "h2r_weight" in p:
            h = F.FullyConnected(h, p["h2r_weight"], num_hidden=self._projection_size,
                                 no_bias=True)
        return h, [h, c]


class GRU(_RNNLayer):
    """GRU layers. Gates packed as MXNet: reset, update, candidate. One state: h."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", **kwargs)

    def _one_direction(self, F, x, states, p, reverse, name):
        # the reset gate multiplies the hidden projection alone, so the body needs it apart
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(x, p["i2h_weight"], p["i2h_bias"], num_hidden=rows,
                               flatten=False, name=name + "i2h")
        if reverse:
            i2h = F.reverse(i2h, axis=0)

        def body(i2h_t, state):
            h2h = F.FullyConnected(state[0], p["h2h_weight"], p["h2h_bias"], num_hidden=rows)
            i_r, i_z, i_n = F.split(i2h_t, num_outputs=3, axis=1)
            h_r, h_z, h_n = F.split(h2h, num_outputs=3, axis=1)
            reset = F.sigmoid(i_r + h_r)
            update = F.sigmoid(i_z + h_z)
            candidate = F.tanh(i_n + reset * h_n)
            h = (1.0 - update) * candidate + update * state[0]
            return h, [h]

        outputs, last = F.contrib.foreach(body, i2h, list(states), name=name + "foreach")
        if reverse:
            outputs = F.reverse(outputs, axis=0)
        return outputs, last
