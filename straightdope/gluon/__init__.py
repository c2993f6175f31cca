"""`straightdope.gluon`: Blocks, Parameters and layers in MXNet Gluon's API.

    from straightdope import gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, activation='relu'), gluon.nn.Dense(2))

`loss`, `Trainer` and `model_zoo` are loaded on first use.
"""
from .parameter import (Constant, DeferredInitializationError, Parameter,  # noqa: F401
                        ParameterDict)
from .block import Block  # noqa: F401
from .hybrid_block import HybridBlock  # noqa: F401
from .symbol_block import SymbolBlock  # noqa: F401
from . import contrib, data, nn, rnn, utils  # noqa: F401
from .. import metric  # noqa: F401


def __getattr__(attr):
    import importlib
    if attr in ("loss", "model_zoo", "trainer"):
        return importlib.import_module(f"{__name__}.{attr}")
    if attr == "Trainer":
        return importlib.import_module(f"{__name__}.trainer").Trainer
    raise AttributeError(f"module 'straightdope.gluon' has no attribute {attr!r}")
