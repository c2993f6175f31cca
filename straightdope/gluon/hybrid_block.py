"""HybridBlock: a Block that can also be traced into a graph and compiled.

After `hybridize()`, the block's forward runs once on Symbols (a trace: `F` is
`straightdope.symbol`, parameters are graph variables), the graph goes to a `CachedOp`,
and from then on a call runs the compiled graph without entering the block's Python.
Where a call goes is decided in one place, `HybridBlock._call` (MXNet 1.x's
`HybridBlock.forward`); only the compiled steady state, a call like the last one, goes
to the compiled graph from `HybridBlock.__call__` at once (its SHORTCUT).
"""
from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager

import numpy

from .. import autograd, config, ndarray, symbol
from ..base import NotImplementedForSymbol
from ..cached_op import CachedOp, prepare_backend
from ..ndarray import NDArray
from ..numpy.multiarray import ndarray as _NpArray      # mx.np.ndarray: takes the same paths
from ..ops import OpError
from .block import Block, _save_in_format
from .nested import (_check_one_array_kind, _contains_symbol, _describe_format, _flatten,
                     _input_kinds, _is_format, _mixed_kinds, _regroup,
                     _same_but_trailing_none)
from .parameter import DeferredInitializationError, tracing
from .utils import watch_ops

__all__ = ["HybridBlock"]

# MXNet's hybridize() flags that change nothing here (there is no engine to tune).
_IGNORED_FLAGS = ("forward_bulk_size", "backward_bulk_size", "partition_if_dynamic")


class _Imperative(threading.local):
    on = False          # a class default: reading a missing thread-local attribute is slow


_imperative = _Imperative()


@contextmanager
def _imperative_only():
    """Run hybridized blocks through their Python forward (used once to learn shapes)."""
    old = _imperative.on
    _imperative.on = True
    try:
        yield
    finally:
        _imperative.on = old


class _Cache:
    """What a hybridized block keeps to run its compiled graph; made in one place,
    HybridBlock._build_cache.

    `args` is MXNet's `_cached_op_args`: per input of the graph, in the order `op.call`
    takes them, `(True, name, k)` for the k-th array of the (flattened) call or
    `(False, name, parameter)`, whose array is read at each call. `fast`: None, or the
    number of arrays of the last call when it passed every check with plain arrays as
    traced (no nesting, no None) and no op hook watches: the next call of as many plain
    arrays takes the shortcut in HybridBlock.__call__."""
    __slots__ = ("op", "args", "sources", "fast")

    def __init__(self, op, args):
        self.op, self.args, self.fast = op, args, None
        self.sources = [source for _, _, source in args]

    def arrays(self, flat):
        """The graph's inputs in its order; None for a parameter without values yet."""
        return [flat[s] if type(s) is int else s._data for s in self.sources]

    def params(self):
        return [s for s in self.sources if type(s) is not int]


def _blame(err, block):
    """Prepend the block (and its parents, as the error travels up) to a trace error,
    keeping the type and the original explanation."""
    if not hasattr(err, "_sd_original"):
        err._sd_original = str(err)
        err._sd_path = []
    err._sd_path.insert(0, f"{type(block).__name__} '{block.name}'")
    err.args = (f"in {' > '.join(err._sd_path)} (while tracing it with F=symbol): "
                f"{err._sd_original}",)
class HybridBlock(Block):
    """A Block that can also be traced into a graph and compiled (`hybridize()`).

    Write either (MXNet 1.x) `hybrid_forward(self, F, x, weight, ...)` — F is
    `straightdope.ndarray` when run imperatively and `straightdope.symbol` when
    traced; parameters arrive as keyword arguments — or (MXNet 2.0)
    `forward(self, x)` with `np`/`npx` ops and `self.weight.data()`.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._flags = {}
        self._cached_graph = None       # (input variables, output symbol)
        self._cache = None              # _Cache: the CachedOp and its inputs, once called
        self._in_format = self._out_format = None
        self._np_outputs = False            # traced on mx.np.ndarrays (see _trace)
        self.trace_count = 0            # times forward ran on Symbols to build the cache
        self._op_hook = None            # (callback, monitor_all) from register_op_hook

    def register_child(self, block, name=None):
        name = str(len(self._children)) if name is None else name
        if not isinstance(block, HybridBlock):
            raise ValueError(
                f"{self._describe()} is a HybridBlock, so its children must be HybridBlocks "
                f"too (they are traced into its graph), but '{name}' is a "
                f"{type(block).__name__}, a plain Block. Make {type(block).__name__} a "
                f"HybridBlock (write its forward with F/np ops), or make the parent a plain "
                f"Block (e.g. nn.Sequential instead of nn.HybridSequential).")
        super().register_child(block, name)

    def _clear_cached_op(self):
        self._cached_graph = self._cache = None
        super()._clear_cached_op()

    @property
    def _cached_op(self):
        """The CachedOp that runs the traced graph (None before the first hybridized call)."""
        return None if self._cache is None else self._cache.op

    def hybridize(self, active=True, static_alloc=False, static_shape=False, executor=None,
                  compile=None, inline_limit=2, **kwargs):
        """Ask for tracing and compiling at the next call (this only sets flags).

        executor: 'numba' or 'numpy' (default: $STRAIGHTDOPE_EXECUTOR, else numba).
        static_alloc=True: keep the planned working memory between calls.
        static_shape=True (needs static_alloc=True, as in MXNet): look plans up by the data
        inputs' shapes alone; another input shape is still allowed, it makes a new plan.
        compile: 'tiered' (run on the NumPy reference tier at once while a background
        process compiles, then switch; straight to the compiled code when it is cached)
        or 'sync' (compile in the first call, then run); default
        $STRAIGHTDOPE_COMPILE, else 'tiered'.
        inline_limit: a graph of at most this many ops shows as its ops in
        autograd.get_symbol(), a larger one as one _CachedOp node (as MXNet).
        """
        unknown = set(kwargs) - set(_IGNORED_FLAGS)
        if unknown:
            raise TypeError(f"hybridize() got unknown argument(s) {sorted(unknown)}; it takes "
                            f"active, static_alloc, static_shape, executor, compile, "
                            f"inline_limit")
        if static_shape and not static_alloc:
            raise ValueError(f"{self._describe()}: hybridize(static_shape=True) needs "
                             f"static_alloc=True too, as in MXNet: call "
                             f"hybridize(static_alloc=True, static_shape=True)")
        # a wrong name fails here, not at the first call
        if isinstance(executor, str):
            config.executor(executor)
        if compile is not None:
            config.compile_mode(compile)
        self._active = active
        self._flags = dict(static_alloc=static_alloc, static_shape=static_shape,
                           executor=executor, compile=compile, inline_limit=inline_limit)
        self._clear_cached_op()
        if active:
            prepare_backend(executor, compile)     # the VM loads here, not in the first call
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self.name}" is being hybridized while it still has forward '
                          f'hooks/pre-hooks. If "{self.name}" is a child of a hybridized '
                          f'HybridBlock, its hooks will not run (the parent runs one graph).',
                          stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          executor=executor, compile=compile, inline_limit=inline_limit,
                          **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    # ------------------------------------------------------------ calling
    # A layer may run a call of plain arrays without binding its parameters by name
    # (Dense does: at batch 1 that Python costs as much as the product, benchmarks W1). It
    # computes what forward computes, or returns None to let forward run.
    _array_shortcut = None

    def __call__(self, *args):
        """Block.__call__ (hooks around `_call`, which routes every kind of call), with one
        SHORTCUT first, the compiled steady state (W1, W4: the call that happens millions
        of times): the call's arrays and the parameters' arrays go straight to the cached
        op when the last call of as many plain arrays passed every check
        `_call_cached_op` makes (`cache.fast`; a cache exists only while hybridized), no
        hook watches and no `_imperative_only` is on."""
        cache = self._cache
        if cache is not None and cache.fast == len(args) and not _imperative.on \
                and not self._forward_pre_hooks and not self._forward_hooks:
            for a in args:                      # (_only_ndarrays, inlined)
                if type(a) is not NDArray and type(a) is not _NpArray:
                    break
            else:                               # (cache.arrays, inlined)
                try:
                    outs = cache.op.call([args[s] if type(s) is int else s._data
                                          for s in cache.sources])
                except ValueError as err:
                    raise self._running_error(err)
                return outs[0] if self._out_format == 0 else \
                    _regroup(outs, self._out_format)[0]
        # else Block.__call__, written out: an imperative call pays no extra call for
        # the shortcut's check (every block of a network that is not hybridized)
        if self._forward_pre_hooks or self._forward_hooks:
            return self._call_with_hooks(args)
        return self._call(*args)

    def _call(self, *args):
        """Where a call goes (MXNet 1.x's HybridBlock.forward): Symbols are traced into the
        graph being built; arrays run the cached graph once hybridized, else forward.
        `__call__` runs the hooks around it."""
        plain = True                            # the usual call: arrays, no nesting
        for a in args:                          # (_only_ndarrays, inlined: every call)
            if type(a) is not NDArray and type(a) is not _NpArray:
                plain = False
                break
        if plain:
            if self._array_shortcut is not None and (not self._active or _imperative.on):
                out = self._array_shortcut(*args)      # SHORTCUT, imperative (Dense's)
                if out is not None:
                    return out
        else:
            if any(isinstance(a, numpy.ndarray) for a in args):
                _flatten(args, "input")        # the usual slip: a NumPy array; explain it
            has_symbol, has_array = _input_kinds(args)
            if has_symbol and has_array:
                raise ValueError(f"{self._describe()} got both NDArrays and Symbols as "
                                 f"inputs; pass only NDArrays (to compute) or only Symbols "
                                 f"(to build a graph)")
            if not (has_symbol or has_array):
                raise ValueError(f"{self._describe()} needs at least one NDArray or Symbol "
                                 f"among its inputs, got {args!r:.120}")
            if has_symbol:
                return self._call_symbolic(*args)
        if not self._active or _imperative.on:                  # imperative
            try:
                out = self.forward(*args)
            except DeferredInitializationError as err:         # first call: shapes unknown
                out = self._finish_deferred_init_and_forward(err, *args)
            if isinstance(out, (list, tuple)):  # one kind of arrays (MXNet refuses a mix)
                _check_one_array_kind(self, out)
            return out
        return self._call_cached_op(*args)

    def _call_symbolic(self, *args):
        """Run forward on Symbols: F=symbol, parameters are variables, nodes named dense0_*."""
        with tracing(), self.name_scope():
            try:
                return self.forward(*args)
            except (NotImplementedForSymbol, OpError) as err:
                _blame(err, self)
                raise

    def forward(self, x, *args):
        """MXNet 1.x style: call hybrid_forward with the right F and the parameters."""
        if (args or type(x) is not NDArray) and _contains_symbol((x,) + args):
            F, params = symbol, {k: p.var() for k, p in self._reg_params.items()}
        elif not self._reg_params:              # Activation, a loss: no parameters
            return self.hybrid_forward(ndarray, x, *args)
        else:
            # p._data when there is one: p.data() says the same, only slower
            F, params = ndarray, {k: p._data if p._data is not None else p.data()
                                  for k, p in self._reg_params.items()}
        return self.hybrid_forward(F, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} must define forward(self, x) (MXNet 2.0 style, np/npx ops "
            f"and self.weight.data()) or hybrid_forward(self, F, x, ..., **params) (MXNet 1.x "
            f"style, F.* ops)")

    # -------------------------------------------------------- the cache
    def _trace(self, *args):
        """Run forward once on variables named data (data0, data1, ...)."""
        flat, in_format = _flatten(args, "input")
        names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
        inputs = [symbol.var(n) for n in names]
        # mx.np.ndarrays in: the block sees np Symbols (their comparisons are bool)
        seen = [v.as_np_ndarray() if isinstance(a, _NpArray) else v
                for v, a in zip(inputs, flat)]
        out = self._call_symbolic(*_regroup(seen, in_format)[0])
        outs, out_format = _flatten(out, "output")
        kinds = [type(o) is symbol.NpSymbol for o in outs]
        if any(kinds) and not all(kinds):
            raise _mixed_kinds(self)
        self._np_outputs = bool(kinds) and all(kinds)    # then they run as np.ndarrays
        out = outs[0] if len(outs) == 1 else symbol.Group(outs)
        return inputs, out, in_format, out_format

    def _build_cache(self, *args):
        """Trace (once), wrap the graph in a CachedOp and record where each of its inputs
        comes from (MXNet's _cached_op_args): the one place the _Cache is made."""
        if self._cached_graph is None:
            inputs, out, self._in_format, self._out_format = self._trace(*args)
            self._cached_graph = (inputs, out)
            self.trace_count += 1
        inputs, out = self._cached_graph
        data = {v.name: k for k, v in enumerate(inputs)}
        by_name = {p.name: p for p in self.collect_params().values()}
        args = []
        for name in out.list_inputs():
            if name not in data and name not in by_name:
                raise ValueError(f"{self._describe()}: the traced graph reads a variable "
                                 f"'{name}' that is neither an input nor a Parameter of this "
                                 f"block. Create parameters as attributes (self.w = "
                                 f"Parameter(...)) instead of sym.var() inside forward.")
        op = CachedOp(out, list(data), backend=self._flags.get("executor"),
                      static_alloc=self._flags.get("static_alloc", False),
                      static_shape=self._flags.get("static_shape", False),
                      compile=self._flags.get("compile"),
                      inline_limit=self._flags.get("inline_limit", 2),
                      # traced on np Symbols: the graph's outputs are mx.np.ndarrays
                      output_type=_NpArray if self._np_outputs else NDArray)
        for name in op.input_names:
            args.append((True, name, data[name]) if name in data else
                        (False, name, by_name[name]))
        self._cache = _Cache(op, args)
        return self._cache

    def _call_cached_op(self, *args):
        """Run the cached graph (tracing and building it at the first call), with every
        check: the call's structure against the traced one, one context, parameters
        initialised (deferred shapes learnt here)."""
        cache = self._cache if self._cache is not None else self._build_cache(*args)
        flat, in_format = _flatten(args, "input")
        if in_format != self._in_format and \
                not _same_but_trailing_none(in_format, self._in_format):
            raise ValueError(
                f"{self._describe()} was traced for calls with "
                f"{_describe_format(self._in_format)}, but is now called with "
                f"{_describe_format(in_format)}. A hybridized block keeps one call structure: "
                f"call it the same way every time, or call hybridize() again to re-trace.")
        contexts = {a.context for a in flat}
        if len(contexts) > 1:
            raise ValueError(f"{self._describe()} is hybridized and got inputs on several "
                             f"contexts {sorted(map(str, contexts))}; its graph runs on one: "
                             f"move them with x.as_in_context(ctx)")
        arrays = cache.arrays(flat)
        if any(a is None for a in arrays):
            arrays = self._arrays_after_init(cache, flat, args)
        try:
            outs = cache.op.call(arrays)
        except ValueError as err:
            raise self._running_error(err)
        if self._op_hook is not None:
            watch_ops(self._cached_graph[1], cache.args, arrays, *self._op_hook)
        elif isinstance(self._in_format, list) and not any(self._in_format):
            cache.fast = len(self._in_format)   # the next such call: __call__'s shortcut
        return outs[0] if self._out_format == 0 else _regroup(outs, self._out_format)[0]

    def register_op_hook(self, callback, monitor_all=False):
        super().register_op_hook(callback, monitor_all)
        self._op_hook = (callback, monitor_all)
        if self._cache is not None:
            self._cache.fast = None         # every call goes where the hook sees it

    def _running_error(self, err):
        """An error from running the cached graph (OpError: shapes), told with the block's name."""
        err.args = (f"{self._describe()} (running its cached graph): {err}",)
        return err

    def _arrays_after_init(self, cache, flat, args):
        """The graph's inputs when some parameter has no values yet: a clear error for an
        uninitialised one; deferred shapes are learnt from this first call."""
        params = cache.params()
        try:
            return [flat[s] if type(s) is int else s.data() for s in cache.sources]
        except DeferredInitializationError:
            pass
        # First call with deferred parameters: learn their shapes from the traced graph.
        self._deferred_infer_shape_quietly(*args)
        if any(p._data is None and p._deferred_init for p in params):
            # Some layer can only learn its shapes from real values (an infer_shape that
            # reads x.shape): run the Python forward once, without the cache, not training.
            with _imperative_only(), autograd.pause(train_mode=False):
                self._forward_with_deferred_init(*args)
        return [flat[s] if type(s) is int else s.data() for s in cache.sources]

    def _deferred_infer_shape_quietly(self, *args):
        try:
            self.infer_shape(*args)
        except OpError as err:
            shapes = [a.shape for a in _flatten(args, "input")[0]]
            raise OpError(f"{self._describe()}: cannot infer the shapes of its parameters from "
                          f"inputs of shape {shapes}: {err}") from None
        for param in self.collect_params().values():
            param._finish_deferred_init()

    def infer_shape(self, *args):
        """Fill in unknown parameter shapes from the input shapes.

        The default traces forward on Symbols and lets shape inference work out the
        parameters (MXNet's `_deferred_infer_shape`). Layers may override it with a
        direct rule (Dense: weight.shape = (units, x.shape[1])).
        """
        if self._cached_graph is not None:
            inputs, out = self._cached_graph
        else:
            try:
                inputs, out, _, _ = self._trace(*args)
            except NotImplementedForSymbol as err:
                err.args = (f"{err} (straightdope traced forward to learn the shapes of "
                            f"parameters created without them: give the layers their input "
                            f"sizes, e.g. in_units=..., or define infer_shape(self, *args).)",)
                raise
        flat, _ = _flatten(args, "input")
        used = set(out.list_inputs())
        known = {i.name: a.shape for i, a in zip(inputs, flat) if i.name in used}
        arg_shapes, _, aux_shapes = out._infer_shape_partial(**known)
        shapes = dict(zip(out.list_arguments(), arg_shapes))
        shapes.update(zip(out.list_auxiliary_states(), aux_shapes))
        for param in self.collect_params().values():
            shape = shapes.get(param.name)
            if shape is not None and param._data is None:
                param.shape = shape

    # ------------------------------------------------------ what is cached
    @property
    def compiled(self):
        """The stages of the last compiled executable (graph, fused groups, code...), or
        None before the first hybridized call."""
        op = self._cached_op
        if op is None or op.last_plan is None:
            return None
        return op.last_plan.forward.stages

    def _model_entry(self):
        entry = super()._model_entry()
        if self._cached_graph is not None:          # Block.save keeps the traced graph
            inputs, out = self._cached_graph
            entry["graph"] = {"inputs": [v.name for v in inputs], "symbol": out.tojson(),
                              "in_format": self._in_format, "out_format": self._out_format,
                              "np_outputs": self._np_outputs, "params": {
                                  key: p.name for key, p in
                                  self._collect_params_with_prefix().items()}}
        return entry

    def _load_model_entry(self, entry, path):
        graph = entry.get("graph")
        if graph is None:
            return
        try:
            names, text = list(map(str, graph["inputs"])), graph["symbol"]
            formats = graph["in_format"], graph["out_format"]
            saved = dict(graph["params"])       # structural key -> name in the graph
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: the graph saved for {self._describe()} is incomplete "
                             f"({err!r})") from None
        if not all(_is_format(f) for f in formats):
            raise ValueError(f"{path}: {self._describe()} has call formats {formats!r:.80}; "
                             f"a format is 0, -1, a count, or a list of formats")
        out = symbol.load_json(text)        # ops looked up in the registry, nothing run
        here = self._collect_params_with_prefix()
        if set(saved) != set(here):
            raise ValueError(f"{path}: the graph saved for {self._describe()} reads parameters "
                             f"{sorted(saved)}, it has {sorted(here)}")
        # this network's parameters may be named otherwise (dense2_weight for dense0_weight)
        out = out.substitute({name: here[key].var() for key, name in saved.items()
                              if name != here[key].name})
        self._clear_cached_op()
        self._cached_graph = ([symbol.var(n) for n in names], out)
        self._in_format, self._out_format = formats
        self._np_outputs, self._active = bool(graph.get("np_outputs")), True

    def export(self, path, epoch=0, remove_amp_cast=True, params_format="npz"):
        """Write the traced graph (`path-symbol.json`) and the parameters
        (`path-0000.params`, keys `arg:NAME`/`aux:NAME`). Returns both file names.
        params_format='mxnet' writes MXNet's own binary format, which MXNet 1.x loads."""
        if self._cached_graph is None:
            raise RuntimeError(
                f"{self._describe()}: export() writes the traced graph, and there is none yet. "
                f"Call hybridize() and run a forward pass (net(x)) first, then export().")
        _, out = self._cached_graph
        cache = self._cache if self._cache is not None else self._build_cache()
        sym_file = f"{path}-symbol.json"
        params_file = f"{path}-{epoch:04d}.params"
        aux = set(out.list_auxiliary_states())
        arrays = {}
        for is_arg, name, param in cache.args:
            if not is_arg:
                arrays[("aux:" if name in aux else "arg:") + name] = param._reduce()
        out.save(sym_file, remove_amp_cast=remove_amp_cast)
        _save_in_format(params_file, arrays, params_format)
        return sym_file, params_file
