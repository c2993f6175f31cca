"""Sorting ops with MXNet's names: sort, argsort, topk. Indices come back as float32 by
default (MXNet's `dtype` attribute); a value's gradient goes back to where it came from.
No Numba kernels: compiled graphs run them in NumPy between compiled segments."""
import numpy as np

from .registry import Bool, Choice, Int, OptInt, axis_in, like_input, register

DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8")


def _order(attrs, x):
    """Indices that sort x along the axis, ascending or descending (stable)."""
    axis = attrs["axis"]
    if axis is None:
        x, axis = x.reshape(-1), 0
    order = np.argsort(x, axis=axis, kind="stable")
    return order if attrs["is_ascend"] else np.flip(order, axis=axis)


def _flat_axis(attrs, x):
    return (x.reshape(-1), 0) if attrs["axis"] is None else (x, attrs["axis"])


def _sort_forward(attrs, x):
    data, axis = _flat_axis(attrs, x)
    return np.ascontiguousarray(np.take_along_axis(data, _order(attrs, x), axis=axis))


def _scatter_back(og, x, order, axis):
    """The gradient of `take_along_axis(x, order)`: og added back at the taken places."""
    grad = np.zeros_like(x if axis is not None else x.reshape(-1))
    np.put_along_axis(grad, order, og.reshape(order.shape), axis=0 if axis is None else axis)
    return grad.reshape(x.shape)


def _sort_grad_forward(attrs, og, x):
    return _scatter_back(og, x, _order(attrs, x), attrs["axis"])


def _flat_shape(name):
    def infer_shape(attrs, in_shapes):
        s = in_shapes[0]
        if s is None or attrs["axis"] is not None:
            if s is not None:
                axis_in(name, attrs["axis"], s)
            return in_shapes, [s]
        return in_shapes, [(int(np.prod(s)),)]
    return infer_shape


SORT_ATTRS = {"axis": OptInt(-1), "is_ascend": Bool(True)}
register("sort", placement="host",
         attrs=dict(SORT_ATTRS), forward=_sort_forward, infer_shape=_flat_shape("sort"),
         gradient=lambda F, a, i, o, og: [F._sort_grad(og[0], i[0], **a)],
         doc="sort(data, axis=-1, is_ascend=True): the values in order along `axis` "
             "(flattened when axis is None).")
register("_sort_grad", placement="host", inputs=("out_grad", "data"), attrs=dict(SORT_ATTRS),
         forward=_sort_grad_forward, infer_shape=like_input(1),
         doc="Gradient of sort.")
register("argsort", placement="host", attrs={**SORT_ATTRS, "dtype": Choice(*DTYPES)},
         dtype_rule="attr",
         forward=lambda attrs, x: _order(attrs, x).astype(attrs["dtype"]),
         infer_shape=_flat_shape("argsort"), gradient=lambda F, a, i, o, og: [None],
         doc="argsort(data, axis=-1, is_ascend=True, dtype='float32'): the indices that "
             "sort data along `axis`.")


def _topk_positions(attrs, x):
    data, axis = _flat_axis(attrs, x)
    n = data.shape[axis]
    k = n if attrs["k"] < 1 else min(attrs["k"], n)
    if k * 16 <= n and data.size > 4096:        # a few of many: no full sort
        rows = np.moveaxis(data, axis, -1)
        top = _first_k(rows.reshape(-1, n), k, attrs["is_ascend"])
        return data, axis, np.moveaxis(top.reshape(rows.shape[:-1] + (k,)), -1, axis)
    order = _order({"axis": attrs["axis"], "is_ascend": attrs["is_ascend"]}, x)
    return data, axis, np.take(order, np.arange(k), axis=axis)


def _first_k(rows, k, ascending):
    """The first k positions of each row of `_order` (ties: the lower position first when
    ascending, the higher when not; NaN is the largest), from a partition of each row:
    the k-th value splits the row, and its ties are taken in that position order."""
    n = rows.shape[1]
    kth = np.partition(rows, k - 1 if ascending else n - k, axis=1)
    kth = kth[:, k - 1 if ascending else n - k][:, None]
    nan, kth_nan = np.isnan(rows), np.isnan(kth)
    if ascending:
        inside = np.where(kth_nan, ~nan, rows < kth)
    else:
        inside = np.where(kth_nan, False, (rows > kth) | nan)
    tie = np.where(kth_nan, nan, rows == kth)
    wanted = k - inside.sum(axis=1, keepdims=True)
    crowded = (tie.sum(axis=1, keepdims=True) > wanted)[:, 0]   # more ties than places
    if crowded.any():
        ties, want = tie[crowded], wanted[crowded]
        if ascending:
            tie[crowded] = ties & (np.cumsum(ties, axis=1) <= want)
        else:
            tie[crowded] = ties & (np.cumsum(ties[:, ::-1], axis=1)[:, ::-1] <= want)
    chosen = np.nonzero(inside | tie)[1].reshape(-1, k)     # in position order
    order = np.argsort(np.take_along_axis(rows, chosen, axis=1), axis=1, kind="stable")
    if not ascending:
        order = order[:, ::-1]
    return np.take_along_axis(chosen, order, axis=1)


def _topk_forward(attrs, x):
    data, axis, top = _topk_positions(attrs, x)
    kind = attrs["ret_typ"]
    if kind == "mask":
        mask = np.zeros_like(data)
        np.put_along_axis(mask, top, 1, axis=axis)
        return mask.reshape(x.shape)
    indices = top.astype(attrs["dtype"])
    if kind == "indices":
        return indices
    values = np.ascontiguousarray(np.take_along_axis(data, top, axis=axis))
    return values if kind == "value" else (values, indices)


def _topk_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None] * _topk_count(attrs)
    if attrs["ret_typ"] == "mask":
        return in_shapes, [s]
    out = [int(np.prod(s))] if attrs["axis"] is None else list(s)
    axis = 0 if attrs["axis"] is None else axis_in("topk", attrs["axis"], s)
    if attrs["k"] >= 1:
        out[axis] = min(attrs["k"], out[axis])
    return in_shapes, [tuple(out)] * _topk_count(attrs)


def _topk_dtypes(attrs, dtypes):
    """The values (and a mask) have the data's dtype, the indices the `dtype` attribute's."""
    kind = attrs["ret_typ"]
    return [dtypes[0], attrs["dtype"]] if kind == "both" else \
        attrs["dtype"] if kind == "indices" else dtypes[0]


def _topk_count(attrs):
    return 2 if attrs["ret_typ"] == "both" else 1


def _topk_grad_forward(attrs, og, x):
    _, axis, top = _topk_positions(attrs, x)
    return _scatter_back(og, x, top, attrs["axis"])


def _topk_grad(F, attrs, inputs, outputs, out_grads):
    if attrs["ret_typ"] not in ("value", "both"):
        return [None]           # indices and masks are flat: no gradient, as in MXNet
    return [F._topk_grad(out_grads[0], inputs[0], **attrs)]


TOPK_ATTRS = {"axis": OptInt(-1), "k": Int(1),
              "ret_typ": Choice("indices", "value", "both", "mask"),
              "is_ascend": Bool(False), "dtype": Choice(*DTYPES)}
register("topk", placement="host", attrs=dict(TOPK_ATTRS), forward=_topk_forward,
         infer_shape=_topk_shape, infer_dtype=_topk_dtypes,
         gradient=_topk_grad, num_outputs=_topk_count,
         doc="topk(data, axis=-1, k=1, ret_typ='indices'|'value'|'both'|'mask', "
             "is_ascend=False): the k largest (or smallest) along `axis`.")
register("_topk_grad", placement="host", inputs=("out_grad", "data"), attrs=dict(TOPK_ATTRS),
         forward=_topk_grad_forward, infer_shape=like_input(1),
         doc="Gradient of topk's values.")
