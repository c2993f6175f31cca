"""NDArray: a NumPy array that remembers how it was computed.

Every operation goes through `invoke`, which runs the op's NumPy forward from
the registry and, while `autograd.record()` is on, leaves a node on the tape.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import tape
from ..tape import _state
from ..base import MXNetError
from ..context import Context, current_context
from ..ops import OpError, get_op
from ..ops.elemwise import FUNCTION_ONLY, OPERATORS

DEFAULT_DTYPE = np.float32
py_slice = slice        # MXNet's name for Python's slice in this module

# MXNet's storage-type ids (as its C API numbers them). Only 'default' (dense) storage exists
# here: the sparse ids are names for what gluon.Parameter(stype=...) and tostype refuse.
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": _STORAGE_TYPE_UNDEFINED, "default": _STORAGE_TYPE_DEFAULT,
                           "row_sparse": _STORAGE_TYPE_ROW_SPARSE, "csr": _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {i: name for name, i in _STORAGE_TYPE_STR_TO_ID.items()}
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}     # MXNet's OpReqType numbers


class NDArray:
    """An n-dimensional array on the CPU (`straightdope.cpu()`), float32 by default."""
    __slots__ = ("_data", "_grad", "_grad_req", "_tape", "_ctx", "_grad_stamp", "_stale_stamp",
                 "__weakref__")
    __array_priority__ = 1000.0       # numpy scalars defer to our operators

    def __init__(self, data: np.ndarray, ctx: Context | None = None):
        self._data = data
        self._grad = None
        self._grad_req = "null"
        self._tape = None             # (TapeNode, output index) when recorded
        self._ctx = ctx
        self._grad_stamp = 0          # counts backward() writes into .grad (Trainer reads it)

    # ------------------------------------------------------------ properties
    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype.type

    @property
    def size(self):
        return self._data.size

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def context(self):
        return self._ctx or current_context()

    ctx = context
    device = context

    @property
    def stype(self):
        return "default"

    @property
    def T(self):
        return self.transpose()

    @property
    def grad(self):
        return self._grad

    @property
    def grad_req(self):
        return self._grad_req

    @property
    def _fresh_grad(self):
        """Has backward() written `.grad` since this was last set to False? (MXNet's
        Trainer asks this; ours reads `_grad_stamp`, which counts those writes.)"""
        # _stale_stamp is only set by the setter below (__init__ leaves it out: no cost)
        return self._grad_stamp > getattr(self, "_stale_stamp", 0)

    @_fresh_grad.setter
    def _fresh_grad(self, fresh):
        if fresh:
            self._grad_stamp += 1
        else:
            self._stale_stamp = self._grad_stamp

    # ------------------------------------------------------------ conversion
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the values."""
        return self._data.copy()

    def asscalar(self):
        """The one value, as a NumPy scalar of the array's dtype (np.float32 by default),
        as in MXNet; `item()` gives a Python number."""
        if self.size != 1:
            raise ValueError(f"asscalar() needs an array with one element, this one has shape "
                             f"{self.shape}")
        return self._data.reshape(-1)[0]

    def item(self):
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if not copy and dtype == self._data.dtype:
            return self
        return invoke("Cast", [self], {"dtype": dtype.name})

    def copy(self, order="C"):
        if order != "C":
            raise NotImplementedError(f"copy(order={order!r}): arrays are row-major "
                                      f"(order='C') only, as in MXNet")
        return invoke("_copy", [self], {})

    def as_np_ndarray(self):
        """This array as an `mx.np.ndarray` (NumPy's printing, dtype and comparisons),
        sharing its memory and its place on the autograd tape."""
        return self._as_class(NP_ARRAY)

    def as_nd_ndarray(self):
        """This array as a classic `mx.nd.NDArray`, sharing its memory and tape."""
        return self._as_class(NDArray)

    def _as_class(self, cls):
        if type(self) is cls:
            return self
        other = object.__new__(cls)
        for name in NDArray.__slots__:
            if name != "__weakref__" and hasattr(self, name):
                setattr(other, name, getattr(self, name))
        return other

    def tostype(self, stype):
        """A dense copy ('default'); straightdope has no sparse storage."""
        if stype != "default":
            raise MXNetError(f"tostype({stype!r}): straightdope stores every array densely "
                             f"(sparse storage is not part of it); use 'default'")
        return self.copy()

    def copyto(self, other):
        if isinstance(other, NDArray):
            other._data[...] = self._data
            return other
        if _hook is not None and not _state.recording:
            return invoke("_copy", [self], {})      # pushed: the threaded engine's copy
        return type(self)(self._data.copy(), other)

    def as_in_context(self, context):
        return self

    as_in_ctx = as_in_context
    to_device = as_in_context

    def detach(self):
        return type(self)(self._data, self._ctx)

    def wait_to_read(self):
        """Wait until this array's values are computed (under the threaded engine; under
        NaiveEngine they always are). An error of the op computing it is raised here."""
        if _hook is not None:
            _engine.wait_to_read(self)

    def tolist(self):
        return self._data.tolist()

    # --------------------------------------------------------------- autograd
    def attach_grad(self, grad_req="write", stype=None):
        """Ask for this array's gradient; backward() writes it into `.grad`."""
        if grad_req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be 'write', 'add' or 'null', got {grad_req!r}")
        # np.zeros (calloc): the pages are touched when a gradient is written, not here
        grad = type(self)(np.zeros(self.shape, self._data.dtype), self._ctx)
        tape.mark_variables([self], [grad], grad_req)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        tape.backward([self], head_gradients([self], [out_grad]),
                      retain_graph=retain_graph, train_mode=train_mode)

    # ------------------------------------------------------------ reshaping
    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = kwargs.pop("shape", shape)
        return invoke("reshape", [self], {"shape": tuple(shape), **kwargs})

    def reshape_like(self, rhs):
        return invoke("reshape_like", [self, rhs], {})

    def transpose(self, *args, axes=None):
        """x.transpose(1, 0), x.transpose((1, 0)) or x.transpose(axes=(1, 0)); no axes
        (or None) reverses them."""
        if args == (None,):
            args = ()
        if args:
            axes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        axes = tuple(axes or ())
        return invoke("transpose", [self], {"axes": tuple(axes)})

    def flatten(self, inplace=False):
        """(batch, everything else). inplace=True returns a view sharing this array's memory."""
        if inplace:
            return self._view((self.shape[0], -1) if self.ndim else (1, 1))
        return invoke("Flatten", [self], {})

    def expand_dims(self, axis, inplace=False):
        if inplace:
            ndim = self.ndim + 1
            if not -ndim <= axis < ndim:
                raise IndexError(f"expand_dims: axis {axis} is out of range for {ndim} "
                                 f"dimensions")
            axis %= ndim
            return self._view(self.shape[:axis] + (1,) + self.shape[axis:])
        return invoke("expand_dims", [self], {"axis": axis})

    def squeeze(self, axis=None, inplace=False):
        if inplace:
            return self._view(invoke("squeeze", [self], {"axis": axis}).shape)
        return invoke("squeeze", [self], {"axis": axis})

    def _view(self, shape):
        """The same memory under another shape (MXNet's inplace=True); not recorded."""
        if tape.is_recording() and tape.needs_grad(self):
            raise MXNetError("inplace=True makes a view that autograd cannot follow; leave "
                             "inplace out inside autograd.record()")
        return type(self)(self._data.reshape(shape), self._ctx)

    def broadcast_to(self, shape):
        return invoke("broadcast_to", [self], {"shape": tuple(shape)})

    def broadcast_like(self, other):
        return invoke("broadcast_like", [self, other], {})

    def zeros_like(self):
        return invoke("zeros_like", [self], {})

    def ones_like(self):
        return invoke("ones_like", [self], {})

    # -------------------------------------------------------------- indexing
    def __getitem__(self, key):
        """x[key] as in NumPy. Basic indexing (ints, slices, `...`, None) gives a *view*
        that shares memory with x, as in MXNet, when the elements it picks are contiguous
        (x[2], x[1:3], x[:, 0] of a column vector...); otherwise, and for advanced
        indexing (lists or arrays of indices), a copy."""
        key = _index_key(key)
        if not _is_basic(key):
            return self._gather(key)
        if _hook is not None and not _state.recording:
            later = _engine.basic_index_later(self, key if Ellipsis in key else key + (Ellipsis,))
            if later is not None:
                return later
        view = self._data[key if Ellipsis in key else key + (Ellipsis,)]  # `...`: never a scalar
        if not view.flags.c_contiguous:
            view = view.copy()
        if _state.recording and tape.needs_grad(self):
            return self._recorded_basic_index(key, view)
        return type(self)(view, self._ctx)

    def _recorded_basic_index(self, key, view):
        """x[key] on the tape: a `slice` op (its gradient is the registry's) reshaped to
        drop integer axes and add None axes; the result still shares x's memory."""
        axes_key = [k for k in key if k is not None]
        if Ellipsis in axes_key:
            at = axes_key.index(Ellipsis)
            axes_key[at:at + 1] = [slice(None)] * (self.ndim - len(axes_key) + 1)
        begin, end, step = [], [], []
        for k, n in zip(axes_key, self.shape):
            if isinstance(k, slice):
                begin.append(k.start if k.start is None else int(k.start))
                end.append(k.stop if k.stop is None else int(k.stop))
                step.append(k.step if k.step is None else int(k.step))
            else:
                k = int(k) % n
                begin.append(k); end.append(k + 1); step.append(None)
        out = invoke("slice", [self], {"begin": tuple(begin), "end": tuple(end),
                                       "step": tuple(step)})
        if out.shape != view.shape:      # reshape_like: a 0 in view.shape is a length here
            out = invoke("reshape_like", [out, NDArray(view)], {})
        out._data = view
        return out

    def _gather(self, key):
        """Advanced indexing: a copy. Its gradient adds the output gradient back at the
        positions it was read from (twice for an index given twice)."""
        # np.array, not np.ascontiguousarray: that one turns a 0-d result into shape (1,)
        out = type(self)(np.array(self._data[key], order="C"), self._ctx)
        if _state.recording and tape.needs_grad(self):
            source = self

            def backward_fn(out_grads):
                grad = np.zeros_like(source._data)
                np.add.at(grad, key, out_grads[0]._data)
                return [NDArray(grad, source._ctx)]
            tape.record_node([self], [out], backward_fn, "advanced indexing")
        return out

    def __setitem__(self, key, value):
        """x[key] = value, as in NumPy (value: a number, list, NumPy array or NDArray,
        broadcast to x[key]'s shape; writing into a view writes into its base)."""
        if _state.recording:
            if key is not None and key is not Ellipsis:
                _refuse_inplace_while_recording(self, value)
            elif isinstance(value, NDArray) and tape.needs_grad(value):
                _refuse_inplace_while_recording(value, value)   # x[...] = y loses y's tape
        key = _index_key(key)
        if isinstance(value, NDArray):
            value = value._data
        try:
            self._data[key] = value
        except (ValueError, TypeError):
            # MXNet also takes the same number of values in another shape, e.g. b[0] =
            # np.array([2.5]) or [2.5] into one element: NumPy refuses that, so reshape it here.
            target = self._data[key].shape
            value = np.asarray(value)
            if value.size != int(np.prod(target)):
                raise ValueError(f"cannot assign a value of shape {value.shape} to the "
                                 f"{target} elements picked by index {key}") from None
            self._data[key] = value.reshape(target)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slices, shape):
        """Do these slices (one per axis) pick one contiguous block of a C-ordered array
        of `shape`? (NumPy's `view.flags.c_contiguous` answers the same; __getitem__ reads
        that.) Going from the last axis to the first: once an axis keeps only part of its
        length, every axis before it may keep one element at most, and an axis keeping
        several elements must step forward by 1. Zero or one element is contiguous."""
        lengths = [len(range(*s.indices(n))) for s, n in zip(slices, shape)]
        if int(np.prod(lengths)) <= 1:
            return True
        partial = False
        for s, n, length in reversed(list(zip(slices, shape, lengths))):
            if length > 1 and (partial or s.indices(n)[2] != 1):
                return False
            partial = partial or length < n
        return True

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.size == 0:
            return False                # as in MXNet (and NumPy before 2.2)
        if self.size != 1:
            raise ValueError(f"The truth value of an NDArray with {self.size} elements is "
                             f"ambiguous; use (x > 0).sum() or similar")
        return bool(self._data.reshape(()))

    def __float__(self):
        return float(self.asscalar())

    def __format__(self, spec):
        """f"{loss:.5f}" works on a one-element array, like on a NumPy scalar."""
        if spec and self.size == 1:
            return format(self.asscalar(), spec)
        return format(str(self), spec)

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        return int(self.asscalar())

    __hash__ = object.__hash__

    # --------------------------------------------------------------- printing
    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape) or "1"
        body = str(self._data) if self.ndim else str(self._data.reshape(1))
        return f"\n{body}\n<NDArray {shape} @{self.context}>"

    __str__ = __repr__

    # ------------------------------------------------------------- in place
    def _inplace(self, name, other):
        if _state.recording:
            _refuse_inplace_while_recording(self, other)
        result = _binary(name, self, other)
        self._data[...] = result._data
        return self

    def __iadd__(self, other):
        return self._inplace("add", other)

    def __isub__(self, other):
        return self._inplace("sub", other)

    def __imul__(self, other):
        return self._inplace("mul", other)

    def __itruediv__(self, other):
        return self._inplace("truediv", other)

    def __neg__(self):
        return invoke("negative", [self], {})

    def __abs__(self):
        return invoke("abs", [self], {})


def head_gradients(heads, head_grads):
    """backward()'s gradients of its heads: as given, else d head / d head = 1 (a plain
    array: nd.ones_like would be an op call, ~5 us)."""
    return [g if g is not None else NDArray(np.ones(h.shape, h.dtype), h._ctx)
            for h, g in zip(heads, head_grads or [None] * len(heads))]


def _index_key(key):
    """An index as a tuple, NDArrays in it as NumPy arrays: bool ones stay masks (as in
    NumPy: x[x > 0] with a bool array), the others become integer indices."""
    if type(key) is not tuple:
        key = (key,)
    if any(isinstance(k, NDArray) for k in key):
        key = tuple((k._data if k._data.dtype == np.bool_ else k._data.astype(np.int64))
                    if isinstance(k, NDArray) else k for k in key)
    return key


def _is_basic(key):
    """Only ints, slices, `...` and None: NumPy's basic indexing, which can give a view."""
    for k in key:
        if not (type(k) is int or type(k) is slice or k is None or k is Ellipsis
                or isinstance(k, np.integer)):
            return False
    return True


def _refuse_inplace_while_recording(target, value):
    """MXNet cannot record a write into an existing array; neither can the tape here. Refuse
    it (rather than compute a wrong gradient) when autograd would have to follow it."""
    if tape.needs_grad(target) or (isinstance(value, NDArray) and tape.needs_grad(value)):
        raise MXNetError(
            "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
            "autograd: the tape cannot follow a write into an existing array. Build a new "
            "array instead (y = x + 1, nd.where(mask, a, b), nd.concat(...)), or do the "
            "write outside autograd.record().")


def _binary(name, lhs, rhs, reflected=False):
    """`x OP y` with arrays or Python numbers, looked up in the OPERATORS table."""
    array_op, scalar_op, rscalar_op = _OPERATOR_OPS[name]
    if isinstance(rhs, NDArray):
        return run(array_op, [rhs, lhs] if reflected else [lhs, rhs], _NO_ATTRS)
    if isinstance(rhs, np.ndarray):
        other = NDArray(rhs.astype(lhs._data.dtype, copy=False))
        return run(array_op, [other, lhs] if reflected else [lhs, other], _NO_ATTRS)
    if isinstance(rhs, (int, float, np.number, bool)):
        op = rscalar_op if reflected else scalar_op
        return run(op, [lhs], op.cached_attrs({"scalar": float(rhs)}))
    return NotImplemented


# The OPERATORS table's ops looked up once: `x + y` is the most frequent call there is.
_OPERATOR_OPS = {name: tuple(get_op(n) for n in ops) for name, ops in OPERATORS.items()}
_NO_ATTRS = {}      # the array-array ops (broadcast_add, ...) have no attributes
assert not any(ops[0].attrs for ops in _OPERATOR_OPS.values())


def _install_operators():
    for name in OPERATORS:
        if name in FUNCTION_ONLY:
            continue
        setattr(NDArray, f"__{name}__", lambda self, o, _n=name: _binary(_n, self, o))
        if name in ("add", "sub", "mul", "truediv", "pow", "mod"):
            setattr(NDArray, f"__r{name}__",
                    lambda self, o, _n=name: _binary(_n, self, o, reflected=True))


_install_operators()


def invoke(op, inputs, attrs, parsed=False):
    """Run one op (an Op or its name) now: NumPy forward, running-stat updates, and a tape
    node when recording. `attrs` as the user gave them, or already parsed."""
    if type(op) is str:
        op = get_op(op)
    return run(op, inputs, attrs if parsed else op.cached_attrs(attrs))


def run(op, inputs, attrs, _now=False):
    """invoke() with the Op and its parsed attributes: the hot path of imperative mode
    (every `nd.` function ends here), so it stays lean. `_hook` is the threaded engine's
    push or the profiler's timer when one is on (engine.py); _now: run here regardless."""
    if _hook is not None and not _now:
        return _hook(op, inputs, attrs)
    arrays = [x._data for x in inputs]
    if op.strict_dtype:         # layers whose data meets their parameters (dtype_rule)
        dtype = arrays[0].dtype
        for a in arrays:        # `is` first: equal dtypes are nearly always the same object
            if a.dtype is not dtype and a.dtype != dtype:
                op.out_dtype(attrs, [a.dtype for a in arrays], where=op.name)   # raises
    try:
        if op.needs_train_flag:
            is_train = _state.training
            results = op.forward(attrs, *arrays, is_train=is_train)
        else:
            is_train = False
            results = op.forward(attrs, *arrays)
    except OpError:
        raise
    except (ValueError, IndexError, TypeError) as err:
        # Shape inference explains a failure better than NumPy's message does.
        shapes = [a.shape for a in arrays]
        op.shapes(attrs, shapes)
        raise OpError(f"{op.name} failed on inputs of shapes {shapes}: {err}") from None
    ctx = inputs[0]._ctx if inputs else None
    cls = NDArray                   # mx.np.ndarray if any input is one (inlined: hot path)
    for x in inputs:
        if type(x) is not NDArray:
            cls = type(x)
            break
    if type(results) is not tuple:          # one output: the common case, kept short
        output = cls(results, ctx)
        if _state.recording:
            _record(op, attrs, inputs, [output], is_train)
        return output
    outputs = [cls(r, ctx) for r in results]
    for out_index, in_index in op.aux_writeback.items():
        inputs[in_index]._data[...] = results[out_index]
    if _state.recording:
        _record(op, attrs, inputs, outputs, is_train)
    if len(outputs) == 1:
        return outputs[0]
    visible = outputs[:op.visible_count(attrs)]
    return visible[0] if len(visible) == 1 else visible


def _record(op, attrs, inputs, outputs, is_train):
    """Leave a tape node when an input needs a gradient: the op's own gradient rule
    with F = nd is how backward() gets from the outputs' gradients to the inputs'."""
    for x in inputs:
        if x._grad_req != "null" or x._tape is not None:
            break
    else:
        return

    def backward_fn(out_grads):
        return op.backward(F, attrs, inputs, outputs, out_grads, is_train=is_train)
    tape.record_node(inputs, outputs, backward_fn, op.name, op=(op, attrs))


# The `nd` namespace, which gradient rules run with (F = nd): nd/__init__.py builds it from
# the registry on top of this module, so it puts itself here when imported.
F = None
# `mx.np.ndarray`, the subclass numpy/multiarray.py defines above this module and puts here
NP_ARRAY = None
_hook = None        # set by engine._install: None means NaiveEngine with no profiler

from .. import engine as _engine  # noqa: E402  (NDArray defers to the engine, which
_engine.attach(sys.modules[__name__])  # works on NDArray without importing this module)
