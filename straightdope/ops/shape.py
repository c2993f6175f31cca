"""Ops that move data around: reshape, transpose, concat, split, slicing, casting,
creation (zeros/ones) and embedding lookups.

None of these is elementwise, so each one cuts a fusion group in the compiler.
"""
import math
import numpy as np

from .registry import (Attr, Bool, Choice, Float, Int, OpError, OptFloat, OptInt, OptShape, Shape, alias,
                       axis_in, is_complete, like_input, register, show_shape, unify)
from .elemwise import same_shape

DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8", "int8", "bool")


def mxnet_reshape(shape, spec, reverse=False):
    """Resolve MXNet's reshape codes: 0 copy a dim, -1 infer one, -2 copy the rest,
    -3 merge two dims, -4 split one dim in two (the next two numbers, one may be -1)."""
    src, spec = list(shape), list(spec)
    if reverse:
        src, spec = src[::-1], spec[::-1]
    out, i, j = [], 0, 0
    while j < len(spec):
        code = spec[j]
        if code > 0:
            out.append(code); i += 1
        elif code == 0:
            out.append(src[i]); i += 1
        elif code == -1:
            out.append(-1); i += 1
        elif code == -2:
            out.extend(src[i:]); i = len(src)
        elif code == -3:
            out.append(src[i] * src[i + 1]); i += 2
        elif code == -4:
            a, b = spec[j + 1], spec[j + 2]     # (reversed too with reverse=True)
            if a == -1:
                a = src[i] // b
            if b == -1:
                b = src[i] // a
            out.extend([a, b]); i += 1; j += 2
        else:
            raise OpError(f"reshape: unknown code {code} in shape {tuple(spec)}")
        j += 1
    if reverse:
        out = out[::-1]
    total = int(np.prod(shape))
    if out.count(-1) > 1:
        raise OpError(f"reshape: only one -1 is allowed in {tuple(spec)}")
    if -1 in out:
        rest = int(np.prod([d for d in out if d != -1]))
        if rest == 0 or total % rest:
            raise OpError(f"reshape: cannot reshape {tuple(shape)} ({total} elements) into "
                          f"{tuple(spec)}")
        out[out.index(-1)] = total // rest
    if int(np.prod(out)) != total:
        raise OpError(f"reshape: cannot reshape {tuple(shape)} ({total} elements) into "
                      f"{tuple(out)} ({int(np.prod(out))} elements)")
    return tuple(int(d) for d in out)


def _reshape_target(attrs, s):
    """reshape's output shape for data of shape `s`: from `shape` (MXNet's codes), or
    from the deprecated `target_shape` (one 0 in it is inferred; keep_highest keeps the
    first dim), as MXNet still reads old files that way."""
    if attrs["shape"] or attrs["target_shape"] is None:
        return mxnet_reshape(s, attrs["shape"], attrs["reverse"])
    out = list(attrs["target_shape"])
    if attrs["keep_highest"] and out:
        out[0] = s[0]
    zeros = [k for k in range(1 if attrs["keep_highest"] else 0, len(out)) if out[k] == 0]
    if len(zeros) == 1 and math.prod(d for d in out if d):
        out[zeros[0]] = math.prod(s) // math.prod(d for d in out if d)
    if math.prod(out) != math.prod(s):
        raise OpError(f"reshape: cannot reshape {tuple(s)} ({math.prod(s)} elements) into "
                      f"target_shape {attrs['target_shape']} ({tuple(out)})")
    return tuple(out)


def _reshape_shape(attrs, in_shapes):
    s = in_shapes[0]
    return in_shapes, [None if s is None else _reshape_target(attrs, s)]


def _reshape_partial(attrs, in_shapes, out_shapes):
    """reshape from a partly known data shape, as MXNet's: a known output with one unknown
    data dim gives that dim (the sizes must agree); otherwise each output dim that does
    not depend on the unknown dims is known, and an output dim that *is* one of them (code
    0) fills it when known."""
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    out = out_shapes[0] if out_shapes else None
    unknown = [k for k, d in enumerate(s) if d is None]
    if len(unknown) == 1 and is_complete(out):
        rest = math.prod(d for d in s if d is not None)
        if rest and math.prod(out) % rest == 0:
            s = tuple(math.prod(out) // rest if d is None else d for d in s)
    if is_complete(s):
        return [s], [_reshape_target(attrs, s)]
    runs = []
    for base in (1_000_003, 2_000_029):        # two sets of stand-ins for the unknown dims
        filled = list(s)
        for j, k in enumerate(unknown):
            filled[k] = base + 7 * j
        try:
            runs.append(_reshape_target(attrs, tuple(filled)))
        except OpError:
            return in_shapes, [None]
    (o1, o2), data = runs, list(s)
    stand_ins = {(1_000_003 + 7 * j, 2_000_029 + 7 * j): k for j, k in enumerate(unknown)}
    for d, (a, b) in enumerate(zip(o1, o2)):
        k = stand_ins.get((a, b))
        if k is not None and out is not None and len(out) == len(o1):
            data[k] = out[d]                    # the output dim is this data dim
    return [tuple(data)], [tuple(a if a == b else None for a, b in zip(o1, o2))]


_reshape_shape.partial = _reshape_partial
register("reshape", placement="view",
         attrs={"shape": Shape(()), "reverse": Bool(False), "target_shape": OptShape(None),
                "keep_highest": Bool(False)},
         forward=lambda attrs, x: x.reshape(_reshape_target(attrs, x.shape)).copy(),
         infer_shape=_reshape_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0])],
         key_attrs=("shape",),
         doc="reshape(data, shape) with MXNet's codes (0 copy, -1 infer, -2 rest, -3 merge, -4 split).")
alias("Reshape", "reshape")

RESHAPE_LIKE_ATTRS = {"lhs_begin": OptInt(), "lhs_end": OptInt(), "rhs_begin": OptInt(),
                      "rhs_end": OptInt()}


def _like_range(attrs, side, ndim):
    """MXNet's [begin, end) of lhs or rhs axes: None is the start or the end, negatives
    count from the end; an empty or out-of-range span is refused."""
    begin, end = attrs[side + "_begin"], attrs[side + "_end"]
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b < e <= ndim:
        raise OpError(f"reshape_like: {side}_begin={begin}, {side}_end={end} is not a "
                      f"non-empty range of the {ndim} axes of {side}")
    return b, e


def reshape_like_target(attrs, lhs, rhs):
    """The output shape: lhs with its axes [lhs_begin, lhs_end) replaced by rhs's axes
    [rhs_begin, rhs_end) (all of them by default: rhs's shape)."""
    if all(v is None for v in attrs.values()):
        return tuple(rhs)
    lb, le = _like_range(attrs, "lhs", len(lhs))
    rb, re_ = _like_range(attrs, "rhs", len(rhs))
    return tuple(lhs[:lb]) + tuple(rhs[rb:re_]) + tuple(lhs[le:])


def _reshape_like_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if rhs is None or lhs is None and any(v is not None for v in attrs.values()):
        return in_shapes, [None]
    out = reshape_like_target(attrs, lhs, rhs) if lhs is not None else tuple(rhs)
    if is_complete(lhs) and is_complete(out) and math.prod(lhs) != math.prod(out):
        raise OpError(f"reshape_like: lhs of shape {lhs} ({math.prod(lhs)} elements) cannot "
                      f"take the shape {out} ({math.prod(out)} elements)")
    return in_shapes, [out]


register("reshape_like", placement="view", inputs=("lhs", "rhs"), attrs=dict(RESHAPE_LIKE_ATTRS),
         forward=lambda attrs, x, like: x.reshape(
             reshape_like_target(attrs, x.shape, like.shape)).copy(),
         infer_shape=_reshape_like_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0]), None],
         doc="reshape_like(lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, "
             "rhs_end=None): lhs with the shape of rhs, or with its axes [lhs_begin, lhs_end) "
             "replaced by rhs's axes [rhs_begin, rhs_end).")


def _flatten_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    return in_shapes, [(s[0], int(np.prod(s[1:]))) if len(s) > 1 else (s[0], 1)]


register("Flatten", placement="view",   # not reshape(n, -1): that fails for a batch of 0
         forward=lambda attrs, x: x.reshape(x.shape[0], math.prod(x.shape[1:])).copy(),
         infer_shape=_flatten_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0])],
         doc="Flatten(data): keep the batch axis, merge all the others.")
alias("flatten", "Flatten")


def _flatten_leading_shape(attrs, in_shapes):
    s = in_shapes[0]
    return in_shapes, [None if s is None else (int(np.prod(s[:-1])), s[-1])]


register("_flatten_leading", placement="view",
         forward=lambda attrs, x: x.reshape(-1, x.shape[-1]).copy(),
         infer_shape=_flatten_leading_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0])],
         doc="Merge all axes but the last (used by FullyConnected(flatten=False)'s gradient).")


def _transpose_axes(attrs, ndim):
    axes = attrs["axes"]
    if not axes:
        return tuple(range(ndim))[::-1]
    normal = tuple(a + ndim if a < 0 else a for a in axes)
    if sorted(normal) != list(range(ndim)):
        raise OpError(f"transpose: axes {axes} is not a permutation of the {ndim} axes of the "
                      f"data")
    return normal


def _transpose_grad(F, attrs, inputs, outputs, out_grads):
    ndim_unknown = not attrs["axes"]
    if ndim_unknown:
        return [F.transpose(out_grads[0])]
    inverse = tuple(int(i) for i in np.argsort(_transpose_axes(attrs, len(attrs["axes"]))))
    return [F.transpose(out_grads[0], axes=inverse)]


def _transpose_forward(attrs, x):
    y = np.transpose(x, _transpose_axes(attrs, x.ndim))
    return y if y.flags.c_contiguous else y.copy()  # (np.ascontiguousarray makes 0-d 1-d)


register("transpose", placement="kernel", attrs={"axes": Shape(())},
         forward=_transpose_forward,
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else tuple(
             s[0][a] for a in _transpose_axes(attrs, len(s[0])))]),
         gradient=_transpose_grad, key_attrs=("axes",),
         doc="transpose(data, axes=()): reverse or permute axes.")


def _expand_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    axis = axis_in("expand_dims", attrs["axis"], s, extra=1)
    return in_shapes, [s[:axis] + (1,) + s[axis:]]


register("expand_dims", placement="view", attrs={"axis": Int(required=True)},
         forward=lambda attrs, x: np.expand_dims(
             x, axis_in("expand_dims", attrs["axis"], x.shape, extra=1)).copy(),
         infer_shape=_expand_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0])],
         doc="expand_dims(data, axis): insert an axis of length 1.")


# ----------------------------------------------------------- concat, split
def _squeeze_axes(attrs, shape):
    if attrs["axis"] is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = tuple(sorted({a + len(shape) if a < 0 else a for a in attrs["axis"]}))
    for a in axes:
        if not 0 <= a < len(shape) or shape[a] != 1:
            raise OpError(f"squeeze: axis {a} of shape {shape} is not of length 1; only "
                          f"axes of length 1 can be squeezed")
    return axes


def _squeeze_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    axes = _squeeze_axes(attrs, s)
    return in_shapes, [tuple(d for i, d in enumerate(s) if i not in axes)]


register("squeeze", placement="view", attrs={"axis": OptShape(None)},
         forward=lambda attrs, x: x.reshape(_squeeze_shape(attrs, [x.shape])[1][0]).copy(),
         infer_shape=_squeeze_shape,
         gradient=lambda F, a, i, o, og: [F.reshape_like(og[0], i[0])],
         doc="squeeze(data, axis=None): drop axes of length 1 (all of them, or those named).")


def _concat_shape(attrs, in_shapes):
    if any(s is None for s in in_shapes):
        return in_shapes, [None]
    dim = axis_in("concat", attrs["dim"], in_shapes[0])
    first = in_shapes[0]
    for s in in_shapes[1:]:
        if len(s) != len(first) or any(a != b for k, (a, b) in enumerate(zip(s, first)) if k != dim):
            raise OpError(f"concat: shapes {in_shapes} differ outside dim {dim}")
    out = list(first)
    out[dim] = sum(s[dim] for s in in_shapes)
    return in_shapes, [tuple(out)]


def _concat_partial(attrs, in_shapes, out_shapes):
    """Partly known shapes: outside `dim` all inputs and the output agree; along it the
    output is the sum, or, if the output is known, it tells the one input left unknown."""
    ranks = {len(s) for s in list(in_shapes) + list(out_shapes) if s is not None}
    if len(ranks) != 1:
        if len(ranks) > 1:
            raise OpError(f"concat: shapes {in_shapes} have different numbers of dimensions")
        return in_shapes, out_shapes
    rank = ranks.pop()
    dim = axis_in("concat", attrs["dim"], (None,) * rank)
    unknown = (None,) * rank

    def outside(s):
        return tuple(None if k == dim else d for k, d in enumerate(s or unknown))

    common = unify(*[outside(s) for s in list(in_shapes) + list(out_shapes)])
    lengths = [(s or unknown)[dim] for s in in_shapes]
    total = (out_shapes[0] or unknown)[dim]
    if None not in lengths:
        if total not in (None, sum(lengths)):
            raise OpError(f"concat: inputs of lengths {lengths} along dim {dim} cannot make "
                          f"an output of length {total}")
        total = sum(lengths)
    elif total is not None and lengths.count(None) == 1:
        lengths[lengths.index(None)] = total - sum(d for d in lengths if d is not None)

    def with_length(length):
        return common[:dim] + (length,) + common[dim + 1:]

    return [with_length(d) for d in lengths], [with_length(total)]


_concat_shape.partial = _concat_partial


register("concat", placement="kernel",
         variadic=True, attrs={"dim": Int(1), "num_args": OptInt(None)},
         forward=lambda attrs, *xs: np.concatenate(
             xs, axis=axis_in("concat", attrs["dim"], xs[0].shape if xs else ())),
         infer_shape=_concat_shape,
         gradient=lambda F, a, i, o, og: [F._concat_grad(og[0], *i, dim=a["dim"], index=k)
                                          for k in range(len(i))],
         key_attrs=("dim",),
         doc="concat(*data, dim=1): join arrays along `dim`.")
alias("Concat", "concat")
# MXNet's gluon.rnn layers join their flattened weights with `_rnn_param_concat`, a concat
# whose only difference is shape inference from the output: their exported graphs use it.
alias("_rnn_param_concat", "concat")
alias("_npi_rnn_param_concat", "concat")


def _concat_grad_forward(attrs, og, *xs):
    dim, k = attrs["dim"] % og.ndim, attrs["index"]
    start = sum(x.shape[dim] for x in xs[:k])
    return np.ascontiguousarray(np.take(og, range(start, start + xs[k].shape[dim]), axis=dim))


register("_concat_grad", placement="kernel", variadic=True, attrs={"dim": Int(1), "index": Int(0)},
         forward=_concat_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1 + attrs["index"]]]),
         doc="The slice of concat's gradient that belongs to input `index`.")


def _split_shape(attrs, in_shapes):
    s = in_shapes[0]
    n = attrs["num_outputs"]
    if s is None:
        return in_shapes, [None] * n
    axis = axis_in("split", attrs["axis"], s)
    if s[axis] % n:
        raise OpError(f"split: axis {axis} of shape {s} has length {s[axis]}, which does not "
                      f"split into {n} equal parts")
    part = list(s)
    part[axis] //= n
    if attrs["squeeze_axis"]:
        if part[axis] != 1:
            raise OpError("split: squeeze_axis=True needs parts of length 1 along the axis")
        del part[axis]
    return in_shapes, [tuple(part)] * n


def _split_forward(attrs, x):
    parts = np.split(x, attrs["num_outputs"], axis=axis_in("split", attrs["axis"], x.shape))
    if attrs["squeeze_axis"]:
        parts = [np.squeeze(p, axis=attrs["axis"]) for p in parts]
    return tuple(np.ascontiguousarray(p) for p in parts)


def _split_grad(F, attrs, inputs, outputs, out_grads):
    grads = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs)]
    if attrs["squeeze_axis"]:
        grads = [F.expand_dims(g, axis=attrs["axis"]) for g in grads]
    return [F.concat(*grads, dim=attrs["axis"])]


register("split", placement="kernel",
         attrs={"num_outputs": Int(required=True, minimum=1), "axis": Int(1),
                "squeeze_axis": Bool(False)},
         forward=_split_forward, infer_shape=_split_shape, gradient=_split_grad,
         num_outputs=-1, key_attrs=("num_outputs",),
         doc="split(data, num_outputs, axis=1): equal parts along `axis`.")
alias("SliceChannel", "split")


def _whole_axis_partial(cuts_whole):
    """The partial rule of slice and slice_axis, as MXNet's: an output dim whose data dim
    is unknown stays unknown, unless the op keeps that axis whole (`cuts_whole(attrs, k,
    ndim)`): then the two are the same dim, and a known output dim fills the data's."""
    def partial(attrs, in_shapes, out_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None]
        known = out_shapes[0] if out_shapes and out_shapes[0] is not None \
            and len(out_shapes[0]) == len(s) else (None,) * len(s)
        stand_in = tuple(1_000_003 if d is None else d for d in s)    # any length
        computed = _full_shape(attrs, stand_in)
        data, out = list(s), []
        for k, d in enumerate(s):
            if d is not None:
                out.append(computed[k])
            elif cuts_whole(attrs, k, len(s)):
                data[k] = known[k]
                out.append(known[k])
            else:
                out.append(None)
        return [tuple(data)] + list(in_shapes[1:]), [tuple(out)]
    return partial


def _slice_keeps_whole(attrs, k, ndim):
    sl = _slices(attrs, (0,) * ndim)[k]
    return sl.start in (None, 0) and sl.stop is None and sl.step in (None, 1, -1)


def _slice_axis_keeps_whole(attrs, k, ndim):
    return k != attrs["axis"] % ndim or (attrs["begin"] == 0 and attrs["end"] is None)


def _slice_axis_range(attrs, n):
    begin, end = attrs["begin"], attrs["end"]
    begin = begin + n if begin < 0 else begin
    end = n if end is None else (end + n if end < 0 else end)
    if not 0 <= begin < end <= n:
        raise OpError(f"slice_axis: [{attrs['begin']}, {attrs['end']}) is empty or outside "
                      f"an axis of length {n}")
    return begin, end


def _slice_axis_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    axis = axis_in("slice_axis", attrs["axis"], s)
    b, e = _slice_axis_range(attrs, s[axis])
    return in_shapes, [s[:axis] + (e - b,) + s[axis + 1:]]


def _slice_axis_forward(attrs, x):
    axis = axis_in("slice_axis", attrs["axis"], x.shape)
    b, e = _slice_axis_range(attrs, x.shape[axis])
    return np.ascontiguousarray(np.take(x, range(b, e), axis=axis))


def _zeros_as(x):
    """Zeros for a slice's gradient. np.zeros, not zeros_like: its memory comes from the
    system untouched (calloc), so only the pages the slice writes are ever touched; a
    small slice of a 512 MB array costs the slice, not 512 MB of page faults."""
    return np.zeros(x.shape, x.dtype)


def _slice_axis_grad_forward(attrs, og, x):
    axis = attrs["axis"] % x.ndim
    b, e = _slice_axis_range(attrs, x.shape[axis])
    out = _zeros_as(x)
    index = [slice(None)] * x.ndim
    index[axis] = slice(b, e)
    out[tuple(index)] = og
    return out


SLICE_AXIS_ATTRS = {"axis": Int(required=True), "begin": Int(required=True), "end": OptInt(None)}
_slice_axis_shape.partial = _whole_axis_partial(_slice_axis_keeps_whole)
register("slice_axis", placement="kernel",
         attrs=dict(SLICE_AXIS_ATTRS), forward=_slice_axis_forward,
         infer_shape=_slice_axis_shape,
         gradient=lambda F, a, i, o, og: [F._slice_axis_grad(og[0], i[0], **a)],
         key_attrs=("axis", "begin", "end"),
         doc="slice_axis(data, axis, begin, end): the range [begin, end) of one axis.")
register("_slice_axis_grad", placement="kernel",
         inputs=("out_grad", "data"), attrs=dict(SLICE_AXIS_ATTRS),
         forward=_slice_axis_grad_forward, infer_shape=like_input(1),
         doc="Gradient of slice_axis: the slice placed back into zeros.")


def _slices(attrs, shape):
    begin, end, step = attrs["begin"], attrs["end"], attrs["step"] or ()
    out = []
    for k in range(len(shape)):
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        s = step[k] if k < len(step) else None
        out.append(slice(b, e, s))
    return tuple(out)


def _slice_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    out = tuple(len(range(*sl.indices(d))) for sl, d in zip(_slices(attrs, s), s))
    return in_shapes, [out]


def _full_shape(attrs, shape):
    """The output shape of slice or slice_axis (whichever `attrs` are) for a known shape."""
    if "axis" in attrs:
        return _slice_axis_shape(attrs, [shape])[1][0]
    return _slice_shape(attrs, [shape])[1][0]


def _slice_grad_forward(attrs, og, x):
    out = _zeros_as(x)
    out[_slices(attrs, x.shape)] = og
    return out


class _SliceSpec(Attr):
    """A tuple whose entries are ints or None, e.g. (0, None)."""

    def parse(self, op_name, attr_name, value):
        import ast
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise OpError(f"{op_name}: attribute '{attr_name}' must be a tuple of "
                              f"integers or None, got {value!r}") from None
        if value is None:
            return ()
        if isinstance(value, int):
            value = (value,)
        if not isinstance(value, (tuple, list)) or not all(
                v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in value):
            raise OpError(f"{op_name}: attribute '{attr_name}' must be a tuple of integers or "
                          f"None, got {value!r}")
        return tuple(value)


SLICE_ATTRS = {"begin": _SliceSpec("slice", ()), "end": _SliceSpec("slice", ()),
               "step": _SliceSpec("slice", ())}
def _slice_forward(attrs, x):
    view = x[_slices(attrs, x.shape) + (Ellipsis,)]     # `...`: a 0-d x stays 0-d
    return view if view.flags.c_contiguous else view.copy()


_slice_shape.partial = _whole_axis_partial(_slice_keeps_whole)
register("slice", placement="kernel", attrs=dict(SLICE_ATTRS), forward=_slice_forward,
         infer_shape=_slice_shape,
         gradient=lambda F, a, i, o, og: [F._slice_grad(og[0], i[0], **a)],
         doc="slice(data, begin, end, step): basic slicing, e.g. x[1:3, ::2].")
register("_slice_grad", placement="kernel", inputs=("out_grad", "data"), attrs=dict(SLICE_ATTRS),
         forward=_slice_grad_forward, infer_shape=like_input(1),
         doc="Gradient of slice.")


def _slice_assign_forward(attrs, x, value):
    out = x.copy()
    out[_slices(attrs, x.shape)] = value
    return out


def _slice_assign_scalar_forward(attrs, x):
    out = x.copy()
    out[_slices(attrs, x.shape)] = attrs["scalar"]
    return out


# x[begin:end:step] = value as ops that return a new array (MXNet's _slice_assign and
# _slice_assign_scalar, older names _crop_assign*); with out=x they write in place.
def _slice_assign_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if is_complete(lhs) and is_complete(rhs):
        part = _slice_shape(attrs, [lhs])[1][0]
        if np.broadcast_shapes(part, rhs) != part:
            raise OpError(f"_slice_assign: a value of shape {rhs} does not fit the slice of "
                          f"shape {part} of lhs {lhs}")
    return in_shapes, [lhs]


register("_slice_assign", inputs=("lhs", "rhs"), attrs=dict(SLICE_ATTRS),
         forward=_slice_assign_forward, infer_shape=_slice_assign_shape, placement="host",
         gradient=lambda F, a, i, o, og: [F._slice_assign_scalar(og[0], scalar=0.0, **a),
                                          F.slice(og[0], **a)],
         doc="_slice_assign(lhs, rhs, begin, end, step): lhs with that slice set to rhs.")
register("_slice_assign_scalar", attrs={**SLICE_ATTRS, "scalar": Float(0.0)},
         forward=_slice_assign_scalar_forward, infer_shape=same_shape, placement="host",
         gradient=lambda F, a, i, o, og: [F._slice_assign_scalar(
             og[0], scalar=0.0, begin=a["begin"], end=a["end"], step=a["step"])],
         doc="_slice_assign_scalar(data, scalar, begin, end, step): data with that slice "
             "set to scalar.")
alias("_crop_assign", "_slice_assign")
alias("_crop_assign_scalar", "_slice_assign_scalar")


# ----------------------------------------------------------- broadcasting
def _broadcast_to_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    target = tuple(d if t == 0 else t for d, t in zip(s, attrs["shape"])) \
        if len(attrs["shape"]) == len(s) else attrs["shape"]
    if -2 in target:        # np.broadcast_to's (npx) code: keep the data's dim there
        padded = (1,) * (len(target) - len(s)) + tuple(s)
        if len(s) > len(target):
            raise OpError(f"broadcast_to: cannot broadcast {s} to {attrs['shape']}")
        target = tuple(d if t == -2 else t for d, t in zip(padded, target))
    try:
        np.broadcast_shapes(s, target)
    except ValueError:
        raise OpError(f"broadcast_to: cannot broadcast {s} to {attrs['shape']}") from None
    return in_shapes, [tuple(target)]


def _broadcast_to_partial(attrs, in_shapes, out_shapes):
    """broadcast_to from a partly known data shape, as MXNet's: each output dim is the
    target's, known whatever the data's dim is (it must be 1 or the same); a kept dim (0,
    -2) is the data's, both ways (a known output dim fills the data's)."""
    s, shape = in_shapes[0], attrs["shape"]
    if s is None or len(s) > len(shape):
        return in_shapes, [None]
    keep = (0, -2) if len(shape) == len(s) else (-2,)
    lead = len(shape) - len(s)
    known = out_shapes[0] if out_shapes and out_shapes[0] is not None \
        and len(out_shapes[0]) == len(shape) else (None,) * len(shape)
    data, out = list(s), []
    for k, t in enumerate(shape):
        d = s[k - lead] if k >= lead else 1
        if t in keep:
            if d is None and k >= lead:
                data[k - lead] = d = known[k]
            out.append(d)
        elif d is not None and d not in (1, t):
            raise OpError(f"broadcast_to: cannot broadcast {show_shape(s)} to {shape}")
        else:
            out.append(t)
    return [tuple(data)], [tuple(out)]


_broadcast_to_shape.partial = _broadcast_to_partial
register("broadcast_to", placement="fused", attrs={"shape": Shape(required=True)},
         forward=lambda attrs, x: np.ascontiguousarray(
             np.broadcast_to(x, _broadcast_to_shape(attrs, [x.shape])[1][0])),
         infer_shape=_broadcast_to_shape,
         gradient=lambda F, a, i, o, og: [F._sum_to_like(og[0], i[0])],
         doc="broadcast_to(data, shape): repeat axes of length 1 (0 keeps a dim of equal-rank "
             "data; -2 keeps the data's dim, lined up from the right).")


def _broadcast_like_target(attrs, lhs, rhs):
    """The shape lhs is broadcast to: rhs's shape, or with lhs_axes/rhs_axes only those
    axes of lhs (each of length 1) take the length of the matching rhs axis."""
    lhs_axes, rhs_axes = attrs["lhs_axes"], attrs["rhs_axes"]
    if lhs_axes is None and rhs_axes is None:
        return tuple(rhs)
    if not lhs_axes or lhs_axes is None or rhs_axes is None or len(lhs_axes) != len(rhs_axes):
        raise OpError(f"broadcast_like: lhs_axes {lhs_axes} and rhs_axes {rhs_axes} must "
                      f"name as many axes, at least one (or leave both out to take rhs's "
                      f"whole shape)")
    target = list(lhs)
    for la, ra in zip(lhs_axes, rhs_axes):
        if not (-len(lhs) <= la < len(lhs) and -len(rhs) <= ra < len(rhs)):
            raise OpError(f"broadcast_like: axis pair ({la}, {ra}) is out of range for "
                          f"shapes {tuple(lhs)} and {tuple(rhs)}")
        target[la] = rhs[ra]
    return tuple(target)


def _broadcast_like_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return in_shapes, [rhs if attrs["lhs_axes"] is None else None]
    target = _broadcast_like_target(attrs, lhs, rhs)
    try:
        np.broadcast_shapes(lhs, target)
    except ValueError:
        raise OpError(f"broadcast_like: cannot broadcast {lhs} to {target}") from None
    return in_shapes, [target]


register("broadcast_like", placement="fused", inputs=("lhs", "rhs"),
         attrs={"lhs_axes": OptShape(None), "rhs_axes": OptShape(None)},
         forward=lambda attrs, x, like: np.ascontiguousarray(
             np.broadcast_to(x, _broadcast_like_target(attrs, x.shape, like.shape))),
         infer_shape=_broadcast_like_shape,
         gradient=lambda F, a, i, o, og: [F._sum_to_like(og[0], i[0]), None],
         doc="broadcast_like(lhs, rhs, lhs_axes=None, rhs_axes=None): lhs broadcast to "
             "the shape of rhs (or only lhs_axes take the lengths of rhs_axes).")
register("zeros_like", forward=lambda attrs, x: np.zeros_like(x), infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [None], scalar_expr="0.0", elementwise=True,
         doc="An array of zeros shaped like data.")
register("ones_like", forward=lambda attrs, x: np.ones_like(x), infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [None], scalar_expr="1.0", elementwise=True,
         doc="An array of ones shaped like data.")


def _creation(fill):
    def forward(attrs):
        return np.full(attrs["shape"], fill if fill is not None else attrs["value"],
                       dtype=attrs["dtype"])
    return forward


def _creation_shape(attrs, in_shapes):
    """A creation op's shape: its `shape`, where a -1 is a dim the graph's other ops
    decide (MXNet's sym.ones(shape=(2, -1)) + x: -1 becomes x's dim)."""
    return in_shapes, [tuple(None if d == -1 else d for d in attrs["shape"])]


def _created_shape(name):
    def complete(attrs, out_shapes):
        if -1 not in attrs["shape"]:
            return attrs
        if not is_complete(out_shapes[0]):
            raise OpError(f"{name}: shape {attrs['shape']} has dims (-1) that nothing in the "
                          f"graph decides; give them")
        return {**attrs, "shape": tuple(out_shapes[0])}
    return complete


CREATE_ATTRS = {"shape": Shape(required=True), "dtype": Choice(*DTYPES)}
for _name, _fill in [("_zeros", 0.0), ("_ones", 1.0), ("_full", None)]:
    attrs = dict(CREATE_ATTRS)
    if _fill is None:
        attrs["value"] = Float(0.0)
    register(_name, placement="fused", inputs=(), attrs=attrs, forward=_creation(_fill),
             infer_shape=_creation_shape, complete_attrs=_created_shape(_name),
             gradient=lambda F, a, i, o, og: [], doc=f"{_name[1:]}(shape, dtype).")


register("_eye", inputs=(), attrs={"N": Int(required=True, minimum=0), "M": Int(0, minimum=0),
                                   "k": Int(0), "ctx": Attr("str", ""),
                                   "dtype": Choice(*DTYPES)},
         forward=lambda attrs: np.eye(attrs["N"], attrs["M"] or None, attrs["k"],
                                      dtype=attrs["dtype"]),
         infer_shape=lambda attrs, s: (s, [(attrs["N"], attrs["M"] or attrs["N"])]),
         gradient=lambda F, a, i, o, og: [], placement="host",
         doc="eye(N, M=0, k=0, dtype): ones on diagonal k of an N x M (M=0: N) matrix.")


def _arange_count(attrs):
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:
        start, stop = 0.0, start
    if step == 0:
        raise OpError(f"_arange: step must not be 0, got {step}")
    return max(int(np.ceil((stop - start) / step)), 0) * attrs["repeat"]


def _arange(attrs):
    start = attrs["start"] if attrs["stop"] is not None else 0.0
    return range_values(start, attrs["step"], attrs["repeat"], _arange_count(attrs),
                        attrs["dtype"])


register("_arange", inputs=(), attrs={"start": Attr("float", required=True), "stop": OptFloat(),
                                      "step": Float(1.0), "repeat": Int(1, minimum=1),
                                      "infer_range": Bool(False), "ctx": Attr("str", ""),
                                      "dtype": Choice(*DTYPES)},
         forward=_arange, infer_shape=lambda attrs, s: (s, [(_arange_count(attrs),)]),
         gradient=lambda F, a, i, o, og: [], placement="host",
         doc="arange(start, stop=None, step=1, repeat=1, dtype): start, start + step, ... "
             "below stop, each `repeat` times (sym.arange; nd.arange computes it directly).")


# ------------------------------------------------------------------ casting
register("Cast", placement="fused", attrs={"dtype": Choice(*DTYPES)}, dtype_rule="attr",
         forward=lambda attrs, x: x.astype(attrs["dtype"]),
         infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [F._cast_like(og[0], i[0])],
         doc="Cast(data, dtype): convert the element type.")
alias("cast", "Cast")
register("_cast_like", placement="fused",
         inputs=("data", "like"), infer_dtype=lambda attrs, dtypes: dtypes[1],
         forward=lambda attrs, x, like: x.astype(like.dtype),
         infer_shape=like_input(0),
         doc="Cast data to the element type of `like` (Cast's gradient).")


# mx.np's dtype promotion (numpy/multiarray.py) for a traced graph, where the dtype is
# known only when the graph is compiled for its inputs: bool and int data become int64
# for a sum, float32 for a mean, a true division or a product with a Python float.
def np_promoted(rule, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind not in "biu":
        return dtype
    return np.dtype(np.int64 if rule == "sum" else np.float32)


register("_np_promote", attrs={"rule": Choice("sum", "mean", "divide", "float")},
         forward=lambda attrs, x: x.astype(np_promoted(attrs["rule"], x.dtype)),
         infer_shape=same_shape, placement="host",
         infer_dtype=lambda attrs, dtypes: np_promoted(attrs["rule"], dtypes[0]),
         gradient=lambda F, a, i, o, og: [F._cast_like(og[0], i[0])],
         doc="x in the dtype mx.np's rules give it for a sum, mean, division or a float "
             "operand (unchanged if it is a float already).")


def np_binary_dtype(a, b):
    """The dtype of `a OP b` for two mx.np arrays of dtypes a and b: NumPy's promotion
    when both are floats or neither is (int8 + int32 is int32, float16 * float64 float64,
    bool + int8 int8), else the float's own (int32 + float16 is float16, where NumPy
    widens), as MXNet 2.0's np ops compute."""
    a, b = np.dtype(a), np.dtype(b)
    if (a.kind == "f") == (b.kind == "f"):
        return np.promote_types(a, b)
    return a if a.kind == "f" else b


register("_np_promote_with", inputs=("data", "other"), placement="lowered",
         forward=lambda attrs, x, other: x.astype(np_binary_dtype(x.dtype, other.dtype),
                                                  copy=False),
         infer_shape=lambda attrs, s: (s, [s[0]]),
         infer_dtype=lambda attrs, dtypes: np_binary_dtype(*dtypes),
         gradient=lambda F, a, i, o, og: [F._cast_like(og[0], i[0]), None],
         doc="data in the dtype of `data OP other` (np_binary_dtype): how a traced mx.np "
             "binary op meets operands of two dtypes (float32 * bool). The compiler "
             "lowers it to a Cast, or to nothing when the dtypes agree.")


# ---------------------------------------------------------------- embedding
def _embedding_shape(attrs, in_shapes):
    data, weight = in_shapes
    w = (attrs["input_dim"], attrs["output_dim"])
    if weight is not None and tuple(weight) != w:
        raise OpError(f"Embedding: weight has shape {weight}, expected {w}")
    return [data, w], [None if data is None else tuple(data) + (attrs["output_dim"],)]


def _embedding_forward(attrs, data, weight):
    idx = np.clip(data.astype(np.int64), 0, attrs["input_dim"] - 1)
    return weight[idx]


def _embedding_grad_forward(attrs, og, data, weight):
    idx = np.clip(data.astype(np.int64), 0, attrs["input_dim"] - 1).reshape(-1)
    out = np.zeros_like(weight)
    np.add.at(out, idx, og.reshape(-1, weight.shape[1]))
    return out


# input_dim >= 1 as in MXNet: an empty table has no row to give (and a compiled lookup
# would read outside it)
EMBED_ATTRS = {"input_dim": Int(required=True, minimum=1), "output_dim": Int(required=True),
               "dtype": Choice(*DTYPES), "sparse_grad": Bool(False)}
# the indices (data) do not decide the dtype, the table (weight) does
register("Embedding", placement="kernel", inputs=("data", "weight"), attrs=dict(EMBED_ATTRS),
         index_inputs=("data",), key_attrs=("output_dim",),
         forward=_embedding_forward, infer_shape=_embedding_shape,
         gradient=lambda F, a, i, o, og: [None, F._embedding_grad(og[0], i[0], i[1], **a)],
         doc="Embedding(data, weight, input_dim, output_dim): rows of weight picked by index.")
register("_embedding_grad", placement="kernel",
         inputs=("out_grad", "data", "weight"), attrs=dict(EMBED_ATTRS),
         forward=_embedding_grad_forward, infer_shape=like_input(2),
         doc="Gradient of Embedding wrt its weight (rows summed per index).")
alias("crop", "slice")                 # MXNet's older name


# ------------------------------------------------ repeating, padding, axes (MXNet names)
def _tile_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    reps = attrs["reps"]
    n = max(len(s), len(reps))
    s, reps = (1,) * (n - len(s)) + tuple(s), (1,) * (n - len(reps)) + tuple(reps)
    return in_shapes, [tuple(d * r for d, r in zip(s, reps))]


def _tile_grad_forward(attrs, og, x):
    """Sum the gradient over the copies: view it as (copies, length) pairs per axis."""
    reps = (1,) * (og.ndim - len(attrs["reps"])) + tuple(attrs["reps"])
    shape = (1,) * (og.ndim - x.ndim) + x.shape
    paired = og.reshape([v for r, d in zip(reps, shape) for v in (r, d)])
    return paired.sum(axis=tuple(range(0, paired.ndim, 2))).reshape(x.shape).astype(og.dtype)


register("tile", placement="host", attrs={"reps": Shape(required=True)},
         forward=lambda attrs, x: np.tile(x, attrs["reps"]), infer_shape=_tile_shape,
         gradient=lambda F, a, i, o, og: [F._tile_grad(og[0], i[0], **a)],
         doc="tile(data, reps): data repeated reps[k] times along axis k (as np.tile).")
register("_tile_grad", placement="host", inputs=("out_grad", "data"),
         attrs={"reps": Shape(required=True)},
         forward=_tile_grad_forward, infer_shape=like_input(1),
         doc="Gradient of tile.")


def _repeat_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        return in_shapes, [(int(np.prod(s)) * attrs["repeats"],)]
    out = list(s)
    out[axis_in("repeat", attrs["axis"], s)] *= attrs["repeats"]
    return in_shapes, [tuple(out)]


def _repeat_grad_forward(attrs, og, x):
    axis, r = attrs["axis"], attrs["repeats"]
    if axis is None:
        return og.reshape(-1, r).sum(axis=1).reshape(x.shape).astype(og.dtype)
    axis %= x.ndim
    split = og.reshape(x.shape[:axis] + (x.shape[axis], r) + x.shape[axis + 1:])
    return split.sum(axis=axis + 1).astype(og.dtype)


REPEAT_ATTRS = {"repeats": Int(required=True, minimum=0), "axis": OptInt(None)}
register("repeat", placement="host", attrs=dict(REPEAT_ATTRS),
         forward=lambda attrs, x: np.repeat(x, attrs["repeats"], axis=attrs["axis"]),
         infer_shape=_repeat_shape,
         gradient=lambda F, a, i, o, og: [F._repeat_grad(og[0], i[0], **a)],
         doc="repeat(data, repeats, axis=None): each element `repeats` times (as np.repeat; "
             "flattened first when axis is None).")
register("_repeat_grad", placement="host", inputs=("out_grad", "data"), attrs=dict(REPEAT_ATTRS),
         forward=_repeat_grad_forward, infer_shape=like_input(1),
         doc="Gradient of repeat.")


def _swapaxes_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    out = list(s)
    out[attrs["dim1"]], out[attrs["dim2"]] = out[attrs["dim2"]], out[attrs["dim1"]]
    return in_shapes, [tuple(out)]


register("SwapAxis", placement="host", attrs={"dim1": Int(0), "dim2": Int(0)},
         forward=lambda attrs, x: np.ascontiguousarray(np.swapaxes(x, attrs["dim1"],
                                                                   attrs["dim2"])),
         infer_shape=_swapaxes_shape,
         gradient=lambda F, a, i, o, og: [F.SwapAxis(og[0], **a)],
         doc="SwapAxis(data, dim1=0, dim2=0): exchange two axes.")
alias("swapaxes", "SwapAxis")


def _pad_pairs(attrs, ndim):
    width = attrs["pad_width"]
    if len(width) != 2 * ndim:
        raise OpError(f"pad: pad_width needs two numbers (before, after) per axis, "
                      f"{2 * ndim} for {ndim} axes; got {width}")
    return [(width[2 * k], width[2 * k + 1]) for k in range(ndim)]


def _pad_forward(attrs, x):
    pairs = _pad_pairs(attrs, x.ndim)
    if attrs["mode"] == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=attrs["constant_value"])
    return np.pad(x, pairs, mode=attrs["mode"])


def _pad_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    return in_shapes, [tuple(d + a + b for d, (a, b) in zip(s, _pad_pairs(attrs, len(s))))]


def _pad_grad_forward(attrs, og, x):
    """Every output element came from one input element (or from the constant): pad the
    input's flat positions the same way, then add the gradient back at them."""
    pairs = _pad_pairs(attrs, x.ndim)
    positions = np.arange(x.size).reshape(x.shape)
    if attrs["mode"] == "constant":
        positions = np.pad(positions, pairs, mode="constant", constant_values=-1)
    else:
        positions = np.pad(positions, pairs, mode=attrs["mode"])
    keep = positions >= 0
    grad = np.zeros(x.size, dtype=og.dtype)
    np.add.at(grad, positions[keep], og[keep])
    return grad.reshape(x.shape)


PAD_ATTRS = {"mode": Choice("constant", "edge", "reflect"), "pad_width": Shape(required=True),
             "constant_value": Float(0.0)}
register("pad", placement="host", attrs=dict(PAD_ATTRS), forward=_pad_forward,
         infer_shape=_pad_shape,
         gradient=lambda F, a, i, o, og: [F._pad_grad(og[0], i[0], **a)],
         doc="pad(data, mode='constant'|'edge'|'reflect', pad_width, constant_value=0): "
             "pad_width lists (before, after) for every axis, e.g. (0,0, 0,0, 1,1, 2,2).")
alias("Pad", "pad")
register("_pad_grad", placement="host", inputs=("out_grad", "data"), attrs=dict(PAD_ATTRS),
         forward=_pad_grad_forward, infer_shape=like_input(1),
         doc="Gradient of pad.")


def _slice_like_key(attrs, shape, like):
    axes = attrs["axes"] or tuple(range(min(len(shape), len(like))))
    key = [slice(None)] * len(shape)
    for axis in axes:
        key[axis] = slice(0, like[axis])
    return tuple(key)


def _slice_like_shape(attrs, in_shapes):
    s, like = in_shapes
    if s is None or like is None:
        return in_shapes, [None]
    key = _slice_like_key(attrs, s, like)
    return in_shapes, [tuple(len(range(*k.indices(d))) for k, d in zip(key, s))]


def _slice_like_grad_forward(attrs, og, x):
    out = _zeros_as(x)
    out[tuple(slice(0, n) for n in og.shape)] = og
    return out


register("slice_like", placement="host", inputs=("data", "shape_like"), attrs={"axes": Shape(())},
         forward=lambda attrs, x, like: np.ascontiguousarray(
             x[_slice_like_key(attrs, x.shape, like.shape)]),
         infer_shape=_slice_like_shape,
         gradient=lambda F, a, i, o, og: [F._slice_like_grad(og[0], i[0]), None],
         doc="slice_like(data, shape_like, axes=()): the leading part of data with "
             "shape_like's lengths on `axes` (all axes when empty).")
register("_slice_like_grad", placement="host", inputs=("out_grad", "data"),
         forward=_slice_like_grad_forward, infer_shape=like_input(1),
         doc="Gradient of slice_like.")


def _broadcast_axes_target(attrs, shape):
    target = list(shape)
    for axis, size in zip(attrs["axis"], attrs["size"]):
        if shape[axis] != 1:
            raise OpError(f"broadcast_axes: axis {axis} of shape {tuple(shape)} has length "
                          f"{shape[axis]}; only axes of length 1 can be broadcast")
        target[axis] = size
    return tuple(target)


register("broadcast_axes", placement="host", attrs={"axis": Shape(()), "size": Shape(())},
         forward=lambda attrs, x: np.ascontiguousarray(
             np.broadcast_to(x, _broadcast_axes_target(attrs, x.shape))),
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else
                                           _broadcast_axes_target(attrs, s[0])]),
         gradient=lambda F, a, i, o, og: [F._sum_to_like(og[0], i[0])],
         doc="broadcast_axes(data, axis, size): axes of length 1 repeated to `size`.")
alias("broadcast_axis", "broadcast_axes")


def _split_v2_bounds(attrs, n):
    """(start, stop) of each part: `indices` are MXNet's split points (0 first), or
    `sections` equal parts."""
    if attrs["sections"] > 0:
        if n % attrs["sections"]:
            raise OpError(f"split_v2: an axis of length {n} does not split into "
                          f"{attrs['sections']} equal parts")
        points = list(range(0, n, n // attrs["sections"])) if n else [0] * attrs["sections"]
    else:
        points = list(attrs["indices"])
    return list(zip(points, points[1:] + [n]))


def _split_v2_forward(attrs, x):
    axis = axis_in("split_v2", attrs["axis"], x.shape)
    parts = []
    for start, stop in _split_v2_bounds(attrs, x.shape[axis]):
        key = (slice(None),) * axis + (slice(start, stop),)
        part = x[key]
        parts.append(np.ascontiguousarray(np.squeeze(part, axis) if attrs["squeeze_axis"]
                                          else part))
    return tuple(parts)


def _split_v2_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None] * _split_v2_count(attrs)
    axis = axis_in("split_v2", attrs["axis"], s)
    shapes = []
    for start, stop in _split_v2_bounds(attrs, s[axis]):
        part = list(s)
        part[axis] = max(0, min(stop, s[axis]) - start)
        if attrs["squeeze_axis"]:
            del part[axis]
        shapes.append(tuple(part))
    return in_shapes, shapes


def _array_split_attrs(attrs, n):
    """np.array_split's parts: of `sections`, the first n % sections one longer."""
    if attrs["sections"] <= 0:
        return attrs
    size, extra = divmod(n, attrs["sections"])
    return {**attrs, "sections": 0, "indices": tuple(
        k * size + (k if k < extra else extra) for k in range(attrs["sections"]))}


def _array_split_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None] * _split_v2_count(attrs)
    axis = axis_in("array_split", attrs["axis"], s)
    return _split_v2_shape(_array_split_attrs(attrs, s[axis]), in_shapes)


register("_npi_array_split", placement="host",
         attrs={"indices": Shape(()), "sections": Int(0), "axis": Int(0),
                "squeeze_axis": Bool(False)},
         forward=lambda attrs, x: _split_v2_forward(_array_split_attrs(
             attrs, x.shape[axis_in("array_split", attrs["axis"], x.shape)]), x),
         infer_shape=_array_split_shape, gradient=_split_grad,
         num_outputs=lambda attrs: _split_v2_count(attrs),
         doc="np.array_split's op: _split_v2 whose sections may be unequal (the first "
             "len % sections parts one longer).")


def _hsplit_attrs(attrs, ndim):
    """NumPy's hsplit splits axis 1, or axis 0 of a 1-D array (a 0-d one is refused)."""
    if ndim == 0:
        raise OpError("hsplit: a 0-d array has no axis to split (give at least 1-D data)")
    return {**attrs, "axis": 1 if ndim > 1 else 0, "squeeze_axis": False}


def _hsplit_grad(F, attrs, inputs, outputs, out_grads):
    grads = [g if g is not None else F.zeros_like(o) for g, o in zip(out_grads, outputs)]
    return [F._hsplit_concat_grad(*grads)]


def _hsplit_concat_shape(attrs, in_shapes):
    if any(s is None for s in in_shapes):
        return in_shapes, [None]
    axis = 1 if len(in_shapes[0]) > 1 else 0
    out = list(in_shapes[0])
    out[axis] = sum(s[axis] for s in in_shapes)
    return in_shapes, [tuple(out)]


register("_npi_hsplit", placement="host", attrs={"indices": Shape(()), "sections": Int(0)},
         forward=lambda attrs, x: _split_v2_forward(_hsplit_attrs(attrs, x.ndim), x),
         infer_shape=lambda attrs, s: (s, [None] * _split_v2_count(attrs)) if s[0] is None
         else _split_v2_shape(_hsplit_attrs(attrs, len(s[0])), s),
         gradient=_hsplit_grad, num_outputs=lambda attrs: _split_v2_count(attrs),
         doc="np.hsplit's op: _split_v2 along axis 1 (axis 0 of 1-D data).")
register("_hsplit_concat_grad", variadic=True, placement="host",
         forward=lambda attrs, *gs: np.concatenate(gs, axis=1 if gs[0].ndim > 1 else 0),
         infer_shape=_hsplit_concat_shape,
         doc="Gradient of hsplit: the parts' gradients joined along the axis it split.")


def _split_v2_count(attrs):
    return attrs["sections"] if attrs["sections"] > 0 else len(attrs["indices"])


register("_split_v2", placement="host",
         attrs={"indices": Shape(()), "sections": Int(0), "axis": Int(0),
                "squeeze_axis": Bool(False)},
         forward=_split_v2_forward, infer_shape=_split_v2_shape, gradient=_split_grad,
         num_outputs=_split_v2_count,
         doc="_split_v2(data, indices=(0, i1, ...) or sections=n, axis=0): the parts between "
             "split points (nd.split_v2 takes NumPy's indices_or_sections).")

def range_values(start, step, repeat, size, dtype):
    """`size` values start + (i // repeat) * step, as MXNet's range kernel computes them:
    in `dtype`, start and step cast to it first (integer dtypes in integer arithmetic)."""
    dtype = np.dtype(dtype)
    index = np.arange(size) // repeat
    if dtype.kind in "iub":
        return (int(start) + index * int(step)).astype(dtype)
    return (dtype.type(start) + index.astype(dtype) * dtype.type(step)).astype(dtype)


def _arange_like_shape(attrs, in_shapes):
    s, axis = in_shapes[0], attrs["axis"]
    if s is None or axis is None:
        return in_shapes, [s]
    return in_shapes, [(s[axis_in("arange_like", axis, s)],)]


register("_contrib_arange_like", placement="host",
         attrs={"start": Float(0.0), "step": Float(1.0), "repeat": Int(1, minimum=1),
                "ctx": Attr("str", ""), "axis": OptInt()},
         forward=lambda attrs, x: range_values(
             attrs["start"], attrs["step"], attrs["repeat"],
             x.size if attrs["axis"] is None else x.shape[attrs["axis"]], x.dtype).reshape(
             _arange_like_shape(attrs, [x.shape])[1][0]),
         infer_shape=_arange_like_shape,
         gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
         doc="contrib.arange_like(data, start=0, step=1, repeat=1, axis=None): start, "
             "start + step, ... in data's shape and dtype (or along one axis of it).")
alias("_npx_arange_like", "_contrib_arange_like")
register("_contrib_div_sqrt_dim", placement="host",
         forward=lambda attrs, x: (x / np.sqrt(x.shape[-1])).astype(x.dtype, copy=False),
         infer_shape=same_shape,
         gradient=lambda F, a, i, o, og: [F._contrib_div_sqrt_dim(og[0])],
         doc="contrib.div_sqrt_dim(data): data divided by the square root of its last "
             "axis's length (attention's scaling).")


def _index_array_axes(attrs, ndim):
    axes = attrs["axes"]
    return tuple(range(ndim)) if axes is None else tuple(
        axis_in("index_array", a, (0,) * ndim) for a in axes)


def _index_array_forward(attrs, x):
    axes = _index_array_axes(attrs, x.ndim)
    grid = np.indices(x.shape, dtype=np.int64) if x.ndim else np.zeros((0,), np.int64)
    return np.ascontiguousarray(np.stack([grid[a] for a in axes], axis=-1)) if axes else \
        np.zeros(x.shape + (0,), np.int64)


register("_contrib_index_array", placement="host", attrs={"axes": OptShape()},
         forward=_index_array_forward,
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else tuple(s[0]) + (
             len(_index_array_axes(attrs, len(s[0]))),)]),
         infer_dtype=lambda attrs, dtypes: np.int64,
         gradient=lambda F, a, i, o, og: [F.zeros_like(i[0])],
         doc="contrib.index_array(data, axes=None): int64 coordinates of every element of "
             "data (along `axes` only, if given), in a last axis.")


DIAG_ATTRS = {"k": Int(0), "axis1": Int(0), "axis2": Int(1)}


def _diag_forward(attrs, x):
    _diag_shape(attrs, [x.shape])       # refuses a diagonal that does not exist
    if x.ndim == 1:
        return np.diag(x, attrs["k"])
    return np.ascontiguousarray(np.diagonal(x, attrs["k"], attrs["axis1"], attrs["axis2"]))


def _diag_shape(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    if len(s) == 0:
        raise OpError("diag: the data must have at least one axis")
    if len(s) == 1:
        n = s[0] + abs(attrs["k"])
        return in_shapes, [(n, n)]
    a1 = axis_in("diag", attrs["axis1"], s)
    a2 = axis_in("diag", attrs["axis2"], s)
    if a1 == a2:
        raise OpError(f"diag: axis1 and axis2 must differ, got {attrs['axis1']} and "
                      f"{attrs['axis2']}")
    k = attrs["k"]
    length = min(s[a1] + min(k, 0), s[a2] - max(k, 0))
    if length < 0:
        raise OpError(f"diag: diagonal {k} does not exist in axes of lengths {s[a1]} and "
                      f"{s[a2]}")
    rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
    return in_shapes, [rest + (length,)]


def _diag_grad_forward(attrs, og, x):
    """The output gradient put back where diag read it: the diagonal of a matrix (1-D
    data: the diagonal of og is its gradient)."""
    k = attrs["k"]
    if x.ndim == 1:
        return np.ascontiguousarray(np.diagonal(og, k))
    out = np.zeros_like(x, dtype=og.dtype)
    view = np.moveaxis(out, (attrs["axis1"], attrs["axis2"]), (-2, -1))
    i = np.arange(og.shape[-1])
    view[..., i + max(-k, 0), i + max(k, 0)] = og
    return out


register("diag", placement="host", attrs=dict(DIAG_ATTRS), forward=_diag_forward,
         infer_shape=_diag_shape,
         gradient=lambda F, a, i, o, og: [F._diag_grad(og[0], i[0], **a)],
         doc="diag(data, k=0, axis1=0, axis2=1): a 1-D array on diagonal k of a square "
             "matrix, or diagonal k (of axes axis1, axis2) of N-D data in a last axis.")
register("_diag_grad", inputs=("out_grad", "data"), placement="host", attrs=dict(DIAG_ATTRS),
         forward=_diag_grad_forward, infer_shape=like_input(1), doc="Gradient of diag.")


def _block_shape(op, attrs, s):
    """MXNet's checks of depth_to_space / space_to_depth: 4-D NCHW data without empty
    axes, a positive block, C (to_space) or H and W (to_depth) divisible by it."""
    b = attrs["block_size"]
    if len(s) != 4:
        raise OpError(f"{op}: needs 4-D (N, C, H, W) data, got shape {tuple(s)}")
    if b <= 0:
        raise OpError(f"{op}: block_size must be a positive integer, got {b}")
    if 0 in s:
        raise OpError(f"{op}: no axis of the data may be empty, got shape {tuple(s)}")
    n, c, h, w = s
    if op == "depth_to_space":
        if c % (b * b):
            raise OpError(f"{op}: the channels ({c}) must be a multiple of block_size^2 "
                          f"({b * b})")
        return (n, c // (b * b), h * b, w * b)
    if h % b or w % b:
        raise OpError(f"{op}: height {h} and width {w} must be multiples of block_size {b}")
    return (n, c * b * b, h // b, w // b)


def _depth_to_space(attrs, x):
    n, c, h, w = x.shape
    b = attrs["block_size"]
    _block_shape("depth_to_space", attrs, x.shape)
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return np.ascontiguousarray(y).reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(attrs, x):
    n, c, h, w = x.shape
    b = attrs["block_size"]
    _block_shape("space_to_depth", attrs, x.shape)
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(y).reshape(n, c * b * b, h // b, w // b)


# each rearranges the elements the other way, so each is the other's gradient
for _name, _fn, _inverse in (("depth_to_space", _depth_to_space, "space_to_depth"),
                             ("space_to_depth", _space_to_depth, "depth_to_space")):
    register(_name, placement="host", attrs={"block_size": Int(required=True)}, forward=_fn,
             infer_shape=lambda attrs, s, _name=_name: (s, [None if s[0] is None else
                                                            _block_shape(_name, attrs, s[0])]),
             gradient=lambda F, a, i, o, og, _inverse=_inverse: [
                 getattr(F, _inverse)(og[0], **a)],
             doc=f"{_name}(data, block_size): NCHW data's blocks moved "
                 f"{'from channels into space' if _name == 'depth_to_space' else 'from space into channels'}"
                 f" (MXNet's element order).")


register("shape_array", placement="host", infer_dtype=lambda attrs, dtypes: np.int64,
         forward=lambda attrs, x: np.array(x.shape, dtype=np.int64),
         infer_shape=lambda attrs, s: (s, [None if s[0] is None else (len(s[0]),)]),
         gradient=lambda F, a, i, o, og: [None],
         doc="shape_array(data): the shape as an int64 array.")
register("size_array", placement="host", infer_dtype=lambda attrs, dtypes: np.int64,
         forward=lambda attrs, x: np.array([x.size], dtype=np.int64),
         infer_shape=lambda attrs, s: (s, [(1,)]),
         gradient=lambda F, a, i, o, og: [None],
         doc="size_array(data): the number of elements, as a one-element int64 array.")
