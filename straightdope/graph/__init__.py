"""The graph IR and what works on it directly: shape inference, the reference
executor and symbolic differentiation. The optimising passes live in
`straightdope.compiler`."""
from .ir import Graph, Node  # noqa: F401
from .shapes import annotate, infer_shapes  # noqa: F401
from .interpret import ReferenceBackend, run_reference  # noqa: F401
from .autodiff import Differentiated, differentiate  # noqa: F401
