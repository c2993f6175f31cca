"""MXNet fidelity, the symbol / shape inference / np side (issue 14): graphs built for
MXNet infer the same shapes here, and MXNet-style NumPy code runs unchanged. Each test
names the behaviour."""
import json
import re

import numpy as np
import pytest
from test_linalg import _numeric_grad

import straightdope as mx


@pytest.fixture(autouse=True)
def mxnet_1x_shapes():
    """MXNet 1.x's shape semantics (0 = unknown dim), whatever an earlier test switched on
    with npx.set_np()."""
    with mx.np_shape(False):
        yield


# ------------------------------------------------------ partial shape inference
def test_two_partly_known_shapes_added_fill_each_others_unknown_dims():
    left = mx.sym.var("left", shape=(0, 4))        # 0: this dim is not known yet
    right = mx.sym.var("right", shape=(6, 0))
    arg_shapes, out_shapes, _ = (left + right).infer_shape()
    assert arg_shapes == [(6, 4), (6, 4)]
    assert out_shapes == [(6, 4)]


def test_a_symbols_arithmetic_is_mxnets_elemwise_ops_so_one_shape_tells_the_others():
    a, b, c = (mx.sym.var(n) for n in "abc")
    s = mx.sym.sigmoid(a * b + c)
    assert s.infer_shape(a=(2, 2)) == ([(2, 2)] * 3, [(2, 2)], [])
    names = [n for n in s.get_internals().list_outputs() if "_output" in n]
    assert [re.sub(r"\d+_output$", "", n) for n in names] == ["_mul", "_plus", "sigmoid"]
    # the broadcasting ops infer nothing from one side, as MXNet's
    t = mx.sym.sigmoid(mx.sym.broadcast_add(mx.sym.broadcast_mul(a, b), c))
    assert t.infer_shape(a=(2, 2)) == (None, None, None)
    for op, name in [(a - b, "elemwise_sub"), (a / b, "elemwise_div"), (a ** b, "_power"),
                     (a % b, "_mod"), (a > b, "_greater"), (a == b, "_equal"),
                     (mx.sym.maximum(a, b), "_maximum"), (mx.sym.hypot(a, b), "elemwise_hypot")]:
        (node,) = [n for n in json.loads(op.tojson())["nodes"] if n["op"] != "null"]
        assert node["op"] == name
        assert op.infer_shape(b=(3, 1))[0] == [(3, 1), (3, 1)]


def test_a_hybridized_product_of_two_shapes_fails_as_in_mxnet_and_names_the_fix():
    class Scale(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, w):
            return x * w

    x, w = mx.nd.ones((2, 3)), mx.nd.arange(3)
    net = Scale()
    assert net(x, w).asnumpy().tolist() == [[0, 1, 2]] * 2     # NDArrays broadcast
    net.hybridize()
    with pytest.raises(mx.base.MXNetError) as err:
        net(x, w)
    for part in ("Scale", "elemwise_mul", "(2, 3)", "(3,)", "F.broadcast_mul"):
        assert part in str(err.value)


def test_a_full_reduction_meets_a_one_element_array_as_mxnets_shape_1_would():
    x, n = mx.sym.var("x"), mx.sym.var("n")
    s = mx.sym.sum(x) * n                        # () here, (1,) in MXNet 1.x
    assert s.infer_shape(x=(2, 3), n=(1,))[1] == [(1,)]
    (out,) = s.eval(x=mx.nd.ones((2, 3)), n=mx.nd.array([2.0]))
    assert out.asnumpy().tolist() == [12.0]


def test_np_symbols_and_the_librarys_gradient_rules_still_broadcast():
    from straightdope.symbol.symbol import _broadcasting, broadcasting_operators
    a, b = mx.sym.var("a").as_np_ndarray(), mx.sym.var("b").as_np_ndarray()
    assert (a * b).infer_shape(a=(2, 3), b=(3,))[1] == [(2, 3)]
    x, w = mx.nd.ones((2, 3)), mx.nd.arange(3)       # a broadcast_mul's gradient graph
    w.attach_grad()

    class Scale(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, w):
            return F.broadcast_mul(x, w)
    net = Scale()
    net.hybridize()
    with mx.autograd.record():
        y = net(x, w)
    y.backward()
    assert w.grad.asnumpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(KeyError):
        with broadcasting_operators():
            assert _broadcasting.on
            raise KeyError("restored after an error")
    assert not _broadcasting.on


def test_a_batch_size_learnt_after_a_dense_layer_flows_back_to_its_data():
    data = mx.sym.var("data", shape=(0, 8))
    hidden = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    bias_like = mx.sym.var("offset", shape=(7, 0))
    args, _, _ = (hidden + bias_like).infer_shape()
    shapes = dict(zip((hidden + bias_like).list_arguments(), args))
    assert shapes["data"] == (7, 8)
    assert shapes["fc_weight"] == (3, 8)
    assert shapes["offset"] == (7, 3)


def test_a_convolution_that_keeps_height_and_width_tells_its_data_their_sizes():
    data = mx.sym.var("data", shape=(0, 2, 0, 0))
    conv = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    out = conv + mx.sym.var("target", shape=(2, 4, 9, 9))
    shapes = dict(zip(out.list_arguments(), out.infer_shape()[0]))
    assert shapes["data"] == (2, 2, 9, 9)


def test_a_split_output_s_known_shape_fills_the_unknown_dims_of_its_input():
    data = mx.sym.var("data", shape=(0, 6, 0))
    parts = mx.sym.split(data, num_outputs=2, axis=1)
    out = parts[0] + mx.sym.var("other", shape=(4, 3, 5))
    shapes = dict(zip(out.list_arguments(), out.infer_shape()[0]))
    assert shapes["data"] == (4, 6, 5)


def test_concat_of_partly_known_inputs_learns_their_common_dims_from_its_output():
    a = mx.sym.var("a", shape=(0, 3))
    b = mx.sym.var("b", shape=(0, 2))
    out = mx.sym.var("c", shape=(5, 0)) + mx.sym.concat(a, b, dim=1)
    shapes = dict(zip(out.list_arguments(), out.infer_shape()[0]))
    assert shapes == {"a": (5, 3), "b": (5, 2), "c": (5, 5)}


def test_an_identity_declared_like_a_weight_gives_that_weight_its_shape_backwards():
    weight = mx.sym.var("weight")
    shifted = mx.sym.broadcast_add(weight, mx.sym.var("shift", shape=(1,)))
    shifted = mx.sym._internal._identity_with_attr_like_rhs(shifted, weight)
    net = mx.sym.FullyConnected(mx.sym.var("data"), weight=shifted, num_hidden=4,
                                no_bias=True)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 9))[0]))
    assert shapes["weight"] == (4, 9)


def test_an_unknown_dim_that_no_op_can_infer_is_reported_as_zero_or_minus_one():
    data = mx.sym.var("data", shape=(1, 0, 0, 0))
    conv = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), no_bias=True, name="c")
    args, outs, _ = conv.infer_shape_partial()
    assert dict(zip(conv.list_arguments(), args))["c_weight"] == (8, 0, 3, 3)
    assert outs == [(1, 8, 0, 0)]
    assert conv.infer_shape() == (None, None, None)
    with mx.np_shape(True):
        x = mx.sym.var("x")
        y = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), no_bias=True, name="c")
        assert y.infer_shape_partial(x=(1, -1, 5, 5))[1] == [(1, 8, 3, 3)]


def test_where_infers_nothing_until_its_condition_shape_is_complete():
    cond, x, y = mx.sym.var("cond"), mx.sym.var("x"), mx.sym.var("y")
    out = mx.sym.where(cond, x, y)
    assert out.infer_shape_partial(cond=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert out.infer_shape_partial(cond=(3, 2), x=(0, 2), y=(3, 0))[0] == [(3, 2)] * 3


def test_conflicting_known_dims_name_the_node_and_both_shapes():
    a = mx.sym.var("a", shape=(0, 4))
    b = mx.sym.var("b", shape=(3, 5))
    with pytest.raises(mx.base.MXNetError, match=r"\(3, 5\).*\(0, 4\)|\(0, 4\).*\(3, 5\)"):
        (a + b).infer_shape()


# ------------------------------------------------------------------- operators
def test_modulo_follows_python_signs_imperatively_hybridized_and_in_gradients():
    x = mx.nd.array([[5.5, -7.25], [3.0, -1.5]])
    d = mx.nd.array([[2.0, 2.0], [-4.0, 4.0]])
    expected = np.mod(x.asnumpy(), d.asnumpy())
    assert np.allclose((x % d).asnumpy(), expected)
    assert np.allclose((x % 2).asnumpy(), np.mod(x.asnumpy(), 2))
    assert np.allclose((7 % d).asnumpy(), np.mod(7, d.asnumpy()))

    class Mod(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a % b

    net = Mod()
    net.hybridize()
    x.attach_grad()
    d.attach_grad()
    with mx.autograd.record():
        out = net(x, d)
    out.backward()
    assert np.allclose(out.asnumpy(), expected)
    assert np.allclose(x.grad.asnumpy(), 1.0)
    assert np.allclose(d.grad.asnumpy(), -np.floor(x.asnumpy() / d.asnumpy()))


def test_the_gradient_of_a_vector_dot_vector_is_each_vector_times_the_head_gradient():
    a = mx.nd.array([1.0, 2.0, 3.0])
    b = mx.nd.array([4.0, -5.0, 6.0])
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    lhs_grad, rhs_grad = mx.nd.zeros(3), mx.nd.zeros(3)
    exe = mx.sym.dot(lhs, rhs).bind(mx.cpu(), args={"lhs": a, "rhs": b},
                                    args_grad={"lhs": lhs_grad, "rhs": rhs_grad})
    exe.forward(is_train=True)
    assert np.isclose(exe.outputs[0].asnumpy(), 12.0)
    exe.backward([mx.nd.array(2.0)])
    assert np.allclose(lhs_grad.asnumpy(), 2.0 * b.asnumpy())
    assert np.allclose(rhs_grad.asnumpy(), 2.0 * a.asnumpy())
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.dot(a, b)
    y.backward()
    assert np.allclose(a.grad.asnumpy(), b.asnumpy())


# ---------------------------------------------------------------------- np
def test_np_empty_and_copy_make_row_major_arrays_only():
    x = mx.np.empty((2, 3), "int32", "C", mx.npx.current_context())
    assert x.shape == (2, 3) and x.dtype == np.int32 and x.ctx == mx.npx.current_context()
    assert mx.np.empty(4).dtype == np.float32
    with pytest.raises(NotImplementedError, match="order='C'"):
        mx.np.empty((2, 3), order="F")
    with pytest.raises(NotImplementedError, match="order='C'"):
        x.copy(order="F")
    assert (x.copy().asnumpy() == x.asnumpy()).all()


def test_np_multinomial_takes_float32_probabilities_and_a_size():
    pvals = mx.np.array([0.1, 0.2, 0.3, 0.4])      # float32: they sum to 1 only roughly
    counts = mx.np.random.multinomial(1000, pvals, size=(2, 3))
    assert counts.shape == (2, 3, 4)
    assert (counts.asnumpy().sum(axis=-1) == 1000).all()
    assert mx.np.random.multinomial(10, [], size=(0, 2)).size == 0


# ------------------------------------------------------------------ linalg
def test_gelqf_factorises_into_lower_triangular_times_orthonormal_rows_with_a_gradient():
    rng = np.random.RandomState(3)
    a = mx.nd.array(rng.randn(2, 3), dtype="float64")
    weights = rng.randn(2, 2)
    a.attach_grad()
    with mx.autograd.record():
        q, l = mx.nd.linalg.gelqf(a)
        loss = (l * mx.nd.array(weights, dtype="float64")).sum()
    loss.backward()
    assert np.allclose(l.asnumpy() @ q.asnumpy(), a.asnumpy())
    assert np.allclose(np.triu(l.asnumpy(), 1), 0.0)
    assert np.allclose(q.asnumpy() @ q.asnumpy().T, np.eye(2))

    def loss_of(x):
        lower = np.linalg.qr(x.T)[1].T
        return (lower * weights).sum()
    numeric = _numeric_grad(loss_of, a.asnumpy(), eps=1e-6)
    assert np.allclose(a.grad.asnumpy(), numeric, atol=1e-6)
    assert mx.sym.linalg.gelqf(mx.sym.var("a")).infer_shape(a=(4, 6))[1] == [(4, 6), (4, 4)]
    with pytest.raises(mx.base.MXNetError, match="m <= n"):
        mx.nd.linalg.gelqf(mx.nd.ones((3, 2)))


def test_a_dtype_attribute_accepts_numpy_type_objects():
    x = mx.nd.ones(2)
    assert mx.nd.Cast(x, dtype=np.float64).dtype == np.float64
    assert mx.sym.Cast(mx.sym.var("x"), dtype=np.int32).infer_type(x=np.float32)[1] == [np.int32]


# ---------------------------------------------------------------- executors
def _allocated_mb(executor):
    line = executor.debug_str().splitlines()[-1]
    return int(line.split()[1])


def test_debug_str_counts_the_values_kept_for_backward_only_when_a_gradient_can_flow():
    x = mx.sym.var("x")
    y = x
    for _ in range(4):
        y = y * y                       # each product's gradient reads its inputs
    shape = (4, 1024, 256)              # 4 MB of float32
    with_grads = _allocated_mb(y.simple_bind(mx.cpu(), x=shape))
    no_grads = _allocated_mb(y.simple_bind(mx.cpu(), x=shape, grad_req="null"))
    blocked = _allocated_mb(mx.sym.stop_gradient(y).simple_bind(mx.cpu(), x=shape))
    assert no_grads == blocked == 4     # the output only
    assert with_grads == 4 + 3 * 4      # and the three products the backward reads


# ---------------------------------------------------------------- symbol methods
@pytest.mark.parametrize("method, args, shape", [("squeeze", (), (2, 3)),
                                                 ("flatten", (), (2, 3)),
                                                 ("expand_dims", (1,), (2, 1, 3, 1))])
def test_view_methods_with_inplace_run_hybridized_as_the_plain_op(method, args, shape):
    class View(mx.gluon.HybridBlock):
        def forward(self, x):
            return getattr(x, method)(*args, inplace=True)

    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
    block = View()
    imperative = block(x).asnumpy()
    block.hybridize()
    hybridized = block(x).asnumpy()
    assert hybridized.shape == imperative.shape == shape
    assert np.array_equal(hybridized, imperative)


@pytest.mark.parametrize("ord, axis, keepdims", [(2, None, False), (1, 1, False),
                                                 (2, (0, 1), True), (1, 0, True)])
def test_sym_norm_and_the_norm_method_agree_with_nd_norm_and_its_gradient(ord, axis,
                                                                          keepdims):
    data = np.array([[3.0, -4.0, 1.0], [-6.0, 8.0, 2.0]], np.float32)
    x = mx.sym.var("x")
    for traced in (mx.sym.norm(x, ord=ord, axis=axis, keepdims=keepdims),
                   x.norm(ord=ord, axis=axis, keepdims=keepdims)):
        exe = traced.simple_bind(mx.cpu(), x=data.shape)
        out = exe.forward(is_train=True, x=mx.nd.array(data))[0]
        exe.backward(mx.nd.ones(out.shape))
        xn = mx.nd.array(data)
        xn.attach_grad()
        with mx.autograd.record():
            expected = mx.nd.norm(xn, ord=ord, axis=axis, keepdims=keepdims)
        expected.backward()
        np.testing.assert_allclose(out.asnumpy(), expected.asnumpy(), rtol=1e-6)
        np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), xn.grad.asnumpy(),
                                   rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="ord must be 1 or 2"):
        mx.sym.norm(x, ord=3).infer_shape(x=(2, 3))


def test_norm_is_one_node_named_as_asked_and_compiles_to_a_sum_and_a_root():
    """MXNet's norm is one op: sym.norm(x, name='n') is one node 'n' (its output
    'n_output'), and a file naming op 'norm' loads; the compiler lowers it to a sum
    of squares and a square root."""
    x = mx.sym.var("x")
    n = mx.sym.norm(x, axis=1, name="n")
    assert n.list_outputs() == ["n_output"]
    assert mx.sym.load_json(n.tojson()).list_outputs() == ["n_output"]

    class Norms(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.norm(x, axis=1, out_dtype="float64") + F.norm(x, ord=1, axis=1,
                                                                  out_dtype="float64")

    data = mx.nd.array(np.random.default_rng(0).normal(size=(4, 5)))
    block = Norms()
    expected = block(data)
    block.hybridize(executor="numba")
    got = block(data)
    assert got.dtype == expected.dtype == np.float64
    np.testing.assert_allclose(got.asnumpy(), expected.asnumpy(), rtol=1e-6)
    fused = block._cached_op.last_plan.forward.current.stages["fused"]
    assert fused.rewrites == ["norm -> sqrt(sum(square))", "norm -> sum(abs)"]


@pytest.mark.parametrize("shape", [(2, 3), (0,), ()])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, None])
def test_np_creation_functions_inside_hybrid_forward_trace_as_they_compute(shape, dtype):
    """F.np.zeros(shape) has no array argument to dispatch on: while tracing (F is sym)
    it must add a node, not make an NDArray that a Symbol cannot be added to."""
    class Filled(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + F.np.zeros(shape, dtype) + F.np.ones(shape, dtype) * F.np.full(
                shape, 2, dtype) - F.np.empty(shape, dtype)

    x = mx.np.array(np.arange(int(np.prod(shape))).reshape(shape), dtype=dtype)
    block = Filled()
    imperative = block(x)
    block.hybridize()
    hybridized = block(x)
    assert hybridized.shape == imperative.shape == shape
    assert hybridized.dtype == imperative.dtype == (dtype or np.float32)
    assert np.array_equal(hybridized.asnumpy(), imperative.asnumpy())
    assert np.array_equal(imperative.asnumpy(), x.asnumpy() + 2)


# ------------------------------------------------ the fused RNN op (ops/rnn.py)
def _flat_parameters(layer, num_layers, directions):
    """A gluon.rnn layer's parameters as the one vector the fused op reads (MXNet's order:
    all weights, then all biases; per layer, direction, i2h then h2h)."""
    params = layer.collect_params()
    order = [f"{d}{i}_{g}_{kind}" for kind in ("weight", "bias") for i in range(num_layers)
             for d in "lr"[:directions] for g in ("i2h", "h2h")]
    by_suffix = {name: p for name, p in params.items()}
    vectors = [next(p for n, p in by_suffix.items() if n.endswith(o)).data().reshape(-1)
               for o in order]
    return mx.nd.concat(*vectors, dim=0)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_the_fused_rnn_op_computes_what_the_gluon_rnn_layers_compute(mode):
    from straightdope.gluon import rnn
    layers = {"lstm": rnn.LSTM, "gru": rnn.GRU,
              "rnn_tanh": lambda *a, **k: rnn.RNN(*a, activation="tanh", **k),
              "rnn_relu": rnn.RNN}
    with mx.name.NameManager():        # its own name counts: other tests expect 'lstm0_'
        layer = layers[mode](5, num_layers=2, bidirectional=True, input_size=3)
    layer.initialize(mx.init.Uniform(0.5))
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.normal(size=(4, 2, 3)))
    states = [mx.nd.array(rng.normal(size=s.shape)) for s in layer.begin_state(2)]
    expected, expected_states = layer(x, states)
    out = mx.nd.RNN(x, _flat_parameters(layer, 2, 2), *states, state_size=5, num_layers=2,
                    bidirectional=True, mode=mode, state_outputs=True)
    assert len(out) == 1 + len(states)
    np.testing.assert_allclose(out[0].asnumpy(), expected.asnumpy(), rtol=1e-5, atol=1e-6)
    for got, want in zip(out[1:], expected_states):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_the_fused_rnn_op_infers_its_parameter_vector_and_state_shapes():
    s = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("param"), mx.sym.var("h0"),
                   mx.sym.var("c0"), state_size=10, num_layers=2, bidirectional=True,
                   state_outputs=True, mode="lstm", name="lstm")
    assert s.list_outputs() == ["lstm_output", "lstm_state", "lstm_statecell"]
    args, outs, _ = s.infer_shape(data=(7, 3, 4))
    # layer 0: 2 directions x 4 gates x 10 x (4 + 10 + 2); layer 1 reads 20 features
    assert args == [(7, 3, 4), (2 * 40 * 16 + 2 * 40 * 32,), (4, 3, 10), (4, 3, 10)]
    assert outs == [(7, 3, 20), (4, 3, 10), (4, 3, 10)]
    with pytest.raises(mx.base.MXNetError, match="'state' must have shape"):
        s.infer_shape(data=(7, 3, 4), h0=(2, 3, 10))


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_the_fused_rnn_op_has_the_gradients_of_the_gluon_rnn_layers(mode):
    from straightdope.gluon import rnn
    with mx.name.NameManager():
        layer = (rnn.LSTM if mode == "lstm" else rnn.GRU)(4, num_layers=2, bidirectional=True,
                                                           input_size=3)
    layer.initialize(mx.init.Uniform(0.5))
    rng = np.random.default_rng(1)
    x = mx.nd.array(rng.normal(size=(5, 2, 3)))
    states = [mx.nd.array(rng.normal(size=s.shape)) for s in layer.begin_state(2)]
    head = mx.nd.array(rng.normal(size=(5, 2, 8)))
    for s in [x] + states:
        s.attach_grad()
    with mx.autograd.record():
        expected, _ = layer(x, states)
    expected.backward(head)
    want = [a.grad.asnumpy() for a in [x] + states]
    params = _flat_parameters(layer, 2, 2)
    params.attach_grad()
    with mx.autograd.record():
        out = mx.nd.RNN(x, params, *states, state_size=4, num_layers=2, bidirectional=True,
                        mode=mode)
    out.backward(head)
    for got, expect in zip([x.grad] + [s.grad for s in states], want):
        np.testing.assert_allclose(got.asnumpy(), expect, rtol=1e-4, atol=1e-5)
    flat_from_layer = mx.nd.concat(*[
        next(p for n, p in layer.collect_params().items() if n.endswith(o)).grad().reshape(-1)
        for o in [f"{d}{i}_{g}_{k}" for k in ("weight", "bias") for i in range(2)
                  for d in "lr" for g in ("i2h", "h2h")]], dim=0)
    np.testing.assert_allclose(params.grad.asnumpy(), flat_from_layer.asnumpy(),
                               rtol=1e-4, atol=1e-5)


def test_gen_atomic_symbol_is_the_last_op_alone_on_new_variables():
    s = mx.sym.RNN(mx.sym.var("x"), mx.sym.var("p"), mx.sym.var("h"), state_size=2,
                   num_layers=1, mode="gru", state_outputs=True, name="gru")
    atomic = s._gen_atomic_symbol()
    assert atomic.list_arguments() == ["data", "parameters", "state"]
    assert atomic.list_outputs() == ["gru_output", "gru_state"]
    assert (mx.sym.var("a") * 2)._gen_atomic_symbol().list_arguments() == ["data"]


def test_binding_a_graph_deeper_than_pythons_recursion_limit_checks_its_gradients(monkeypatch):
    monkeypatch.setenv("STRAIGHTDOPE_EXECUTOR", "numpy")     # no compile of 3000 ops
    x = mx.sym.var("x")
    y = x
    for _ in range(3000):
        y = y * 1.0 + 1.0
    exe = y.simple_bind(mx.cpu(), x=(2,))
    exe.arg_dict["x"][:] = 1.0
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), [3001.0, 3001.0])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [1.0, 1.0])


@pytest.mark.parametrize("ord", [1, 2])
def test_norm_with_out_dtype_differentiates_in_the_datas_dtype(ord):
    """norm(x, out_dtype='float64') of float32 data: a bound graph (forward and backward)
    runs, and the gradient is float32, sign(x) or x / norm as MXNet's (its test_norm)."""
    x = np.random.default_rng(3).uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    x[0] *= -1
    s = mx.sym.norm(mx.sym.var("x"), ord=ord, axis=1, keepdims=True, out_dtype="float64")
    grad = mx.nd.zeros((3, 4))
    exe = s.bind(mx.cpu(), args={"x": mx.nd.array(x)}, args_grad={"x": grad})
    out = exe.forward(is_train=True)[0]
    want = np.abs(x).sum(1, keepdims=True) if ord == 1 else np.sqrt((x * x).sum(1,
                                                                           keepdims=True))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    exe.backward(mx.nd.ones((3, 1), dtype="float64"))
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad.asnumpy(), np.sign(x) if ord == 1 else x / want,
                               rtol=1e-5)
