"""Spatial ops with MXNet's names and CPU semantics: sampling grids (GridGenerator),
bilinear sampling (BilinearSampler, SpatialTransformer), patch correlation (Correlation),
image normalisation (image.normalize), int8/uint8 quantisation (contrib.quantize,
contrib.dequantize), and the interleaved matrix products of multi-head attention
(contrib.interleaved_matmul_*).

A sampling grid holds, for each output pixel, the source position it reads, scaled to
[-1, 1]: channel 0 is x (the column), channel 1 is y (the row). Position -1 is the first
pixel, 1 the last, so that x = -1 + col * 2 / (W - 1).

No Numba kernels: every op here runs its NumPy forward and backward ("host"), which a
compiled graph calls between compiled segments. The arithmetic is done in float64 and
the result cast to the input's dtype (quantize excepted: it follows MXNet's float32).
"""
import ast

import numpy as np

from .registry import Attr, Bool, Choice, Int, OpError, Shape, register


def _as(x, like):
    return np.ascontiguousarray(x).astype(like.dtype, copy=False)


# ------------------------------------------------------------- GridGenerator
def _target_grid(target_shape):
    """(3, H*W): the rows x, y, 1 of each target pixel, x and y in [-1, 1] (MXNet's
    grid_dst). A target of 1 pixel divides by 0, as MXNet's does."""
    h, w = target_shape
    index = np.arange(h * w)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = -1.0 + (index % w) * (2.0 / (w - 1) if w > 1 else np.inf)
        y = -1.0 + (index // w) * (2.0 / (h - 1) if h > 1 else np.inf)
    return np.stack([x, y, np.ones(h * w)])


def _check_target(name, target_shape):
    if len(target_shape) != 2 or min(target_shape) < 1:
        raise OpError(f"{name}: target_shape must be (H, W) with both at least 1, got "
                      f"{tuple(target_shape)}")


def _grid_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    if attrs["transform_type"] == "affine":
        if len(data) != 2 or data[1] != 6:
            raise OpError(f"GridGenerator: with transform_type='affine' data must be (batch, "
                          f"6) affine matrices, got shape {tuple(data)}")
        _check_target("GridGenerator", attrs["target_shape"])
        return in_shapes, [(data[0], 2) + tuple(attrs["target_shape"])]
    if len(data) != 4 or data[1] != 2:
        raise OpError(f"GridGenerator: with transform_type='warp' data must be an optical "
                      f"flow (batch, 2, H, W), got shape {tuple(data)}")
    return in_shapes, [tuple(data)]


def _warp_scale(h, w):
    """(1, 2, 1, 1): the pixels per unit of grid, x then y."""
    return np.array([(w - 1) / 2.0, (h - 1) / 2.0]).reshape(1, 2, 1, 1)


def _affine_grid(theta, target_shape):
    """(N, 2, H, W): each target pixel's source position, theta (N, 6) times (x, y, 1)."""
    n = theta.shape[0]
    grid = theta.astype(np.float64).reshape(n * 2, 3) @ _target_grid(target_shape)
    return grid.reshape((n, 2) + tuple(target_shape))


def _grid_forward(attrs, data):
    if attrs["transform_type"] == "affine":
        return _as(_affine_grid(data, attrs["target_shape"]), data)
    h, w = data.shape[2:]
    pixels = np.stack(np.meshgrid(np.arange(w), np.arange(h)))[None]    # (1, 2, H, W): x, y
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as((data + pixels) / _warp_scale(h, w) - 1.0, data)


def _grid_grad_forward(attrs, og, data):
    og = og.astype(np.float64)
    if attrs["transform_type"] == "affine":
        n = data.shape[0]
        grid = _target_grid(attrs["target_shape"])
        return _as((og.reshape(n * 2, grid.shape[1]) @ grid.T).reshape(n, 6), data)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as(og / _warp_scale(*data.shape[2:]), data)


GRID_ATTRS = {"transform_type": Choice("affine", "warp", required=True),
              "target_shape": Shape((0, 0))}
register("GridGenerator", attrs=dict(GRID_ATTRS), placement="host",
         forward=_grid_forward, infer_shape=_grid_shape,
         gradient=lambda F, a, i, o, og: [F._grid_generator_grad(og[0], i[0], **a)],
         doc="GridGenerator(data, transform_type, target_shape): a sampling grid (N, 2, H, "
             "W) in [-1, 1] from affine matrices (N, 6) or from an optical flow in pixels "
             "(warp: (N, 2, H, W), added to each pixel's own position).")
register("_grid_generator_grad", inputs=("out_grad", "data"), attrs=dict(GRID_ATTRS),
         placement="host", forward=_grid_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1]]),
         doc="Gradient of GridGenerator wrt its data.")


# ----------------------------------------------------------- BilinearSampler
def _corners(grid, h, w):
    """For each output pixel of grid (N, 2, Ho, Wo): the four pixels around its source
    position, as (flat index into H*W, weight, inside the image?) with the top-left
    weights wy, wx (MXNet's top_left_y_w, top_left_x_w), all (N, Ho, Wo)."""
    x = (grid[:, 0].astype(np.float64) + 1) * (w - 1) / 2
    y = (grid[:, 1].astype(np.float64) + 1) * (h - 1) / 2
    x0, y0 = np.floor(x), np.floor(y)
    wx, wy = 1.0 - (x - x0), 1.0 - (y - y0)
    corners = []
    for dy, dx, weight in ((0, 0, wy * wx), (0, 1, wy * (1 - wx)),
                           (1, 0, (1 - wy) * wx), (1, 1, (1 - wy) * (1 - wx))):
        xi, yi = x0 + dx, y0 + dy
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        flat = np.where(inside, yi * w + xi, 0).astype(np.int64)
        corners.append((flat, weight, inside))
    return corners, wy, wx


def _gather(data, flat, inside):
    """data (N, C, H, W) at the flat positions (N, Ho, Wo): (N, C, Ho, Wo), zero outside."""
    n, c, h, w = data.shape
    values = np.take_along_axis(data.reshape(n, c, h * w).astype(np.float64),
                                flat.reshape(n, 1, flat.shape[1] * flat.shape[2]), axis=2)
    return values.reshape((n, c) + flat.shape[1:]) * inside[:, None]


def _sample(data, grid):
    corners, _, _ = _corners(grid, *data.shape[2:])
    return sum(_gather(data, flat, inside) * weight[:, None]
               for flat, weight, inside in corners)


def _sample_grad(og, data, grid):
    """(d data, d grid) of bilinear sampling, as MXNet's BilinearSamplerBackward."""
    n, c, h, w = data.shape
    og = og.astype(np.float64)
    corners, wy, wx = _corners(grid, h, w)
    gdata = np.zeros((n, c, h * w))
    for flat, weight, inside in corners:
        pulls = (og * (weight * inside)[:, None]).reshape(n, c, flat.shape[1] * flat.shape[2])
        for b in range(n):
            np.add.at(gdata[b], (slice(None), flat[b].ravel()), pulls[b])
    tl, tr, bl, br = (_gather(data, flat, inside) for flat, _, inside in corners)
    mixed = tl - tr - bl + br
    gy = -(og * (tr - br + mixed * wx[:, None])).sum(axis=1)
    gx = -(og * (bl - br + mixed * wy[:, None])).sum(axis=1)
    ggrid = np.stack([gx * (w - 1) / 2, gy * (h - 1) / 2], axis=1)
    return gdata.reshape(data.shape), ggrid


def _sampler_shape(attrs, in_shapes):
    data, grid = in_shapes
    if data is None or grid is None:
        return in_shapes, [None]
    if len(data) != 4 or len(grid) != 4 or grid[1] != 2 or data[0] != grid[0]:
        raise OpError(f"BilinearSampler: needs data (N, C, H, W) and a grid (N, 2, Ho, Wo) "
                      f"of one batch size, got data {tuple(data)} and grid {tuple(grid)}")
    return in_shapes, [tuple(data[:2]) + tuple(grid[2:])]


def _sampler_forward(attrs, data, grid):
    return _as(_sample(data, grid), data)


def _sampler_grad_forward(attrs, og, data, grid):
    gdata, ggrid = _sample_grad(og, data, grid)
    return _as(gdata, data), _as(ggrid, grid)


CUDNN = {"cudnn_off": Attr("bool_or_none", None)}
register("BilinearSampler", inputs=("data", "grid"), attrs=dict(CUDNN), placement="host",
         forward=_sampler_forward, infer_shape=_sampler_shape,
         gradient=lambda F, a, i, o, og: list(F._bilinear_sampler_grad(og[0], *i)),
         doc="BilinearSampler(data, grid): data (N, C, H, W) read at the grid's source "
             "positions (N, 2, Ho, Wo; x, y in [-1, 1]) by bilinear interpolation; "
             "positions outside read zeros.")
register("_bilinear_sampler_grad", inputs=("out_grad", "data", "grid"), placement="host",
         num_outputs=2, forward=_sampler_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="Gradient of BilinearSampler: (d data, d grid).")


# -------------------------------------------------------- SpatialTransformer
def _stn_shape(attrs, in_shapes):
    data, loc = in_shapes
    _check_target("SpatialTransformer", attrs["target_shape"])
    if data is None:
        return in_shapes, [None]
    if len(data) != 4 or (loc is not None and tuple(loc) != (data[0], 6)):
        raise OpError(f"SpatialTransformer: needs data (N, C, H, W) and loc (N, 6) affine "
                      f"matrices, got data {tuple(data)} and loc {loc}")
    return [data, (data[0], 6)], [tuple(data[:2]) + tuple(attrs["target_shape"])]


def _stn_forward(attrs, data, loc):
    return _as(_sample(data, _affine_grid(loc, attrs["target_shape"])), data)


def _stn_grad_forward(attrs, og, data, loc):
    """d data from the sampler; d loc from the sampler's grid gradient times (x, y, 1)."""
    gdata, ggrid = _sample_grad(og, data, _affine_grid(loc, attrs["target_shape"]))
    n, grid = loc.shape[0], _target_grid(attrs["target_shape"])
    gloc = ggrid.reshape(n * 2, grid.shape[1]) @ grid.T
    return _as(gdata, data), _as(gloc.reshape(n, 6), loc)


STN_ATTRS = {"target_shape": Shape((0, 0)), "transform_type": Choice("affine"),
             "sampler_type": Choice("bilinear"), **CUDNN}
register("SpatialTransformer", inputs=("data", "loc"), attrs=dict(STN_ATTRS),
         placement="host", forward=_stn_forward, infer_shape=_stn_shape,
         gradient=lambda F, a, i, o, og: list(F._spatial_transformer_grad(og[0], *i, **a)),
         doc="SpatialTransformer(data, loc, target_shape): data resampled on the affine "
             "grid of loc (N, 6): GridGenerator then BilinearSampler.")
register("_spatial_transformer_grad", inputs=("out_grad", "data", "loc"),
         attrs=dict(STN_ATTRS), placement="host", num_outputs=2,
         forward=_stn_grad_forward, infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="Gradient of SpatialTransformer: (d data, d loc).")


# --------------------------------------------------------------- Correlation
# FlowNet's correlation of two feature maps: output channel q of pixel (i, j) compares
# the kernel_size^2 patch of data1 at x1 = (j * stride1 + max_displacement, same for y)
# with the patch of data2 displaced by q's offset (a (2r+1)^2 grid of displacements,
# r = max_displacement // stride2, stride2 apart): the mean over the patch and the
# channels of data1 * data2 (is_multiply) or |data1 - data2|. Both maps are zero-padded
# by pad_size first.
def _corr_geometry(attrs, shape):
    """(output (H, W), r, the padded size) for data of `shape`, or an OpError."""
    k, d, s1 = attrs["kernel_size"], attrs["max_displacement"], attrs["stride1"]
    if k % 2 == 0:
        raise OpError(f"Correlation: kernel_size must be odd, got {k}")
    padded = tuple(n + 2 * attrs["pad_size"] for n in shape[2:])
    border = d + (k - 1) // 2
    out = tuple(-(-(p - 2 * border) // s1) for p in padded)     # ceil, as MXNet
    if min(out) < 1:
        raise OpError(f"Correlation cannot be done with these settings (MXNet's words): "
                      f"data of shape {tuple(shape)} padded by "
                      f"{attrs['pad_size']} is too small for kernel_size={k} and "
                      f"max_displacement={d} (output {out}): pad more or shrink them")
    return out, d // attrs["stride2"], padded


def _corr_shape(attrs, in_shapes):
    known = [s for s in in_shapes if s is not None]
    if not known:
        return in_shapes, [None]
    if any(len(s) != 4 for s in known) or any(tuple(s) != tuple(known[0]) for s in known):
        raise OpError(f"Correlation: data1 and data2 must be 4-D (N, C, H, W) of one shape, "
                      f"got {in_shapes}")
    data = tuple(known[0])
    (oh, ow), r, _ = _corr_geometry(attrs, data)
    return [data, data], [(data[0], (2 * r + 1) ** 2, oh, ow)]


def _corr_windows(attrs, shape):
    """Yield (output channel, slices of padded data1, slices of padded data2): for each
    displacement and each kernel offset, the strided pixels read at every output pixel."""
    (oh, ow), r, _ = _corr_geometry(attrs, shape)
    s1, s2, d, k = (attrs["stride1"], attrs["stride2"], attrs["max_displacement"],
                    attrs["kernel_size"])
    width = 2 * r + 1
    for q in range(width * width):
        dx, dy = (q % width - r) * s2, (q // width - r) * s2
        for h in range(k):
            for w in range(k):
                y1, x1 = d + h, d + w
                first = (Ellipsis, slice(y1, y1 + s1 * (oh - 1) + 1, s1),
                         slice(x1, x1 + s1 * (ow - 1) + 1, s1))
                second = (Ellipsis, slice(y1 + dy, y1 + dy + s1 * (oh - 1) + 1, s1),
                          slice(x1 + dx, x1 + dx + s1 * (ow - 1) + 1, s1))
                yield q, first, second


def _corr_pad(attrs, x):
    p = attrs["pad_size"]
    return np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))


def _corr_forward(attrs, data1, data2):
    _, out_shape = _corr_shape(attrs, [data1.shape, data2.shape])
    p1, p2 = _corr_pad(attrs, data1), _corr_pad(attrs, data2)
    out = np.zeros(out_shape[0])
    for q, first, second in _corr_windows(attrs, data1.shape):
        a, b = p1[first], p2[second]
        out[:, q] += (a * b if attrs["is_multiply"] else np.abs(a - b)).sum(axis=1)
    return _as(out / (attrs["kernel_size"] ** 2 * data1.shape[1]), data1)


def _corr_grad_forward(attrs, og, data1, data2):
    p1, p2 = _corr_pad(attrs, data1), _corr_pad(attrs, data2)
    g1, g2 = np.zeros_like(p1), np.zeros_like(p2)
    og = og.astype(np.float64) / (attrs["kernel_size"] ** 2 * data1.shape[1])
    for q, first, second in _corr_windows(attrs, data1.shape):
        a, b, pull = p1[first], p2[second], og[:, q:q + 1]
        if attrs["is_multiply"]:
            g1[first] += pull * b
            g2[second] += pull * a
        else:
            sign = np.where(a >= b, 1.0, -1.0)
            g1[first] += pull * sign
            g2[second] -= pull * sign
    p, (h, w) = attrs["pad_size"], data1.shape[2:]
    inner = (Ellipsis, slice(p, p + h), slice(p, p + w))
    return _as(g1[inner], data1), _as(g2[inner], data2)


CORR_ATTRS = {"kernel_size": Int(1, minimum=1), "max_displacement": Int(1, minimum=0),
              "stride1": Int(1, minimum=1), "stride2": Int(1, minimum=1),
              "pad_size": Int(0, minimum=0), "is_multiply": Bool(True)}
register("Correlation", inputs=("data1", "data2"), attrs=dict(CORR_ATTRS), placement="host",
         forward=_corr_forward, infer_shape=_corr_shape,
         gradient=lambda F, a, i, o, og: list(F._correlation_grad(og[0], *i, **a)),
         doc="Correlation(data1, data2, kernel_size=1, max_displacement=1, stride1=1, "
             "stride2=1, pad_size=0, is_multiply=True): FlowNet's patch comparison of two "
             "feature maps, one output channel per displacement.")
register("_correlation_grad", inputs=("out_grad", "data1", "data2"), attrs=dict(CORR_ATTRS),
         placement="host", num_outputs=2, forward=_corr_grad_forward,
         infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         doc="Gradient of Correlation: (d data1, d data2).")


# ------------------------------------------------------------ image.normalize
class Floats(Attr):
    """A tuple of numbers (MXNet's Tuple<float>): one number is a tuple of one."""

    def __init__(self, default):
        super().__init__("floats", tuple(default))

    def parse(self, op_name, attr_name, value):
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)     # literals only: never evaluates code
            except (ValueError, SyntaxError):
                raise OpError(f"{op_name}: attribute '{attr_name}' must be a number or a "
                              f"tuple of numbers, got {value!r}") from None
        values = value if isinstance(value, (tuple, list)) else (value,)
        try:
            return tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise OpError(f"{op_name}: attribute '{attr_name}' must be a number or a tuple "
                          f"of numbers, got {value!r}") from None


def _normalize_channels(attrs, shape):
    if len(shape) not in (3, 4):
        raise OpError(f"image.normalize: data must be (C, H, W) or (N, C, H, W), got shape "
                      f"{tuple(shape)}")
    channels = shape[-3]
    if channels not in (1, 3):
        raise OpError(f"image.normalize: the channel axis must have 1 or 3 entries, got "
                      f"data of shape {tuple(shape)}")
    for name in ("mean", "std"):
        if len(attrs[name]) not in (1, channels):
            raise OpError(f"image.normalize: {name} must have 1 or {channels} entries for "
                          f"data of shape {tuple(shape)}, got {attrs[name]} (the defaults "
                          f"have 4, as MXNet's: give mean= and std=)")
    return channels


def _per_channel(values, channels):
    return np.resize(np.asarray(values, np.float64), channels).reshape(channels, 1, 1)


def _normalize_shape(attrs, in_shapes):
    if in_shapes[0] is not None:
        _normalize_channels(attrs, in_shapes[0])
    return in_shapes, [in_shapes[0]]


def _normalize_forward(attrs, data):
    c = _normalize_channels(attrs, data.shape)
    return _as((data - _per_channel(attrs["mean"], c)) / _per_channel(attrs["std"], c), data)


NORMALIZE_ATTRS = {"mean": Floats((0.0, 0.0, 0.0, 0.0)), "std": Floats((1.0, 1.0, 1.0, 1.0))}
register("_image_normalize", attrs=dict(NORMALIZE_ATTRS), placement="host",
         forward=_normalize_forward, infer_shape=_normalize_shape,
         # out = (x - mean) / std: the gradient is og / std, og "normalised" with mean 0
         gradient=lambda F, a, i, o, og: [F._image_normalize(og[0], mean=(0.0,), std=a["std"])],
         doc="image.normalize(data, mean, std): (data - mean) / std per channel of "
             "(C, H, W) or (N, C, H, W) images (mean, std: 1 or C numbers).")


# ----------------------------------------------------- quantize, dequantize
# int8 keeps zero at zero: the range is +-max(|min_range|, |max_range|), mapped onto
# +-127; uint8 maps [min_range, max_range] onto [0, 255]. Both round half away from
# zero (+0.5, then truncation) in float32, as MXNet's kernels.
def _range_shape(name, count):
    def infer(attrs, in_shapes):
        for k in (1, 2):
            if in_shapes[k] is not None and int(np.prod(in_shapes[k])) != 1:
                raise OpError(f"{name}: min_range and max_range must hold one number each, "
                              f"got shapes {in_shapes[1]} and {in_shapes[2]}")
        return [in_shapes[0], (1,), (1,)], [in_shapes[0]] + [(1,)] * (count - 1)
    return infer


def _quantize_forward(attrs, data, min_range, max_range):
    x = data.astype(np.float32)
    lo, hi = np.float32(min_range.reshape(-1)[0]), np.float32(max_range.reshape(-1)[0])
    if attrs["out_type"] == "int8":
        real = np.float32(max(abs(lo), abs(hi)))
        scale = np.float32(127) / real
        q = np.sign(x) * np.minimum(np.abs(x) * scale + np.float32(0.5), np.float32(127))
        return (np.trunc(q).astype(np.int8), np.array([-real], np.float32),
                np.array([real], np.float32))
    scale = np.float32(255) / (hi - lo)
    q = np.clip(np.trunc((x - lo) * scale + np.float32(0.5)), 0, 255)
    return q.astype(np.uint8), np.array([lo], np.float32), np.array([hi], np.float32)


def _dequantize_forward(attrs, data, min_range, max_range):
    _check_quantized(data)
    lo, hi = np.float32(min_range.reshape(-1)[0]), np.float32(max_range.reshape(-1)[0])
    x = data.astype(np.float32)
    if data.dtype == np.uint8:
        return x * ((hi - lo) / np.float32(255)) + lo
    return x * (np.float32(max(abs(lo), abs(hi))) / np.float32(127))


def _check_quantized(data):
    if data.dtype not in (np.int8, np.uint8):
        raise OpError(f"contrib.dequantize: data must be int8 or uint8 (from "
                      f"contrib.quantize), got {data.dtype.name}")


def _no_gradient(F, attrs, inputs, outputs, out_grads):
    """MXNet's MakeZeroGradNodes: zeros for every input."""
    return [F.zeros_like(x) for x in inputs]


RANGE_INPUTS = ("data", "min_range", "max_range")
register("_contrib_quantize", inputs=RANGE_INPUTS, placement="host",
         attrs={"out_type": Choice("uint8", "int8")}, num_outputs=3,
         output_names=("output", "min_output", "max_output"),
         forward=_quantize_forward, infer_shape=_range_shape("contrib.quantize", 3),
         infer_dtype=lambda attrs, d: [np.dtype(attrs["out_type"]), np.dtype("float32"),
                                       np.dtype("float32")],
         gradient=_no_gradient,
         doc="contrib.quantize(data, min_range, max_range, out_type='uint8'): data as int8 "
             "or uint8 on the given range; also the range the output stands for.")
register("_contrib_dequantize", inputs=RANGE_INPUTS, placement="host",
         attrs={"out_type": Choice("float32")}, forward=_dequantize_forward,
         infer_shape=_range_shape("contrib.dequantize", 1),
         infer_dtype=lambda attrs, d: [np.dtype("float32")], gradient=_no_gradient,
         doc="contrib.dequantize(data, min_range, max_range, out_type='float32'): int8 or "
             "uint8 data from contrib.quantize back to float32.")


# ------------------------------------------------ interleaved attention matmuls
# Multi-head attention with the projections of H heads interleaved in the last axis, in
# sequence-first layout: queries_keys_values (L, B, H * 3 * D) is (L, B, H, 3, D), its
# [..., 0, :] the queries, 1 the keys, 2 the values; keys_values (L, B, H * 2 * D) holds
# keys then values. The attention maps are (B * H, Lq, Lk), batch b head h at b * H + h.
def _heads(x, heads, parts):
    """(L, B, heads * parts * D) -> (L, B, heads, parts, D), with a clear error."""
    length, batch, width = x.shape
    if width % (heads * parts):
        raise OpError(f"interleaved_matmul: the last axis ({width}) of an input of shape "
                      f"{x.shape} must split into heads={heads} times {parts} equal parts")
    return x.astype(np.float64).reshape(length, batch, heads, parts, width // (heads * parts))


def _to_batches(x):
    """(L, B, H, D) -> (B * H, L, D)."""
    length, batch, heads, dim = x.shape
    return x.transpose(1, 2, 0, 3).reshape(batch * heads, length, dim)


def _from_batches(x, heads):
    """(B * H, L, D) -> (L, B, H, D)."""
    bh, length, dim = x.shape
    return x.reshape(bh // heads, heads, length, dim).transpose(2, 0, 1, 3)


def _selfatt_qk(attrs, qkv):
    t = _heads(qkv, attrs["heads"], 3)
    q, k = _to_batches(t[:, :, :, 0]), _to_batches(t[:, :, :, 1])
    return _as(q @ k.transpose(0, 2, 1) / np.sqrt(t.shape[-1]), qkv)


def _selfatt_qk_grad(attrs, og, qkv):
    t = _heads(qkv, attrs["heads"], 3)
    q, k = _to_batches(t[:, :, :, 0]), _to_batches(t[:, :, :, 1])
    g = og.astype(np.float64) / np.sqrt(t.shape[-1])
    grad = np.zeros_like(t)
    grad[:, :, :, 0] = _from_batches(g @ k, attrs["heads"])
    grad[:, :, :, 1] = _from_batches(g.transpose(0, 2, 1) @ q, attrs["heads"])
    return _as(grad.reshape(qkv.shape), qkv)


def _valatt(attrs, qkv, att, parts, slot):
    t = _heads(qkv, attrs["heads"], parts)
    v = _to_batches(t[:, :, :, slot])
    out = _from_batches(att.astype(np.float64) @ v, attrs["heads"])
    return _as(out.reshape(out.shape[:2] + (out.shape[2] * out.shape[3],)), qkv)


def _valatt_grad(attrs, og, qkv, att, parts, slot):
    heads = attrs["heads"]
    t = _heads(qkv, heads, parts)
    v = _to_batches(t[:, :, :, slot])
    g = _to_batches(og.astype(np.float64).reshape(og.shape[:2] + t.shape[2:3] + t.shape[4:]))
    grad = np.zeros_like(t)
    grad[:, :, :, slot] = _from_batches(att.astype(np.float64).transpose(0, 2, 1) @ g, heads)
    return _as(grad.reshape(qkv.shape), qkv), _as(g @ v.transpose(0, 2, 1), att)


def _encdec_qk(attrs, queries, kv):
    heads = attrs["heads"]
    q = _to_batches(_heads(queries, heads, 1)[:, :, :, 0])
    k = _to_batches(_heads(kv, heads, 2)[:, :, :, 0])
    return _as(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), queries)


def _encdec_qk_grad(attrs, og, queries, kv):
    heads = attrs["heads"]
    q = _to_batches(_heads(queries, heads, 1)[:, :, :, 0])
    t = _heads(kv, heads, 2)
    k = _to_batches(t[:, :, :, 0])
    g = og.astype(np.float64) / np.sqrt(q.shape[-1])
    grad_kv = np.zeros_like(t)
    grad_kv[:, :, :, 0] = _from_batches(g.transpose(0, 2, 1) @ q, heads)
    return (_as(_from_batches(g @ k, heads).reshape(queries.shape), queries),
            _as(grad_kv.reshape(kv.shape), kv))


def _attention_shape(kind):
    def infer(attrs, s):
        if any(x is None for x in s):
            return s, [None]
        heads = attrs["heads"]
        if any(len(x) != 3 for x in s):
            raise OpError(f"interleaved_matmul_{kind}: inputs must be 3-D, got {s}")
        if kind == "selfatt_qk":
            length, batch, _ = s[0]
            return s, [(batch * heads, length, length)]
        if kind == "encdec_qk":
            (lq, batch, e), (lk, batch2, e2) = s
            if e2 != 2 * e or batch2 != batch:
                raise OpError(f"interleaved_matmul_encdec_qk: keys_values {s[1]} must be "
                              f"queries {s[0]} with twice the last axis")
            return s, [(batch * heads, lq, lk)]
        (lk, batch, width), att = s
        parts = 3 if kind == "selfatt_valatt" else 2
        lq = lk if kind == "selfatt_valatt" else att[1]
        if tuple(att) != (batch * heads, lq, lk) or width % parts:
            raise OpError(f"interleaved_matmul_{kind}: attention must be (batch * heads, "
                          f"{'L, L' if parts == 3 else 'Lq, Lk'}) = ({batch * heads}, {lq}, "
                          f"{lk}) for projections {s[0]}, got {tuple(att)}")
        return s, [(lq, batch, width // parts)]
    return infer


HEADS = {"heads": Int(required=True, minimum=1)}
ATTENTION = {  # kind: (inputs, forward, gradient forward)
    "selfatt_qk": (("queries_keys_values",), _selfatt_qk, _selfatt_qk_grad),
    "selfatt_valatt": (("queries_keys_values", "attention"),
                       lambda a, x, att: _valatt(a, x, att, 3, 2),
                       lambda a, og, x, att: _valatt_grad(a, og, x, att, 3, 2)),
    "encdec_qk": (("queries", "keys_values"), _encdec_qk, _encdec_qk_grad),
    "encdec_valatt": (("keys_values", "attention"),
                      lambda a, x, att: _valatt(a, x, att, 2, 1),
                      lambda a, og, x, att: _valatt_grad(a, og, x, att, 2, 1)),
}


def _attention_entry(kind, names, forward, grad_forward):
    grad_name = f"_interleaved_matmul_{kind}_grad"
    count = len(names)

    def gradient(F, attrs, inputs, outputs, out_grads):
        grads = getattr(F, grad_name)(out_grads[0], *inputs, **attrs)
        return [grads] if count == 1 else list(grads)

    register(f"_contrib_interleaved_matmul_{kind}", inputs=names, attrs=dict(HEADS),
             placement="host", forward=forward, infer_shape=_attention_shape(kind),
             gradient=gradient,
             doc=f"contrib.interleaved_matmul_{kind}({', '.join(names)}, heads): a batched "
                 f"product of multi-head attention on interleaved projections.")
    register(grad_name, inputs=("out_grad",) + names, attrs=dict(HEADS), placement="host",
             num_outputs=count, forward=grad_forward,
             infer_shape=lambda attrs, s: (s, list(s[1:])),
             doc=f"Gradient of contrib.interleaved_matmul_{kind}.")


for _kind, (_names, _forward, _grad) in ATTENTION.items():
    _attention_entry(_kind, _names, _forward, _grad)
