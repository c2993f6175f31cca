"""The tape: recording operations, and walking them backwards.

Inside `with autograd.record():` every op on an array that needs a gradient
leaves a `TapeNode` behind: its inputs, its outputs and a function that turns
output gradients into input gradients. `backward()` walks these nodes from the
heads in reverse order. An op's node calls the op's own gradient rule with
`F = nd`; a hybridized block leaves *one* node whose backward runs its
compiled gradient graph (see `straightdope/cached_op.py`).

This module is below NDArray, which records on it (so it makes no arrays: an array
it needs comes from the arrays it is given); MXNet's API for it, the module
`straightdope.autograd`, is above NDArray and Symbol and re-exports it.
"""
from __future__ import annotations

import threading
import weakref

from .base import postorder
from . import engine as _engine

class _State(threading.local):
    # Class-level defaults: a missing attribute on a thread-local costs an exception
    # (~2 us) on every is_recording()/is_training() call; a default costs nothing.
    recording = False
    training = False


_state = _State()


def is_recording() -> bool:
    """Are operations being recorded for a later backward()?"""
    return _state.recording


def is_training() -> bool:
    """Do Dropout and BatchNorm behave as in training?"""
    return _state.training


def set_recording(flag: bool) -> bool:
    previous = is_recording()
    _state.recording = bool(flag)
    return previous


def set_training(flag: bool) -> bool:
    previous = is_training()
    _state.training = bool(flag)
    return previous


class _scope:
    """What record(), pause(), train_mode() and predict_mode() return: a context manager
    that sets the two flags (None: leave it) and restores them on exit. A small class,
    not @contextmanager: a training step enters one or two, and a generator-based one
    costs several times more."""
    __slots__ = ("recording", "training", "saved")

    def __init__(self, recording, training):
        self.recording = None if recording is None else bool(recording)
        self.training = None if training is None else bool(training)

    def __enter__(self):
        self.saved = (_state.recording, _state.training)
        if self.recording is not None:
            _state.recording = self.recording
        if self.training is not None:
            _state.training = self.training

    def __exit__(self, *exc_info):
        if self.recording is not None:
            _state.recording = self.saved[0]
        if self.training is not None:
            _state.training = self.saved[1]


def record(train_mode: bool = True):
    """Record operations for backward() (and, by default, use training behaviour)."""
    return _scope(True, train_mode)


def pause(train_mode: bool = False):
    """Stop recording inside a `record()` block (e.g. for a metric)."""
    return _scope(False, train_mode)


def train_mode():
    """Training behaviour for Dropout/BatchNorm without recording."""
    return _scope(None, True)


def predict_mode():
    """Inference behaviour for Dropout/BatchNorm, even inside `record()`."""
    return _scope(None, False)


class TapeNode:
    """One step on the tape: outputs = f(inputs), and how to go back.

    `fresh_grads`: the arrays backward_fn returns are new and share memory with nothing
    (true of compiled graphs), so backward() may hand them over to `.grad` instead of
    copying them."""
    __slots__ = ("inputs", "outputs", "backward_fn", "label", "fresh_grads", "op")

    def __init__(self, inputs, outputs, backward_fn, label, fresh_grads=False, op=None):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.backward_fn = backward_fn      # list of output grads -> list of input grads
        self.label = label
        self.fresh_grads = fresh_grads
        self.op = op                        # for get_symbol: (registry Op, attrs) of an op's
        #                                     node, or a hybridized block's Symbol to inline

    def __repr__(self):
        return f"<TapeNode {self.label}: {len(self.inputs)} in, {len(self.outputs)} out>"


def needs_grad(array) -> bool:
    return array._grad_req != "null" or array._tape is not None


def record_node(inputs, outputs, backward_fn, label, fresh_grads=False, op=None):
    """Put a node on the tape when any input needs a gradient. Returns the node or None."""
    if not any(needs_grad(x) for x in inputs):
        return None
    node = TapeNode(inputs, outputs, backward_fn, label, fresh_grads, op)
    for k, out in enumerate(outputs):
        out._tape = (node, k)
    return node


def mark_variables(variables, gradients, grad_reqs="write"):
    """Make arrays leaves of the tape whose gradients go to `gradients`."""
    if not isinstance(variables, (list, tuple)):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    for var, grad, req in zip(variables, gradients, grad_reqs):
        var._grad, var._grad_req, var._tape = grad, req, None


def topological(heads):
    """Tape nodes from the heads back to the leaves (each before the nodes it feeds)."""
    roots = [h._tape[0] for h in heads if h._tape is not None]
    order = postorder(roots, lambda node: [x._tape[0] for x in node.inputs
                                           if x._tape is not None])
    return order[::-1]           # heads first


# The heads whose recorded graph a backward() freed, so that a second backward() on one can
# say so (rather than "nothing was recorded"): id -> weak reference (it keeps no array
# alive). The last few are enough for that message; a plain dict of weakref.ref costs a
# fraction of a WeakValueDictionary on every backward().
_freed: dict = {}
_FREED_KEPT = 64


def _was_freed(array) -> bool:
    ref = _freed.get(id(array))
    return ref is not None and ref() is array


def backward(heads, head_grads, retain_graph=False, train_mode=True, create_graph=False,
             _collect=None):
    """Walk the tape back from `heads` (a list) with `head_grads` (one array per head:
    autograd.backward makes the ones it was not given) and write the gradients of the
    arrays marked with attach_grad() (`.grad`).

    create_graph=True records the backward pass itself (the gradient rules are nd ops),
    so the gradients can be differentiated again: see autograd.grad(). `_collect`: arrays
    whose gradients grad() wants back as they are (with their own recorded graph)."""
    _check_recorded(heads)
    # id(array) -> [array, its gradient summed so far, is that gradient an array that
    # nobody else holds]. An array's entry is complete once every node it feeds has
    # run, which the topological order guarantees before its own node runs.
    summed: dict = {}
    for h, hg in zip(heads, head_grads):
        _add(summed, h, hg, False)
    with _scope(create_graph, train_mode):
        for node in topological(heads):
            _run_backward(node, summed, retain_graph)
    if _collect is not None:
        return [summed[id(v)][1] if id(v) in summed else None for v in _collect]
    if not retain_graph:
        _remember_freed(heads)
    _write_leaf_grads(summed)


def _check_recorded(heads):
    for h in heads:
        if h._tape is not None:
            return
    if any(_was_freed(h) for h in heads):
        raise ValueError("backward(): this array's recorded graph was already used by an "
                         "earlier backward() and then freed. To call backward() twice on "
                         "the same graph, pass retain_graph=True to the first call; or "
                         "record the computation again.")
    raise ValueError("backward(): nothing was recorded for this array. Compute the loss "
                     "inside `with autograd.record():` and call attach_grad() on the "
                     "arrays (or initialize the Parameters) you want gradients for.")


def _add(summed, array, grad, fresh):
    entry = summed.get(id(array))
    if entry is None:
        summed[id(array)] = [array, grad, fresh]
    else:                               # a second path to this array: sum (a new array)
        entry[1], entry[2] = entry[1] + grad, False


def _run_backward(node, summed, retain_graph):
    """One tape node: its outputs' gradients (taken out of `summed`) -> its inputs'."""
    out_grads = []
    for o in node.outputs:
        entry = summed.pop(id(o), None)
        out_grads.append(None if entry is None else entry[1])
    if all(g is None for g in out_grads):
        # Reached only through a branch without gradient (BlockGrad, argmax): the node
        # stays recorded, so a later backward() from another head can still go through it.
        return
    out_grads = [g if g is not None else o.zeros_like()
                 for g, o in zip(out_grads, node.outputs)]
    fresh = node.fresh_grads
    for x, g in zip(node.inputs, node.backward_fn(out_grads)):
        if g is not None and (x._grad_req != "null" or x._tape is not None):
            _add(summed, x, g, fresh and x._tape is None)
    if not retain_graph:
        for o in node.outputs:
            o._tape = None


def _remember_freed(heads):
    for h in heads:
        if len(_freed) >= _FREED_KEPT:
            _freed.clear()
        _freed[id(h)] = weakref.ref(h)


def _write_leaf_grads(summed):
    """What is left in `summed` are the leaves: write (or add) their gradients."""
    for var, g, fresh in summed.values():
        if var._grad is None or var._grad_req == "null":
            continue
        if fresh and var._grad_req == "write" and _engine.try_adopt(var._grad, g):
            var._grad_stamp += 1        # the threaded engine fills it when computed
            continue
        data = g._data
        if data.shape != var._data.shape:
            data = data.reshape(var._data.shape)
        var._grad_stamp += 1           # lets a Trainer tell fresh gradients from stale ones
        if var._grad_req == "add":
            var._grad._data += data
        elif var._grad_req == "write":
            if fresh and data.dtype == var._grad._data.dtype:
                # A new array from a compiled graph, this leaf's only gradient: the grad
                # NDArray takes it over instead of copying it (a training step of the
                # W4 MLP copied ~660 KB here). `.grad` stays the same NDArray object.
                var._grad._data = data
            else:
                var._grad._data[...] = data
