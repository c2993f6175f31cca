"""Parameter, ParameterDict and Block: registration, names, initialisation, saving, hooks,
summary. (Tracing and compiling are in test_hybridize.py; layers in test_gluon_layers.py.)"""
import os
import re
import warnings

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, initializer, nd
from straightdope import gluon
from straightdope.gluon import (Block, Constant, DeferredInitializationError, HybridBlock,
                                Parameter, ParameterDict, nn, utils)
from straightdope.serialization import ArrayFileError, load_arrays


def fresh_names():
    """A new name counter, so blocks created inside get dense0, dense1, ..."""
    return mx.name.NameManager()


class MLP(Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense1 = nn.Dense(5, activation="relu")
        self.dense2 = nn.Dense(25, activation="relu")
        self.dense3 = nn.Dense(2)

    def forward(self, x):
        return self.dense3(self.dense2(self.dense1(x)))


# ----------------------------------------------------------------- Parameter
def test_parameter_deferred_initialization_step_by_step():
    w = Parameter("weight", shape=(5, 0), allow_deferred_init=True)
    assert w.shape == (5, -1)                      # 1.x's 0 and 2.0's -1 both mean "unknown"
    assert repr(w) == "Parameter weight (shape=(5, -1), dtype=float32)"
    w.initialize()
    with pytest.raises(DeferredInitializationError) as err:
        w.data()
    message = str(err.value)
    assert "'weight'" in message and "(5, -1)" in message
    assert "forward pass" in message and "in_units" in message
    w.shape = (5, 3)
    w._finish_deferred_init()
    assert w.data().shape == (5, 3) and w.grad().shape == (5, 3)
    assert np.abs(w.data().asnumpy()).max() <= 0.07          # default Uniform(0.07)


def test_parameter_errors_say_what_to_do():
    p = Parameter("w", shape=(2, 3))
    with pytest.raises(RuntimeError, match="'w' has not been initialized.*initialize"):
        p.data()
    with pytest.raises(ValueError, match="incomplete.*allow_deferred_init"):
        Parameter("v", shape=(2, -1)).initialize()
    with pytest.raises(ValueError, match="grad_req must be one of"):
        Parameter("u", grad_req="sometimes")
    q = Parameter("q", shape=(4, -1))
    with pytest.raises(ValueError, match=r"\(4, -1\).*cannot become \(5, 3\)"):
        q.shape = (5, 3)
    frozen = Parameter("f", shape=(2,), grad_req="null")
    frozen.initialize()
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        frozen.grad()
    p.initialize()
    with pytest.warns(UserWarning, match="already initialized.*force_reinit"):
        p.initialize()


def test_parameter_initializer_precedence():
    w = Parameter("layer_weight", shape=(3, 2), init=initializer.Constant(3.0))
    w.initialize(default_init=initializer.One())        # its own init wins
    np.testing.assert_array_equal(w.data().asnumpy(), np.full((3, 2), 3.0))
    b = Parameter("layer_bias", shape=(3,))
    b.initialize(default_init=initializer.Uniform(1.0))  # the network-wide rule: bias -> 0
    np.testing.assert_array_equal(b.data().asnumpy(), np.zeros(3))
    c = Parameter("layer_bias2", shape=(3,), init="ones")
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), np.ones(3))
    w.initialize(init=initializer.Constant(-1.0), force_reinit=True)
    np.testing.assert_array_equal(w.data().asnumpy(), np.full((3, 2), -1.0))


def test_parameter_set_data_zero_grad_cast_and_var():
    p = Parameter("p", shape=(2, 2))
    p.initialize()
    array = p.data()
    p.set_data(nd.array([[1, 2], [3, 4]]))
    assert p.data() is array                            # in place: graphs keep reading it
    np.testing.assert_array_equal(array.asnumpy(), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"shape \(2, 2\).*\(3,\)"):
        p.set_data(np.zeros(3))
    p.grad()[:] = 5
    p.zero_grad()
    assert p.grad().asnumpy().sum() == 0
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    v = p.var()
    assert v.name == "p" and v.attr("__shape__") == "(2, 2)" and v.attr("__dtype__") == "float64"
    late = Parameter("late", shape=(3, -1), allow_deferred_init=True)
    late.set_data(np.ones((3, 4)))                       # data also completes the shape
    assert late.shape == (3, 4) and late.data().shape == (3, 4)


def test_parameters_get_gradients_from_autograd():
    p = Parameter("w", shape=(3,))
    p.initialize(init=initializer.Constant(2.0))
    x = nd.array([1.0, 2.0, 3.0])
    with autograd.record():
        y = (p.data() * x).sum()
    y.backward()
    np.testing.assert_allclose(p.grad().asnumpy(), [1, 2, 3])
    p.grad_req = "add"
    for _ in range(2):
        with autograd.record():
            y = (p.data() * x).sum()
        y.backward()
    np.testing.assert_allclose(p.grad().asnumpy(), [2, 4, 6])   # fresh 'add' grad: 0 + 2x
    p.grad_req = "null"
    with pytest.raises(RuntimeError):
        p.grad()


def test_constant_never_trains():
    c = Constant([1.0, 2.0])
    assert c.grad_req == "null" and c.shape == (2,)
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [1, 2])
    c.grad_req = "write"                       # not differentiable: stays 'null'
    assert c.grad_req == "null"
    named = Constant("scale", np.eye(2))       # the 1.x spelling
    assert named.name == "scale" and named.shape == (2, 2)
    assert named.dtype == np.float32               # as nd.array(np.eye(2)): float32
    assert Constant(nd.array([1, 2], dtype="float64")).dtype == np.float64

    class Scale(HybridBlock):
        def __init__(self):
            super().__init__()
            self.scale = Constant("scale", [[3.0]])

        def hybrid_forward(self, F, x, scale):
            return F.broadcast_mul(x, scale)

    net = Scale()
    net.initialize()
    np.testing.assert_allclose(net(nd.ones((2, 1))).asnumpy(), [[3], [3]])
    net.hybridize(executor="numpy")
    np.testing.assert_allclose(net(nd.ones((2, 1))).asnumpy(), [[3], [3]])


# -------------------------------------------------------------- ParameterDict
def test_parameter_dict_get_share_repr_and_update():
    d = ParameterDict("net_")
    w = d.get("weight", shape=(2, 3))
    assert w.name == "net_weight" and d.get("weight") is w and "net_weight" in d
    shared = ParameterDict("net_", shared=d)
    assert shared.get("weight", shape=(2, 0)) is w          # found in `shared`
    with pytest.raises(ValueError, match="shape"):
        shared.get("weight", shape=(4, 3))
    d.get("bias", shape=(2,))
    assert repr(d) == ("net_ (\n  Parameter net_weight (shape=(2, 3), dtype=float32)\n"
                       "  Parameter net_bias (shape=(2,), dtype=float32)\n)")
    other = ParameterDict()
    other._add(Parameter("net_weight"))
    with pytest.raises(ValueError, match="two different Parameters are both named 'net_weight'"):
        d.update(other)
    assert d.get_constant("c", [1.0]).grad_req == "null"


def test_parameter_dict_initialize_setattr_and_save_load(tmp_path):
    d = ParameterDict("m_")
    d.get("weight", shape=(2, 3))
    d.get("bias", shape=(2,))
    d.initialize(initializer.Xavier())
    d.setattr("grad_req", "null")
    assert all(p.grad_req == "null" for p in d.values())
    d.setattr("lr_mult", 0.5)
    assert d["m_weight"].lr_mult == 0.5
    fname = str(tmp_path / "d.params")
    d.save(fname, strip_prefix="m_")
    assert sorted(load_arrays(fname)) == ["bias", "weight"]
    e = ParameterDict("m_")
    e.get("weight", shape=(2, 0), allow_deferred_init=True)
    e.get("bias", shape=(2,), allow_deferred_init=True)
    e.load(fname, restore_prefix="m_")
    np.testing.assert_array_equal(e["m_weight"].data().asnumpy(), d["m_weight"].data().asnumpy())
    with pytest.raises(ValueError, match="does not start with"):
        d.save(fname, strip_prefix="x_")


# ------------------------------------------------------------- names, registry
def test_block_names_follow_mxnet_1x():
    with fresh_names():
        a, b = nn.Dense(3), nn.Dense(3)
        assert (a.prefix, a.name, b.name) == ("dense0_", "dense0", "dense1")
        assert a.weight.name == "dense0_weight" and a.bias.name == "dense0_bias"
        seq = nn.HybridSequential()
        with seq.name_scope():
            seq.add(nn.Dense(4, activation="relu"), nn.Dense(2))
        assert seq.name == "hybridsequential0"
        assert [c.name for c in seq._children.values()] == ["hybridsequential0_dense0",
                                                            "hybridsequential0_dense1"]
        assert seq[0].act.prefix == "hybridsequential0_dense0_relu_"
        other = nn.HybridSequential()
        with other.name_scope():
            other.add(nn.Dense(2))                 # the counter is per parent
        assert other[0].name == "hybridsequential1_dense0"
        assert nn.Dense(1, prefix="head_").weight.name == "head_weight"
        assert nn.Activation("tanh").name == "tanh0"


def test_attribute_parameters_are_registered_and_prefixed():
    class Custom(Block):
        def __init__(self):
            super().__init__()
            self.weight = Parameter("weight", shape=(2, 2))
            self.other = Parameter("weight", shape=(3,))     # same name: falls back to attr
            self.inner = nn.Dense(2, in_units=2)

        def forward(self, x):
            return self.inner(nd.dot(x, self.weight.data()))

    with fresh_names():
        net = Custom()
    assert net.weight.name == "custom0_weight" and net.other.name == "custom0_other"
    assert list(net.params.keys()) == ["custom0_weight", "custom0_other"]
    assert list(net.collect_params().keys()) == ["custom0_weight", "custom0_other",
                                                 "dense0_weight", "dense0_bias"]
    assert list(net.collect_params(".*weight").keys()) == ["custom0_weight", "dense0_weight"]
    assert list(net._collect_params_with_prefix()) == ["weight", "other", "inner.weight",
                                                       "inner.bias"]
    net.initialize()
    assert net(nd.ones((1, 2))).shape == (1, 2)


def test_block_repr_like_mxnet():
    net = MLP()
    assert repr(net) == ("MLP(\n"
                         "  (dense1): Dense(-1 -> 5, Activation(relu))\n"
                         "  (dense2): Dense(-1 -> 25, Activation(relu))\n"
                         "  (dense3): Dense(-1 -> 2, linear)\n)")
    net.initialize()
    net(nd.ones((2, 3)))
    assert "(dense1): Dense(3 -> 5, Activation(relu))" in repr(net)
    seq = nn.Sequential()
    seq.add(nn.Dense(2), MLP())
    assert repr(seq).startswith("Sequential(\n  (0): Dense(-1 -> 2, linear)\n  (1): MLP(\n"
                                "    (dense1)")


def test_registration_errors_are_explained():
    class Plain(Block):
        def forward(self, x):
            return x

    class Hybrid(HybridBlock):
        def __init__(self):
            super().__init__()
            self.inner = Plain()

    with pytest.raises(ValueError, match="'inner' is a Plain, a plain Block.*HybridBlock.*"
                                         "nn.Sequential"):
        Hybrid()
    with pytest.raises(ValueError, match="plain Block"):
        nn.HybridSequential().add(Plain())

    class Early(Block):
        def __init__(self):
            self.dense = nn.Dense(2)
            super().__init__()

    with pytest.raises(RuntimeError, match=r"super\(\).__init__\(\)"):
        Early()

    class Hidden(Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2), nn.Dense(3)]

    with pytest.warns(UserWarning, match="Hidden.layers.*unregistered container"):
        Hidden().collect_params()


def test_hooks_apply_cast_and_recursive_hybridize():
    net = MLP()
    net.initialize()
    seen = []
    pre = net.dense1.register_forward_pre_hook(lambda b, args: seen.append(("pre", b.name)))
    post = net.dense1.register_forward_hook(
        lambda b, args, out: seen.append(("post", args[0].shape, out.shape)))
    net(nd.ones((4, 3)))
    assert seen == [("pre", net.dense1.name), ("post", (4, 3), (4, 5))]
    pre.detach()
    post.detach()
    net(nd.ones((4, 3)))
    assert len(seen) == 2
    with net.dense2.register_forward_hook(lambda *a: seen.append("ctx")):
        net(nd.ones((1, 3)))
    net(nd.ones((1, 3)))
    assert seen.count("ctx") == 1
    names = []
    net.apply(lambda b: names.append(type(b).__name__))
    assert names[-1] == "MLP" and names.count("Dense") == 3
    net.cast("float64")
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())
    assert net(nd.ones((1, 3), dtype="float64")).dtype == np.float64
    net.hybridize(executor="numpy")         # a plain Block hybridizes its HybridBlock children
    assert net.dense1._active and net.dense3._active
    assert net(nd.ones((2, 3), dtype="float64")).shape == (2, 2)
    assert net.dense1._cached_op is not None


def test_sequential_containers():
    net = nn.Sequential()
    net.add(nn.Dense(5, in_units=3, activation="relu"), nn.Dense(25, activation="relu"),
            nn.Dense(2))
    assert len(net) == 3 and isinstance(net[1], nn.Dense)
    head = net[1:]
    assert type(head) is nn.Sequential and len(head) == 2 and head[0] is net[1]
    net.initialize()
    assert net(nd.ones((4, 3))).shape == (4, 2)
    with pytest.warns(UserWarning, match="All children of this Sequential layer .* are "
                                         "HybridBlocks. Consider using HybridSequential"):
        net.hybridize(executor="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # once per container
        net.hybridize(executor="numpy")
    mixed = nn.Sequential()
    mixed.add(nn.Dense(2), nn.Lambda(lambda x: x * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mixed.hybridize()
    hs = nn.HybridSequential()
    hs.add(nn.Dense(3), nn.Dense(1))
    assert type(hs[:1]) is nn.HybridSequential and len(hs) == 2


# ------------------------------------------------------------- save and load
def test_save_load_parameters_round_trip(tmp_path):
    fname = str(tmp_path / "mlp.params")
    net = MLP()
    net.initialize()
    x = nd.random.uniform(shape=(2, 3))
    y = net(x)
    net.save_parameters(fname)
    assert sorted(load_arrays(fname)) == sorted(
        f"{layer}.{p}" for layer in ("dense1", "dense2", "dense3") for p in ("weight", "bias"))
    fresh = MLP()                  # other names (dense3_...), same structure; shapes deferred
    fresh.load_parameters(fname)
    assert fresh.dense1.weight.shape == (5, 3)
    np.testing.assert_allclose(fresh(x).asnumpy(), y.asnumpy(), rtol=1e-6)
    with open(fname, "rb") as f:
        assert not b"pickle" in f.read(200)
    with pytest.raises(DeferredInitializationError, match="save_parameters"):
        unfinished = MLP()
        unfinished.initialize()
        unfinished.save_parameters(str(tmp_path / "nope.params"))


def test_load_parameters_explains_mismatches(tmp_path):
    fname = str(tmp_path / "d.params")
    small = nn.Dense(5, in_units=3)
    small.initialize()
    small.save_parameters(fname)
    wider = nn.Dense(5, in_units=4)
    with pytest.raises(ValueError) as err:
        wider.load_parameters(fname)
    message = str(err.value)
    assert "weight" in message and "(5, 4)" in message and "(5, 3)" in message
    assert "rebuild the network" in message and "allow_missing" in message

    net = nn.HybridSequential()
    net.add(nn.Dense(5, in_units=3), nn.Dense(2, in_units=5))
    with pytest.raises(ValueError, match=r"'1.weight', '1.bias'.*missing.*allow_missing=True"):
        net.load_parameters(fname)            # keys 'weight', 'bias' vs '0.weight', ...
    net.initialize()
    other = str(tmp_path / "net.params")
    net.save_parameters(other)
    single = nn.HybridSequential()
    single.add(nn.Dense(5, in_units=3))
    with pytest.raises(ValueError, match=r"\['1.weight', '1.bias'\].*ignore_extra=True"):
        single.load_parameters(other)
    single.load_parameters(other, ignore_extra=True)
    np.testing.assert_array_equal(single[0].weight.data().asnumpy(),
                                  net[0].weight.data().asnumpy())
    bigger = nn.HybridSequential()
    bigger.add(nn.Dense(5, in_units=3), nn.Dense(2, in_units=5), nn.Dense(1, in_units=2))
    bigger.initialize()
    before = bigger[2].weight.data().asnumpy()
    bigger.load_parameters(other, allow_missing=True)
    np.testing.assert_array_equal(bigger[2].weight.data().asnumpy(), before)
    double = nn.Dense(5, in_units=3, dtype="float64")
    with pytest.raises(ValueError, match="float64.*float32.*cast_dtype=True"):
        double.load_parameters(fname)
    double.load_parameters(fname, cast_dtype=True)
    assert double.weight.data().dtype == np.float64


def test_garbled_and_truncated_params_files(tmp_path):
    good = str(tmp_path / "good.params")
    layer = nn.Dense(2, in_units=2)
    layer.initialize()
    layer.save_parameters(good)
    data = open(good, "rb").read()
    truncated = tmp_path / "truncated.params"
    truncated.write_bytes(data[: len(data) // 2])
    garbled = tmp_path / "garbled.params"
    garbled.write_bytes(b"\x00not an archive at all" * 10)
    for path in (truncated, garbled):
        with pytest.raises(ArrayFileError, match=path.name):
            nn.Dense(2, in_units=2).load_parameters(str(path))
    with pytest.raises(FileNotFoundError):
        layer.load_parameters(str(tmp_path / "missing.params"))


def test_shared_parameters_save_deduplicated_and_load(tmp_path):
    class Tied(HybridBlock):
        def __init__(self):
            super().__init__()
            self.a = nn.Dense(3, in_units=3)
            self.b = nn.Dense(3, in_units=3, params=self.a.params)

        def hybrid_forward(self, F, x):
            return self.b(F.relu(self.a(x)))

    net = Tied()
    assert net.b.weight is net.a.weight and len(net.collect_params()) == 2
    net.initialize()
    fname = str(tmp_path / "tied.params")
    net.save_parameters(fname, deduplicate=True)
    assert sorted(load_arrays(fname)) == ["a.bias", "a.weight"]
    again = Tied()
    again.load_parameters(fname)
    x = nd.random.uniform(shape=(2, 3))
    np.testing.assert_allclose(again(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)


def test_load_an_exported_params_file_by_name(tmp_path):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    net.hybridize(executor="numpy")
    x = nd.random.uniform(shape=(3, 6))
    y = net(x)
    _, params_file = net.export(str(tmp_path / "m"))
    net2 = nn.HybridSequential(prefix=net.prefix)       # same names as the exported graph
    with net2.name_scope():
        net2.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net2.load_parameters(params_file)
    np.testing.assert_allclose(net2(x).asnumpy(), y.asnumpy(), rtol=1e-6)


# ------------------------------------------------------------ deferred shapes
def test_deferred_init_in_plain_block_explains_the_fix():
    class Custom(Block):
        def __init__(self, out_units, in_units=0):
            super().__init__()
            self.weight = Parameter("weight", shape=(in_units, out_units),
                                    allow_deferred_init=True)

        def forward(self, x):
            return nd.dot(x, self.weight.data())

    net = Custom(3)
    net.initialize()
    with pytest.raises(DeferredInitializationError,
                       match=r"custom\d+_weight.*\(-1, 3\).*in_units"):
        net(nd.ones((2, 4)))
    ok = Custom(3, in_units=4)
    ok.initialize()
    assert ok(nd.ones((2, 4))).shape == (2, 3)

    class WithRule(Custom):
        def infer_shape(self, x):
            self.weight.shape = (x.shape[1], 3)

    ruled = WithRule(3)
    ruled.initialize()
    assert ruled(nd.ones((2, 4))).shape == (2, 3) and ruled.weight.shape == (4, 3)


def test_1x_custom_layer_shapes_inferred_from_the_graph():
    class MyDense(HybridBlock):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.weight = self.params.get("weight", shape=(units, 0),
                                              allow_deferred_init=True)
            self.units = units

        def hybrid_forward(self, F, x, weight):
            return F.FullyConnected(x, weight, num_hidden=self.units, no_bias=True)

    layer = MyDense(4)
    layer.initialize()
    assert layer(nd.ones((2, 7))).shape == (2, 4) and layer.weight.shape == (4, 7)

    class DotLayer(HybridBlock):
        def __init__(self):
            super().__init__()
            self.weight = self.params.get("weight", shape=(0, 3), allow_deferred_init=True)

        def hybrid_forward(self, F, x, weight):
            return F.dot(x, weight)      # dot cannot tell the weight's shape from x alone

    dot = DotLayer()
    dot.initialize()
    with pytest.raises(DeferredInitializationError,
                       match=r"could not infer the shape of Parameter '.*weight'.*\(-1, 3\)"
                             r".*infer_shape"):
        dot(nd.ones((2, 5)))


# -------------------------------------------------------------------- summary
def test_summary_table_and_hybridized_assertion(capsys):
    net = MLP()
    net.initialize()
    net.summary(nd.ones((2, 3)))
    out = capsys.readouterr().out
    assert "Layer (type)" in out and "Output Shape" in out and "Param #" in out
    assert re.search(r"Input\s+\(2, 3\)\s+0", out)
    assert re.search(r"Dense-2\s+\(2, 5\)\s+20", out)
    total = 3 * 5 + 5 + 5 * 25 + 25 + 25 * 2 + 2
    assert f"Total params: {total}" in out and f"Trainable params: {total}" in out
    assert "Non-trainable params: 0" in out
    assert all(not block._forward_hooks for block in
               [net, net.dense1, net.dense2, net.dense3])            # hooks removed
    bn = nn.HybridSequential()
    bn.add(nn.Dense(4), nn.BatchNorm())
    bn.initialize()
    bn.summary(nd.ones((3, 2)))
    out = capsys.readouterr().out
    assert "Non-trainable params: 8" in out                # running mean and variance
    bn.hybridize(executor="numpy")
    with pytest.raises(AssertionError, match=r"must not be hybridized.*before hybridize\(\)"):
        bn.summary(nd.ones((3, 2)))


# ---------------------------------------------------------------------- utils
def test_utils_split_clip_sha1_download(tmp_path):
    x = nd.array(np.arange(12).reshape(6, 2))
    parts = utils.split_data(x, 3)
    assert [p.shape for p in parts] == [(2, 2)] * 3
    assert [p.shape[0] for p in utils.split_data(x[:5], 2, even_split=False)] == [3, 2]
    with pytest.raises(ValueError, match="evenly"):
        utils.split_data(x[:5], 2)
    assert utils.split_and_load(x, [mx.cpu()])[0].shape == (6, 2)
    with pytest.raises(ValueError, match="CPU only"):
        utils.split_and_load(x, [mx.gpu(0)])
    a, b = nd.array([3.0, 0.0]), nd.array([0.0, 4.0])
    norm = utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(5.0)
    assert np.sqrt((a.asnumpy() ** 2).sum() + (b.asnumpy() ** 2).sum()) == pytest.approx(1.0)
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello")
    sha1 = "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
    assert utils.check_sha1(str(src), sha1)
    got = utils.download(src.as_uri(), path=str(tmp_path / "copy.bin"), sha1_hash=sha1)
    assert open(got, "rb").read() == b"hello"
    with pytest.raises(ValueError, match="SHA-1 does not match"):
        utils.download(src.as_uri(), path=str(tmp_path / "bad.bin"), sha1_hash="0" * 40)
    assert not os.path.exists(tmp_path / "bad.bin")


def test_gluon_namespace():
    assert gluon.nn.SymbolBlock is gluon.SymbolBlock
    assert gluon.metric is mx.metric
    from straightdope.gluon.contrib.nn import HybridConcurrent
    assert HybridConcurrent is nn.HybridConcurrent
    with pytest.raises(AttributeError):
        gluon.no_such_thing


def test_initializers_that_json_cannot_hold_still_trace():
    layer = nn.Dense(2, in_units=2, weight_initializer=initializer.Constant(np.eye(2)))
    layer.initialize()
    layer.hybridize(executor="numpy")
    np.testing.assert_array_equal(layer(nd.ones((1, 2))).asnumpy(), [[1, 1]])
    assert "__init__" not in layer.weight.var().list_attr()      # dropped, not a crash
    named = nn.Dense(2, in_units=2, weight_initializer="xavier")
    assert named.weight.var().attr("__init__") == "xavier"


def _recorded_mlp_call(inline_limit):
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(3))   # 3 ops
    net.initialize()
    x = nd.array(np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32))
    net.hybridize(inline_limit=inline_limit)
    with autograd.record():
        y = net(x) * 2
    return net, x, y


def test_get_symbol_inlines_a_hybridized_block_up_to_inline_limit_ops_else_shows_one_node():
    import json
    ops = {}
    for limit in (3, 2, 0):
        _, _, y = _recorded_mlp_call(limit)
        ops[limit] = [n["op"] for n in json.loads(autograd.get_symbol(y).tojson())["nodes"]
                      if n["op"] != "null"]
    assert ops[3] == ["FullyConnected", "Activation", "FullyConnected", "_mul_scalar"]
    assert ops[2] == ops[0] == ["_CachedOp", "_mul_scalar"]      # 3 ops > the limit


def test_the_symbol_of_a_recorded_hybridized_call_gives_its_values_and_gradients():
    net, x, y = _recorded_mlp_call(0)
    graph = autograd.get_symbol(y)
    arrays = [x] + [p.data() for p in net.collect_params().values()]
    names = graph.list_inputs()
    assert names == ["var0", "var1", "var2", "var3", "var4"]
    assert graph.infer_shape(var0=(2, 5))[1] == [(2, 3)]
    executor = graph.bind(mx.cpu(), dict(zip(names, arrays)),
                          args_grad={n: nd.zeros(a.shape) for n, a in zip(names, arrays)})
    out = executor.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-6)
    executor.backward(nd.ones(out.shape))
    y.backward()
    first_weight = net[0].weight
    np.testing.assert_allclose(executor.grad_dict["var1"].asnumpy(),
                               first_weight.grad().asnumpy(), rtol=1e-5, atol=1e-6)
    again = mx.sym.load_json(graph.tojson())         # the subgraph travels in the JSON
    np.testing.assert_allclose(again.eval(**dict(zip(names, arrays)))[0].asnumpy(),
                               y.asnumpy(), rtol=1e-6)


def test_under_set_np_a_hybridized_net_returns_what_it_returns_imperatively():
    # MXNet's Parameter.var() is an np Symbol under set_np(): an op traced on a legacy
    # input and np parameters is an np op, as the imperative op on them is (seed 003)
    from straightdope import npx
    npx.set_np()
    try:
        net = mx.gluon.nn.Dense(2)
        net.initialize()
        x = mx.nd.ones((1, 5))
        imperative = net(x)
        net.hybridize()
        hybridized = net(x)
    finally:
        npx.reset_np()
    assert type(imperative) is type(hybridized) is mx.np.ndarray
    assert str(imperative) == str(hybridized)
