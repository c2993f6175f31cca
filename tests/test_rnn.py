"""gluon.rnn: MXNet's parameter names and gate packing, imperative vs hybridized outputs
and gradients for every layer and cell, states in and out, deferred input size, errors."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.gluon import rnn
from straightdope.gluon.parameter import shape_is_known


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm(x, h, c, wi, wh, bi, bh):
    """One LSTM layer over x (T, N, C) in NumPy, gates in MXNet's order i, f, g, o."""
    outs = []
    for t in range(x.shape[0]):
        gates = x[t] @ wi.T + bi + h @ wh.T + bh
        i, f, g, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def numpy_gru(x, h, wi, wh, bi, bh):
    outs = []
    for t in range(x.shape[0]):
        xr, xz, xn = np.split(x[t] @ wi.T + bi, 3, axis=1)
        hr, hz, hn = np.split(h @ wh.T + bh, 3, axis=1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        h = (1 - z) * np.tanh(xn + r * hn) + z * h
        outs.append(h)
    return np.stack(outs), h


def values_and_grads(block, x, call):
    """Outputs, input gradient and parameter gradients of sum(all outputs)."""
    x.attach_grad()
    with autograd.record():
        outs = call(block, x)
        loss = sum(o.sum() for o in outs)
    loss.backward()
    return [o.asnumpy() for o in outs] + [x.grad.asnumpy().copy()] + \
        [p.grad().asnumpy().copy() for p in block.collect_params().values()]


def assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5)


def test_layers_have_mxnet_parameter_names_and_shapes():
    with mx.name.NameManager():         # names counted from 0, whatever other tests made
        layer = rnn.LSTM(8, num_layers=2, bidirectional=True, input_size=3)
        gru = rnn.GRU(5)
        cell = rnn.LSTMCell(4, input_size=2)
    shapes = {k: p.shape for k, p in layer.collect_params().items()}
    assert shapes["lstm0_l0_i2h_weight"] == (32, 3)
    assert shapes["lstm0_r0_i2h_weight"] == (32, 3)
    assert shapes["lstm0_l1_i2h_weight"] == (32, 16)      # both directions feed layer 1
    assert shapes["lstm0_l0_h2h_weight"] == (32, 8)
    assert shapes["lstm0_r1_h2h_bias"] == (32,)
    assert len(shapes) == 16
    assert {k: p.shape for k, p in gru.collect_params().items()}["gru0_l0_h2h_weight"] == (15, 5)
    assert {k: p.shape for k, p in cell.collect_params().items()} == {
        "lstm1_i2h_weight": (16, 2), "lstm1_h2h_weight": (16, 4),
        "lstm1_i2h_bias": (16,), "lstm1_h2h_bias": (16,)}


def test_lstm_layer_computes_mxnet_gate_order_like_numpy():
    layer = rnn.LSTM(4, input_size=3)
    layer.initialize(mx.init.Uniform(0.5))
    x = np.random.RandomState(0).rand(5, 2, 3).astype("float32")
    h0 = np.random.RandomState(1).rand(1, 2, 4).astype("float32")
    c0 = np.random.RandomState(2).rand(1, 2, 4).astype("float32")
    out, (h, c) = layer(nd.array(x), [nd.array(h0), nd.array(c0)])
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in layer.collect_params().items()}
    ref, ref_h, ref_c = numpy_lstm(x, h0[0], c0[0], p["l0_i2h_weight"], p["l0_h2h_weight"],
                                   p["l0_i2h_bias"], p["l0_h2h_bias"])
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy()[0], ref_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy()[0], ref_c, rtol=1e-5, atol=1e-6)


def test_gru_cell_and_gru_layer_agree_with_numpy_when_sharing_parameters():
    layer = rnn.GRU(4, input_size=3, layout="NTC")
    layer.initialize(mx.init.Uniform(0.5))
    x = np.random.RandomState(0).rand(2, 6, 3).astype("float32")
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in layer.collect_params().items()}
    ref, _ = numpy_gru(x.transpose(1, 0, 2), np.zeros((2, 4), "f"), p["l0_i2h_weight"],
                       p["l0_h2h_weight"], p["l0_i2h_bias"], p["l0_h2h_bias"])
    np.testing.assert_allclose(layer(nd.array(x)).asnumpy(), ref.transpose(1, 0, 2),
                               rtol=1e-5, atol=1e-6)
    cell = rnn.GRUCell(4, input_size=3)
    cell.initialize()
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(cell, name).set_data(nd.array(p["l0_" + name]))
    outs, _ = cell.unroll(6, nd.array(x), layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), ref.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: rnn.RNN(5, num_layers=2, activation="tanh"),
    lambda: rnn.RNN(5, activation="relu", bidirectional=True, layout="NTC"),
    lambda: rnn.LSTM(5, num_layers=2, bidirectional=True, layout="NTC"),
    lambda: rnn.LSTM(5, num_layers=2),
    lambda: rnn.GRU(5, num_layers=2, bidirectional=True),
], ids=["rnn-tanh-2", "rnn-relu-bi-ntc", "lstm-bi-2-ntc", "lstm-2", "gru-bi-2"])
def test_layers_give_equal_outputs_states_and_gradients_imperative_and_hybridized(make):
    layer = make()
    layer.initialize(mx.init.Uniform(0.3))
    x = nd.array(np.random.RandomState(0).rand(3, 4, 6))

    def call(block, data):
        batch = data.shape[block._layout.find("N")]
        out, states = block(data, block.begin_state(batch))
        return [out] + list(states)
    imperative = values_and_grads(layer, x, call)
    layer.hybridize()
    hybridized = values_and_grads(layer, x, call)
    assert_same(imperative, hybridized)
    assert layer._cached_op is not None


def test_layer_without_states_returns_only_the_output_in_both_modes():
    layer = rnn.LSTM(3, layout="NTC")
    layer.initialize()
    x = nd.ones((2, 5, 4))
    out = layer(x)
    assert out.shape == (2, 5, 3)
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), out.asnumpy(), rtol=1e-5)


def test_a_hybridized_layer_is_one_loop_node_per_layer_and_direction():
    layer = rnn.GRU(4, num_layers=2, bidirectional=True)
    layer.initialize()
    layer.hybridize()
    layer(nd.ones((7, 2, 3)))
    _, out = layer._cached_graph
    ops = [n.op.name for n in out.walk() if n.op is not None]
    assert ops.count("_foreach") == 4
    # the graph does not grow with the sequence length
    assert len(ops) < 60


def test_input_size_is_learned_from_the_first_batch():
    layer = rnn.LSTM(6, num_layers=2)
    layer.initialize()
    assert not shape_is_known(layer.l0_i2h_weight.shape)
    layer.hybridize()
    layer(nd.ones((3, 2, 7)))
    assert layer.l0_i2h_weight.shape == (24, 7)
    assert layer.l1_i2h_weight.shape == (24, 6)
    cell = rnn.GRUCell(3)
    cell.initialize()
    cell(nd.ones((2, 9)), cell.begin_state(2))
    assert cell.i2h_weight.shape == (9, 9)


@pytest.mark.parametrize("make", [
    lambda: rnn.RNNCell(5, activation="relu"), lambda: rnn.LSTMCell(5), lambda: rnn.GRUCell(5),
    lambda: rnn.SequentialRNNCell().add(rnn.LSTMCell(5)).add(rnn.DropoutCell(0.0))
    .add(rnn.GRUCell(6)),
    lambda: rnn.HybridSequentialRNNCell().add(rnn.RNNCell(5)).add(rnn.LSTMCell(3)),
    lambda: rnn.ResidualCell(rnn.GRUCell(4)),
    lambda: rnn.BidirectionalCell(rnn.LSTMCell(5), rnn.GRUCell(3)),
], ids=["rnn", "lstm", "gru", "sequential", "hybrid-sequential", "residual", "bidirectional"])
def test_cells_unroll_with_equal_outputs_and_gradients_imperative_and_hybridized(make):
    cell = make()
    cell.initialize(mx.init.Uniform(0.3))
    x = nd.array(np.random.RandomState(0).rand(2, 3, 4))

    def call(block, data):
        outs, states = block.unroll(3, data, layout="NTC", merge_outputs=True)
        return [outs] + list(states)
    imperative = values_and_grads(cell, x, call)
    cell.hybridize()
    hybridized = values_and_grads(cell, x, call)
    assert_same(imperative, hybridized)


def test_unroll_returns_a_list_of_steps_or_one_array_as_asked():
    cell = rnn.LSTMCell(4)
    cell.initialize()
    x = nd.ones((3, 2, 5))          # TNC
    steps, states = cell.unroll(3, x, layout="TNC", merge_outputs=False)
    assert [s.shape for s in steps] == [(2, 4)] * 3
    assert [s.shape for s in states] == [(2, 4), (2, 4)]
    merged, _ = cell.unroll(3, [x[0], x[1], x[2]], layout="TNC", merge_outputs=True)
    assert merged.shape == (3, 2, 4)
    np.testing.assert_allclose(merged.asnumpy()[2], steps[2].asnumpy(), rtol=1e-6)


def test_a_cell_unrolls_symbolically_into_a_graph_with_one_copy_per_step():
    cell = rnn.GRUCell(4, prefix="gru_")
    outs, states = cell.unroll(3, sym.var("data"), layout="TNC", merge_outputs=True)
    assert outs.infer_shape(data=(3, 2, 5))[1] == [(3, 2, 4)]
    assert sorted(outs.list_arguments()) == ["data", "gru_h2h_bias", "gru_h2h_weight",
                                             "gru_i2h_bias", "gru_i2h_weight"]
    names = [n.name for n in outs.walk()]
    assert "gru_t0_i2h" in names and "gru_t2_i2h" in names


def test_bidirectional_cell_cannot_be_stepped():
    cell = rnn.BidirectionalCell(rnn.LSTMCell(2), rnn.LSTMCell(2))
    with pytest.raises(NotImplementedError, match="unroll"):
        cell(nd.ones((1, 2)), cell.begin_state(1))


def test_states_of_the_wrong_shape_are_refused_with_the_expected_shape():
    layer = rnn.LSTM(4, num_layers=2)
    layer.initialize()
    x = nd.ones((5, 3, 2))
    with pytest.raises(ValueError, match=r"State 0 must be \(2, 3, 4\).*got \(1, 3, 4\)"):
        layer(x, [nd.zeros((1, 3, 4)), nd.zeros((2, 3, 4))])
    with pytest.raises(ValueError, match=r"takes 2 state array\(s\) \(\[h, c\]\), got 1"):
        layer(x, nd.zeros((2, 3, 4)))


def test_a_layout_mxnet_does_not_accept_is_refused():
    with pytest.raises(ValueError, match="invalid layout 'NCT'.*'TNC'.*'NTC'"):
        rnn.GRU(3, layout="NCT")
    cell = rnn.RNNCell(3)
    cell.initialize()
    with pytest.raises(ValueError, match="invalid layout 'CTN'"):
        cell.unroll(2, nd.ones((2, 2, 3)), layout="CTN")


def test_dropout_between_layers_is_active_only_while_training():
    layer = rnn.LSTM(8, num_layers=2, dropout=0.5)
    layer.initialize()
    x = nd.ones((4, 2, 3))
    a, b = layer(x), layer(x)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy())       # prediction: no dropout
    with autograd.record():
        c = layer(x)
    assert not np.allclose(a.asnumpy(), c.asnumpy())


def test_parameter_files_of_a_layer_load_into_a_layer_built_the_same_way(tmp_path):
    layer = rnn.LSTM(4, num_layers=2, input_size=3)
    layer.initialize()
    layer.save_parameters(str(tmp_path / "lstm.params"))
    other = rnn.LSTM(4, num_layers=2, input_size=3)
    other.load_parameters(str(tmp_path / "lstm.params"))
    x = nd.ones((2, 1, 3))
    np.testing.assert_allclose(layer(x).asnumpy(), other(x).asnumpy())


def test_zoneout_keeps_each_unit_new_or_previous_while_training_only():
    """ZoneoutCell(zoneout_outputs=p): while training each output unit is either the base
    cell's new output or the zoned output of the step before (0 at step 0), both kinds
    occurring; outside training it is the base cell. States are not zoned here, so the
    base cell's outputs are known from its own unroll."""
    base = rnn.RNNCell(50, prefix="zo_")
    cell = rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    cell.initialize()
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (8, 4, 3)))
    plain, _ = cell.unroll(4, x, layout="NTC", merge_outputs=False)
    base._modified = False                      # run the base cell alone, same weights
    expected, _ = base.unroll(4, x, layout="NTC", merge_outputs=False)
    base._modified = True
    for a, b in zip(plain, expected):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    with autograd.record(train_mode=True):
        zoned, _ = cell.unroll(4, x, layout="NTC", merge_outputs=False)
    previous = np.zeros((8, 50), np.float32)
    took_new = took_old = 0
    for z, e in zip(zoned, expected):
        z, e = z.asnumpy(), e.asnumpy()
        new, old = np.isclose(z, e, rtol=1e-6), np.isclose(z, previous, rtol=1e-6)
        assert np.all(new | old)
        took_new, took_old = took_new + (new & ~old).sum(), took_old + (old & ~new).sum()
        previous = z
    assert took_new > 100 and took_old > 100      # 1600 units, p = 0.5
