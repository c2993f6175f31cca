"""ONNX files that mean the same model on both sides: each export is run in ONNX Runtime
and in onnx's reference evaluator, each import is compared with both on the same file."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import straightdope as mx  # noqa: E402
from straightdope import nd, sym  # noqa: E402
from straightdope import onnx as sdonnx  # noqa: E402
from straightdope.gluon import nn  # noqa: E402
from straightdope.onnx.importer import onnx_to_symbol  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def run_ort(model_or_path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    source = model_or_path.SerializeToString() if hasattr(model_or_path, "graph") \
        else str(model_or_path)
    sess = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_reference(model_or_path, feeds):
    from onnx.reference import ReferenceEvaluator
    model = model_or_path if hasattr(model_or_path, "graph") else onnx.load(model_or_path)
    return ReferenceEvaluator(model).run(None, feeds)


def run_imported(model, feeds):
    """Our import of `model`, computed by the reference executor."""
    out, names, params = onnx_to_symbol(model)
    values = {n: nd.array(v) for n, v in feeds.items()}
    values.update({n: nd.array(v) for n, v in params.items()})
    return [o.asnumpy() for o in out.eval(**values)]


def one_node_model(node, in_shape, initializers=(), opset=sdonnx.OPSET, in_name="x",
                   elem=None):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(in_name, elem or TensorProto.FLOAT,
                                                    in_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output],
        list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def export_block(net, shape, tmp_path, dynamic_shape=None, name="net"):
    net.hybridize(executor="numpy")
    net(nd.zeros(shape))
    sym_file, params_file = net.export(str(tmp_path / name))
    path = str(tmp_path / f"{name}.onnx")
    return sdonnx.export_model(sym_file, params_file, [shape], np.float32, path,
                               dynamic=True, dynamic_input_shapes=[dynamic_shape or
                                                                   (None,) + shape[1:]])


def assert_same(ours, theirs, what):
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} here, {theirs.shape} there"
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=what)


# ------------------------------------------------- item 1: pooling ceil_mode
def test_the_issue_maxpool_ceil_mode_keeps_its_5x5_shape_in_onnx_runtime(tmp_path):
    net = nn.MaxPool2D(2, 2, padding=1, ceil_mode=True)
    x = np.random.default_rng(0).normal(size=(2, 3, 7, 7)).astype("float32")
    ours = net(nd.array(x)).asnumpy()
    assert ours.shape == (2, 3, 5, 5)
    path = export_block(net, (2, 3, 7, 7), tmp_path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    assert_same(ours, run_ort(path, {"data": x})[0], "ONNX Runtime")
    assert_same(ours, run_reference(path, {"data": x})[0], "reference evaluator")
    assert_same(ours, run_imported(onnx.load(path), {"data": x})[0], "imported")


POOLS = [(kind, size, k, s, p, include)
         for kind in ("max", "avg", "sum") for size in (6, 7, 8) for k in (2, 3)
         for s in (1, 2, 3) for p in range(k) for include in (True, False)
         if p <= k // 2 and not (kind != "avg" and not include)]


@pytest.mark.parametrize("kind, size, k, s, p, include", POOLS)
def test_full_convention_pooling_exports_to_the_same_windows(kind, size, k, s, p, include,
                                                            tmp_path):
    x = sym.var("data")
    out = sym.Pooling(x, kernel=(k, k), stride=(s, s), pad=(p, p), pool_type=kind,
                      pooling_convention="full", count_include_pad=include)
    data = np.random.default_rng(size * k + s).normal(size=(2, 2, size, size)) \
        .astype("float32")
    ours = out.eval(data=nd.array(data))[0].asnumpy()
    path = str(tmp_path / "pool.onnx")
    try:
        sdonnx.export_model(out, {}, [data.shape], np.float32, path, dynamic=True,
                            dynamic_input_shapes=[(None, 2, size, size)])
    except sdonnx.OnnxExportError as err:
        # only a window of padding alone averaged over the real elements (0/0) is refused
        assert kind == "avg" and not include and np.isnan(ours).any(), err
        assert "padding only" in str(err)
        return
    assert_same(ours, run_ort(path, {"data": data})[0], "ONNX Runtime")
    assert_same(ours, run_reference(path, {"data": data})[0], "reference evaluator")
    assert_same(ours, run_imported(onnx.load(path), {"data": data})[0], "imported")


def test_full_convention_over_a_varying_spatial_size_is_written_only_when_exact(tmp_path):
    exact = sym.Pooling(sym.var("data"), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                        pool_type="max", pooling_convention="full", name="pool")
    path = str(tmp_path / "exact.onnx")
    sdonnx.export_model(exact, {}, [(1, 1, 7, 7)], np.float32, path, dynamic=True)
    for size in (7, 8, 9, 10):
        data = np.random.default_rng(size).normal(size=(1, 1, size, size)).astype("float32")
        assert_same(exact.eval(data=nd.array(data))[0].asnumpy(),
                    run_ort(path, {"data": data})[0], f"size {size}")
    inexact = sym.Pooling(sym.var("data"), kernel=(2, 2), stride=(2, 2), pad=(1, 1),
                          pool_type="max", pooling_convention="full", name="pool2")
    with pytest.raises(sdonnx.OnnxExportError,
                       match=r"node 'pool2' \(Pooling\): .*varies at run time"):
        sdonnx.export_model(inexact, {}, [(1, 1, 7, 7)], np.float32,
                            str(tmp_path / "inexact.onnx"), dynamic=True)


FOREIGN_POOLS = [(op, size, k, s, pads, ceil, include)
                 for op in ("MaxPool", "AveragePool") for size in (5, 7, 8) for k in (2, 3)
                 for s in (1, 2, 3)
                 for pads in ([0, 0], [1, 1], [0, 1], [1, 0], [k - 1, k - 1])
                 for ceil in (0, 1) for include in ((0, 1) if op == "AveragePool" else (0,))
                 if max(pads) < k]


def test_foreign_pooling_imports_as_onnx_computes_it():
    """Every case either imports and equals ONNX Runtime (and the reference evaluator where
    the two engines agree), or is refused naming the node."""
    from onnx import helper
    imported, refused, disagree = 0, 0, set()
    for op, size, k, s, pads, ceil, include in dict.fromkeys(map(tuple, (
            (o, z, k, s, tuple(p), c, i) for o, z, k, s, p, c, i in FOREIGN_POOLS))):
        attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[pads[0], pads[0], pads[1],
                                                                pads[1]], ceil_mode=ceil)
        if op == "AveragePool":
            attrs["count_include_pad"] = include
        model = one_node_model(helper.make_node(op, ["x"], ["y"], name="pool", **attrs),
                               [1, 2, size, size])
        x = np.random.default_rng(size + k).normal(size=(1, 2, size, size)).astype("float32")
        theirs = run_ort(model, {"x": x})[0]
        reference = run_reference(model, {"x": x})[0]
        what = f"{op} size {size} k {k} s {s} pads {pads} ceil {ceil} include {include}"
        try:
            ours = run_imported(model, {"x": x})[0]
        except sdonnx.OnnxImportError as err:
            assert "node 'pool'" in str(err) and "cannot make" in str(err), err
            # what our Pooling cannot express: averages over uneven pads, and averages that
            # ONNX divides by part of a last window
            assert op == "AveragePool" and (pads[0] != pads[1] or (ceil and include)), what
            refused += 1
            continue
        assert_same(ours, theirs, what)
        if reference.shape == theirs.shape and np.allclose(reference, theirs, atol=ATOL):
            assert_same(ours, reference, what + " (reference evaluator)")
        else:
            disagree.add((op, s if op == "MaxPool" else ceil))
        imported += 1
    assert imported > 9 * refused
    # Where the engines differ, ONNX Runtime follows the spec: onnx's reference evaluator
    # (1.19) mis-shapes MaxPool with stride 1 and pads, and averages ceil_mode windows
    # with wrong divisors.
    assert disagree <= {("MaxPool", 1), ("AveragePool", 1)}, disagree


def test_a_ceil_mode_pool_over_an_unknown_size_is_refused_when_the_size_matters():
    from onnx import helper
    node = helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2, 2],
                            strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    with pytest.raises(sdonnx.OnnxImportError, match="node 'p' .*spatial size.*not known"):
        onnx_to_symbol(one_node_model(node, ["N", 3, "H", "W"]))
    safe = helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[3, 3],
                            strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    model = one_node_model(safe, ["N", 3, "H", "W"])
    for size in (6, 7):
        x = np.random.default_rng(size).normal(size=(2, 3, size, size)).astype("float32")
        assert_same(run_imported(model, {"x": x})[0], run_ort(model, {"x": x})[0], str(size))


# ------------------------------------------- item 2: recurrent models, dynamic batch
class Unrolled(mx.gluon.HybridBlock):
    """A cell unrolled for a fixed length: its begin state is broadcast to the batch."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = cell

    def hybrid_forward(self, F, x):
        out, _ = self.cell.unroll(5, x, layout="TNC", merge_outputs=True)
        return out


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
def test_unrolled_cells_run_in_onnx_runtime_at_a_dynamic_batch(kind, tmp_path):
    from straightdope.gluon import rnn
    mx.random.seed(0)
    net = Unrolled(getattr(rnn, kind)(6, input_size=4))
    net.initialize(mx.init.Uniform(0.5))
    path = export_block(net, (5, 2, 4), tmp_path, dynamic_shape=(5, None, 4))
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    for node in model.graph.node:                   # ONNX Expand has no -1 code
        if node.op_type == "Expand":
            shape = next(t for t in model.graph.initializer if t.name == node.input[1])
            assert -1 not in onnx.numpy_helper.to_array(shape)
    for batch in (1, 3, 7):
        x = np.random.default_rng(batch).normal(size=(5, batch, 4)).astype("float32")
        assert_same(net(nd.array(x)).asnumpy(), run_ort(path, {"data": x})[0], str(batch))


def test_a_foreign_expand_keeps_the_dims_its_shape_gives_as_one():
    from onnx import helper
    shape = onnx.numpy_helper.from_array(np.array([2, 1, 3, 1], "int64"), "s")
    model = one_node_model(helper.make_node("Expand", ["x", "s"], ["y"], name="e"),
                           ["N", 1, 4], initializers=[shape])
    x = np.random.default_rng(0).normal(size=(5, 1, 4)).astype("float32")
    theirs = run_ort(model, {"x": x})[0]
    assert theirs.shape == (2, 5, 3, 4)
    assert_same(run_imported(model, {"x": x})[0], theirs, "Expand")


def _rnn_layers():
    from straightdope.gluon import rnn
    return {"lstm 2 layers bidirectional": lambda: rnn.LSTM(5, num_layers=2,
                                                            bidirectional=True, input_size=3),
            "gru": lambda: rnn.GRU(5, input_size=3),
            "gru bidirectional NTC": lambda: rnn.GRU(5, bidirectional=True, input_size=3,
                                                     layout="NTC"),
            "rnn relu": lambda: rnn.RNN(5, input_size=3),
            "rnn tanh 2 layers": lambda: rnn.RNN(5, num_layers=2, activation="tanh",
                                                 input_size=3)}


@pytest.mark.parametrize("name", sorted(_rnn_layers()))
def test_recurrent_layers_export_as_onnx_recurrent_ops(name, tmp_path):
    mx.random.seed(1)
    layer = _rnn_layers()[name]()
    layer.initialize(mx.init.Uniform(0.5))
    path = export_block(layer, (4, 2, 3), tmp_path, dynamic_shape=(None, None, 3))
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    ops = [node.op_type for node in model.graph.node]
    onnx_op = name.split()[0].upper()
    assert onnx_op in ops and "FullyConnected" not in ops and "MatMul" not in ops
    for shape in ((4, 2, 3), (7, 5, 3)):          # another length and batch: one file
        x = np.random.default_rng(shape[0]).normal(size=shape).astype("float32")
        ours = layer(nd.array(x)).asnumpy()
        assert ours.std() > 0.01
        assert_same(ours, run_ort(path, {"data": x})[0], f"{shape}")
        assert_same(ours, run_imported(model, {"data": x})[0], f"{shape} imported")


def _onnx_recurrent(op, direction, hidden=5, channels=3, seed=0, **attrs):
    from onnx import TensorProto, helper
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    dirs = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(seed)
    inits = [onnx.numpy_helper.from_array(
        (rng.normal(size=s) * 0.5).astype("float32"), n)
        for n, s in (("W", (dirs, gates * hidden, channels)), ("R", (dirs, gates * hidden,
                                                                     hidden)),
                     ("B", (dirs, 2 * gates * hidden)))]
    states = ["h0", "c0"] if op == "LSTM" else ["h0"]
    outs = ["y", "yh", "yc"] if op == "LSTM" else ["y", "yh"]
    if op == "GRU":
        attrs.setdefault("linear_before_reset", 1)
    node = helper.make_node(op, ["x", "W", "R", "B", ""] + states, outs, name="r",
                            hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                    ["T", "N", channels])]
        + [helper.make_tensor_value_info(s, TensorProto.FLOAT, [dirs, "N", hidden])
           for s in states],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    feeds = {"x": rng.normal(size=(6, 2, channels)).astype("float32")}
    feeds.update({s: rng.normal(size=(dirs, 2, hidden)).astype("float32") for s in states})
    return model, feeds


@pytest.mark.parametrize("op, direction", list(itertools.product(
    ("LSTM", "GRU", "RNN"), ("forward", "reverse", "bidirectional"))))
def test_onnx_recurrent_ops_import_as_onnx_runtime_computes_them(op, direction):
    model, feeds = _onnx_recurrent(op, direction)
    theirs = run_ort(model, feeds)
    ours = run_imported(model, feeds)
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"output {k}")
    relu = _onnx_recurrent("RNN", direction, activations=["Relu"] * (1 + (direction ==
                                                                           "bidirectional")))
    for a, b in zip(run_imported(*relu), run_ort(*relu)):
        assert_same(a, b, "relu")


def test_onnx_recurrent_settings_we_do_not_compute_are_refused():
    for op, attrs, why in (("GRU", {"linear_before_reset": 0}, "linear_before_reset"),
                           ("LSTM", {"clip": 1.0}, "clip"),
                           ("LSTM", {"input_forget": 1}, "input_forget"),
                           ("RNN", {"activations": ["Sigmoid"]}, "activations")):
        model, _ = _onnx_recurrent(op, "forward", **attrs)
        with pytest.raises(sdonnx.OnnxImportError, match=f"node 'r' \\({op}\\).*{why}"):
            onnx_to_symbol(model)


# ------------------------------------- item 4: PyTorch's shape arithmetic, GELU as Erf
FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "torch"


TORCH_OPS = {"view_flatten": {"Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "MaxPool"},
             "gelu_opset17": {"Erf"},
             "lstm_gru": {"LSTM", "GRU", "ConstantOfShape", "Slice"}}


@pytest.mark.parametrize("name", sorted(TORCH_OPS))
def test_torch_exports_import_and_equal_torch_and_onnx_runtime(name):
    """Made by tests/fixtures/torch/make_fixtures.py: x.view(x.size(0), -1) after a
    ceil_mode MaxPool, nn.GELU at opset 17 (Erf), nn.LSTM + nn.GRU, with a dynamic batch
    (and sequence length)."""
    path = FIXTURES / f"{name}.onnx"
    assert TORCH_OPS[name] <= {node.op_type for node in onnx.load(path).graph.node}
    saved = np.load(FIXTURES / f"{name}.npz")
    net = sdonnx.import_model(path)
    net.hybridize(executor="numpy")
    assert_same(net(nd.array(saved["x"])).asnumpy(), saved["y"], "torch's output")
    shape = (4, 5, 3) if name == "lstm_gru" else (7,) + saved["x"].shape[1:]
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    assert_same(net(nd.array(x)).asnumpy(), run_ort(path, {"x": x})[0], "another batch")


def _shape_graph(nodes, initializers, in_shape):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_tf2onnx_style_shape_arithmetic_folds_to_constants_and_reshape_codes():
    """Shape with start, Slice, Cast, Mul, Concat, Range and ConstantOfShape: the known
    dims fold to numbers, the batch stays the input's own dim (reshape code 0)."""
    from onnx import helper
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["s"], start=0),
             n("Slice", ["s", "one", "three"], ["hw"]),               # [C, H] known
             n("Cast", ["hw"], ["hw64"], to=onnx.TensorProto.INT64),
             n("ReduceProd", ["hw64"], ["chw"], keepdims=1),
             n("Gather", ["s", "zero"], ["batch"]),
             n("Unsqueeze", ["batch", "axes0"], ["batch1"]),
             n("Concat", ["batch1", "chw"], ["target"], axis=0),
             n("Reshape", ["x", "target"], ["flat"]),
             n("Range", ["r0", "r1", "r2"], ["positions"]),           # 0 .. C*H-1
             n("Cast", ["positions"], ["positions_f"], to=onnx.TensorProto.FLOAT),
             n("ConstantOfShape", ["chw"], ["ones"],
               value=onnx.numpy_helper.from_array(np.array([0.5], "float32"))),
             n("Add", ["positions_f", "ones"], ["offset"]),
             n("Add", ["flat", "offset"], ["y"])]
    init = {"one": np.array([1]), "three": np.array([3]), "zero": np.array(0),
            "axes0": np.array([0]), "r0": np.array(0), "r1": np.array(12), "r2": np.array(1)}
    model = _shape_graph(nodes, init, ["N", 3, 4])
    for batch in (1, 5):
        x = np.random.default_rng(batch).normal(size=(batch, 3, 4)).astype("float32")
        theirs = run_ort(model, {"x": x})[0]
        assert theirs.shape == (batch, 12)
        assert_same(run_imported(model, {"x": x})[0], theirs, f"batch {batch}")


def test_shape_arithmetic_that_needs_a_run_time_dim_is_refused_by_name():
    from onnx import helper
    n = helper.make_node
    arithmetic = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"]),
                  n("Mul", ["b", "two"], ["b2"], name="double"),
                  n("Unsqueeze", ["b2", "axes0"], ["t"]), n("Reshape", ["x", "t"], ["y"])]
    init = {"zero": np.array(0), "two": np.array(2), "axes0": np.array([0])}
    with pytest.raises(sdonnx.OnnxImportError, match="node 'double' .*not known at import"):
        onnx_to_symbol(_shape_graph(arithmetic, init, ["N", 3]))
    elsewhere = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"]),
                 n("Unsqueeze", ["b", "axes0"], ["b1"]),
                 n("Concat", ["minus", "b1"], ["t"], axis=0),
                 n("Reshape", ["x", "t"], ["y"], name="r")]
    init = {"zero": np.array(0), "minus": np.array([-1]), "axes0": np.array([0])}
    with pytest.raises(sdonnx.OnnxImportError, match=r"node 'r' .*x\.shape\[0\]"):
        onnx_to_symbol(_shape_graph(elsewhere, init, ["N", 3]))


def test_erf_exports_and_imports(tmp_path):
    out = sym.erf(sym.var("data"))
    path = str(tmp_path / "erf.onnx")
    sdonnx.export_model(out, {}, [(2, 5)], np.float32, path)
    x = np.linspace(-3, 3, 10, dtype="float32").reshape(2, 5)
    ours = out.eval(data=nd.array(x))[0].asnumpy()
    assert_same(ours, run_ort(path, {"data": x})[0], "ONNX Runtime")
    assert_same(ours, run_imported(onnx.load(path), {"data": x})[0], "imported")


# ------------------------------------------------------ item 5: ConvTranspose
DECONVS = [dict(channels=4, kernel_size=3),
           dict(channels=4, kernel_size=3, strides=2, padding=1, output_padding=1),
           dict(channels=6, kernel_size=(2, 3), strides=(2, 1), groups=2, use_bias=False),
           dict(channels=3, kernel_size=3, dilation=2, padding=2, strides=3,
                output_padding=2)]


@pytest.mark.parametrize("k", range(len(DECONVS)))
def test_conv2d_transpose_exports_as_conv_transpose_and_imports_back(k, tmp_path):
    mx.random.seed(k)
    net = nn.Conv2DTranspose(in_channels=2 if DECONVS[k].get("groups") else 3,
                             **DECONVS[k])
    net.initialize(mx.init.Uniform(0.5))
    shape = (2, net.weight.shape[0], 5, 6)
    path = export_block(net, shape, tmp_path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert [node.op_type for node in model.graph.node] == ["ConvTranspose"]
    for batch in (2, 3):
        x = np.random.default_rng(batch).normal(size=(batch,) + shape[1:]).astype("float32")
        ours = net(nd.array(x)).asnumpy()
        assert_same(ours, run_ort(path, {"data": x})[0], "ONNX Runtime")
        if not DECONVS[k].get("groups"):    # onnx's reference evaluator has no groups here
            assert_same(ours, run_reference(path, {"data": x})[0], "reference evaluator")
        assert_same(ours, run_imported(model, {"data": x})[0], "imported")


def test_docs_onnx_md_names_every_op_that_exports_and_imports():
    """docs/onnx.md lists exactly what exports and imports: every table entry is named
    (families as `broadcast_*`, `_*_scalar`), or is an op whose registry entry names its
    ONNX operator (`onnx=`), which one row of each table states as the rule."""
    import fnmatch
    import re
    from straightdope.ops import OPS
    text = (__import__("pathlib").Path(__file__).parents[1] / "docs" / "onnx.md").read_text()
    named = set(re.findall(r"`([A-Za-z_*][A-Za-z0-9_*]*)`", text))
    assert text.count("`onnx=`") == 2, "the export and the import table each state the rule"
    declared = {name for name, op in OPS.items() if op.onnx} | \
        {op.onnx for op in OPS.values() if op.onnx}
    loops = {"_foreach"}                          # documented as the rnn layers' loops
    for ops in (set(sdonnx.export_coverage()) - loops, set(sdonnx.import_coverage())):
        missing = [op for op in ops if op not in declared and not any(
            fnmatch.fnmatchcase(op, pattern) for pattern in named)]
        assert not missing, missing


def test_expand_and_constant_of_shape_to_a_run_time_batch():
    """torch.zeros(x.size(0), 3, 4) and bias.expand(x.size(0), 3, -1)-style graphs."""
    from onnx import helper
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"]),
             n("Unsqueeze", ["b", "axes0"], ["b1"]),
             n("Concat", ["b1", "three_one"], ["t"], axis=0),
             n("Expand", ["bias", "t"], ["grown"]),                     # (N, 3, 4)
             n("Concat", ["b1", "three_four"], ["t2"], axis=0),
             n("ConstantOfShape", ["t2"], ["filled"],
               value=onnx.numpy_helper.from_array(np.array([2.0], "float32"))),
             n("Add", ["grown", "filled"], ["g2"]), n("Add", ["g2", "x"], ["y"])]
    init = {"zero": np.array(0), "axes0": np.array([0]), "three_one": np.array([3, 1]),
            "three_four": np.array([3, 4]),
            "bias": np.arange(4, dtype="float32").reshape(1, 1, 4)}
    model = _shape_graph(nodes, init, ["N", 3, 4])
    for batch in (1, 6):
        x = np.random.default_rng(batch).normal(size=(batch, 3, 4)).astype("float32")
        assert_same(run_imported(model, {"x": x})[0], run_ort(model, {"x": x})[0], str(batch))
