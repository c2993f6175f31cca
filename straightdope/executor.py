"""Executor: a Symbol bound to arrays (MXNet 1.x's `simple_bind` / `bind`).

Before Gluon, MXNet code ran a graph like this:

    exe = net.simple_bind(mx.cpu(), data=(32, 100))    # allocate every array
    exe.arg_dict['data'][:] = batch
    exe.forward(is_train=True)
    exe.backward()                                      # gradients into exe.grad_dict

An Executor owns one array per argument, per gradient, per auxiliary state and per
output, and `forward` fills the outputs in place. Underneath it runs the same
compiled graph a hybridized block runs (a `CachedOp`): the arguments that want
gradients are marked for autograd, so `backward` is the compiled gradient graph.
As in MXNet, that graph is the Symbol with its repeated subexpressions computed once
(graph/cse.py; `get_optimized_symbol` returns it; MXNET_ELIMINATE_COMMON_EXPR=0: as given).
(`mx.executor`, as in MXNet; `import straightdope` attaches `Symbol.bind` from here.)
"""
from __future__ import annotations

import numpy as np

from . import ndarray as _nd
from .base import MXNetError
from .graph.cse import optimized_symbol
from .symbol.symbol import Symbol, topological

GRAD_REQS = ("write", "add", "null")


def _grad_reqs(names, grad_req):
    """One grad_req per argument, from a string, a list or a dict (missing names: null)."""
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError(f"grad_req has {len(grad_req)} entries for {len(names)} "
                             f"arguments {names}")
        reqs = dict(zip(names, grad_req))
    elif isinstance(grad_req, dict):
        reqs = {name: grad_req.get(name, "null") for name in names}
    else:
        raise TypeError(f"grad_req must be a string, a list or a dict, got {grad_req!r}")
    for name, req in reqs.items():
        if req not in GRAD_REQS:
            raise ValueError(f"grad_req of '{name}' must be one of {GRAD_REQS}, got {req!r}")
    return reqs


def _by_name(names, arrays, what, ignore_unknown=False):
    """Arrays given as a list (in `names` order) or a dict, as a dict by name. A dict's
    names the symbol does not have are an error, or dropped with `ignore_unknown`."""
    if arrays is None:
        return {}
    if isinstance(arrays, dict):
        unknown = sorted(set(arrays) - set(names))
        if ignore_unknown:
            return {n: a for n, a in arrays.items() if n in names}
        if unknown:
            raise ValueError(f"bind: {what} {unknown} are not in the symbol's list {names}")
        return dict(arrays)
    arrays = list(arrays)
    if len(arrays) != len(names):
        raise ValueError(f"bind: {len(arrays)} {what} given for {len(names)} names {names}; "
                         f"give one per name, in that order, or a dict")
    return dict(zip(names, arrays))


def _check_differentiable(symbol, wrt):
    """Refuse at bind time, as MXNet does, a gradient that backward() could not compute:
    an op without a gradient rule between the outputs and an argument that wants one
    (unless a BlockGrad/stop_gradient cuts the way first)."""
    reaches = set()             # the nodes a wanted argument feeds (inputs come first)
    for node in topological(symbol.entries):
        if node.name in wrt if node.is_var else any(c in reaches for c, _ in node.inputs):
            reaches.add(node)

    seen, todo = set(), [node for node, _ in symbol.entries]
    while todo:
        node = todo.pop()
        if node in seen or node.is_var or node.op.name == "BlockGrad" or node not in reaches:
            continue
        seen.add(node)
        if node.op.gradient is None:
            raise MXNetError(f"{node.op.name} has no gradient: it cannot sit between a loss "
                             f"and an argument bound with grad_req='write' ('{node.name}' "
                             f"reads one). Bind those arguments with grad_req='null', or "
                             f"wrap the op's input in BlockGrad/stop_gradient")
        todo.extend(child for child, _ in node.inputs)


_SHARED = {}            # the output entries of a bound graph -> (attributes seen, CachedOp)
_SHARED_LIMIT = 64


def _shared_cached_op(symbol):
    """One compiled graph per Symbol, shared by all its executors: binding the same Symbol
    again (MXNet's tests bind one Symbol hundreds of times, to new arrays or other
    grad_reqs) reuses the plans made so far, as a hybridized block reuses its CachedOp.
    A graph whose nodes' attributes changed since (`_set_attr`) is compiled anew."""
    from .cached_op import CachedOp
    key = (type(symbol), tuple(symbol.entries))
    seen = [(node, dict(node.var_attrs)) for node in symbol.walk()]
    found = _SHARED.get(key)
    if found is not None and found[0] == seen:
        return found[1]
    cached = CachedOp(symbol, data_names=[])
    if len(_SHARED) >= _SHARED_LIMIT:
        _SHARED.pop(next(iter(_SHARED)))        # the oldest goes first
    _SHARED[key] = (seen, cached)
    return cached


class Executor:
    """A Symbol with its arrays. Build one with `symbol.simple_bind(...)` or
    `symbol.bind(...)`; the attributes are MXNet's (`arg_dict`, `grad_dict`, `outputs`...)."""

    def __init__(self, symbol, ctx, args, grads, reqs, aux):
        from .ndarray import zeros
        self._symbol = symbol
        self._ctx = ctx
        self.arg_dict = {name: args[name] for name in symbol.list_arguments()}
        self.grad_dict = {name: grads.get(name) for name in self.arg_dict}
        self.aux_dict = {name: aux[name] for name in symbol.list_auxiliary_states()}
        self._reqs = reqs
        _check_differentiable(symbol, {name for name in self.arg_dict if reqs[name] != "null"})
        self._optimized = optimized_symbol(symbol)     # what runs: see graph/cse.py
        self._cached = _shared_cached_op(self._optimized)
        values = {**self.arg_dict, **self.aux_dict}
        _, out_shapes, _ = symbol.infer_shape(**{n: a.shape for n, a in values.items()})
        if out_shapes is None:
            raise MXNetError(f"bind: the arguments' shapes do not decide every output's shape "
                             f"({symbol.infer_shape_partial(**{n: a.shape for n, a in values.items()})[1]}"
                             f", 0: unknown); a creation op's -1 needs an op that decides it")
        _, out_types, _ = symbol.infer_type_partial(**{n: a.dtype for n, a in values.items()})
        self.outputs = [zeros(shape, dtype=dtype or np.float32)
                        for shape, dtype in zip(out_shapes, out_types)]
        self._heads = None          # the recorded outputs of the last forward
        self._monitor = None        # (callback, monitor_all): set_monitor_callback
        self._forwarded = False

    # --------------------------------------------------------------- views
    @property
    def arg_arrays(self):
        return list(self.arg_dict.values())

    @property
    def grad_arrays(self):
        return list(self.grad_dict.values())

    @property
    def aux_arrays(self):
        return list(self.aux_dict.values())

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def get_optimized_symbol(self):
        """The graph this executor runs: the Symbol with its common subexpressions
        merged (graph/cse.py), or as given under MXNET_ELIMINATE_COMMON_EXPR=0."""
        return self._optimized

    # ------------------------------------------------------------- running
    def forward(self, is_train=False, **kwargs):
        """Run the graph; `kwargs` are copied into the argument arrays first. The results
        are written into `outputs` (the same arrays every call), which it returns."""
        from . import autograd
        from .ndarray import NDArray
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise ValueError(f"forward: '{name}' is not an argument of the symbol; its "
                                 f"arguments are {list(self.arg_dict)}")
            self.arg_dict[name][:] = value
        # Stand-ins sharing the arguments' memory carry the autograd marks, so the user's
        # own arrays keep whatever marks they have.
        inputs, wants_grad = [], False
        for name in self._cached.input_names:
            source = self.arg_dict[name] if name in self.arg_dict else self.aux_dict[name]
            stand_in = NDArray(source._data, source._ctx)
            grad, req = self.grad_dict.get(name), self._reqs.get(name, "null")
            if grad is not None and req != "null":
                autograd.mark_variables([stand_in], [grad], req)
                wants_grad = True
            inputs.append(stand_in)
        scope = autograd.record(train_mode=is_train) if wants_grad else \
            autograd.pause(train_mode=is_train)
        with scope:
            results = self._cached.call(inputs)
        self._heads = results if wants_grad else None
        self._forwarded = True
        for out, result in zip(self.outputs, results):
            out._data[...] = result._data
        if self._monitor is not None:
            self._watch(is_train, *self._monitor)
        return self.outputs

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call `callback(name, array)` for every op output each forward (`conv_output`),
        and with `monitor_all` first for its inputs: a variable's own name, then
        `conv_weight` (op and input name), in MXNet's order and names."""
        self._monitor = (callback, monitor_all)

    def _watch(self, is_train, callback, monitor_all):
        # The compiled graph fuses ops, so their values do not exist there: the reference
        # interpreter runs the graph again on the same arguments, op by op.
        from .ndarray import NDArray
        feeds = {**self.arg_dict, **self.aux_dict}
        values = {}
        for node in topological(self._symbol.entries):
            if node.is_var:
                values[(node, 0)] = feeds[node.name]._data
                continue
            inputs = [values[entry] for entry in node.inputs]
            if monitor_all:
                names = node.op.monitor_input_names(node.attrs, len(inputs))
                for (source, _), name, array in zip(node.inputs, names, inputs):
                    if source.is_var:
                        callback(source.name, NDArray(array))
                    callback(f"{node.name}_{name}", NDArray(array))
            results = node.op.run(node.attrs, inputs, is_train)
            names = node.op.output_names if len(node.op.output_names) == len(results) \
                else [f"output{k}" for k in range(len(results))]
            for k, (name, result) in enumerate(zip(names, results)):
                values[(node, k)] = result
                callback(f"{node.name}_{name}", NDArray(result))

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the last forward's outputs into `grad_dict` ('write' overwrites,
        'add' accumulates). `out_grads`: the outputs' gradients (ones by default)."""
        from . import autograd
        from .ndarray import NDArray
        if not self._forwarded:
            # MXNet differentiates whatever its buffers hold (its tests call backward
            # straight after bind, for ops whose gradient does not read the forward's
            # values); here the forward runs first, so every gradient is the true one
            self.forward(is_train=is_train)
        if self._heads is None:
            return      # every grad_req is 'null': nothing to compute, as in MXNet
        if out_grads is None:
            out_grads = [None] * len(self._heads)
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads.get(name) for name in self._symbol.list_outputs()]
        if len(out_grads) < len(self._heads):
            raise ValueError(f"backward(): {len(out_grads)} out_grads for "
                             f"{len(self._heads)} outputs; give one per output")
        # as MXNet, gradients after the last output's are not read
        out_grads = list(out_grads)[:len(self._heads)]
        # MXNet copies each into a buffer of its output's dtype (CopyFromTo converts):
        # a float gradient of an int32 output arrives truncated to int32
        out_grads = [g if g is None or g.dtype == h.dtype else g.astype(h.dtype)
                     for g, h in zip(out_grads, self._heads)]
        autograd.backward(self._heads, out_grads, retain_graph=True, train_mode=is_train)

    # ------------------------------------------------------------- reshaping
    def reshape(self, partial_shaping=False, allow_up_sizing=False, **shapes):
        """A new executor for other input shapes. Arrays whose shape stays are shared;
        the others share this executor's memory when they fit in it (MXNet's rule), and
        are new when they are larger, which `allow_up_sizing=True` must allow."""
        arg_shapes, out_shapes, aux_shapes = self._symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError(f"reshape: cannot infer every shape from {shapes}")

        def resized(old, shape, name):
            if old is None:
                return None
            if old.shape == tuple(shape):
                return old
            if name not in shapes and not partial_shaping:
                raise MXNetError(f"reshape: the shape of '{name}' changes from {old.shape} to "
                                 f"{tuple(shape)}; pass partial_shaping=True to allow it")
            return _view_or_new(old, shape, allow_up_sizing, name)

        names = self._symbol.list_arguments()
        args = {n: resized(self.arg_dict[n], s, n) for n, s in zip(names, arg_shapes)}
        grads = {n: resized(self.grad_dict[n], s, n) for n, s in zip(names, arg_shapes)}
        aux = {n: resized(self.aux_dict[n], s, n)
               for n, s in zip(self._symbol.list_auxiliary_states(), aux_shapes)}
        new = Executor(self._symbol, self._ctx, args, grads, self._reqs, aux)
        new.outputs = [_view_or_new(old, shape, True, "output")
                       for old, shape in zip(self.outputs, out_shapes)]
        return new

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values into the argument (and auxiliary) arrays by name."""
        for params, own in ((arg_params, self.arg_dict), (aux_params or {}, self.aux_dict)):
            for name, value in params.items():
                if name in own:
                    own[name][:] = value
                elif not allow_extra_params:
                    raise ValueError(f"copy_params_from: '{name}' is not in this executor "
                                     f"(pass allow_extra_params=True to skip it)")

    def debug_str(self):
        """The arguments, and in MXNet's words ("Total N MB allocated") the memory the
        executor computes into: its outputs plus the forward values its backward pass
        keeps. Nothing is kept when no argument wants a gradient or none can reach one
        (a stop_gradient in between), as in MXNet, whose memory plan drops them too."""
        computed = sum(a._data.nbytes for a in self.outputs) + self._kept_for_backward()
        lines = [f"Symbol outputs: {self._symbol.list_outputs()}"]
        lines += [f"  arg {n}: {a.shape}" for n, a in self.arg_dict.items()]
        lines.append(f"Total {computed // (1 << 20)} MB allocated")
        return "\n".join(lines)

    def _kept_for_backward(self):
        """Bytes of the intermediate values the gradient graph reads."""
        from .symbol.symbol import _analysis
        wrt = [n for n, req in self._reqs.items()
               if req != "null" and self.grad_dict.get(n) is not None]
        if not wrt:
            return 0
        split = _analysis("differentiate")(self._symbol, wrt)
        forward = split.forward
        arrays = {**self.arg_dict, **self.aux_dict}
        names = forward.list_arguments() + forward.list_auxiliary_states()
        _, shapes, _ = forward.infer_shape(**{n: arrays[n].shape for n in names})
        _, types, _ = forward.infer_type_partial(**{n: arrays[n].dtype for n in names})
        kept = zip(shapes[split.num_outputs:], types[split.num_outputs:])
        return sum(int(np.prod(s)) * np.dtype(t or np.float32).itemsize for s, t in kept)

    def __repr__(self):
        return f"<Executor {self._symbol.list_outputs()}>"


def _view_or_new(old, shape, allow_up_sizing, name):
    from .ndarray import NDArray, zeros
    size = int(np.prod(shape))
    if size <= old.size and old._data.flags.c_contiguous:
        return NDArray(old._data.reshape(-1)[:size].reshape(shape), old._ctx)
    if not allow_up_sizing:
        raise MXNetError(f"reshape: '{name}' grows from {old.shape} to {tuple(shape)}; "
                         f"pass allow_up_sizing=True to allocate a larger array")
    return zeros(shape, dtype=old.dtype)


def simple_bind(symbol, ctx=None, grad_req="write", type_dict=None, stype_dict=None,
                group2ctx=None, shared_arg_names=None, shared_exec=None, shared_buffer=None,
                **shapes):
    """Allocate every array from the input shapes given as keywords (`data=(32, 100)`),
    zero-filled, and return the Executor. Keywords that are not shapes are ignored, as
    MXNet's simple_bind reads only the tuples (its tests pass `axis=1` along)."""
    from .ndarray import zeros
    shapes = {k: tuple(v) for k, v in shapes.items() if isinstance(v, (tuple, list))}
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        arg_shapes, _, aux_shapes = symbol._infer_shape_partial(**shapes)
        names = symbol.list_arguments() + symbol.list_auxiliary_states()
        unknown = [n for n, s in zip(names, arg_shapes + aux_shapes) if s is None]
        raise MXNetError(f"simple_bind: cannot infer every shape from {shapes} (unknown: "
                         f"{unknown or 'some dimensions'}): give the input shapes as "
                         f"keywords, e.g. data=(32, 100)")
    type_dict = dict(type_dict or {})
    declared = {n.name: n.var_attrs.get("__dtype__") for n in symbol.walk() if n.is_var}

    def dtype(name):
        return np.dtype(type_dict.get(name) or declared.get(name) or "float32")
    names = symbol.list_arguments()
    reqs = _grad_reqs(names, grad_req)
    args = {n: zeros(s, dtype=dtype(n)) for n, s in zip(names, arg_shapes)}
    grads = {n: zeros(s, dtype=dtype(n)) if reqs[n] != "null" else None
             for n, s in zip(names, arg_shapes)}
    aux = {n: zeros(s, dtype=dtype(n))
           for n, s in zip(symbol.list_auxiliary_states(), aux_shapes)}
    return Executor(symbol, ctx, args, grads, reqs, aux)


def bind(symbol, ctx=None, args=None, args_grad=None, grad_req="write", aux_states=None,
         group2ctx=None, shared_exec=None):
    """An Executor over arrays you allocated: `args` (and `args_grad`, `aux_states`) as a
    list in `list_arguments()` order or a dict by name. The arrays are used, not copied."""
    names = symbol.list_arguments()
    # as MXNet, a dict may hold names the graph does not have (one dict of arrays, or of
    # gradient buffers, can serve several graphs): they are ignored
    arg_arrays = _by_name(names, args, "args", ignore_unknown=True)
    missing = [n for n in names if n not in arg_arrays]
    if missing:
        raise ValueError(f"bind: no array given for {missing}")
    grads = _by_name(names, args_grad, "args_grad", ignore_unknown=True)
    reqs = _grad_reqs(names, grad_req)
    reqs = {n: (r if grads.get(n) is not None else "null") for n, r in reqs.items()}
    aux_names = symbol.list_auxiliary_states()
    aux = _by_name(aux_names, aux_states, "aux_states", ignore_unknown=True)
    missing = [n for n in aux_names if n not in aux]
    if missing:
        raise ValueError(f"bind: no aux_states array given for {missing}")
    return Executor(symbol, ctx, arg_arrays, grads, reqs, aux)


# MXNet's Symbol methods, attached from here: this module is above the Symbol (it runs
# a CachedOp), which therefore never imports it
Symbol.simple_bind = simple_bind
Symbol.bind = bind


class CachedOp:
    """MXNet's `nd.CachedOp(sym, flags=())`: a Symbol compiled once per input signature,
    then called on NDArrays given in `sym.list_inputs()` order; under autograd.record()
    it is one node on the tape. (A hybridized block runs the same thing.)

        op = nd.CachedOp(sym.FullyConnected(num_hidden=4) * 2)
        y = op(x, weight, bias)

    flags: MXNet's (name, value) pairs; `static_alloc` and `static_shape` are used, its
    other tuning flags are accepted and have nothing to tune here. As MXNet's, it computes
    repeated subexpressions once (graph/cse.py; MXNET_ELIMINATE_COMMON_EXPR=0: not)."""
    _TUNING_FLAGS = {"inline_limit", "forward_bulk_size", "backward_bulk_size",
                     "data_indices", "param_indices", "is_dynamic"}

    def __init__(self, sym, flags=(), thread_safe=False):
        from .cached_op import CachedOp as _Compiled
        flags = dict(flags)
        unknown = set(flags) - {"static_alloc", "static_shape"} - self._TUNING_FLAGS
        if unknown:
            raise ValueError(f"CachedOp: unknown flag(s) {sorted(unknown)}; known: "
                             f"static_alloc, static_shape")

        def on(name):
            return str(flags.get(name, False)).lower() in ("true", "1")
        self.input_names = sym.list_inputs()
        self._compiled = _Compiled(optimized_symbol(sym), data_names=self.input_names,
                                   static_alloc=on("static_alloc"),
                                   static_shape=on("static_shape"))

    def __call__(self, *args, out=None, default_ctx=None):
        if len(args) != len(self.input_names):
            raise ValueError(f"CachedOp takes {len(self.input_names)} arrays, for "
                             f"{self.input_names} in that order; got {len(args)}")
        outputs = self._compiled(list(args), {})
        if out is not None:
            targets = [out] if isinstance(out, _nd.NDArray) else list(out)
            for target, value in zip(targets, outputs):
                target._data[...] = value._data
            return out
        return outputs[0] if len(outputs) == 1 else outputs


# MXNet's mx.nd.CachedOp, attached from here for the same reason
_nd.CachedOp = CachedOp
