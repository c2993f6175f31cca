"""Errors that students meet, each with a message that says what to do."""


import numbers as _numbers

import numpy as _np

__version__ = "0.1.0"           # straightdope.__version__ (here, below every layer)

# MXNet's type groups, for code that checks `isinstance(x, integer_types)`
integer_types = (int, _np.integer)
numeric_types = (float, int, _np.generic)
string_types = (str,)
py_slice = slice
mx_real_t = _np.float32         # MXNet's default real type


class MXNetError(RuntimeError):
    """Kept under MXNet's name so that `except mx.base.MXNetError` works."""


class NotImplementedForSymbol(TypeError):
    """A Python operation that needs a value was applied to a Symbol (a placeholder)."""

    def __init__(self, symbol_name, what, instead):
        self.symbol_name, self.what = symbol_name, what
        super().__init__(
            f"{what} is not possible on Symbol '{symbol_name}'. While a HybridBlock is being "
            f"hybridized (traced), its inputs are Symbols: placeholders in a graph that is "
            f"being built, with no numbers in them yet. Python code that needs a value runs "
            f"only once, at trace time, and cannot see the data of later calls. "
            f"Instead: {instead}")


def postorder(roots, children):
    """Every node reachable from `roots`, each after all of its `children(node)`.

    One iterative depth-first walk (deep graphs would overflow Python's recursion)
    shared by the autograd tape and the symbol graph."""
    order, seen = [], set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for child in reversed(children(node)):
                if id(child) not in seen:
                    stack.append((child, False))
    return order


def _as_list(obj):
    """`obj` if it is a list or tuple, else `[obj]` (MXNet's helper, which its code and tests
    import from `mxnet.base`)."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def py_str(x):
    """Bytes from a C library as a str (MXNet's helper; here everything is already str)."""
    return x.decode("utf-8") if isinstance(x, bytes) else x
