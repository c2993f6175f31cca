"""`gluon.nn`: layers and containers. Every layer here is a HybridBlock, so a network made
only of them can be traced and compiled with one `net.hybridize()`."""
from ..block import Block  # noqa: F401
from ..hybrid_block import HybridBlock  # noqa: F401
from ..symbol_block import SymbolBlock  # noqa: F401
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
