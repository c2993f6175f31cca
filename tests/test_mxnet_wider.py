"""MXNet fidelity, second tier (issue 32 section 3): the APIs MXNet 1.9.1's wider unit tests
need, each checked here in our own words (`scripts/mxnet_tests.py` runs MXNet's files)."""
import json
import os
import pickle
import threading

import numpy as np
import pytest

import straightdope as mx


# ------------------------------------------------------------- AttrScope, attributes
def test_attrscope_gives_its_attributes_to_variables_and_ops_made_inside_it():
    with mx.AttrScope(group="4", __data__="great"):
        x = mx.sym.var("x")
        y = mx.sym.relu(x)
        with mx.AttrScope(__init_bias__="0.0"):
            z = mx.sym.FullyConnected(y, num_hidden=3, name="fc")
    outside = mx.sym.var("outside")
    assert x.attr("group") == "4" and y.attr("__data__") == "great"
    assert z.attr("__data__") == "great" and z.attr("__init_bias__") == "0.0"
    assert outside.attr("group") is None


def test_attributes_given_to_a_symbol_win_over_the_scope():
    with mx.attribute.AttrScope(group="4"):
        x = mx.sym.var("x", attr={"group": "1"})
    assert x.attr("group") == "1"


def test_attrscope_refuses_values_that_are_not_strings():
    with pytest.raises(ValueError, match="string"):
        mx.AttrScope(group=4)


def test_attrscope_is_per_thread():
    seen = []

    def other():
        seen.append(mx.sym.var("v").attr("group"))

    with mx.AttrScope(group="main"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert mx.sym.var("w").attr("group") == "main"
    assert seen == [None]


def test_lr_mult_is_stored_hidden_and_read_both_ways():
    w = mx.sym.var("w", lr_mult=2, attr={"force_mirroring": "True"})
    assert w.attr("__lr_mult__") == "2" and w.attr("lr_mult") == "2"
    assert w.attr("__force_mirroring__") == "True" and w.attr("force_mirroring") == "True"
    listed = w.list_attr()
    assert listed["__lr_mult__"] == "2" and listed["lr_mult"] == "2"


def test_op_attributes_and_made_variables_in_attr_dict():
    data = mx.sym.var("data", attr={"mood": "angry"})
    conv = mx.sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                              attr={"__mood__": "so so"}, wd_mult=0)
    table = conv.attr_dict()
    assert table["data"] == {"mood": "angry"}
    assert table["conv"]["kernel"] == "(1, 1)" and table["conv"]["__mood__"] == "so so"
    assert table["conv"]["__wd_mult__"] == "0" and table["conv"]["wd_mult"] == "0"
    assert table["conv_weight"]["__mood__"] == "so so"      # made with the op
    assert "mood" not in table["conv_weight"]


def test_variable_keywords_must_be_underscored():
    assert mx.sym.var("x", __layout__="NCHW").attr("__layout__") == "NCHW"
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.var("x", layout="NCHW")


def test_op_attributes_survive_json_and_pickle():
    with mx.AttrScope(__group__="g1"):
        out = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2, name="fc", lr_mult=0.5)
    doc = json.loads(out.tojson())
    fc = [n for n in doc["nodes"] if n["name"] == "fc"][0]
    assert fc["attrs"]["__group__"] == "g1" and fc["attrs"]["__lr_mult__"] == "0.5"
    again = mx.sym.load_json(out.tojson())
    assert again.attr("__group__") == "g1" and again.tojson() == out.tojson()
    assert pickle.loads(pickle.dumps(out)).tojson() == out.tojson()


def test_set_attr_takes_strings_only():
    x = mx.sym.var("x")
    x._set_attr(ctx_group="dev1")
    assert x.attr("__ctx_group__") == "dev1"
    with pytest.raises(ValueError, match="string"):
        x._set_attr(ctx_group=1)


# ------------------------------------------------------------------- mx.operator, util
def test_operator_lists_the_registry_and_describes_arguments():
    from straightdope.operator import get_all_registered_operators, get_operator_arguments
    names = get_all_registered_operators()
    assert "Activation" in names and "FullyConnected" in names
    args = get_operator_arguments("FullyConnected")
    assert args.names[:3] == ["data", "weight", "bias"] and args.narg == len(args.names)
    assert args.types[args.names.index("num_hidden")] == "int, required"
    assert args.types[args.names.index("no_bias")] == "boolean, optional, default=0"
    with pytest.raises(mx.MXNetError, match="no op named"):
        get_operator_arguments("NoSuchOp")


def test_util_getenv_and_setenv():
    key = "STRAIGHTDOPE_TEST_GETENV"
    mx.util.setenv(key, "1")
    try:
        assert mx.util.getenv(key) == "1" and os.environ[key] == "1"
    finally:
        mx.util.setenv(key, None)
    assert mx.util.getenv(key) is None and key not in os.environ


# ------------------------------------------------------------------ contrib.autograd
def test_contrib_grad_and_loss_gives_gradients_and_value():
    from straightdope.contrib.autograd import grad, grad_and_loss
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = mx.nd.array([[0.5, 1.0], [2.0, -1.0]])
    grads, value = grad_and_loss(lambda a, b: a * b + a)(x, y)
    np.testing.assert_allclose(value.asnumpy(), (x * y + x).asnumpy())
    np.testing.assert_allclose(grads[0].asnumpy(), y.asnumpy() + 1)
    np.testing.assert_allclose(grads[1].asnumpy(), x.asnumpy())
    only_second = grad(lambda a, b, mode: a * b, argnum=1)(x, y, None)
    assert len(only_second) == 1
    np.testing.assert_allclose(only_second[0].asnumpy(), x.asnumpy())
    with pytest.raises(TypeError, match="NDArrays"):
        grad(lambda a: a)(3.0)


def test_contrib_sections_switch_recording_and_train_mode_together():
    from straightdope.contrib import autograd as cag
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()


def test_contrib_backward_takes_none_for_a_ones_head_gradient():
    from straightdope.contrib import autograd as cag
    x = mx.nd.ones((2, 3))
    dx = mx.nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        a, b = mx.nd.split(x, axis=0, num_outputs=2, squeeze_axis=True)
        cag.backward([a, b], [None, mx.nd.array([1.0, 2.0, 3.0])])
    np.testing.assert_allclose(dx.asnumpy(), [[1, 1, 1], [1, 2, 3]])
    with pytest.raises(ValueError, match="out_grads"):
        cag.backward([a, b], [None])


# ------------------------------------------------------------------------ viz, base
def test_plot_network_warns_about_two_variables_of_one_name():
    pytest.importorskip("graphviz")
    import warnings
    net = mx.sym.FullyConnected(mx.sym.var("data"), name="fc", num_hidden=4)
    net = mx.sym.FullyConnected(mx.sym.relu(net), name="fc", num_hidden=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(net, shape={"data": (3, 5)})
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "Repeated names: fc_bias,fc_weight" in messages[0]
    single = mx.sym.FullyConnected(mx.sym.var("data"), name="fc1", num_hidden=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(single)
    assert not [w for w in caught if "Repeated" in str(w.message)]


def test_base_as_list():
    from straightdope.base import _as_list
    x = mx.nd.ones((2,))
    assert _as_list(x) == [x]
    pair = (x, x)
    assert _as_list(pair) is pair and _as_list([x]) == [x]


def test_optimizer_reads_lr_mult_and_wd_mult_from_a_symbols_variables():
    w = mx.sym.var("fc_weight", lr_mult=0.0)
    b = mx.sym.var("fc_bias", wd_mult=2)
    net = mx.sym.FullyConnected(mx.sym.var("data"), w, b, num_hidden=2, name="fc")
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, sym=net,
                           param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert opt._get_lrs([0, 1]) == pytest.approx([0.0, 0.1])
    assert opt._get_wds([0, 1]) == pytest.approx([0.01, 0.02])   # a bias: 0, unless set
    opt.set_lr_mult({"fc_weight": 0.5})                # given by name: wins over the symbol
    assert opt._get_lrs([0]) == pytest.approx([0.05])
    weight, grad = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
    opt.set_lr_mult({})                                # back to the symbol's 0: no change
    opt.update(0, weight, grad, opt.create_state(0, weight))
    np.testing.assert_allclose(weight.asnumpy(), np.ones((2, 3)))


def test_make_loss_is_identity_whose_gradient_is_ones():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.make_loss(x * x)
    loss.backward(mx.nd.array([5.0, 5.0, 5.0]))        # the head gradient is ignored
    np.testing.assert_allclose(loss.asnumpy(), [1, 4, 9])
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])
    out = mx.sym.make_loss(mx.sym.square(mx.sym.var("x")))
    assert len(out.list_outputs()) == 1 and out.list_outputs()[0].endswith("_loss")
    ex = out.simple_bind(mx.cpu(), x=(3,))
    ex.arg_dict["x"][:] = x
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), [2, 4, 6])


def test_base_py_str():
    from straightdope.base import py_str
    assert py_str(b"relu") == "relu" and py_str("relu") == "relu"


def test_np_array_scope_is_per_thread_and_names_its_setting():
    from straightdope.util import _NumpyArrayScope
    seen = []

    def other():
        seen.append(mx.is_np_array())

    with mx.np_array(True) as scope:
        assert isinstance(scope, _NumpyArrayScope) and scope._is_np_array
        assert mx.is_np_array()
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [False] and not mx.is_np_array()


# --------------------------------------------------------------- executor monitor
def test_executor_monitor_names_and_values_as_mxnet():
    data = mx.sym.var("data")
    net = mx.sym.relu(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="act")
    exe = net.simple_bind(mx.cpu(), data=(3, 4), grad_req="null")
    exe.arg_dict["data"][:] = np.arange(12.0).reshape(3, 4) - 6
    exe.arg_dict["fc_weight"][:] = 0.5
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy()))
    exe.forward()
    assert list(seen) == ["fc_output", "act_output"]
    np.testing.assert_allclose(seen["act_output"], exe.outputs[0].asnumpy())
    np.testing.assert_allclose(seen["fc_output"], (np.arange(12.0).reshape(3, 4) - 6).sum(1,
                               keepdims=True) * 0.5 * np.ones((1, 2)))
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name), monitor_all=True)
    exe.forward()
    assert names == ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias",
                     "fc_output", "act_data", "act_output"]


def test_executor_backward_with_every_grad_req_null_does_nothing():
    exe = mx.sym.square(mx.sym.var("x")).simple_bind(mx.cpu(), x=(2,), grad_req="null")
    exe.forward(x=mx.nd.array([1.0, 2.0]))
    exe.backward()                                  # as MXNet: nothing to compute
    assert exe.grad_dict["x"] is None


def test_executor_backward_before_forward_runs_the_forward_first():
    x = mx.sym.var("x")
    exe = mx.sym.tile(x * x, reps=(2,)).bind(mx.cpu(), args={"x": mx.nd.array([1.0, 3.0])},
                                             args_grad={"x": mx.nd.zeros((2,))})
    exe.backward(mx.nd.ones((4,)))                  # MXNet's tests do this right after bind
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [4.0, 12.0])


# -------------------------------------------------------------- sample_*, arange
def test_sample_normal_draws_shape_samples_per_parameter_element():
    mx.random.seed(7)
    mu, sigma = mx.nd.array([0.0, 100.0]), mx.nd.array([1.0, 0.01])
    draws = mx.nd.sample_normal(mu=mu, sigma=sigma, shape=(2000,))
    assert draws.shape == (2, 2000) and draws.dtype == np.float32
    np.testing.assert_allclose(draws.asnumpy().mean(axis=1), [0.0, 100.0], atol=0.1)
    assert mx.nd.sample_normal(mu=mu, sigma=sigma).shape == (2,)
    assert mx.nd.sample_uniform(low=mu, high=mu + 1, shape=3).shape == (2, 3)
    with pytest.raises(mx.MXNetError, match="one shape"):
        mx.nd.sample_normal(mu=mu, sigma=mx.nd.ones((3,)))


def test_arange_computes_in_its_dtype_as_mxnet():
    np.testing.assert_array_equal(mx.nd.arange(1.3, 6, 1.3, dtype="int32").asnumpy(),
                                  np.arange(1.3, 6, 1.3, dtype=np.int32))
    np.testing.assert_array_equal(mx.nd.arange(2, 5, repeat=2).asnumpy(),
                                  [2, 2, 3, 3, 4, 4])
    x = mx.nd.zeros((2, 3))
    np.testing.assert_array_equal(mx.nd.contrib.arange_like(x, start=1, step=2).asnumpy(),
                                  [[1, 3, 5], [7, 9, 11]])


def test_negative_binomial_samplers_have_their_means():
    mx.random.seed(3)
    k, p = 2, 0.2
    draws = mx.nd.random.negative_binomial(k, p, shape=(20000,)).asnumpy()
    assert abs(draws.mean() - k * (1 - p) / p) < 0.3           # mean 8
    mu, alpha = 8.0, 0.5
    mixed = mx.nd.random.generalized_negative_binomial(mu, alpha, shape=(20000,)).asnumpy()
    assert abs(mixed.mean() - mu) < 0.3
    assert abs(mixed.var() - (mu + alpha * mu * mu)) < 3.0      # var 40
    with pytest.raises(mx.MXNetError, match="alpha"):   # at the read under ThreadedEngine
        mx.nd.random.generalized_negative_binomial(1.0, -1.0, shape=(2,)).asnumpy()


# ------------------------------------------------ use_np blocks, NameManager.current
def _np_block(decorate):
    class Block(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(3, 4))

        def hybrid_forward(self, F, x, w):
            return F.np.dot(x, w) if decorate else F.dot(x, w)

        @staticmethod
        def kind():
            return "static"
    return mx.use_np(Block) if decorate else Block


@pytest.mark.parametrize("hybridize", [False, True])
def test_a_use_np_block_makes_np_parameters_a_plain_block_nd_ones(hybridize):
    x = mx.nd.ones((2, 3))
    for decorate, expected in ((True, mx.np.ndarray), (False, mx.nd.NDArray)):
        net = _np_block(decorate)()
        net.initialize()                      # a method of Block, scoped by use_np too
        if hybridize:
            net.hybridize()
        out = net(x.as_np_ndarray() if decorate else x)
        assert type(net.w.data()) is expected and type(net.w.grad()) is expected
        assert type(out) is expected and out.shape == (2, 4)
        assert net.kind() == "static"         # static methods are left unwrapped
    assert not mx.util.is_np_array()          # the scope ended with each call


def test_name_manager_current_is_this_threads_manager_and_can_be_set():
    seen = {}

    def other_thread():
        with mx.name.Prefix("spawned_"):
            with pytest.warns(DeprecationWarning):
                seen["name"] = mx.name.NameManager.current.get(None, "hello")
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen["name"] == "spawned_hello0"
    manager = mx.name.NameManager()
    with pytest.warns(DeprecationWarning):
        previous = mx.name.NameManager.current
    mx.name.NameManager.current = manager
    try:
        assert mx.sym.relu(mx.sym.var("x")).name == "relu0"
        assert manager.get(None, "relu") == "relu1"   # the set manager named the node
    finally:
        mx.name.NameManager.current = previous


def test_an_optimizer_made_under_set_np_allows_np_arrays_and_updates_without_the_flag():
    assert mx.optimizer.SGD().allow_np_array is False
    with mx.util.np_array(True):
        assert mx.optimizer.SGD().allow_np_array is True
    optimizer = mx.optimizer.SGD(learning_rate=0.5)
    del optimizer.allow_np_array               # one pickled before the flag existed
    weight = mx.np.ones((2, 2))
    mx.optimizer.Updater(optimizer)(0, mx.np.ones((2, 2)), weight)
    assert np.allclose(weight.asnumpy(), 0.5)



# ------------------------------------------------------------- npop2: issue 32 §3, np ops
def test_a_parameter_used_through_dot_learns_its_deferred_shape_from_the_data():
    # MXNet's test_optimizer_with_np_ndarrays: w1 of shape (0, 100) used through x.dot(w1)
    class Regression(mx.gluon.HybridBlock):
        def __init__(self, use_np_dot):
            super().__init__()
            self.use_np_dot = use_np_dot
            with self.name_scope():
                self.w = self.params.get("w", shape=(0, 5), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.np.dot(x, w) if self.use_np_dot else x.dot(w)

    with mx.util.np_shape(True), mx.util.np_array(True):
        for use_np_dot in (False, True):
            net = Regression(use_np_dot)
            net.initialize(mx.init.Uniform())
            net.hybridize()
            x = mx.np.random.uniform(size=(4, 7))
            y = net(x)
            assert net.w.shape == (7, 5) and y.shape == (4, 5)
            np.testing.assert_allclose(y.asnumpy(), x.asnumpy() @ net.w.data().asnumpy(),
                                       rtol=1e-5)


def test_np_dot_fills_an_unknown_summed_dim_from_the_other_operand_legacy_dot_does_not():
    # MXNet: NumpyDotShape assigns the inputs' shapes, DotShape (1.x) only the output's
    with mx.util.np_shape(True):
        a, b = mx.sym.var("a").as_np_ndarray(), mx.sym.var("b").as_np_ndarray()
        for out in (a.dot(b), mx.sym.np.dot(a, b), mx.sym.np.tensordot(a, b, ([1], [0]))):
            args, outs, _ = out.infer_shape_partial(a=(3, -1), b=(4, 6))
            assert args == [(3, 4), (4, 6)] and outs == [(3, 6)]
        with pytest.raises(mx.base.MXNetError, match="differ in size"):
            a.dot(b).infer_shape_partial(a=(3, 5), b=(4, -1))
    args, _, _ = mx.sym.dot(mx.sym.var("a"), mx.sym.var("b")).infer_shape_partial(
        a=(3, 4), b=(0, 6))
    assert args[1] == (0, 6)             # still unknown (0), as in MXNet 1.x


class _Binary(mx.gluon.HybridBlock):
    def __init__(self, name):
        super().__init__()
        self.fn = name

    def hybrid_forward(self, F, a, b):
        return getattr(F.np, self.fn)(a, b)


@pytest.mark.parametrize("name, dtype", [
    ("mod", "float32"), ("remainder", "int32"), ("fmod", "float64"), ("lcm", "int32"),
    ("gcd", "int64"), ("bitwise_and", "int32"), ("bitwise_or", "int32"),
    ("bitwise_xor", "int32"), ("copysign", "float32"), ("arctan2", "float32"),
    ("hypot", "float32"), ("ldexp", "float32"), ("maximum", "float64"),
    ("less_equal", "float32"), ("not_equal", "int32")])
def test_np_binary_ufuncs_match_numpy_imperative_and_hybridized(name, dtype):
    rng = np.random.default_rng(3)
    a = rng.uniform(-9, 9, (3, 4)).astype(dtype)
    b = rng.uniform(1, 5, (4,)).astype(dtype) * np.where(np.arange(4) % 2, 1, -1).astype(dtype)
    # (NumPy's ldexp takes integer exponents only; MXNet's any: x1 * 2**x2)
    want = a * np.float32(2) ** b if name == "ldexp" else getattr(np, name)(a, b)
    with mx.util.np_array(True), mx.util.np_shape(True):
        net = _Binary(name)
        for hybridize in (False, True):
            if hybridize:
                net.hybridize()
            got = net(mx.np.array(a, dtype=dtype), mx.np.array(b, dtype=dtype))
            assert got.shape == want.shape
            np.testing.assert_allclose(got.asnumpy(), want.astype(got.dtype), rtol=1e-5)
        x1, x2 = mx.np.array(a, dtype=dtype), mx.np.array(b, dtype=dtype)
        fn = getattr(mx.np, name)
        with pytest.raises(NotImplementedError):
            fn(x1, x2, where=False)
        with pytest.raises(TypeError):
            fn(x1, x2, dtype="abcdefg")
        out = mx.np.zeros(want.shape, dtype=fn(x1, x2).dtype)
        assert fn(x1, x2, out=out) is out
        np.testing.assert_allclose(out.asnumpy(), want.astype(out.dtype), rtol=1e-5)


def test_np_bitwise_and_lcm_refuse_float_data():
    with mx.util.np_array(True):
        x = mx.np.ones((2,))
        with pytest.raises(mx.base.MXNetError, match="bitwise_and.*integer"):
            mx.np.bitwise_and(x, x)


@pytest.mark.parametrize("name", ["copysign", "arctan2", "hypot", "ldexp", "mod"])
def test_np_binary_ufunc_gradients_are_mxnets_formulas(name):
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0.5, 2, (2, 3)), rng.uniform(-2, -0.5, (3,))
    grads = {"copysign": lambda y: (np.where((a >= 0) == (b >= 0), 1.0, -1.0), 0 * y),
             "arctan2": lambda y: (b / (a * a + b * b), -a / (a * a + b * b)),
             "hypot": lambda y: (a / y, b / y),
             "ldexp": lambda y: (2.0 ** b + 0 * a, y * np.log(2.0)),
             "mod": lambda y: (np.ones_like(y), -np.floor(a / b))}[name]
    with mx.util.np_array(True), mx.util.np_shape(True):
        for hybridize in (False, True):
            net = _Binary(name)
            if hybridize:
                net.hybridize()
            x1, x2 = mx.np.array(a, dtype="float64"), mx.np.array(b, dtype="float64")
            x1.attach_grad()
            x2.attach_grad()
            with mx.autograd.record():
                y = net(x1, x2)
            y.backward()
            ga, gb = grads(y.asnumpy())
            np.testing.assert_allclose(x1.grad.asnumpy(), np.broadcast_to(ga, a.shape),
                                       rtol=1e-6)
            np.testing.assert_allclose(x2.grad.asnumpy(),
                                       np.broadcast_to(gb, (2, 3)).sum(axis=0), rtol=1e-6)


def test_mod_of_integers_has_a_zero_gradient_as_in_mxnet():
    # mshadow_op::mod_grad: 1 for floats, 0 for integer types (the legacy op too)
    a, b = mx.nd.array([[7, 8], [9, 3]], dtype="int32"), mx.nd.array([2, 5], dtype="int32")
    for x in (a, b):
        x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward()
    assert y.asnumpy().tolist() == [[1, 3], [1, 3]]
    assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()


@pytest.mark.parametrize("ltype, rtype", [("float32", "bool"), ("int8", "float16"),
                                          ("float16", "float64"), ("int8", "int32")])
@pytest.mark.parametrize("op", ["add", "multiply", "power", "mod", "greater"])
def test_a_traced_np_binary_op_promotes_operands_of_two_dtypes(op, ltype, rtype):
    rng = np.random.default_rng(7)
    a = rng.uniform(1, 3, (2, 3)).astype(ltype)
    b = rng.uniform(1, 3, (3,)).astype(rtype)
    with mx.util.np_array(True), mx.util.np_shape(True):
        x1, x2 = mx.np.array(a, dtype=ltype), mx.np.array(b, dtype=rtype)
        want = getattr(mx.np, op)(x1, x2)           # mx.np.ndarray's promotion
        net = _Binary(op)
        net.hybridize()
        got = net(x1, x2)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.asnumpy().astype(np.float64),
                               want.asnumpy().astype(np.float64), rtol=1e-3)
    np.testing.assert_allclose(got.asnumpy().astype(np.float64),
                               getattr(np, op)(a, b).astype(got.dtype).astype(np.float64),
                               rtol=1e-2)


@pytest.mark.parametrize("axes", [None, ()])
def test_a_zero_d_transpose_keeps_shape_traced_imperative_and_as_a_method(axes):
    class Transpose(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a):
            return F.np.transpose(a, axes)

    with mx.util.np_array(True), mx.util.np_shape(True):
        x = mx.np.array(2.5)
        x.attach_grad()
        net = Transpose()
        net.hybridize()
        with mx.autograd.record():
            y = net(x)
        y.backward()
        assert y.shape == () and float(y) == 2.5 and x.grad.shape == () and float(x.grad) == 1
        assert x.transpose(axes).shape == () and x.T.shape == ()
        m = mx.np.array(np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal(m.transpose(None).asnumpy(), np.arange(6.0).reshape(2, 3).T)


def test_npx_batch_norm_output_mean_var_gives_the_mean_and_inverse_std_it_used():
    rng = np.random.default_rng(11)
    data = rng.uniform(size=(4, 3, 5))
    with mx.util.np_array(True), mx.util.np_shape(True):
        x = mx.np.array(data, dtype="float64")
        gamma, beta = mx.np.ones((5,), dtype="float64"), mx.np.zeros((5,), dtype="float64")
        mean, var = mx.np.zeros((5,), dtype="float64"), mx.np.ones((5,), dtype="float64")
        with mx.autograd.record():          # training: the batch's statistics
            out, m, inv_std = mx.npx.batch_norm(x, gamma, beta, mean, var, eps=1e-5,
                                                fix_gamma=False, axis=2,
                                                output_mean_var=True)
        want_m, want_v = data.mean(axis=(0, 1)), data.var(axis=(0, 1))
        np.testing.assert_allclose(m.asnumpy(), want_m, rtol=1e-10)
        np.testing.assert_allclose(inv_std.asnumpy(), 1 / np.sqrt(want_v + 1e-5), rtol=1e-10)
        np.testing.assert_allclose(out.asnumpy(), (data - want_m) / np.sqrt(want_v + 1e-5),
                                   rtol=1e-8)
        np.testing.assert_allclose(mean.asnumpy(), 0.1 * want_m, rtol=1e-10)  # updated
        out, m, inv_std = mx.npx.batch_norm(x, gamma, beta, mean, var, eps=1e-5, axis=2,
                                            output_mean_var=True)     # the running ones
        np.testing.assert_allclose(m.asnumpy(), mean.asnumpy())
        np.testing.assert_allclose(inv_std.asnumpy(), 1 / np.sqrt(var.asnumpy() + 1e-5))
        assert mx.npx.batch_norm(x, gamma, beta, mean, var, axis=2).shape == (4, 3, 5)


@pytest.mark.parametrize("shape, ord_, axis", [
    ((2, 3, 4), 2, (1, 2)), ((2, 3, 4), "inf", 1), ((2, 3, 4), "-inf", (1, 0)),
    ((3, 2, 3), "nuc", (1, 2)), ((2, 3), -1, None), ((2, 3, 4), -3.2, 2),
    ((2, 3, 4), 4, 1), ((2, 3), "fro", None), ((4, 3), 1, None), ((5,), 0, None)])
def test_np_linalg_norm_computes_numpys_orders_traced_and_imperative(shape, ord_, axis):
    rng = np.random.default_rng(13)
    data = rng.uniform(-3, 3, shape)
    np_ord = {"inf": np.inf, "-inf": -np.inf}.get(ord_, ord_)

    class Norm(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.linalg.norm(x, ord=ord_, axis=axis, keepdims=True)

    want = np.linalg.norm(data, np_ord, axis, keepdims=True)
    with mx.util.np_array(True), mx.util.np_shape(True):
        for hybridize in (False, True):
            net = Norm()
            if hybridize:
                net.hybridize()
            x = mx.np.array(data, dtype="float64")
            x.attach_grad()
            with mx.autograd.record():
                y = net(x)
            y.backward()
            assert y.shape == want.shape
            np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10)
            # the gradient against central differences of NumPy's norm
            eps, fd = 1e-6, np.zeros_like(data)
            for k in np.ndindex(*shape):
                step = np.zeros_like(data)
                step[k] = eps
                fd[k] = (np.linalg.norm(data + step, np_ord, axis).sum() -
                         np.linalg.norm(data - step, np_ord, axis).sum()) / (2 * eps)
            np.testing.assert_allclose(x.grad.asnumpy(), fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("a_shape, b_shape, axes", [
    ((), (), None), ((), (1, 1, 1), None), ((1, 1, 1), (), (0, 1, 2)),
    ((1, 1, 1), (1, 1, 1), (2, 0, 1)), ((2, 3, 6), (6,), (0, 1)),
    ((2, 3, 3, 4, 2), (3, 4), (0, 2, 4))])
def test_np_linalg_tensorsolve_takes_axes_and_zero_d_operands_as_numpy(a_shape, b_shape, axes):
    rng = np.random.default_rng(17)
    n = int(np.prod(b_shape))
    moved = [k % len(a_shape) for k in axes] if axes else []
    order = [k for k in range(len(a_shape)) if k not in moved] + moved
    m = np.eye(n) * 2 + rng.uniform(-0.3, 0.3, (n, n))
    a = np.transpose(m.reshape(tuple(a_shape[k] for k in order)), np.argsort(order)) \
        if a_shape else m.reshape(())
    b = rng.uniform(-1, 1, b_shape)
    want = np.linalg.tensorsolve(a, b, axes=axes)

    class Solve(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.np.linalg.tensorsolve(a, b, axes=axes)

    with mx.util.np_array(True), mx.util.np_shape(True):
        for hybridize in (False, True):
            net = Solve()
            if hybridize:
                net.hybridize()
            xa, xb = mx.np.array(a, dtype="float64"), mx.np.array(b, dtype="float64")
            xa.attach_grad()
            xb.attach_grad()
            with mx.autograd.record():
                x = net(xa, xb)
            x.backward()
            assert x.shape == want.shape
            np.testing.assert_allclose(x.asnumpy(), want, rtol=1e-10)
            # d sum(x) / d b = sum over x of (a as a matrix)^-1's rows
            am = np.transpose(a, order).reshape(n, n) if a_shape else a.reshape(1, 1)
            inv = np.linalg.inv(am)
            np.testing.assert_allclose(xb.grad.asnumpy().reshape(-1), inv.sum(axis=0),
                                       rtol=1e-8)


@pytest.mark.parametrize("dshape, mshape, start_axis", [
    ((3, 4), (3, 4), 0), ((), (), 0), ((2, 3, 4, 5), (3, 4), 1), ((2, 3, 4), (4,), 2)])
def test_np_internal_boolean_mask_assign_writes_into_out_as_numpy_indexing(dshape, mshape,
                                                                          start_axis):
    rng = np.random.default_rng(19)
    data = rng.uniform(size=dshape)
    mask = rng.uniform(size=mshape) < 0.6
    key = (slice(None),) * start_axis + (mask,)
    picked = data[key].shape
    value = rng.uniform(size=picked)
    with mx.util.np_array(True), mx.util.np_shape(True):
        for fn, val in ((mx.np._internal.boolean_mask_assign_scalar, 42.0),
                        (mx.np._internal.boolean_mask_assign_tensor, value)):
            want = data.copy()
            want[key] = val
            x = mx.np.array(data, dtype="float64")
            m = mx.np.array(mask, dtype="bool")
            v = val if isinstance(val, float) else mx.np.array(val, dtype="float64")
            assert fn(x, m, v, start_axis=start_axis, out=x) is x
            np.testing.assert_array_equal(x.asnumpy(), want)
            x = mx.np.array(data, dtype="float64")
            y = fn(x, m, v, start_axis=start_axis)          # no out: a new array
            np.testing.assert_array_equal(y.asnumpy(), want)
            np.testing.assert_array_equal(x.asnumpy(), data)
            x[(slice(None),) * start_axis + (m,)] = v        # __setitem__, a 0-d mask too
            np.testing.assert_array_equal(x.asnumpy(), want)


@pytest.mark.parametrize("hybridize", [False, True])
def test_np_random_choice_takes_weights_that_sum_to_one_up_to_their_rounding(hybridize):
    # float32 weights stored as float64 (MXNet's test does np.array(dirichlet).astype)
    # miss 1 by ~1e-7, beyond NumPy's float64 check; MXNet samples from them
    w = np.full(10, 0.1, np.float32).astype(np.float64) * (1 + 3e-7)
    assert abs(w.sum() - 1) > 1.5e-8

    class Weighted(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, p):
            return F.np.random.choice(a, 5, True, p)

    with mx.util.np_array(True), mx.util.np_shape(True):
        net = Weighted()
        if hybridize:
            net.hybridize()
        picked = net(mx.np.arange(10), mx.np.array(w, dtype="float64"))
        assert picked.shape == (5,) and set(picked.asnumpy().tolist()) <= set(range(10))
        with pytest.raises((ValueError, mx.base.MXNetError)):   # far from 1: refused
            mx.np.random.choice(mx.np.arange(3), 2, True, mx.np.array([0.5, 0.6, 0.2]))


def test_promotion_nodes_of_one_dtype_leave_a_traced_np_expression_one_fused_loop():
    class Expr(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.np.tanh(a * b + a) - b

    with mx.util.np_array(True), mx.util.np_shape(True):
        net = Expr()
        net.hybridize()
        a, b = mx.np.ones((4, 5)), mx.np.ones((4, 5)) * 2
        np.testing.assert_allclose(net(a, b).asnumpy(), np.tanh(3.0) - 2, rtol=1e-6)
        plan = str(net.compiled["fused"])
    assert "(1 loops, 0 kernels, 0 views)" in plan, plan
