"""MXNet fidelity, the nd / sym / autograd / np / npx side (issue 14): code written for
MXNet runs unchanged and behaves as it does there. Each test names the behaviour."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import nd


def test_an_op_error_can_be_caught_as_mxnet_error_and_as_value_error():
    with pytest.raises(mx.base.MXNetError):
        nd.relu(nd.ones(3), no_such_attribute=1)
    with pytest.raises(ValueError):
        nd.relu(nd.ones(3), no_such_attribute=1)


def test_runtime_features_is_one_shared_mapping_of_mxnet_feature_names():
    features = mx.runtime.Features()
    assert features is mx.runtime.Features()
    assert "CUDA" in features and not features.is_enabled("CUDA")
    assert len(features) >= 30
    with pytest.raises(RuntimeError, match="unknown feature"):
        features.is_enabled("WARP_DRIVE")


def test_np_shape_is_a_scope_that_restores_the_previous_setting():
    before = mx.util.is_np_shape()      # another module may have called npx.set_np()
    with mx.np_shape(True):
        assert mx.util.is_np_shape() and mx.is_np_shape()
        with mx.util.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert mx.is_np_shape() == before


def test_op_attributes_can_follow_the_arrays_positionally_in_declaration_order():
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    assert nd.clip(x, 2, 4).asnumpy().tolist() == [[2, 2, 3], [4, 4, 4]]
    assert nd.slice(x, (0, 1), (2, 3)).shape == (2, 2)
    assert nd.sum(x, 1).asnumpy().tolist() == [6, 15]
    assert nd.FullyConnected(x, nd.ones((4, 3)), nd.zeros(4), 4).shape == (2, 4)
    assert mx.sym.clip(mx.sym.var("a"), 0, 1).list_attr() == {"a_min": "0.0", "a_max": "1.0"}


def test_the_same_attribute_given_positionally_and_by_keyword_is_refused():
    with pytest.raises(mx.base.MXNetError, match="given twice"):
        nd.clip(nd.ones(2), 0, a_min=1)
    with pytest.raises(mx.base.MXNetError, match="at most 2 attribute"):
        nd.clip(nd.ones(2), 0, 1, 2)


def test_numpy_integers_are_accepted_in_shapes_and_axes():
    x = nd.ones((2, 6))
    assert x.reshape((np.int64(3), np.int32(4))).shape == (3, 4)
    assert nd.zeros((np.int64(2), 3)).shape == (2, 3)
    assert nd.sum(x, axis=np.int64(1)).shape == (2,)
    assert mx.sym.var("a").reshape((np.int64(-1),)).list_attr()["shape"] == "(-1,)"


def test_creation_functions_fill_the_array_given_as_out():
    target = nd.zeros((2, 2))
    assert nd.ones((2, 2), out=target) is target
    assert target.asnumpy().sum() == 4
    assert nd.full((2, 2), 7, out=target) is target and target.asnumpy()[0, 0] == 7


def test_ndarray_slice_squeeze_and_rounding_methods_match_mxnet():
    x = nd.array([[-2.5, -0.5, 0.5, 1.5, 2.7]])
    assert x.slice((0, 1), (1, 3)).asnumpy().tolist() == [[-0.5, 0.5]]
    assert x.squeeze().shape == (5,) and x.squeeze(axis=0).shape == (5,)
    # MXNet's round goes half away from zero; rint half to even
    assert x.round().asnumpy().tolist() == [[-3, -1, 1, 2, 3]]
    assert x.rint().asnumpy().tolist() == [[-2, -0, 0, 2, 3]]
    assert x.floor().asnumpy().tolist() == [[-3, -1, 0, 1, 2]]
    with pytest.raises(mx.base.MXNetError, match="not of length 1"):
        x.squeeze(axis=1)


def test_inplace_flatten_and_expand_dims_share_memory_with_the_array():
    x = nd.zeros((2, 3, 1))
    flat = x.flatten(inplace=True)
    flat[0, 0] = 5
    assert x.asnumpy()[0, 0, 0] == 5
    wide = x.expand_dims(axis=0, inplace=True)
    assert wide.shape == (1, 2, 3, 1)
    wide[0, 1, 2, 0] = 9
    assert x.asnumpy()[1, 2, 0] == 9
    assert x.flatten().shape == (2, 3)


def test_norm_is_l1_or_l2_over_the_given_axes():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10
    x = nd.array(data)
    np.testing.assert_allclose(nd.norm(x).asnumpy(), np.linalg.norm(data.ravel()), rtol=1e-6)
    np.testing.assert_allclose(x.norm(ord=1, axis=1).asnumpy(), np.abs(data).sum(axis=1))
    np.testing.assert_allclose(nd.norm(x, 2, (1, 2), True).asnumpy(),
                               np.sqrt((data ** 2).sum(axis=(1, 2), keepdims=True)), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="ord must be 1 or 2"):
        nd.norm(x, ord=3)


def test_relu_passes_nan_through_its_gradient():
    x = nd.array([np.nan, -1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.relu(x)
    y.backward()
    grad = x.grad.asnumpy()
    assert np.isnan(grad[0]) and grad[1:].tolist() == [0, 1]


def test_writing_into_an_array_while_recording_a_gradient_raises():
    x = nd.zeros((2, 3))
    y = nd.ones((3,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
            x[0] = y
        with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
            y += 1
    x[0] = y                        # outside record() it is an ordinary write
    assert x.asnumpy()[0].tolist() == [1, 1, 1]


def test_empty_array_is_false_and_a_zero_d_array_formats_like_a_number():
    assert not bool(nd.array([]))
    assert not bool(nd.zeros((1,))) and bool(nd.ones((1,)))
    assert f"{nd.array(3.14159).reshape(()):.2f}" == "3.14"
    with pytest.raises(ValueError):
        bool(nd.ones((2, 2)))


def test_uniform_and_normal_take_array_parameters_and_out():
    mx.random.seed(0)
    assert nd.uniform(0, 1, (2, 3)).shape == (2, 3)
    draws = nd.random.uniform(nd.array([0.0, 10.0]), nd.array([1.0, 11.0]), shape=4)
    assert draws.shape == (2, 4)
    assert (draws.asnumpy()[1] >= 10).all() and (draws.asnumpy()[0] < 1).all()
    target = nd.zeros((3,))
    assert nd.normal(5, 0.01, out=target) is target and abs(target.asnumpy() - 5).max() < 1
