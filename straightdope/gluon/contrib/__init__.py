"""`gluon.contrib`: where MXNet 1.x kept community layers. The containers that moved into
`gluon.nn` in MXNet 2.0 (Identity, Concurrent, HybridConcurrent) are found in
`gluon.contrib.nn` too, so `from straightdope.gluon.contrib.nn import HybridConcurrent` works
as in 1.x code."""
from . import nn
from . import rnn  # noqa: F401  (LSTMPCell)
