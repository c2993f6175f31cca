"""The graph IR and what works on it directly: shape inference and the reference
executor (symbolic differentiation, Symbols only, is `symbol/autodiff.py`). The
optimising passes live in `straightdope.compiler`.

This layer is built on `straightdope.symbol` (a Graph is made from a Symbol's public
API: `walk()`, `entries`, the nodes' fields) and never the other way round. The
Symbol methods that need a whole-graph analysis (and the Executor's memory
report) get it from here, once, below."""
from ..ops import control_flow as _control_flow
from ..symbol import symbol as _symbol
from .ir import Graph, Node  # noqa: F401
from .shapes import annotate, infer_shapes, symbol_shapes  # noqa: F401
from .specialize import AnyShape  # noqa: F401
from .cse import eliminate_common_expr, optimized_symbol  # noqa: F401
from .interpret import (ReferenceBackend, ReferenceExecutable, evaluate,  # noqa: F401
                        run_reference)
from ..symbol.autodiff import Differentiated, differentiate, gradient_symbols  # noqa: F401

_symbol.GRAPH_ANALYSES.update(infer_shapes=symbol_shapes, evaluate=evaluate,
                              differentiate=differentiate)
# ... and what the ops holding a subgraph (foreach, while_loop, cond, _CachedOp) need
_control_flow.SUBGRAPH_CODE.update(Graph=Graph, infer_shapes=infer_shapes,
                                   ReferenceExecutable=ReferenceExecutable,
                                   differentiate=differentiate,
                                   gradient_symbols=gradient_symbols, Symbol=_symbol.Symbol)
