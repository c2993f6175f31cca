"""Constant folding of the shape arithmetic that PyTorch and tf2onnx write into ONNX files.

`x.view(x.size(0), -1)` exports as Shape -> Gather -> Unsqueeze -> Concat -> Reshape:
integer arithmetic on shapes, which our graphs do not compute. At import the shapes are
known (inferred from the graph inputs' declared shapes), except the symbolic dims of
the graph inputs, such as a dynamic batch. So these nodes are computed here, once, with
NumPy: each value is a constant, or an array of integers some of which are `Dim`s, dims
not known until run time. A Reshape to such a shape becomes MXNet's reshape codes (0:
copy the input's dim); anything else that needs a `Dim`'s value is refused by name.
"""
from __future__ import annotations

import math

import numpy as np

FOLDS: dict = {}
MAX_EXPAND_ELEMENTS = 2 ** 28     # a shape in the file may not ask for more than this
# ONNX's TensorProto element types that Cast may name
_CAST = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool",
         10: "float16", 11: "float64"}


def folds(*op_types):
    """Register a folder: fn(b, inputs) -> array (inputs: arrays, None for empty ones)."""
    def register(fn):
        for name in op_types:
            FOLDS[name] = fn
        return fn
    return register


class Dim:
    """Axis `axis` of the value `name`, whose size is known only at run time."""
    __slots__ = ("name", "axis")

    def __init__(self, name, axis):
        self.name, self.axis = name, axis

    def __eq__(self, other):
        return isinstance(other, Dim) and (self.name, self.axis) == (other.name, other.axis)

    def __hash__(self):
        return hash((self.name, self.axis))

    def __repr__(self):
        return f"{self.name}.shape[{self.axis}]"


def fold(b, node) -> bool:
    """Compute `node` now if every input is known here (a constant or a shape); the
    result goes to b.constants, or b.dims if it holds dims known only at run time."""
    fn = FOLDS.get(node.op_type)
    if fn is None or (node.op_type == "ConstantOfShape" and node.input[0] in b.dims):
        return False                  # the shape of a value at run time: zeros_like
    if node.op_type == "Shape":
        if node.input[0] in b.constants:
            inputs = [b.constants[node.input[0]]]
        else:
            inputs = [None]
    else:
        inputs = []
        for name in node.input:
            if name and name not in b.constants and name not in b.dims:
                return False
            inputs.append(b.dims.get(name, b.constants.get(name)) if name else None)
    try:
        value = np.asarray(fn(b, inputs))
    except TypeError as err:          # arithmetic on a Dim: its value is not known here
        b.fail(f"computes with a shape not known at import ({err}); declare the graph "
               f"inputs' dims")
    if value.dtype == object:
        if any(isinstance(v, Dim) for v in value.reshape(-1)):
            b.dims[node.output[0]] = value
            return True
        value = value.astype(np.int64)
    b.constants[node.output[0]] = value
    return True


def _limit(b, count, what):
    if not 0 <= count <= MAX_EXPAND_ELEMENTS:
        b.fail(f"{what} would hold {count} elements (at most {MAX_EXPAND_ELEMENTS} are made)")


def _ints(array, b, what):
    array = np.asarray(array)
    if array.dtype.kind not in "iu":
        b.fail(f"{what} must be integers, got {array.dtype}")
    return [int(v) for v in array.reshape(-1)]


@folds("Shape")
def _shape(b, inputs):
    """The dims known here as numbers, the others as Dims. Also remembered whole, for
    Expand/Reshape/ConstantOfShape of another value's shape (the *_like ops)."""
    if inputs[0] is not None:
        dims = list(inputs[0].shape)
    else:
        shape = b.shape(0)
        if shape is None:
            b.fail("the rank of its input is not known here; declare the graph inputs' "
                   "shapes")
        name = b.node.input[0]
        dims = [Dim(name, a) if d is None else d for a, d in enumerate(shape)]
        b.shape_of[b.node.output[0]] = b.tensor(0)
    start, end = b.attr("start", 0), b.attr("end")
    array = np.empty(len(dims), dtype=object)
    array[:] = dims
    return array[start:end]


@folds("Gather")
def _gather(b, inputs):
    data, index = inputs
    axis = b.attr("axis", 0)
    if data.ndim == 0 or not -data.ndim <= axis < data.ndim:
        b.fail(f"axis {axis} is not an axis of its {data.ndim}-D data")
    index = np.asarray(index)
    n = data.shape[axis]
    if index.dtype.kind not in "iu" or ((index < -n) | (index >= n)).any():
        b.fail(f"indices {index.tolist()} are not integers in [-{n}, {n})")
    return np.take(data, index, axis=axis)


@folds("Unsqueeze")
def _unsqueeze(b, inputs):
    data, axes = inputs
    axes = _ints(axes, b, "axes")
    rank = data.ndim + len(axes)
    if any(not -rank <= a < rank for a in axes):
        b.fail(f"axes {axes} are outside the {rank} axes of its output")
    return np.expand_dims(data, tuple(sorted(a % rank for a in axes)))


@folds("Squeeze")
def _squeeze(b, inputs):
    data, axes = inputs[0], inputs[1] if len(inputs) > 1 else None
    if axes is None:
        return np.squeeze(data)
    axes = _ints(axes, b, "axes")
    if any(not -data.ndim <= a < data.ndim or data.shape[a] != 1 for a in axes):
        b.fail(f"axes {axes} of shape {data.shape} are not of length 1")
    return np.squeeze(data, tuple(a % data.ndim for a in axes))


@folds("Concat")
def _concat(b, inputs):
    axis = b.attr("axis")
    rank = inputs[0].ndim
    if rank == 0 or not -rank <= axis < rank:
        b.fail(f"axis {axis} is not an axis of its {rank}-D inputs")
    return np.concatenate(inputs, axis=axis)


@folds("Cast")
def _cast(b, inputs):
    data, to = inputs[0], b.attr("to")
    if to not in _CAST:
        b.fail(f"cast to ONNX type {to} is not supported")
    if data.dtype == object:                 # dims are whole numbers in any type
        return data
    return data.astype(_CAST[to])


@folds("Identity")
def _identity(b, inputs):
    return inputs[0]


@folds("Slice")
def _slice(b, inputs):
    data, starts, ends = inputs[:3]
    starts, ends = _ints(starts, b, "starts"), _ints(ends, b, "ends")
    axes = _ints(inputs[3], b, "axes") if len(inputs) > 3 and inputs[3] is not None \
        else list(range(len(starts)))
    steps = _ints(inputs[4], b, "steps") if len(inputs) > 4 and inputs[4] is not None \
        else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps) or 0 in steps \
            or any(not -data.ndim <= a < data.ndim for a in axes):
        b.fail(f"starts {starts}, ends {ends}, axes {axes}, steps {steps} do not fit its "
               f"{data.ndim}-D data")
    index = [slice(None)] * data.ndim
    for a, s, e, t in zip(axes, starts, ends, steps):
        index[a % data.ndim] = slice(s, e, t)
    return data[tuple(index)]


_ARITHMETIC = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


@folds("Add", "Sub", "Mul", "Div")
def _arithmetic(b, inputs):
    left, right = inputs
    for value in inputs:
        _limit(b, value.size, "an input")
    if b.node.op_type != "Div":
        return _ARITHMETIC[b.node.op_type](left, right)
    if np.asarray(left).dtype.kind in "iu" and np.asarray(right).dtype.kind in "iu":
        if (np.asarray(right) == 0).any():
            b.fail("divides an integer by 0")
        return np.trunc(np.divide(left, right)).astype(np.result_type(left, right))
    return np.divide(left, right)


@folds("Range")
def _range(b, inputs):
    start, limit, delta = (np.asarray(v).reshape(-1) for v in inputs)
    if not start.size == limit.size == delta.size == 1 or delta[0] == 0:
        b.fail("start, limit and delta must be single numbers, delta not 0")
    count = max(math.ceil((limit[0] - start[0]) / delta[0]), 0)
    _limit(b, count, "the range")
    return (start[0] + np.arange(count) * delta[0]).astype(start.dtype)


@folds("ConstantOfShape")
def _constant_of_shape(b, inputs):
    shape = inputs[0]
    shape = _ints(shape, b, "the shape")
    if any(d < 0 for d in shape):
        b.fail(f"shape {shape} has a negative dim")
    _limit(b, math.prod(shape), f"shape {shape}")
    value = b.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return np.full(shape, value[0], dtype=value.dtype)


@folds("ReduceProd", "ReduceSum")
def _reduce(b, inputs):
    data = inputs[0]
    axes = inputs[1] if len(inputs) > 1 and inputs[1] is not None else b.attr("axes")
    axes = None if axes is None or not len(axes) else tuple(
        a % max(data.ndim, 1) for a in _ints(axes, b, "axes"))
    if axes is None and b.attr("noop_with_empty_axes", 0):
        return data
    reduce = np.prod if b.node.op_type == "ReduceProd" else np.sum
    return reduce(data, axis=axes, keepdims=bool(b.attr("keepdims", 1)))
