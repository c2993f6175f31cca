"""NDArray, autograd, Symbol, JSON files, np/npx and CachedOp: the core outside single ops."""
import json
import subprocess
import sys

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.base import NotImplementedForSymbol
from straightdope.cached_op import CachedOp
from straightdope.graph import Graph, ReferenceBackend, annotate, differentiate
from straightdope.ops import OpError
from straightdope.symbol import SymbolFileError


# ------------------------------------------------------------------ NDArray
def test_activation_needs_act_type_and_writes_it_to_json():
    """As in MXNet, act_type is required, so every Activation node in a graph's JSON says
    which activation it is (a reader of the file, or another framework, needs it)."""
    with pytest.raises(OpError, match="Activation: attribute 'act_type' is required"):
        nd.Activation(nd.ones((2,)))
    graph = json.loads(sym.Activation(sym.var("data"), act_type="relu").tojson())
    assert graph["nodes"][1]["attrs"] == {"act_type": "relu"}
    reloaded = json.loads(sym.load_json(json.dumps(graph)).tojson())
    assert reloaded["nodes"][1]["attrs"] == {"act_type": "relu"}


def test_newcomer_flow_gradients_and_json():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x * 3 + x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((2, 3), 7.0))
    s = mx.sym.var("x")
    doc = json.loads((s * s * 3 + s).sum().tojson())
    # MXNet 1.x's JSON of the same: a Symbol's * and + are its elemwise ops
    assert [n["op"] for n in doc["nodes"]] == ["null", "elemwise_mul", "_mul_scalar",
                                              "elemwise_add", "sum"]
    assert doc["arg_nodes"] == [0] and doc["heads"] == [[4, 0, 0]]


def test_ndarray_defaults_and_printing():
    a = nd.array([[1, 2, 3], [4, 5, 6]])
    assert a.dtype == np.float32 and a.shape == (2, 3) and a.size == 6 and a.ndim == 2
    assert nd.array(np.arange(3.0)).dtype == np.float32     # float64 NumPy input -> float32
    assert repr(a).endswith("<NDArray 2x3 @cpu(0)>")
    assert "[[1. 2. 3.]" in repr(a)
    assert str(a.context) == "cpu(0)"
    assert a.T.shape == (3, 2) and a.reshape(3, 2).shape == (3, 2)
    assert a.reshape((-1,)).shape == (6,)
    assert a.asnumpy() is not a._data
    assert nd.array([2.5]).asscalar() == 2.5


def test_indexing_slicing_and_their_gradients():
    x = nd.array(np.arange(12).reshape(3, 4))
    assert x[1].shape == (4,)
    assert x[1:3, ::2].asnumpy().tolist() == [[4, 6], [8, 10]]
    assert x[-1, 2].asscalar() == 10
    x.attach_grad()
    with autograd.record():
        y = (x[1:, 1:3] * 2).sum()
    y.backward()
    want = np.zeros((3, 4))
    want[1:, 1:3] = 2
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
    x[0] = 7
    assert x.asnumpy()[0].tolist() == [7, 7, 7, 7]
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]


def test_operators_scalars_and_inplace():
    a = nd.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose((2 / a).asnumpy(), [2, 1, 0.5])
    np.testing.assert_allclose((1 - a).asnumpy(), [0, -1, -3])
    np.testing.assert_allclose((a ** 2).asnumpy(), [1, 4, 16])
    np.testing.assert_allclose((2 ** a).asnumpy(), [2, 4, 16])
    np.testing.assert_allclose((a > 1.5).asnumpy(), [0, 1, 1])
    np.testing.assert_allclose(nd.maximum(a, 2).asnumpy(), [2, 2, 4])
    before = a
    a += 1
    assert a is before and a.asnumpy().tolist() == [2, 3, 5]


def test_shape_errors_name_op_and_shapes():
    with pytest.raises(OpError, match=r"broadcast_add.*\(2, 3\).*\(4,\)"):
        nd.ones((2, 3)) + nd.ones((4,))
    with pytest.raises(OpError, match=r"dot: shapes \(2, 3\) and \(2, 3\) are not aligned"):
        nd.dot(nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(OpError, match="FullyConnected: attribute 'num_hidden' must be an integer"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.ones((4,)), num_hidden="x")
    with pytest.raises(OpError, match=r"FullyConnected: unknown argument\(s\) \[.alpha.\]"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.ones((4,)), num_hidden=4,
                          alpha=3)


def test_parameterless_ops_ignore_unknown_attributes():
    # MXNet: an op without a parameter struct (no attr_parser) keeps and ignores any
    # attribute (test_loss's cosine loss calls broadcast_maximum(..., axis=1)); an op with
    # parameters refuses unknown ones (above)
    a, b = nd.array([[1, 5], [4, 2]]), nd.array([[3, 3], [3, 3]])
    got = nd.broadcast_maximum(a, b, axis=1)
    np.testing.assert_array_equal(got.asnumpy(), np.maximum(a.asnumpy(), b.asnumpy()))
    np.testing.assert_array_equal(nd.relu(nd.array([-1, 2]), alpha=3).asnumpy(), [0, 2])
    s = sym.broadcast_maximum(sym.var("a"), sym.var("b"), axis=1)
    out = s.eval(a=a, b=b)[0]
    np.testing.assert_array_equal(out.asnumpy(), got.asnumpy())


def test_save_and_load_arrays(tmp_path):
    path = tmp_path / "arrays.npz"
    nd.save(str(path), {"w": nd.ones((2, 2)), "b": nd.zeros((3,))})
    loaded = nd.load(str(path))
    assert sorted(loaded) == ["b", "w"] and loaded["w"].shape == (2, 2)
    nd.save(str(path), [nd.ones((1,)), nd.zeros((2,))])
    assert [a.shape for a in nd.load(str(path))] == [(1,), (2,)]
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ValueError, match="truncated"):
        nd.load(str(path))


# ----------------------------------------------------------------- autograd
def test_record_pause_and_modes():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()


def test_paused_ops_are_constants():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        with autograd.pause():
            z = x * 10
        out = (y * z).sum()
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [20.0, 40.0])


def test_grad_req_add_accumulates_and_write_overwrites():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0, 12.0])
    x.attach_grad()
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])


def test_head_grads_and_autograd_grad():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward(nd.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 0.0, 12.0])
    with autograd.record():
        z = (x ** 3).sum()
    (g,) = [autograd.grad(z, [x])[0]]
    np.testing.assert_allclose(g.asnumpy(), 3 * x.asnumpy() ** 2)


def test_backward_without_record_explains():
    x = nd.ones((2,))
    x.attach_grad()
    y = x * 2
    with pytest.raises(ValueError, match="autograd.record"):
        y.backward()


def test_a_second_backward_says_the_graph_was_freed_and_how_to_keep_it():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        z = (x * x).sum()
    z.backward()
    with pytest.raises(ValueError, match=r"already used by an earlier backward\(\).*"
                                         r"retain_graph=True"):
        z.backward()
    with autograd.record():
        z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()                                      # kept: a second pass works
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])


def test_a_branch_that_got_no_gradient_stays_recorded_for_a_later_backward():
    """backward() frees what it went through; a node it reached only through BlockGrad
    got no gradient, so it stays recorded: a second loss through it still differentiates
    (instead of treating it as a constant and leaving x.grad as it was)."""
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        z = (nd.BlockGrad(y) * x).sum()
        w = (y * y).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])      # d/dx of stop(2x) * x
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [8.0, 16.0])     # d/dx of 4x^2


def test_batchnorm_updates_running_stats_only_in_training():
    x = nd.array(np.random.default_rng(0).normal(3.0, 2.0, (64, 2)))
    gamma, beta = nd.ones((2,)), nd.zeros((2,))
    mean, var = nd.zeros((2,)), nd.ones((2,))
    nd.BatchNorm(x, gamma, beta, mean, var)
    assert mean.asnumpy().tolist() == [0, 0]
    with autograd.train_mode():
        nd.BatchNorm(x, gamma, beta, mean, var, momentum=0.5)
    np.testing.assert_allclose(mean.asnumpy(), 0.5 * x.asnumpy().mean(axis=0), rtol=1e-5)


def test_dropout_scales_kept_values_and_routes_gradient_through_mask():
    mx.random.seed(3)
    x = nd.ones((200, 50))
    x.attach_grad()
    with autograd.record():
        y = nd.Dropout(x, p=0.25)
    kept = y.asnumpy() != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y.asnumpy()[kept], 1 / 0.75, rtol=1e-6)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), y.asnumpy())
    np.testing.assert_array_equal(nd.Dropout(x, p=0.25).asnumpy(), x.asnumpy())  # inference


# ------------------------------------------------------------------- Symbol
def test_symbol_api_and_auto_named_parameters():
    data = sym.var("data")
    fc = sym.FullyConnected(data, num_hidden=4, name="fc1")
    act = sym.Activation(fc, act_type="relu", name="relu1")
    assert act.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert act.list_outputs() == ["relu1_output"]
    assert act.name == "relu1" and repr(act) == "<Symbol relu1>"
    arg, out, aux = act.infer_shape(data=(5, 3))
    assert arg == [(5, 3), (4, 3), (4,)] and out == [(5, 4)] and aux == []
    internals = act.get_internals()
    assert internals.list_outputs() == ["data", "fc1_weight", "fc1_bias", "fc1_output",
                                        "relu1_output"]
    assert internals["fc1_output"].name == "fc1"
    assert act.get_children().list_outputs() == ["fc1_output"]
    assert act.infer_shape() == (None, None, None)


def test_symbol_aux_states_and_multi_output():
    x = sym.var("x")
    bn = sym.BatchNorm(x, name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    parts = sym.split(x, num_outputs=3, axis=1, name="sp")
    assert len(parts) == 3 and parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    arg, out, aux = parts.infer_shape(x=(2, 6))
    assert out == [(2, 2)] * 3


def test_symbol_value_operations_explain_themselves():
    x = sym.var("data")
    with pytest.raises(NotImplementedForSymbol, match=r"(?s)Python bool.*F\.where"):
        if x > 0:
            pass
    with pytest.raises(NotImplementedForSymbol, match=r"(?s)asnumpy.*without hybridize"):
        x.asnumpy()
    with pytest.raises(NotImplementedForSymbol, match="shape"):
        x.shape
    with pytest.raises(NotImplementedForSymbol, match="Assigning"):
        x[0] = 1
    with pytest.raises(NotImplementedForSymbol, match="Python number"):
        float(x)
    assert isinstance(NotImplementedForSymbol("a", "b", "c"), TypeError)


def test_symbol_eval_and_save_load(tmp_path):
    x, y = sym.var("x"), sym.var("y")
    z = sym.relu(x * y - 1)
    out = z.eval(x=nd.array([1.0, 2.0]), y=nd.array([3.0, 0.25]))
    np.testing.assert_allclose(out[0].asnumpy(), [2.0, 0.0])
    path = tmp_path / "net-symbol.json"
    z.save(str(path))
    again = sym.load(str(path))
    assert again.tojson() == z.tojson()


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ('{"nodes": 3, "heads": []}', "'nodes' and 'heads'"),
    ('{"nodes": [{"op": "Nope", "name": "n", "inputs": []}], "heads": [[0, 0, 0]]}',
     "unknown operator 'Nope'"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "relu", "name": "r", '
     '"inputs": [[5, 0, 0]]}], "heads": [[1, 0, 0]]}', "refers to node 5"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "FullyConnected", '
     '"name": "fc", "attrs": {"num_hidden": "__import__(\'os\')"}, "inputs": [[0, 0, 0]]}],'
     ' "heads": [[1, 0, 0]]}', "num_hidden' must be an integer"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[3, 0, 0]]}',
     "points outside"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "relu", "name": "r", '
     '"inputs": [[0, 0, 0], [0, 0, 0]]}], "heads": [[1, 0, 0]]}', "takes 1 inputs"),
])
def test_bad_symbol_json_gives_clear_error(text, message):
    with pytest.raises(SymbolFileError, match=message):
        sym.load_json(text)


def test_truncated_symbol_file(tmp_path):
    z = sym.relu(sym.var("x"))
    path = tmp_path / "t-symbol.json"
    path.write_text(z.tojson()[:50])
    with pytest.raises(SymbolFileError, match=str(path.name)):
        sym.load(str(path))


# -------------------------------------------------------------- np and npx
def test_np_dispatches_on_argument_type():
    from straightdope import np as mnp, npx
    npx.set_np()
    a = mnp.random.uniform(-1, 1, (4, 5))
    w = mnp.ones((5, 3))
    assert mnp.dot(a, w).shape == (4, 3)
    traced = mnp.dot(sym.var("a"), sym.var("w"))
    assert isinstance(traced, sym.Symbol)
    assert npx.relu(a).shape == (4, 5)
    # nd-style code keeps working after set_np(), unlike MXNet
    assert nd.relu(nd.ones((2,)) - 2).asnumpy().tolist() == [0, 0]
    npx.reset_np()


# ----------------------------------------------------------------- CachedOp
def mlp_symbol():
    data = sym.var("data")
    h = sym.Activation(sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu")
    h = sym.BatchNorm(h, fix_gamma=False, name="bn")
    return sym.FullyConnected(h, num_hidden=3, name="fc2")


def mlp_params(rng, dtype="float64"):
    shapes = {"fc1_weight": (8, 5), "fc1_bias": (8,), "bn_gamma": (8,), "bn_beta": (8,),
              "bn_moving_mean": (8,), "bn_moving_var": (8,), "fc2_weight": (3, 8),
              "fc2_bias": (3,)}
    params = {k: nd.array(rng.uniform(0.5, 1.5, s), dtype=dtype) for k, s in shapes.items()}
    for k, p in params.items():
        if "moving" not in k:
            p.attach_grad()
    return params


def imperative_mlp(x, p):
    h = nd.relu(nd.FullyConnected(x, p["fc1_weight"], p["fc1_bias"], num_hidden=8))
    h = nd.BatchNorm(h, p["bn_gamma"], p["bn_beta"], p["bn_moving_mean"], p["bn_moving_var"],
                     fix_gamma=False)
    return nd.FullyConnected(h, p["fc2_weight"], p["fc2_bias"], num_hidden=3)


def test_cached_op_matches_imperative_forward_backward_and_running_stats():
    rng = np.random.default_rng(0)
    x = nd.array(rng.normal(size=(6, 5)), dtype="float64")
    p_imp, p_cached = mlp_params(np.random.default_rng(1)), mlp_params(np.random.default_rng(1))
    op = CachedOp(mlp_symbol(), ["data"], backend=ReferenceBackend())
    for step in range(2):
        with autograd.record():
            loss_imp = (imperative_mlp(x, p_imp) ** 2).sum()
        loss_imp.backward()
        with autograd.record():
            (out,) = op([x], p_cached)
            loss_cached = (out ** 2).sum()
        loss_cached.backward()
        np.testing.assert_allclose(loss_cached.asnumpy(), loss_imp.asnumpy(), rtol=1e-10)
        for k in p_imp:
            np.testing.assert_allclose(p_cached[k].asnumpy(), p_imp[k].asnumpy(), rtol=1e-10)
            if p_imp[k].grad is not None:
                np.testing.assert_allclose(p_cached[k].grad.asnumpy(), p_imp[k].grad.asnumpy(),
                                           rtol=1e-8, err_msg=k)
    assert op.compiles == 1 and op.calls == 2
    (pred,) = op([x], p_cached)          # inference: another signature, running stats used
    np.testing.assert_allclose(pred.asnumpy(), imperative_mlp(x, p_imp).asnumpy(), rtol=1e-10)
    assert op.compiles == 2


def test_cached_op_with_static_shape_makes_a_new_plan_for_a_new_shape_as_mxnet_allows():
    op = CachedOp(sym.relu(sym.var("data")), ["data"], backend=ReferenceBackend(),
                  static_alloc=True, static_shape=True)
    op([nd.ones((2, 3))], {})
    (out,) = op([-nd.ones((4, 3))], {})
    assert out.shape == (4, 3) and out.asnumpy().max() == 0
    assert op.compiles == 2


def count_conversions(monkeypatch):
    """A list that grows by one per Symbol -> Graph conversion."""
    calls, convert = [], Graph.from_symbol.__func__

    def counting(cls, symbol, data_names=()):
        calls.append(symbol)
        return convert(cls, symbol, data_names)
    monkeypatch.setattr(Graph, "from_symbol", classmethod(counting))
    return calls


def test_a_training_call_converts_each_graph_once_and_a_new_shape_converts_none(monkeypatch):
    conversions = count_conversions(monkeypatch)
    params = mlp_params(np.random.default_rng(1))
    op = CachedOp(mlp_symbol(), ["data"], backend=ReferenceBackend())
    assert conversions == []                       # input_names come from the Symbol
    for batch in (6, 2, 6):
        with autograd.record():
            (out,) = op([nd.array(np.ones((batch, 5)), dtype="float64")], params)
        out.backward()
        assert out.shape == (batch, 3) and params["fc1_weight"].grad.shape == (8, 5)
    assert len(conversions) == 2                   # the forward and the backward graph
    (plan,) = op.plans.values()                    # one signature: float64, training, wrt
    assert op.compiles == 2 and len(plan.backward.specializations) == 2
    assert [shapes[0] for shapes in plan.forward.specializations] == [(6, 5), (2, 5)]
    assert plan.forward.graph.input_names == op.input_names


def test_partial_shape_inference_converts_the_symbol_once(monkeypatch):
    conversions = count_conversions(monkeypatch)
    hidden = sym.relu(sym.FullyConnected(sym.var("data"), num_hidden=4, name="fc1"))
    out = sym.FullyConnected(hidden, num_hidden=2, name="fc2")
    arg_shapes, out_shapes, _ = out.infer_shape_partial(data=(3, 5))
    assert dict(zip(out.list_arguments(), arg_shapes))["fc2_weight"] == (2, 4)
    assert out_shapes == [(3, 2)] and len(conversions) == 1


def test_cached_op_makes_a_new_plan_for_new_dtypes_but_not_for_new_shapes():
    op = CachedOp(sym.relu(sym.var("data")), ["data"], backend=ReferenceBackend())
    op([nd.ones((2, 3))], {})
    op([nd.ones((4, 3))], {})
    assert len(op.plans) == 1 and op.compiles == 2
    (out,) = op([-nd.ones((4, 3), dtype="float64")], {})
    assert out.dtype == np.float64 and len(op.plans) == 2 and op.compiles == 3


def test_cached_op_refuses_static_shape_without_static_alloc_as_mxnet_does():
    with pytest.raises(ValueError, match=r"static_shape=True needs static_alloc=True"):
        CachedOp(sym.relu(sym.var("data")), ["data"], backend=ReferenceBackend(),
                 static_shape=True)


def test_differentiate_splits_forward_and_backward():
    x = sym.var("x")
    y = sym.sigmoid(sym.FullyConnected(x, num_hidden=2, name="fc"))
    diff = differentiate(y, ["fc_weight"], is_train=True)
    assert diff.head_names == ["_head_grad0"]
    assert diff.saved_names            # sigmoid's output is needed by its gradient
    bwd = Graph.from_symbol(diff.backward)
    assert "fc_weight" not in bwd.input_names   # dW needs x and the output gradient only
    assert set(diff.saved_names) <= set(bwd.input_names)
    shapes = {"x": (4, 3), "fc_weight": (2, 3), "fc_bias": (2,)}
    fwd = annotate(Graph.from_symbol(diff.forward), shapes)
    assert fwd.shape_of(fwd.outputs[0]) == (4, 2)
    text = str(fwd)
    assert "FullyConnected" in text and "(4, 2)" in text
    assert "digraph" in fwd.to_dot() and "FullyConnected 2" in fwd.to_dot()


def test_import_straightdope_is_light():
    code = ("import straightdope, sys; print(sorted(m for m in sys.modules if m.split('.')[0] "
            "in {'matplotlib', 'graphviz', 'ipywidgets', 'IPython', 'jupyter_core', 'numba'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
