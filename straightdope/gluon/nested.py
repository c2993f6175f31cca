"""Nested inputs and outputs of blocks: `net(x, [h, c], None)` flattened to a list of
arrays (or Symbols) and a *format* that rebuilds the nesting (MXNet's _flatten/_regroup)."""
from __future__ import annotations

from ..ndarray import NDArray
from ..numpy.multiarray import ndarray as _NpArray      # mx.np.ndarray: takes the same paths
from ..symbol import Symbol


class HybridInputError(TypeError, ValueError):
    """An input a hybridized block cannot take (a number, a NumPy array...). MXNet raises
    ValueError here, Python's habit is TypeError: it is both, so either `except` catches it."""


def _flatten(args, kind):
    """(flat list of arrays/symbols, format to rebuild the nesting with _regroup)."""
    if type(args) is tuple and _only_ndarrays(args):
        return list(args), [0] * len(args)      # the common case: no nesting
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args)
        return [args], (n if n > 1 else 0)      # a multi-output symbol becomes a list
    if args is None and kind == "input":
        return [], -1                           # loss(pred, label, None): stays None
    if not isinstance(args, (list, tuple)):
        raise HybridInputError(
            f"a hybridized block's {kind}s must be NDArrays or Symbols (or lists of them, or "
            f"None), got {type(args).__name__}: {args!r:.80}. Wrap NumPy data with "
            f"nd.array(x) / np.array(x); pass a number as an attribute of the block instead.")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, kind)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            return None, args
        return list(args[:fmt]), args[fmt:]
    ret = []
    for f in fmt:
        r, args = _regroup(args, f)
        ret.append(r)
    return ret, args


def _only_ndarrays(args):
    for a in args:
        if type(a) is not NDArray and type(a) is not _NpArray:
            return False
    return True


def _check_one_array_kind(block, out):
    """A block returns mx.np.ndarrays or classic NDArrays, not both (MXNet refuses the mix
    too). Unlike MXNet, classic outputs are fine under npx.set_np(): nd-style code keeps
    working there."""
    if isinstance(out, (list, tuple)) and len(out) > 1:
        kinds = set()

        def collect(value):
            if isinstance(value, (list, tuple)):
                for v in value:
                    collect(v)
            elif isinstance(value, NDArray):
                kinds.add(type(value))
        collect(out)
        if len(kinds) > 1:
            raise _mixed_kinds(block)


def _mixed_kinds(block):
    return TypeError(f"{type(block).__name__} returns both mx.np.ndarrays and classic "
                     f"mx.nd.NDArrays; return one kind: convert with x.as_np_ndarray() "
                     f"(or x.as_nd_ndarray())")



def _contains_symbol(args):
    if type(args) is tuple and _only_ndarrays(args):
        return False                    # the common imperative call, answered quickly
    if isinstance(args, Symbol):
        return True
    if isinstance(args, (list, tuple)):
        return any(_contains_symbol(a) for a in args)
    return False


def _input_kinds(args):
    """(has a Symbol, has an NDArray) anywhere in the nested inputs."""
    if isinstance(args, Symbol):
        return True, False
    if isinstance(args, NDArray):
        return False, True
    has_symbol = has_array = False
    if isinstance(args, (list, tuple)):
        for a in args:
            s, a = _input_kinds(a)
            has_symbol, has_array = has_symbol or s, has_array or a
    return has_symbol, has_array


def _same_but_trailing_none(fmt, traced):
    """Does a call differ from the traced one only by trailing None arguments (arguments left
    to their default None)? f(x) and f(x, None) then run the same graph, as in MXNet."""
    if not (isinstance(fmt, list) and isinstance(traced, list)):
        return False
    short, long = sorted((fmt, traced), key=len)
    return long[:len(short)] == short and all(f == -1 for f in long[len(short):])




def _describe_format(fmt):
    """A call structure in words: `(array, [array, array], None)` and how many arrays."""
    count = 0

    def walk(f):
        nonlocal count
        if f == -1:
            return "None"
        if isinstance(f, int):
            count += max(f, 1)
            return "array" if f == 0 else "[" + ", ".join(["array"] * f) + "]"
        return "[" + ", ".join(walk(x) for x in f) + "]"
    text = walk(fmt)
    if isinstance(fmt, list):           # the top level is the call's argument list
        text = "(" + text[1:-1] + ")"
    return f"{count} array(s) {text}"


def _is_format(fmt):
    """Is `fmt` a call structure as _flatten makes them (read from a file: check it)?"""
    if isinstance(fmt, list):
        return all(_is_format(f) for f in fmt)
    return type(fmt) is int and fmt >= -1
