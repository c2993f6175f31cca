"""Malformed and hostile ONNX files: each is refused with an OnnxImportError naming the file
and the node, before anything is built, in bounded time and memory (issues 27.3, 28.10)."""
from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from straightdope import nd  # noqa: E402
from straightdope import onnx as sdonnx  # noqa: E402


def model_of(nodes, inputs=(("x", [2, 3]),), initializers=(), outputs=("y",), opsets=None):
    graph = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        list(initializers))
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def write(tmp_path, model, name="bad"):
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def floats(name, shape):
    return helper.make_tensor(name, TensorProto.FLOAT, shape,
                              np.ones(shape, "float32").reshape(-1).tolist())


N = helper.make_node
BIG = 10 ** 9
CASES = {
    # arity against the schema
    "gemm with one input": (model_of([N("Gemm", ["x"], ["y"], name="n")]), "has 1 inputs"),
    "batchnorm with 2 of 5 inputs": (model_of([N("BatchNormalization", ["x", "s"], ["y"],
                                                 name="n")], initializers=[floats("s", [3])]),
                                     "has 2 inputs"),
    "relu with no input": (model_of([N("Relu", [], ["y"], name="n")]), "has 0 inputs"),
    "relu with an empty input": (model_of([N("Relu", [""], ["y"], name="n")]),
                                 "required input 0"),
    "split with no outputs": (model_of([N("Split", ["x"], [], name="n", axis=0)],
                                       outputs=()), "has 0 outputs"),
    "maxpool without kernel_shape": (model_of([N("MaxPool", ["x"], ["y"], name="n")],
                                              inputs=[("x", [1, 1, 4, 4])]),
                                     "required attribute.*kernel_shape"),
    "an attribute the op does not define": (model_of([N("Relu", ["x"], ["y"], name="n",
                                                        alpha=1.0)]), "'alpha'"),
    "an attribute of the wrong type": (model_of([N("Softmax", ["x"], ["y"], name="n",
                                                   axis=1.5)]), "'axis' holds type"),
    "a subgraph attribute on a relu": (model_of([N("Relu", ["x"], ["y"], name="n",
                                                   body=helper.make_graph([], "b", [], []))]),
                                       "'body'"),
    "an op missing from the opset": (model_of([N("Gelu", ["x"], ["y"], name="n")],
                                              opsets=[helper.make_opsetid("", 17)]),
                                     "does not exist in ONNX opset 17"),
    # values
    "two nodes writing one value": (model_of([N("Relu", ["x"], ["y"], name="a"),
                                              N("Neg", ["x"], ["y"], name="n")]),
                                    "'y'.*written once"),
    "a node overwriting a graph input": (model_of([N("Relu", ["x"], ["x"], name="n")],
                                                  outputs=("x",)), "'x'.*written once"),
    "an input computed later": (model_of([N("Relu", ["t"], ["y"], name="n"),
                                          N("Neg", ["x"], ["t"], name="later")]),
                                "input 't' is neither"),
    # attribute and input values
    "slice with empty starts": (model_of([N("Slice", ["x", "s", "e"], ["y"], name="n")],
                                         initializers=[ints("s", []), ints("e", [])]),
                                "non-empty"),
    "slice axes 2*10^8": (model_of([N("Slice", ["x", "s", "e", "a"], ["y"], name="n")],
                                   initializers=[ints("s", [0]), ints("e", [1]),
                                                 ints("a", [2 * 10 ** 8])]),
                          "axes .* not distinct axes"),
    "slice with step 0": (model_of([N("Slice", ["x", "s", "e", "a", "t"], ["y"], name="n")],
                                   initializers=[ints("s", [0]), ints("e", [1]),
                                                 ints("a", [0]), ints("t", [0])]), "steps"),
    "squeeze of an axis of length 3": (model_of([N("Squeeze", ["x", "a"], ["y"], name="n")],
                                                initializers=[ints("a", [1])]),
                                       "not of length 1"),
    "squeeze of an absurd axis": (model_of([N("Squeeze", ["x", "a"], ["y"], name="n")],
                                           initializers=[ints("a", [BIG])]), "outside"),
    "unsqueeze of an absurd axis": (model_of([N("Unsqueeze", ["x", "a"], ["y"], name="n")],
                                             initializers=[ints("a", [BIG])]), "axes"),
    "concat along an absurd axis": (model_of([N("Concat", ["x", "x"], ["y"], name="n",
                                                axis=BIG)]), "axis"),
    "softmax along an absurd axis": (model_of([N("Softmax", ["x"], ["y"], name="n",
                                                 axis=BIG)]), "axis"),
    "transpose perm [3, 0] of a 2-D input": (model_of([N("Transpose", ["x"], ["y"], name="n",
                                                         perm=[3, 0])]), "perm"),
    "argmax along an absurd axis": (model_of([N("ArgMax", ["x"], ["y"], name="n",
                                                axis=BIG)]), "axis"),
    "reducesum over an absurd axis": (model_of([N("ReduceSum", ["x", "a"], ["y"], name="n")],
                                               initializers=[ints("a", [BIG])]), "ax"),
    "split along an absurd axis": (model_of([N("Split", ["x"], ["y", "z"], name="n",
                                              axis=BIG)], outputs=("y", "z")), "axis"),
    "flatten at an absurd axis": (model_of([N("Flatten", ["x"], ["y"], name="n", axis=BIG)]),
                                  "axis"),
    "reshape to an absurd shape": (model_of([N("Reshape", ["x", "s"], ["y"], name="n")],
                                            initializers=[ints("s", [-5, 2])]), "shape"),
    "expand to an absurd shape": (model_of([N("Expand", ["x", "s"], ["y"], name="n")],
                                           initializers=[ints("s", [2 ** 40, 2 ** 40])]),
                                  "larger"),
    "an initializer of shape (0, 2^62, 2^62)": (
        model_of([N("Add", ["x", "w"], ["y"], name="n")],
                 initializers=[helper.make_tensor("w", TensorProto.FLOAT,
                                                  [0, 2 ** 62, 2 ** 62], [])]),
        "'w' declares shape"),
    "onehot of an absurd depth": (model_of([N("OneHot", ["x", "d", "v"], ["y"], name="n")],
                                           initializers=[ints("d", [2 ** 40]),
                                                         floats("v", [2])]), "depth"),
    "gather from an empty table": (model_of([N("Gather", ["t", "x"], ["y"], name="n")],
                                            initializers=[floats("t", [0, 64])]), "rows"),
    "conv with a 1-D weight": (model_of([N("Conv", ["x", "w"], ["y"], name="n")],
                                        inputs=[("x", [1, 1, 4, 4])],
                                        initializers=[floats("w", [3])]), "weight"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_file_is_refused_naming_the_file_and_the_node(case, tmp_path):
    model, why = CASES[case]
    path = write(tmp_path, model)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(sdonnx.OnnxImportError) as info:
            sdonnx.import_model(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    message = str(info.value)
    assert str(path) in message
    assert "node 'n'" in message or "'w'" in message, message
    assert __import__("re").search(why, message), message
    assert peak < 64 << 20, f"{peak / 2 ** 20:.0f} MB allocated to refuse it"
    assert time.perf_counter() - start < 5


def test_the_opset_listed_twice_is_refused(tmp_path):
    model = model_of([N("Relu", ["x"], ["y"], name="n")],
                     opsets=[helper.make_opsetid("", 13), helper.make_opsetid("", 21)])
    with pytest.raises(sdonnx.OnnxImportError, match="opset twice"):
        sdonnx.import_model(write(tmp_path, model))


def test_the_node_limit_is_a_knob(tmp_path, monkeypatch):
    nodes = [N("Neg", ["x" if k == 0 else f"v{k}"], [f"v{k + 1}" if k < 9 else "y"],
               name=f"n{k}") for k in range(10)]
    path = write(tmp_path, model_of(nodes))
    monkeypatch.setenv("STRAIGHTDOPE_ONNX_MAX_NODES", "9")
    with pytest.raises(sdonnx.OnnxImportError,
                       match="10 nodes, more than the 9.*STRAIGHTDOPE_ONNX_MAX_NODES"):
        sdonnx.import_model(path)
    monkeypatch.setenv("STRAIGHTDOPE_ONNX_MAX_NODES", "10")
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(sdonnx.import_model(path)(nd.array(x)).asnumpy(), x)


def test_an_unused_graph_input_imports_and_is_left_out_of_the_block(tmp_path):
    model = model_of([N("Relu", ["x"], ["y"], name="n")],
                     inputs=[("x", [2, 3]), ("unused", [4])])
    path = write(tmp_path, model)
    x = np.random.default_rng(0).normal(size=(2, 3)).astype("float32")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (theirs,) = sess.run(None, {"x": x, "unused": np.zeros(4, "float32")})
    net = sdonnx.import_model(path)
    np.testing.assert_array_equal(net(nd.array(x)).asnumpy(), theirs)


def test_squeeze_of_an_axis_of_length_one_still_imports(tmp_path):
    model = model_of([N("Squeeze", ["x", "a"], ["y"], name="n")], inputs=[("x", [2, 1, 3])],
                     initializers=[ints("a", [1])])
    x = np.random.default_rng(1).normal(size=(2, 1, 3)).astype("float32")
    out = sdonnx.import_model(write(tmp_path, model))(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(out, x[:, 0])
