"""`gluon.rnn`: recurrent cells (one step) and layers (a whole sequence), MXNet 1.x's API.

    from straightdope.gluon import rnn
    layer = rnn.LSTM(100, num_layers=2)          # hybridized: one loop node per layer
    cell = rnn.LSTMCell(100)                     # cell.unroll(T, x): a Python loop
"""
from .rnn_cell import (BidirectionalCell, DropoutCell, GRUCell, HybridRecurrentCell,  # noqa: F401
                       HybridSequentialRNNCell, LSTMCell, ModifierCell, RecurrentCell, RNNCell,
                       ResidualCell, SequentialRNNCell, ZoneoutCell)
from .rnn_layer import GRU, LSTM, RNN  # noqa: F401
