"""`straightdope.nd`: imperative arrays. Every op of the registry is a function here.

    >>> import straightdope as mx
    >>> x = mx.nd.ones((2, 3))
    >>> mx.nd.relu(x - 2)          # runs at once, like NumPy

The functions below the creation helpers are *generated* from the op registry
(`_make_function`), exactly as `straightdope.sym`'s are: one op, two worlds.
"""
from __future__ import annotations

import numbers as _numbers
import operator as _operator
import os as _os
import sys as _sys

import numpy as _np

from .. import util as _util
from ..base import MXNetError as _MXNetError
from ..context import Context, check_context, cpu, current_context  # noqa: F401
from ..ops import OPS as _OPS, OpError
from ..ops.registry import bind_call as _bind_call, leading_tensors as _leading_tensors
from ..serialization import load_arrays as _load_arrays, save_arrays as _save_arrays
from .ndarray import DEFAULT_DTYPE, NDArray, invoke, run as _run
from . import random  # noqa: F401
from .. import engine as _engine


def _dtype(dtype, default=DEFAULT_DTYPE):
    return _np.dtype(default if dtype is None else dtype)


def array(source_array, ctx=None, dtype=None, device=None):
    """An NDArray from a list, NumPy array or NDArray (float32 unless dtype says otherwise)."""
    check_context(ctx or device)
    if isinstance(source_array, NDArray):
        data = source_array._data
        return NDArray(data.astype(_dtype(dtype, data.dtype)), ctx)
    data = _np.asarray(source_array)
    if data.dtype == object:
        raise TypeError(f"cannot make an NDArray from {type(source_array).__name__} "
                        f"holding non-numbers")
    return NDArray(_np.array(data, dtype=_dtype(dtype)), ctx)


def _shape(shape):
    """A shape as a tuple of ints: from an int, a tuple, or NumPy integers (x.shape[0])."""
    if isinstance(shape, _numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _created(data, ctx, out):
    """A new array, or `out` filled with it (MXNet's out= on creation functions)."""
    if out is None:
        return NDArray(data, ctx)
    out._data[...] = data
    return out


def zeros(shape, ctx=None, dtype=None, out=None, **kwargs):
    check_context(ctx)
    return _created(_np.zeros(_shape(shape), _dtype(dtype)), ctx, out)


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    check_context(ctx)
    return _created(_np.ones(_shape(shape), _dtype(dtype)), ctx, out)


def full(shape, val, ctx=None, dtype=None, out=None, **kwargs):
    check_context(ctx)
    return _created(_np.full(_shape(shape), val, _dtype(dtype)), ctx, out)


def empty(shape, ctx=None, dtype=None):
    return zeros(shape, ctx, dtype)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs):
    """start, start + step, ... below stop, each `repeat` times, computed as MXNet's
    kernel does: start + i * step in `dtype` (float32 by default), start and step cast to
    it first (so arange(1.3, 10, 1.3, dtype='int32') counts 1, 2, 3, ... as NumPy does)."""
    if stop is None:
        start, stop = 0, start
    if step == 0 or repeat < 1:
        raise ValueError(f"arange: step must not be 0 and repeat must be positive, got "
                         f"step={step}, repeat={repeat}")
    from ..ops.shape import range_values
    count = int(_np.ceil((stop - start) / step))
    count = count if count > 0 else 0       # (`max` here is nd.max)
    return NDArray(range_values(start, step, repeat, count * repeat, _dtype(dtype)), ctx)


def eye(N, M=0, k=0, ctx=None, dtype=None):
    return NDArray(_np.eye(N, M or None, k, dtype=_dtype(dtype)), ctx)


def stack(*arrays, axis=0, **kwargs):
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = arrays[0]
    return invoke("concat", [a.expand_dims(axis) for a in arrays], {"dim": axis})


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """`num` evenly spaced values from start to stop (stop left out if not endpoint)."""
    check_context(ctx)
    values = _np.linspace(start, stop, int(num), endpoint=endpoint)
    return NDArray(values.astype(_dtype(dtype)), ctx)


def from_numpy(ndarray, zero_copy=True):
    """An NDArray over a NumPy array. With zero_copy it shares the array's memory (which
    must then be C-contiguous) and, as in MXNet, takes it over: the NumPy array becomes
    read-only, so changes go through the NDArray (and show in both)."""
    if not zero_copy:
        return NDArray(_np.array(ndarray, copy=True))
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("from_numpy(zero_copy=True) needs a C-contiguous array; pass "
                         "numpy.ascontiguousarray(x) or zero_copy=False")
    try:
        ndarray.flags.writeable = True      # again, if an earlier from_numpy took it over
    except ValueError:
        raise ValueError("from_numpy(zero_copy=True): this NumPy array's memory is read-only "
                         "(e.g. np.frombuffer of bytes), so an NDArray cannot share it; pass "
                         "zero_copy=False for a copy") from None
    shared = ndarray.view()                 # made while writable, so it stays writable
    ndarray.flags.writeable = False
    return NDArray(shared)


def concatenate(arrays, axis=0, always_copy=True):
    """Join arrays along an existing axis (MXNet's older name for concat)."""
    arrays = list(arrays)
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return invoke("concat", arrays, {"dim": axis})


def moveaxis(tensor, source, destination):
    """Move axis `source` to position `destination` (or several: lists of the same length);
    the other axes keep their order, as NumPy's moveaxis."""
    source = _axis_list(source, tensor.ndim, "source")
    destination = _axis_list(destination, tensor.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must "
                         f"name as many axes")
    order = [a for a in range(tensor.ndim) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return invoke("transpose", [tensor], {"axes": tuple(order)})


def _axis_list(axes, ndim, name):
    """Axes (an int or a sequence) as a list of non-negative ints, each once. A bad axis
    raises NumPy's AxisError, which is both an IndexError and a ValueError."""
    axes = [axes] if isinstance(axes, _numbers.Integral) else list(axes)
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise _np.exceptions.AxisError(f"moveaxis: {name} axis {axis} is out of range "
                                           f"for an array with {ndim} dimensions")
    axes = [int(a) % ndim for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"moveaxis: {name} names an axis twice: {axes}")
    return axes


def onehot_encode(indices, out):
    """Fill `out` (batch, classes) with the one-hot rows of `indices` (MXNet's older API)."""
    out[:] = invoke("one_hot", [indices], {"depth": out.shape[1], "dtype": out._data.dtype.name})
    return out


def fill_element_0index(lhs, mhs, rhs, out=None):
    """A copy of `lhs` (2-D) with lhs[i, rhs[i]] = mhs[i] for each row i."""
    result = lhs._data.copy()
    rows = _np.arange(result.shape[0])
    result[rows, rhs._data.astype(_np.int64)] = mhs._data
    return _created(result, lhs._ctx, out)


def reset_arrays(*data, num_arrays=None):
    """Set every array of `data` to zero, in place (MXNet's `reset_arrays`, which
    `ParameterDict.zero_grad` uses for many gradients at once). `num_arrays` must count
    them, as MXNet requires. Like MXNet's op it has no outputs: it returns []."""
    if num_arrays is None:
        raise OpError("reset_arrays: attribute 'num_arrays' is required (the number of arrays)")
    if num_arrays != len(data):
        raise OpError(f"reset_arrays: num_arrays={num_arrays} but {len(data)} array(s) were given")
    for k, x in enumerate(data):
        if not isinstance(x, NDArray):
            raise OpError(f"reset_arrays: argument {k} must be an NDArray, got "
                          f"{type(x).__name__}")
        x._data[...] = 0        # (under the threaded engine this waits for x's readers)
    return []


def waitall():
    """Wait until every op pushed to the engine has run (at once under NaiveEngine);
    raises the first error of an op that no read has raised yet."""
    _engine.waitall()


def save(fname, data, format=None):
    """Save an NDArray, a list or a dict of them, atomically and without pickle.

    format='mxnet' writes MXNet's binary file (MXNet's nd.load reads it; under NumPy shape
    semantics, or with 0-d arrays, as MXNet writes it under ``mx.np_shape()``); 'npz' writes
    NumPy's .npz. The default is 'mxnet' for a name ending in ``.params`` (MXNet's own
    convention), else 'npz'. Under NumPy shape semantics an .npz file says so: see load."""
    if isinstance(data, NDArray):
        data = [data]
    if format is None:
        format = "mxnet" if _os.fspath(fname).endswith(".params") else "npz"
    if format == "mxnet":
        from .. import mxnet_format
        if isinstance(data, dict):
            mxnet_format.save(fname, {k: v.asnumpy() for k, v in data.items()})
        else:
            mxnet_format.save(fname, [v.asnumpy() for v in data])
        return
    if format != "npz":
        raise ValueError(f"nd.save({fname!r}): format must be 'mxnet' or 'npz', got {format!r}")
    mode = "np-" if _util.is_np_shape() else ""
    if isinstance(data, dict):
        arrays = {f"{mode}dict:{k}": v.asnumpy() for k, v in data.items()}
    else:
        arrays = {f"{mode}list:{i:06d}": v.asnumpy() for i, v in enumerate(data)}
    _save_arrays(fname, arrays)


def load(fname):
    """Load what `save` wrote: a list or a dict of NDArrays. An MXNet file (its nd.save,
    save_parameters or export) loads too, with its names as they are.

    As in MXNet, a 0 in a shape means "unknown" without NumPy shape semantics and an
    empty axis with them; so a file holding 0-d or empty arrays is only read under the
    semantics it was saved with (other files load under either)."""
    from .. import mxnet_format
    if mxnet_format.is_mxnet_file(fname):
        arrays, names = mxnet_format.load(fname)
        if not _util.is_np_shape() and any(a.ndim == 0 for a in arrays):
            # Only MXNet's np_shape layout holds 0-d arrays, and MXNet reads it only so.
            raise _MXNetError(
                f"nd.load({fname!r}): the file was saved with NumPy shape semantics and "
                f"holds 0-d arrays; load it under them: `with mx.np_shape(True): nd.load(...)`.")
        arrays = [NDArray(a) for a in arrays]
        return dict(zip(names, arrays)) if names else arrays
    arrays = _load_arrays(fname)
    _check_shape_semantics(fname, arrays)
    if arrays and all(k.split(":", 1)[0] in ("list", "np-list") for k in arrays):
        return [NDArray(arrays[k]) for k in sorted(arrays)]
    return {k.split(":", 1)[-1]: NDArray(v) for k, v in arrays.items()}


def _check_shape_semantics(fname, arrays):
    saved_np = any(k.startswith(("np-list:", "np-dict:")) for k in arrays)
    saved_legacy = any(k.startswith(("list:", "dict:")) for k in arrays)
    ambiguous = [k.split(":", 1)[-1] for k, v in arrays.items() if v.ndim == 0 or 0 in v.shape]
    if not ambiguous or _util.is_np_shape() == saved_np or not (saved_np or saved_legacy):
        return
    then, now = ("with", "without") if saved_np else ("without", "with")
    raise _MXNetError(
        f"nd.load({fname!r}): the file was saved {then} NumPy shape semantics and holds "
        f"0-d or empty arrays ({', '.join(ambiguous[:3])}), whose shapes mean something "
        f"else {now} them. Load it under the same semantics: `with mx.np_shape("
        f"{saved_np}): nd.load(...)`.")


def load_frombuffer(buf):
    """Load from the bytes of a file `save` wrote (or an MXNet one), e.g. read from a
    socket or a zip; the same checks as `load`."""
    import os
    import tempfile
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_frombuffer needs bytes, got {type(buf).__name__}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "buffer")
        with open(path, "wb") as f:
            f.write(buf)
        return load(path)


# nd.CachedOp (MXNet's name for a Symbol compiled once, called on arrays) is attached by
# executor.py, above the compiled CachedOp it wraps (as Symbol.bind is).


def _is_ndarray(x):
    return isinstance(x, NDArray)


def _make_function(op):
    """An `nd.<op>` function: bind the call, run the op now.

    Binding a call is slow Python, so each call spelling is bound once and
    remembered: a training loop calls the same ops the same way. `by_keywords` keys
    on the keyword arguments (arrays all positional, attributes by keyword, the
    common case); `by_position` also on attributes given positionally."""
    by_keywords: dict = {}      # keyword items -> (attrs, number of arrays)
    by_position: dict = {}      # (positional attributes, keyword items) -> same
    array_keywords: dict = {}   # attribute keyword items -> (attrs, array names)
    inputs_by_name = op._input_set

    def function(*args, **kwargs):
        try:
            attrs, count = by_keywords[tuple(kwargs.items())]
            if len(args) == count:
                for x in args:
                    if type(x) is not NDArray:
                        break
                else:
                    return _run(op, args, attrs)
        except (KeyError, TypeError):      # new spelling, or an unhashable value
            pass
        try:
            count = _leading_tensors(op, args, _is_ndarray)
            attrs, arrays = by_position[(args[count:], tuple(kwargs.items()))]
            if arrays == count and None not in args[:count]:
                return _run(op, args[:count], attrs)
        except (KeyError, TypeError):
            pass
        if kwargs and not inputs_by_name.isdisjoint(kwargs):
            # some arrays by keyword: nd.FullyConnected(x, w, bias=b, num_hidden=4)
            try:
                key = tuple([kv for kv in kwargs.items() if kv[0] not in inputs_by_name])
                attrs, names = array_keywords[key]
                arrays = args + tuple([kwargs.get(n) for n in names[len(args):]])
                if len(kwargs) == len(key) + len(names) - len(args):
                    for x in arrays:
                        if type(x) is not NDArray:
                            break
                    else:
                        return _run(op, arrays, attrs)
            except (KeyError, TypeError):
                pass
        return _bind_and_invoke(args, kwargs)

    def _bind_and_invoke(args, kwargs):
        out = kwargs.get("out")
        inputs, attrs, _ = _bind_call(op, args, kwargs, _is_ndarray)
        names = op.input_names(attrs, len(inputs))
        for name, x in zip(names, inputs):
            if x is None:
                raise OpError(f"nd.{op.name}: the array argument '{name}' is missing")
        if out is None and not op.variadic:
            try:
                _remember(args, kwargs, attrs, names)
            except TypeError:       # unhashable value (a list): no fast path for it
                pass
        result = _run(op, inputs, attrs)
        if out is not None:
            out._data[...] = result._data
            return out
        return result

    def _remember(args, kwargs, attrs, names):
        if not inputs_by_name.isdisjoint(kwargs):
            if len(args) <= len(names):
                key = tuple(kv for kv in kwargs.items() if kv[0] not in inputs_by_name)
                array_keywords[key] = (attrs, tuple(names))
        elif len(args) == len(names):
            by_keywords[tuple(kwargs.items())] = (attrs, len(names))
        elif len(args) > len(names):
            count = _leading_tensors(op, args, _is_ndarray)
            if count == len(names):
                by_position[(args[count:], tuple(kwargs.items()))] = (attrs, count)

    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = op.doc
    return function


def _scalar_or_array(name):
    from .ndarray import _binary

    def function(lhs, rhs):
        if isinstance(lhs, NDArray):
            return _binary(name, lhs, rhs)
        if isinstance(rhs, NDArray):
            return _binary(name, rhs, lhs, reflected=True)
        numbers = getattr(_operator, name, None) or getattr(_np, name)   # two numbers
        return array(numbers(lhs, rhs))
    function.__name__ = name
    return function


for _name, _op in _OPS.items():
    globals()[_name] = _make_function(_op)
# the linear-algebra ops `_linalg_gelqf` as `nd.linalg.gelqf`, as in MXNet
linalg = __import__("types").SimpleNamespace(**{
    _name[len("_linalg_"):]: globals()[_name] for _name in _OPS if _name.startswith("_linalg_")})
for _name in ("add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
              "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal",
              "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor"):
    _key = {"subtract": "sub", "multiply": "mul", "divide": "truediv", "power": "pow",
            "true_divide": "truediv", "modulo": "mod", "equal": "eq", "not_equal": "ne",
            "greater": "gt", "greater_equal": "ge", "lesser": "lt",
            "lesser_equal": "le"}.get(_name, _name)
    globals()[_name] = _scalar_or_array(_key)


def zeros_like(data, **kwargs):
    return invoke("zeros_like", [data], {})


def ones_like(data, **kwargs):
    return invoke("ones_like", [data], {})


def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U(low, high) (MXNet's `nd.uniform`, `nd.random_uniform`)."""
    return random.uniform(low, high, shape, dtype=dtype, ctx=ctx, out=out)


def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2) (MXNet's `nd.normal`, `nd.random_normal`)."""
    return random.normal(loc, scale, shape, dtype=dtype, ctx=ctx, out=out)


random_uniform, random_normal = uniform, normal
sample_uniform, sample_normal = random.sample_uniform, random.sample_normal


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split as NumPy's np.split: an int gives that many equal parts, a tuple the split
    points, e.g. (1, 3) gives ary[:1], ary[1:3], ary[3:] along `axis`."""
    attrs = {"axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, _numbers.Integral):
        attrs["sections"] = int(indices_or_sections)
    else:
        attrs["indices"] = (0,) + tuple(int(i) for i in indices_or_sections)
    return invoke("_split_v2", [ary], attrs)


def histogram(a, bins=10, range=None):  # noqa: A002
    """(counts, bin edges) of a's elements: `bins` equal bins over `range` (a's min to
    max when None), or the edges `bins` (an NDArray): the `_histogram` op, as np's."""
    if isinstance(bins, NDArray):
        return invoke("_histogram", [a, bins], {})
    if not isinstance(bins, _numbers.Integral):
        raise ValueError("histogram: bins must be an integer or an NDArray of edges, got "
                         f"{type(bins).__name__}")
    span = "" if range is None else repr(tuple(float(r) for r in range))
    return invoke("_histogram", [a], {"bin_cnt": int(bins), "range": span})

# NDArray methods that are just ops, e.g. x.sum(axis=1), x.relu(), x.exp() (Symbol has
# them too: symbol/__init__.py reads this list)
FLUENT_METHODS = (
    "sum", "mean", "max", "min", "prod", "norm", "argmax", "argmin",
    "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "square",
    "reciprocal", "abs", "sign", "sin", "cos", "tan", "sinh", "cosh", "arcsin", "arccos",
    "arctan", "arcsinh", "arccosh", "arctanh", "round", "rint", "floor", "ceil", "trunc",
    "fix", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "clip", "pick", "one_hot",
    "split", "slice", "slice_axis", "take", "dot", "broadcast_axes", "degrees", "radians",
    "rcbrt", "softmin", "argmax_channel", "shape_array", "size_array", "nansum", "nanprod",
    "flip", "sort", "argsort", "topk", "tile", "repeat", "pad", "swapaxes", "slice_like",
    "split_v2")
for _name in FLUENT_METHODS:
    if _name not in globals():
        continue

    def _method(self, *args, _f=globals()[_name], **kwargs):
        return _f(self, *args, **kwargs)
    _method.__name__ = _name
    setattr(NDArray, _name, _method)


from . import contrib  # noqa: E402,F401  (foreach, while_loop, cond)
contrib._contrib_ops(vars(contrib), globals())     # _contrib_allclose: contrib.allclose
from . import image  # noqa: E402
contrib._contrib_ops(vars(image), globals(), "_image_")  # _image_normalize: image.normalize
from . import _internal  # noqa: E402  (the ops named _xxx, as MXNet's nd._internal)
vars(_internal).update({_name: globals()[_name] for _name in _OPS if _name.startswith("_")})
from . import ndarray as _ndarray  # noqa: E402
_ndarray.F = _sys.modules[__name__]      # gradient rules run with F = nd


def __getattr__(attr):
    # F.np / F.npx inside hybrid_forward(self, F, x): the NumPy-style front ends, which
    # dispatch on their arguments (compute on NDArrays, trace on Symbols).
    if attr in ("np", "npx"):
        import importlib
        return importlib.import_module({"np": "straightdope.numpy",
                                        "npx": "straightdope.numpy_extension"}[attr])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
