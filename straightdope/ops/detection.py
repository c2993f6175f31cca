"""Detection ops: pooling over regions of interest (ROIs), and region proposals.

A two-stage detector (Faster R-CNN, R-FCN, Mask R-CNN) first proposes boxes where objects
may be, then pools each box's part of the feature map into a grid of fixed size:

    ROIPooling             the maximum of each bin (corners rounded to feature cells)
    _contrib_PSROIPooling  the mean of each bin, bin (i, j) read from its own channels
    _contrib_ROIAlign      the mean of bilinear samples in each bin (no rounding)
    _contrib_RROIAlign     the same for rotated boxes (no gradient, as in MXNet)
    _contrib_Proposal      anchors moved by predicted deltas, then non-maximum
    _contrib_MultiProposal suppression (NMS): the best boxes of one image / of each image

A box ("roi") is a row [batch_index, x1, y1, x2, y2] in image coordinates (RROIAlign:
[batch_index, centre x, centre y, width, height, angle in degrees]); `spatial_scale`
maps it onto the feature map. Everything follows MXNet 1.9.1's CPU kernels
(src/operator/roi_pooling.cc, contrib/psroi_pooling.cc, roi_align.cc, rroi_align.cc,
proposal.cc, multi_proposal.cc), their rounding included. A box whose batch index names
no image, or with a non-finite value, gives zeros (MXNet: zeros for ROIPooling, memory
it does not own for the others). The gradients go to the data only: rois get zero, as
in MXNet. No Numba kernels: compiled graphs run these with NumPy (`placement="host"`).
"""
import functools

import numpy as np

from .registry import (OPS, Attr, Bool, Float, Floats, Int, OpError, Shape, alias, like_input,
                       register)

FLT_MAX = float(np.finfo(np.float32).max)     # ROIPooling's "nothing found yet"


def _compute_dtype(dtype):
    """The dtype an op computes in: its data's, float32 for float16 (MXNet's half_t does
    each operation in float32 too, rounding after each)."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def _scale(attrs, ct):
    """spatial_scale as MXNet holds it (a float32) in the compute dtype."""
    return ct.type(np.float32(attrs["spatial_scale"]))


def _round(x):
    """C's round(): halves away from zero (np.round rounds them to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _images_named(rois, batch):
    """Which rois name an image (a bool each): their batch index, truncated as MXNet
    does, is one of data's, and they hold no inf or NaN. The others give zeros."""
    finite = np.isfinite(rois).all(axis=1)
    index = np.trunc(np.where(finite, rois[:, 0], -1))
    return finite & (index >= 0) & (index < batch)


def _check_shapes(op_name, attrs, *arrays):
    """Imperative calls run the forward straight away: refuse bad shapes with the op's
    shape inference, as a symbol would."""
    OPS[op_name].shapes(attrs, [a.shape for a in arrays])


def _roi_shapes(op_name, width, pooled):
    """infer_shape of the ROI ops: data (N, C, H, W), rois (R, width) -> (R, C', PH, PW)
    with C' = channels(C) and (PH, PW) = pooled(attrs)."""
    def infer_shape(attrs, in_shapes):
        data, rois = in_shapes
        if data is not None and len(data) != 4:
            raise OpError(f"{op_name}: data must be 4-D (batch, channels, height, width), "
                          f"got shape {tuple(data)}")
        if rois is not None and (len(rois) != 2 or rois[1] != width):
            raise OpError(f"{op_name}: rois must be 2-D (boxes, {width}), one row "
                          f"[batch_index, ...{width - 1} numbers] per box, got shape "
                          f"{tuple(rois)}")
        if data is None or rois is None:
            return in_shapes, [None]
        channels, size = pooled(attrs, data)
        return in_shapes, [(rois[0], channels) + size]
    return infer_shape


def _pooled_size(op_name):
    def pooled(attrs, data):
        if len(attrs["pooled_size"]) != 2:
            raise OpError(f"{op_name}: pooled_size must be (height, width), got "
                          f"{attrs['pooled_size']}")
        return data[1], attrs["pooled_size"]
    return pooled


# ------------------------------------------------------------------ ROIPooling
# Each box's corners are rounded to feature cells; bin (ph, pw) covers rows
# floor(ph * bin_h) .. ceil((ph + 1) * bin_h) of it (so neighbouring bins may share a
# row) and gives their maximum, per channel. The gradient goes to that maximum's cell.

def _roi_pool_bins(attrs, roi, height, width, ct):
    """Rows hs[ph]:he[ph] and columns ws[pw]:we[pw] that each bin pools, clipped to the
    feature map (MXNet's arithmetic, in the compute dtype ct)."""
    scale = _scale(attrs, ct)
    x1, y1, x2, y2 = (int(_round(ct.type(v) * scale)) for v in roi[1:5])
    pooled_h, pooled_w = attrs["pooled_size"]
    bin_h = ct.type(max(y2 - y1 + 1, 1)) / ct.type(pooled_h)    # malformed: one cell
    bin_w = ct.type(max(x2 - x1 + 1, 1)) / ct.type(pooled_w)

    def edges(count, size, start, step):
        k = np.arange(count, dtype=ct)
        lo = np.floor(k * step).astype(np.int64) + start
        hi = np.ceil((k + 1) * step).astype(np.int64) + start
        return np.clip(lo, 0, size), np.clip(hi, 0, size)
    return edges(pooled_h, height, y1, bin_h) + edges(pooled_w, width, x1, bin_w)


def _roi_max_pool(attrs, data, rois):
    """(maxima (R, C, PH, PW), their flat positions in data, -1 where none)."""
    batch, channels, height, width = data.shape
    ct = _compute_dtype(data.dtype)
    pooled_h, pooled_w = attrs["pooled_size"]
    out = np.zeros((len(rois), channels, pooled_h, pooled_w), ct)
    where = np.full(out.shape, -1, np.int64)
    # NaN is never greater than the maximum so far in MXNet's loop: skipped
    values = np.where(np.isnan(data), -np.inf, data).astype(ct)
    cells = np.arange(data.size).reshape(data.shape)
    named = _images_named(rois, batch)
    for r, roi in enumerate(rois):
        if not named[r]:
            continue
        image = int(roi[0])
        hs, he, ws, we = _roi_pool_bins(attrs, roi, height, width, ct)
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                if he[ph] <= hs[ph] or we[pw] <= ws[pw]:
                    continue                                   # empty bin: 0
                region = values[image, :, hs[ph]:he[ph], ws[pw]:we[pw]].reshape(channels, -1)
                first = region.argmax(axis=1)                  # the first maximum wins
                best = region[np.arange(channels), first]
                found = best > -FLT_MAX
                out[r, :, ph, pw] = np.where(found, best, -FLT_MAX)
                positions = cells[image, :, hs[ph]:he[ph], ws[pw]:we[pw]].reshape(channels, -1)
                where[r, :, ph, pw] = np.where(found, positions[np.arange(channels), first], -1)
    return out, where


def _roi_pooling_forward(attrs, data, rois):
    _check_shapes("ROIPooling", attrs, data, rois)
    return _roi_max_pool(attrs, data, rois)[0].astype(data.dtype)


def _roi_pooling_grad_forward(attrs, og, data, rois):
    _, where = _roi_max_pool(attrs, data, rois)
    grad = np.zeros(data.size, _compute_dtype(data.dtype))
    found = where >= 0
    np.add.at(grad, where[found], og[found])
    return grad.reshape(data.shape).astype(data.dtype)


ROI_POOLING_ATTRS = {"pooled_size": Shape(required=True, minimum=1),
                     "spatial_scale": Attr("float", required=True)}
register("ROIPooling", inputs=("data", "rois"), attrs=dict(ROI_POOLING_ATTRS),
         forward=_roi_pooling_forward, placement="host", index_inputs=("rois",),
         infer_shape=_roi_shapes("ROIPooling", 5, _pooled_size("ROIPooling")),
         gradient=lambda F, a, i, o, og: [F._roi_pooling_grad(og[0], i[0], i[1], **a), None],
         doc="ROIPooling(data (N, C, H, W), rois (R, 5), pooled_size=(PH, PW), "
             "spatial_scale): the maximum of each of PH x PW bins of each box, (R, C, PH, PW).")
alias("_npx_roi_pooling", "ROIPooling")                  # MXNet's npx.roi_pooling
register("_roi_pooling_grad", inputs=("out_grad", "data", "rois"), attrs=dict(ROI_POOLING_ATTRS),
         forward=_roi_pooling_grad_forward, infer_shape=like_input(1), placement="host",
         index_inputs=("rois",), doc="Gradient of ROIPooling: to each bin's maximum.")


# ---------------------------------------------------------------- PSROIPooling
# Position-sensitive: the output has output_dim channels; bin (ph, pw) of channel d is
# the mean of the box's part of input channel (d * G + gh) * G + gw, its group (gh, gw)
# of the G x G groups. Means of rectangles come from an integral image (prefix sums along
# both axes, in float64: a rectangle's sum is four lookups) when the data is finite; with
# an inf or a NaN, rectangle by rectangle, so that one does not spill into its neighbours.

def _psroi_bins(attrs, rois, data):
    """Per box and bin: the image (R, 1, 1, 1) and channel (1, D, P, P) it reads, its
    rows hs:he (R, 1, P, 1) and columns ws:we (R, 1, 1, P), and `valid` (R, D, P, P):
    a non-empty bin of a box that names an image. They depend on the boxes only, not on
    the data's values: the last few are kept (a gradient check runs the op thousands of
    times on one set of boxes)."""
    return _bins_of(rois.tobytes(), rois.shape, rois.dtype.str, data.shape, data.dtype.str,
                    attrs["pooled_size"], attrs["output_dim"],
                    attrs["group_size"] or attrs["pooled_size"], attrs["spatial_scale"])


@functools.lru_cache(maxsize=16)
def _bins_of(rois_bytes, rois_shape, rois_dtype, data_shape, data_dtype, pooled, dim, groups,
             spatial_scale):
    rois = np.frombuffer(rois_bytes, rois_dtype).reshape(rois_shape)
    batch, _, height, width = data_shape
    ct = _compute_dtype(np.dtype(data_dtype))
    # corners (x1, y1, x2 + 1, y2 + 1) rounded, scaled; as starts (x, y) and bin sizes
    corners = rois[:, 1:5].astype(ct)
    corners = (_round(np.where(np.isfinite(corners), corners, 0)) + np.array([0, 0, 1, 1], ct)) \
        * ct.type(np.float32(spatial_scale))           # non-finite rois are invalid below
    start = corners[:, :2]
    step = np.maximum(corners[:, 2:] - start, ct.type(0.1)) / ct.type(pooled)   # avoid 0
    k = np.arange(pooled, dtype=ct)
    lo = np.floor(k * step[:, :, None] + start[:, :, None])              # (R, 2, P)
    hi = np.ceil((k + 1) * step[:, :, None] + start[:, :, None])
    size = np.array([width, height])[:, None]
    lo, hi = (np.minimum(np.maximum(e, 0), size).astype(np.int64) for e in (lo, hi))
    ws, hs = lo[:, 0, None, None, :], lo[:, 1, None, :, None]        # (R, 1, 1, P), (R, 1, P, 1)
    we, he = hi[:, 0, None, None, :], hi[:, 1, None, :, None]
    group = np.clip(np.floor(k * groups / pooled).astype(np.int64), 0, groups - 1)
    channel = (np.arange(dim)[:, None, None] * groups + group[:, None]) * groups + group
    named = _images_named(rois, batch)[:, None, None, None]
    image = np.where(named, rois[:, :1, None, None], 0).astype(np.int64)
    valid = named & (he > hs) & (we > ws)
    bins = (image, channel[None], hs, he, ws, we, valid)
    for array in bins:
        array.setflags(write=False)                         # shared by later calls
    return bins


def _psroi_pooling_forward(attrs, data, rois):
    _check_shapes("_contrib_PSROIPooling", attrs, data, rois)
    image, channel, hs, he, ws, we, valid = _psroi_bins(attrs, rois, data)
    if np.isfinite(data).all():
        # table[..., i, j] = data[..., :i, :j].sum(): products with triangles of ones (by
        # BLAS, several times faster than cumsum, which the gradient checks call a lot)
        height, width = data.shape[2:]
        table = np.tri(height + 1, height, -1) @ data.astype(np.float64) \
            @ np.tri(width + 1, width, -1).T
        sums = (table[image, channel, he, we] - table[image, channel, hs, we]
                - table[image, channel, he, ws] + table[image, channel, hs, ws])
    else:
        sums = np.zeros(valid.shape)
        image, channel, hs, he, ws, we = np.broadcast_arrays(image, channel, hs, he, ws, we)
        for i in zip(*np.nonzero(valid)):
            sums[i] = data[image[i], channel[i], hs[i]:he[i], ws[i]:we[i]].astype(
                np.float64).sum()
    area = np.maximum((he - hs) * (we - ws), 1)
    return np.where(valid, sums / area, 0).astype(data.dtype)


def _psroi_pooling_grad_forward(attrs, og, data, rois):
    image, channel, hs, he, ws, we, valid = _psroi_bins(attrs, rois, data)
    share = np.where(valid, og / np.maximum((he - hs) * (we - ws), 1), 0)   # per cell
    if np.isfinite(share).all():
        # each bin adds `share` to a rectangle: +- at its four corners, then summed up
        corners = np.zeros(data.shape[:2] + (data.shape[2] + 1, data.shape[3] + 1))
        for rows, cols, sign in ((hs, ws, 1), (hs, we, -1), (he, ws, -1), (he, we, 1)):
            np.add.at(corners, (image, channel, rows, cols), sign * share)
        grad = corners.cumsum(2).cumsum(3)[:, :, :-1, :-1]
    else:
        grad = np.zeros(data.shape)
        image, channel, hs, he, ws, we = np.broadcast_arrays(image, channel, hs, he, ws, we)
        for i in zip(*np.nonzero(valid)):
            grad[image[i], channel[i], hs[i]:he[i], ws[i]:we[i]] += share[i]
    return grad.astype(data.dtype)


def _psroi_pooled(attrs, data):
    groups = attrs["group_size"] or attrs["pooled_size"]
    if data[1] != attrs["output_dim"] * groups * groups:
        raise OpError(f"_contrib_PSROIPooling: data has {data[1]} channels; output_dim "
                      f"{attrs['output_dim']} x group_size {groups} x group_size {groups} = "
                      f"{attrs['output_dim'] * groups * groups} are needed")
    return attrs["output_dim"], (attrs["pooled_size"],) * 2


PSROI_ATTRS = {"spatial_scale": Attr("float", required=True),
               "output_dim": Int(required=True, minimum=1),
               "pooled_size": Int(required=True, minimum=1), "group_size": Int(0, minimum=0)}
register("_contrib_PSROIPooling", inputs=("data", "rois"), attrs=dict(PSROI_ATTRS),
         forward=_psroi_pooling_forward, placement="host", index_inputs=("rois",),
         infer_shape=_roi_shapes("_contrib_PSROIPooling", 5, _psroi_pooled),
         gradient=lambda F, a, i, o, og: [F._psroi_pooling_grad(og[0], i[0], i[1], **a), None],
         doc="PSROIPooling(data (N, D*G*G, H, W), rois (R, 5), spatial_scale, output_dim=D, "
             "pooled_size=P, group_size=G (0: P)): position-sensitive mean pooling, "
             "(R, D, P, P).")
register("_psroi_pooling_grad", inputs=("out_grad", "data", "rois"), attrs=dict(PSROI_ATTRS),
         forward=_psroi_pooling_grad_forward, infer_shape=like_input(1), placement="host",
         index_inputs=("rois",), doc="Gradient of PSROIPooling: each bin's share to its cells.")


# -------------------------------------------------------------------- ROIAlign
# Bin (ph, pw) of a box is the mean of grid_h x grid_w bilinear samples at the centres of
# a regular grid over the bin (grid: sample_ratio, or ceil(bin size) when that is <= 0).
# A sample more than one cell outside the map counts as 0; one within a cell of the edge
# reads the edge.

def _bilinear(ys, xs, height, width):
    """MXNet's bilinear_interpolate for sample points ys, xs (broadcast together): the
    flat positions (4, ...) of the four cells each reads and their weights (4, ...)."""
    ys, xs = np.broadcast_arrays(ys, xs)
    outside = (ys < -1.0) | (ys > height) | (xs < -1.0) | (xs > width)
    y = np.where(outside, 0, np.maximum(ys, 0))
    x = np.where(outside, 0, np.maximum(xs, 0))
    y_low, x_low = y.astype(np.int64), x.astype(np.int64)
    at_bottom, at_right = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = np.minimum(y_low, height - 1), np.minimum(x_low, width - 1)
    y_high = np.where(at_bottom, y_low, y_low + 1)
    x_high = np.where(at_right, x_low, x_low + 1)
    y = np.where(at_bottom, y_low.astype(y.dtype), y)
    x = np.where(at_right, x_low.astype(x.dtype), x)
    ly, lx = y - y_low.astype(y.dtype), x - x_low.astype(x.dtype)
    hy, hx = 1 - ly, 1 - lx
    weights = np.stack([hy * hx, hy * lx, ly * hx, ly * lx])
    positions = np.stack([y_low * width + x_low, y_low * width + x_high,
                          y_high * width + x_low, y_high * width + x_high])
    return np.where(outside, 0, positions), np.where(outside, 0, weights).astype(ys.dtype)


def _grid(ct, sampling_ratio, roi_h, roi_w, pooled_h, pooled_w):
    """Samples per bin along each axis, and the sample count."""
    if sampling_ratio > 0:
        grid_h = grid_w = sampling_ratio
    else:
        grid_h = int(np.ceil(roi_h / ct.type(pooled_h)))
        grid_w = int(np.ceil(roi_w / ct.type(pooled_w)))
    return grid_h, grid_w, ct.type(grid_h * grid_w)


def _sample_offsets(ct, start, bin_size, pooled, grid):
    """Positions along one axis of the samples, (pooled, grid): bin k's grid points."""
    k = np.arange(pooled, dtype=ct)[:, None]
    i = np.arange(grid, dtype=ct)[None, :]
    return start + k * bin_size + (i + ct.type(0.5)) * bin_size / ct.type(grid)


def _align_samples(attrs, roi, height, width, ct):
    """For one box: positions and weights (4, PH, grid_h, PW, grid_w) of its samples,
    and their count per bin."""
    pooled_h, pooled_w = attrs["pooled_size"]
    offset = ct.type(0.5 if attrs["aligned"] else 0.0)
    scale = _scale(attrs, ct)
    x1, y1, x2, y2 = (ct.type(v) * scale - offset for v in roi[1:5])
    roi_w, roi_h = x2 - x1, y2 - y1
    if attrs["aligned"]:
        if not (roi_w > 0 and roi_h > 0):
            raise OpError(f"_contrib_ROIAlign: with aligned=True every box must have a "
                          f"positive width and height, got box {list(roi)}")
    else:
        roi_w, roi_h = max(roi_w, ct.type(1)), max(roi_h, ct.type(1))   # malformed: 1x1
    grid_h, grid_w, count = _grid(ct, attrs["sample_ratio"], roi_h, roi_w, pooled_h, pooled_w)
    ys = _sample_offsets(ct, y1, roi_h / ct.type(pooled_h), pooled_h, grid_h)
    xs = _sample_offsets(ct, x1, roi_w / ct.type(pooled_w), pooled_w, grid_w)
    positions, weights = _bilinear(ys[:, :, None, None], xs[None, None], height, width)
    return positions, weights, count


def _channel_view(attrs, image_data):
    """The data of one image as (C_out, PH', PW', H * W): with position_sensitive, output
    channel c of bin (ph, pw) reads input channel (c * PH + ph) * PW + pw."""
    pooled_h, pooled_w = attrs["pooled_size"] if attrs["position_sensitive"] else (1, 1)
    return image_data.reshape(-1, pooled_h, pooled_w, image_data.shape[1] * image_data.shape[2])


def _bin_index(attrs):
    """Index arrays picking each bin's PH', PW' entry of `_channel_view` for samples of
    shape (PH, grid_h, PW, grid_w)."""
    if not attrs["position_sensitive"]:
        return 0, 0
    pooled_h, pooled_w = attrs["pooled_size"]
    return (np.arange(pooled_h)[:, None, None, None], np.arange(pooled_w)[None, None, :, None])


def _roi_align_forward(attrs, data, rois):
    _check_shapes("_contrib_ROIAlign", attrs, data, rois)
    ct = _compute_dtype(data.dtype)
    batch, _, height, width = data.shape
    channels, pooled = _roi_align_pooled(attrs, data.shape)
    out = np.zeros((len(rois), channels) + tuple(pooled), ct)
    ph, pw = _bin_index(attrs)
    named = _images_named(rois, batch)
    for r, roi in enumerate(rois):
        if not named[r]:
            continue
        image = int(roi[0])
        positions, weights, count = _align_samples(attrs, roi, height, width, ct)
        view = _channel_view(attrs, data[image].astype(ct))
        samples = (weights * view[:, ph, pw, positions]).sum(axis=1)  # (C, PH, gh, PW, gw)
        out[r] = samples.sum(axis=(2, 4)) / count
    return out.astype(data.dtype)


def _roi_align_grad_forward(attrs, og, data, rois):
    ct = _compute_dtype(data.dtype)
    batch, _, height, width = data.shape
    grad = np.zeros(data.shape, ct)
    ph, pw = _bin_index(attrs)
    named = _images_named(rois, batch)
    for r, roi in enumerate(rois):
        if not named[r]:
            continue
        image = int(roi[0])
        positions, weights, count = _align_samples(attrs, roi, height, width, ct)
        view = _channel_view(attrs, grad[image])          # writes reach grad
        # og[r] (C, PH, PW) spread over each bin's samples (PH, gh, PW, gw), four cells each
        # (C, 1, PH, 1, PW, 1) x (4, PH, gh, PW, gw): (C, 4, PH, gh, PW, gw), as indexed
        shares = og[r].astype(ct)[:, None, :, None, :, None] * weights / count
        np.add.at(view, (slice(None), ph, pw, positions), shares)
    return grad.astype(data.dtype)


def _roi_align_pooled(attrs, data):
    pooled_h, pooled_w = _pooled_size("_contrib_ROIAlign")(attrs, data)[1]
    if not attrs["position_sensitive"]:
        return data[1], (pooled_h, pooled_w)
    if data[1] % (pooled_h * pooled_w):
        raise OpError(f"_contrib_ROIAlign: with position_sensitive=True data's channels "
                      f"({data[1]}) must be a multiple of pooled_size's {pooled_h} x "
                      f"{pooled_w}")
    return data[1] // (pooled_h * pooled_w), (pooled_h, pooled_w)


ROI_ALIGN_ATTRS = {"pooled_size": Shape(required=True, minimum=1),
                   "spatial_scale": Attr("float", required=True), "sample_ratio": Int(-1),
                   "position_sensitive": Bool(False), "aligned": Bool(False)}
register("_contrib_ROIAlign", inputs=("data", "rois"), attrs=dict(ROI_ALIGN_ATTRS),
         forward=_roi_align_forward, placement="host", index_inputs=("rois",),
         checks_values=True,
         infer_shape=_roi_shapes("_contrib_ROIAlign", 5, _roi_align_pooled),
         gradient=lambda F, a, i, o, og: [F._roi_align_grad(og[0], i[0], i[1], **a), None],
         doc="ROIAlign(data (N, C, H, W), rois (R, 5), pooled_size=(PH, PW), spatial_scale, "
             "sample_ratio=-1, position_sensitive=False, aligned=False): the mean of "
             "bilinear samples in each bin, (R, C, PH, PW).")
register("_roi_align_grad", inputs=("out_grad", "data", "rois"), attrs=dict(ROI_ALIGN_ATTRS),
         forward=_roi_align_grad_forward, infer_shape=like_input(1), placement="host",
         index_inputs=("rois",), doc="Gradient of ROIAlign: to the cells each sample reads.")


# ------------------------------------------------------------------- RROIAlign
# ROIAlign for a box rotated by theta (degrees, anticlockwise) about its centre: the
# sample grid is laid out around (0, 0), rotated, then moved to the centre.

def _rroi_align_forward(attrs, data, rois):
    _check_shapes("_contrib_RROIAlign", attrs, data, rois)
    ct = _compute_dtype(data.dtype)
    batch, channels, height, width = data.shape
    pooled_h, pooled_w = attrs["pooled_size"]
    out = np.zeros((len(rois), channels, pooled_h, pooled_w), ct)
    scale = _scale(attrs, ct)
    named = _images_named(rois, batch)
    for r, roi in enumerate(rois):
        if not named[r]:
            continue
        image = int(roi[0])
        centre_x, centre_y, roi_w, roi_h = (ct.type(v) * scale for v in roi[1:5])
        theta = ct.type(float(roi[5]) * np.pi / 180.0)          # in double, as MXNet
        roi_w, roi_h = max(roi_w, ct.type(1)), max(roi_h, ct.type(1))     # malformed: 1x1
        grid_h, grid_w, count = _grid(ct, attrs["sampling_ratio"], roi_h, roi_w,
                                      pooled_h, pooled_w)
        yy = _sample_offsets(ct, -roi_h / ct.type(2), roi_h / ct.type(pooled_h), pooled_h,
                             grid_h)[:, :, None, None]
        xx = _sample_offsets(ct, -roi_w / ct.type(2), roi_w / ct.type(pooled_w), pooled_w,
                             grid_w)[None, None]
        cos, sin = np.cos(theta), np.sin(theta)
        xs = xx * cos + yy * sin + centre_x
        ys = yy * cos - xx * sin + centre_y
        positions, weights = _bilinear(ys, xs, height, width)
        samples = (weights * data[image].astype(ct).reshape(channels, -1)[:, positions]).sum(1)
        out[r] = samples.sum(axis=(2, 4)) / count
    return out.astype(data.dtype)


register("_contrib_RROIAlign", inputs=("data", "rois"), placement="host",
         attrs={"pooled_size": Shape(required=True, minimum=1),
                "spatial_scale": Attr("float", required=True), "sampling_ratio": Int(-1)},
         forward=_rroi_align_forward, index_inputs=("rois",),
         infer_shape=_roi_shapes("_contrib_RROIAlign", 6, _pooled_size("_contrib_RROIAlign")),
         doc="RROIAlign(data (N, C, H, W), rois (R, 6) [batch, cx, cy, w, h, degrees], "
             "pooled_size=(PH, PW), spatial_scale, sampling_ratio=-1): ROIAlign over rotated "
             "boxes, (R, C, PH, PW); no gradient, as in MXNet.")


# ------------------------------------------------------------------- proposals
# An RPN predicts, at each of the H x W cells of its feature map and for each of A
# anchor boxes (every ratio with every scale, centred on the cell), an object score and
# four deltas that move and stretch the anchor. Proposal turns them into boxes: move the
# anchors, clip them to the image, drop (score -1) those too small or over padding, keep
# the rpn_pre_nms_top_n best, then greedily the best that overlap no better one by more
# than `threshold` (IoU), up to rpn_post_nms_top_n (repeated to fill the rows when fewer
# survive). All in float32, as MXNet (whatever the inputs' dtype).

f32 = np.float32


def _anchors(attrs):
    """MXNet's GenerateAnchors: (A, 4) boxes x1, y1, x2, y2 around the first cell, for
    each ratio, each scale."""
    size = f32(attrs["feature_stride"])                   # the base box's width
    centre = f32(0.5 * (size - 1.0))
    boxes = []
    for ratio in map(f32, attrs["ratios"]):
        for scale in map(f32, attrs["scales"]):
            w = np.floor(np.sqrt(np.floor(size * size / ratio)) + f32(0.5)) * scale
            h = np.floor(w / scale * ratio + f32(0.5)) * scale
            boxes.append([centre - f32(0.5) * (w - f32(1)), centre - f32(0.5) * (h - f32(1)),
                          centre + f32(0.5) * (w - f32(1)), centre + f32(0.5) * (h - f32(1))])
    return np.array(boxes, f32)


def _moved(attrs, anchors, deltas, image_h, image_w):
    """Anchors (..., 4) moved by deltas (..., 4) and clipped to the image (BBoxTransformInv,
    or IoUTransformInv with iou_loss: deltas added to the corners)."""
    x1, y1, x2, y2 = np.moveaxis(anchors, -1, 0)
    dx, dy, dw, dh = np.moveaxis(deltas, -1, 0)
    if attrs["iou_loss"]:                                 # deltas of x1, y1, x2, y2
        boxes = [x1 + dx, y1 + dy, x2 + dw, y2 + dh]
    else:
        width, height = x2 - x1 + f32(1), y2 - y1 + f32(1)
        ctr_x = (x1 + 0.5 * (width.astype(np.float64) - 1.0)).astype(f32)
        ctr_y = (y1 + 0.5 * (height.astype(np.float64) - 1.0)).astype(f32)
        pred_x, pred_y = dx * width + ctr_x, dy * height + ctr_y
        pred_w = np.exp(dw.astype(np.float64)).astype(f32) * width
        pred_h = np.exp(dh.astype(np.float64)).astype(f32) * height
        half_w, half_h = 0.5 * (pred_w.astype(np.float64) - 1.0), \
            0.5 * (pred_h.astype(np.float64) - 1.0)
        boxes = [pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h]
    highest = [image_w - f32(1), image_h - f32(1)] * 2
    return np.stack([np.maximum(np.minimum(b.astype(f32), top), f32(0))   # NaN stays NaN
                     for b, top in zip(boxes, highest)], axis=-1)


def _nms(boxes, threshold, limit):
    """Greedy non-maximum suppression of boxes sorted best first: the indices kept."""
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1 + f32(1)) * (y2 - y1 + f32(1))
    suppressed = np.zeros(len(boxes), bool)
    keep = []
    for i in range(len(boxes)):
        if len(keep) >= limit:
            break
        if suppressed[i]:
            continue
        keep.append(i)
        w = np.maximum(f32(0), np.minimum(x2[i], x2[i + 1:]) - np.maximum(x1[i], x1[i + 1:])
                       + f32(1))
        h = np.maximum(f32(0), np.minimum(y2[i], y2[i + 1:]) - np.maximum(y1[i], y1[i + 1:])
                       + f32(1))
        inter = w * h
        suppressed[i + 1:] |= inter / (area[i] + area[i + 1:] - inter) > f32(threshold)
    return np.array(keep, np.int64)


def _propose(op_name, attrs, scores, deltas, im_info):
    """One image: scores (A, H, W) of the objects, deltas (4A, H, W), im_info (height,
    width, scale) -> boxes (rpn_post_nms_top_n, 4) and their scores."""
    anchors_n, height, width = scores.shape
    stride = attrs["feature_stride"]
    image_h, image_w, image_scale = (f32(v) for v in im_info)
    if not np.isfinite([image_h, image_w, image_scale]).all():
        raise OpError(f"{op_name}: im_info {list(im_info)} must be finite (image "
                      f"height, width, scale)")
    real_h, real_w = int(image_h / f32(stride)), int(image_w / f32(stride))
    if real_h > height or real_w > width:
        raise OpError(f"{op_name}: im_info's image ({image_h} x {image_w}) over "
                      f"feature_stride {stride} is {real_h} x {real_w} cells, more than the "
                      f"{height} x {width} of cls_prob; check im_info and feature_stride")
    # boxes in MXNet's order: cell (row j, column k), then anchor a
    cols, rows = np.meshgrid(np.arange(width, dtype=f32) * f32(stride),
                             np.arange(height, dtype=f32) * f32(stride))     # (H, W) each
    shift = np.stack([cols, rows, cols, rows], axis=-1)
    anchors = _anchors(attrs)[None, None] + shift[:, :, None, :]          # (H, W, A, 4)
    moved = _moved(attrs, anchors, deltas.reshape(anchors_n, 4, height, width).transpose(
        2, 3, 0, 1), image_h, image_w).reshape(-1, 4)
    score = scores.transpose(1, 2, 0).astype(f32).copy()
    score[max(real_h, 0):] = f32(-1)                                    # padding
    score[:, max(real_w, 0):] = f32(-1)
    score = score.reshape(-1)
    # too small: grown by min_size / 2 each side, and dropped (score -1)
    min_size = f32(attrs["rpn_min_size"] * image_scale)
    small = (moved[:, 2] - moved[:, 0] + f32(1) < min_size) | \
        (moved[:, 3] - moved[:, 1] + f32(1) < min_size)
    moved[small] += np.array([-1, -1, 1, 1], f32) * (min_size / f32(2))
    score[small] = f32(-1)

    count = len(score)
    pre = min(attrs["rpn_pre_nms_top_n"] if attrs["rpn_pre_nms_top_n"] > 0 else count, count)
    post = attrs["rpn_post_nms_top_n"]
    order = np.argsort(-score, kind="stable")[:pre]         # best first; ties: first first
    keep = _nms(moved[order], attrs["threshold"], min(post, pre))
    if len(keep) == 0:
        return np.zeros((post, 4), f32), np.zeros(post, f32)
    rows = order[keep[np.arange(post) % len(keep)]]
    return moved[rows], score[rows]


def _check_proposal_inputs(op_name, attrs, cls_prob, bbox_pred, im_info, single):
    anchors_n = len(attrs["scales"]) * len(attrs["ratios"])
    if cls_prob is None:
        return
    if len(cls_prob) != 4 or cls_prob[1] != 2 * anchors_n:
        raise OpError(f"{op_name}: cls_prob must be (batch, 2 x anchors, height, width) with "
                      f"{anchors_n} anchors ({len(attrs['ratios'])} ratios x "
                      f"{len(attrs['scales'])} scales), got shape {tuple(cls_prob)}")
    if single and cls_prob[0] != 1:
        raise OpError(f"{op_name} takes one image (cls_prob of batch 1), got shape "
                      f"{tuple(cls_prob)}; use _contrib_MultiProposal for a batch")
    want = {"bbox_pred": (cls_prob[0], 4 * anchors_n) + tuple(cls_prob[2:]),
            "im_info": (cls_prob[0], 3)}
    for name, shape in (("bbox_pred", bbox_pred), ("im_info", im_info)):
        if shape is not None and tuple(shape) != want[name]:
            raise OpError(f"{op_name}: {name} must have shape {want[name]} for cls_prob of "
                          f"shape {tuple(cls_prob)}, got {tuple(shape)}")
    return want


def _proposal_shapes(op_name, single):
    def infer_shape(attrs, in_shapes):
        want = _check_proposal_inputs(op_name, attrs, *in_shapes, single)
        if want is None:
            return in_shapes, [None, None]
        rows = in_shapes[0][0] * attrs["rpn_post_nms_top_n"]
        return [in_shapes[0], want["bbox_pred"], want["im_info"]], [(rows, 5), (rows, 1)]
    return infer_shape


def _proposal_forward(op_name):
    def forward(attrs, cls_prob, bbox_pred, im_info):
        _check_shapes(op_name, attrs, cls_prob, bbox_pred, im_info)
        return _proposals(op_name, attrs, cls_prob, bbox_pred, im_info)
    return forward


def _proposals(op_name, attrs, cls_prob, bbox_pred, im_info):
    """Every image's proposals (N * rpn_post_nms_top_n, 5) and scores (..., 1)."""
    anchors_n = cls_prob.shape[1] // 2
    post = attrs["rpn_post_nms_top_n"]
    rois = np.zeros((len(cls_prob), post, 5), f32)
    scores = np.zeros((len(cls_prob), post, 1), f32)
    for b in range(len(cls_prob)):
        # channels A.. 2A are the object scores (0 .. A the background's)
        boxes, best = _propose(op_name, attrs, cls_prob[b, anchors_n:],
                               bbox_pred[b].astype(f32), im_info[b])
        rois[b, :, 0], rois[b, :, 1:], scores[b, :, 0] = b, boxes, best
    return rois.reshape(-1, 5), scores.reshape(-1, 1)


PROPOSAL_ATTRS = {"rpn_pre_nms_top_n": Int(6000), "rpn_post_nms_top_n": Int(300, minimum=0),
                  "threshold": Float(0.7), "rpn_min_size": Int(16),
                  "scales": Floats((4.0, 8.0, 16.0, 32.0)), "ratios": Floats((0.5, 1.0, 2.0)),
                  "feature_stride": Int(16, minimum=1), "output_score": Bool(False),
                  "iou_loss": Bool(False)}


def _proposal_dtypes(attrs, dtypes):
    return [np.dtype(np.float32)] * 2


for _name, _single in (("_contrib_Proposal", True), ("_contrib_MultiProposal", False)):
    register(_name, inputs=("cls_prob", "bbox_pred", "im_info"), attrs=dict(PROPOSAL_ATTRS),
             forward=_proposal_forward(_name), placement="host", checks_values=True,
             infer_shape=_proposal_shapes(_name, _single), infer_dtype=_proposal_dtypes,
             num_outputs=2, num_visible_outputs=lambda attrs: 2 if attrs["output_score"] else 1,
             output_names=("output", "score"),
             gradient=lambda F, a, inputs, o, og: [F.zeros_like(x) for x in inputs],
             doc=f"{_name}(cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W), im_info (N, 3)): "
                 f"region proposals [image, x1, y1, x2, y2] (N * rpn_post_nms_top_n, 5) "
                 f"(and their scores with output_score=True)"
                 + (", for one image (N = 1)" if _single else "")
                 + "; zero gradients, as in MXNet.")
