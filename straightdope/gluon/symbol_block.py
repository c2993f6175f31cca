"""SymbolBlock: a block around a graph that already exists (an exported -symbol.json)."""
from __future__ import annotations

import os
from collections import OrderedDict

import numpy

from .. import symbol
from ..context import check_context
from ..mxnet_format import DTYPES as _MXNET_DTYPES
from ..symbol import Symbol
from .block import Block
from .hybrid_block import HybridBlock
from .nested import _contains_symbol, _describe_format, _flatten, _regroup
from .parameter import ParameterDict

__all__ = ["SymbolBlock"]


def _var_dtype(node, source):
    text = node.var_attrs.get("__dtype__", "float32")
    if text.isdigit():                  # MXNet writes its type codes: "0" is float32
        text = _MXNET_DTYPES.get(int(text), text)
    try:
        return numpy.dtype(text)
    except TypeError:
        raise ValueError(f"{source}: variable '{node.name}' has an unknown dtype "
                         f"{text!r:.40}") from None


class SymbolBlock(HybridBlock):
    """A block around a graph that already exists: `SymbolBlock(outputs, inputs)`.

    Every variable of the graph that is not an input becomes a Parameter with the same
    name. It runs through a CachedOp, like a hybridized block. To load an exported model:
    `SymbolBlock.imports('net-symbol.json', ['data'], 'net-0000.params')`.
    """

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix, self._empty_prefix = "", True   # keep the graph's own names
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        outs, self._out_format = _flatten(outputs, "output")
        out = outs[0] if len(outs) == 1 else symbol.Group(outs)
        variables = {n.name: n for n in out.walk() if n.is_var}
        input_names = []
        for s in syms:
            node = s.entries[0][0]
            if not node.is_var or len(s) != 1:
                raise ValueError(f"SymbolBlock: inputs must be variables (sym.var('data')), but "
                                 f"{s} is the output of an op")
            if node.name not in variables:
                raise ValueError(f"SymbolBlock: input '{node.name}' is not a variable of the "
                                 f"graph; its variables are {list(variables)}")
            input_names.append(node.name)
        aux, inputs_set = set(out.list_auxiliary_states()), set(input_names)   # sets: a graph
        for name, node in variables.items():                  # may have 100k variables
            if name in inputs_set:
                continue
            self._params.get(name, allow_deferred_init=True, dtype=_var_dtype(node, "graph"),
                             grad_req="null" if name in aux else "write")
        # Structural keys for save_parameters: the names without their common prefix.
        names = list(self._params.keys())
        common = _common_prefix(names)
        self._reg_params = OrderedDict((n[len(common):], self._params[n]) for n in names)
        self._cached_graph = ([symbol.var(n) for n in input_names], out)

    def __repr__(self):
        inputs, out = self._cached_graph
        return (f"SymbolBlock(inputs={[i.name for i in inputs]}, outputs={out.list_outputs()}, "
                f"params={len(self._params)})")

    def _clear_cached_op(self):
        # The graph is ours from the start; only the compiled op goes stale.
        self._cache = None
        Block._clear_cached_op(self)

    def forward(self, x, *args):
        if _contains_symbol((x,) + args):
            flat, in_format = _flatten((x,) + args, "input")
            if in_format != self._in_format:
                raise ValueError(f"SymbolBlock: expects {_describe_format(self._in_format)}, "
                                 f"got {_describe_format(in_format)}")
            inputs, out = self._cached_graph
            result = out.substitute({i.name: s for i, s in zip(inputs, flat)})
            return _regroup(list(result), self._out_format)[0]
        return self._call_cached_op(x, *args)

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, device=None,
                allow_missing=False, ignore_extra=False):
        """Load a network written by HybridBlock.export(): the graph from `symbol_file`
        (ops looked up in the registry, nothing executed) and the values from
        `param_file` (plain arrays, no pickle)."""
        check_context(ctx or device)
        graph = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        variables = graph.list_inputs()
        known = set(variables)
        for name in input_names:
            if name not in known:
                raise ValueError(f"{symbol_file}: '{name}' is not a variable of the graph, "
                                 f"whose variables are {variables}. Pass the input name(s) "
                                 f"used at export (usually ['data']).")
        net = SymbolBlock(graph, [symbol.var(n) for n in input_names])
        if param_file is not None:
            net._params.load(param_file, ctx or device, allow_missing, ignore_extra)
        return net


def _common_prefix(names):
    """The longest common prefix ending in '_' (so a name is never eaten whole)."""
    if len(names) < 2:
        return ""
    prefix = os.path.commonprefix(names)
    return prefix[:prefix.rfind("_") + 1]