"""The detection ops (ops/detection.py) against plain loops written here from MXNet 1.9.1's
CPU kernels (roi_pooling.cc, contrib/psroi_pooling.cc, roi_align.cc, rroi_align.cc,
proposal.cc): one output element at a time, as the C++ does, on tiny inputs."""
import math

import numpy as np
import pytest

from straightdope import autograd, nd, sym
from straightdope.ops import OpError


def c_round(x):
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def grad_of(op, data, rois, head, **attrs):
    x, r = nd.array(data, dtype="float64"), nd.array(rois, dtype="float64")
    x.attach_grad()
    r.attach_grad()
    with autograd.record():
        out = op(x, r, **attrs)
    out.backward(nd.array(head, dtype="float64"))
    assert not r.grad.asnumpy().any(), "rois get no gradient"
    return out.asnumpy(), x.grad.asnumpy()


# ------------------------------------------------------------------ ROIPooling
def roi_pooling_loops(data, rois, pooled, scale, head):
    n_img, chans, height, width = data.shape
    out = np.zeros((len(rois), chans) + pooled)
    grad = np.zeros_like(data)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = (c_round(v * scale) for v in roi[1:])
        bin_h = max(y2 - y1 + 1, 1) / pooled[0]
        bin_w = max(x2 - x1 + 1, 1) / pooled[1]
        for c in range(chans):
            for ph in range(pooled[0]):
                for pw in range(pooled[1]):
                    hs = min(max(math.floor(ph * bin_h) + y1, 0), height)
                    he = min(max(math.ceil((ph + 1) * bin_h) + y1, 0), height)
                    ws = min(max(math.floor(pw * bin_w) + x1, 0), width)
                    we = min(max(math.ceil((pw + 1) * bin_w) + x1, 0), width)
                    if he <= hs or we <= ws or not 0 <= b < n_img:
                        continue
                    best, where = -3.4e38, None
                    for h in range(hs, he):
                        for w in range(ws, we):
                            if data[b, c, h, w] > best:
                                best, where = data[b, c, h, w], (b, c, h, w)
                    out[n, c, ph, pw] = best
                    grad[where] += head[n, c, ph, pw]
    return out, grad


def test_roi_pooling_matches_loops_forward_and_gradient():
    rng = np.random.default_rng(0)
    data = rng.permutation(2 * 3 * 7 * 9).reshape(2, 3, 7, 9) * 0.1 - 5      # no ties
    rois = np.array([[0, 1.1, 0.9, 6.2, 5.3], [1, 6.1, 2.1, 8.2, 6.2], [1, 3, 3, 3, 3],
                     [0, -2, -3, 20, 20], [5, 1, 1, 4, 4]])                 # 5: no image
    head = rng.uniform(-1, 1, (5, 3, 3, 2))
    out, grad = grad_of(nd.ROIPooling, data, rois, head, pooled_size=(3, 2), spatial_scale=0.9)
    want_out, want_grad = roi_pooling_loops(data, rois, (3, 2), 0.9, head)
    np.testing.assert_allclose(out, want_out)
    np.testing.assert_allclose(grad, want_grad)
    assert not out[4].any()


def test_roi_pooling_docstring_example():
    """MXNet's own example in its operator's description."""
    x = nd.array(np.arange(48.0).reshape(1, 1, 8, 6))
    y = nd.array([[0, 0, 0, 4, 4]])
    np.testing.assert_array_equal(nd.ROIPooling(x, y, (2, 2), 1.0).asnumpy(),
                                  [[[[14, 16], [26, 28]]]])
    np.testing.assert_array_equal(nd.ROIPooling(x, y, (2, 2), 0.7).asnumpy(),
                                  [[[[7, 9], [19, 21]]]])


# ---------------------------------------------------------------- PSROIPooling
def psroi_loops(data, rois, scale, dim, pooled, group, head):
    _, chans, height, width = data.shape
    out = np.zeros((len(rois), dim, pooled, pooled))
    grad = np.zeros_like(data)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1 = c_round(roi[1]) * scale, c_round(roi[2]) * scale
        x2, y2 = (c_round(roi[3]) + 1) * scale, (c_round(roi[4]) + 1) * scale
        bin_h = max(y2 - y1, 0.1) / pooled
        bin_w = max(x2 - x1, 0.1) / pooled
        for d in range(dim):
            for ph in range(pooled):
                for pw in range(pooled):
                    hs = min(max(math.floor(ph * bin_h + y1), 0), height)
                    he = min(max(math.ceil((ph + 1) * bin_h + y1), 0), height)
                    ws = min(max(math.floor(pw * bin_w + x1), 0), width)
                    we = min(max(math.ceil((pw + 1) * bin_w + x1), 0), width)
                    if he <= hs or we <= ws:
                        continue
                    gh = min(max(math.floor(ph * group / pooled), 0), group - 1)
                    gw = min(max(math.floor(pw * group / pooled), 0), group - 1)
                    c = (d * group + gh) * group + gw
                    area = (he - hs) * (we - ws)
                    total = 0.0
                    for h in range(hs, he):
                        for w in range(ws, we):
                            total += data[b, c, h, w]
                            grad[b, c, h, w] += head[n, d, ph, pw] / area
                    out[n, d, ph, pw] = total / area
    return out, grad


@pytest.mark.parametrize("pooled, group", [(3, 3), (4, 2)])
def test_psroi_pooling_matches_loops_forward_and_gradient(pooled, group):
    rng = np.random.default_rng(1)
    dim = 2
    data = rng.uniform(-1, 1, (2, dim * group * group, 9, 8))
    rois = np.array([[0, 10, 22, 100, 130], [1, 20.4, 15.5, 154, 160], [1, -40, -10, 30, 5]])
    head = rng.uniform(-1, 1, (3, dim, pooled, pooled))
    attrs = dict(spatial_scale=0.0625, output_dim=dim, pooled_size=pooled, group_size=group)
    out, grad = grad_of(nd.contrib.PSROIPooling, data, rois, head, **attrs)
    want_out, want_grad = psroi_loops(data, rois, 0.0625, dim, pooled, group, head)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-12)


def test_psroi_pooling_keeps_an_inf_inside_its_own_bins():
    """The integral image would spread an inf (inf - inf = NaN) to other bins; the op
    sums bin by bin then, as MXNet: only the bins holding it are inf."""
    data = np.zeros((1, 4, 8, 8))
    data[0, :, 1, 1] = np.inf
    rois = np.array([[0, 0, 0, 127, 127]])
    out = nd.contrib.PSROIPooling(nd.array(data), nd.array(rois), spatial_scale=0.0625,
                                  output_dim=1, pooled_size=2).asnumpy()
    want, _ = psroi_loops(data, rois, 0.0625, 1, 2, 2, np.zeros((1, 1, 2, 2)))
    np.testing.assert_array_equal(out, want)
    assert np.isinf(out[0, 0, 0, 0]) and np.isfinite(out[0, 0].reshape(-1)[1:]).all()


# -------------------------------------------------------------------- ROIAlign
def bilinear(height, width, y, x):
    """[(h, w, weight)] of one sample, as MXNet's bilinear_interpolate."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return [(y_low, x_low, hy * hx), (y_low, x_high, hy * lx),
            (y_high, x_low, ly * hx), (y_high, x_high, ly * lx)]


def roi_align_loops(data, rois, pooled, scale, ratio, sensitive, aligned, head):
    _, chans, height, width = data.shape
    ph_n, pw_n = pooled
    c_out = chans // (ph_n * pw_n) if sensitive else chans
    out = np.zeros((len(rois), c_out, ph_n, pw_n))
    grad = np.zeros_like(data)
    offset = 0.5 if aligned else 0.0
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = (v * scale - offset for v in roi[1:])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not aligned:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / ph_n, roi_w / pw_n
        grid_h = ratio if ratio > 0 else math.ceil(roi_h / ph_n)
        grid_w = ratio if ratio > 0 else math.ceil(roi_w / pw_n)
        count = grid_h * grid_w
        for c in range(c_out):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    c_in = (c * ph_n + ph) * pw_n + pw if sensitive else c
                    total = 0.0
                    for iy in range(grid_h):
                        y = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                        for ix in range(grid_w):
                            x = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            for h, w, weight in bilinear(height, width, y, x):
                                total += weight * data[b, c_in, h, w]
                                grad[b, c_in, h, w] += head[n, c, ph, pw] * weight / count
                    out[n, c, ph, pw] = total / count
    return out, grad


@pytest.mark.parametrize("ratio, sensitive, aligned", [(-1, False, False), (2, False, False),
                                                       (0, True, False), (2, False, True)])
def test_roi_align_matches_loops_forward_and_gradient(ratio, sensitive, aligned):
    rng = np.random.default_rng(2)
    pooled = (2, 3)
    chans = 2 * 6 if sensitive else 3
    data = rng.uniform(-1, 1, (2, chans, 7, 9))
    rois = np.array([[0, 10.5, 3.2, 60.1, 50.3], [1, -20, -10, 40, 30], [1, 100, 90, 140, 120],
                     [0, 30, 30, 31, 31]])
    head = rng.uniform(-1, 1, (4, chans // 6 if sensitive else chans) + pooled)
    attrs = dict(pooled_size=pooled, spatial_scale=0.125, sample_ratio=ratio,
                 position_sensitive=sensitive, aligned=aligned)
    out, grad = grad_of(nd.contrib.ROIAlign, data, rois, head, **attrs)
    want_out, want_grad = roi_align_loops(data, rois, pooled, 0.125, ratio, sensitive, aligned,
                                          head)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-12)


def test_roi_align_gives_zeros_for_a_box_of_no_image():
    data = nd.array(np.ones((1, 2, 4, 4)))
    out = nd.contrib.ROIAlign(data, nd.array([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]]),
                              pooled_size=(2, 2), spatial_scale=1.0).asnumpy()
    assert not out[0].any() and np.allclose(out[1], 1)


# ------------------------------------------------------------------- RROIAlign
def rroi_align_loops(data, rois, pooled, scale, ratio):
    _, chans, height, width = data.shape
    out = np.zeros((len(rois), chans) + pooled)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        cx, cy, roi_w, roi_h = (v * scale for v in roi[1:5])
        theta = roi[5] * math.pi / 180.0
        roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled[0], roi_w / pooled[1]
        grid_h = ratio if ratio > 0 else math.ceil(roi_h / pooled[0])
        grid_w = ratio if ratio > 0 else math.ceil(roi_w / pooled[1])
        for c in range(chans):
            for ph in range(pooled[0]):
                for pw in range(pooled[1]):
                    total = 0.0
                    for iy in range(grid_h):
                        yy = -roi_h / 2 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                        for ix in range(grid_w):
                            xx = -roi_w / 2 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            x = xx * math.cos(theta) + yy * math.sin(theta) + cx
                            y = yy * math.cos(theta) - xx * math.sin(theta) + cy
                            total += sum(wt * data[b, c, h, w]
                                         for h, w, wt in bilinear(height, width, y, x))
                    out[n, c, ph, pw] = total / (grid_h * grid_w)
    return out


@pytest.mark.parametrize("ratio", [-1, 2])
def test_rroi_align_matches_loops(ratio):
    rng = np.random.default_rng(3)
    data = rng.uniform(-1, 1, (2, 3, 8, 9))
    rois = np.array([[0, 40, 30, 50, 20, 30], [1, 10, 60, 70, 44, 135], [1, 5, 5, 2, 3, -20]])
    out = nd.contrib.RROIAlign(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"),
                               pooled_size=(3, 2), spatial_scale=0.125,
                               sampling_ratio=ratio).asnumpy()
    np.testing.assert_allclose(out, rroi_align_loops(data, rois, (3, 2), 0.125, ratio),
                               rtol=1e-10, atol=1e-12)


def test_rroi_align_has_no_gradient():
    x = nd.ones((1, 1, 4, 4))
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.RROIAlign(x, nd.array([[0, 2, 2, 2, 2, 0]]), pooled_size=(1, 1),
                                 spatial_scale=1.0)
    with pytest.raises(OpError, match="_contrib_RROIAlign has no gradient"):
        y.backward()


# ------------------------------------------------------------------- proposals
def proposal_loops(scores, deltas, im_info, stride, scales, ratios, pre, post, thresh,
                   min_size):
    """proposal.cc for one image, one anchor at a time (in float64)."""
    n_anchor, height, width = scores.shape
    base = []
    for ratio in ratios:
        for scale in scales:
            size = stride * stride
            w = math.floor(math.sqrt(math.floor(size / ratio)) + 0.5) * scale
            h = math.floor(w / scale * ratio + 0.5) * scale
            ctr = 0.5 * (stride - 1)
            base.append((ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1),
                         ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)))
    real_h, real_w = int(im_info[0] / stride), int(im_info[1] / stride)
    boxes = []
    for j in range(height):
        for k in range(width):
            for a in range(n_anchor):
                x1, y1, x2, y2 = (v + s for v, s in zip(base[a], (k * stride, j * stride) * 2))
                dx, dy, dw, dh = deltas[4 * a:4 * a + 4, j, k]
                bw, bh = x2 - x1 + 1, y2 - y1 + 1
                cx, cy = x1 + 0.5 * (bw - 1) + dx * bw, y1 + 0.5 * (bh - 1) + dy * bh
                pw, ph = math.exp(dw) * bw, math.exp(dh) * bh
                box = [cx - 0.5 * (pw - 1), cy - 0.5 * (ph - 1), cx + 0.5 * (pw - 1),
                       cy + 0.5 * (ph - 1)]
                box = [min(max(v, 0.0), top) for v, top in
                       zip(box, (im_info[1] - 1, im_info[0] - 1) * 2)]
                score = scores[a, j, k] if j < real_h and k < real_w else -1.0
                smallest = min_size * im_info[2]
                if box[2] - box[0] + 1 < smallest or box[3] - box[1] + 1 < smallest:
                    box = [box[0] - smallest / 2, box[1] - smallest / 2,
                           box[2] + smallest / 2, box[3] + smallest / 2]
                    score = -1.0
                boxes.append((box, score))
    order = sorted(range(len(boxes)), key=lambda i: -boxes[i][1])[:pre]     # stable
    ordered = [boxes[i] for i in order]
    area = [(b[2] - b[0] + 1) * (b[3] - b[1] + 1) for b, _ in ordered]
    keep, gone = [], set()
    for i, (bi, _) in enumerate(ordered):
        if len(keep) >= min(post, pre):
            break
        if i in gone:
            continue
        keep.append(i)
        for j in range(i + 1, len(ordered)):
            bj = ordered[j][0]
            w = max(0.0, min(bi[2], bj[2]) - max(bi[0], bj[0]) + 1)
            h = max(0.0, min(bi[3], bj[3]) - max(bi[1], bj[1]) + 1)
            if w * h / (area[i] + area[j] - w * h) > thresh:
                gone.add(j)
    rows = [ordered[keep[i % len(keep)]] for i in range(post)]
    return np.array([b for b, _ in rows]), np.array([s for _, s in rows])


PROPOSAL = dict(feature_stride=4, scales=(2.0, 3.0), ratios=(0.5, 1.0, 2.0),
                rpn_pre_nms_top_n=30, rpn_post_nms_top_n=12, threshold=0.5, rpn_min_size=3)


def proposal_inputs(rng, batch):
    scores = rng.uniform(0, 1, (batch, 12, 4, 5))
    deltas = rng.uniform(-0.3, 0.3, (batch, 24, 4, 5))
    info = np.array([[14, 19, 1.0], [16, 12, 0.8]])[:batch]
    return scores, deltas, info


def test_proposal_matches_loops():
    scores, deltas, info = proposal_inputs(np.random.default_rng(4), 1)
    rois, got = nd.contrib.Proposal(*(nd.array(a) for a in (scores, deltas, info)),
                                    output_score=True, **PROPOSAL)
    boxes, want = proposal_loops(scores[0, 6:], deltas[0], info[0], 4, (2, 3), (0.5, 1, 2),
                                 30, 12, 0.5, 3)
    assert rois.shape == (12, 5) and got.shape == (12, 1)
    assert not rois.asnumpy()[:, 0].any()
    np.testing.assert_allclose(rois.asnumpy()[:, 1:], boxes, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got.asnumpy()[:, 0], want, rtol=1e-6)


def test_multi_proposal_is_proposal_per_image_and_has_zero_gradients():
    scores, deltas, info = proposal_inputs(np.random.default_rng(5), 2)
    arrays = [nd.array(a) for a in (scores, deltas, info)]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        rois, got = nd.contrib.MultiProposal(*arrays, output_score=True, **PROPOSAL)
        loss = (rois * 2).sum() + got.sum()
    loss.backward()
    assert all(not a.grad.asnumpy().any() for a in arrays)
    for b in range(2):
        one, one_score = nd.contrib.Proposal(*(nd.array(a[b:b + 1]) for a in
                                               (scores, deltas, info)),
                                             output_score=True, **PROPOSAL)
        np.testing.assert_array_equal(rois.asnumpy()[12 * b:12 * (b + 1), 1:],
                                      one.asnumpy()[:, 1:])
        np.testing.assert_array_equal(rois.asnumpy()[12 * b:12 * (b + 1), 0], b)
        np.testing.assert_array_equal(got.asnumpy()[12 * b:12 * (b + 1)], one_score.asnumpy())
    only_rois = nd.contrib.MultiProposal(*arrays, **PROPOSAL)
    assert not isinstance(only_rois, list) and only_rois.shape == (24, 5)


# --------------------------------------------------------------------- shapes
def test_shapes_are_inferred_and_bad_ones_named():
    data, rois = sym.var("data"), sym.var("rois")
    s = sym.contrib.ROIAlign(data, rois, pooled_size=(2, 3), spatial_scale=0.5,
                             position_sensitive=True)
    assert s.infer_shape(data=(2, 12, 5, 5), rois=(7, 5))[1] == [(7, 2, 2, 3)]
    p = sym.contrib.MultiProposal(sym.var("c"), sym.var("b"), sym.var("i"), scales=(1, 2),
                                  ratios=(1,), rpn_post_nms_top_n=5, output_score=True)
    args, outs, _ = p.infer_shape(c=(3, 4, 6, 6))
    assert args == [(3, 4, 6, 6), (3, 8, 6, 6), (3, 3)] and outs == [(15, 5), (15, 1)]
    with pytest.raises(OpError, match=r"ROIPooling: rois must be 2-D \(boxes, 5\)"):
        nd.ROIPooling(nd.ones((1, 1, 4, 4)), nd.ones((2, 4)), pooled_size=(2, 2),
                      spatial_scale=1.0)
    with pytest.raises(OpError, match="_contrib_PSROIPooling: data has 5 channels"):
        nd.contrib.PSROIPooling(nd.ones((1, 5, 4, 4)), nd.ones((1, 5)), spatial_scale=1.0,
                                output_dim=2, pooled_size=2)
    with pytest.raises(OpError, match="_contrib_Proposal takes one image"):
        nd.contrib.Proposal(nd.ones((2, 24, 3, 3)), nd.ones((2, 48, 3, 3)), nd.ones((2, 3)))


def test_proposal_refuses_an_image_larger_than_the_feature_map():
    scores, deltas, info = proposal_inputs(np.random.default_rng(6), 2)
    info[1, 0] = 40                            # 40 / stride 4 = 10 rows; the map has 4
    with pytest.raises(OpError, match=r"_contrib_MultiProposal: im_info's image .* 10 x 3 "
                                      r"cells, more than the 4 x 5"):
        nd.contrib.MultiProposal(*(nd.array(a) for a in (scores, deltas, info)), **PROPOSAL)


def test_scales_and_ratios_are_tuples_of_numbers():
    """MXNet's Tuple<float> attributes: written as MXNet's JSON does, or as numbers."""
    s = sym.contrib.MultiProposal(sym.var("c"), sym.var("b"), sym.var("i"), scales="(2, 4.5)",
                                  ratios=1)
    assert s.infer_shape(c=(1, 4, 3, 3))[0][1] == (1, 8, 3, 3)
    assert sym.load_json(s.tojson()).tojson() == s.tojson()
    with pytest.raises(OpError, match="'scales' must be a tuple of numbers"):
        sym.contrib.MultiProposal(sym.var("c"), sym.var("b"), sym.var("i"), scales="(2, 'x')")


def test_npx_roi_pooling_is_roi_pooling():
    from straightdope import np as mnp, npx
    data = np.random.default_rng(7).uniform(-1, 1, (1, 2, 6, 6))
    rois = np.array([[0, 0.6, 1.2, 4.4, 5.1]])
    got = npx.roi_pooling(mnp.array(data), mnp.array(rois), pooled_size=(2, 3),
                          spatial_scale=1.0)
    want, _ = roi_pooling_loops(data, rois, (2, 3), 1.0, np.zeros((1, 2, 2, 3)))
    np.testing.assert_allclose(got.asnumpy(), want)
