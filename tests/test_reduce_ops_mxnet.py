"""MXNet's softmax attributes (`use_length`, `dtype`) and SoftmaxOutput's (`preserve_shape`,
`normalization`, `smooth_alpha`, probabilities as labels): what the op cases cannot check
(a backward that ignores the output gradient, compiled graphs running them on the host)."""
import numpy as np
import pytest

from straightdope import autograd, gluon, nd, sym


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_output_grad(y, label, classes_axis, scale, alpha=0.0, ignore=None):
    """(softmax - smoothed one_hot(label)) * scale, zero where label == ignore."""
    moved = np.moveaxis(y, classes_axis, -1)
    k = moved.shape[-1]
    target = np.where(np.arange(k) == label[..., None], 1.0 - alpha, alpha / (k - 1))
    grad = moved - target
    if ignore is not None:
        grad[label == ignore] = 0.0
    return np.moveaxis(grad * scale, -1, classes_axis)


def _imperative_grad(x, label, **attrs):
    data = nd.array(x, dtype="float64")
    data.attach_grad()
    with autograd.record():
        out = nd.SoftmaxOutput(data, nd.array(label, dtype="float64"), **attrs)
    out.backward(nd.ones_like(out) * 7.0)       # ignored, as in MXNet (no out_grad)
    return out.asnumpy(), data.grad.asnumpy()


def _bound_grad(x, label, **attrs):
    """The same through Symbol.bind: a compiled graph."""
    s = sym.SoftmaxOutput(sym.var("x"), sym.var("label"), **attrs)
    grad = nd.zeros(x.shape, dtype="float64")
    exe = s.bind(args={"x": nd.array(x, dtype="float64"),
                       "label": nd.array(label, dtype="float64")},
                 args_grad={"x": grad}, grad_req={"x": "write", "label": "null"})
    exe.forward(is_train=True)
    exe.backward()
    return exe.outputs[0].asnumpy(), grad.asnumpy()


CASES = [
    # data shape, label shape, attrs, (classes axis, count the scale divides by)
    ((4, 5), (4,), {"normalization": "batch", "grad_scale": 0.5}, (1, 4)),
    ((4, 5), (4,), {"smooth_alpha": 0.2}, (1, 1)),
    ((2, 3, 4), (2, 3), {"preserve_shape": True}, (2, 1)),
    ((2, 5, 3), (2, 3), {"multi_output": True}, (1, 3)),          # null: / the rest
    ((2, 5, 3), (2, 3), {"multi_output": True, "normalization": "batch"}, (1, 6)),
]


@pytest.mark.parametrize("shape, label_shape, attrs, how", CASES,
                         ids=lambda v: str(v) if isinstance(v, dict) else "")
@pytest.mark.parametrize("run", [_imperative_grad, _bound_grad], ids=["nd", "bound"])
def test_softmax_output_gradient_as_mxnet(shape, label_shape, attrs, how, run):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, shape)
    axis, count = how
    label = rng.integers(0, shape[axis], label_shape).astype(np.float64)
    out, grad = run(x, label, **attrs)
    y = _softmax(x, axis)
    np.testing.assert_allclose(out, y, rtol=1e-12)
    want = _softmax_output_grad(y, label, axis, attrs.get("grad_scale", 1.0) / count,
                                attrs.get("smooth_alpha", 0.0))
    np.testing.assert_allclose(grad, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("run", [_imperative_grad, _bound_grad], ids=["nd", "bound"])
def test_softmax_output_valid_normalization_ignores_labels(run):
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, (6, 4))
    label = np.array([0, 2, 2, 1, 2, 3], dtype=np.float64)
    _, grad = run(x, label, use_ignore=True, ignore_label=2, normalization="valid")
    want = _softmax_output_grad(_softmax(x, 1), label, 1, 1.0 / 3, ignore=2)
    np.testing.assert_allclose(grad, want, rtol=1e-10, atol=1e-12)
    assert (grad[label == 2] == 0).all()


@pytest.mark.parametrize("run", [_imperative_grad, _bound_grad], ids=["nd", "bound"])
def test_softmax_output_takes_probabilities_as_labels(run):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (3, 4))
    target = _softmax(rng.uniform(-1, 1, (3, 4)), 1)
    out, grad = run(x, target, grad_scale=2.0)
    np.testing.assert_allclose(grad, 2.0 * (_softmax(x, 1) - target), rtol=1e-10)


def test_softmax_output_refuses_a_label_of_another_shape():
    s = sym.SoftmaxOutput(sym.var("x"), sym.var("label"))
    with pytest.raises(ValueError, match=r"SoftmaxOutput: label must have shape \(4,\)"):
        s.infer_shape(x=(4, 5), label=(5,))
    s = sym.SoftmaxOutput(sym.var("x"), sym.var("label"), multi_output=True)
    with pytest.raises(ValueError, match="with multi_output, label must have shape"):
        s.infer_shape(x=(2, 5, 3), label=(2, 5))
    assert s.infer_shape(x=(2, 5, 3))[0] == [(2, 5, 3), (2, 3)]


class _MaskedSoftmax(gluon.HybridBlock):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def hybrid_forward(self, F, x, length):
        op = F.log_softmax if self.log else F.softmax
        return op(x, length, axis=1, use_length=True) * 3.0


@pytest.mark.parametrize("log", [False, True])
def test_softmax_with_length_hybridized_matches_imperative(log):
    """A compiled graph runs it on the host (its kernel covers no length): same values and
    gradients as imperatively, zero past each length, no gradient for the length."""
    rng = np.random.default_rng(6)
    x = rng.uniform(-2, 2, (2, 5, 3))
    length = np.array([[1, 5, 3], [2, 4, 5]])
    head = rng.uniform(-1, 1, x.shape)
    results = []
    for hybridize in (False, True):
        net = _MaskedSoftmax(log)
        if hybridize:
            net.hybridize()
        data = nd.array(x, dtype="float64")
        data.attach_grad()
        with autograd.record():
            out = net(data, nd.array(length, dtype="int32"))
        out.backward(nd.array(head, dtype="float64"))
        results.append((out.asnumpy(), data.grad.asnumpy()))
    (out, grad), (hout, hgrad) = results
    np.testing.assert_allclose(hout, out, rtol=1e-12)
    np.testing.assert_allclose(hgrad, grad, rtol=1e-10, atol=1e-12)
    past = np.arange(5)[None, :, None] >= length[:, None, :]
    assert (out[past] == 0).all() and (grad[past] == 0).all()
    p = _softmax(np.where(past, -np.inf, x), 1)
    np.testing.assert_allclose(out, 3.0 * np.where(past, 0, np.log(np.where(past, 1, p))
                                                   if log else p), rtol=1e-10)


def test_softmax_dtype_is_the_outputs_and_the_gradient_keeps_the_datas():
    x = nd.array(np.random.default_rng(7).uniform(-2, 2, (3, 6)), dtype="float16")
    x.attach_grad()
    with autograd.record():
        y = nd.softmax(x, dtype="float32")
    y.backward(nd.array(np.arange(18).reshape(3, 6), dtype="float32"))
    assert y.dtype == np.float32 and x.grad.dtype == np.float16
    want = _softmax(x.asnumpy().astype(np.float64), 1)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    s = sym.softmax(sym.var("x"), dtype="float64")
    assert s.infer_type(x="float32")[1] == [np.float64]


def test_softmax_refuses_a_length_of_another_shape():
    with pytest.raises(ValueError, match=r"length must have data's shape without axis 1: "
                                         r"\(2, 3\)"):
        nd.softmax(nd.ones((2, 4, 3)), nd.ones((2, 4)), axis=1, use_length=True)


def test_one_hot_of_depth_zero_is_empty():
    out = nd.one_hot(nd.ones((2, 3)), depth=0, dtype="int32")
    assert out.shape == (2, 3, 0) and out.dtype == np.int32


def test_pick_wraps_indices_in_wrap_mode():
    x = np.arange(12.0).reshape(3, 4)
    index = np.array([-1, 5, 2])
    got = nd.pick(nd.array(x), nd.array(index), axis=1, mode="wrap").asnumpy()
    np.testing.assert_array_equal(got, x[np.arange(3), index % 4])
    clipped = nd.pick(nd.array(x), nd.array(index), axis=1).asnumpy()
    np.testing.assert_array_equal(clipped, x[np.arange(3), np.clip(index, 0, 3)])
