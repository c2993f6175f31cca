"""`gluon.contrib.rnn`: MXNet 1.x's contributed recurrent cells (LSTMPCell)."""
from .rnn_cell import LSTMPCell  # noqa: F401

__all__ = ["LSTMPCell"]
