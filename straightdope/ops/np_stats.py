"""`mx.np` functions that count or summarise values: histogram, bincount, unique,
diag_indices_from, average, polyval, einsum; and npx's erfinv and constraint_check.

Each is a host op computing with NumPy. Those MXNet gives a gradient (average, polyval,
einsum, erfinv) have a second host op for it, with MXNet's formula; the others have
none (as in MXNet), so backward() through them stops with the registry's error.
Outputs whose length depends on the values (bincount, unique) have an unknown (None)
length until the op runs, as boolean_mask's.
"""
import ast

import numpy as np

from .np_ops import _parts
from .registry import Attr, OpError, is_complete, register, scipy_special


def _literal(text):
    """An attribute written as a Python literal ("(0.0, 10.0)", "None"): literals only."""
    return None if text in (None, "", "None") else ast.literal_eval(text)


# ------------------------------------------------------------------ histogram
# MXNet's `_histogram`, behind both nd.histogram and np.histogram: `bin_cnt` equal bins
# over `range` (the data's min and max when None), or the edges given as `bins`.
def _histogram_inputs(attrs):
    return ("data",) if attrs["bin_cnt"] is not None else ("data", "bins")


def _histogram(attrs, data, bins=None):
    if attrs["bin_cnt"] is not None:
        counts, edges = np.histogram(data, attrs["bin_cnt"], range=_literal(attrs["range"]))
        edges = edges.astype(data.dtype if data.dtype.kind == "f" else np.float64)
    else:
        if bins.ndim != 1 or bins.size < 2:
            raise OpError(f"histogram: bins must be 1-D edges, at least two, got shape "
                          f"{bins.shape}")
        counts, edges = np.histogram(data, bins)[0], bins.copy()
    return counts.astype(np.int64), edges


def _histogram_shape(attrs, in_shapes):
    if attrs["bin_cnt"] is not None:
        return in_shapes, [(attrs["bin_cnt"],), (attrs["bin_cnt"] + 1,)]
    bins = in_shapes[1]
    if bins is None or not is_complete(bins):
        return in_shapes, [None, None]
    return in_shapes, [(bins[0] - 1,), tuple(bins)]


def _histogram_dtype(attrs, dtypes):
    if attrs["bin_cnt"] is None:
        return [np.dtype(np.int64), dtypes[1]]
    data = np.dtype(dtypes[0])
    return [np.dtype(np.int64), data if data.kind == "f" else np.dtype(np.float64)]


register("_histogram", inputs=("data", "bins"), optional_inputs=_histogram_inputs,
         attrs={"bin_cnt": Attr("int_or_none", None, minimum=1),
                "range": Attr("str", "")},
         placement="host", num_outputs=2, output_names=("histogram", "bin_edges"),
         forward=_histogram, infer_shape=_histogram_shape, infer_dtype=_histogram_dtype,
         index_inputs=("bins",),
         doc="histogram(data, bins=None, bin_cnt=None, range=None): how many of data's "
             "elements fall in each bin (int64), and the bin edges: `bin_cnt` equal bins "
             "over `range` (the data's min to max when None), or the edges `bins`. No "
             "gradient, as in MXNet.")


# ------------------------------------------------------------------- bincount
def _bincount_inputs(attrs):
    return ("data", "weights") if attrs["has_weights"] else ("data",)


def _bincount(attrs, data, weights=None):
    if data.dtype.kind not in "iu":
        raise OpError(f"np.bincount: needs an array of integers, got dtype {data.dtype}")
    if data.ndim > 1 or (weights is not None and weights.shape != data.shape):
        raise OpError(f"np.bincount: needs a 1-D array (and weights of its shape), got "
                      f"shape {data.shape}"
                      + ("" if weights is None else f" and weights {weights.shape}"))
    if data.size and data.min() < 0:
        raise OpError("np.bincount: the input must be non-negative integers")
    counts = np.bincount(data.reshape(-1).astype(np.int64),
                         None if weights is None else weights.reshape(-1),
                         minlength=attrs["minlength"])
    return counts.astype(np.int64 if weights is None else weights.dtype)


register("_npi_bincount", inputs=("data", "weights"), optional_inputs=_bincount_inputs,
         attrs={"minlength": Attr("int", 0, minimum=0), "has_weights": Attr("bool", False)},
         placement="host", forward=_bincount, index_inputs=("data",), checks_values=True,
         infer_shape=lambda attrs, s: (s, [(None,)]),
         infer_dtype=lambda attrs, dtypes: (dtypes[1] if attrs["has_weights"]
                                            else np.dtype(np.int64)),
         doc="np.bincount(data, weights, minlength): how often each value 0, 1, ... occurs "
             "in data (summing its weights); its length is known when it runs. No "
             "gradient, as in MXNet.")


# -------------------------------------------------------------------- unique
UNIQUE_FLAGS = ("return_index", "return_inverse", "return_counts")


def _unique(attrs, data):
    axis = attrs["axis"]
    if data.ndim == 0 and axis is not None:
        raise OpError(f"np.unique: axis {axis} is out of bounds for a 0-d array")
    flags = [attrs[f] for f in UNIQUE_FLAGS]
    out = np.unique(data, *flags, axis=axis)
    out = list(out) if isinstance(out, tuple) else [out]
    return tuple([out[0]] + [o.astype(np.int64) for o in out[1:]]) if len(out) > 1 \
        else out[0]


def _unique_shape(attrs, in_shapes):
    data, axis = in_shapes[0], attrs["axis"]
    outs = [(None,) if axis is None or data is None else
            tuple(None if k == axis % len(data) else d for k, d in enumerate(data))]
    for flag in UNIQUE_FLAGS:
        if attrs[flag]:
            if flag == "return_inverse" and data is not None and is_complete(data):
                # its shape does not depend on the values (NumPy 2: data's when axis is None)
                probe = np.zeros(data, np.int8)
                outs.append(np.unique(probe, return_inverse=True, axis=axis)[1].shape)
            else:
                outs.append((None,))
    return in_shapes, outs


register("_npi_unique", inputs=("data",),
         attrs={**{f: Attr("bool", False) for f in UNIQUE_FLAGS},
                "axis": Attr("int_or_none", None)},
         placement="host", forward=_unique, infer_shape=_unique_shape,
         num_outputs=lambda attrs: 1 + sum(attrs[f] for f in UNIQUE_FLAGS),
         infer_dtype=lambda attrs, dtypes: [dtypes[0]] + [np.dtype(np.int64)] * sum(
             attrs[f] for f in UNIQUE_FLAGS),
         doc="np.unique(data, return_index, return_inverse, return_counts, axis): the "
             "sorted distinct values (or slices along axis) and, as asked, where each is "
             "first, where each element went and how often each occurs. No gradient.")


# --------------------------------------------------------- diag_indices_from
def _check_square(shape):
    if len(shape) < 2 or len(set(shape)) != 1:
        raise OpError(f"np.diag_indices_from: needs an array of at least 2 axes, all of "
                      f"one length, got shape {tuple(shape)}")


def _diag_indices(attrs, data):
    _check_square(data.shape)
    return np.stack(np.diag_indices_from(data)).astype(np.int64)


def _diag_indices_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None or not is_complete(data):
        return in_shapes, [None]
    _check_square(data)                  # refused when planned, as when it runs
    return in_shapes, [(len(data), data[0])]


register("_npi_diag_indices_from", inputs=("data",), placement="host",
         forward=_diag_indices, infer_shape=_diag_indices_shape,
         infer_dtype=lambda attrs, dtypes: np.dtype(np.int64),
         doc="np.diag_indices_from(data): the indices of the main diagonal, one row per "
             "axis (shape (ndim, n)). No gradient.")


# ------------------------------------------------------------------- average
# avg = sum(a * w) / sum(w) over `axis`; with 1-D weights, w runs along the one axis.
# d avg / d a = w / sum(w);  d avg / d w = (a - avg) / sum(w);  d sum(w) / d w = 1.
AVERAGE_ATTRS = {"axis": Attr("str", ""), "returned": Attr("bool", False),
                 "weighted": Attr("bool", False)}


def _average_axes(attrs, ndim):
    axis = _literal(attrs["axis"])
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))


def _full_weights(attrs, a, w):
    """The weights in a's shape (1-D weights laid along the one axis of the average)."""
    if w.shape == a.shape:
        return w
    axes = _average_axes(attrs, a.ndim)
    if w.ndim != 1 or len(axes) != 1 or w.shape[0] != a.shape[axes[0]]:
        raise OpError(f"np.average: weights of shape {w.shape} do not fit an array of "
                      f"shape {a.shape} averaged over axis {_literal(attrs['axis'])}: give "
                      f"weights of a's shape, or 1-D ones along the one axis")
    shape = [1] * a.ndim
    shape[axes[0]] = w.shape[0]
    return np.broadcast_to(w.reshape(shape), a.shape)


def _average_inputs(attrs):
    return ("a", "weights") if attrs["weighted"] else ("a",)


def _average(attrs, a, w=None):
    axes = _average_axes(attrs, a.ndim)
    if w is None:
        avg = np.mean(a, axis=axes)
        total = np.full(avg.shape, a.size / max(avg.size, 1))
    else:
        wf = _full_weights(attrs, a, w)
        total = np.sum(wf, axis=axes)
        if np.any(total == 0):
            raise OpError("np.average: the weights sum to zero, so the average is not "
                          "defined")
        avg = np.sum(a * wf, axis=axes) / total
    avg, total = np.asarray(avg).astype(a.dtype), np.asarray(total).astype(a.dtype)
    return (avg, total) if attrs["returned"] else avg


def _average_grad(attrs, og_avg, *rest):
    og_total = rest[0] if attrs["returned"] else None
    arrays = rest[1:] if attrs["returned"] else rest
    a, w = arrays[0], (arrays[1] if attrs["weighted"] else None)
    axes = _average_axes(attrs, a.ndim)
    g = np.expand_dims(og_avg, axes)
    if w is None:
        return np.broadcast_to(g * (g.size / a.size), a.shape).astype(a.dtype)
    wf = _full_weights(attrs, a, w)
    total = np.sum(wf, axis=axes, keepdims=True)
    avg = np.sum(a * wf, axis=axes, keepdims=True) / total
    ga = g * wf / total
    gw = g * (a - avg) / total
    if og_total is not None:
        gw = gw + np.expand_dims(og_total, axes)
    if w.shape != a.shape:                           # back to the 1-D weights
        gw = np.sum(gw, axis=tuple(k for k in range(a.ndim) if k != axes[0]))
    return ga.astype(a.dtype), gw.astype(w.dtype)


def _average_shape(attrs, in_shapes):
    a = in_shapes[0]
    if a is None or not is_complete(a):
        return in_shapes, [None] * (1 + attrs["returned"])
    axes = _average_axes(attrs, len(a))
    out = tuple(d for k, d in enumerate(a) if k not in axes)
    return in_shapes, [out] * (1 + attrs["returned"])


def _average_gradient(F, attrs, inputs, outputs, out_grads):
    grads = F._npi_average_grad(*out_grads, *inputs, **attrs)
    return list(grads) if attrs["weighted"] else [grads]


register("_npi_average", inputs=("a", "weights"), optional_inputs=_average_inputs,
         attrs=dict(AVERAGE_ATTRS), placement="host", checks_values=True,
         num_outputs=lambda attrs: 1 + attrs["returned"], forward=_average,
         infer_shape=_average_shape, gradient=_average_gradient,
         doc="np.average(a, axis, weights, returned): sum(a * w) / sum(w) over axis (the "
             "mean without weights) and, with returned, sum(w).")


def _average_grad_inputs(attrs):
    ogs = ("og_avg", "og_total") if attrs["returned"] else ("og_avg",)
    return ogs + _average_inputs(attrs)


register("_npi_average_grad", inputs=("og_avg", "og_total", "a", "weights"),
         optional_inputs=_average_grad_inputs, attrs=dict(AVERAGE_ATTRS),
         placement="host", num_outputs=lambda attrs: 1 + attrs["weighted"],
         forward=_average_grad, index_inputs=("og_avg", "og_total", "weights"),
         infer_dtype=lambda attrs, dtypes: list(dtypes[-1 - attrs["weighted"]:]),
         infer_shape=lambda attrs, s: (s, list(s[-1 - attrs["weighted"]:])),
         doc="The gradient of np.average with respect to a (and the weights).")


# ------------------------------------------------------------------- polyval
# p[0] * x**(n-1) + ... + p[n-1];  d/dp[i] = x**(n-1-i),  d/dx = the derivative polynomial
def _polyval(attrs, p, x):
    if p.ndim != 1:
        raise OpError(f"np.polyval: p must be 1-D coefficients, got shape {p.shape}")
    return np.polyval(p, x).astype(np.result_type(p, x), copy=False)


def _polyval_grad(attrs, og, p, x):
    n = p.shape[0]
    powers = np.arange(n - 1, -1, -1)
    gp = np.sum(og[..., None] * np.power(x[..., None].astype(np.float64), powers),
                axis=tuple(range(x.ndim))) if x.size else np.zeros(n)
    gx = og * (np.polyval(np.polyder(p), x) if n > 1 else np.zeros_like(x))
    return gp.astype(p.dtype), np.asarray(gx).astype(x.dtype)


register("_npi_polyval", inputs=("p", "x"), placement="host", forward=_polyval,
         infer_shape=lambda attrs, s: (s, [s[1]]),
         infer_dtype=lambda attrs, dtypes: np.result_type(*dtypes),
         gradient=lambda F, a, i, o, og: list(F._npi_polyval_grad(og[0], i[0], i[1])),
         doc="np.polyval(p, x): the polynomial with coefficients p (highest power first) "
             "at each element of x.")
register("_npi_polyval_grad", inputs=("out_grad", "p", "x"), placement="host",
         num_outputs=2, forward=_polyval_grad, index_inputs=("p", "x"),
         infer_dtype=lambda attrs, dtypes: [dtypes[1], dtypes[2]],
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="The gradient of np.polyval with respect to p and x.")


# -------------------------------------------------------------------- einsum
# The gradient of operand k is an einsum too: the out-grad with the other operands,
# written to operand k's subscripts (summing, with ones, over the labels only it has;
# a repeated label, a diagonal, gets the gradient on that diagonal).
def _einsum_parts(attrs, operands):
    """(input subscripts per operand, output subscripts), '...' made explicit letters."""
    subscripts = attrs["subscripts"].replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise OpError(f"np.einsum: {subscripts!r} names {len(terms)} operands, got "
                      f"{len(operands)}")
    used = set(subscripts) - set(".,->")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in used]
    ell_ndim = max([x.ndim - (len(t) - 3) for t, x in zip(terms, operands) if "..." in t],
                   default=0)
    ell = "".join(spare[:ell_ndim])
    terms = [t.replace("...", ell[ell_ndim - (x.ndim - (len(t) - 3)):]) if "..." in t else t
             for t, x in zip(terms, operands)]
    if not arrow:                       # NumPy's implicit output: labels seen once, sorted
        letters = "".join(terms)
        output = ell + "".join(sorted(c for c in set(letters) - set(ell)
                                      if letters.count(c) == 1))
    else:
        output = output.replace("...", ell)
    return terms, output


def _einsum(attrs, *operands):
    try:
        terms, output = _einsum_parts(attrs, operands)
        return np.asarray(np.einsum(",".join(terms) + "->" + output, *operands))
    except ValueError as err:
        raise OpError(f"np.einsum({attrs['subscripts']!r}): {err} (operands of shapes "
                      f"{[x.shape for x in operands]})") from None


def _einsum_grad(attrs, og, *operands):
    terms, output = _einsum_parts(attrs, operands)
    sizes = {}
    for t, x in zip(terms, operands):        # a label of length 1 broadcasts: the largest
        for c, n in zip(t, x.shape):
            sizes[c] = max(n, sizes.get(c, n)) if n != 1 else sizes.get(c, n)
    grads = []
    for k, (term, x) in enumerate(zip(terms, operands)):
        others = [(t, o) for j, (t, o) in enumerate(zip(terms, operands)) if j != k]
        seen = set(output).union(*(set(t) for t, _ in others))
        alone = "".join(dict.fromkeys(c for c in term if c not in seen))   # summed in x only
        ones = [np.ones([sizes[c] for c in alone], og.dtype)] if alone else []
        target = "".join(dict.fromkeys(term))
        spec = ",".join([output] + [t for t, _ in others] + ([alone] if alone else []))
        g = np.einsum(spec + "->" + target, og, *[o for _, o in others], *ones)
        if target != term:                # a repeated label: the gradient on the diagonal
            full = np.zeros(x.shape, g.dtype)
            idx = [np.arange(sizes[c]).reshape([-1 if c == d else 1 for d in target])
                   for c in target]
            full[tuple(idx[target.index(c)] for c in term)] = g
            g = full
        g = np.asarray(g)
        broadcast = tuple(k for k, n in enumerate(x.shape) if n == 1 and g.shape[k] != 1)
        if broadcast:                     # summed back over the axes x was broadcast along
            g = g.sum(axis=broadcast, keepdims=True)
        grads.append(g.astype(x.dtype))
    return tuple(grads) if len(grads) > 1 else grads[0]


def _einsum_shape(attrs, in_shapes):
    if not all(s is not None and is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_einsum(attrs, *probes).shape]


EINSUM_ATTRS = {"subscripts": Attr("str", required=True), "num_args": Attr("int_or_none", None),
                "optimize": Attr("int", 0)}


register("_npi_einsum", variadic=True, attrs=dict(EINSUM_ATTRS), placement="host",
         forward=_einsum, infer_shape=_einsum_shape,
         infer_dtype=lambda attrs, dtypes: np.result_type(*dtypes),
         gradient=lambda F, a, i, o, og: _parts(F._npi_einsum_grad(
             og[0], *i, **dict(a, num_args=len(i))), len(i)),
         doc="np.einsum(subscripts, *operands): sums of products of the operands' "
             "elements as the subscripts say (NumPy's notation, '...' included).")
register("_npi_einsum_grad", variadic=True, attrs=dict(EINSUM_ATTRS), placement="host",
         num_outputs=lambda attrs: attrs["num_args"], forward=_einsum_grad,
         infer_dtype=lambda attrs, dtypes: list(dtypes[1:]),
         infer_shape=lambda attrs, s: (s, list(s[1:])),
         doc="The gradient of np.einsum with respect to each operand.")


# ------------------------------------------------------------ var, std, cumsum
def _axes(text, ndim):
    """An `axis` attribute (a literal: "" for None, an int or a tuple) as a tuple of axes."""
    axis = _literal(text)
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if any(not -ndim <= k < max(ndim, 1) for k in axes):
        raise OpError(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return tuple(sorted(k % max(ndim, 1) for k in axes))


MOMENT_ATTRS = {"axis": Attr("str", ""), "ddof": Attr("int", 0), "keepdims": Attr("bool", False),
                "std": Attr("bool", False), "dtype": Attr("str", "")}


def _moment_dtype(attrs, dtype):
    """dtype= if given; else a float array's own, float32 (MXNet's default) for ints."""
    if attrs["dtype"]:
        return np.dtype(attrs["dtype"])
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float32)


def _moment(attrs, a):
    axes = _axes(attrs["axis"], a.ndim)
    function = np.std if attrs["std"] else np.var
    with np.errstate(all="ignore"):                 # ddof >= n: inf or nan, as NumPy's
        out = function(a.astype(np.float64), axis=axes, ddof=attrs["ddof"],
                       keepdims=attrs["keepdims"])
    return np.asarray(out).astype(_moment_dtype(attrs, a.dtype))


def _moment_grad(attrs, og, a, out):
    """d var / d a = 2 (a - mean) / (n - ddof); d std = d var / (2 std)."""
    axes = _axes(attrs["axis"], a.ndim)
    n = int(np.prod([a.shape[k] for k in axes]))
    wide = a.astype(np.float64)
    g, o = (og, out) if attrs["keepdims"] else (np.expand_dims(og, axes),
                                                np.expand_dims(out, axes))
    with np.errstate(all="ignore"):
        grad = 2 * (wide - wide.mean(axis=axes, keepdims=True)) / (n - attrs["ddof"]) * g
        if attrs["std"]:
            grad = grad / (2 * o)
    return grad.astype(a.dtype)


def _reduced_shape(attrs, in_shapes):
    a = in_shapes[0]
    if a is None or not is_complete(a):
        return in_shapes, [None]
    axes = _axes(attrs["axis"], len(a))
    keep = attrs.get("keepdims", False)
    return in_shapes, [tuple(1 if k in axes else d for k, d in enumerate(a)) if keep
                       else tuple(d for k, d in enumerate(a) if k not in axes)]


register("_npi_moment", inputs=("a",), attrs=dict(MOMENT_ATTRS), placement="host",
         forward=_moment, infer_shape=_reduced_shape,
         infer_dtype=lambda attrs, dtypes: _moment_dtype(attrs, dtypes[0]),
         gradient=lambda F, a, i, o, og: [F._npi_moment_grad(og[0], i[0], o[0], **a)],
         doc="np.var (np.std with std=True) over `axis`, divided by n - ddof; computed in "
             "float64 and given in `dtype` (a float array's own dtype, else float32).")
register("_npi_moment_grad", inputs=("out_grad", "a", "out"), attrs=dict(MOMENT_ATTRS),
         placement="host", forward=_moment_grad, index_inputs=("out_grad", "out"),
         infer_shape=lambda attrs, s: (s, [s[1]]),
         doc="The gradient of np.var / np.std.")


MEAN_ATTRS = {"axis": Attr("str", ""), "keepdims": Attr("bool", False),
              "dtype": Attr("str", required=True)}


def _mean(attrs, a):
    """NumPy's mean in `dtype`: an int mean of ints adds in that int type (wrapping, as
    NumPy's); any other is computed in float64 and rounded once to dtype."""
    axes, dtype = _axes(attrs["axis"], a.ndim), np.dtype(attrs["dtype"])
    if dtype.kind in "iu" and a.dtype.kind in "biu":
        out = np.mean(a, axis=axes, dtype=dtype, keepdims=attrs["keepdims"])
    else:
        with np.errstate(all="ignore"):
            out = np.mean(a.astype(np.float64), axis=axes, keepdims=attrs["keepdims"])
    return np.asarray(out).astype(dtype)


def _mean_grad(attrs, og, a):
    axes = _axes(attrs["axis"], a.ndim)
    n = max(int(np.prod([a.shape[k] for k in axes])), 1)
    g = og if attrs["keepdims"] else np.expand_dims(og, axes)
    return np.broadcast_to(g.astype(np.float64) / n, a.shape).astype(a.dtype)


register("_npi_mean", inputs=("a",), attrs=dict(MEAN_ATTRS), placement="host",
         forward=_mean, infer_shape=_reduced_shape, dtype_rule="attr",
         gradient=lambda F, a, i, o, og: [F._npi_mean_grad(og[0], i[0], **a)],
         doc="np.mean(a, axis, dtype, keepdims) with dtype given: computed wide and "
             "rounded once to dtype (ints of ints as NumPy adds them).")
register("_npi_mean_grad", inputs=("out_grad", "a"), attrs=dict(MEAN_ATTRS),
         placement="host", forward=_mean_grad, index_inputs=("out_grad",),
         infer_shape=lambda attrs, s: (s, [s[1]]),
         doc="The gradient of _npi_mean: out_grad / n at every element averaged.")


CUMSUM_ATTRS = {"axis": Attr("int_or_none", None), "dtype": Attr("str", "")}


def _cumsum(attrs, a):
    dtype = attrs["dtype"] or None
    if attrs["axis"] is not None and not -a.ndim <= attrs["axis"] < max(a.ndim, 1):
        raise OpError(f"np.cumsum: axis {attrs['axis']} is out of bounds for an array of "
                      f"shape {a.shape}")
    out = np.cumsum(a, axis=attrs["axis"], dtype=dtype)
    return out if dtype else out.astype(_cumsum_dtype(attrs, a.dtype), copy=False)


def _cumsum_dtype(attrs, dtype):
    """dtype= if given; NumPy's: bool and ints sum as int64, floats as themselves."""
    if attrs["dtype"]:
        return np.dtype(attrs["dtype"])
    return np.dtype(np.int64) if np.dtype(dtype).kind in "biu" else np.dtype(dtype)


def _cumsum_grad(attrs, og, a):
    """Each element counts in every later running sum: reversed cumsums of og."""
    axis = attrs["axis"]
    g = og if axis is not None else og.reshape(-1)
    axis = 0 if axis is None else axis
    g = np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
    return g.reshape(a.shape).astype(a.dtype if a.dtype.kind == "f" else og.dtype)


def _cumsum_shape(attrs, in_shapes):
    a = in_shapes[0]
    if a is None or not is_complete(a):
        return in_shapes, [None]
    return in_shapes, [tuple(a) if attrs["axis"] is not None else (int(np.prod(a)),)]


register("_npi_cumsum", inputs=("a",), attrs=dict(CUMSUM_ATTRS), placement="host",
         forward=_cumsum, infer_shape=_cumsum_shape,
         infer_dtype=lambda attrs, dtypes: _cumsum_dtype(attrs, dtypes[0]),
         gradient=lambda F, a, i, o, og: [F._npi_cumsum_grad(og[0], i[0], **a)],
         doc="np.cumsum(a, axis, dtype): running sums along axis (of the flattened array "
             "when axis is None).")
register("_npi_cumsum_grad", inputs=("out_grad", "a"), attrs=dict(CUMSUM_ATTRS),
         placement="host", forward=_cumsum_grad, index_inputs=("out_grad",),
         infer_shape=lambda attrs, s: (s, [s[1]]),
         infer_dtype=lambda attrs, dtypes: (dtypes[1] if np.dtype(dtypes[1]).kind == "f"
                                            else dtypes[0]),
         doc="The gradient of np.cumsum: reversed running sums of out_grad.")


# ------------------------------------------------------------ argmax, argmin
def _check_arg_extreme(attrs, shape):
    """Refuses (when planned, as when run) an axis out of bounds or an empty axis."""
    axis, ndim, shape = attrs["axis"], len(shape), tuple(shape)
    if ndim == 0 and axis not in (None, 0, -1):
        raise OpError(f"np.{attrs['function']}: axis {axis} is out of bounds for a 0-d "
                      f"array")
    if ndim and axis is not None and not -ndim <= axis < ndim:
        raise OpError(f"np.{attrs['function']}: axis {axis} is out of bounds for an array "
                      f"of shape {shape}")
    if 0 in shape and (axis is None or shape[axis] == 0):
        raise OpError(f"np.{attrs['function']}: an empty sequence has no "
                      f"{attrs['function'][3:]}imum (array of shape {shape}, axis {axis})")


def _arg_extreme(attrs, a):
    _check_arg_extreme(attrs, a.shape)
    return np.asarray(getattr(np, attrs["function"])(a, axis=attrs["axis"])).astype(np.int64)


def _arg_extreme_shape(attrs, in_shapes):
    a, axis = in_shapes[0], attrs["axis"]
    if a is None or not is_complete(a):
        return in_shapes, [None]
    _check_arg_extreme(attrs, a)
    if axis is None or not a:
        return in_shapes, [()]
    return in_shapes, [tuple(d for k, d in enumerate(a) if k != axis % len(a))]


register("_npi_argextreme", inputs=("data",),
         attrs={"function": Attr("str", required=True, choices=("argmax", "argmin")),
                "axis": Attr("int_or_none", None)},
         placement="host", forward=_arg_extreme, infer_shape=_arg_extreme_shape,
         infer_dtype=lambda attrs, dtypes: np.dtype(np.int64), key_attrs=("function",),
         checks_values=True,
         doc="np.argmax or np.argmin (`function`) along axis (of the flattened array when "
             "None), as int64; an empty axis is refused. No gradient (a flat function).")


# --------------------------------------------------------------------- where
def _where_grad(attrs, og, condition, x, y):
    """og where the condition holds to x, elsewhere to y, summed back over broadcasting."""
    picked = np.broadcast_to(condition != 0, og.shape)
    gx = _unbroadcast(np.where(picked, og, 0), x.shape)
    gy = _unbroadcast(np.where(picked, 0, og), y.shape)
    return gx.astype(x.dtype, copy=False), gy.astype(y.dtype, copy=False)


def _broadcast_shape(attrs, in_shapes):
    if not all(s is not None and is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    try:
        return in_shapes, [tuple(np.broadcast_shapes(*map(tuple, in_shapes)))]
    except ValueError:
        raise OpError(f"shapes {[tuple(s) for s in in_shapes]} do not broadcast "
                      f"together") from None


register("_npi_where", inputs=("condition", "x", "y"), placement="host",
         forward=lambda attrs, c, x, y: np.where(c, x, y), infer_shape=_broadcast_shape,
         index_inputs=("condition",),
         infer_dtype=lambda attrs, dtypes: np.result_type(dtypes[1], dtypes[2]),
         gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])] + list(
             F._npi_where_grad(og[0], i[0], i[1], i[2])),
         doc="np.where(condition, x, y): x where condition is nonzero, else y (the three "
             "broadcast together).")
register("_npi_where_grad", inputs=("out_grad", "condition", "x", "y"), placement="host",
         num_outputs=2, forward=_where_grad, index_inputs=("out_grad", "condition"),
         infer_dtype=lambda attrs, dtypes: [dtypes[2], dtypes[3]],
         infer_shape=lambda attrs, s: (s, [s[2], s[3]]),
         doc="The gradient of np.where with respect to x and y.")


# ------------------------------------------------------------ binary ufuncs
# mx.np's binary functions without a legacy op (MXNet's _npi_copysign, _npi_lcm, ...):
# name -> (NumPy function, its gradients (og, a, b, y) -> (d/da, d/db), or None: zero
# gradients, as MXNet's MakeZeroGradNodes; ints_only: refused for float data).
_LN2 = np.log(2.0)
BINARY_UFUNCS = {
    "copysign": (np.copysign, lambda og, a, b, y: (og * np.where((a >= 0) == (b >= 0), 1, -1),
                                                   np.zeros_like(og)), False),
    "arctan2": (np.arctan2, lambda og, a, b, y: (og * b / (a * a + b * b),
                                                 -og * a / (a * a + b * b)), False),
    "ldexp": (lambda a, b: a * np.power(2.0, b),
              lambda og, a, b, y: (og * np.power(2.0, b), og * y * _LN2), False),
    "fmod": (np.fmod, lambda og, a, b, y: (og, -og * np.trunc(a / b)), False),
    "mod": (np.mod, lambda og, a, b, y: (og, -og * np.floor(a / b)), False),
    "lcm": (np.lcm, None, True),
    "gcd": (np.gcd, None, True),
    "bitwise_and": (np.bitwise_and, None, True),
    "bitwise_or": (np.bitwise_or, None, True),
    "bitwise_xor": (np.bitwise_xor, None, True),
}


def _binary_ufunc(attrs, a, b):
    name = attrs["function"]
    fn, _, ints_only = BINARY_UFUNCS[name]
    if ints_only and (a.dtype.kind not in "biu" or b.dtype.kind not in "biu"):
        raise OpError(f"np.{name}: takes integer or bool arrays, got {a.dtype.name} and "
                      f"{b.dtype.name}")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.asarray(fn(a, b))
    return out.astype(_binary_ufunc_dtype(name, a.dtype, b.dtype), copy=False)


FLOAT_VALUED = ("copysign", "arctan2", "ldexp")


def _binary_ufunc_dtype(name, a, b):
    """The operands' (mx.np promotes them to one first); float32 for integer data of the
    FLOAT_VALUED functions (NumPy's float result in mx.np's default float)."""
    dtype = np.result_type(a, b)
    return np.dtype(np.float32) if name in FLOAT_VALUED and dtype.kind in "biu" else dtype


def _binary_ufunc_grad(attrs, og, a, b):
    """MXNet's gradients, summed back over broadcasting; zero for integer data (MXNet's
    kernels return 0 for ints, mshadow_op's mod_grad) and for the integer functions."""
    _, grads, _ = BINARY_UFUNCS[attrs["function"]]
    if grads is None or og.dtype.kind != "f":
        return np.zeros(a.shape, a.dtype), np.zeros(b.shape, b.dtype)
    ab, bb = np.broadcast_to(a, og.shape), np.broadcast_to(b, og.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = _binary_ufunc(attrs, ab, bb)
        ga, gb = grads(og, ab, bb, y)
    return (_unbroadcast(np.asarray(ga), a.shape).astype(a.dtype, copy=False),
            _unbroadcast(np.asarray(gb), b.shape).astype(b.dtype, copy=False))


register("_npi_binary", inputs=("lhs", "rhs"), placement="host",
         attrs={"function": Attr("str", required=True, choices=tuple(BINARY_UFUNCS))},
         forward=_binary_ufunc, infer_shape=_broadcast_shape, key_attrs=("function",),
         infer_dtype=lambda attrs, d: _binary_ufunc_dtype(attrs["function"], *d),
         gradient=lambda F, a, i, o, og: list(F._npi_binary_grad(og[0], i[0], i[1], **a)),
         doc="np.copysign, arctan2, ldexp, fmod, mod, lcm, gcd, bitwise_and/or/xor "
             "(`function`) of lhs and rhs, broadcast together.")
register("_npi_binary_grad", inputs=("out_grad", "lhs", "rhs"), placement="host",
         attrs={"function": Attr("str", required=True, choices=tuple(BINARY_UFUNCS))},
         num_outputs=2, forward=_binary_ufunc_grad, index_inputs=("out_grad",),
         infer_dtype=lambda attrs, dtypes: [dtypes[1], dtypes[2]],
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]), key_attrs=("function",),
         doc="The gradients of _npi_binary (and broadcast_mod's) to lhs and rhs.")


# ------------------------------------------------------------------ linalg.norm
# np.linalg.norm for the orders the legacy `norm` op (ord 1 and 2 of vectors, the
# Frobenius norm) does not compute: any p of vectors, inf, -inf, 0; the matrix norms
# 1, -1, 2, -2, inf, -inf, 'nuc'. `ord` is written as in Python ("2", "-3.2", "inf",
# "'fro'", "None"), `axis` too ("None", "1", "(0, 2)").
def _norm_ord(attrs):
    text = attrs["ord"]
    if text is not None and text.strip("'\"") in ("inf", "-inf"):
        return float(text.strip("'\""))
    return _literal(text)


def _norm_axes(attrs, ndim):
    """The axes np.linalg.norm reduces (non-negative), and whether they form a matrix."""
    axis, ord_ = _literal(attrs["axis"]), _norm_ord(attrs)
    if axis is None:
        axes = tuple(range(ndim)) if ord_ is None or ndim <= 2 else None
        if axes is None:
            raise OpError(f"np.linalg.norm: ord={ord_!r} with axis=None needs a 1-D or 2-D "
                          f"array, got {ndim}-D")
        return axes, ndim == 2 and ord_ is not None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) not in (1, 2) or any(not -ndim <= a < ndim for a in axes):
        raise OpError(f"np.linalg.norm: axis {axis!r} is not one or two axes of a {ndim}-D "
                      f"array")
    return tuple(a % ndim for a in axes), len(axes) == 2


def _norm(attrs, x):
    axis = _literal(attrs["axis"])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        try:
            out = np.linalg.norm(x, _norm_ord(attrs), axis, attrs["keepdims"])
        except np.linalg.LinAlgError:       # an SVD of NaN or inf: NaN, as linalg's ops
            return np.full(_norm_shape(attrs, [x.shape])[1][0], np.nan, x.dtype)
        except (ValueError, TypeError) as err:
            raise OpError(f"np.linalg.norm: {err} (array of shape {x.shape}, ord "
                          f"{attrs['ord']}, axis {attrs['axis']})") from None
    return np.asarray(out).astype(x.dtype, copy=False)


def _norm_shape(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    axes, _ = _norm_axes(attrs, len(x))
    if attrs["keepdims"]:
        return in_shapes, [tuple(1 if k in axes else d for k, d in enumerate(x))]
    return in_shapes, [tuple(d for k, d in enumerate(x) if k not in axes)]


def _extreme_mask(values, target):
    """1 where values equal target (shared equally between ties), else 0."""
    hit = (values == target).astype(np.float64)
    return hit / np.maximum(hit.sum(axis=-1, keepdims=True), 1)


def _norm_grad(attrs, og, x):
    """d norm / d x, times the output gradient (NumPy's definitions; MXNet's formulas)."""
    axes, matrix = _norm_axes(attrs, x.ndim)
    ord_ = _norm_ord(attrs)
    keep = dict(attrs, keepdims=True)
    y = _norm(keep, x.astype(np.float64))
    g = og.reshape(y.shape).astype(np.float64)
    xf = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if ord_ in (None, "fro") or (not matrix and ord_ == 2):
            d = np.where(y == 0, 0, xf / y)
        elif not matrix:
            a = np.abs(xf)
            if ord_ == 1:
                d = np.sign(xf)
            elif ord_ == 0:
                d = np.zeros_like(xf)
            elif np.isinf(ord_):
                flat = np.moveaxis(a, axes[0], -1)
                d = np.moveaxis(_extreme_mask(flat, np.moveaxis(y, axes[0], -1)), -1,
                                axes[0]) * np.sign(xf)
            else:
                d = np.where(y == 0, 0, np.sign(xf) * (a / y) ** (ord_ - 1))
        else:
            m = np.moveaxis(xf, axes, (-2, -1))
            if ord_ in ("nuc", 2, -2):
                try:
                    u, _, vh = np.linalg.svd(m, full_matrices=False)
                except np.linalg.LinAlgError:
                    return np.full(x.shape, np.nan, x.dtype)
                if ord_ == "nuc":
                    dm = u @ vh
                else:
                    k = 0 if ord_ == 2 else -1
                    dm = u[..., :, k:k + 1 or None] @ vh[..., k:k + 1 or None, :]
            else:            # 1, -1: the largest/smallest column sum; inf, -inf: row sum
                rows = np.isinf(ord_)
                sums = np.abs(m).sum(axis=-1 if rows else -2)
                pick = _extreme_mask(sums, (np.max if ord_ > 0 else np.min)(
                    sums, axis=-1, keepdims=True))
                dm = np.sign(m) * (pick[..., :, None] if rows else pick[..., None, :])
            d = np.moveaxis(dm, (-2, -1), axes)
    return (g * d).astype(x.dtype, copy=False)


NORM_ATTRS = {"ord": Attr("str", None), "axis": Attr("str", None),
              "keepdims": Attr("bool", False)}
register("_npi_norm", placement="host", attrs=dict(NORM_ATTRS), forward=_norm,
         infer_shape=_norm_shape,
         gradient=lambda F, a, i, o, og: [F._npi_norm_grad(og[0], i[0], **a)],
         doc="np.linalg.norm(x, ord, axis, keepdims) for every order NumPy has (vector "
             "p-norms, inf, the matrix norms 1, 2, inf, -1, -2, -inf, 'nuc', 'fro').")
register("_npi_norm_grad", inputs=("out_grad", "data"), placement="host",
         attrs=dict(NORM_ATTRS), forward=_norm_grad, index_inputs=("out_grad",),
         infer_shape=lambda attrs, s: (s, [s[1]]),
         doc="The gradient of _npi_norm.")


# -------------------------------------------------------------------- matmul
def _unbroadcast(g, shape):
    """g summed back to `shape`, which broadcasting (numpy's rules) made it from."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    ones = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return g.sum(axis=ones, keepdims=True) if ones else g


def _matmul(attrs, a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise OpError(f"np.matmul: operands must have at least one axis, got shapes "
                      f"{a.shape} and {b.shape} (use * for a number)")
    try:
        return np.matmul(a, b)
    except ValueError as err:
        raise OpError(f"np.matmul: {err} (shapes {a.shape} and {b.shape})") from None


def _matmul_grad(attrs, og, a, b):
    """og @ b^T and a^T @ og, with a 1-D a (b) read as a row (column), summed back over
    the broadcast batch axes."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    og2 = og[..., None] if b.ndim == 1 else og
    og2 = np.expand_dims(og2, -2) if a.ndim == 1 else og2
    ga = _unbroadcast(np.matmul(og2, np.swapaxes(b2, -1, -2)), a2.shape).reshape(a.shape)
    gb = _unbroadcast(np.matmul(np.swapaxes(a2, -1, -2), og2), b2.shape).reshape(b.shape)
    return ga.astype(a.dtype, copy=False), gb.astype(b.dtype, copy=False)


def _matmul_shape(attrs, in_shapes):
    if not all(s is not None and is_complete(s) for s in in_shapes):
        return in_shapes, [None]
    probes = [np.broadcast_to(np.zeros((), np.int8), s) for s in in_shapes]
    return in_shapes, [_matmul(attrs, *probes).shape]


register("_npi_matmul", inputs=("a", "b"), placement="host", forward=_matmul,
         infer_shape=_matmul_shape,
         gradient=lambda F, a, i, o, og: list(F._npi_matmul_grad(og[0], i[0], i[1])),
         doc="np.matmul(a, b): matrix products over the last two axes, the others "
             "broadcast; a 1-D operand is a row (a) or a column (b) vector.")
register("_npi_matmul_grad", inputs=("out_grad", "a", "b"), placement="host",
         num_outputs=2, forward=_matmul_grad, index_inputs=("a", "b"),
         infer_dtype=lambda attrs, dtypes: [dtypes[1], dtypes[2]],
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="The gradient of np.matmul with respect to a and b.")


# ------------------------------------------------------------------ npx ops
register("erfinv", placement="host",
         forward=lambda attrs, x: scipy_special().erfinv(x).astype(x.dtype, copy=False),
         infer_shape=lambda attrs, s: (s, [s[0]]),
         gradient=lambda F, a, i, o, og: [og[0] * F.exp(F.square(o[0]))
                                          * float(np.sqrt(np.pi) / 2)],
         doc="The inverse error function: erf(erfinv(x)) = x for x in (-1, 1).")


def _constraint_check(attrs, x):
    if not np.all(x):
        raise OpError(f"npx.constraint_check: {attrs['msg']}")
    return np.array(True)


register("_npx_constraint_check", inputs=("input",), attrs={"msg": Attr("str", "")},
         placement="host", forward=_constraint_check, checks_values=True,
         infer_shape=lambda attrs, s: (s, [()]),
         infer_dtype=lambda attrs, dtypes: np.dtype(np.bool_),
         doc="True when every element of input is true; otherwise a ValueError saying "
             "msg (a check inside a traced graph).")
