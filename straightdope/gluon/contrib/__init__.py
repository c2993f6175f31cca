"""`gluon.contrib`: where MXNet 1.x kept community layers. The containers that moved into
`gluon.nn` in MXNet 2.0 (Identity, Concurrent, HybridConcurrent) are found here too, so
`from straightdope.gluon.contrib.nn import HybridConcurrent` works as in 1.x code."""
import types as _types

from ..nn import Concurrent, HybridConcurrent, Identity

nn = _types.SimpleNamespace(Concurrent=Concurrent, HybridConcurrent=HybridConcurrent,
                            Identity=Identity)
