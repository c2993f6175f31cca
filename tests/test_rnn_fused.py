"""The gluon.rnn layers' fused `RNN` op (ops/rnn.py, compiler/kernels/rnn.py) computes
what the same layers compute as foreach loops: outputs, final states and every gradient,
imperatively and hybridized (compiled), and a compiled graph runs it as one kernel."""
import numpy as np
import pytest

from straightdope import autograd, nd
from straightdope.gluon import rnn


def _run(layer, x, states):
    """Output, input gradient, parameter gradients and state gradients of a loss that
    reads the output and the final states."""
    xs = nd.array(x)
    xs.attach_grad()
    given = [nd.array(s) for s in states] if states is not None else None
    for s in given or ():
        s.attach_grad()
    with autograd.record():
        if given is None:
            y = layer(xs)
            loss = (y * y).sum()
        else:
            y, new = layer(xs, given)
            loss = (y * y).sum() + sum(((s * s).sum() * (k + 2) for k, s in enumerate(new)),
                                       nd.zeros(()))
    loss.backward()
    values = [y.asnumpy(), xs.grad.asnumpy()]
    values += [p.grad().asnumpy() for p in layer.collect_params().values()]
    return values + [s.grad.asnumpy() for s in given or ()]


def _pair(make, x):
    """The same layer twice, with equal parameters: one fused, one on foreach loops."""
    fused, looped = make(), make()
    fused._fused = lambda: True           # as with STRAIGHTDOPE_FUSED_RNN=1
    looped._fused = lambda: False
    for layer in (fused, looped):
        layer.initialize()
        layer(nd.array(x))
    for a, b in zip(fused.collect_params().values(), looped.collect_params().values()):
        b.set_data(a.data())
    return fused, looped


@pytest.mark.parametrize("make", [
    lambda: rnn.LSTM(6),
    lambda: rnn.LSTM(6, num_layers=2, bidirectional=True, layout="NTC"),
    lambda: rnn.GRU(6, num_layers=2, bidirectional=True),
    lambda: rnn.RNN(6, num_layers=2, activation="tanh"),
    lambda: rnn.RNN(6, bidirectional=True, activation="relu"),
], ids=["lstm", "lstm-2-bi-ntc", "gru-2-bi", "rnn-tanh-2", "rnn-relu-bi"])
@pytest.mark.parametrize("given", [False, True], ids=["zero-states", "given-states"])
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_the_fused_op_computes_what_the_foreach_loops_compute(make, given, hybridize):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5)).astype("float32")
    fused, looped = _pair(make, x)
    states = None
    if given:
        batch = x.shape[fused._layout.find("N")]
        states = [rng.standard_normal(info["shape"]).astype("float32")
                  for info in fused.state_info(batch)]
    if hybridize:
        fused.hybridize()
        looped.hybridize()
    got, want = _run(fused, x, states), _run(looped, x, states)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if hybridize:
        ops = [n.op.name for n in fused._cached_graph[1].walk() if n.op is not None]
        assert ops.count("RNN") == 1 and "_foreach" not in ops


def test_a_compiled_lstm_runs_rnn_as_one_kernel_saving_values_only_for_a_backward(
        monkeypatch):
    monkeypatch.setenv("STRAIGHTDOPE_FUSED_RNN", "1")
    from straightdope import sym
    from straightdope.compiler import NumbaBackend
    from straightdope.graph import Graph, annotate
    from straightdope.symbol.autodiff import differentiate
    layer = rnn.LSTM(8, num_layers=2)
    layer.initialize()
    layer(nd.ones((5, 3, 4)))
    out = layer(sym.var("data"))
    params = layer.collect_params().values()
    shapes = {"data": (5, 3, 4), **{p.name: p.shape for p in params}}
    training = differentiate(out, [p.name for p in params]).forward
    saved = {}
    for name, symbol, is_train in (("inference", out, False), ("training", training, True)):
        graph = annotate(Graph.from_symbol(symbol), shapes)
        exe = NumbaBackend().for_shapes(graph, is_train, compile=False)
        how = [(node, where) for _, node, where in exe.placements() if node.op.name == "RNN"]
        assert [where for _, where in how] == ["kernel"]
        node = how[0][0]
        saved[name] = int(np.prod(node.shapes[node.num_outputs - 1]))
        assert "k_rnn.forward(" in exe.stages["source"]
    # inference saves nothing (lowering gives the unread reserve no size); training saves
    # per layer the gates and c of every step, and the first layer's output
    assert saved["inference"] == 0
    assert saved["training"] == 5 * 3 * (2 * 5 * 8 + 8)


def test_fused_rnn_knob_takes_only_0_or_1(monkeypatch):
    from straightdope import config
    monkeypatch.setenv("STRAIGHTDOPE_FUSED_RNN", "yes")
    with pytest.raises(ValueError, match="STRAIGHTDOPE_FUSED_RNN must be 0 or 1"):
        config.fused_rnn()
    monkeypatch.delenv("STRAIGHTDOPE_FUSED_RNN")
    assert config.fused_rnn() is False
