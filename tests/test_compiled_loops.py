"""Compiled loops (compiler/loops.py): a foreach saves what its backward reads instead of
recomputing it, saves nothing when no backward follows, and the fused gate maths stays
in float32 (compiler/kernels/fmath.py)."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.compiler import NumbaBackend
from straightdope.compiler.kernels import fmath
from straightdope.graph import Graph, annotate
from straightdope.symbol.autodiff import differentiate


def _ulps(got, ref):
    """Distance in float32 units in the last place, where the reference is normal."""
    ref = np.asarray(ref, np.float64)
    ok = np.isfinite(ref) & (np.abs(ref) > np.finfo(np.float32).tiny)
    spacing = np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
    return np.abs(got[ok].astype(np.float64) - ref[ok]) / spacing


@pytest.fixture(scope="module")
def float32_kernels():
    from numba import njit

    @njit
    def run(x, exp, tanh):
        for i in range(x.size):
            exp[i] = fmath.exp32(x[i])
            tanh[i] = fmath.tanh32(x[i])
    return run


def test_float32_exp_and_tanh_are_within_three_ulp_of_float64_maths(float32_kernels):
    x = np.concatenate([np.linspace(-90, 90, 400001), np.linspace(-1, 1, 100001)])
    x = x.astype(np.float32)
    exp, tanh = np.empty_like(x), np.empty_like(x)
    float32_kernels(x, exp, tanh)
    wide = x.astype(np.float64)
    with np.errstate(over="ignore"):
        assert _ulps(exp, np.exp(wide).astype(np.float32)).max() <= 1
    assert _ulps(tanh, np.tanh(wide)).max() <= 3


def test_float32_exp_and_tanh_keep_nan_infinities_and_signed_limits(float32_kernels):
    x = np.array([np.nan, np.inf, -np.inf, 89.0, -104.0, 0.0, 1e-30, -1e-30], np.float32)
    exp, tanh = np.empty_like(x), np.empty_like(x)
    float32_kernels(x, exp, tanh)
    np.testing.assert_array_equal(exp, [np.nan, np.inf, 0, np.inf, 0, 1, 1, 1])
    np.testing.assert_array_equal(tanh, np.float32([np.nan, 1, -1, 1, -1, 0, 1e-30, -1e-30]))


def test_a_float32_fused_loop_types_its_literals_and_calls_the_vectorizable_maths():
    x = sym.var("x")
    graph = annotate(Graph.from_symbol(sym.sigmoid(x) * 2.0 + sym.tanh(x)),
                     {"x": (4, 3)}, {"x": np.float32})
    exe = NumbaBackend().compile(graph)
    source = exe.stages["source"]
    assert "k_fmath.exp32(" in source and "k_fmath.tanh32(" in source
    assert "np.exp(" not in source and "np.tanh(" not in source
    assert "np.float32(2.0)" in source
    data = np.random.RandomState(0).uniform(-3, 3, (4, 3)).astype(np.float32)
    out = exe.run([data])[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2.0 / (1.0 + np.exp(-data)) + np.tanh(data), rtol=1e-6)


def _recurrence():
    """h_t = tanh(x_t W + h_(t-1) U) as one traced foreach; the loss reads every step."""
    x, w, u, h0 = sym.var("x"), sym.var("w"), sym.var("u"), sym.var("h0")

    def body(x_t, h):
        h = sym.tanh(sym.dot(x_t, w) + sym.dot(h, u))
        return h, h
    outs, last = sym.contrib.foreach(body, x, h0)
    return sym.sum(outs * outs) + sym.sum(last)


def test_the_backward_of_a_foreach_reads_saved_values_instead_of_recomputing_the_body():
    diff = differentiate(_recurrence(), ["x", "w", "u", "h0"])
    loops = [n for n in diff.backward.walk() if n.op is not None and n.op.name == "_foreach"]
    assert len(loops) == 1
    body_ops = [n.op.name for n in loops[0].subgraphs[0].walk() if n.op is not None]
    # tanh's gradient reads tanh's output, which the forward loop saved at every step
    assert "tanh" not in body_ops
    assert body_ops.count("dot") == 4     # the gradients dx, dW, dh, dU; not the forward dots
    forward_loop = next(n for n in diff.forward.walk()
                        if n.op is not None and n.op.name == "_foreach")
    assert forward_loop.num_outputs() > forward_loop.num_visible()


def test_a_compiled_foreach_saves_per_step_values_in_one_buffer_only_for_a_backward():
    loss = _recurrence()
    shapes = {"x": (5, 2, 3), "w": (3, 4), "u": (4, 4), "h0": (2, 4)}
    dtypes = {name: np.float32 for name in shapes}
    rng = np.random.RandomState(0)
    inputs = {name: rng.uniform(-0.5, 0.5, s).astype(np.float32) for name, s in shapes.items()}
    inference = NumbaBackend().compile(annotate(Graph.from_symbol(loss), shapes, dtypes))
    assert "saved per step" not in inference.stages["steps"]

    diff = differentiate(loss, ["x", "w", "u", "h0"])
    forward = annotate(Graph.from_symbol(diff.forward), shapes, dtypes)
    training = NumbaBackend().compile(forward, is_train=True)
    assert "saved per step for the backward" in training.stages["steps"]
    results = training.run([inputs[name] for name in forward.input_names])
    loop = next(n.id for n in forward.nodes if n.op is not None and n.op.name == "_foreach")
    per_step = [r for e, r in zip(forward.outputs, results) if e[0] == loop and r.ndim == 3]
    assert len(per_step) >= 3              # outputs, the states each step saw, saved values
    assert len({id(r.base) for r in per_step}) == 1 and per_step[0].base is not None
    reference = annotate(Graph.from_symbol(diff.forward), shapes, dtypes)
    from straightdope.graph import run_reference
    expected = run_reference(reference, [inputs[n] for n in reference.input_names], True)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_hybridized_lstm_trains_with_the_gradients_of_the_imperative_one():
    from straightdope.gluon import rnn
    layers = []
    for hybrid in (False, True):
        mx.random.seed(1)
        layer = rnn.LSTM(8, num_layers=2, input_size=5, prefix="trained_")
        layer.initialize(mx.init.Uniform(0.3))
        if hybrid:
            layer.hybridize(static_alloc=True, static_shape=True)
        layers.append(layer)
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (7, 3, 5)))
    grads = []
    for layer in layers:
        for _ in range(2):                     # the second call reuses the buffers
            with autograd.record():
                loss = (layer(x) ** 2).sum()
            loss.backward()
        grads.append([p.grad().asnumpy() for p in layer.collect_params().values()])
    for a, b in zip(*grads):
        assert a.dtype == np.float32
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_backpropagation_through_time_reads_the_sequences_backwards_without_copying_them():
    from straightdope.gluon import rnn
    layer = rnn.GRU(4, input_size=3, prefix="backwards_")
    layer.initialize()
    layer.hybridize()
    x = nd.array(np.random.RandomState(0).rand(5, 2, 3))
    x.attach_grad()
    with autograd.record():
        loss = layer(x).sum()
    loss.backward()
    steps = layer._cached_op.last_plan.backward.stages["steps"]
    assert "(a view, read backwards)" in steps
    assert steps.count("compiled once, run per step") == 1


def test_a_backward_foreach_adds_up_weight_gradients_after_the_loop_in_one_product():
    loss = _recurrence()
    shapes = {"x": (6, 2, 3), "w": (3, 4), "u": (4, 4), "h0": (2, 4)}
    dtypes = {name: np.float32 for name in shapes}
    rng = np.random.RandomState(0)
    inputs = {name: rng.uniform(-0.5, 0.5, s).astype(np.float32) for name, s in shapes.items()}
    diff = differentiate(loss, ["x", "w", "u", "h0"])
    forward = NumbaBackend().compile(annotate(Graph.from_symbol(diff.forward), shapes, dtypes),
                                     is_train=True)
    results = forward.run([inputs[name] for name in forward.graph.input_names])
    values = dict(inputs, **dict(zip(diff.saved_names, results[diff.num_outputs:])))
    values.update({name: np.ones(()) for name in diff.head_names})
    graph = Graph.from_symbol(diff.backward)
    feeds = {name: np.asarray(values[name], np.float32) for name in graph.input_names}
    backward = annotate(graph, {n: v.shape for n, v in feeds.items()},
                        {n: np.float32 for n in feeds})
    exe = NumbaBackend().compile(backward)
    # dW and dU: sums over steps of dot(x_t or h_(t-1), g_t, transpose_a=True)
    assert "2 sums over steps after the loop (loop fission)" in exe.stages["steps"]
    body = next(s for s in exe.current.steps if hasattr(s, "sums")).body.graph
    assert sum(n.op is not None and n.op.name == "dot" for n in body.nodes) == 2  # dx, dh
    from straightdope.graph import run_reference
    expected = run_reference(backward, [feeds[n] for n in backward.input_names], True)
    got = exe.run([feeds[n] for n in backward.input_names])
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
