"""MXNet fidelity, the nd / sym / autograd / np / npx side (issue 14): code written for
MXNet runs unchanged and behaves as it does there. Each test names the behaviour."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import nd


def test_an_op_error_can_be_caught_as_mxnet_error_and_as_value_error():
    # (an op with parameters: one without, relu, ignores unknown attributes as MXNet does)
    with pytest.raises(mx.base.MXNetError):
        nd.clip(nd.ones(3), 0, 1, no_such_attribute=1)
    with pytest.raises(ValueError):
        nd.clip(nd.ones(3), 0, 1, no_such_attribute=1)


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


# ------------------------------------------------------------- Symbol executors (MXNet 1.x)

def test_simple_bind_allocates_the_arrays_and_backward_writes_the_gradients():
    x = mx.sym.var("x")
    net = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    exe = net.simple_bind(mx.cpu(), x=(3, 4))
    assert [a.shape for a in exe.arg_arrays] == [(3, 4), (2, 4), (2,)]
    exe.arg_dict["fc_weight"][:] = 1
    out = exe.forward(is_train=True, x=nd.ones((3, 4)))
    assert out[0] is exe.outputs[0] and out[0].asnumpy().tolist() == [[4, 4]] * 3
    exe.backward(nd.ones((3, 2)))
    assert exe.grad_dict["fc_weight"].asnumpy().tolist() == [[3] * 4] * 2
    assert exe.grad_dict["fc_bias"].asnumpy().tolist() == [3, 3]
    exe.forward(is_train=True)
    exe.backward(nd.ones((3, 2)))      # 'write': the second backward overwrites
    assert exe.grad_dict["fc_bias"].asnumpy().tolist() == [3, 3]


def test_bind_uses_the_given_arrays_and_accumulates_with_grad_req_add():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    lhs, rhs = nd.array([1.0, 2.0]), nd.array([3.0, 4.0])
    lhs_grad = nd.zeros(2)
    exe = (a * b).bind(mx.cpu(), args={"b": rhs, "a": lhs}, args_grad={"a": lhs_grad},
                       grad_req="add")
    exe.forward(is_train=True)
    exe.backward(nd.ones(2))
    exe.backward(nd.ones(2))
    assert lhs_grad.asnumpy().tolist() == [6, 8]          # rhs, twice
    assert exe.grad_dict["b"] is None
    rhs[:] = 0                                           # the executor reads rhs itself
    assert exe.forward()[0].asnumpy().tolist() == [0, 0]
    with pytest.raises(ValueError, match="1 args given for 2 names"):
        (a * b).bind(mx.cpu(), args=[lhs])


def test_simple_bind_without_enough_shapes_names_the_unknown_arguments():
    net = mx.sym.var("x") + mx.sym.var("y")
    with pytest.raises(mx.base.MXNetError, match=r"\['x', 'y'\]"):
        net.simple_bind(mx.cpu())


def test_executor_reshape_shares_the_memory_of_arrays_that_fit():
    x = mx.sym.var("x")
    exe = mx.sym.FullyConnected(x, num_hidden=4, name="fc").simple_bind(
        mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = 1
    small = exe.reshape(x=(3, 4))
    small.forward()
    assert (small.outputs[0].asnumpy() == 4).all()
    assert (exe.outputs[0].asnumpy()[:3] == 4).all()
    with pytest.raises(mx.base.MXNetError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_dict["x"][:] = 0
    assert (exe.arg_dict["x"].asnumpy() == 1).all()
    assert big.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]


def test_an_op_called_without_its_data_is_composed_later_by_calling_the_symbol():
    head = mx.sym.FullyConnected(name="head", num_hidden=3)
    assert head.list_arguments() == ["head_data", "head_weight", "head_bias"]
    body = mx.sym.relu(mx.sym.var("x"))
    net = head(head_data=body)
    assert net.list_arguments() == ["x", "head_weight", "head_bias"]
    assert net.infer_shape(x=(2, 5))[1] == [(2, 3)]
    with pytest.raises(ValueError, match="not arguments"):
        head(nothing=body)


def test_infer_shape_partial_reports_an_unknown_shape_as_an_empty_tuple_as_mxnet_does():
    out = mx.sym.sin(mx.sym.var("data"))
    assert out.infer_shape_partial() == ([()], [()], [])
    with mx.np_shape(True):
        assert out.infer_shape_partial() == ([None], [None], [])
    assert out.infer_shape() == (None, None, None)


# ---------------------------------------------------------------------- autograd extras

def test_a_custom_function_runs_its_own_backward_on_the_tape():
    class ScaledSquare(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x * 10          # deliberately not 2x: the tape must use this rule

    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = ScaledSquare()(x) + 1
    y.backward()
    assert y.asnumpy().tolist() == [2, 5]
    assert x.grad.asnumpy().tolist() == [10, 20]


def test_a_custom_function_returning_the_wrong_number_of_gradients_says_so():
    class Pair(mx.autograd.Function):
        def forward(self, a, b):
            return a + b

        def backward(self, dy):
            return dy

    a, b = nd.ones(2), nd.ones(2)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = Pair()(a, b)
    with pytest.raises(ValueError, match="1 gradient.*2 input"):
        out.backward()


def test_get_symbol_turns_the_recorded_computation_into_a_graph():
    x, z = nd.ones((1,)), nd.ones((1,))
    x.attach_grad()
    z.attach_grad()
    with mx.autograd.record():
        y = x * x + 2 * z - 1
    graph = mx.autograd.get_symbol(y)
    assert graph.list_arguments() == ["var0", "var1"]
    assert graph.eval(var0=nd.array([3.0]), var1=nd.array([1.0]))[0].asnumpy().tolist() == [10]


def test_star_import_of_autograd_gives_mxnets_names():
    names = {}
    exec("from straightdope.autograd import *", names)
    for name in ("record", "backward", "mark_variables", "Function", "get_symbol", "NDArray"):
        assert name in names


def test_tostype_default_is_a_dense_copy_and_sparse_storage_is_refused():
    x = nd.ones((2, 2))
    y = x.tostype("default")
    assert y is not x and y.asnumpy().tolist() == x.asnumpy().tolist()
    with pytest.raises(mx.base.MXNetError, match="densely"):
        x.tostype("csr")


def test_optimizer_update_ops_return_the_new_weight_and_update_their_states_in_place():
    weight, grad, mom = nd.ones(3), nd.array([1.0, -2.0, 3.0]), nd.zeros(3)
    nd.sgd_mom_update(weight, grad, mom, lr=0.1, momentum=0.9, out=weight)
    np.testing.assert_allclose(mom.asnumpy(), [-0.1, 0.2, -0.3], rtol=1e-6)
    np.testing.assert_allclose(weight.asnumpy(), [0.9, 1.2, 0.7], rtol=1e-6)
    kept = grad.asnumpy()
    new = nd.signsgd_update(weight, grad, lr=0.5)              # no out=: weight unchanged
    np.testing.assert_allclose(new.asnumpy(), [0.4, 1.7, 0.2], rtol=1e-6)
    np.testing.assert_allclose(weight.asnumpy(), [0.9, 1.2, 0.7], rtol=1e-6)
    assert (grad.asnumpy() == kept).all()
    mean, var = nd.zeros(3), nd.zeros(3)
    nd.adam_update(weight, grad, mean, var, lr=0.01, clip_gradient=1.0, out=weight)
    np.testing.assert_allclose(mean.asnumpy(), [0.1, -0.1, 0.1], rtol=1e-6)
    assert mx.sym.adam_update(*[mx.sym.var(n) for n in "wgmv"], lr=0.1) \
        .list_auxiliary_states() == ["m", "v"]


def test_take_gathers_slices_and_its_gradient_adds_up_repeated_indices():
    table = nd.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    table.attach_grad()
    with mx.autograd.record():
        rows = table.take(nd.array([2, 0, 2, 9]))           # 9 is clipped to 2
    assert rows.asnumpy().tolist() == [[5, 6], [1, 2], [5, 6], [5, 6]]
    rows.backward()
    assert table.grad.asnumpy().tolist() == [[1, 1], [0, 0], [3, 3]]
    cols = nd.take(table, nd.array([[1], [-1]]), axis=1, mode="wrap")
    assert cols.shape == (3, 2, 1) and cols.asnumpy()[:, :, 0].tolist() == [[2, 2], [4, 4],
                                                                              [6, 6]]


def test_batch_take_picks_one_entry_per_row_in_nd_and_in_a_bound_symbol():
    scores = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert nd.batch_take(nd.array(scores), nd.array([1, 2, 3])).asnumpy().tolist() == [1, 6, 11]
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    exe = mx.sym.batch_take(x, idx).simple_bind(mx.cpu(), x=(3, 4), idx=(3,), grad_req="null",
                                                type_dict={"idx": np.int32})
    assert exe.arg_dict["idx"].dtype == np.int32
    exe.forward(x=nd.array(scores), idx=nd.array([1, 2, 3]))
    assert exe.outputs[0].asnumpy().tolist() == [1, 6, 11]


def test_batch_take_has_no_gradient_as_in_mxnet_so_binding_for_one_is_refused():
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    taken = mx.sym.batch_take(x, idx)
    with pytest.raises(mx.base.MXNetError, match="batch_take has no gradient"):
        taken.simple_bind(mx.cpu(), x=(3, 4), idx=(3,), type_dict={"idx": np.int32})
    # behind stop_gradient nothing needs its gradient: binding and backward work
    exe = mx.sym.stop_gradient(taken).simple_bind(mx.cpu(), x=(3, 4), idx=(3,))
    exe.forward(is_train=True)
    exe.backward(nd.ones(3))
    assert exe.grad_dict["x"].asnumpy().tolist() == [[0] * 4] * 3
    scores = nd.ones((2, 3))
    scores.attach_grad()
    with mx.autograd.record():
        picked = nd.batch_take(scores, nd.array([0, 2]))
    with pytest.raises(mx.base.MXNetError, match="batch_take has no gradient"):
        picked.backward()


def test_symbols_have_the_same_op_methods_as_ndarrays():
    x = mx.sym.var("x")
    out = x.take(mx.sym.var("i")).squeeze(axis=0).floor().astype("float64")
    assert out.list_arguments() == ["x", "i"]
    result = out.eval(x=nd.array([[1.5, 2.5]]), i=nd.array([0]))[0]
    assert result.dtype == np.float64 and result.asnumpy().tolist() == [1, 2]


def test_infer_type_follows_casts_and_gives_weights_their_datas_dtype():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.Cast(data, dtype="float32"), num_hidden=4, name="fc")
    args, outs, aux = net.infer_type(data=np.float16)
    assert args == [np.float16, np.float32, np.float32] and outs == [np.float32]
    assert net.infer_type_partial()[0] == [None, np.float32, np.float32]
    assert net.infer_type() == (None, None, None)
    half = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    assert half.infer_type(np.float16)[0] == [np.float16] * 3
    embedded = mx.sym.Embedding(mx.sym.var("ids"), input_dim=5, output_dim=2, name="emb")
    assert embedded.infer_type(ids=np.int32, emb_weight=np.float64)[1] == [np.float64]


def test_a_symbol_pickles_as_its_json():
    import pickle
    net = mx.sym.FullyConnected(mx.sym.relu(mx.sym.var("x")), num_hidden=3, name="fc")
    state = net.__getstate__()
    assert set(state) == {"json"} and '"FullyConnected"' in state["json"]
    copy = pickle.loads(pickle.dumps(net))
    assert copy.tojson() == net.tojson() and copy.list_arguments() == net.list_arguments()


def test_asscalar_keeps_the_arrays_dtype_and_item_gives_a_python_number():
    value = nd.array([2.5]).asscalar()
    assert type(value) is np.float32 and value == 2.5
    assert type(nd.array([3], dtype="int32").asscalar()) is np.int32
    assert type(nd.array([2.5]).item()) is float


def test_infer_shape_accepts_unknown_dimensions_and_reports_the_ones_it_cannot_infer():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert mx.sym.dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape(True):
        assert mx.sym.dot(x, y).infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
    assert mx.sym.dot(x, y).infer_shape(x=(0, 3, 4), y=(4, 5)) == (None, None, None)
    # inner dims that only match once known: nothing can be said about the output
    assert mx.sym.batch_dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [()]
    weight = mx.sym.var("w", shape=(8, 0))                  # MXNet's deferred input size
    net = mx.sym.FullyConnected(mx.sym.var("data"), weight, num_hidden=8)
    assert net.infer_shape(data=(2, 5))[0] == [(2, 5), (8, 5), (8,)]


def test_elemwise_ops_infer_one_inputs_shape_from_the_other():
    a = mx.sym.var("a", shape=(2, 3))
    total = mx.sym.elemwise_add(a, mx.sym.var("b"))
    assert total.infer_shape() == ([(2, 3), (2, 3)], [(2, 3)], [])
    with pytest.raises(mx.base.MXNetError, match="equal shapes"):
        total.infer_shape(a=(2, 3), b=(1, 3))


def test_shape_inference_repeats_until_late_learnt_parameter_shapes_reach_earlier_nodes():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, no_bias=True, name="fc")
    net = mx.sym.sum(mx.sym.abs(fc.get_internals()["fc_weight"])) + mx.sym.sum(fc)
    args, outs, _ = net.infer_shape(data=(5, 13))
    assert args == [(1, 13), (5, 13)] and outs == [()]         # sum of all: a 0-d value


# ------------------------------------------------------------ nd conveniences of MXNet 1.x

def test_older_nd_names_crop_concatenate_and_choose_element_0index_work():
    x = nd.ones((2, 3, 4))
    assert nd.crop(x, begin=(0, 0, 0), end=(2, 1, 3)).shape == (2, 1, 3)
    joined = nd.concatenate([nd.ones((2, 1)), nd.zeros((2, 2))], axis=1)
    assert joined.asnumpy().tolist() == [[1, 0, 0], [1, 0, 0]]
    table = nd.array([[1.0, 2.0], [3.0, 4.0]])
    assert nd.choose_element_0index(table, nd.array([1, 0])).asnumpy().tolist() == [2, 3]
    filled = nd.fill_element_0index(table, nd.array([7.0, 8.0]), nd.array([0, 1]))
    assert filled.asnumpy().tolist() == [[7, 2], [3, 8]]
    assert table.asnumpy().tolist() == [[1, 2], [3, 4]]
    target = nd.zeros((2, 3))
    assert nd.onehot_encode(nd.array([2, 0]), out=target) is target
    assert target.asnumpy().tolist() == [[0, 0, 1], [1, 0, 0]]


def test_moveaxis_linspace_and_from_numpy_follow_numpy():
    x = nd.zeros((5, 6, 7))
    assert nd.moveaxis(x, 0, -1).shape == (6, 7, 5) and nd.moveaxis(x, 2, 0).shape == (7, 5, 6)
    with pytest.raises(IndexError, match="out of range"):
        nd.moveaxis(x, 3, 0)
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    assert nd.linspace(0, 1, 4, endpoint=False).asnumpy().tolist() == [0, 0.25, 0.5, 0.75]
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    shared = nd.from_numpy(source)
    shared[0, 0] = 100
    assert source[0, 0] == 100
    assert nd.from_numpy(source, zero_copy=False).asnumpy() is not source
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(source.T)


def test_contrib_value_tests_give_ones_and_zeros():
    x = nd.array([1.0, np.inf, -np.inf, np.nan])
    assert nd.contrib.isinf(x).asnumpy().tolist() == [0, 1, 1, 0]
    assert nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0, 0]
    assert nd.contrib.isnan(x).asnumpy().tolist() == [0, 0, 0, 1]


def test_symbol_json_says_is_np_shape_only_under_numpy_shape_semantics():
    import json
    assert "is_np_shape" not in json.loads(mx.sym.var("a").tojson())["attrs"]
    with mx.np_shape(True):
        assert json.loads(mx.sym.var("a").tojson())["attrs"]["is_np_shape"] == ["int", 1]
    assert mx.base.mx_real_t is np.float32
    assert mx.Context("cpu_shared", 0) == mx.Context("cpu_shared", 0)


def test_np_has_numpys_dtype_and_constant_names_and_arrays_convert_to_themselves():
    assert mx.np.bool is np.bool_ and mx.np.int16 is np.int16 and mx.np.pi == np.pi
    assert mx.np.identity(n=3).asnumpy().tolist() == np.identity(3).tolist()
    x = nd.ones((2,))
    assert x.as_nd_ndarray() is x and type(x.as_np_ndarray()) is mx.np.ndarray
    assert x.copy(order="C") is not x
    s = mx.sym.var("s")
    assert s.as_nd_ndarray() is s


# ------------------------------------- indexing views, in-place writes and files (nd-core)
def test_basic_indexing_gives_a_view_that_writes_through_to_the_array():
    x = nd.arange(12).reshape((3, 4))
    row = x[1]
    row[:] = -1
    x[2][0] = 50                        # chained indexing writes into x too
    block = x[0:2]
    block += 100
    assert x.asnumpy().tolist() == [[100, 101, 102, 103], [99, 99, 99, 99],
                                    [50, 9, 10, 11]]
    squeezed = nd.ones((1, 3, 1)).squeeze(inplace=True)
    assert squeezed.shape == (3,)


def test_indexing_that_picks_scattered_elements_gives_a_copy_as_in_mxnet():
    x = nd.arange(12).reshape((3, 4))
    column, strided, picked = x[:, 1], x[::2], x[[0, 2]]
    for copy in (column, strided, picked):
        copy[:] = -7
    assert (x.asnumpy() >= 0).all()
    contiguous = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    for key in [(slice(1, 3), slice(None)), (slice(None), slice(1, 2)), (slice(None, None, -1),
                slice(None)), (slice(2, 3), slice(1, 3)), (slice(0, 0), slice(None, None, 2))]:
        assert contiguous(key, (3, 4)) == np.zeros((3, 4))[key].flags.c_contiguous, key


def test_a_view_of_a_recorded_array_backpropagates_and_writing_into_it_is_refused():
    x = nd.arange(6).reshape((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        first = y[0]
        loss = first.sum() + y[None, 1, ..., 2].sum() + y[[1, 1], [0, 0]].sum()
        with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
            first[:] = 0
    loss.backward()
    assert x.grad.asnumpy().tolist() == [[2, 2, 2], [4, 0, 2]]


def test_assigning_a_value_with_as_many_elements_in_another_shape_fills_the_selection():
    b = nd.zeros(3)
    b[0] = np.array([2.5], dtype=np.float32)
    b[1] = [4]
    m = nd.zeros((2, 3))
    m[0:2] = np.ones((1, 1, 1, 3))          # extra leading axes of length 1 broadcast
    assert b.asnumpy().tolist() == [2.5, 4, 0] and m.asnumpy().sum() == 6
    with pytest.raises(ValueError, match="cannot assign a value of shape"):
        b[0] = [1, 2]


def test_slice_assign_ops_write_a_region_and_send_gradients_to_both_inputs():
    x = nd.ones((2, 3, 4))
    nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3), out=x)
    assert x.asnumpy().sum() == 24 - 6
    y = nd._internal._slice_assign_scalar(nd.ones((2, 2)), scalar=5, begin=(0,), end=(1,))
    assert y.asnumpy().tolist() == [[5, 5], [1, 1]]
    base, patch = nd.ones((3,)), nd.ones((1,))
    base.attach_grad(); patch.attach_grad()
    with mx.autograd.record():
        out = nd._internal._slice_assign(base, patch * 3, begin=(1,), end=(2,))
    out.backward(nd.array([1, 2, 4]))
    assert base.grad.asnumpy().tolist() == [1, 0, 4] and patch.grad.asnumpy().tolist() == [6]


def test_broadcast_like_can_take_the_length_of_chosen_axes_only():
    lhs, rhs = nd.ones((1, 2, 1, 3)), nd.ones((5, 6, 7, 8))
    assert nd.broadcast_like(lhs, rhs, lhs_axes=(0, 2), rhs_axes=(1, 3)).shape == (6, 2, 8, 3)
    assert nd.broadcast_like(nd.ones((2, 1)), nd.ones((9, 1)), lhs_axes=(1,),
                             rhs_axes=(-2,)).shape == (2, 9)
    with pytest.raises(mx.base.MXNetError, match="must name as many axes"):
        nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


def test_moveaxis_moves_several_axes_and_a_bad_axis_is_a_value_and_index_error():
    x = nd.zeros((4, 1, 2, 3))
    assert nd.moveaxis(x, [0, 1], [2, 3]).shape == np.moveaxis(x.asnumpy(), [0, 1], [2, 3]).shape
    assert nd.moveaxis(x, [3, 0], [1, 0]).shape == (4, 3, 1, 2)
    for source, destination in [(4, 0), ([0, 0], [0, 1]), ([0, 1], [0])]:
        with pytest.raises(ValueError):
            nd.moveaxis(x, source, destination)
    with pytest.raises(IndexError, match="out of range"):
        nd.moveaxis(x, -5, 0)


def test_from_numpy_takes_the_array_over_so_numpy_can_no_longer_write_it():
    source = np.zeros((2, 2), dtype=np.float32)
    shared = nd.from_numpy(source)
    with pytest.raises(ValueError):
        source[0, 0] = 1
    again = nd.from_numpy(source)          # a second take-over shares the same memory
    again[1, 1] = 7
    assert source[1, 1] == 7 and shared.asnumpy()[1, 1] == 7
    with pytest.raises(ValueError, match="read-only"):
        nd.from_numpy(np.frombuffer(b"\0" * 8, dtype=np.float32))


def test_fresh_grad_says_whether_backward_wrote_the_gradient_since_it_was_cleared():
    x, y = nd.ones((2,)), nd.ones((2,))
    x.attach_grad(); y.attach_grad()
    assert not x._fresh_grad
    with mx.autograd.record():
        (x * 2 + y).backward()
    assert x._fresh_grad and y._fresh_grad
    x._fresh_grad = y._fresh_grad = False
    with mx.autograd.record():
        (x.detach() + y).backward()
    assert y._fresh_grad and not x._fresh_grad


def test_cached_op_runs_a_symbol_on_arrays_in_list_inputs_order_and_records_its_gradient():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc") * 2
    op = nd.CachedOp(net, flags=[("static_alloc", "true")])
    assert op.input_names == ["data", "fc_weight", "fc_bias"]
    x, w, b = nd.ones((1, 3)), nd.ones((2, 3)), nd.zeros((2,))
    assert op(x, w, b).asnumpy().tolist() == [[6, 6]]
    out = nd.zeros((1, 2))
    assert op(x, w, b, out=out) is out and out.asnumpy().tolist() == [[6, 6]]
    w.attach_grad()
    with mx.autograd.record():
        y = op(x, w, b)
    y.backward()
    assert w.grad.asnumpy().tolist() == [[2, 2, 2], [2, 2, 2]]
    with pytest.raises(ValueError, match="takes 3 arrays"):
        op(x, w)


def test_load_frombuffer_reads_the_bytes_of_a_saved_file_and_refuses_truncated_ones(tmp_path):
    path = str(tmp_path / "arrays")
    nd.save(path, {"a": nd.arange(4), "b": nd.ones((2, 2))})
    data = open(path, "rb").read()
    loaded = nd.load_frombuffer(data)
    assert loaded["a"].asnumpy().tolist() == [0, 1, 2, 3] and loaded["b"].shape == (2, 2)
    with pytest.raises(mx.base.MXNetError):
        nd.load_frombuffer(data[:-10])


def test_a_file_of_empty_or_0d_arrays_loads_only_under_the_shape_semantics_it_was_saved_in(
        tmp_path):
    path = str(tmp_path / "arrays")
    with mx.np_shape(True):
        nd.save(path, [nd.zeros((2, 0)), nd.array(np.float32(3))])
        assert [a.shape for a in nd.load(path)] == [(2, 0), ()]
    with pytest.raises(mx.base.MXNetError, match="saved with NumPy shape semantics"):
        nd.load(path)
    nd.save(path, [nd.zeros((0, 4))])
    with mx.np_shape(True), pytest.raises(mx.base.MXNetError, match="without NumPy shape"):
        nd.load(path)
    nd.save(path, [nd.ones((2,))])          # nothing ambiguous: loads under either
    with mx.np_shape(True):
        assert nd.load(path)[0].shape == (2,)


def test_fluent_methods_match_the_nd_functions_of_the_same_name():
    x = nd.array(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    for name, kwargs in [("degrees", {}), ("rcbrt", {}), ("softmin", {}), ("nansum", {"axis": 1}),
                         ("tile", {"reps": (2, 1)}), ("repeat", {"repeats": 2}),
                         ("sort", {"is_ascend": False}), ("argsort", {}), ("topk", {"k": 2}),
                         ("swapaxes", {"dim1": 0, "dim2": 1}), ("argmax_channel", {}),
                         ("shape_array", {}), ("flip", {"axis": 1}),
                         ("slice_like", {"shape_like": nd.zeros((1, 2))})]:
        method, function = getattr(x, name)(**kwargs), getattr(nd, name)(x, **kwargs)
        assert method.asnumpy().tolist() == function.asnumpy().tolist(), name
    assert x.transpose(axes=(1, 0)).shape == (3, 2) and x.reshape_like(rhs=nd.ones(6)).shape == (6,)
    parts = x.split_v2((1,), axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 2)]
    assert nd.topk(x, k=1, ret_typ="value").asnumpy().tolist() == [[3], [6]]
    assert nd.pad(nd.ones((1, 1, 1, 2)), mode="edge", pad_width=(0, 0, 0, 0, 1, 0, 0, 1)).shape \
        == (1, 1, 2, 3)


def test_an_mxnet_file_in_the_oldest_layout_without_array_magic_loads(tmp_path):
    import struct
    values = np.arange(4, dtype=np.float32)
    array = struct.pack("<II", 1, 4) + struct.pack("<iii", 1, 0, 0) + values.tobytes()
    path = tmp_path / "legacy.v0"            # ndim 1, dims as u32, cpu(0), float32, values
    path.write_bytes(struct.pack("<QQQ", 0x112, 0, 1) + array + struct.pack("<Q", 0))
    loaded = nd.load(str(path))
    assert len(loaded) == 1 and loaded[0].asnumpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(mx.base.MXNetError, match="truncated|bytes"):
        nd.load_frombuffer(path.read_bytes()[:-12])


def test_grad_with_create_graph_gives_a_gradient_that_can_be_differentiated_again():
    x = nd.array([0.5, 2.0], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = x ** 3 + nd.sin(x)
    dx, = mx.autograd.grad(y, [x], create_graph=True)
    values = x.asnumpy()
    np.testing.assert_allclose(dx.asnumpy(), 3 * values ** 2 + np.cos(values))
    dx.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * values - np.sin(values))


def test_a_bool_array_index_is_a_mask_as_in_numpy_with_its_gradient():
    data = np.arange(9, dtype=np.int32).reshape(3, 3)
    a = mx.np.array(data, dtype=np.int32)
    assert a[mx.np.array(True, dtype=np.bool_)].shape == data[np.True_].shape == (1, 3, 3)
    assert a[mx.np.array(False, dtype=np.bool_)].shape == (0, 3, 3)
    rows = np.array([True, False, True])
    assert a[mx.np.array(rows, dtype=np.bool_)].asnumpy().tolist() == data[rows].tolist()
    assert a[1, mx.np.array(rows, dtype=np.bool_)].asnumpy().tolist() == data[1, rows].tolist()
    assert a[mx.nd.array([2, 0])].asnumpy().tolist() == data[[2, 0]].tolist()   # indices
    x = mx.nd.array(np.random.default_rng(1).random((3, 4)))
    x.attach_grad()
    small = x.asnumpy() < 0.5
    with mx.autograd.record():
        picked = x[mx.nd.array(small, dtype=np.bool_)]
    picked.backward()
    assert np.array_equal(picked.asnumpy(), x.asnumpy()[small])
    assert np.array_equal(x.grad.asnumpy(), small.astype(np.float32))
    b = mx.nd.zeros((3,))
    b[mx.nd.array(rows, dtype=np.bool_)] = 5
    assert b.asnumpy().tolist() == [5, 0, 5]


def test_float32_exp_and_log_are_rounded_correctly_as_mxnets_c_library_calls_are():
    x = nd.ones((1,))
    assert nd.exp(x).asscalar() == np.float32(np.e)           # 2.7182817, not 2.7182820
    values = np.random.default_rng(3).uniform(0.1, 5, 1000).astype(np.float32)
    exact_exp = np.exp(values.astype(np.float64)).astype(np.float32)
    exact_log = np.log(values.astype(np.float64)).astype(np.float32)
    assert (nd.exp(nd.array(values)).asnumpy() == exact_exp).all()
    assert (nd.log(nd.array(values)).asnumpy() == exact_log).all()


def test_the_gradient_of_exp_plus_x_at_one_is_e_plus_one_in_float32():
    x = nd.ones((1,))
    x.attach_grad()
    with mx.autograd.record():
        z = nd.elemwise_add(nd.exp(x), x)
    dx, = mx.autograd.grad(z, [x], create_graph=True)
    assert dx.asscalar() == np.float32(np.e) + np.float32(1)
    dx.backward()
    assert x.grad.asscalar() == np.float32(np.e)


@pytest.mark.parametrize("executor", ["numba", "numpy"])
def test_where_with_a_one_d_condition_picks_whole_rows_as_in_mxnet(executor):
    cond = nd.array([1, 0, 1])
    x = nd.arange(6).reshape((3, 2))
    y = -x
    expected = np.array([[0, 1], [-2, -3], [4, 5]], dtype=np.float32)
    np.testing.assert_array_equal(nd.where(cond, x, y).asnumpy(), expected)
    # the gradient goes to x on the picked rows and to y on the others
    x.attach_grad()
    with mx.autograd.record():
        out = nd.where(cond, x, y)
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[1, 1], [0, 0], [1, 1]])
    # hybridized, the fused loop must not broadcast (3,) against the last axis
    net = mx.gluon.nn.HybridLambda(lambda F, c, a, b: F.where(c, a, b) * 2)
    net.hybridize(executor=executor, compile="sync")
    np.testing.assert_array_equal(net(cond, x, y).asnumpy(), 2 * expected)


def test_where_refuses_a_condition_that_is_neither_x_s_shape_nor_its_rows():
    x = nd.ones((3, 2))
    with pytest.raises(mx.base.MXNetError, match=r"\(3,\) to pick whole rows"):
        nd.where(nd.array([1, 0]), x, x)
    with pytest.raises(mx.base.MXNetError, match="where"):
        (mx.sym.where(mx.sym.var("c"), mx.sym.var("x"), mx.sym.var("y"))
         .infer_shape(c=(2,), x=(3, 2), y=(3, 2)))


def test_reset_arrays_zeroes_every_array_in_place():
    # MXNet's reset_arrays: in place, num_arrays must count the arrays, no outputs
    arrays = [mx.nd.random.uniform(shape=s, dtype=d) + 1
              for s, d in [((2, 3), "float32"), ((4,), "float16"), ((1, 2, 2), "float64")]]
    held = [x._data for x in arrays]          # the buffers, to see the writes are in place
    assert mx.nd.reset_arrays(*arrays, num_arrays=3) == []
    for x, buf in zip(arrays, held):
        assert x._data is buf and not np.any(buf) and x.dtype == buf.dtype
    with pytest.raises(mx.base.MXNetError, match="num_arrays=2 but 3"):
        mx.nd.reset_arrays(*arrays, num_arrays=2)


def test_nd_dot_transposes_and_gradients_as_mxnet():
    """dot of N-d arrays (MXNet's test_dot): transpose_a moves lhs's first axis to the
    end, transpose_b rhs's last axis to the front; the gradients are the matrix rule on
    the flattened operands, reshaped back."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(4, 2, 3)), rng.normal(size=(5, 6, 4))
    x, y = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    head = rng.normal(size=(2, 3, 5, 6))
    with mx.autograd.record():
        out = mx.nd.dot(x, y, transpose_a=True, transpose_b=True)
    out.backward(mx.nd.array(head, dtype="float64"))
    a2, b2 = a.reshape(4, 6), b.reshape(30, 4)           # the matrices MXNet multiplies
    np.testing.assert_allclose(out.asnumpy(), (a2.T @ b2.T).reshape(2, 3, 5, 6))
    h2 = head.reshape(6, 30)
    np.testing.assert_allclose(x.grad.asnumpy(), (b2.T @ h2.T).reshape(4, 2, 3))
    np.testing.assert_allclose(y.grad.asnumpy(), (h2.T @ a2.T).reshape(5, 6, 4))
