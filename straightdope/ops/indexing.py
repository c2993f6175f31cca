"""Gathering by index: `take` (rows, or slices along any axis) and `batch_take`.

    nd.take(embeddings, nd.array([3, 0, 3]))        # rows 3, 0 and 3
    nd.batch_take(scores, labels)                   # scores[i, labels[i]] for each i

Indices are floats or ints; out-of-range ones are clipped ('clip') or wrap around
('wrap'), as in MXNet. take's gradient scatters the output gradient back, adding where
an index repeats; batch_take has none, as in MXNet (pick is its differentiable twin). These ops have no Numba kernel yet: compiled graphs run them with
NumPy between compiled segments (`placement="host"`).
"""
import numpy as np

from .registry import (Choice, Int, OpError, OpIndexError, Shape, alias, axis_in,
                       like_input, refuse_empty_gather, register)


def _indices(attrs, size, indices):
    idx = indices.astype(np.int64)
    if attrs.get("mode", "clip") == "wrap":
        return np.mod(idx, size)
    if attrs.get("mode") == "raise" and ((idx < 0) | (idx >= size)).any():
        raise OpError(f"take: an index is out of range for an axis of size {size}")
    return np.clip(idx, 0, size - 1)


def _take_forward(attrs, a, indices):
    axis = axis_in("take", attrs["axis"], a.shape)
    return np.take(a, _indices(attrs, a.shape[axis], indices), axis=axis)


def _take_shape(attrs, in_shapes):
    a, indices = in_shapes
    if a is None or indices is None:
        return in_shapes, [None]
    axis = axis_in("take", attrs["axis"], a)
    refuse_empty_gather("take", a, axis, int(np.prod(indices)))
    return in_shapes, [tuple(a[:axis]) + tuple(indices) + tuple(a[axis + 1:])]


def _take_grad_forward(attrs, og, a, indices):
    axis = attrs["axis"] % a.ndim
    idx = _indices(attrs, a.shape[axis], indices).reshape(-1)
    grad = np.zeros(np.moveaxis(a, axis, 0).shape, og.dtype)
    # og has a's axes with the axis replaced by the index axes: put those first, flatten
    moved = np.moveaxis(og.reshape(a.shape[:axis] + (idx.size,) + a.shape[axis + 1:]), axis, 0)
    np.add.at(grad, idx, moved)
    return np.moveaxis(grad, 0, axis)


def _take_grad(F, attrs, inputs, outputs, out_grads):
    a, indices = inputs
    return [F._take_grad(out_grads[0], a, indices, axis=attrs["axis"], mode=attrs["mode"]),
            None]


TAKE_ATTRS = {"axis": Int(0), "mode": Choice("clip", "wrap", "raise")}
register("take", inputs=("a", "indices"), attrs=dict(TAKE_ATTRS), forward=_take_forward,
         infer_shape=_take_shape, gradient=_take_grad, placement="host",
         doc="take(a, indices, axis=0, mode='clip'): the slices of `a` at `indices` along "
             "`axis` (the output has indices' axes in place of that axis).")
register("_take_grad", inputs=("out_grad", "a", "indices"), attrs=dict(TAKE_ATTRS),
         forward=_take_grad_forward, infer_shape=like_input(1),
         placement="host", doc="Gradient of take: out_grad added back at the indices.")


def _batch_take_forward(attrs, a, indices):
    rows = a.reshape(a.shape[0], int(np.prod(a.shape[1:])))     # not -1: 0 rows
    idx = np.clip(indices.astype(np.int64).reshape(-1), 0, rows.shape[1] - 1)
    return rows[np.arange(rows.shape[0]), idx]


def _batch_take_shape(attrs, in_shapes):
    a, indices = in_shapes
    if a is None:
        return in_shapes, [None]
    if indices is not None and int(np.prod(indices)) != a[0]:
        raise OpError(f"batch_take: one index per row of a {a} is needed, got indices of "
                      f"shape {indices}")
    refuse_empty_gather("batch_take", (a[0], int(np.prod(a[1:]))), 1, a[0])
    return [a, indices if indices is not None else (a[0],)], [(a[0],)]


# No gradient, as in MXNet (where batch_take is deprecated in favour of pick, which has
# one): a gradient through it is refused, imperatively and when an executor is bound.
register("batch_take", inputs=("a", "indices"), forward=_batch_take_forward,
         infer_shape=_batch_take_shape, placement="host",
         doc="batch_take(a, indices): a[i, indices[i]] for every row i (indices clipped); "
             "no gradient (use pick for one).")
alias("choose_element_0index", "batch_take")      # MXNet's older name


# gather_nd(data, indices): indices (M, ...) address data's first M axes; the output is
# indices.shape[1:] + data.shape[M:]. Negative indices count from the end, as in MXNet;
# one outside an axis is an IndexError.
def _gather_index(data, indices):
    idx = indices.astype(np.int64)
    for k in range(idx.shape[0]):
        size = data.shape[k]
        bad = (idx[k] < -size) | (idx[k] >= size)
        if bad.any():
            raise OpIndexError(f"gather_nd: index {idx[k][bad].flat[0]} is out of bounds for "
                               f"axis {k} with size {size}")
        idx[k] %= max(size, 1)
    return tuple(idx)


def _gather_nd_shape(attrs, in_shapes):
    data, indices = in_shapes
    if data is None or indices is None:
        return in_shapes, [None]
    if not indices or indices[0] > len(data):
        raise OpError(f"gather_nd: indices of shape {tuple(indices)} must address at most "
                      f"the {len(data)} axes of data {tuple(data)} (in their first axis)")
    for axis in range(indices[0]):
        refuse_empty_gather("gather_nd", data, axis, int(np.prod(indices[1:])))
    return in_shapes, [tuple(indices[1:]) + tuple(data[indices[0]:])]


def _gather_nd_grad_forward(attrs, og, data, indices):
    grad = np.zeros(data.shape, og.dtype)
    np.add.at(grad, _gather_index(data, indices), og)       # repeated indices add up
    return grad


register("gather_nd", inputs=("data", "indices"), placement="host",
         forward=lambda attrs, data, indices: np.ascontiguousarray(
             data[_gather_index(data, indices)]),
         infer_shape=_gather_nd_shape,
         gradient=lambda F, a, i, o, og: [F._gather_nd_grad(og[0], i[0], i[1]), None],
         doc="gather_nd(data, indices): data[indices[0], indices[1], ...], the first axis "
             "of indices addressing data's leading axes.")
register("_gather_nd_grad", inputs=("out_grad", "data", "indices"), placement="host",
         forward=_gather_nd_grad_forward, infer_shape=like_input(1),
         doc="Gradient of gather_nd: the output gradient added back at the indices.")


# ravel_multi_index / unravel_index with MXNet's arithmetic: the first axis length of
# `shape` is never used (so it may be -1), values are computed in int64 and given back in
# the data's dtype; both have a zero gradient.
def _ravel_forward(attrs, data):
    flat = np.zeros(data.shape[1:], np.int64)
    for j, size in enumerate(attrs["shape"]):
        flat = flat * size + data[j].astype(np.int64)
    return flat.astype(data.dtype)


def _unravel_forward(attrs, data):
    shape = attrs["shape"]
    idx = data.astype(np.int64)
    out = np.empty((len(shape),) + data.shape, np.int64)
    for j in range(len(shape) - 1, 0, -1):
        out[j] = idx % shape[j]
        idx = idx // shape[j]
    out[0] = idx
    return out.astype(data.dtype)


def _ravel_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is not None and (not s or s[0] != len(attrs["shape"])):
        raise OpError(f"ravel_multi_index: data of shape {tuple(s)} needs a first axis of "
                      f"length {len(attrs['shape'])} (one row per axis of shape "
                      f"{attrs['shape']})")
    return in_shapes, [None if s is None else tuple(s[1:])]


RAVEL_ATTRS = {"shape": Shape(required=True)}
register("_ravel_multi_index", placement="host", attrs=dict(RAVEL_ATTRS),
         forward=_ravel_forward, infer_shape=_ravel_shape,
         gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
         doc="ravel_multi_index(data, shape): the flat indices of the columns of data (one "
             "row per axis) in an array of `shape`.")
alias("ravel_multi_index", "_ravel_multi_index")
register("_unravel_index", placement="host", attrs=dict(RAVEL_ATTRS),
         forward=_unravel_forward,
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else
                                           (len(attrs["shape"]),) + tuple(s[0])]),
         gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
         doc="unravel_index(data, shape): the coordinates (one row per axis) of flat "
             "indices in an array of `shape`.")
alias("unravel_index", "_unravel_index")


# ------------------------------------------------------------------- boolean_mask
# The one op whose output shape depends on its input's values (how many are nonzero):
# shape inference leaves that dimension unknown (None) until the op runs.

def _mask_of(data, index, axis):
    axis = axis_in("boolean_mask", axis, data.shape)
    if index.ndim != 1 or index.shape[0] != data.shape[axis]:
        raise OpError(f"boolean_mask: index must be 1-D with one entry per slice of data "
                      f"along axis {axis} ({data.shape[axis]}), got shape {index.shape}")
    return axis, index != 0


def _boolean_mask_forward(attrs, data, index):
    axis, keep = _mask_of(data, index, attrs["axis"])
    return np.compress(keep, data, axis=axis)


def _boolean_mask_shape(attrs, s):
    data, index = s
    if data is None:
        return s, [None]
    axis = axis_in("boolean_mask", attrs["axis"], data)
    if index is not None and (len(index) != 1 or index[0] not in (None, data[axis])):
        raise OpError(f"boolean_mask: index must be 1-D with one entry per slice of data "
                      f"along axis {axis} ({data[axis]}), got shape {tuple(index)}")
    return [data, (data[axis],)], [tuple(None if k == axis else d for k, d in enumerate(data))]


def _boolean_mask_grad_forward(attrs, og, data, index):
    axis, keep = _mask_of(data, index, attrs["axis"])
    grad = np.zeros(data.shape, og.dtype)
    where = [slice(None)] * data.ndim
    where[axis] = np.flatnonzero(keep)
    grad[tuple(where)] = og
    return grad


register("_contrib_boolean_mask", inputs=("data", "index"), attrs={"axis": Int(0)},
         forward=_boolean_mask_forward, infer_shape=_boolean_mask_shape, placement="host",
         gradient=lambda F, a, i, o, og: [F._contrib_boolean_mask_grad(og[0], i[0], i[1], **a),
                                          None],
         doc="contrib.boolean_mask(data, index, axis=0): the slices of data along `axis` "
             "whose index entry is nonzero (how many: known only when it runs).")
register("_contrib_boolean_mask_grad", inputs=("out_grad", "data", "index"),
         attrs={"axis": Int(0)}, forward=_boolean_mask_grad_forward, placement="host",
         infer_shape=like_input(1),
         doc="Gradient of boolean_mask: out_grad back at the kept slices, 0 elsewhere.")


# ------------------------------------------------------------------- index_copy
def _index_copy_shape(attrs, s):
    old, index, new = s
    if old is not None and new is not None:
        if len(old) != len(new) or tuple(old[1:]) != tuple(new[1:]) or new[0] > old[0]:
            raise OpError(f"index_copy: new_tensor of shape {tuple(new)} must be rows of "
                          f"old_tensor of shape {tuple(old)} (the same shape after axis 0)")
    if index is not None and new is not None and tuple(index) != (new[0],):
        raise OpError(f"index_copy: index must be 1-D with one row number per row of "
                      f"new_tensor ({new[0]}), got shape {tuple(index)}")
    return s, [old]


def _index_rows(index, rows):
    idx = index.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        raise OpIndexError(f"index_copy: row numbers must be in [0, {rows}), got values from "
                           f"{idx.min()} to {idx.max()}")
    return idx


def _index_copy_forward(attrs, old, index, new):
    out = old.copy()
    out[_index_rows(index, old.shape[0])] = new
    return out


def _index_copy_grad_forward(attrs, og, index):
    idx = _index_rows(index, og.shape[0])
    keep = og.copy()
    keep[idx] = 0
    return keep, og[idx]


def _index_copy_grad(F, attrs, inputs, outputs, out_grads):
    d_old, d_new = F._contrib_index_copy_grad(out_grads[0], inputs[1])
    return [d_old, None, d_new]


register("_contrib_index_copy", inputs=("old_tensor", "index_vector", "new_tensor"),
         forward=_index_copy_forward, infer_shape=_index_copy_shape, placement="host",
         index_inputs=("index_vector",),
         gradient=_index_copy_grad,
         doc="contrib.index_copy(old_tensor, index_vector, new_tensor): old_tensor with "
             "its rows index_vector[i] replaced by new_tensor's rows i.")
register("_contrib_index_copy_grad", inputs=("out_grad", "index_vector"), num_outputs=2,
         forward=_index_copy_grad_forward, placement="host", index_inputs=("index_vector",),
         infer_shape=lambda attrs, s: (s, [s[0], None if s[0] is None or s[1] is None
                                           else (s[1][0],) + tuple(s[0][1:])]),
         doc="Gradient of index_copy: (out_grad with the copied rows zeroed, those rows).")
