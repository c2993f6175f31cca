"""Block, HybridBlock and SymbolBlock: the building blocks of every network.

* `Block` runs its Python `forward` every time (imperative, easy to debug).
  Layers and Parameters assigned as attributes are registered automatically,
  which is what `collect_params()`, `initialize()` and `save_parameters()` walk.
* `HybridBlock` can do the same, *or*, after `hybridize()`, run its forward
  once on Symbols (a trace: `F` is `straightdope.symbol`, parameters are graph
  variables), hand the resulting graph to a `CachedOp`, and from then on call
  the compiled graph without entering Python at all.
* `SymbolBlock` wraps a graph that already exists (e.g. one loaded from an
  exported `-symbol.json` file).

Names follow MXNet 1.x: every block has a prefix (`dense0_`), its parameters
are `dense0_weight`, and the graph nodes it traces are `dense0_fwd`.
"""
from __future__ import annotations

import re
import threading
import warnings
import weakref
from collections import OrderedDict
from contextlib import contextmanager

import numpy

from .. import autograd, initializer, name as _name, ndarray, symbol
from ..base import NotImplementedForSymbol
from .. import config
from ..cached_op import CachedOp, prepare_backend
from ..context import check_context
from ..ndarray import NDArray
from ..numpy.multiarray import ndarray as _NpArray      # mx.np.ndarray: takes the same paths
from ..ops import OpError
from ..serialization import read_headers, save_arrays
from ..symbol import Symbol
from .parameter import (DeferredInitializationError, Parameter, ParameterDict, _indent,
                        load_by_name, tracing)
from .utils import HookHandle

__all__ = ["Block", "HybridBlock", "SymbolBlock"]

# MXNet's hybridize() flags that change nothing here (there is no engine to tune).
_IGNORED_FLAGS = ("forward_bulk_size", "backward_bulk_size", "partition_if_dynamic")


# --------------------------------------------------------------- naming
class _BlockScope:
    """`with block.name_scope():` children created inside get `block.prefix` in front
    of their own prefix (`mlp0_dense0_`), counted per parent."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._stack = []            # (previous scope, name manager) per nested `with`

    @staticmethod
    def create(prefix, params, hint):
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                # Outside any name_scope: a global counter per kind, like MXNet 1.x.
                prefix = _name.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block._params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        manager = _name.Prefix(self._block.prefix)   # graph nodes: dense0_fwd
        self._stack.append((getattr(_BlockScope._current, "value", None), manager))
        _BlockScope._current.value = self
        manager.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        previous, manager = self._stack.pop()
        manager.__exit__(*exc)
        _BlockScope._current.value = previous


# ------------------------------------------------ nested inputs/outputs
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


def _as_np_outputs(outs):
    """A graph traced on np Symbols gives mx.np.ndarrays. The cached op's outputs are new
    arrays: their class changes, not their identity (which the autograd tape knows)."""
    for o in outs:
        o.__class__ = _NpArray


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


# Ops whose inputs MXNet 1.9 leaves unnamed (no FListInputNames): its monitor calls them
# input0, input1...
_UNNAMED_INPUT_OPS = frozenset({"Activation"})


def _monitor_input_names(node, count):
    names = () if node.op.name in _UNNAMED_INPUT_OPS else \
        node.op.input_names(node.attrs, count)
    return names if len(names) == count else [f"input{i}" for i in range(count)]


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


def _blame(err, block):
    """Prepend the block (and its parents, as the error travels up) to a trace error,
    keeping the type and the original explanation."""
    if not hasattr(err, "_sd_original"):
        err._sd_original = str(err)
        err._sd_path = []
    err._sd_path.insert(0, f"{type(block).__name__} '{block.name}'")
    err.args = (f"in {' > '.join(err._sd_path)} (while tracing it with F=symbol): "
                f"{err._sd_original}",)


class Block:
    """The base class of every layer and network.

    Subclasses create layers in `__init__` (assign them as attributes) and define
    `forward(self, x)`. Call the block like a function: `net(x)`.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: OrderedDict[str, Block] = OrderedDict()
        self._reg_params: OrderedDict[str, Parameter] = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()
        self._parents = weakref.WeakSet()     # to tell them when their cached graph is stale

    def _alias(self):
        return type(self).__name__.lower()

    # ------------------------------------------------------------- naming
    @property
    def prefix(self):
        """What this block puts in front of its parameter and node names, e.g. 'dense0_'."""
        return self._prefix

    @property
    def name(self):
        return self._name

    def name_scope(self):
        """`with self.name_scope():` children created inside are named under this block."""
        return self._scope

    @property
    def params(self):
        """This block's own parameters (not its children's: see collect_params())."""
        return self._params

    def __repr__(self):
        lines = [f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items()]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def _describe(self):
        return f"{type(self).__name__} '{self.name}'"

    # ------------------------------------------------------- registration
    def __setattr__(self, name, value):
        """Registers Blocks and Parameters assigned as attributes."""
        if isinstance(value, (Block, Parameter)) and "_children" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() at the start "
                               f"of __init__, before assigning self.{name}")
        existing = self.__dict__.get(name)
        if isinstance(existing, (Block, Parameter)) and not isinstance(value, type(existing)):
            # As in MXNet: the child/parameter registries would silently disagree with
            # the attribute otherwise.
            raise TypeError(f"{type(self).__name__}.{name} is a {type(existing).__name__}; "
                            f"it cannot be replaced by a {type(value).__name__}. Use "
                            f"another attribute name, or assign a "
                            f"{type(existing).__name__}.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            self._register_param(name, value)
        object.__setattr__(self, name, value)

    def _register_param(self, attr, param):
        if param._owner is None:
            # The first block a Parameter is given to puts its prefix in front of the
            # name, so two layers' 'weight's become 'custom0_weight', 'custom1_weight'.
            param._owner = weakref.ref(self)
            if not param.name.startswith(self.prefix):
                param._name, param._var = self.prefix + param.name, None
                if param.name in self._params and self._params[param.name] is not param:
                    param._name = self.prefix + attr
        self._params._add(param)
        self._reg_params[attr] = param
        self._clear_cached_op()

    def register_child(self, block, name=None):
        """Add a child block (attribute assignment and Sequential.add call this)."""
        if not isinstance(block, Block):
            raise TypeError(f"register_child needs a Block, got {type(block).__name__}")
        name = str(len(self._children)) if name is None else name
        old = self._children.get(name)
        self._children[name] = block
        if old is not None and old is not block and all(c is not old
                                                         for c in self._children.values()):
            old._parents.discard(self)
        block._parents.add(self)
        self._clear_cached_op()

    def _clear_cached_op(self):
        # A plain Block caches nothing, but a HybridBlock above it may.
        for parent in list(self._parents):
            parent._clear_cached_op()

    def _check_container_with_block(self):
        children = set(map(id, self._children.values()))

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(x) for x in data)
            if isinstance(data, dict):
                return any(unregistered(x) for x in data.values())
            return isinstance(data, Block) and id(data) not in children

        internal = ("_children", "_reg_params", "_forward_hooks", "_forward_pre_hooks")
        for key, value in self.__dict__.items():
            if key not in internal and isinstance(value, (list, tuple, dict)) \
                    and unregistered(value):
                warnings.warn(f'"{type(self).__name__}.{key}" is an unregistered container '
                              f'with Blocks. Blocks inside a list, tuple or dict are not '
                              f'registered automatically (their parameters are not collected). '
                              f'Register them with register_child() or use '
                              f'nn.Sequential/nn.HybridSequential instead.', stacklevel=3)

    # ---------------------------------------------------------- parameters
    def collect_params(self, select=None):
        """Every Parameter of this block and its children, by name (a ParameterDict).

        `select` is a regular expression on the names, e.g. '.*weight'.
        """
        self._check_container_with_block()
        result = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None
        for param in self._params.values():
            if pattern is None or pattern.match(param.name):
                result._add(param)
        for child in self._children.values():
            result.update(child.collect_params(select))
        return result

    def _collect_params_with_prefix(self, prefix=""):
        """Parameters by structural key: attribute path, e.g. 'dense1.weight', '0.bias'."""
        if prefix:
            prefix += "."
        result = OrderedDict((prefix + key, p) for key, p in self._reg_params.items())
        for name, child in self._children.items():
            result.update(child._collect_params_with_prefix(prefix + name))
        return result

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise every parameter. Those whose shape is not known yet (Dense without
        in_units) are initialised at the first forward pass."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        self.collect_params().reset_ctx(ctx)

    reset_device = reset_ctx

    def cast(self, dtype):
        """Convert every parameter to `dtype` (e.g. 'float64')."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self._params.values():
            param.cast(dtype)

    def apply(self, fn):
        """Call fn(block) on every child (recursively), then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def hybridize(self, active=True, **kwargs):
        """A plain Block cannot be traced, but its HybridBlock children can."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    # --------------------------------------------------------- save / load
    def save_parameters(self, filename, deduplicate=False, params_format="npz"):
        """Save the values by structural key ('dense1.weight'): NumPy .npz, atomic
        (params_format='mxnet': MXNet's binary format, for MXNet's load_parameters).

        Load them into a network built the same way with load_parameters().
        """
        arrays, seen = {}, set()
        for key, param in self._collect_params_with_prefix().items():
            if deduplicate and id(param) in seen:
                continue
            seen.add(id(param))
            try:
                arrays[key] = param._reduce()
            except (DeferredInitializationError, RuntimeError) as err:
                raise type(err)(f"save_parameters: {err}") from None
        _save_in_format(filename, arrays, params_format)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load values saved by save_parameters() (or export()) into this network."""
        loaded = read_headers(filename)        # arrays are read once checked
        params = self._collect_params_with_prefix()
        if loaded and not any(k in params for k in loaded):
            # Not structural keys: a file from export() ('arg:NAME') or ParameterDict.save.
            by_name = OrderedDict((p.name, p) for p in self.collect_params().values())
            renamed = {(k.split(":", 1)[1] if k.startswith(("arg:", "aux:")) else k): v
                       for k, v in loaded.items()}
            if not any(k in by_name for k in renamed):    # save_params(): without our prefix
                renamed = {self.prefix + k: v for k, v in renamed.items()}
            if any(k in by_name for k in renamed):
                params, loaded = by_name, renamed
        # A file saved with deduplicate=True holds a shared parameter under one key only.
        for key, param in params.items():
            if key not in loaded:
                alias = next((k for k, p in params.items() if p is param and k in loaded), None)
                if alias is not None:
                    loaded[key] = loaded[alias]
        changed = load_by_name(params, loaded, filename, ctx, allow_missing, ignore_extra,
                               cast_dtype, dtype_source)
        if changed:        # new shapes or dtypes: traced graphs must be rebuilt
            self.apply(lambda block: block._clear_cached_op())

    def save_params(self, filename):
        """MXNet 1.x's older format (deprecated there too): keys are the parameters' names
        without this block's prefix (`conv0_weight`), so a SymbolBlock rebuilt from the
        exported graph can load the file. load_params() reads it back."""
        warnings.warn("save_params is deprecated (as in MXNet): use save_parameters, or "
                      "export() for a SymbolBlock", DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Load a file from save_params() (or save_parameters()); deprecated as in MXNet."""
        warnings.warn("load_params is deprecated (as in MXNet): use load_parameters",
                      DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # ---------------------------------------------------------------- hooks
    def register_op_hook(self, callback, monitor_all=False):
        """callback(name, op_name, array) for every op output (and, with monitor_all, every
        op input) while a hybridized block runs: MXNet's monitor. Set on the children too."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def register_forward_pre_hook(self, hook):
        """hook(block, inputs) runs before forward. Returns a handle with detach()."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """hook(block, inputs, outputs) runs after forward. Returns a handle with detach()."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    # -------------------------------------------------------------- calling
    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self._call(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        _check_one_array_kind(self, out)
        return out

    def _call(self, *args):
        if _contains_symbol(args):
            with tracing():         # parameters answer data() with their variables
                return self.forward(*args)
        return self._forward_with_deferred_init(*args)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward(self, x): what "
                                  f"the block computes from its inputs")

    def _can_infer_shape(self):
        return callable(getattr(self, "infer_shape", None))

    def _forward_with_deferred_init(self, *args):
        """Run forward; if a parameter's shape was still unknown, learn it from the inputs
        (infer_shape), finish initialisation and run forward again."""
        try:
            return self.forward(*args)
        except DeferredInitializationError as err:
            return self._finish_deferred_init_and_forward(err, *args)

    def _finish_deferred_init_and_forward(self, err, *args):
        """forward() has just stopped (`err`) at a parameter of unknown shape."""
        if not self._can_infer_shape():
            raise err
        self._deferred_infer_shape(*args)
        return self.forward(*args)

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except OpError as err:
            shapes = [a.shape for a in _flatten(args, "input")[0] if isinstance(a, NDArray)]
            raise OpError(f"{self._describe()}: cannot infer the shapes of its parameters from "
                          f"inputs of shape {shapes}: {err}") from None
        for param in self.collect_params().values():
            param._finish_deferred_init()
        pending = [(k, p) for k, p in self._reg_params.items()
                   if p._data is None and p._deferred_init]
        if pending:
            key, param = pending[0]
            shapes = [a.shape for a in _flatten(args, "input")[0] if isinstance(a, NDArray)]
            raise DeferredInitializationError(
                f"{self._describe()} could not infer the shape of Parameter '{param.name}' "
                f"(still {param.shape}) from inputs of shape {shapes}. Give the layer its "
                f"input size (in_units=..., in_channels=...), or define "
                f"infer_shape(self, *args) that sets self.{key}.shape from the inputs.")

    # -------------------------------------------------------------- summary
    def summary(self, *inputs):
        """Print each layer's output shape and parameter count (run one forward pass).

        Call it before hybridize(): a hybridized block runs its cached graph, so the
        layers' forward hooks that collect the table would not fire.
        """
        from .nn.basic_layers import HybridSequential, Sequential
        rows = OrderedDict()
        seen = set()
        hooks = []

        def shape_str(args):
            def shapes(a):
                if isinstance(a, (list, tuple)):
                    return [shapes(x) for x in a]
                return a.shape if isinstance(a, NDArray) else a
            s = shapes(args)
            return str(s)[1:-1] if isinstance(s, list) else str(s)

        def hook(block, _, outputs):
            key = f"{type(block).__name__}-{len(rows)}"
            row = rows[key] = {"output_shape": shape_str(outputs), "n_params": 0,
                               "trainable": 0, "shared": 0}
            for p in block.params.values():
                size = p.data().size
                row["n_params"] += size
                row["trainable"] += 0 if p.grad_req == "null" else size
                if id(p) in seen:
                    row["shared"] += size
                seen.add(id(p))

        def check(block):
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError(
                    f'"{block.name}" must not be hybridized to print summary: a hybridized '
                    f'block runs its cached graph and its layers are never called one by one. '
                    f'Call summary() before hybridize() (build the network again, or call '
                    f'hybridize(active=False) first), then hybridize.')
            for child in block._children.values():
                check(child)

        def register(block):
            if not isinstance(block, (Sequential, HybridSequential)):
                hooks.append(block.register_forward_hook(hook))

        rows["Input"] = {"output_shape": shape_str(list(inputs)), "n_params": 0,
                         "trainable": 0, "shared": 0}
        check(self)        # outermost first, so the message names the block you called
        try:
            self.apply(register)
            self(*inputs)
            line = "{:>20}  {:>42} {:>15}"
            print("-" * 80)
            print(line.format("Layer (type)", "Output Shape", "Param #"))
            print("=" * 80)
            total = trainable = shared = 0
            for key, row in rows.items():
                print(line.format(key, row["output_shape"], row["n_params"]))
                total += row["n_params"]
                trainable += row["trainable"]
                shared += row["shared"]
            print("=" * 80)
            print("Parameters in forward computation graph, duplicate included")
            print(f"   Total params: {total}")
            print(f"   Trainable params: {trainable}")
            print(f"   Non-trainable params: {total - trainable}")
            print(f"Shared params in forward computation graph: {shared}")
            print(f"Unique parameters in model: {total - shared}")
            print("-" * 80)
        finally:
            for h in hooks:
                h.detach()


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
        self._cached_op = None
        self._cached_params = None      # [(variable name, Parameter)]
        self._slots = None              # per graph input: index of the call argument, or
                                        # the Parameter (set once a cached call succeeded)
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
        self._cached_graph = self._cached_op = self._cached_params = self._slots = None
        super()._clear_cached_op()

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
    def __call__(self, *args):
        # The two calls that happen millions of times, without detours: NDArrays in, no
        # hooks. (Everything else, and the first calls, go through Block.__call__.)
        for a in args:                      # _only_ndarrays(args), inlined
            if type(a) is not NDArray and type(a) is not _NpArray:
                return super().__call__(*args)
        if not (self._forward_pre_hooks or self._forward_hooks):
            if not self._active or _imperative.on:                     # imperative
                try:
                    out = self.forward(*args)
                except DeferredInitializationError as err:   # first call: shapes unknown
                    out = self._finish_deferred_init_and_forward(err, *args)
                if type(out) is tuple:
                    _check_one_array_kind(self, out)
                return out
            slots = self._slots
            if slots is not None and len(args) == len(self._in_format):
                # Compiled: the call's arrays and the parameters' arrays, in the graph's
                # order, straight to the cached op. No Python of the block runs, and
                # nothing is flattened or looked up by name.
                try:
                    outs = self._cached_op.call([args[s] if type(s) is int else s._data
                                                 for s in slots])
                except ValueError as err:
                    raise self._running_error(err)
                if self._np_outputs:
                    _as_np_outputs(outs)
                return outs[0] if self._out_format == 0 else \
                    _regroup(outs, self._out_format)[0]
        return super().__call__(*args)

    def _call(self, *args):
        if _only_ndarrays(args):            # the usual call: arrays, no nesting
            if self._active and not _imperative.on:
                return self._call_cached_op(*args)
            return self._forward_with_deferred_init(*args)
        if any(isinstance(a, numpy.ndarray) for a in args):
            _flatten(args, "input")        # the usual slip: a NumPy array; explain it
        has_symbol, has_array = _input_kinds(args)
        if has_symbol and has_array:
            raise ValueError(f"{self._describe()} got both NDArrays and Symbols as inputs; "
                             f"pass only NDArrays (to compute) or only Symbols (to build a "
                             f"graph)")
        if not (has_symbol or has_array):
            raise ValueError(f"{self._describe()} needs at least one NDArray or Symbol among "
                             f"its inputs, got {args!r:.120}")
        if has_symbol:
            return self._call_symbolic(*args)
        if self._active and not _imperative.on:
            return self._call_cached_op(*args)
        return self._forward_with_deferred_init(*args)

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
        if self._cached_graph is None:
            inputs, out, self._in_format, self._out_format = self._trace(*args)
            self._cached_graph = (inputs, out)
            self.trace_count += 1
        inputs, out = self._cached_graph
        data_names = [i.name for i in inputs]
        by_name = {p.name: p for p in self.collect_params().values()}
        cached = []
        for name in out.list_inputs():
            if name in data_names:
                continue
            if name not in by_name:
                raise ValueError(f"{self._describe()}: the traced graph reads a variable "
                                 f"'{name}' that is neither an input nor a Parameter of this "
                                 f"block. Create parameters as attributes (self.w = "
                                 f"Parameter(...)) instead of sym.var() inside forward.")
            cached.append((name, by_name[name]))
        self._cached_params = cached
        self._cached_op = CachedOp(out, data_names, backend=self._flags.get("executor"),
                                   static_alloc=self._flags.get("static_alloc", False),
                                   static_shape=self._flags.get("static_shape", False),
                                   compile=self._flags.get("compile"),
                                   inline_limit=self._flags.get("inline_limit", 2))

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
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
        params = self._cached_param_arrays(*args)
        try:
            outs = self._cached_op(flat, params)
        except ValueError as err:
            raise self._running_error(err)
        if self._np_outputs:            # traced on np Symbols: return np.ndarrays
            _as_np_outputs(outs)
        if self._op_hook is not None:
            self._monitor(flat, params)
        elif self._slots is None and isinstance(self._in_format, list) and \
                not any(self._in_format):
            self._slots = self._call_slots()     # the fast path, when no op hook watches
        return _regroup(outs, self._out_format)[0]

    def register_op_hook(self, callback, monitor_all=False):
        super().register_op_hook(callback, monitor_all)
        self._op_hook = (callback, monitor_all)
        self._slots = None

    def _monitor(self, flat, params):
        """Call the op hook op by op. The compiled graph fuses ops, so their values do not
        exist there: the reference interpreter runs the traced graph a second time, on the
        same inputs, and shows each value (named as MXNet does: `dense0_fwd_output`,
        `dense0_fwd_weight`)."""
        from ..graph.ir import Graph
        callback, monitor_all = self._op_hook
        feeds = dict(zip(self._cached_op.data_names, flat), **params)
        values = {}
        for node in Graph.from_symbol(self._cached_graph[1]).nodes:
            if node.is_var:
                values[(node.id, 0)] = feeds[node.name]._data
                continue
            arrays = [values[tuple(e)] for e in node.inputs]
            if monitor_all:
                for name, array in zip(_monitor_input_names(node, len(arrays)), arrays):
                    callback(f"{node.name}_{name}", node.op.name, NDArray(array))
            results = node.op.run(node.attrs, arrays, autograd.is_training())
            names = node.op.output_names if len(node.op.output_names) == len(results) \
                else [f"output{k}" for k in range(len(results))]
            for k, (name, result) in enumerate(zip(names, results)):
                values[(node.id, k)] = result
                callback(f"{node.name}_{name}", node.op.name, NDArray(result))

    def _running_error(self, err):
        """An error from running the cached graph (OpError: shapes), told with the block's name."""
        err.args = (f"{self._describe()} (running its cached graph): {err}",)
        return err

    def _call_slots(self):
        """Where each input of the cached graph comes from on a plain NDArray call: an
        argument's index, or a Parameter (whose array is read at each call)."""
        params = dict(self._cached_params)
        data_names = self._cached_op.data_names
        return [data_names.index(n) if n in data_names else params[n]
                for n in self._cached_op.input_names]

    def _cached_param_arrays(self, *args):
        arrays = {name: p._data for name, p in self._cached_params}
        if all(a is not None for a in arrays.values()):      # the usual case, cheaply
            return arrays
        try:
            return {name: p.data() for name, p in self._cached_params}
        except DeferredInitializationError:
            pass
        # First call with deferred parameters: learn their shapes from the traced graph.
        self._deferred_infer_shape_quietly(*args)
        if any(p._data is None and p._deferred_init for _, p in self._cached_params):
            # Some layer can only learn its shapes from real values (an infer_shape that
            # reads x.shape): run the Python forward once, without the cache, not training.
            with _imperative_only(), autograd.pause(train_mode=False):
                self._forward_with_deferred_init(*args)
        return {name: p.data() for name, p in self._cached_params}

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

    def export(self, path, epoch=0, remove_amp_cast=True, params_format="npz"):
        """Write the traced graph (`path-symbol.json`) and the parameters
        (`path-0000.params`, keys `arg:NAME`/`aux:NAME`). Returns both file names.
        params_format='mxnet' writes MXNet's own binary format, which MXNet 1.x loads."""
        if self._cached_graph is None:
            raise RuntimeError(
                f"{self._describe()}: export() writes the traced graph, and there is none yet. "
                f"Call hybridize() and run a forward pass (net(x)) first, then export().")
        _, out = self._cached_graph
        if self._cached_params is None:
            self._build_cache()
        sym_file = f"{path}-symbol.json"
        params_file = f"{path}-{epoch:04d}.params"
        aux = set(out.list_auxiliary_states())
        arrays = {}
        for name, param in self._cached_params:
            arrays[("aux:" if name in aux else "arg:") + name] = param._reduce()
        out.save(sym_file, remove_amp_cast=remove_amp_cast)
        _save_in_format(params_file, arrays, params_format)
        return sym_file, params_file


def _save_in_format(filename, arrays, params_format):
    """npz (straightdope's own, NumPy) or mxnet (MXNet's binary NDArray file)."""
    if params_format == "npz":
        save_arrays(filename, arrays)
    elif params_format == "mxnet":
        from .. import mxnet_format
        mxnet_format.save(filename, arrays)
    else:
        raise ValueError(f"params_format must be 'npz' or 'mxnet', got {params_format!r}")


def _substitute(out, mapping):
    """A copy of graph `out` in which the variables named in `mapping` are replaced by
    other Symbols (parameter variables stay shared)."""
    return out.substitute(mapping)


_MXNET_DTYPE_CODES = {"0": "float32", "1": "float64", "2": "float16", "3": "uint8",
                      "4": "int32", "5": "int8", "6": "int64"}


def _var_dtype(node, source):
    text = node.var_attrs.get("__dtype__", "float32")
    text = _MXNET_DTYPE_CODES.get(text, text)
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
        self._cached_op = self._cached_params = self._slots = None
        Block._clear_cached_op(self)

    def forward(self, x, *args):
        if _contains_symbol((x,) + args):
            flat, in_format = _flatten((x,) + args, "input")
            if in_format != self._in_format:
                raise ValueError(f"SymbolBlock: expects {_describe_format(self._in_format)}, "
                                 f"got {_describe_format(in_format)}")
            inputs, out = self._cached_graph
            result = _substitute(out, {i.name: s for i, s in zip(inputs, flat)})
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
    import os
    prefix = os.path.commonprefix(names)
    return prefix[:prefix.rfind("_") + 1]
