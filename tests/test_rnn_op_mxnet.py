"""The fused RNN op as MXNet 1.9.1's test_operator uses it: dropout `p` between layers
while training (src/operator/rnn_impl.h), float64 data and parameters, and its gradient
through an executor bound with grad_req='write'."""
import numpy as np
import pytest

import straightdope as mx
from straightdope.ops.rnn import parameter_count


def _relu_stack(num_layers, hidden, p):
    """rnn_relu layers where layer 0 outputs 1 everywhere (i2h and h2h zero, bias 1) and
    every later layer copies its (dropped) input (i2h the identity, no bias, h2h zero):
    the last output is the product of the dropout masks between the layers."""
    attrs = {"state_size": hidden, "num_layers": num_layers, "mode": "rnn_relu", "p": p}
    first = [np.zeros(hidden), np.zeros(hidden * hidden)]
    later = [np.eye(hidden).ravel(), np.zeros(hidden * hidden)] * (num_layers - 1)
    biases = [np.ones(hidden), np.zeros(hidden)] + [np.zeros(2 * hidden)] * (num_layers - 1)
    params = np.concatenate(first + later + biases)
    assert params.size == parameter_count(attrs, 1)
    return attrs, mx.nd.array(params)


def _run(attrs, x, params, train, state_outputs=False):
    state = mx.nd.zeros((attrs["num_layers"], x.shape[1], attrs["state_size"]))
    with mx.autograd.train_mode() if train else mx.autograd.predict_mode():
        return mx.nd.RNN(x, params, state, state_outputs=state_outputs, **attrs)


def test_training_zeroes_the_expected_fraction_between_layers_and_scales_the_rest():
    p, hidden = 0.3, 200
    x = mx.nd.ones((5, 8, 1))
    for num_layers in (2, 3):
        attrs, params = _relu_stack(num_layers, hidden, p)
        mx.random.seed(11)
        out, state = _run(attrs, x, params, train=True, state_outputs=True)
        out = out.asnumpy()
        kept = 1 - (1 - p) ** (num_layers - 1)     # one mask per layer boundary
        assert abs((out == 0).mean() - kept) < 0.02, (num_layers, (out == 0).mean())
        # the kept values are scaled by 1 / (1 - p) at each boundary
        np.testing.assert_allclose(np.unique(out[out != 0]), [(1 - p) ** (1 - num_layers)],
                                   rtol=1e-6)
        # the states are the layers' own outputs: layer 0's is not dropped
        np.testing.assert_array_equal(state.asnumpy()[0], 1.0)


def test_inference_and_p_zero_are_not_dropped():
    attrs, params = _relu_stack(3, 50, 0.5)
    x = mx.nd.ones((4, 3, 1))
    inference = _run(attrs, x, params, train=False).asnumpy()
    np.testing.assert_array_equal(inference, 1.0)
    no_dropout = _run(dict(attrs, p=0.0), x, params, train=True).asnumpy()
    np.testing.assert_array_equal(no_dropout, 1.0)
    assert (_run(attrs, x, params, train=True).asnumpy() == 0).any()


def test_p_zero_training_equals_inference_for_every_cell():
    rng = np.random.default_rng(0)
    for mode, gates in (("lstm", 4), ("gru", 3), ("rnn_tanh", 1)):
        attrs = {"state_size": 4, "num_layers": 3, "mode": mode, "p": 0.0}
        x = mx.nd.array(rng.normal(size=(6, 2, 3)))
        params = mx.nd.array(rng.uniform(-0.5, 0.5, parameter_count(attrs, 3)))
        state = [mx.nd.zeros((3, 2, 4))] * (2 if mode == "lstm" else 1)
        with mx.autograd.train_mode():
            train = mx.nd.RNN(x, params, *state, **attrs).asnumpy()
        inference = mx.nd.RNN(x, params, *state, **attrs).asnumpy()
        np.testing.assert_array_equal(train, inference)
        with mx.autograd.train_mode():
            dropped = mx.nd.RNN(x, params, *state, **dict(attrs, p=0.5)).asnumpy()
        assert not np.allclose(dropped, inference)


def _numpy_rnn_tanh(x, params, h, hidden):
    """One rnn_tanh layer in float64: h = tanh(W x + b + U h + c)."""
    size = x.shape[2]
    w = params[:hidden * size].reshape(hidden, size)
    u = params[hidden * size:hidden * (size + hidden)].reshape(hidden, hidden)
    b, c = np.split(params[hidden * (size + hidden):], 2)
    out = []
    for step in x:
        h = np.tanh(step @ w.T + b + h @ u.T + c)
        out.append(h)
    return np.stack(out)


def test_float64_data_and_parameters_compute_in_float64():
    rng = np.random.default_rng(3)
    x, params = rng.normal(size=(4, 2, 3)), rng.normal(size=5 * (3 + 5 + 2))
    h0 = rng.normal(size=(1, 2, 5))
    s = mx.sym.RNN(mx.sym.var("x"), mx.sym.var("p"), mx.sym.var("h"), state_size=5,
                   num_layers=1, mode="rnn_tanh")
    args = {"x": mx.nd.array(x, dtype="float64"), "p": mx.nd.array(params, dtype="float64"),
            "h": mx.nd.array(h0, dtype="float64")}
    grads = {k: mx.nd.zeros(v.shape, dtype="float64") for k, v in args.items()}
    ex = s.bind(mx.cpu(), args, args_grad=grads, grad_req="write")
    out = ex.forward(is_train=True)[0]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), _numpy_rnn_tanh(x, params, h0[0], 5),
                               rtol=1e-13, atol=1e-14)
    ex.backward(mx.nd.ones(out.shape, dtype="float64"))
    assert all(g.dtype == np.float64 for g in grads.values())
    # d sum(out) / d x by central differences on the float64 reference
    numeric = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += 1e-6
        minus[idx] -= 1e-6
        numeric[idx] = (_numpy_rnn_tanh(plus, params, h0[0], 5).sum()
                        - _numpy_rnn_tanh(minus, params, h0[0], 5).sum()) / 2e-6
    np.testing.assert_allclose(grads["x"].asnumpy(), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_the_gradient_with_dropout_uses_the_masks_of_its_forward(mode):
    """Re-seeding before each forward draws the same masks: the loss is then a smooth
    function of the parameters, and the backward must match its finite differences."""
    rng = np.random.default_rng(5)
    attrs = {"state_size": 3, "num_layers": 3, "mode": mode, "p": 0.4, "bidirectional": True}
    x = rng.normal(size=(4, 2, 2))
    params = rng.uniform(-0.6, 0.6, parameter_count(attrs, 2))
    states = [np.zeros((6, 2, 3))] * (2 if mode == "lstm" else 1)
    head = rng.normal(size=(4, 2, 6))

    def loss(params, keep_grad=False):
        xs = [mx.nd.array(a, dtype="float64") for a in [x, params] + states]
        xs[1].attach_grad()
        mx.random.seed(2)
        with mx.autograd.record(train_mode=True):
            out = mx.nd.RNN(*xs, **attrs)
            total = (out * mx.nd.array(head, dtype="float64")).sum()
        if keep_grad:
            total.backward()
            return xs[1].grad.asnumpy()
        return float(total.asscalar())

    analytic = loss(params, keep_grad=True)
    picks = rng.choice(params.size, 40, replace=False)
    for i in picks:
        plus, minus = params.copy(), params.copy()
        plus[i] += 1e-6
        minus[i] -= 1e-6
        numeric = (loss(plus) - loss(minus)) / 2e-6
        np.testing.assert_allclose(analytic[i], numeric, rtol=1e-4, atol=1e-7)
    with mx.autograd.predict_mode():      # and the dropout did act: training differs
        assert loss(params) != float((mx.nd.RNN(*[mx.nd.array(a, dtype="float64") for a in
                                                   [x, params] + states], **attrs)
                                      * mx.nd.array(head, dtype="float64")).sum().asscalar())


def test_a_bound_executor_gives_the_gradients_autograd_gives():
    rng = np.random.default_rng(8)
    attrs = {"state_size": 4, "num_layers": 2, "mode": "lstm", "p": 0.5,
             "state_outputs": True}
    arrays = [rng.normal(size=(5, 3, 2)), rng.uniform(-0.5, 0.5, parameter_count(attrs, 2)),
              rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))]
    names = ["x", "params", "h", "c"]
    heads = [rng.normal(size=s) for s in [(5, 3, 4), (2, 3, 4), (2, 3, 4)]]
    s = mx.sym.RNN(*[mx.sym.var(n) for n in names], **attrs)
    args = {n: mx.nd.array(a) for n, a in zip(names, arrays)}
    grads = {n: mx.nd.zeros(a.shape) for n, a in zip(names, arrays)}
    ex = s.bind(mx.cpu(), args, args_grad=grads, grad_req="write")
    mx.random.seed(4)
    bound = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(h) for h in heads])

    xs = [mx.nd.array(a) for a in arrays]
    for a in xs:
        a.attach_grad()
    mx.random.seed(4)
    with mx.autograd.record(train_mode=True):
        outs = mx.nd.RNN(*xs, **attrs)
    mx.autograd.backward(outs, [mx.nd.array(h) for h in heads])
    for got, want in zip(bound, outs):
        np.testing.assert_allclose(got, want.asnumpy(), rtol=1e-5, atol=1e-6)
    for n, a in zip(names, xs):
        np.testing.assert_allclose(grads[n].asnumpy(), a.grad.asnumpy(), rtol=1e-4, atol=1e-5)


def test_a_hybridized_block_with_the_op_trains_like_the_imperative_one():
    from straightdope.gluon import HybridBlock
    attrs = {"state_size": 4, "num_layers": 2, "mode": "gru", "p": 0.5}

    class Net(HybridBlock):
        def __init__(self):
            super().__init__()
            self.w = self.params.get("w", shape=(parameter_count(attrs, 3),))

        def hybrid_forward(self, F, x, h, w):
            return F.RNN(x, w, h, **attrs) * 2

    rng = np.random.default_rng(0)
    x, h = mx.nd.array(rng.normal(size=(5, 2, 3))), mx.nd.array(rng.normal(size=(2, 2, 4)))
    weights = mx.nd.array(rng.uniform(-0.5, 0.5, parameter_count(attrs, 3)))
    results = []
    for hybridize in (False, True):
        net = Net()
        net.initialize()
        net.w.set_data(weights)
        if hybridize:
            net.hybridize()
        x.attach_grad()
        mx.random.seed(7)
        with mx.autograd.record():
            y = net(x, h)
        y.backward()
        results.append([y.asnumpy(), x.grad.asnumpy(), net.w.grad().asnumpy()])
        assert not np.allclose(net(x, h).asnumpy(), y.asnumpy())   # inference: no dropout
    for imperative, hybridized in zip(*results):
        np.testing.assert_allclose(hybridized, imperative, rtol=1e-6, atol=1e-7)
