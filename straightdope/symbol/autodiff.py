"""Symbolic differentiation: the backward graph, built from the ops' own gradient rules.

Walking the forward graph from the outputs back to the inputs, each op's
`gradient` is called with `F = sym`, so it *adds nodes* instead of computing.
The result is split in two graphs that a hybridized block compiles once:

* forward:  the outputs, plus the intermediate values the backward reads ("saved");
* backward: (inputs, saved values, output gradients) -> gradients of the inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import name as _name
from ..base import postorder
from .symbol import Group, Node, Symbol, broadcasting_operators, topological


@dataclass
class Differentiated:
    forward: Symbol            # visible outputs + extra outputs + saved values
    backward: Symbol           # one gradient per name in `wrt`
    wrt: list                  # variable names, in the order of backward's outputs
    head_names: list           # backward inputs that receive the output gradients
    saved_names: list          # backward inputs that receive forward's saved values
    num_outputs: int           # visible outputs + extra outputs (the rest of forward is saved)


def gradient_symbols(outputs: list, head_grads: list, wrt: list,
                     is_train: bool = True) -> list:
    """Gradients of `outputs` (Symbols) with respect to the values `wrt` (Symbols), given
    the gradients flowing into the outputs: Symbols built in the same graph (None where
    an output does not depend on a value). The walk stops at the `wrt` values, so they
    may be any values, not only variables (a loop body's gradient needs that)."""
    from .. import symbol as sym
    stops = {id(n) for s in wrt for n, _ in s.entries}
    heads = [e for s in outputs for e in s.entries]
    nodes = postorder([n for n, _ in heads],
                      lambda node: [] if id(node) in stops else [c for c, _ in node.inputs])
    needs = set()
    for node in nodes:
        if id(node) in stops or any(id(c) in needs for c, _ in node.inputs):
            needs.add(id(node))
    grads: dict = {}
    for (node, k), g in zip(heads, head_grads):
        key = (id(node), k)
        grads[key] = g if key not in grads else grads[key] + g
    for node in reversed(nodes):
        if node.is_var or id(node) in stops or id(node) not in needs:
            continue
        out_grads = [grads.get((id(node), k)) for k in range(node.num_outputs())]
        if all(g is None for g in out_grads):
            continue
        outs = [Symbol([(node, k)]) for k in range(node.num_outputs())]
        out_grads = [g if g is not None else sym.zeros_like(o) for g, o in zip(out_grads, outs)]
        ins = [Symbol([e]) for e in node.inputs]
        with broadcasting_operators():      # the rules are written for NDArrays too
            in_grads = node.op.backward(sym, node.attrs, ins, outs, out_grads,
                                        is_train=is_train)
        for (child, k), g in zip(node.inputs, in_grads):
            if g is None or id(child) not in needs:
                continue
            key = (id(child), k)
            grads[key] = g if key not in grads else grads[key] + g
    return [grads.get((id(s.entries[0][0]), s.entries[0][1])) for s in wrt]


def differentiate(symbol: Symbol, wrt: list, is_train: bool = True,
                  extra_outputs: Symbol | None = None) -> Differentiated:
    """The forward and backward graphs of `symbol` for the gradients with respect to the
    variables named in `wrt`; `extra_outputs` are computed by the forward graph too."""
    extra = extra_outputs.entries if extra_outputs is not None else []
    forward_nodes = topological(symbol.entries + extra)
    variables = {n.name: n for n in forward_nodes if n.is_var}
    wrt_symbols = [Symbol([(variables[name], 0)]) for name in wrt]
    head_names, gradients = _gradient_graph(symbol, wrt_symbols, is_train)

    split = _Split(forward_nodes)
    backward_outputs = [split.entry(*g.entries[0]) for g in gradients]
    forward = Group([symbol] + ([extra_outputs] if extra_outputs is not None else [])
                    + [Symbol([e]) for e in split.saved_entries])
    return Differentiated(forward=forward, backward=Symbol(backward_outputs), wrt=list(wrt),
                          head_names=head_names, saved_names=split.saved_names(),
                          num_outputs=len(symbol) + len(extra))


def _gradient_graph(symbol: Symbol, wrt_symbols: list, is_train: bool):
    """One head-gradient variable per output, and the gradient Symbols (zeros where a
    variable does not reach the outputs), all in one graph with the forward nodes."""
    from .. import symbol as sym
    with _name.Prefix("_grad_"):
        heads = [sym.var(f"_head_grad{k}") for k in range(len(symbol))]
        found = gradient_symbols(list(symbol), heads, wrt_symbols, is_train)
        gradients = [g if g is not None else sym.zeros_like(v)
                     for g, v in zip(found, wrt_symbols)]
    return [h.name for h in heads], gradients


class _Split:
    """Cuts the gradient graph off the forward graph: backward nodes are cloned, and
    where one reads a forward *op* value, it reads a new variable `_savedK` instead, whose
    value the forward graph returns (the forward's variables are read as they are)."""

    def __init__(self, forward_nodes):
        self.forward_ids = {id(n) for n in forward_nodes}
        self.saved_entries = []            # forward values the backward reads, in order
        self.saved_vars = {}               # (id(forward node), k) -> its `_savedK` variable
        self.clones = {}                   # id(backward node) -> its clone

    def entry(self, node, k):
        """What a backward node reads in place of output k of `node`."""
        if id(node) not in self.forward_ids:
            return (self.clone(node), k)
        if node.is_var:
            return (node, k)
        key = (id(node), k)
        if key not in self.saved_vars:
            self.saved_vars[key] = Node(None, f"_saved{len(self.saved_entries)}")
            self.saved_entries.append((node, k))
        return (self.saved_vars[key], 0)

    def clone(self, node):
        if id(node) not in self.clones:
            # iterative, inputs first: graphs can be deeper than Python's recursion limit
            for n in topological([(node, 0)]):
                if id(n) not in self.clones and id(n) not in self.forward_ids:
                    self.clones[id(n)] = Node(n.op, n.name, n.attrs,
                                              [self.entry(c, k) for c, k in n.inputs],
                                              n.var_attrs)
        return self.clones[id(node)]

    def saved_names(self) -> list:
        return [self.saved_vars[(id(n), k)].name for n, k in self.saved_entries]
