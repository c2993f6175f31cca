"""MXNet's recurrent model files, both ways.

tests/fixtures/mxnet_rnn/ holds gluon.rnn layers exported by real MXNet 1.9.1 (its
make_fixtures.py says how): their graphs join the flattened weights with MXNet's
`_rnn_param_concat` and run one fused `RNN` node, whose attributes include MXNet's
projection and clipping options (off). The other way, MXNet refuses a `concat` node without
`num_args`; a bidirectional LSTM exported here, with num_args written, was checked by hand in
MXNet 1.9.1 (same output within 2e-8; see check_ours_in_mxnet.py beside the fixtures).
"""
import json
from pathlib import Path

import numpy as np
import pytest

import straightdope as mx
from straightdope import gluon, nd
from straightdope.ops import OpError

FIXTURES = Path(__file__).parent / "fixtures" / "mxnet_rnn"
# name: (state inputs MXNet exported, layers x directions, hidden size)
LAYERS = {"lstm_bi": (2, 4, 4), "gru": (1, 1, 5), "rnn_relu": (1, 2, 4)}


def imported(name, json_text=None, tmp_path=None):
    states, _, _ = LAYERS[name]
    sym_file = FIXTURES / f"{name}-symbol.json"
    if json_text is not None:
        sym_file = tmp_path / "changed-symbol.json"
        sym_file.write_text(json_text)
    inputs = [f"data{k}" for k in range(states + 1)]     # x, then the initial states
    return gluon.SymbolBlock.imports(str(sym_file), inputs,
                                     str(FIXTURES / f"{name}-0000.params"))


def run(net, name):
    states, layers, hidden = LAYERS[name]
    io = nd.load(str(FIXTURES / f"{name}_io.params"))
    x = io["x"]
    zeros = [nd.zeros((layers, x.shape[1], hidden)) for _ in range(states)]
    y = net(x, *zeros)
    return (y[0] if isinstance(y, (list, tuple)) else y).asnumpy(), io["y"].asnumpy()


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_an_mxnet_exported_rnn_layer_imports_and_computes_what_mxnet_computed(name):
    graph = json.loads((FIXTURES / f"{name}-symbol.json").read_text())
    assert "_rnn_param_concat" in {n["op"] for n in graph["nodes"]}    # the file is MXNet's
    net = imported(name)
    ours, expected = run(net, name)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    net.hybridize(executor="numpy")
    ours, _ = run(net, name)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_rnn_options_not_computed_here_are_refused_by_name(tmp_path):
    text = (FIXTURES / "lstm_bi-symbol.json").read_text()
    changed = text.replace('"projection_size": "None"', '"projection_size": "2"')
    assert changed != text
    with pytest.raises((OpError, ValueError), match="RNN: projection_size=2 is not supported"):
        run(imported("lstm_bi", changed, tmp_path), "lstm_bi")


def test_a_bidirectional_lstm_exported_here_writes_num_args_on_its_concats(tmp_path):
    mx.random.seed(0)
    net = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize(executor="numpy")
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (5, 2, 3)).astype("float32"))
    y = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "lstm"), params_format="mxnet")
    nodes = json.loads(Path(sym_file).read_text())["nodes"]
    concats = [n for n in nodes if n["op"] in ("concat", "Concat")]
    assert concats                      # bidirectional: forward and backward outputs joined
    for node in concats:                # MXNet's parser requires it on every concat
        assert node["attrs"]["num_args"] == str(len(node["inputs"]))
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(back(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
