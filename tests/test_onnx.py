"""ONNX export and import, checked against ONNX Runtime (the engine behind ONNX's C++,
Java, C#, mobile and web deployments).

Every check runs the same input through our network and through ONNX Runtime and asks
for equal outputs (rtol 1e-4, float32) at two batch sizes of one exported file (dynamic
batch axis); the file must pass `onnx.checker`, and importing it back must give a
SymbolBlock that computes the same.
"""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import straightdope as mx  # noqa: E402
from straightdope import gluon, nd, sym  # noqa: E402
from straightdope import onnx as sdonnx  # noqa: E402
from straightdope.gluon import nn  # noqa: E402
from straightdope.gluon.model_zoo import vision  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def export(net, shape, tmp_path, name="net", dynamic=True, executor=None):
    """Hybridize, run once, export() to files, then export_model from those files."""
    net.hybridize(executor=executor)
    net(nd.array(np.zeros(shape, dtype="float32")))
    sym_file, params_file = net.export(str(tmp_path / name))
    dyn = [(None,) + tuple(shape[1:])] if dynamic else None
    return sdonnx.export_model(sym_file, params_file, [shape], np.float32,
                               str(tmp_path / f"{name}.onnx"), dynamic=dynamic,
                               dynamic_input_shapes=dyn)


def assert_same_as_ort(net, shape, tmp_path, batches=(1, 3), seed=0, executor=None):
    """Our outputs == ONNX Runtime's, at two batch sizes; the imported copy agrees too.
    executor='numpy' (the reference executor) skips Numba compiles in the quick tests."""
    path = export(net, shape, tmp_path, executor=executor)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = session(path)
    back = sdonnx.import_model(path)
    back.hybridize(executor=executor)
    rng = np.random.default_rng(seed)
    for batch in batches:
        x = rng.normal(size=(batch,) + tuple(shape[1:])).astype("float32")
        ours = net(nd.array(x)).asnumpy()
        theirs = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        assert theirs.shape == ours.shape
        np.testing.assert_allclose(theirs, ours, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(back(nd.array(x)).asnumpy(), ours, rtol=RTOL, atol=ATOL)
    return path


@pytest.mark.parametrize("name, shape", [("mlp", (2, 1, 28, 28)), ("lenet", (2, 1, 28, 28))])
def test_mlp_and_lenet_equal_onnx_runtime_at_two_batch_sizes(name, shape, tmp_path):
    mx.random.seed(0)
    net = vision.get_model(name)
    net.initialize(mx.init.Xavier())
    assert_same_as_ort(net, shape, tmp_path)


ZOO = sorted(vision._models)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ZOO if n.startswith("resnet")])
def test_every_model_zoo_resnet_equals_onnx_runtime(name, tmp_path):
    mx.random.seed(0)
    net = vision.get_model(name, classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 3, 16, 16)))                    # every parameter learns its shape
    # Non-trivial running statistics, so that BatchNorm's inference formula is exercised.
    for key, param in net.collect_params().items():
        if key.endswith("running_var"):
            param.set_data(nd.array(np.random.default_rng(1).uniform(0.5, 2, param.shape)))
        elif key.endswith("running_mean"):
            param.set_data(nd.array(np.random.default_rng(2).normal(0, 0.1, param.shape)))
    assert_same_as_ort(net, (2, 3, 16, 16), tmp_path, executor="numpy")


def test_the_model_zoo_list_is_the_one_checked_here():
    # A new zoo model must be added to the checks above (mlp and lenet, or a resnet), or
    # belong to a family test_model_zoo_families.py exports (one model per family).
    families = ("resnet", "alexnet", "densenet", "inceptionv3", "mobilenet", "squeezenet",
                "vgg")
    assert set(ZOO) - {"mlp", "lenet"} == {n for n in ZOO if n.startswith(families)}


def _digits_lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=3, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(16, kernel_size=3, activation="relu"), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="relu"), nn.Dense(84, activation="relu"), nn.Dense(10))
    return net


@pytest.mark.slow
def test_a_lenet_trained_on_digits_gives_the_same_predictions_in_onnx_runtime(tmp_path):
    """The book's trained model (chapters 26 and 30): LeNet on Digits (28x28), one epoch."""
    from straightdope.gluon.data import DataLoader
    from straightdope.gluon.data.vision import Digits, transforms
    mx.random.seed(0)
    np.random.seed(0)
    to_tensor = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.31, 0.33)])
    train = DataLoader(Digits(train=True).transform_first(to_tensor), batch_size=32,
                       shuffle=True)
    net = _digits_lenet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.002})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in train:
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    path = assert_same_as_ort(net, (1, 1, 28, 28), tmp_path, batches=(1, 64))
    test = DataLoader(Digits(train=False).transform_first(to_tensor), batch_size=200)
    test_x, labels = (a.asnumpy() for a in next(iter(test)))
    sess = session(path)
    theirs = sess.run(None, {sess.get_inputs()[0].name: test_x})[0].argmax(axis=1)
    ours = net(nd.array(test_x)).asnumpy().argmax(axis=1)
    assert (theirs == ours).all()
    assert (ours == labels).mean() > 0.8        # it did learn: the check is not on noise


class Layers(gluon.HybridBlock):
    """One block that uses every layer and op family the exporter claims to cover."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv = nn.Conv2D(8, kernel_size=3, padding=2, dilation=2, groups=2,
                                  in_channels=4)
            self.bn = nn.BatchNorm(in_channels=8, scale=True)
            self.bn_fixed = nn.BatchNorm(in_channels=8, scale=False)
            self.pools = [nn.MaxPool2D(3, 2, ceil_mode=True), nn.AvgPool2D(2, 1, padding=1),
                          nn.AvgPool2D(2, 2, count_include_pad=False, padding=1)]
            self.glob = nn.GlobalMaxPool2D()
            self.acts = [nn.LeakyReLU(0.1), nn.ELU(0.7), nn.SELU(), nn.GELU(), nn.Swish(),
                         nn.Activation("tanh"), nn.Activation("softrelu"),
                         nn.Activation("softsign"), nn.Activation("sigmoid")]
            self.dense3d = nn.Dense(6, flatten=False, in_units=8)
            self.norm = nn.LayerNorm(in_channels=6)
            self.drop = nn.Dropout(0.5)
            self.embed = nn.Embedding(10, 4)
            self.out = nn.Dense(5)
            for k, block in enumerate(self.pools + self.acts):
                self.register_child(block, f"child{k}")

    def hybrid_forward(self, F, x):
        h = self.bn_fixed(self.bn(self.conv(x)))                          # (B, 8, 8, 8)
        pooled = [F.Flatten(p(h)) for p in self.pools] + [F.Flatten(self.glob(h))]
        for act in self.acts:
            h = act(h)
        t = F.transpose(F.reshape(h, shape=(0, 8, -1)), axes=(0, 2, 1))        # (B, 64, 8)
        t = self.drop(self.norm(self.dense3d(t)))                         # (B, 64, 6)
        t = F.slice_axis(t, axis=1, begin=2, end=-2) + F.slice(t, begin=(None, 1, 0),
                                                                  end=(None, 61, 6))
        ids = F.clip(F.abs(F.sum(t, axis=2) * 3), a_min=0, a_max=9)                  # indices 0..9
        emb = self.embed(ids)                                              # (B, 60, 4)
        parts = F.split(emb, num_outputs=2, axis=2)
        mixed = F.broadcast_mul(parts[0], F.exp(-F.square(parts[1]))) / 2 + 1
        pieces = pooled + [F.reshape(mixed, shape=(0, -3)),
                           F.expand_dims(F.mean(t, axis=(1, 2)), axis=1),
                           F.reshape(F.max(t, axis=0, exclude=True, keepdims=True),
                                     shape=(0, -1))]
        y = self.out(F.concat(*pieces, dim=1))
        return F.log_softmax(y) + F.softmax(y, temperature=2.0) * F.sqrt(F.relu(y) + 1)


def test_every_layer_family_exports_and_equals_onnx_runtime(tmp_path):
    mx.random.seed(0)
    net = Layers()
    net.initialize(mx.init.Xavier())
    for key, param in net.collect_params().items():
        if "running" in key or "gamma" in key:
            param.set_data(nd.array(np.random.default_rng(3).uniform(0.5, 2, param.shape)))
    path = assert_same_as_ort(net, (2, 4, 8, 8), tmp_path, executor="numpy")
    ops = {node.op_type for node in onnx.load(path).graph.node}
    assert {"Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalMaxPool",
            "LeakyRelu", "Elu", "Gelu", "Softplus", "Softsign", "LayerNormalization",
            "Gather", "Split", "Slice", "Concat", "Softmax", "LogSoftmax",
            "ReduceMean", "ReduceMax", "MatMul", "Gemm"} <= ops


def test_elementwise_and_broadcast_ops_equal_onnx_runtime(tmp_path):
    a, b = sym.var("a"), sym.var("b")
    outs = [a + b, a - b, a * b, a / (sym.abs(b) + 1), sym.broadcast_maximum(a, b),
            sym.broadcast_minimum(a, b), sym.broadcast_greater(a, b), sym.broadcast_equal(a, a),
            sym.broadcast_not_equal(a, b), sym.broadcast_lesser_equal(a, b),
            2 - a, 2 / (sym.abs(a) + 1), a ** 2, sym.maximum(a, 0.5), a > 0.3,
            sym.where(a > 0, a, b), sym.sign(a), sym.sin(a) + sym.cos(b),
            sym.log(sym.abs(a) + 1), sym.negative(a), sym.argmax(a, axis=1),
            sym.sum(a, axis=1, keepdims=True), sym.prod(sym.abs(a) + 0.5),
            sym.min(a, axis=0), sym.add_n(a, b, a), sym.broadcast_to(sym.sum(a, axis=1,
                                                                               keepdims=True),
                                                                       shape=(0, 5)),
            sym.zeros_like(a) + sym.ones_like(b), sym.dot(a, sym.transpose(b)),
            sym.pick(a, sym.argmax(b, axis=1), axis=1), sym.one_hot(sym.argmin(a, axis=1),
                                                                    depth=5),
            sym.norm(a, axis=1), sym.norm(a, ord=1, axis=0, keepdims=True), sym.norm(b),
            sym.cast(a, dtype="float64")]
    group = sym.Group([sym.cast(o, dtype="float32") if k == len(outs) - 1 else o
                       for k, o in enumerate(outs)])
    path = str(tmp_path / "ops.onnx")
    sdonnx.export_model(group, {}, [(3, 5), (3, 5)], np.float32, path)
    sess = session(path)
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(3, 5)).astype("float32"), rng.normal(size=(3, 5)).astype("float32")
    expected = [o.asnumpy() for o in group.eval(a=nd.array(x), b=nd.array(y))]
    got = sess.run(None, {"a": x, "b": y})
    assert len(got) == len(expected)
    for k, (theirs, ours) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(theirs, ours, rtol=RTOL, atol=ATOL, err_msg=str(outs[k]))
    back = sdonnx.import_model(path)
    back.hybridize(executor="numpy")
    for theirs, ours in zip(back(nd.array(x), nd.array(y)), expected):
        np.testing.assert_allclose(theirs.asnumpy(), ours, rtol=RTOL, atol=ATOL)


def test_a_where_that_picks_rows_by_a_one_d_condition_exports_as_onnx_runtime_runs_it(tmp_path):
    a, b = sym.var("a"), sym.var("b")
    out = sym.where(sym.sum(a, axis=1) > 0, a, b)
    path = str(tmp_path / "where.onnx")
    sdonnx.export_model(out, {}, [(4, 5), (4, 5)], np.float32, path)
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(4, 5)).astype("float32"), rng.normal(size=(4, 5)).astype("float32")
    expected = np.where(x.sum(axis=1, keepdims=True) > 0, x, y)
    (theirs,) = session(path).run(None, {"a": x, "b": y})
    np.testing.assert_allclose(theirs, expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(out.eval(a=nd.array(x), b=nd.array(y))[0].asnumpy(), expected,
                               rtol=RTOL, atol=ATOL)


def test_the_file_passes_the_checker_at_the_declared_opset_with_a_symbolic_batch(tmp_path):
    net = vision.get_model("lenet")
    net.initialize()
    model = onnx.load(export(net, (2, 1, 28, 28), tmp_path))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", sdonnx.OPSET)]
    assert sdonnx.OPSET >= 18
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and [d.dim_value for d in dims[1:]] == [1, 28, 28]
    out_dims = model.graph.output[0].type.tensor_type.shape.dim
    assert out_dims[0].dim_param and out_dims[1].dim_value == 10


def test_without_dynamic_the_shapes_are_fixed_and_another_batch_is_refused(tmp_path):
    net = vision.get_model("mlp")
    net.initialize()
    path = export(net, (2, 1, 28, 28), tmp_path, dynamic=False)
    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [2, 1, 28, 28]
    with pytest.raises(Exception, match="(?i)dimension|shape"):
        session(path).run(None, {"data": np.zeros((3, 1, 28, 28), "float32")})


def test_export_takes_symbol_and_params_objects_as_mxnet_does(tmp_path):
    data = sym.var("data")
    out = sym.FullyConnected(data, sym.var("w"), sym.var("b"), num_hidden=3)
    w = nd.array(np.arange(12, dtype="float32").reshape(3, 4))
    b = nd.array(np.ones(3, dtype="float32"))
    path = str(tmp_path / "fc.onnx")
    for params in ({"w": w, "b": b}, [{"arg:w": w}, {"arg:b": b}]):
        assert sdonnx.export_model(out, params, input_shape=[(2, 4)], onnx_file_path=path) == path
        x = np.ones((2, 4), "float32")
        np.testing.assert_allclose(session(path).run(None, {"data": x})[0],
                                   x @ w.asnumpy().T + 1)


def test_an_op_without_translation_names_the_node_and_the_op(tmp_path):
    data, label = sym.var("data"), sym.var("label")
    out = sym.softmax_cross_entropy(data, label, name="xent")
    with pytest.raises(sdonnx.OnnxExportError, match="node 'xent': op softmax_cross_entropy"):
        sdonnx.export_model(out, {}, [(2, 3), (2,)], np.float32, str(tmp_path / "x.onnx"))
    assert not (tmp_path / "x.onnx").exists()


class RunningSum(gluon.HybridBlock):
    """A loop of one's own (not a recurrent layer's): ONNX Loop/Scan are not written."""

    def hybrid_forward(self, F, x):
        out, _ = F.contrib.foreach(lambda x_t, s: (x_t + s[0], [x_t + s[0]]), x,
                                   [F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1))
                                    .reshape((-3, -2))], name="running_")
        return out


def test_a_model_with_a_loop_is_refused_naming_the_op_and_what_to_do_instead(tmp_path):
    with pytest.raises(sdonnx.OnnxExportError,
                       match=r"node 'runningsum0_running_': op _foreach is control flow.*not "
                             r"implemented.*LSTM, GRU and RNN layers export.*"
                             r"cell\.unroll\(length.*export\(\) writes MXNet's JSON"):
        export(RunningSum(), (5, 2, 4), tmp_path, dynamic=False, executor="numpy")
    assert not (tmp_path / "net.onnx").exists()


class UnrolledLSTM(gluon.HybridBlock):
    """What the loop's error message suggests: the cell unrolled for a fixed length."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            from straightdope.gluon import rnn
            self.cell = rnn.LSTMCell(6, input_size=4)

    def hybrid_forward(self, F, x):
        out, _ = self.cell.unroll(5, x, layout="TNC", merge_outputs=True)
        return out


def test_an_unrolled_lstm_cell_exports_and_runs_the_same_in_onnx_runtime(tmp_path):
    # Its steps repeat the cell's node names: ONNX still gets one name per value.
    net = UnrolledLSTM()
    net.initialize(mx.init.Uniform(0.5))
    path = export(net, (5, 2, 4), tmp_path, dynamic=False, executor="numpy")
    x = np.random.RandomState(0).rand(5, 2, 4).astype("float32")
    np.testing.assert_allclose(session(path).run(None, {"data": x})[0],
                               net(nd.array(x)).asnumpy(), rtol=RTOL, atol=ATOL)


def test_a_setting_onnx_cannot_express_is_refused_not_changed(tmp_path):
    out = sym.Dropout(sym.var("data"), p=0.5, mode="always", name="drop")
    with pytest.raises(sdonnx.OnnxExportError, match="node 'drop' \\(Dropout\\).*always"):
        sdonnx.export_model(out, {}, [(2, 3)], np.float32, str(tmp_path / "d.onnx"))
    norm = sym.LayerNorm(sym.var("data"), sym.var("g"), sym.var("b"), axis=1, name="ln")
    params = {"g": np.ones(3, "float32"), "b": np.zeros(3, "float32")}
    with pytest.raises(sdonnx.OnnxExportError, match="node 'ln' \\(LayerNorm\\).*last axis"):
        sdonnx.export_model(norm, params, [(2, 3, 4)], np.float32, str(tmp_path / "l.onnx"))


def test_importing_the_onnx_package_is_left_to_the_functions():
    import subprocess
    import sys
    code = ("import sys, straightdope, straightdope.onnx; "
            "print('onnx' in sys.modules, 'onnxruntime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


# ------------------------------------------------------- untrusted files
def small_model(tmp_path, node, inputs=(), initializers=(), opset=sdonnx.OPSET, name="m"):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])] + list(inputs),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_a_file_that_is_not_a_protobuf_is_refused_clearly(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\xff\xff\xff\xff not an onnx file")
    with pytest.raises(sdonnx.OnnxImportError, match="not a valid ONNX file"):
        sdonnx.import_model(path)


def test_an_unknown_op_is_refused_with_the_node_name(tmp_path):
    from onnx import helper
    path = small_model(tmp_path, helper.make_node("Hardmax", ["x"], ["y"], name="hm"))
    with pytest.raises(sdonnx.OnnxImportError, match="node 'hm' \\(Hardmax\\): op Hardmax is "
                                                     "not supported"):
        sdonnx.import_model(path)


def test_a_custom_domain_and_an_old_opset_are_refused(tmp_path):
    from onnx import helper
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    with pytest.raises(sdonnx.OnnxImportError, match="opset 9"):
        sdonnx.import_model(small_model(tmp_path, node, opset=9))
    custom = helper.make_node("Relu", ["x"], ["y"], name="r2", domain="com.evil")
    path = small_model(tmp_path, custom, name="custom")
    with pytest.raises(sdonnx.OnnxImportError, match="node 'r2'.*domain 'com.evil'"):
        sdonnx.import_model(path)


def test_external_data_is_never_opened(tmp_path):
    from onnx import TensorProto, helper
    tensor = helper.make_tensor("w", TensorProto.FLOAT, [3], [0.0, 0.0, 0.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    path = small_model(tmp_path, helper.make_node("Add", ["x", "w"], ["y"], name="add"),
                       initializers=[tensor])
    with pytest.raises(sdonnx.OnnxImportError, match="'w' refers to external data"):
        sdonnx.import_model(path)


def test_a_tensor_declaring_more_values_than_it_holds_is_refused_before_allocating(tmp_path):
    from onnx import TensorProto, helper
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20],
                         raw_data=b"\x00" * 16)   # 4 floats for a 2**40-element shape
    path = small_model(tmp_path, helper.make_node("Add", ["x", "w"], ["y"], name="add"),
                       initializers=[tensor])
    with pytest.raises(sdonnx.OnnxImportError, match="declares shape .* but holds 16 bytes"):
        sdonnx.import_model(path)


def test_a_shape_asking_for_a_huge_output_is_refused(tmp_path):
    from onnx import TensorProto, helper
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [1 << 30, 1 << 30])
    path = small_model(tmp_path, helper.make_node("Expand", ["x", "s"], ["y"], name="grow"),
                       initializers=[shape])
    with pytest.raises(sdonnx.OnnxImportError, match="node 'grow' \\(Expand\\).*larger"):
        sdonnx.import_model(path)


def test_coverage_lists_name_the_ops_of_every_layer():
    exported = set(sdonnx.export_coverage())
    assert {"FullyConnected", "Convolution", "Pooling", "BatchNorm", "Activation", "LeakyReLU",
            "softmax", "log_softmax", "Flatten", "reshape", "transpose", "concat", "slice",
            "slice_axis", "LayerNorm", "Embedding", "Dropout", "broadcast_add"} <= exported
    assert {"Gemm", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
            "BatchNormalization", "LayerNormalization", "Gather"} <= set(sdonnx.import_coverage())


def test_an_op_that_names_its_onnx_operator_exports_and_imports_without_a_translator(tmp_path):
    """mish declares onnx="Mish" in the registry and nothing in onnx/ names it."""
    path = str(tmp_path / "mish.onnx")
    sdonnx.export_model(sym.mish(sym.var("a")), {}, [(3, 5)], np.float32, path)
    assert [n.op_type for n in onnx.load(path).graph.node] == ["Mish"]
    x = np.random.default_rng(5).normal(size=(3, 5)).astype("float32") * 3
    expected = nd.mish(nd.array(x)).asnumpy()
    np.testing.assert_allclose(session(path).run(None, {"a": x})[0], expected,
                               rtol=RTOL, atol=ATOL)
    back = sdonnx.import_model(path)
    back.hybridize(executor="numpy")
    np.testing.assert_allclose(back(nd.array(x)).asnumpy(), expected, rtol=RTOL, atol=ATOL)
