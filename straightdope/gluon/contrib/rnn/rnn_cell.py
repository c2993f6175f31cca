"""LSTMPCell: an LSTM cell with a projection (Sak et al., 2014), as MXNet 1.x's
`gluon.contrib.rnn.LSTMPCell`. The hidden vector h (hidden_size) is projected by
h2r_weight to r (projection_size); r is the output and the state fed back, so the
recurrent weights are (4*hidden, projection) instead of (4*hidden, hidden). One step of
`gluon.rnn.LSTM(hidden_size, projection_size=...)`."""
from ...rnn.rnn_cell import HybridRecurrentCell


class LSTMPCell(HybridRecurrentCell):
    """States: [r (batch, projection_size), c (batch, hidden_size)]."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        for name, shape, init in (("i2h_weight", (rows, input_size), i2h_weight_initializer),
                                  ("h2h_weight", (rows, projection_size), h2h_weight_initializer),
                                  ("h2r_weight", (projection_size, hidden_size),
                                   h2r_weight_initializer),
                                  ("i2h_bias", (rows,), i2h_bias_initializer),
                                  ("h2h_bias", (rows,), h2h_bias_initializer)):
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def _alias(self):
        return "lstmp"

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (4 * self._hidden_size, inputs.shape[-1])

    def __repr__(self):
        cols = self.i2h_weight.shape[1]
        return (f"LSTMPCell({cols if cols > 0 else None} -> {4 * self._hidden_size} -> "
                f"{self._projection_size})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix, rows = f"t{self._counter}_", 4 * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=rows, name=prefix + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=rows,
                               name=prefix + "h2h")
        gates = F.split(i2h + h2h, num_outputs=4, axis=1, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"),
                                name=prefix + "hidden")
        next_r = F.FullyConnected(hidden, h2r_weight, num_hidden=self._projection_size,
                                  no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]
