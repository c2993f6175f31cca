"""`mx.contrib`: MXNet's experimental corner. Here: `contrib.autograd` (MXNet's first
autograd API), and `contrib.ndarray` / `contrib.symbol`, the same modules as
`nd.contrib` / `sym.contrib` (foreach, while_loop, cond, ...)."""
from . import autograd  # noqa: F401
from ..ndarray import contrib as ndarray  # noqa: F401
from ..symbol import contrib as symbol  # noqa: F401

nd = ndarray
sym = symbol
