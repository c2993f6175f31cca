"""Recurrent cells against real MXNet 1.9.1: the same weights and inputs give MXNet's
outputs, final states and gradients (rtol 1e-4), imperatively and hybridized.

The fixtures (tests/fixtures/mxnet_rnn_cells/*.npz, plain arrays) were written by MXNet
1.9.1 itself with scripts/make_mxnet_rnn_cell_fixtures.py; the builders below make the
same cells with the same prefixes, so the parameter names line up.
"""
import os

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, gluon, nd
from straightdope.gluon import rnn

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_rnn_cells")
H = 4


def load(name):
    with np.load(os.path.join(HERE, name + ".npz"), allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    assert str(data["meta:mxnet_version"]) == "1.9.1"
    return data


def _stack():
    stack = rnn.HybridSequentialRNNCell(prefix="stack_")
    with stack.name_scope():
        stack.add(rnn.LSTMCell(H, prefix="a_"))
        stack.add(rnn.ResidualCell(rnn.GRUCell(H, prefix="b_")))
    return stack


# case: (builder, layout, merge_outputs), as in the generator script
CASES = {
    "lstm_valid_length": (lambda: rnn.LSTMCell(H, prefix="lstm_"), "NTC", True),
    "gru_valid_length": (lambda: rnn.GRUCell(H, prefix="gru_"), "NTC", True),
    "rnn_valid_length_tnc": (lambda: rnn.RNNCell(H, activation="relu", prefix="rnn_"), "TNC",
                             True),
    "bidirectional_valid_length": (lambda: rnn.BidirectionalCell(
        rnn.LSTMCell(H, prefix="l_"), rnn.GRUCell(H, prefix="r_")), "NTC", True),
    "bidirectional_valid_length_list": (lambda: rnn.BidirectionalCell(
        rnn.GRUCell(H, prefix="l_"), rnn.LSTMCell(H, prefix="r_")), "TNC", False),
    "bidirectional_no_valid_length": (lambda: rnn.BidirectionalCell(
        rnn.LSTMCell(H, prefix="l_"), rnn.LSTMCell(H, prefix="r_")), "NTC", True),
    "sequential_residual_valid_length": (_stack, "NTC", True),
    "residual_bidirectional_valid_length": (lambda: rnn.ResidualCell(rnn.BidirectionalCell(
        rnn.GRUCell(1, prefix="l_"), rnn.GRUCell(1, prefix="r_"))), "NTC", True),
    "zoneout_inference": (lambda: rnn.ZoneoutCell(rnn.LSTMCell(H, prefix="z_"), 0.5, 0.5),
                          "NTC", True),
    "lstmp_cell_valid_length": (lambda: gluon.contrib.rnn.LSTMPCell(H, 3, prefix="p_"),
                                "NTC", True),
}


class Unrolled(gluon.HybridBlock):
    """cell.unroll inside a HybridBlock, so that it can be hybridized: (outputs merged,
    *final states)."""

    def __init__(self, cell, length, layout, merge):
        super().__init__(prefix="")
        self.cell = cell
        self._length, self._layout, self._merge = length, layout, merge

    def hybrid_forward(self, F, x, valid_length=None):
        outs, states = self.cell.unroll(self._length, x, layout=self._layout,
                                        merge_outputs=self._merge, valid_length=valid_length)
        if not self._merge:
            outs = F.stack(*outs, axis=self._layout.find("T"))
        return tuple([outs] + list(states))


def close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_unroll_gives_mxnet_outputs_states_and_gradients(case, hybridize):
    data = load(case)
    build, layout, merge = CASES[case]
    x = data["in:x"]
    net = Unrolled(build(), x.shape[layout.find("T")], layout, merge)
    net.initialize()
    args = [nd.array(x)] + ([nd.array(data["in:valid_length"])]
                            if "in:valid_length" in data else [])
    net(*args)                                        # deferred shapes
    params = net.collect_params()
    names = sorted(k[len("param:"):] for k in data if k.startswith("param:"))
    assert sorted(params.keys()) == names             # MXNet's parameter names
    for name in names:
        params[name].set_data(nd.array(data["param:" + name]))
    if hybridize:
        net.hybridize()
    xs = args[0]
    xs.attach_grad()
    with autograd.record(train_mode=not case.startswith("zoneout")):   # as the fixture
        results = net(*args)
        loss = (results[0] * nd.array(data["in:head"])).sum()
    loss.backward()
    n_out = len([k for k in data if k.startswith("out:")])
    assert len(results) == n_out
    for k, got in enumerate(results):
        close(got.asnumpy(), data[f"out:{k}"], f"{case} output {k}")
    for name in names:
        close(params[name].grad().asnumpy(), data["grad:" + name], f"{case} d/d{name}")
    close(xs.grad.asnumpy(), data["grad:x"], f"{case} d/dx")


def test_valid_length_zeroes_padding_and_backward_direction_starts_at_each_true_end():
    """What the fixture checks in numbers, said directly: with valid_length, the padding
    steps' outputs are 0 and the backward half at a sequence's last true step is the
    backward cell's first step on that step's input alone."""
    data = load("bidirectional_valid_length")
    build, layout, merge = CASES["bidirectional_valid_length"]
    cell = build()
    cell.initialize()
    x, vl = nd.array(data["in:x"]), nd.array(data["in:valid_length"])
    cell.unroll(5, x, layout=layout, merge_outputs=True, valid_length=vl)
    for name, p in cell.collect_params().items():
        p.set_data(nd.array(data["param:" + name]))
    out, _ = cell.unroll(5, x, layout=layout, merge_outputs=True, valid_length=vl)
    out = out.asnumpy()
    for b, n in enumerate(data["in:valid_length"].astype(int)):
        assert np.all(out[b, n:] == 0)
        alone, _ = cell.r_cell.unroll(1, x[b:b + 1, n - 1:n], layout="NTC", merge_outputs=True)
        close(out[b, n - 1, H:], alone.asnumpy()[0, 0], f"sequence {b}")


def test_lstm_projection_layer_gives_mxnet_outputs_and_states():
    data = load("lstm_projection_layer")
    layer = rnn.LSTM(H, num_layers=2, bidirectional=True, projection_size=3, prefix="lstmp_")
    layer.initialize()
    x, h0, c0 = (nd.array(data[k]) for k in ("in:x", "in:h0", "in:c0"))
    layer(x, [h0, c0])
    params = layer.collect_params()
    names = sorted(k[len("param:"):] for k in data if k.startswith("param:"))
    assert sorted(params.keys()) == names
    for name in names:
        params[name].set_data(nd.array(data["param:" + name]))
    for hybridize in (False, True):
        layer.hybridize(active=hybridize)
        out, states = layer(x, [h0, c0])
        for k, got in enumerate([out] + list(states)):
            close(got.asnumpy(), data[f"out:{k}"], f"output {k}, hybridized={hybridize}")


def test_lstm_bias_initializer_gives_mxnet_values():
    data = load("lstm_bias_init")
    cell = rnn.LSTMCell(H, i2h_bias_initializer=mx.init.LSTMBias(2.5), prefix="bias_")
    cell.initialize()
    cell(nd.ones((1, 2)), cell.begin_state(1))
    np.testing.assert_array_equal(cell.i2h_bias.data().asnumpy(), data["out:0"])
    np.testing.assert_array_equal(cell.h2h_bias.data().asnumpy(), np.zeros(4 * H))


def test_while_loop_formats_and_values_as_mxnet():
    data = load("while_loop")
    outs, (i, s) = nd.contrib.while_loop(lambda i, s: i < 4,
                                         lambda i, s: (None, (i + 1, s + i)),
                                         [nd.array([0.0]), nd.array([1.0])], max_iterations=7)
    assert (isinstance(outs, list) and not outs) == bool(data["meta:none_outputs_is_list"])
    np.testing.assert_array_equal(i.asnumpy(), data["out:final_i"])
    np.testing.assert_array_equal(s.asnumpy(), data["out:final_s"])
    single, last = nd.contrib.while_loop(lambda i: i < 3, lambda i: (i * 2, i + 1),
                                         nd.array([0.0]), max_iterations=6)
    assert isinstance(single, nd.NDArray) == bool(data["meta:single_is_ndarray"])
    assert single.shape == tuple(data["out:single_shape"])          # padded to 6 rows
    np.testing.assert_array_equal(single.asnumpy()[:3], data["out:single_rows_taken"])
    np.testing.assert_array_equal(single.asnumpy()[3:], 0)         # MXNet: uninitialised
    np.testing.assert_array_equal(last.asnumpy(), data["out:single_last"])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["bidirectional_valid_length", "sequential_residual_valid_length"])
def test_compiled_unroll_with_valid_length_gives_mxnet_numbers(case):
    """The same through the Numba-compiled graph (compile='sync': no reference tier first);
    the Sequence* ops run in NumPy between compiled segments."""
    data = load(case)
    build, layout, merge = CASES[case]
    net = Unrolled(build(), data["in:x"].shape[1], layout, merge)
    net.initialize()
    args = [nd.array(data["in:x"]), nd.array(data["in:valid_length"])]
    net(*args)
    for name, p in net.collect_params().items():
        p.set_data(nd.array(data["param:" + name]))
    net.hybridize(compile="sync")
    args[0].attach_grad()
    with autograd.record():
        results = net(*args)
        loss = (results[0] * nd.array(data["in:head"])).sum()
    loss.backward()
    for k, got in enumerate(results):
        close(got.asnumpy(), data[f"out:{k}"], f"{case} output {k}")
    close(args[0].grad.asnumpy(), data["grad:x"], f"{case} d/dx")
