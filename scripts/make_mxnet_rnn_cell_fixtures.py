"""Write tests/fixtures/mxnet_rnn_cells/*.npz with real MXNet 1.9.1 (not straightdope).

Run with a Python that has MXNet 1.9.1, outside the repo's venv, e.g.

    python3 -m venv /tmp/mxvenv && /tmp/mxvenv/bin/pip install mxnet==1.9.1 'numpy<1.24'
    /tmp/mxvenv/bin/python scripts/make_mxnet_rnn_cell_fixtures.py

Each file holds one case as plain arrays (no pickles): `param:<name>` the weights,
`in:<name>` the inputs, `out:<k>` what MXNet returned (outputs first, then the states),
`grad:<name>` the gradients of sum(outputs * `in:head`) with respect to the parameters
and the data. tests/test_mxnet_rnn_cells.py loads them and runs the same cells here.
"""
import os
import sys

import numpy as np

import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon import rnn

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mxnet_rnn_cells")
RNG = np.random.RandomState(7)


def uniform(*shape):
    return RNG.uniform(-0.5, 0.5, size=shape).astype(np.float32)


def save(name, block, inputs, outputs, grads=None, head=None):
    arrays = {f"param:{k}": v.data().asnumpy() for k, v in block.collect_params().items()}
    arrays.update({f"in:{k}": np.asarray(v) for k, v in inputs.items()})
    arrays.update({f"out:{k}": o.asnumpy() for k, o in enumerate(outputs)})
    if grads:
        arrays.update({f"grad:{k}": g for k, g in grads.items()})
    if head is not None:
        arrays["in:head"] = head
    arrays["meta:mxnet_version"] = np.array(mx.__version__)
    path = os.path.join(OUT, name + ".npz")
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    print(name, sorted(arrays))


def unroll_case(name, cell, length, layout, x, valid_length, merge=True, grad=True):
    """cell.unroll(valid_length=...) imperatively, with the gradients of a weighted sum."""
    cell.initialize(mx.init.Uniform(0.5))
    xs = nd.array(x)
    vl = nd.array(valid_length) if valid_length is not None else None
    cell.unroll(length, xs, layout=layout, merge_outputs=merge, valid_length=vl)  # shapes
    for p in cell.collect_params().values():        # random values, reproducible
        p.set_data(nd.array(uniform(*p.shape)))
    params = cell.collect_params()
    xs.attach_grad()
    # zoneout is random while training: its case is recorded in inference mode
    with autograd.record(train_mode=not name.startswith("zoneout")):
        outs, states = cell.unroll(length, xs, layout=layout, merge_outputs=merge,
                                   valid_length=vl)
        merged = outs if merge else nd.stack(*outs, axis=layout.find("T"))
        head = uniform(*merged.shape)
        loss = (merged * nd.array(head)).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy() for k, p in params.items()}
    grads["x"] = xs.grad.asnumpy()
    inputs = {"x": x}
    if valid_length is not None:
        inputs["valid_length"] = np.asarray(valid_length, np.float32)
    save(name, cell, inputs, [merged] + list(states), grads if grad else None, head)


def main():
    os.makedirs(OUT, exist_ok=True)
    N, T, C, H = 3, 5, 2, 4
    x_ntc = uniform(N, T, C)
    vl = [5, 2, 3]

    unroll_case("lstm_valid_length", rnn.LSTMCell(H, prefix="lstm_"), T, "NTC", x_ntc, vl)
    unroll_case("gru_valid_length", rnn.GRUCell(H, prefix="gru_"), T, "NTC", x_ntc, vl)
    unroll_case("rnn_valid_length_tnc", rnn.RNNCell(H, activation="relu", prefix="rnn_"), T,
                "TNC", x_ntc.transpose(1, 0, 2).copy(), vl)
    unroll_case("bidirectional_valid_length",
                rnn.BidirectionalCell(rnn.LSTMCell(H, prefix="l_"), rnn.GRUCell(H, prefix="r_")),
                T, "NTC", x_ntc, vl)
    unroll_case("bidirectional_valid_length_list",
                rnn.BidirectionalCell(rnn.GRUCell(H, prefix="l_"), rnn.LSTMCell(H, prefix="r_")),
                T, "TNC", x_ntc.transpose(1, 0, 2).copy(), vl, merge=False)
    unroll_case("bidirectional_no_valid_length",
                rnn.BidirectionalCell(rnn.LSTMCell(H, prefix="l_"), rnn.LSTMCell(H, prefix="r_")),
                T, "NTC", x_ntc, None)
    stack = rnn.HybridSequentialRNNCell(prefix="stack_")
    with stack.name_scope():
        stack.add(rnn.LSTMCell(H, prefix="a_"))
        stack.add(rnn.ResidualCell(rnn.GRUCell(H, prefix="b_")))
    unroll_case("sequential_residual_valid_length", stack, T, "NTC", x_ntc, vl)
    unroll_case("residual_bidirectional_valid_length",
                rnn.ResidualCell(rnn.BidirectionalCell(rnn.GRUCell(1, prefix="l_"),
                                                       rnn.GRUCell(1, prefix="r_"))),
                T, "NTC", x_ntc, vl)
    # zoneout outside autograd.train_mode: the base cell's numbers (its masks are ones)
    unroll_case("zoneout_inference", rnn.ZoneoutCell(rnn.LSTMCell(H, prefix="z_"), 0.5, 0.5),
                T, "NTC", x_ntc, None)
    unroll_case("lstmp_cell_valid_length",
                gluon.contrib.rnn.LSTMPCell(H, 3, prefix="p_"), T, "NTC", x_ntc, vl)

    # LSTM layers with a projection, two layers, both directions, given states
    layer = rnn.LSTM(H, num_layers=2, bidirectional=True, projection_size=3, prefix="lstmp_")
    layer.initialize(mx.init.Uniform(0.5))
    x_tnc = uniform(T, N, C)
    h0, c0 = uniform(4, N, 3), uniform(4, N, H)
    layer(nd.array(x_tnc), [nd.array(h0), nd.array(c0)])
    for p in layer.collect_params().values():
        p.set_data(nd.array(uniform(*p.shape)))
    # forward only: MXNet 1.9.1 has "no training support for LSTM with projection on CPU"
    out, states = layer(nd.array(x_tnc), [nd.array(h0), nd.array(c0)])
    save("lstm_projection_layer", layer, {"x": x_tnc, "h0": h0, "c0": c0}, [out] + list(states))

    # init.LSTMBias
    cell = rnn.LSTMCell(H, i2h_bias_initializer=mx.init.LSTMBias(2.5), prefix="bias_")
    cell.initialize()
    cell(nd.ones((1, C)), cell.begin_state(1))
    save("lstm_bias_init", cell, {}, [cell.i2h_bias.data()])

    # while_loop: outputs of the steps taken (MXNet pads to max_iterations rows with
    # uninitialised memory: only the step count and the rows taken are kept)
    outs, (i, s) = nd.contrib.while_loop(lambda i, s: i < 4,
                                        lambda i, s: (None, (i + 1, s + i)),
                                        [nd.array([0.0]), nd.array([1.0])], max_iterations=7)
    single, last = nd.contrib.while_loop(lambda i: i < 3, lambda i: (i * 2, i + 1),
                                         nd.array([0.0]), max_iterations=6)
    arrays = {"out:final_i": i.asnumpy(), "out:final_s": s.asnumpy(),
              "meta:none_outputs_is_list": np.array(isinstance(outs, list) and not outs),
              "meta:single_is_ndarray": np.array(isinstance(single, nd.NDArray)),
              "out:single_shape": np.array(single.shape),
              "out:single_rows_taken": single.asnumpy()[:3], "out:single_last": last.asnumpy(),
              "meta:mxnet_version": np.array(mx.__version__)}
    np.savez(os.path.join(OUT, "while_loop.npz"), **arrays)
    print("while_loop", sorted(arrays))
    return 0


if __name__ == "__main__":
    sys.exit(main())
