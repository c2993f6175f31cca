"""Parameter: a named weight that a Block owns, initialises, saves and differentiates.

A Parameter holds one NDArray (`data()`) and, unless `grad_req='null'`, one
gradient array (`grad()`) that `autograd.backward()` fills. Its shape may be
incomplete at first: `Dense(5)` has a weight of shape (5, -1) because the
input size is unknown until data arrives. `initialize()` then only *records*
how to initialise it (deferred initialisation); the first forward pass
fills in the -1 and finishes the job.

While a HybridBlock is being traced, `data()` returns the parameter's Symbol
variable (`var()`) instead of numbers, so the same forward code builds a graph.
"""
from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from contextlib import contextmanager

import numpy as _np

from .. import autograd, initializer
from ..base import MXNetError
from ..context import check_context, cpu
from ..ndarray import NDArray
from ..serialization import read_headers, save_arrays
from ..util import is_np_array

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]

tensor_types = (NDArray,)
GRAD_REQS = ("write", "add", "null")


STORAGE_TYPES = ("default", "row_sparse", "csr")     # MXNet's names; only 'default' exists here


class StorageTypeError(ValueError, AssertionError):
    """An unknown storage type name. MXNet asserts it (AssertionError); ValueError is what
    bad arguments raise in Python: this is both."""


class DeferredInitializationError(MXNetError):
    """A parameter's values were asked for before its shape was known."""


# ------------------------------------------------------------------ tracing
# HybridBlock sets this while it runs forward on Symbols; Parameter.data()
# then answers with a graph variable instead of an array.
class _TraceState(threading.local):
    depth = 0           # a class default: reading a missing thread-local attribute is slow


_trace_state = _TraceState()


def is_tracing() -> bool:
    return _trace_state.depth > 0


@contextmanager
def tracing():
    _trace_state.depth += 1
    try:
        yield
    finally:
        _trace_state.depth -= 1


# ------------------------------------------------------------------- shapes
def _normalize_shape(shape):
    """A tuple with -1 for every unknown dimension (MXNet 1.x wrote 0, 2.0 writes -1)."""
    if shape is None:
        return None
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    return tuple(-1 if int(d) <= 0 else int(d) for d in shape)


def shape_is_known(shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def _compatible(old, new):
    """Can `old` (which may hold -1s) become `new`?"""
    return len(old) == len(new) and all(o == -1 or n == -1 or o == n for o, n in zip(old, new))


class Parameter:
    """A weight of a Block: data, gradient, and how to initialise them.

    >>> w = Parameter('weight', shape=(5, -1), allow_deferred_init=True)
    >>> w.initialize()          # shape unknown: remembered, done later
    >>> w.shape = (5, 3)        # what a layer's infer_shape does on the first call
    >>> w._finish_deferred_init(); w.data().shape
    (5, 3)
    """

    def __init__(self, name="weight", grad_req="write", shape=None, dtype="float32",
                 lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
                 differentiable=True, stype="default", grad_stype="default"):
        if not isinstance(name, str) or not name:
            raise TypeError(f"a Parameter needs a non-empty string name, got {name!r}")
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in STORAGE_TYPES:
                raise StorageTypeError(f"Parameter '{name}': {what} must be one of "
                                       f"{STORAGE_TYPES}, got {value!r}")
        if stype != "default" or grad_stype != "default":
            raise ValueError(f"Parameter '{name}': only dense storage ('default') exists in "
                             f"straightdope, got stype={stype!r}, grad_stype={grad_stype!r}")
        self._name = name
        self._shape = _normalize_shape(shape)
        self._dtype = _np.dtype(dtype)
        self.lr_mult, self.wd_mult = lr_mult, wd_mult
        self.init = init
        self._allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = self._check_grad_req(grad_req if differentiable else "null")
        self._data: NDArray | None = None
        self._grad: NDArray | None = None
        self._deferred_init = ()          # (init, ctx, default_init) while waiting for a shape
        self._ctx = None
        self._var = None                  # the Symbol variable, made once
        self._owner = None                # the first Block this Parameter was attached to

    def _check_grad_req(self, req):
        if req not in GRAD_REQS:
            raise ValueError(f"Parameter '{self._name}': grad_req must be one of {GRAD_REQS}, "
                             f"got {req!r}")
        return req

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype.name})"

    # ----------------------------------------------------------- properties
    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        """Fill in unknown dimensions (-1/0); known ones may not change."""
        new_shape = _normalize_shape(new_shape)
        if self._shape is not None and not _compatible(self._shape, new_shape):
            raise ValueError(
                f"Parameter '{self.name}' has shape {self._shape}; it cannot become "
                f"{new_shape}. Only unknown dimensions (-1) can be filled in. If the layer "
                f"should take another input size, create a new layer.")
        if self._data is not None and new_shape != self._data.shape:
            raise ValueError(f"Parameter '{self.name}' already holds data of shape "
                             f"{self._data.shape}; use set_data() to replace it")
        self._shape = new_shape
        self._sync_var()

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        req = self._check_grad_req(req)
        if not self._differentiable:
            req = "null"
        if req == self._grad_req:
            return
        self._grad_req = req
        if self._data is not None:
            self._attach_grad()

    @property
    def differentiable(self):
        return self._differentiable

    @property
    def allow_deferred_init(self):
        return self._allow_deferred_init

    # ------------------------------------------------------- initialisation
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Give the parameter its first values (now, or at the first forward pass).

        `init` (or the parameter's own `init`) wins over `default_init`, the
        initializer the whole network was initialised with.
        """
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. Set "
                          f"force_reinit=True to re-initialize.", stacklevel=2)
            return
        check_context(ctx)
        self._data = self._grad = None
        self._ctx = ctx
        self._deferred_init = (init, ctx, default_init)
        if shape_is_known(self._shape):
            self._finish_deferred_init()
        elif not self._allow_deferred_init:
            self._deferred_init = ()
            raise ValueError(
                f"Cannot initialize Parameter '{self.name}' because its shape {self.shape} "
                f"is incomplete. Give the full shape, or create it with "
                f"allow_deferred_init=True so that the first forward pass can fill it in.")

    def _finish_deferred_init(self):
        """Allocate and fill the array once the shape is complete (no-op otherwise)."""
        if not self._deferred_init or not shape_is_known(self._shape):
            return
        init, ctx, default_init = self._deferred_init
        data = self._new_array(_np.zeros(self._shape, dtype=self._dtype), ctx)
        explicit = init if init is not None else self.init
        with autograd.pause():
            if explicit is not None:
                # An initializer chosen for this parameter applies its own rule whatever
                # the name is (MXNet's `__init__` attribute): Constant(3) on a bias is 3.
                initializer.create(explicit)._init_weight(self.name, data)
            else:
                # The network-wide initializer looks at the name: *_bias -> 0, *_gamma -> 1...
                initializer.create(default_init)(initializer.InitDesc(self.name), data)
        self._set(data)

    @staticmethod
    def _new_array(values, ctx) -> NDArray:
        """An `mx.np.ndarray` when made under `npx.set_np()` / `@use_np` (as MXNet's
        Parameter decides at initialization), else an NDArray."""
        array = NDArray(values, ctx)
        return array.as_np_ndarray() if is_np_array() else array

    def _set(self, data: NDArray):
        self._data = data
        self._deferred_init = ()
        self._attach_grad()

    def _attach_grad(self):
        """Mark the array for autograd so backward() writes into our grad array."""
        if self._grad_req == "null":
            self._grad = None
            autograd.mark_variables([self._data], [None], "null")
            return
        self._grad = self._new_array(_np.zeros(self._data.shape, self._data._data.dtype),
                                     self._ctx)
        autograd.mark_variables([self._data], [self._grad], self._grad_req)

    # --------------------------------------------------------------- access
    def _check_and_get(self, what):
        if self._data is not None:
            return self._data
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because its "
                f"initialization was deferred: its shape {self.shape} is not known until data "
                f"flows through the layer. Run a forward pass first (net(x)) and then ask for "
                f"{what}, or give the layer its input size (e.g. in_units=..., "
                f"in_channels=...) so the shape is complete at initialize().")
        raise RuntimeError(
            f"Parameter '{self.name}' has not been initialized. Call net.initialize() (or "
            f"param.initialize()) before using it, and create the Trainer with "
            f"net.collect_params() rather than net.params.")

    def data(self, ctx=None):
        """The values, an NDArray. While a HybridBlock is being traced: its Symbol variable."""
        if is_tracing():
            return self.var()
        return self._check_and_get("data()")

    def list_data(self):
        return [self.data()]

    def grad(self, ctx=None):
        """The gradient array that backward() fills (same shape as data)."""
        self._check_and_get("grad()")
        if self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' "
                               f"because grad_req='null'")
        return self._grad

    def list_grad(self):
        return [self.grad()]

    def list_ctx(self):
        if self._data is None and self._deferred_init:
            return [self._deferred_init[1] or cpu()]
        self._check_and_get("list_ctx()")
        return [self._ctx or cpu()]

    def zero_grad(self):
        """Set the gradient to 0 (needed between steps when grad_req='add')."""
        if self._grad is not None:
            self._grad._data[...] = 0

    def set_data(self, data):
        """Replace the values (in place, so graphs that read this parameter see them)."""
        values = data._data if isinstance(data, NDArray) else _np.asarray(data)
        if self._data is None:
            self.shape = values.shape
            if not self._deferred_init:
                self._deferred_init = (None, self._ctx, initializer.Zero())
            self._set(NDArray(_np.array(values, dtype=self._dtype), self._ctx))
            return
        if values.shape != self._data.shape:
            raise ValueError(f"set_data: Parameter '{self.name}' has shape "
                             f"{self._data.shape}, the new data has shape {values.shape}")
        self._data._data[...] = values

    def reset_ctx(self, ctx):
        """straightdope computes on the CPU only; this checks `ctx` and keeps the data."""
        check_context(ctx)
        self._ctx = ctx if not isinstance(ctx, (list, tuple)) else ctx[0]

    reset_device = reset_ctx

    def cast(self, dtype):
        """Change the dtype of the data and the gradient (e.g. to float64)."""
        self._dtype = _np.dtype(dtype)
        self._sync_var()
        if self._data is None:
            return
        with autograd.pause():
            self._set(NDArray(self._data._data.astype(self._dtype), self._ctx))

    def var(self):
        """The Symbol variable that stands for this parameter in a traced graph."""
        if self._var is None:
            from .. import symbol
            init = self.init
            if init is not None and not isinstance(init, str):
                # The attribute is informative only: an initializer holding an array
                # (Constant(np.eye(2))) would put all its numbers into the graph's JSON.
                holds_array = any(hasattr(v, 'shape') or isinstance(v, list)
                                  for v in getattr(init, '_kwargs', {}).values())
                try:
                    init = None if holds_array else init.dumps()
                except (TypeError, ValueError):   # a user's initializer JSON cannot hold
                    init = None
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=init)
            if is_np_array():       # as MXNet: under set_np() an np Symbol, so that an op
                self._var = self._var.as_np_ndarray()   # traced on it is an np op
        return self._var

    def _sync_var(self):
        # Keep the variable's shape/dtype hints (written into exported JSON) in step.
        if self._var is not None:
            node = self._var.entries[0][0]
            if self._shape is not None:
                node.var_attrs["__shape__"] = str(self._shape)
            node.var_attrs["__dtype__"] = self._dtype.name

    # --------------------------------------------------------- serialisation
    def _reduce(self):
        """The values as a NumPy array, for saving."""
        return self._check_and_get("its values to save them").asnumpy()

    def _check_loadable(self, data, cast_dtype=False, key=None):
        """Refuse values of another shape, or dtype unless cast_dtype (`data` may be a
        file's StoredArray: only its header is looked at)."""
        where = f" (key '{key}')" if key and key != self.name else ""
        if self._shape is not None and not _compatible(self._shape, tuple(data.shape)):
            raise ValueError(
                f"Cannot load Parameter '{self.name}'{where}: this network needs shape "
                f"{self._shape}, the file holds shape {tuple(data.shape)}. The file was saved "
                f"from a different architecture: rebuild the network exactly as it was when "
                f"saved (same layers, units, in_units/in_channels), or skip the parameter "
                f"with allow_missing=True / ignore_extra=True.")
        if _np.dtype(data.dtype).newbyteorder("=") != self._dtype and not cast_dtype:
            raise ValueError(
                f"Cannot load Parameter '{self.name}'{where}: the network uses "
                f"{self._dtype.name}, the file holds {_np.dtype(data.dtype).name}. Pass "
                f"cast_dtype=True to convert (dtype_source='current' keeps the network's "
                f"dtype, 'saved' takes the file's).")

    def _load_init(self, data, ctx=None, cast_dtype=False, dtype_source="current",
                   key=None):
        """Take values from a file. Returns True if the shape or dtype changed."""
        self._check_loadable(data, cast_dtype, key)
        data = _np.asarray(data)          # a StoredArray is read from its file only now
        if data.dtype != self._dtype:
            if dtype_source == "saved":
                self._dtype = data.dtype
            else:
                data = data.astype(self._dtype)
        changed = self._shape != data.shape or (
            self._data is not None and self._data._data.dtype != self._dtype)
        self._shape = tuple(data.shape)
        self._sync_var()
        if self._data is not None and not changed:
            self._data._data[...] = data
        else:
            check_context(ctx)
            self._ctx = ctx if ctx is not None else self._ctx
            self._set(NDArray(_np.array(data, dtype=self._dtype), self._ctx))
        return changed


class Constant(Parameter):
    """A parameter that never trains (grad_req='null'), e.g. a fixed scale.

    `Constant(value)` (MXNet 2.0) or `Constant(name, value)` (1.x).
    """

    def __init__(self, name_or_value, value=None):
        if value is None:
            name, value = "const", name_or_value
        else:
            name = name_or_value
        is_array = isinstance(value, NDArray)
        value = value._data if is_array else _np.asarray(value)
        if value.dtype.kind not in "fiub":
            raise TypeError(f"Constant '{name}': needs numbers, got {value.dtype}")
        if not is_array:                # as nd.array(value): float32 unless an NDArray
            value = value.astype(_np.float32)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=initializer.Constant(value.tolist()), differentiable=False)

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype.name})"


def _indent(text, spaces):
    pad = " " * spaces
    return text.replace("\n", "\n" + pad)


class ParameterDict:
    """An ordered name -> Parameter mapping, as `collect_params()` returns (MXNet 1.x).

    Everything you do to a whole network's parameters goes through it:
    `initialize()`, `zero_grad()`, `setattr('grad_req', 'null')`, `save()`/`load()`.
    `get(name, ...)` makes (or finds, when `shared` has it) the parameter `prefix + name`:
    that is how `Dense(..., params=other.params)` shares weights.
    """

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    @property
    def prefix(self):
        return self._prefix

    def __repr__(self):
        name = f"{self._prefix} " if self._prefix else ""
        content = "\n".join(_indent(f"  {v}", 2) for v in self.values())
        return f"{name}(\n{content}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    def items(self):
        return self._params.items()

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter `prefix + name`: found (here or in `shared`) or created."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = Parameter(full, **kwargs)
            self._params[full] = param
            return param
        # Found (e.g. shared): the request must agree with it.
        for key, value in kwargs.items():
            if key == "shape" and value is not None:
                wanted = _normalize_shape(value)
                if param.shape is None:
                    param.shape = wanted
                elif not _compatible(param.shape, wanted):
                    raise ValueError(f"Parameter '{full}' exists with shape {param.shape}; a "
                                     f"layer now asks for {wanted}. Shared layers must have "
                                     f"the same sizes.")
                else:
                    param.shape = tuple(max(a, b) for a, b in zip(param.shape, wanted))
            elif key == "dtype" and _np.dtype(value) != param.dtype:
                raise ValueError(f"Parameter '{full}' exists with dtype {param.dtype.name}, "
                                 f"now asked for {_np.dtype(value).name}")
        return param

    def get_constant(self, name, value=None):
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError(f"no constant '{full}' yet: give its value")
            param = Constant(full, value)
            self._params[full] = param
        return param

    def _add(self, param):
        existing = self._params.get(param.name)
        if existing is not None and existing is not param:
            raise ValueError(
                f"two different Parameters are both named '{param.name}'. Names must be "
                f"unique within a network: give the blocks different prefixes, or share the "
                f"Parameter itself (params=other.params).")
        self._params[param.name] = param

    def update(self, other):
        """Add the parameters of another dict (the same name must mean the same Parameter)."""
        for param in other.values():
            self._add(param)

    # ------------------------------------------------ whole-network actions
    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise every parameter (those with unknown shapes at the first forward)."""
        init = initializer.create(init)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)
            if verbose:
                state = "deferred" if param._data is None else "initialized"
                print(f"{param.name}: {state} with {param.init or init}, shape {param.shape}")

    def zero_grad(self):
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        for param in self.values():
            param.reset_ctx(ctx)

    reset_device = reset_ctx

    def list_ctx(self):
        return [cpu()]

    def setattr(self, name, value):
        """Set one attribute on every parameter, e.g. setattr('grad_req', 'null') to freeze."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename, strip_prefix=""):
        arrays = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ValueError(f"Prefix '{strip_prefix}' is to be stripped before saving, "
                                 f"but Parameter '{param.name}' does not start with it")
            arrays[param.name[len(strip_prefix):]] = param._reduce()
        save_arrays(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load values saved by `save()` or `export()` (keys `arg:NAME` / `aux:NAME`)."""
        loaded = read_headers(filename)        # arrays are read once checked
        arrays = {}
        for key, value in loaded.items():
            name = key.split(":", 1)[1] if key.startswith(("arg:", "aux:")) else key
            arrays[restore_prefix + name] = value
        load_by_name(self._params, arrays, filename, ctx, allow_missing, ignore_extra,
                     cast_dtype, dtype_source)


def load_by_name(params, arrays, filename, ctx=None, allow_missing=False, ignore_extra=False,
                 cast_dtype=False, dtype_source="current"):
    """Put `arrays` (key -> numpy) into `params` (key -> Parameter), with clear errors for
    keys missing on either side. Returns True if any shape or dtype changed."""
    if not allow_missing:
        missing = [k for k in params if k not in arrays]
        if missing:
            raise ValueError(
                f"Parameter(s) {missing} are missing in file '{filename}', which contains "
                f"{_summarize(arrays)}. Set allow_missing=True to keep their current values, "
                f"or load a file saved from the same architecture.")
    if not ignore_extra:
        extra = [k for k in arrays if k not in params]
        if extra:
            raise ValueError(
                f"Parameter(s) {extra} from file '{filename}' are not present in this network, "
                f"which has {_summarize(params)}. Set ignore_extra=True to skip them, or "
                f"rebuild the network with the same layers as the one that was saved.")
    for key, value in arrays.items():   # every shape and dtype, before reading any data
        if key in params:
            params[key]._check_loadable(value, cast_dtype, key)
    changed = False
    for key, value in arrays.items():
        if key in params:
            changed |= params[key]._load_init(value, ctx, cast_dtype, dtype_source, key=key)
    return changed


def _summarize(names, limit=8):
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}] ({len(names)} in all)"
