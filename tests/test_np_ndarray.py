"""mx.np.ndarray, the array of MXNet 2.0's NumPy interface (straightdope/numpy/multiarray.py):
an NDArray that prints, compares, formats and reports its dtype as NumPy does."""
import numpy as onp
import pytest

import straightdope as mx
from straightdope import autograd, gluon, nd, np, npx


def test_np_arrays_print_like_numpy_and_name_only_a_dtype_other_than_float32():
    assert repr(np.array([1, 2])) == "array([1., 2.])"
    assert repr(np.array([1, 2], dtype="int32")) == "array([1, 2], dtype=int32)"
    assert repr(np.array([0.5], dtype="float64")) == "array([0.5], dtype=float64)"
    assert repr(np.zeros((2,), dtype=bool)) == "array([False, False])"
    assert str(np.array([1, 2])) == "[1. 2.]"
    assert "<NDArray" in repr(nd.array([1, 2]))         # the classic array keeps its look


def test_an_np_arrays_dtype_is_a_numpy_dtype_and_an_nd_arrays_a_scalar_type():
    assert np.ones((2,), dtype="int8").dtype == onp.dtype("int8")
    assert isinstance(np.ones((2,)).dtype, onp.dtype)
    assert nd.ones((2,)).dtype is onp.float32


def test_comparing_np_arrays_gives_bool_arrays_that_select_as_masks():
    a = np.arange(12).reshape(4, 3)
    b = np.array([1, 2, 3])
    mask = b > 2
    assert mask.dtype == onp.bool_ and isinstance(mask, np.ndarray)
    assert a[:, mask].shape == (4, 1)
    assert a[a >= 10].asnumpy().tolist() == [10.0, 11.0]
    assert (nd.array([1, 3]) > 2).dtype is onp.float32  # classic: same dtype, 0 and 1


def test_a_0d_np_array_formats_like_its_number_and_a_vector_refuses_a_format_spec():
    assert f"{np.array(onp.pi):0.3g}" == "3.14"
    assert "{}".format(np.array([0.5])) == "[0.5]"
    with pytest.raises(TypeError, match="format spec"):
        "{:30}".format(np.array([onp.pi]))


def test_np_functions_return_np_arrays_and_ops_given_one_return_np_arrays():
    x = np.ones((2, 3))
    for result in (np.exp(x), np.dot(x, x.T), x + 1, 2 * x, np.random.normal(size=(2,)),
                   np.linalg.norm(x), x[0], x.reshape(3, 2), npx.relu(x)):
        assert type(result) is np.ndarray
    assert type(nd.ones((2,)) + 1) is nd.NDArray
    assert type(nd.ones((2, 3)) * x) is np.ndarray      # whichever side the np array is on
    assert all(type(p) is np.ndarray for p in np.split(x, 3, axis=1))


def test_np_asarray_of_a_classic_array_leaves_that_array_classic():
    x = nd.ones((2,))
    y = np.asarray(x)
    assert type(y) is np.ndarray and type(x) is nd.NDArray


def test_as_np_ndarray_and_as_nd_ndarray_are_views_of_the_same_memory():
    x = nd.zeros((3,))
    y = x.as_np_ndarray()
    assert type(y) is np.ndarray and y.as_np_ndarray() is y
    y[1] = 5
    assert x.asnumpy().tolist() == [0, 5, 0]
    z = y.as_nd_ndarray()
    assert type(z) is nd.NDArray
    z[0] = 7
    assert y.asnumpy().tolist() == [7, 5, 0]


def test_gradients_flow_through_np_arrays_made_by_np_functions():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = np.sum(np.exp(x) * x)
    y.backward()
    expected = onp.exp([1.0, 2.0]) * (1 + onp.array([1.0, 2.0]))
    assert onp.allclose(x.grad.asnumpy(), expected)
    assert type(x.grad) is np.ndarray


def test_npx_load_gives_back_np_arrays(tmp_path):
    npx.save(str(tmp_path / "a"), {"w": np.ones((2,))})
    loaded = npx.load(str(tmp_path / "a"))
    assert type(loaded["w"]) is np.ndarray


@mx.util.use_np
class TwoOutputs(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.np.add(x, x), x > 1


def test_a_use_np_block_returns_np_arrays_and_bool_comparisons_hybridized_or_not():
    net = TwoOutputs()
    for hybridize in (False, True):
        if hybridize:
            net.hybridize()
        total, greater = net(np.array([1.0, 2.0]))
        assert type(total) is np.ndarray and type(greater) is np.ndarray
        assert greater.dtype == onp.bool_
        assert greater.asnumpy().tolist() == [False, True]


def test_a_classic_block_called_with_np_arrays_returns_what_it_computes():
    class Classic(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() * 2

    net = Classic()
    for hybridize in (False, True):
        if hybridize:
            net.hybridize()
        assert type(net(np.ones((2,)))) is nd.NDArray


def test_a_block_returning_np_and_classic_arrays_together_is_refused_hybridized_or_not():
    class Mixed(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + 1, x * 2

    net = Mixed()
    for hybridize in (False, True):
        if hybridize:
            net.hybridize()
        with pytest.raises(TypeError, match="Mixed returns both"):
            net(np.ones((2,)))


def test_nd_style_blocks_keep_working_after_set_np_unlike_mxnet():
    class Classic(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.relu(x), x > 0              # a classic comparison stays float

    npx.set_np()
    try:
        net = Classic()
        for hybridize in (False, True):
            if hybridize:
                net.hybridize()
            out, positive = net(nd.array([-1.0, 2.0]))
            assert type(out) is nd.NDArray and positive.dtype is onp.float32
    finally:
        npx.reset_np()


def test_a_traced_np_comparison_is_a_bool_np_symbol_and_a_classic_one_is_not():
    x = mx.sym.var("x")
    assert type(x.as_np_ndarray() > 1) is mx.sym.NpSymbol
    assert (x.as_np_ndarray() > 1).infer_type(x="float32")[1] == [onp.bool_]
    assert (x > 1).infer_type(x="float32")[1] == [onp.float32]


def test_indexing_with_a_0d_integer_array_gives_a_0d_result():
    x = np.arange(24).reshape(2, 3, 4)
    picked = x[1, np.array(2, dtype="int32"), -1]
    assert picked.shape == () and float(picked) == 23


def test_indexing_an_empty_array_while_recording_keeps_its_zero_length_axes():
    x = np.zeros((3, 0))
    x.attach_grad()
    with autograd.record():
        y = x[2]
    assert y.shape == (0,)


def test_writing_an_array_that_needs_a_gradient_into_x_none_is_refused_while_recording():
    x = np.zeros((2,))
    y = np.ones((2,))
    y.attach_grad()
    with autograd.record(), pytest.raises(mx.base.MXNetError, match="Inplace operations"):
        x[None] = y


def test_a_hybridized_block_called_with_np_arrays_runs_the_fast_path_and_gives_gradients():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(2))
    net.initialize()
    x = np.random.normal(size=(3, 5))
    expected = net(x)
    net.hybridize()
    net(x)
    assert net._cache.fast                        # the compiled shortcut, as for nd arrays
    x.attach_grad()
    with autograd.record():
        out = net(x)
        loss = (out * out).sum()
    loss.backward()
    assert type(out) is np.ndarray and type(loss) is np.ndarray
    assert onp.allclose(out.asnumpy(), expected.asnumpy(), atol=1e-6)
    assert onp.abs(x.grad.asnumpy()).sum() > 0


def test_an_lstm_called_with_np_arrays_returns_np_arrays_hybridized_or_not():
    from straightdope.gluon import rnn
    with mx.name.NameManager():        # its own name counts: other tests expect 'lstm0_'
        layer = rnn.LSTM(4, input_size=3)
    layer.initialize()
    x = np.ones((5, 2, 3))
    imperative = layer(x)
    layer.hybridize()
    hybridized = layer(x)                # its loop is a foreach node over np Symbols
    assert type(imperative) is np.ndarray and type(hybridized) is np.ndarray
    assert onp.allclose(imperative.asnumpy(), hybridized.asnumpy(), atol=1e-6)


# ---------------------------------------------------- dtype promotion (issue 28, item 5)
class _Idioms(gluon.HybridBlock):
    """The accuracy idiom and friends, written MXNet 2.0 style."""
    def forward(self, x, y):
        return ((x > 1.5).sum(), (x == y).mean(), np.sum(x > 1.5), np.mean(x), x / 2,
                x * 0.5, 2 / x, x.sum())


@pytest.mark.parametrize("flags", [None, {"executor": "numpy"}, {"compile": "sync"}])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
def test_np_follows_numpy_dtype_promotion_imperatively_and_hybridized(flags, dtype):
    net = _Idioms()
    if flags is not None:
        net.hybridize(**flags)
    x = np.array([1, 2, 100], dtype=dtype)
    y = np.array([1, 0, 100], dtype=dtype)
    count, accuracy, count2, mean, half, half2, inverse, total = net(x, y)
    floating = "float32"          # MXNet 2.0's default float (NumPy: float64 for ints)
    assert (count.dtype, count.item()) == (onp.dtype("int64"), 2)          # not True
    assert count2.dtype == onp.int64 and count2.item() == 2
    assert accuracy.dtype == onp.float32 and accuracy.item() == pytest.approx(2 / 3)
    assert mean.dtype == (dtype if dtype == "float32" else floating)
    assert mean.item() == pytest.approx(103 / 3)
    for value in (half, half2):
        assert value.dtype == floating and value.asnumpy().tolist() == [0.5, 1.0, 50.0]
    assert inverse.dtype == floating
    np_total = onp.array([1, 2, 100], dtype=dtype).sum()
    assert total.dtype == np_total.dtype and total.item() == 103     # int8: no overflow


def test_np_mixed_arrays_promote_as_mxnet_2_documents():
    i32, i64 = np.array([1, 2], dtype="int32"), np.array([1, 2], dtype="int64")
    f32, f64 = np.array([1, 2], dtype="float32"), np.array([1, 2], dtype="float64")
    b = np.array([True, False], dtype="bool")
    assert (i32 + i64).dtype == onp.int64
    assert (i32 + f32).dtype == onp.float32               # NumPy: float64; MXNet: the float
    assert (f32 + f64).dtype == onp.float64
    assert (b + 1).dtype == onp.int64 and (i32 + 1).dtype == onp.int32
    assert (i32 / i32).dtype == onp.float32 and (b / b).dtype == onp.float32
    assert np.sum(np.array([100, 100], dtype="int8"), dtype="float64").dtype == onp.float64
