"""export() and SymbolBlock.imports(): a graph file plus a parameter file that load back into
a network giving the same outputs; and bad files that fail with one clear error."""
import json
import zipfile

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.gluon import HybridBlock, SymbolBlock, nn
from straightdope.serialization import ArrayFileError, load_arrays, save_arrays
from straightdope.symbol import SymbolFileError


@pytest.fixture(autouse=True)
def reference_executor(monkeypatch):
    # These tests are about files; the executors are compared in test_hybridize.py. The
    # reference interpreter keeps them fast (a SymbolBlock runs through a CachedOp).
    monkeypatch.setenv("STRAIGHTDOPE_EXECUTOR", "numpy")


def small_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(3, 3, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
                nn.Dense(8, activation="tanh"), nn.Dropout(0.3), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.hybridize(executor="numpy")
    return net


@pytest.fixture
def exported(tmp_path):
    net = small_net()
    x = nd.random.normal(shape=(2, 1, 8, 8))
    with autograd.record():          # one training step moves BatchNorm's running stats
        net(x)
    y = net(x)
    files = net.export(str(tmp_path / "net"), epoch=3)
    return net, x, y, files


def test_export_needs_a_hybridized_forward_first(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(2))
    net.initialize()
    with pytest.raises(RuntimeError, match=r"hybridize\(\) and run a forward pass"):
        net.export(str(tmp_path / "x"))
    net(nd.ones((1, 3)))                     # imperative calls trace nothing
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "x"))
    net.hybridize()
    with pytest.raises(RuntimeError, match="forward pass"):
        net.export(str(tmp_path / "x"))


def test_export_writes_mxnet_style_files(exported, tmp_path):
    net, x, y, (sym_file, params_file) = exported
    assert sym_file == str(tmp_path / "net-symbol.json")
    assert params_file == str(tmp_path / "net-0003.params")
    doc = json.loads(open(sym_file).read())
    assert {"nodes", "arg_nodes", "heads", "node_row_ptr"} <= set(doc)
    ops = [n["op"] for n in doc["nodes"]]
    assert ops[0] == "null" and doc["nodes"][0]["name"] == "data"
    assert {"Convolution", "BatchNorm", "Pooling", "FullyConnected", "Dropout"} <= set(ops)
    arrays = load_arrays(params_file)
    prefix = net.prefix
    assert f"arg:{prefix}conv0_weight" in arrays and f"arg:{prefix}dense1_bias" in arrays
    assert f"aux:{prefix}batchnorm0_running_mean" in arrays
    np.testing.assert_array_equal(arrays[f"aux:{prefix}batchnorm0_running_var"],
                                  net[1].running_var.data().asnumpy())
    assert zipfile.is_zipfile(params_file)          # .npz inside: plain arrays, no pickle


def test_imports_reproduce_the_outputs(exported):
    net, x, y, (sym_file, params_file) = exported
    loaded = SymbolBlock.imports(sym_file, ["data"], params_file)
    assert repr(loaded).startswith("SymbolBlock(")
    np.testing.assert_allclose(loaded(x).asnumpy(), y.asnumpy(), rtol=1e-6)
    assert loaded.trace_count == 0                 # nothing to trace: the graph is given
    loaded.hybridize(executor="numpy")
    np.testing.assert_allclose(loaded(x).asnumpy(), y.asnumpy(), rtol=1e-6)
    single = SymbolBlock.imports(sym_file, "data", params_file, ctx=mx.cpu())
    # one row alone vs inside a batch of two: BLAS sums a float32 product in another
    # order for another row count, so a few ulps differ (seen: 2e-6 relative)
    np.testing.assert_allclose(single(x[:1]).asnumpy(), y[:1].asnumpy(), rtol=1e-5)


def test_imported_network_can_be_fine_tuned(exported):
    net, x, _, (sym_file, params_file) = exported
    loaded = SymbolBlock.imports(sym_file, ["data"], params_file)
    head = nd.random.normal(shape=(2, 2))

    def grads(block):
        mx.random.seed(7)                    # the same Dropout mask
        with autograd.record():
            loss = (block(x) * head).sum()
        loss.backward()
        return {p.name: p.grad().asnumpy().copy() for p in block.collect_params().values()
                if p.grad_req != "null"}

    stats = {p.name: p.data().asnumpy().copy() for p in net.collect_params().values()}
    want = grads(net)
    for p in net.collect_params().values():  # undo the running-stat update of that step
        p.set_data(stats[p.name])
    got = grads(loaded)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_symbol_block_from_symbols_shares_parameters():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu"), nn.Dense(3))
    net.initialize()
    x = nd.random.uniform(shape=(2, 5))
    y = net(x)
    data = sym.var("data")
    features = SymbolBlock(net(data), data, params=net.collect_params())
    np.testing.assert_allclose(features(x).asnumpy(), y.asnumpy(), rtol=1e-6)
    assert features.collect_params()[net[0].weight.name] is net[0].weight
    internals = net(data).get_internals()
    hidden = SymbolBlock(internals[f"{net.prefix}dense0_relu_fwd_output"], data,
                         params=net.collect_params())
    assert hidden(x).shape == (2, 4)


def test_symbol_block_inside_a_hybridized_network(exported):
    net, x, y, (sym_file, params_file) = exported
    backbone = SymbolBlock.imports(sym_file, ["data"], params_file)
    model = nn.HybridSequential()
    model.add(backbone, nn.Dense(1, in_units=2))
    model[1].initialize()
    expected = model(x).asnumpy()
    model.hybridize(executor="numpy")
    np.testing.assert_allclose(model(x).asnumpy(), expected, rtol=1e-6)
    out = model(sym.var("data"))
    assert isinstance(out, mx.sym.Symbol) and backbone.prefix == ""


def test_symbol_block_without_params_initializes_from_the_graph(exported):
    _, x, _, (sym_file, _) = exported
    net = SymbolBlock.imports(sym_file, ["data"])
    net.initialize()
    assert net(x).shape == (2, 2)
    conv_weight = [p for n, p in net.collect_params().items() if n.endswith("conv0_weight")][0]
    assert conv_weight.shape == (3, 1, 3, 3)
    names = list(net._collect_params_with_prefix())
    assert "conv0_weight" in names and "batchnorm0_running_mean" in names


def test_multi_output_blocks_export_and_import(tmp_path):
    class TwoHeads(HybridBlock):
        def __init__(self):
            super().__init__()
            self.a = nn.Dense(2)
            self.b = nn.Dense(3)

        def hybrid_forward(self, F, x):
            return self.a(x), self.b(x)

    net = TwoHeads()
    net.initialize()
    net.hybridize(executor="numpy")
    x = nd.ones((1, 4))
    ya, yb = net(x)
    sym_file, params_file = net.export(str(tmp_path / "two"))
    loaded = SymbolBlock.imports(sym_file, ["data"], params_file)
    got = loaded(x)
    assert isinstance(got, list) and len(got) == 2
    np.testing.assert_allclose(got[0].asnumpy(), ya.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(got[1].asnumpy(), yb.asnumpy(), rtol=1e-6)


# ---------------------------------------------------------------- bad files
@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ('{"nodes": 3}', "'nodes' and 'heads'"),
    ('{"nodes": [{"op": "__import__(\'os\').system(\'true\')", "name": "x", "inputs": []}],'
     ' "heads": [[0, 0, 0]]}', "unknown operator"),
    ('{"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "relu", "name": "r",'
     ' "inputs": [[5, 0, 0]]}], "heads": [[1, 0, 0]]}', "refers to node 5"),
    ('{"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "Activation", '
     '"name": "a", "attrs": {"act_type": "rm -rf"}, "inputs": [[0, 0, 0]]}], '
     '"heads": [[1, 0, 0]]}', "act_type"),
])
def test_bad_symbol_files_fail_with_one_clear_error(tmp_path, text, message):
    path = tmp_path / "bad-symbol.json"
    path.write_text(text)
    with pytest.raises(SymbolFileError, match=message) as err:
        SymbolBlock.imports(str(path), ["data"])
    assert str(path) in str(err.value)
    assert err.value.__cause__ is None                 # no chain of tracebacks
    assert err.value.__context__ is None or err.value.__suppress_context__


def test_bad_params_files_fail_with_one_clear_error(exported, tmp_path):
    net, x, _, (sym_file, params_file) = exported
    raw = open(params_file, "rb").read()
    cases = {"truncated": raw[: len(raw) // 3], "garbled": bytes(reversed(raw)),
             "empty": b""}
    for name, content in cases.items():
        path = tmp_path / f"{name}.params"
        path.write_bytes(content)
        with pytest.raises(ArrayFileError, match=f"{name}.params: ") as err:
            SymbolBlock.imports(sym_file, ["data"], str(path))
        assert err.value.__cause__ is None, name
    pickled = tmp_path / "pickled.params"
    with open(pickled, "wb") as f:
        np.savez(f, **{"arg:x": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(ArrayFileError, match="pickled Python objects are never loaded"):
        SymbolBlock.imports(sym_file, ["data"], str(pickled))
    with pytest.raises(FileNotFoundError):
        SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "missing.params"))


def test_params_that_do_not_match_the_graph(exported, tmp_path):
    net, x, _, (sym_file, params_file) = exported
    arrays = load_arrays(params_file)
    weight_key = f"arg:{net.prefix}dense1_weight"
    fewer = {k: v for k, v in arrays.items() if k != weight_key}
    save_arrays(str(tmp_path / "fewer.params"), fewer)
    with pytest.raises(ValueError, match=r"dense1_weight.*missing.*allow_missing=True"):
        SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "fewer.params"))
    partial = SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "fewer.params"),
                                  allow_missing=True)
    assert partial.collect_params()[f"{net.prefix}dense1_weight"]._data is None
    more = dict(arrays, **{"arg:stranger": np.zeros(2, np.float32)})
    save_arrays(str(tmp_path / "more.params"), more)
    with pytest.raises(ValueError, match=r"'stranger'.*not present.*ignore_extra=True"):
        SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "more.params"))
    SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "more.params"), ignore_extra=True)
    wrong = dict(arrays, **{weight_key: np.zeros((2, 5), np.float32)})
    save_arrays(str(tmp_path / "wrong.params"), wrong)
    loaded = SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "wrong.params"))
    with pytest.raises(ValueError, match=r"SymbolBlock.*dense1_fwd.*weight of shape \(2, 8\)"
                                         r".*has shape \(2, 5\)"):
        loaded(x)
    with pytest.raises(ValueError, match=r"'input' is not a variable of the graph.*\['data'\]"):
        SymbolBlock.imports(sym_file, ["input"], params_file)


def test_export_then_load_parameters_into_the_same_architecture(exported, tmp_path):
    net, x, y, (_, params_file) = exported
    again = nn.HybridSequential(prefix=net.prefix)
    with again.name_scope():
        again.add(nn.Conv2D(3, 3, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
                  nn.Dense(8, activation="tanh"), nn.Dropout(0.3), nn.Dense(2))
    again.load_parameters(params_file)
    np.testing.assert_allclose(again(x).asnumpy(), y.asnumpy(), rtol=1e-6)
