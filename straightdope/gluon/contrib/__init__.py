"""`gluon.contrib`: where MXNet 1.x kept community layers. The containers that moved into
`gluon.nn` in MXNet 2.0 (Identity, Concurrent, HybridConcurrent) are found here too, so
`from straightdope.gluon.contrib.nn import HybridConcurrent` works as in 1.x code."""
import sys as _sys
import types as _types

from ..nn import Concurrent, HybridConcurrent, Identity

# A module made here rather than a file: it only re-exports, and registering it in
# sys.modules lets `import ...contrib.nn` find it.
nn = _types.ModuleType(__name__ + ".nn", "Concurrent, HybridConcurrent, Identity (see gluon.nn)")
nn.Concurrent, nn.HybridConcurrent, nn.Identity = Concurrent, HybridConcurrent, Identity
_sys.modules[nn.__name__] = nn
