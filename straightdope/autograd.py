"""autograd (MXNet's module): record operations, then compute gradients.

    with autograd.record():
        loss = net(x)
    loss.backward()             # or autograd.backward(loss), autograd.grad(loss, [x])

The recording itself, the tape, is `straightdope/tape.py`, below NDArray (which records
on it); this module re-exports it and adds what makes arrays and Symbols: backward()
and grad() (gradient arrays), get_symbol() (the tape as a Symbol) and Function (an op
written in Python with its own backward).
"""
from __future__ import annotations

from . import ndarray as _nd
from . import tape
from .ndarray import NDArray
from .ndarray.ndarray import head_gradients
from .tape import (TapeNode, _state, is_recording, is_training, mark_variables,  # noqa: F401
                   needs_grad, pause, predict_mode, record, record_node, set_recording,
                   set_training, train_mode)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True, create_graph=False,
             _collect=None):
    """Compute gradients of `heads` for every array marked with attach_grad().

    create_graph=True records the backward pass itself (the gradient rules are nd ops),
    so the gradients can be differentiated again: see grad(). `_collect`: arrays whose
    gradients grad() wants back as they are (with their own recorded graph)."""
    if not isinstance(heads, (list, tuple)):
        heads = [heads]
        head_grads = [head_grads] if head_grads is not None else None
    return tape.backward(list(heads), head_gradients(heads, head_grads), retain_graph,
                         train_mode, create_graph, _collect)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Return the gradients of `heads` wrt `variables` (without touching .grad).

    With create_graph=True the gradients are themselves recorded, so calling backward()
    on them (or grad() again) gives second derivatives; the graph is then kept
    (retain_graph defaults to create_graph, as in MXNet).

    A list, one gradient per variable, even for one variable given alone: MXNet 1.9.1
    wraps a lone variable in a list before checking, so its `return ret[0]` never runs
    (its tests index `grad(y, x)[0]`)."""
    if retain_graph is None:
        retain_graph = create_graph
    variables = list(variables) if isinstance(variables, (list, tuple)) else [variables]
    saved = [(v._grad, v._grad_req) for v in variables]
    try:
        for v in variables:
            v._grad, v._grad_req = _nd.zeros_like(v), "write"
        if create_graph:
            result = backward(heads, head_grads, retain_graph=bool(retain_graph),
                              train_mode=train_mode, create_graph=True, _collect=variables)
            result = [g if g is not None else _nd.zeros_like(v)
                      for g, v in zip(result, variables)]
        else:
            backward(heads, head_grads, retain_graph=bool(retain_graph), train_mode=train_mode)
            result = [v._grad for v in variables]
    finally:
        for v, (g, req) in zip(variables, saved):
            v._grad, v._grad_req = g, req
    return result


def get_symbol(x):
    """The recorded computation of `x` as a Symbol: the arrays it started from become
    variables (var0, var1, ... in the order they are met), each recorded op a node. A
    hybridized block's call is one `_CachedOp` node, or its ops one by one when it has at
    most `inline_limit` of them (hybridize(inline_limit=...), 2 by default), as in MXNet."""
    from . import symbol as sym
    from .symbol.symbol import _create
    if x._tape is None:
        raise ValueError("get_symbol(): nothing was recorded for this array; compute it "
                         "inside `with autograd.record():` from arrays with attach_grad()")
    made = {}                   # id(tape node or leaf array) -> Symbol
    leaves = []

    def symbol_of(array):
        if array._tape is None:
            if id(array) not in made:
                made[id(array)] = sym.var(f"var{len(leaves)}")
                leaves.append(array)
            return made[id(array)]
        node, k = array._tape
        return made[id(node)][k]

    for node in reversed(tape.topological([x])):        # inputs before the nodes using them
        if node.op is None:
            raise ValueError(f"get_symbol(): the recorded step {node.label} is not an op "
                             f"(a custom autograd.Function runs Python code); get the graph "
                             f"without it, or write that step with F ops in a HybridBlock")
        inputs = [symbol_of(a) for a in node.inputs]
        if isinstance(node.op, sym.Symbol):         # a small hybridized graph: inlined
            graph = node.op
            made[id(node)] = graph.substitute(dict(zip(graph.list_inputs(), inputs)))
            if len(node.outputs) > 1:
                made[id(node)] = list(made[id(node)])
            continue
        op, attrs = node.op
        made[id(node)] = _create(op.name, inputs, attrs, parsed=True)
        if len(node.outputs) > 1 and len(made[id(node)]) == 1:
            made[id(node)] = [made[id(node)]]
    return symbol_of(x)


class Function:
    """An op with a forward and a backward you write yourself (MXNet's
    `autograd.Function`), e.g. a numerically safer gradient:

        class Sigmoid(autograd.Function):
            def forward(self, x):
                y = 1 / (1 + nd.exp(-x))
                self.save_for_backward(y)
                return y
            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)

    Call an instance on NDArrays (`Sigmoid()(x)`); under `record()` the call is one
    node on the tape whose gradient is your `backward`. Use a new instance per call."""

    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *arrays):
        """Keep arrays for backward (read them back as `self.saved_tensors`)."""
        self.saved_tensors = arrays

    def forward(self, *inputs):
        raise NotImplementedError("a Function needs a forward(self, *inputs) method")

    def backward(self, *output_grads):
        raise NotImplementedError("a Function needs a backward(self, *output_grads) method")

    def __call__(self, *inputs):
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outputs_list = [outputs] if single else list(outputs)
        # Outputs of their own, so that the tape never marks an input as an output.
        outputs_list = [NDArray(o._data, o._ctx) for o in outputs_list]
        name = type(self).__name__

        def backward_fn(out_grads):
            grads = self.backward(*out_grads)
            grads = [grads] if isinstance(grads, NDArray) else list(grads)
            if len(grads) != len(inputs):
                raise ValueError(f"{name}.backward returned {len(grads)} gradient(s) for "
                                 f"{len(inputs)} input(s) of forward")
            return grads
        if is_recording():
            record_node(list(inputs), outputs_list, backward_fn, name)
        return outputs_list[0] if single else tuple(outputs_list)


__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad",
           "get_symbol", "Function", "NDArray"]
