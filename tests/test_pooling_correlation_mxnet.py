"""MXNet 1.9.1's checks on Pooling's pooling_convention='same' and Correlation's kernel
size (test_operator: test_*_max_pooling_pad_type_same, test_*_kernel_size)."""
import numpy as np
import pytest

import straightdope as mx


@pytest.mark.parametrize("width, stride, kernel", [(10, 2, 2), (11, 3, 5), (7, 4, 1)])
def test_same_pooling_gives_ceil_width_over_stride_windows_cut_at_the_end(width, stride,
                                                                            kernel):
    x = np.random.default_rng(width).normal(size=(2, 3, width))
    out = mx.nd.Pooling(mx.nd.array(x), kernel=kernel, stride=stride, pool_type="max",
                        pooling_convention="same").asnumpy()
    starts = range(0, width, stride)
    assert out.shape == (2, 3, len(starts)) == (2, 3, -(-width // stride))
    want = np.stack([x[:, :, i:i + kernel].max(axis=2) for i in starts], axis=2)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_same_pooling_refuses_pad_and_data_that_is_not_3d():
    with pytest.raises(mx.base.MXNetError, match="pad must be 0"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 10)), kernel=2, stride=2, pad=2,
                      pooling_convention="same")
    with pytest.raises(mx.base.MXNetError, match="3-D data"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), pooling_convention="same")
    with pytest.raises(mx.base.MXNetError, match=r"kernel size \(12\) exceeds input \(10\)"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 10)), kernel=12, pooling_convention="same")


def test_correlation_refuses_a_kernel_that_does_not_fit_or_is_even():
    a = mx.nd.ones((1, 1, 28, 28))
    with pytest.raises(mx.base.MXNetError, match="Correlation cannot be done"):
        mx.nd.Correlation(a, a, kernel_size=27)
    with pytest.raises(mx.base.MXNetError, match="kernel_size must be odd"):
        mx.nd.Correlation(a, a, kernel_size=4)
    out = mx.nd.Correlation(a, a, kernel_size=9)     # border 1 + 4: 28 - 10 = 18 wide
    assert out.shape == (1, 9, 18, 18)
    np.testing.assert_allclose(out.asnumpy(), 1.0)  # ones times ones, averaged


def test_same_pooling_is_refused_by_the_onnx_export_by_name(tmp_path):
    pytest.importorskip("onnx")
    from straightdope import onnx as sdonnx
    s = mx.sym.Pooling(mx.sym.var("data"), kernel=(2,), stride=(2,), pool_type="max",
                       pooling_convention="same", name="pool")
    with pytest.raises(sdonnx.OnnxExportError, match="pooling_convention='same'"):
        sdonnx.export_model(s, {}, [(1, 1, 10)], np.float32, str(tmp_path / "m.onnx"))
