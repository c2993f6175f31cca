"""MXNet's InstanceNorm, GroupNorm, L2Normalization and SVMOutput ops: what the op cases
cannot check (hidden statistics, a backward that ignores the output gradient, errors)."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym


def test_svm_output_gradients_are_the_hinge_losses():
    x = np.array([[0.5, -2.0, 0.3], [1.5, 0.2, -0.4]])
    label = np.array([0, 2])
    sign = np.array([[1, -1, -1], [-1, -1, 1]])
    for linear in (True, False):
        data = nd.array(x, dtype="float64")
        data.attach_grad()
        with autograd.record():
            out = nd.SVMOutput(data, nd.array(label), use_linear=linear, margin=1.0,
                               regularization_coefficient=0.5)
        out.backward()
        assert (out.asnumpy() == x).all()
        gap = 1.0 - sign * x
        want = -sign * 0.5 * ((gap > 0) if linear else 2 * np.maximum(gap, 0))
        np.testing.assert_allclose(data.grad.asnumpy(), want)


def test_svm_output_refuses_labels_outside_the_classes():
    data = nd.ones((2, 3))
    data.attach_grad()
    with autograd.record():
        out = nd.SVMOutput(data, nd.array([0, 3]))
    with pytest.raises(ValueError, match=r"SVMOutput: labels must be class indices in \[0, 3\)"):
        out.backward()


def test_group_norm_returns_mean_and_std_per_group():
    x = np.random.default_rng(0).uniform(size=(2, 4, 3))
    out, mean, std = nd.GroupNorm(nd.array(x), nd.ones((2,)), nd.zeros((2,)), num_groups=2,
                                  eps=1e-5, output_mean_var=True)
    rows = x.reshape(2, 2, 6)
    np.testing.assert_allclose(mean.asnumpy(), rows.mean(2), rtol=1e-6)
    np.testing.assert_allclose(std.asnumpy(), np.sqrt(rows.var(2) + 1e-5), rtol=1e-6)
    with mx.name.NameManager():          # names counted from 0, whatever ran before
        outputs = sym.GroupNorm(sym.var("x"), num_groups=2, output_mean_var=True).list_outputs()
    assert outputs == ["groupnorm0_output", "groupnorm0_mean", "groupnorm0_std"]


def test_norms_refuse_bad_shapes_naming_the_op():
    with pytest.raises(ValueError, match="GroupNorm: gamma must have shape"):
        nd.GroupNorm(nd.ones((2, 4, 3)), nd.ones((4,)), nd.ones((2,)), num_groups=2)
    with pytest.raises(ValueError, match="channels .* into 3 groups"):
        nd.GroupNorm(nd.ones((2, 4, 3)), nd.ones((3,)), nd.ones((3,)), num_groups=3)
    with pytest.raises(ValueError, match="L2Normalization: mode 'spatial' needs data of at "
                                         "least 3"):
        nd.L2Normalization(nd.ones((2, 3)), mode="spatial")


def test_scalar_ops_default_to_one_as_mxnet():
    """MXNet 1.9's scalar ops parse one parameter struct whose scalar defaults to 1."""
    x = nd.array([0.25, 3.0])
    np.testing.assert_allclose(nd.smooth_l1(x).asnumpy(), [0.5 * 0.25 ** 2, 2.5])
    np.testing.assert_allclose(nd._plus_scalar(x).asnumpy(), [1.25, 4.0])


def test_where_refuses_a_short_condition_when_evaluated():
    where = sym.where(sym.var("c"), sym.var("x"), sym.var("y"))
    with pytest.raises(ValueError, match="where: condition"):
        where.eval(c=nd.array([1, 0]), x=nd.ones((3, 2)), y=nd.ones((3, 2)))


def test_dropout_of_p_one_is_nan_as_mxnet():
    """MXNet scales the kept elements by 1 / (1 - p): at p=1 its mask is 0 * inf, NaN,
    imperatively and in a compiled graph (which runs it on the host then)."""
    x = nd.ones((3, 4))
    with autograd.record(train_mode=True):
        y = nd.Dropout(x, p=1.0)
    assert np.isnan(y.asnumpy()).all()
    exe = sym.Dropout(sym.var("data"), p=1.0).simple_bind(data=(3, 4))
    exe.arg_arrays[0][:] = 1
    exe.forward(is_train=True)
    assert np.isnan(exe.outputs[0].asnumpy()).all()
    exe.forward(is_train=False)
    assert (exe.outputs[0].asnumpy() == 1).all()
    with pytest.raises(ValueError, match=r"Dropout: p must be in \[0, 1\]"):
        with autograd.record(train_mode=True):
            nd.Dropout(x, p=1.5)


def test_prelu_gamma_lines_up_with_axes_zero_and_one():
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3, 4))
    gamma = np.array([0.1, 0.2, 0.3])
    y = nd.LeakyReLU(nd.array(x), nd.array(gamma), act_type="prelu").asnumpy()
    np.testing.assert_allclose(y, np.where(x > 0, x, gamma[:, None] * x), rtol=1e-6)
    s = sym.LeakyReLU(sym.var("x"), act_type="prelu", name="act")
    assert s.list_arguments() == ["x", "act_gamma"]
    assert s.infer_shape(x=(2, 3, 4))[0] == [(2, 3, 4), (3,)]
    with pytest.raises(ValueError, match="prelu's gamma of shape \\(4,\\) does not line up"):
        s.infer_shape(x=(2, 3, 4), act_gamma=(4,))


def _adaptive_reference(x, h, w):
    """MXNet's test formula: cell (i, j) averages rows floor(i*H/h) .. ceil((i+1)*H/h)."""
    H, W = x.shape[2:]
    out = np.empty(x.shape[:2] + (h, w))
    for i in range(h):
        for j in range(w):
            r0, r1 = int(np.floor(i * H / h)), int(np.ceil((i + 1) * H / h))
            c0, c1 = int(np.floor(j * W / w)), int(np.ceil((j + 1) * W / w))
            out[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("size", [(3,), (4, 3), (7, 2)])
def test_adaptive_avg_pooling_matches_mxnets_formula_hybridized_too(size):
    x = np.random.default_rng(8).uniform(size=(2, 3, 7, 5))
    h, w = (size[0], size[0]) if len(size) == 1 else size
    got = nd.contrib.AdaptiveAvgPooling2D(nd.array(x, dtype="float64"), output_size=size)
    np.testing.assert_allclose(got.asnumpy(), _adaptive_reference(x, h, w), rtol=1e-12)
    s = sym.contrib.AdaptiveAvgPooling2D(sym.var("x"), output_size=size)
    grad = nd.zeros(x.shape, dtype="float64")
    exe = s.bind(args={"x": nd.array(x, dtype="float64")}, args_grad={"x": grad})
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), got.asnumpy(), rtol=1e-12)
    exe.backward(nd.ones((2, 3, h, w), dtype="float64"))
    # each cell spreads 1 over its window: the total is the number of cells
    np.testing.assert_allclose(grad.asnumpy().sum(axis=(2, 3)), h * w, rtol=1e-12)


def _bilinear_reference(x, h, w, align_corners):
    """Each output pixel from its four input neighbours (MXNet's formulas)."""
    H, W = x.shape[2:]

    def source(dst, n_in, n_out):
        if align_corners:
            return dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        return max((dst + 0.5) * n_in / n_out - 0.5, 0.0)
    out = np.empty(x.shape[:2] + (h, w))
    for i in range(h):
        r = source(i, H, h)
        r0, fr = int(r), r - int(r)
        r1 = r0 + 1 if r0 < H - 1 else r0
        for j in range(w):
            c = source(j, W, w)
            c0, fc = int(c), c - int(c)
            c1 = c0 + 1 if c0 < W - 1 else c0
            out[:, :, i, j] = ((1 - fr) * ((1 - fc) * x[:, :, r0, c0] + fc * x[:, :, r0, c1])
                               + fr * ((1 - fc) * x[:, :, r1, c0] + fc * x[:, :, r1, c1]))
    return out


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(6, 4), (2, 9)])
def test_bilinear_resize_matches_the_four_neighbour_formula(size, align_corners):
    x = np.random.default_rng(9).uniform(size=(1, 2, 3, 5))
    got = nd.contrib.BilinearResize2D(nd.array(x, dtype="float64"), height=size[0],
                                      width=size[1], align_corners=align_corners)
    np.testing.assert_allclose(got.asnumpy(), _bilinear_reference(x, *size, align_corners),
                               rtol=1e-12)
    like = sym.contrib.BilinearResize2D(sym.var("x"), sym.var("like"), mode="like",
                                        align_corners=align_corners)
    bound = like.eval(x=nd.array(x, dtype="float64"), like=nd.zeros((1, 1) + size))[0]
    np.testing.assert_allclose(bound.asnumpy(), got.asnumpy(), rtol=1e-12)


def test_bilinear_resize_modes_give_mxnets_sizes():
    s = sym.contrib.BilinearResize2D(sym.var("x"), mode="to_odd_up")
    assert s.infer_shape(x=(1, 1, 4, 7))[1] == [(1, 1, 5, 7)]
    s = sym.contrib.BilinearResize2D(sym.var("x"), scale_height=0.5, scale_width=3,
                                     mode="odd_scale")
    assert s.infer_shape(x=(1, 1, 4, 7))[1] == [(1, 1, 2, 19)]
    with pytest.raises(ValueError, match="mode 'odd_scale' needs scale_height"):
        sym.contrib.BilinearResize2D(sym.var("x"), mode="odd_scale").infer_shape(x=(1, 1, 4, 4))


def test_im2col_times_the_weights_is_the_convolution():
    rng = np.random.default_rng(10)
    x, w = rng.uniform(size=(2, 3, 9, 7)), rng.uniform(size=(4, 3, 3, 2))
    kw = {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}
    col = nd.im2col(nd.array(x, dtype="float64"), **kw)
    conv = nd.Convolution(nd.array(x, dtype="float64"), nd.array(w, dtype="float64"),
                          num_filter=4, no_bias=True, **kw)
    product = np.einsum("fk,nkl->nfl", w.reshape(4, -1), col.asnumpy())
    np.testing.assert_allclose(product.reshape(conv.shape), conv.asnumpy(), rtol=1e-10)
    # col2im adds each patch back: with ones, each pixel counts the patches covering it
    counts = nd.col2im(nd.ones_like(col), (9, 7), **kw).asnumpy()
    back = nd.col2im(col, (9, 7), **kw).asnumpy()
    np.testing.assert_allclose(back, counts * x, rtol=1e-12)
    s = sym.im2col(sym.var("x"), **kw)
    assert s.infer_shape(x=(2, 3, 9, 7))[1] == [col.shape]
