"""The dtypes Numba computes with, and their names in generated code.

Apart from `codegen` so that a tiered first call (`tiers.can_be_tiered`) can ask
without importing the code generator."""
import numpy as np

NUMBA_DTYPES = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32",
                "int64": "np.int64", "int8": "np.int8", "uint8": "np.uint8",
                "bool": "np.bool_"}


def dtypes_without_arithmetic(graph) -> list:
    """The dtypes of `graph`'s values that Numba cannot compute with (float16: LLVM
    has the type, Numba's array arithmetic does not), sorted; empty if it can compile."""
    return sorted({np.dtype(dt).name for node in graph.nodes for dt in (node.dtypes or ())
                   if dt is not None and np.dtype(dt).name not in NUMBA_DTYPES})
