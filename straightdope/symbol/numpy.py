"""MXNet's module for the np Symbol class: `mxnet.symbol.numpy._Symbol` (MXNet's
test_utils imports it from here). The class is `symbol.NpSymbol`; sym.np's functions,
which reuse mx.np (a layer above the Symbol), are in numpy/_symbol.py."""
from .symbol import NpSymbol as _Symbol  # noqa: F401  (MXNet's name)
