"""The convolution kernels (compiler/kernels/conv.py, winograd.py) against a direct
float64 reference, over many shapes, strides, pads, groups and dilations.

The kernels are called directly on flat arrays, as the generated code calls them, so a
new shape compiles nothing. Float32 results are checked against the float64 direct sum,
normwise: the largest error may be RTOL times the largest sum |w| |x| over an output's
window. Normwise because that is how Winograd's rounding error is bounded (Barabasz et
al., "Error analysis and improving the accuracy of Winograd convolution", 2020): its
transforms mix the 16 values of a tile, so an output's error follows the magnitudes of
its whole tile, not only of the terms that end up in it. F(2x2, 3x3) halves twice and
adds at most 16 terms per product, so its bound is a small constant (~10) times float32
rounding (6e-8): 2e-6 leaves room for that and BLAS' summation order, while an indexing
mistake (a wrong tap, a lost tile or image) is off by a whole term.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from straightdope.compiler.kernels import conv, winograd

RTOL = 2e-6


def reference(x, w, stride, pad, dilate, groups, dy=None):
    """The convolution by its definition, in float64, tap by tap: y, and the same sum over
    |w| |x| (the magnitude). With dy: also dx and dw of sum(y * dy), each tap's adjoint,
    and their magnitudes."""
    N, C, H, W = x.shape
    F, Cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw_) = stride, pad, dilate
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw_ * (kw - 1) - 1) // sw + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y, y_mag = np.zeros((N, F, OH, OW)), np.zeros((N, F, OH, OW))
    dxp, dxp_mag = np.zeros_like(xp), np.zeros_like(xp)
    dw, dw_mag = np.zeros(w.shape), np.zeros(w.shape)
    Fg = F // groups
    for g in range(groups):
        cs, fs = slice(g * Cg, (g + 1) * Cg), slice(g * Fg, (g + 1) * Fg)
        for i in range(kh):
            for j in range(kw):
                at = (slice(None), cs, slice(i * dh, i * dh + sh * (OH - 1) + 1, sh),
                      slice(j * dw_, j * dw_ + sw * (OW - 1) + 1, sw))
                win, tap = xp[at], w[fs, :, i, j].astype(np.float64)
                y[:, fs] += np.einsum("nchw,fc->nfhw", win, tap)
                y_mag[:, fs] += np.einsum("nchw,fc->nfhw", abs(win), abs(tap))
                if dy is not None:
                    d = dy[:, fs].astype(np.float64)
                    dxp[at] += np.einsum("nfhw,fc->nchw", d, tap)
                    dxp_mag[at] += np.einsum("nfhw,fc->nchw", abs(d), abs(tap))
                    dw[fs, :, i, j] = np.einsum("nfhw,nchw->fc", d, win)
                    dw_mag[fs, :, i, j] = np.einsum("nfhw,nchw->fc", abs(d), abs(win))
    if dy is None:
        return y, y_mag
    inner = (slice(None), slice(None), slice(ph, ph + H), slice(pw, pw + W))
    return y, y_mag, dxp[inner], dxp_mag[inner], dw, dw_mag


def run_kernels(x, w, dy, stride, pad, dilate, groups):
    """y, dx, dw from the compiled kernels (flat arrays at offset 0, as codegen calls them)."""
    N, C, H, W = x.shape
    F, _, kh, kw = w.shape
    OH, OW = dy.shape[2:]
    sizes = (N, C, H, W, F, OH, OW, kh, kw, *stride, *pad, *dilate, groups)
    y = np.full(dy.size, np.nan, x.dtype)
    dx = np.full(x.size, np.nan, x.dtype)
    dw = np.full(w.size, np.nan, x.dtype)
    conv.conv2d(x.ravel(), 0, w.ravel(), 0, y, 0, *sizes)
    conv.conv2d_grad_data(dy.ravel(), 0, w.ravel(), 0, dx, 0, *sizes)
    conv.conv2d_grad_weight(dy.ravel(), 0, x.ravel(), 0, dw, 0, *sizes)
    return y.reshape(dy.shape), dx.reshape(x.shape), dw.reshape(w.shape)


def assert_close(got, want, magnitude, rtol=RTOL):
    assert not np.isnan(got).any(), "an output was never written"
    error = abs(got - want)
    worst = np.unravel_index(np.argmax(error), got.shape)
    assert error.max() <= rtol * magnitude.max(), (
        f"at {worst}: got {got[worst]}, want {want[worst]} (bound {rtol * magnitude.max():.3g})")


def check(shape, filters, kernel, stride, pad, dilate, groups, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((filters, shape[1] // groups) + kernel).astype(dtype)
    out_shape = reference(x, w, stride, pad, dilate, groups)[0].shape
    dy = rng.standard_normal(out_shape).astype(dtype)
    want = reference(x, w, stride, pad, dilate, groups, dy)
    for got, value, magnitude in zip(run_kernels(x, w, dy, stride, pad, dilate, groups),
                                     want[::2], want[1::2]):
        assert_close(got, value, magnitude)


@st.composite
def convolutions(draw):
    groups = draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilate = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pad = (draw(st.integers(0, kh)), draw(st.integers(0, kw)))
    span = ((kh - 1) * dilate[0] + 1, (kw - 1) * dilate[1] + 1)
    H = draw(st.integers(max(1, span[0] - 2 * pad[0]), 9))
    W = draw(st.integers(max(1, span[1] - 2 * pad[1]), 9))
    shape = (draw(st.integers(1, 3)), groups * draw(st.integers(1, 3)), H, W)
    filters = groups * draw(st.integers(1, 3))
    return shape, filters, (kh, kw), stride, pad, dilate, groups


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convolutions(), st.integers(0, 2**16))
def test_convolution_and_its_gradients_equal_the_direct_sum(case, seed):
    check(*case, seed=seed)


@st.composite
def winograd_convolutions(draw):
    """3x3 stride-1 convolutions with enough channels and 2x2 output tiles to take the
    Winograd path."""
    groups = draw(st.integers(1, 2))
    pad = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    H = draw(st.integers(max(1, 3 - 2 * pad[0]), 13))
    W = draw(st.integers(max(1, 3 - 2 * pad[1]), 13))
    OH, OW = H + 2 * pad[0] - 2, W + 2 * pad[1] - 2
    tiles = ((OH + 1) // 2) * ((OW + 1) // 2)
    N = max(draw(st.integers(1, 3)), -(-32 // tiles))
    shape = (N, groups * draw(st.integers(16, 20)), H, W)
    return shape, groups * draw(st.integers(16, 20)), (3, 3), (1, 1), pad, (1, 1), groups


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(winograd_convolutions(), st.integers(0, 2**16))
def test_winograd_convolution_and_its_gradients_equal_the_direct_sum(case, seed):
    shape, filters, _, _, pad, _, groups = case
    OH, OW = shape[2] + 2 * pad[0] - 2, shape[3] + 2 * pad[1] - 2
    assert conv._winograd_pays(3, 3, 1, 1, 1, 1, shape[0], shape[1] // groups,
                                filters // groups, OH, OW)
    check(*case, seed=seed)


def test_winograd_works_through_several_batches_of_images():
    # 16 * (Ci + Co) * tiles per image = 16 * 32 * 64 elements: 8 images per batch, 20 images
    shape, filters = (20, 16, 16, 16), 16
    assert winograd.CHUNK // (16 * 32 * 64) < shape[0]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((filters, 16, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((20, filters, 16, 16)).astype(np.float32)
    want = reference(x, w, (1, 1), (1, 1), (1, 1), 1, dy)
    for got, value, magnitude in zip(run_kernels(x, w, dy, (1, 1), (1, 1), (1, 1), 1),
                                     want[::2], want[1::2]):
        assert_close(got, value, magnitude)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd_rounding_stays_near_the_float64_direct_sum(dtype):
    # ResNet's shape of layer: the error is measured against float64, for both dtypes
    shape, filters = (8, 32, 16, 16), 32
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((filters, 32, 3, 3)).astype(dtype)
    want, mag = reference(x, w, (1, 1), (1, 1), (1, 1), 1)
    y = np.empty(want.size, dtype)
    winograd.conv3x3(x.ravel(), 0, w.ravel(), 0, False, y, 0, *shape, filters, 16, 16, 1, 1, 1)
    err = abs(y.reshape(want.shape) - want).max() / mag.max()
    assert err < (RTOL if dtype == np.float32 else 1e-14)
