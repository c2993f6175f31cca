"""`straightdope.gluon`: Blocks, Parameters and layers in MXNet Gluon's API.

    from straightdope import gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, activation='relu'), gluon.nn.Dense(2))

`loss`, `Trainer` and `model_zoo` are loaded on first use.
"""
from .parameter import (Constant, DeferredInitializationError, Parameter,  # noqa: F401
                        ParameterDict)
from . import block as _block
from .block import Block  # noqa: F401
from .hybrid_block import HybridBlock
from .symbol_block import SymbolBlock
# `from straightdope.gluon.block import HybridBlock` (the old home, used by user code) keeps
# working: importing gluon.block runs this file first. block.py itself imports neither.
_block.HybridBlock, _block.SymbolBlock = HybridBlock, SymbolBlock
from . import contrib, data, nn, rnn, utils  # noqa: F401
from .. import metric  # noqa: F401


def __getattr__(attr):
    import importlib
    if attr in ("loss", "model_zoo", "trainer"):
        return importlib.import_module(f"{__name__}.{attr}")
    if attr == "Trainer":
        return importlib.import_module(f"{__name__}.trainer").Trainer
    raise AttributeError(f"module 'straightdope.gluon' has no attribute {attr!r}")
