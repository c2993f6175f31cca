"""ops/spatial.py against references written here as plain loops, the way MXNet's CPU
kernels compute (bilinear_sampler.cc, correlation.cc, grid_generator-inl.h,
quantize-inl.h, transformer.cc), and bilinear UpSampling against a transposed
convolution written out by hand."""
import math

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd
from straightdope.ops import OpError


def _run(op, arrays, head=None, **attrs):
    """(output, gradients of every input) of nd.<op> with `head` as the output gradient."""
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        out = op(*xs, **attrs)
    out.backward(nd.array(head, dtype="float64") if head is not None else None)
    return out.asnumpy(), [x.grad.asnumpy() for x in xs]


# ------------------------------------------------------------- bilinear sampling
def _sampler_ref(data, grid, og):
    """MXNet's BilinearSamplerForward and Backward, pixel by pixel."""
    n_, c_, h_, w_ = data.shape
    oh, ow = grid.shape[2:]
    out = np.zeros((n_, c_, oh, ow))
    gdata, ggrid = np.zeros_like(data), np.zeros_like(grid)
    inside = (lambda y, x: 0 <= x <= w_ - 1 and 0 <= y <= h_ - 1)
    for n in range(n_):
        for h in range(oh):
            for w in range(ow):
                y = (grid[n, 1, h, w] + 1) * (h_ - 1) / 2
                x = (grid[n, 0, h, w] + 1) * (w_ - 1) / 2
                y0, x0 = math.floor(y), math.floor(x)
                wy, wx = 1 - (y - y0), 1 - (x - x0)
                gy = gx = 0.0
                for c in range(c_):
                    v = {}
                    for dy, dx, weight in ((0, 0, wy * wx), (0, 1, wy * (1 - wx)),
                                           (1, 0, (1 - wy) * wx), (1, 1, (1 - wy) * (1 - wx))):
                        v[dy, dx] = 0.0
                        if inside(y0 + dy, x0 + dx):
                            v[dy, dx] = data[n, c, y0 + dy, x0 + dx]
                            gdata[n, c, y0 + dy, x0 + dx] += og[n, c, h, w] * weight
                        out[n, c, h, w] += v[dy, dx] * weight
                    mixed = v[0, 0] - v[0, 1] - v[1, 0] + v[1, 1]
                    gy -= og[n, c, h, w] * (v[0, 1] - v[1, 1] + mixed * wx)
                    gx -= og[n, c, h, w] * (v[1, 0] - v[1, 1] + mixed * wy)
                ggrid[n, 1, h, w] = gy * (h_ - 1) / 2
                ggrid[n, 0, h, w] = gx * (w_ - 1) / 2
    return out, gdata, ggrid


def test_bilinear_sampler_matches_mxnets_loops_inside_and_outside_the_image():
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (2, 3, 4, 5))
    grid = rng.uniform(-1.4, 1.4, (2, 2, 3, 4))       # some positions fall outside
    og = rng.uniform(-1, 1, (2, 3, 3, 4))
    out, (gdata, ggrid) = _run(nd.BilinearSampler, [data, grid], og)
    want, want_gdata, want_ggrid = _sampler_ref(data, grid, og)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gdata, want_gdata, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ggrid, want_ggrid, rtol=1e-12, atol=1e-12)


def test_an_identity_grid_reads_the_image_back():
    data = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    theta = np.tile([1.0, 0, 0, 0, 1, 0], (2, 1))
    grid = nd.GridGenerator(nd.array(theta, dtype="float64"), transform_type="affine",
                            target_shape=(4, 5))
    np.testing.assert_allclose(nd.BilinearSampler(nd.array(data, dtype="float64"), grid)
                               .asnumpy(), data, atol=1e-12)
    st = nd.SpatialTransformer(nd.array(data, dtype="float64"), nd.array(theta, dtype="float64"),
                               target_shape=(4, 5))
    np.testing.assert_allclose(st.asnumpy(), data, atol=1e-12)


def test_spatial_transformer_is_grid_generator_then_sampler_with_its_gradients():
    rng = np.random.default_rng(1)
    data = rng.uniform(-1, 1, (2, 2, 5, 6))
    loc = np.tile([0.9, 0.1, 0.05, -0.1, 1.1, -0.05], (2, 1)) + rng.uniform(-.1, .1, (2, 6))
    og = rng.uniform(-1, 1, (2, 2, 4, 3))
    out, (gdata, gloc) = _run(nd.SpatialTransformer, [data, loc], og, target_shape=(4, 3))
    # the reference: the affine grid of each target pixel (x, y, 1), then the sampler
    x, y = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4))
    dst = np.stack([x.ravel(), y.ravel(), np.ones(12)])               # (3, H*W)
    grid = (loc.reshape(2, 2, 3) @ dst).reshape(2, 2, 4, 3)
    want, want_gdata, ggrid = _sampler_ref(data, grid, og)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gdata, want_gdata, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gloc, (ggrid.reshape(2, 2, 12) @ dst.T).reshape(2, 6),
                               rtol=1e-12, atol=1e-12)


def test_grid_generator_warp_adds_the_flow_to_each_pixel_and_scales_to_minus_one_one():
    flow = np.random.default_rng(2).uniform(-1, 1, (1, 2, 3, 5))
    out, (grad,) = _run(nd.GridGenerator, [flow], np.ones((1, 2, 3, 5)), transform_type="warp")
    for h in range(3):
        for w in range(5):
            assert out[0, 0, h, w] == pytest.approx((flow[0, 0, h, w] + w) / 2.0 - 1)
            assert out[0, 1, h, w] == pytest.approx((flow[0, 1, h, w] + h) / 1.0 - 1)
    np.testing.assert_allclose(grad[0, 0], 1 / 2.0)
    np.testing.assert_allclose(grad[0, 1], 1 / 1.0)


# ------------------------------------------------------------------ Correlation
def _correlation_ref(d1, d2, og, k, md, s1, s2, pad, multiply):
    """MXNet's CorrelationForward/Backward loops (its test's reference, with MXNet's
    ceil for the output size)."""
    n_, c_, h_, w_ = d1.shape
    p1 = np.pad(d1, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p2 = np.pad(d2, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    border = md + (k - 1) // 2
    top_h = math.ceil((h_ + 2 * pad - 2 * border) / s1)
    top_w = math.ceil((w_ + 2 * pad - 2 * border) / s1)
    r = md // s2
    width = 2 * r + 1
    out = np.zeros((n_, width * width, top_h, top_w))
    g1, g2 = np.zeros_like(p1), np.zeros_like(p2)
    norm = k * k * c_
    for n in range(n_):
        for i in range(top_h):
            for j in range(top_w):
                x1, y1 = j * s1 + md, i * s1 + md
                for q in range(width * width):
                    x2 = x1 + (q % width - r) * s2
                    y2 = y1 + (q // width - r) * s2
                    for h in range(k):
                        for w in range(k):
                            for c in range(c_):
                                a, b = p1[n, c, y1 + h, x1 + w], p2[n, c, y2 + h, x2 + w]
                                pull = og[n, q, i, j] / norm
                                if multiply:
                                    out[n, q, i, j] += a * b / norm
                                    g1[n, c, y1 + h, x1 + w] += pull * b
                                    g2[n, c, y2 + h, x2 + w] += pull * a
                                else:
                                    out[n, q, i, j] += abs(a - b) / norm
                                    sign = 1 if a >= b else -1
                                    g1[n, c, y1 + h, x1 + w] += pull * sign
                                    g2[n, c, y2 + h, x2 + w] -= pull * sign
    inner = (slice(None), slice(None), slice(pad, pad + h_), slice(pad, pad + w_))
    return out, g1[inner], g2[inner]


@pytest.mark.parametrize("shape, k, md, s1, s2, pad, multiply", [
    ((2, 3, 6, 6), 3, 1, 1, 1, 1, True),
    ((1, 2, 7, 5), 1, 2, 2, 1, 2, False),
    ((1, 1, 9, 9), 3, 2, 2, 2, 1, True),      # (9 + 2 - 6) / 2: MXNet rounds the size up
])
def test_correlation_matches_mxnets_loops(shape, k, md, s1, s2, pad, multiply):
    rng = np.random.default_rng(3)
    d1, d2 = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
    attrs = dict(kernel_size=k, max_displacement=md, stride1=s1, stride2=s2, pad_size=pad,
                 is_multiply=multiply)
    shape_out = nd.Correlation(nd.array(d1), nd.array(d2), **attrs).shape
    og = rng.uniform(-1, 1, shape_out)
    out, (g1, g2) = _run(nd.Correlation, [d1, d2], og, **attrs)
    want, want1, want2 = _correlation_ref(d1, d2, og, k, md, s1, s2, pad, multiply)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g1, want1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g2, want2, rtol=1e-12, atol=1e-12)


def test_correlation_refuses_an_even_kernel_and_a_window_larger_than_the_data():
    x = nd.ones((1, 1, 8, 8))
    with pytest.raises(OpError, match="odd"):
        nd.Correlation(x, x, kernel_size=2)
    with pytest.raises(OpError, match="too small"):
        nd.Correlation(x, x, kernel_size=9)


# ------------------------------------------------- image.normalize, quantization
def test_image_normalize_per_channel_and_its_gradient():
    x = np.random.default_rng(4).uniform(0, 1, (2, 3, 4, 4))
    mean, std = (0.1, 0.2, 0.3), (0.5, 1.0, 4.0)
    out, (grad,) = _run(nd.image.normalize, [x], np.ones_like(x), mean=mean, std=std)
    for c in range(3):
        np.testing.assert_allclose(out[:, c], (x[:, c] - mean[c]) / std[c])
        np.testing.assert_allclose(grad[:, c], 1 / std[c])
    with pytest.raises(OpError, match="1 or 3 entries"):
        nd.image.normalize(nd.array(x), mean=(0.1, 0.2))


def test_quantize_int8_is_zero_centred_and_dequantize_undoes_it():
    x = np.array([[-0.9, -0.2, 0.0], [0.13, 0.5, 0.7]], np.float32)
    q, lo, hi = nd.contrib.quantize(nd.array(x), nd.array([-0.5]), nd.array([0.7]),
                                    out_type="int8")
    real = 0.7
    want = [math.copysign(min(math.floor(abs(v) * np.float32(127 / real) + 0.5), 127), v)
            for v in x.ravel()]
    assert q.dtype == np.int8 and q.asnumpy().ravel().tolist() == want
    assert lo.asnumpy().tolist() == pytest.approx([-real]) and hi.asnumpy().tolist() == \
        pytest.approx([real])
    back = nd.contrib.dequantize(q, lo, hi).asnumpy()
    np.testing.assert_allclose(back, np.clip(x, -real, real), atol=real / 127 / 2 + 1e-7)


def test_quantize_uint8_maps_the_range_onto_0_255():
    x = np.array([0.0, 0.25, 1.0, 2.0], np.float32)
    q, lo, hi = nd.contrib.quantize(nd.array(x), nd.array([0.0]), nd.array([2.0]))
    assert q.dtype == np.uint8
    assert q.asnumpy().tolist() == [int(v * 255 / 2 + 0.5) for v in x]
    np.testing.assert_allclose(nd.contrib.dequantize(q, lo, hi).asnumpy(),
                               q.asnumpy().astype(np.float64) * 2 / 255, rtol=1e-6)
    with pytest.raises(OpError, match="int8 or uint8"):
        nd.contrib.dequantize(nd.array(x), lo, hi)


# ---------------------------------------------------------- attention products
def test_interleaved_self_attention_matches_separate_heads():
    """The queries, keys and values of head h sit at [..., h, 0/1/2, :] of each
    position's projection; the products are those of each (batch, head) apart."""
    rng = np.random.default_rng(5)
    seq, batch, heads, dim = 4, 2, 3, 2
    qkv = rng.uniform(-1, 1, (seq, batch, heads * 3 * dim))
    att = rng.uniform(0, 1, (batch * heads, seq, seq))
    scores = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv, dtype="float64"),
                                                      heads=heads).asnumpy()
    mixed = nd.contrib.interleaved_matmul_selfatt_valatt(
        nd.array(qkv, dtype="float64"), nd.array(att, dtype="float64"), heads=heads).asnumpy()
    parts = qkv.reshape(seq, batch, heads, 3, dim)
    for b in range(batch):
        for h in range(heads):
            q, k, v = (parts[:, b, h, j] for j in range(3))
            np.testing.assert_allclose(scores[b * heads + h], q @ k.T / math.sqrt(dim))
            np.testing.assert_allclose(mixed[:, b, h * dim:(h + 1) * dim],
                                       att[b * heads + h] @ v)


# ------------------------------------------------------------ bilinear UpSampling
def _upsampling_ref(x, w, scale):
    """Each input pixel spreads itself times its channel's kernel over the output, kernel
    2 * scale - scale % 2 at stride scale, then ceil((scale - 1) / 2) cropped per side."""
    k, pad = 2 * scale - scale % 2, math.ceil((scale - 1) / 2)
    n_, c_, h_, w_ = x.shape
    out = np.zeros((n_, c_, (h_ - 1) * scale + k, (w_ - 1) * scale + k))
    for n in range(n_):
        for c in range(c_):
            for i in range(h_):
                for j in range(w_):
                    out[n, c, i * scale:i * scale + k, j * scale:j * scale + k] += \
                        x[n, c, i, j] * w[c, 0]
    return out[:, :, pad:pad + h_ * scale, pad:pad + w_ * scale]


@pytest.mark.parametrize("scale", [2, 3, 4])
def test_bilinear_upsampling_is_a_deconvolution_of_each_channel_by_its_kernel(scale):
    rng = np.random.default_rng(6)
    k = 2 * scale - scale % 2
    x, w = rng.uniform(-1, 1, (2, 3, 3, 4)), rng.uniform(-1, 1, (3, 1, k, k))
    s = mx.sym.UpSampling(mx.sym.var("data"), mx.sym.var("weight"), scale=scale,
                          sample_type="bilinear", num_filter=3, num_args=2)
    args, outs, _ = s.infer_shape(data=x.shape)
    assert args == [x.shape, w.shape] and outs == [(2, 3, 3 * scale, 4 * scale)]
    up = nd.UpSampling(nd.array(x, dtype="float64"), nd.array(w, dtype="float64"),
                       scale=scale, sample_type="bilinear", num_filter=3, num_args=2)
    np.testing.assert_allclose(up.asnumpy(), _upsampling_ref(x, w, scale), rtol=1e-12,
                               atol=1e-12)


def test_bilinear_upsampling_with_the_bilinear_kernel_keeps_a_flat_image_flat():
    weight = nd.zeros((2, 1, 4, 4))
    mx.init.Bilinear()._init_weight("weight", weight)
    up = nd.UpSampling(nd.full((1, 2, 4, 4), 3.0), weight, scale=2, sample_type="bilinear",
                       num_filter=2, num_args=2).asnumpy()
    np.testing.assert_allclose(up[:, :, 1:-1, 1:-1], 3.0, rtol=1e-6)
    with pytest.raises(OpError, match="num_filter"):
        nd.UpSampling(nd.ones((1, 2, 4, 4)), weight, scale=2, sample_type="bilinear",
                      num_filter=3, num_args=2)
