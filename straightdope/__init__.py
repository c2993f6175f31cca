"""straightdope: MXNet Gluon's imperative/symbolic idea, small enough to read.

    import straightdope as mx
    from straightdope import nd, sym, autograd, gluon

`nd` computes now, `sym` builds graphs, and both are generated from one op
registry (`straightdope.ops`). A HybridBlock runs the same code with either.
"""
import sys as _sys

from .base import __version__  # noqa: F401  (in base.py: the compile cache reads it too)
from . import ops  # noqa: F401  (fills the op registry first)
from .base import MXNetError, NotImplementedForSymbol  # noqa: F401
from .context import Context, Device, cpu, current_context, gpu, num_gpus  # noqa: F401
from . import autograd, initializer, name, random  # noqa: F401
from . import ndarray, symbol  # noqa: F401
from . import graph  # noqa: F401  (built on symbol; gives Symbol.infer_shape and eval)
from . import executor  # noqa: F401  (Symbol.bind and simple_bind, on a CachedOp)
from . import attribute, numpy, numpy_extension, util  # noqa: F401
from . import engine, profiler  # noqa: F401
from .attribute import AttrScope  # noqa: F401
from .util import (is_np_array, is_np_shape, np_array, np_shape, reset_np,  # noqa: F401
                   set_np, set_np_shape, use_np, use_np_array, use_np_shape)

# sym.np's module (numpy/_symbol.py) is `mxnet.symbol.numpy` in MXNet, and code imports
# it by that name (MXNet's test_utils: `from mxnet.symbol.numpy import _Symbol`)
from .numpy import _symbol as _symbol_numpy  # noqa: E402
_sys.modules.setdefault(f"{__name__}.symbol.numpy", _symbol_numpy)

nd = ndarray
sym = symbol
np = numpy
npx = numpy_extension
init = initializer


class _ShortReprModule(type(ndarray)):
    """A module that prints as <module 'straightdope.symbol'>, without the folder it was
    installed in: `print(F)` inside hybrid_forward then shows which module F is, and the
    same text on every machine."""

    def __repr__(self):
        return f"<module {self.__name__!r}>"


for _module in (ndarray, symbol, numpy, numpy_extension):
    _module.__class__ = _ShortReprModule

if engine.config.engine_type() != engine.NAIVE:    # MXNET_ENGINE_TYPE, read once
    engine.set_engine_type(engine.config.engine_type())


def __getattr__(attr):
    # Heavier parts load on first use, so `import straightdope` stays light.
    import importlib
    if attr in ("gluon", "metric", "viz", "compiler", "image", "cached_op", "demo",
                "optimizer", "lr_scheduler", "runtime", "operator", "contrib"):
        return importlib.import_module(f"{__name__}.{attr}")
    raise AttributeError(f"module 'straightdope' has no attribute {attr!r}")
