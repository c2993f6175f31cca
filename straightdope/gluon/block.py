"""Block: the base class of every network (naming, parameters, save/load, hooks).

A `Block` runs its Python `forward` every time (imperative, easy to debug). Layers and
Parameters assigned as attributes are registered automatically, which is what
`collect_params()`, `initialize()` and `save_parameters()` walk. `HybridBlock`
(hybrid_block.py) adds tracing and compiling; `SymbolBlock` (symbol_block.py) wraps a
graph that already exists.

Names follow MXNet 1.x: every block has a prefix (`dense0_`), its parameters
are `dense0_weight`, and the graph nodes it traces are `dense0_fwd`.
"""
from __future__ import annotations

import json
import re
import threading
import warnings
import weakref
from collections import OrderedDict

from .. import initializer, name as _name
from ..ndarray import NDArray
from ..ops import OpError
from ..serialization import atomic_write, read_headers, save_arrays
from .nested import HybridInputError, _check_one_array_kind, _contains_symbol, _flatten  # noqa: F401
from .parameter import (DeferredInitializationError, Parameter, ParameterDict, _indent,
                        load_by_name, tracing)
from .utils import HookHandle, summary as _summary

__all__ = ["Block"]


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

    def save(self, prefix):
        """MXNet 2.0's whole-model save: `prefix-model.json` (each block's class and
        parameter names, and the traced graph of a hybridized one) and `prefix-model.params`
        (save_parameters). load(prefix) restores both into a network built the same way."""
        model = {"blocks": [block._model_entry() for block in self._blocks()]}
        text = json.dumps(model, indent=1).encode()
        atomic_write(f"{prefix}-model.json", lambda f: f.write(text))
        self.save_parameters(f"{prefix}-model.params")

    def load(self, prefix):
        """Load what save(prefix) wrote into this network, built the same way (the same
        blocks in the same order): traced graphs (hybridized again) and parameters."""
        path = f"{prefix}-model.json"
        try:
            with open(path, encoding="utf-8") as f:
                entries = json.load(f)["blocks"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a model file written by Block.save ({err})") from None
        blocks = list(self._blocks())
        if not isinstance(entries, list) or len(entries) != len(blocks):
            raise ValueError(f"{path} describes {len(entries)} blocks, {self._describe()} has "
                             f"{len(blocks)}: build the network as the saved one was built")
        for k, (block, entry) in enumerate(zip(blocks, entries)):
            here = {"block": type(block).__name__, "params": list(block._reg_params)}
            if not isinstance(entry, dict) or \
                    {key: entry.get(key) for key in here} != here:
                raise ValueError(f"{path}: block {k} was saved as {entry!r:.100}, here it is "
                                 f"{here}: build the network as the saved one was built")
        self.load_parameters(f"{prefix}-model.params")   # first: new shapes clear graphs
        for block, entry in zip(blocks, entries):
            block._load_model_entry(entry, path)

    def _blocks(self):
        """This block and its descendants, parents first (save/load's order)."""
        yield self
        for child in self._children.values():
            yield from child._blocks()

    def _model_entry(self):
        return {"block": type(self).__name__, "params": list(self._reg_params)}

    def _load_model_entry(self, entry, path):
        pass                            # a plain Block keeps nothing but its parameters

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
        if self._forward_pre_hooks or self._forward_hooks:
            return self._call_with_hooks(args)
        return self._call(*args)

    def _call_with_hooks(self, args):
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self._call(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def _call(self, *args):
        if _contains_symbol(args):
            with tracing():         # parameters answer data() with their variables
                return self.forward(*args)
        out = self._forward_with_deferred_init(*args)
        if isinstance(out, (list, tuple)):
            _check_one_array_kind(self, out)
        return out

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


    def summary(self, *inputs):
        """Print each layer's output shape and parameter count (runs one forward pass;
        call it before hybridize(): see gluon.utils.summary)."""
        _summary(self, *inputs)


def _save_in_format(filename, arrays, params_format):
    """npz (straightdope's own, NumPy) or mxnet (MXNet's binary NDArray file)."""
    if params_format == "npz":
        save_arrays(filename, arrays)
    elif params_format == "mxnet":
        from .. import mxnet_format
        mxnet_format.save(filename, arrays)
    else:
        raise ValueError(f"params_format must be 'npz' or 'mxnet', got {params_format!r}")


