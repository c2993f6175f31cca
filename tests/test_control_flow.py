"""F.contrib.foreach / while_loop / cond: the same Python functions run imperatively (nd)
and traced into ONE node holding its body (sym), with equal values and gradients, shape
inference, MXNet's JSON (subgraphs inside the node) and clear errors."""
import json

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.gluon import HybridBlock, SymbolBlock
from straightdope.ops import OpError


class Recurrence(HybridBlock):
    """h_t = tanh(x_t W + h_(t-1) U): a foreach whose body reads two parameters."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3, 4))
            self.u = self.params.get("u", shape=(4, 4))

    def hybrid_forward(self, F, x, w, u):
        def body(x_t, h):
            h = F.tanh(F.dot(x_t, w) + F.dot(h, u))
            return h * 2.0, h
        start = F.zeros_like(F.dot(F.slice_axis(x, axis=0, begin=0, end=1).reshape((-3, -2)), w))
        outs, last = F.contrib.foreach(body, x, start)
        return outs, last


def grads_of(net, x):
    x.attach_grad()
    with autograd.record():
        outs, last = net(x)
        loss = (outs * outs).sum() + last.sum()
    loss.backward()
    return [outs.asnumpy(), last.asnumpy(), x.grad.asnumpy().copy()] + \
        [p.grad().asnumpy().copy() for p in net.collect_params().values()]


@pytest.mark.parametrize("executor", ["numpy", "numba"])
def test_foreach_gives_the_same_values_and_gradients_traced_and_imperative(executor):
    net = Recurrence()
    net.initialize(mx.init.Uniform(0.5))
    x = nd.array(np.random.RandomState(0).rand(6, 2, 3))
    imperative = grads_of(net, x)
    net.hybridize(executor=executor)
    traced = grads_of(net, x)
    for a, b in zip(imperative, traced):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    ops = [n.op.name for n in net._cached_graph[1].walk() if n.op is not None]
    assert ops.count("_foreach") == 1


def test_a_foreach_node_reads_what_its_body_reads_from_outside():
    x, w = sym.var("x"), sym.var("w")

    def body(x_t, s):
        return x_t * scaled, s + x_t
    with mx.name.NameManager():         # node names counted from 0
        scaled = w * 2.0                # computed before the loop: an input of the node
        outs, state = sym.contrib.foreach(body, x, sym.var("s0"))
    node = outs.entries[0][0]
    assert node.op.name == "_foreach"
    body_graph, = node.subgraphs
    assert sorted(body_graph.list_inputs()) == ["foreach_data0", "foreach_state0",
                                                "mul_scalar0_output"]
    assert [c.name for c, _ in node.inputs] == ["x", "s0", "mul_scalar0"]
    group = sym.Group([outs, state])
    assert group.list_arguments() == ["x", "s0", "w"]
    _, out_shapes, _ = group.infer_shape(x=(5, 3), s0=(3,), w=(3,))
    assert out_shapes == [(5, 3), (3,)]


def test_foreach_with_several_data_and_states_matches_numpy():
    a, b = np.arange(12.0).reshape(4, 3), np.ones((4, 3))

    def body(F):
        def step(xs, states):
            total, count = states
            return [xs[0] + xs[1], xs[0] * 2], [total + xs[0], count + 1.0]
        return step
    (o1, o2), (total, count) = nd.contrib.foreach(body(nd), [nd.array(a), nd.array(b)],
                                                  [nd.zeros((3,)), nd.zeros((3,))])
    np.testing.assert_allclose(o1.asnumpy(), a + b)
    np.testing.assert_allclose(total.asnumpy(), a.sum(0))
    outs, states = sym.contrib.foreach(body(sym), [sym.var("a"), sym.var("b")],
                                       [sym.var("t0"), sym.var("c0")])
    got = sym.Group(outs + states).eval(a=nd.array(a), b=nd.array(b), t0=nd.zeros((3,)),
                                        c0=nd.zeros((3,)))
    np.testing.assert_allclose(got[1].asnumpy(), a * 2)
    np.testing.assert_allclose(got[3].asnumpy(), np.full(3, 4.0))


def test_while_loop_stops_on_its_condition_and_pads_outputs_as_mxnet():
    def cond(i, s):
        return i < 5

    def func(i, s):
        return [s * 1.0], [i + 1, s + i]
    outs, (i, s) = nd.contrib.while_loop(cond, func, [nd.array([0.0]), nd.array([0.0])],
                                         max_iterations=10)
    # MXNet 1.9.1 gives max_iterations rows imperatively too (padding uninitialised there)
    assert outs[0].shape == (10, 1) and float(i.asnumpy()[0]) == 5
    np.testing.assert_allclose(outs[0].asnumpy()[:5, 0], [0, 0, 1, 3, 6])
    np.testing.assert_allclose(outs[0].asnumpy()[5:], 0)
    assert float(s.asnumpy()[0]) == 0 + 1 + 2 + 3 + 4
    t_outs, t_vars = sym.contrib.while_loop(cond, func, [sym.var("i"), sym.var("s")],
                                            max_iterations=8)
    got = sym.Group(t_outs + t_vars).eval(i=nd.array([0.0]), s=nd.array([0.0]))
    assert got[0].shape == (8, 1)               # padded to max_iterations
    np.testing.assert_allclose(got[0].asnumpy()[:5, 0], [0, 0, 1, 3, 6])
    np.testing.assert_allclose(got[0].asnumpy()[5:], 0)
    assert float(got[2].asnumpy()[0]) == 10


def test_cond_runs_one_branch_and_its_gradient_flows_through_that_branch():
    class Pick(HybridBlock):
        def hybrid_forward(self, F, x):
            return F.contrib.cond(x.sum() > 0, lambda: x * 3.0, lambda: x * x)
    net = Pick()
    for data, grad in (([1.0, 2.0], [3.0, 3.0]), ([-1.0, -2.0], [-2.0, -4.0])):
        for hybrid in (False, True):
            net.hybridize(active=hybrid, executor="numpy")
            x = nd.array(data)
            x.attach_grad()
            with autograd.record():
                y = net(x)
            y.backward()
            np.testing.assert_allclose(x.grad.asnumpy(), grad)


def test_a_model_with_a_loop_round_trips_through_export_and_imports(tmp_path):
    net = Recurrence()
    net.initialize()
    net.hybridize(executor="numpy")
    x = nd.array(np.random.RandomState(1).rand(4, 2, 3))
    before = net(x)
    sym_file, params_file = net.export(str(tmp_path / "rec"))
    doc = json.load(open(sym_file))
    loop = next(n for n in doc["nodes"] if n["op"] == "_foreach")
    assert set(loop["attrs"]) >= {"num_outputs", "num_out_data", "in_data_locs",
                                  "in_state_locs", "remain_locs", "num_args"}
    assert loop["attrs"]["in_data_locs"].startswith("[")       # MXNet prints lists
    assert len(loop["subgraphs"]) == 1 and loop["subgraphs"][0]["heads"]
    loaded = SymbolBlock.imports(sym_file, ["data"], params_file)
    after = loaded(x)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    assert sym.load(sym_file).tojson() == open(sym_file).read()


def test_a_body_whose_state_changes_shape_is_refused_naming_the_step_and_shapes():
    def grow(x_t, s):
        return x_t, sym.concat(s, x_t, dim=0)
    out, state = sym.contrib.foreach(grow, sym.var("x"), sym.var("s"))
    with pytest.raises(OpError, match=r"loop state 0 comes into the body with shape \(2,\) "
                                      r"but the body returns it with shape \(4,\)"):
        sym.Group([out, state]).infer_shape(x=(3, 2), s=(2,))
    with pytest.raises(OpError, match=r"at step 0 the body returns loop state 0 with shape "
                                      r"\(4,\)"):
        nd.contrib.foreach(lambda x_t, s: (x_t, nd.concat(s, x_t, dim=0)), nd.ones((3, 2)),
                           nd.ones((2,)))


def test_outputs_that_change_shape_between_steps_are_refused():
    def body(x_t, s):
        s = s + 1.0
        return nd.ones((int(s.asnumpy()[0]),)), s
    with pytest.raises(OpError, match=r"output 0 with shape \(2,\).*\(1,\) at step 0"):
        nd.contrib.foreach(body, nd.ones((3, 2)), nd.zeros((1,)))


def test_while_loop_traced_without_max_iterations_says_what_to_pass():
    with pytest.raises(OpError, match="max_iterations is required.*Pass max_iterations="):
        sym.contrib.while_loop(lambda i: i < 3, lambda i: ([], [i + 1]), [sym.var("i")])


def test_cond_branches_with_different_shapes_or_counts_are_refused():
    x = sym.var("x")
    with pytest.raises(OpError, match="then_func returns 2 outputs but else_func returns 1"):
        sym.contrib.cond(x.sum() > 0, lambda: [x, x], lambda: x)
    out = sym.contrib.cond(x.sum() > 0, lambda: x, lambda: sym.concat(x, x, dim=0))
    with pytest.raises(OpError, match=r"output 0 has shape \(3,\) in then_func but \(6,\)"):
        out.infer_shape(x=(3,))


def test_a_file_whose_loop_points_outside_its_body_is_refused(tmp_path):
    net = Recurrence()
    net.initialize()
    net.hybridize(executor="numpy")
    net(nd.ones((2, 1, 3)))
    doc = json.loads(net._cached_graph[1].tojson())
    loop = next(n for n in doc["nodes"] if n["op"] == "_foreach")
    loop["subgraphs"][0]["heads"] = [[99, 0, 0]]
    with pytest.raises(mx.symbol.SymbolFileError, match="subgraph 0.*points outside"):
        sym.load_json(json.dumps(doc))


class Power(HybridBlock):
    """While the running product is below a limit, multiply it by x * w (a while_loop
    whose step count depends on the data), and collect every step's product."""

    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit
        with self.name_scope():
            self.w = self.params.get("w", shape=(2,))

    def hybrid_forward(self, F, x, w):
        def cond(p, i):
            return (p.sum() < self.limit) * (i < 6.0)

        def func(p, i):
            p = p * x * w + 0.1
            return [F.tanh(p)], [p, i + 1.0]
        outs, (p, i) = F.contrib.while_loop(cond, func, [F.ones_like(x), F.zeros((1,))],
                                            max_iterations=6)
        return outs[0].sum() + (p * p).sum()


@pytest.mark.parametrize("executor", ["numpy", "numba"])
@pytest.mark.parametrize("limit", [3.0, 100.0], ids=["stops-early", "runs-every-step"])
def test_while_loop_gradients_equal_the_imperative_ones(executor, limit):
    net = Power(limit)
    net.initialize(mx.init.Constant(1.3))
    x = nd.array([0.9, 1.2])
    grads = []
    for hybrid in (False, True):
        net.hybridize(active=hybrid, executor=executor)
        x.attach_grad()
        with autograd.record():
            y = net(x)
        y.backward()
        grads.append([y.asnumpy(), x.grad.asnumpy().copy(), net.w.grad().asnumpy().copy()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    assert np.abs(grads[0][1]).sum() > 0


def test_a_while_loop_variable_that_changes_shape_is_refused_naming_the_step_and_shapes():
    def grow(v):
        return [], [nd.concat(v, v, dim=0)]
    with pytest.raises(OpError, match=r"while_loop: at step 0 the body returns loop "
                                      r"variable 0 with shape \(4,\), but it had shape \(2,\)"):
        nd.contrib.while_loop(lambda v: v.sum() < 100, grow, [nd.ones((2,))], max_iterations=3)
    out, var = sym.contrib.while_loop(lambda v: v.sum() < 100,
                                      lambda v: ([], [sym.concat(v, v, dim=0)]),
                                      [sym.var("v")], max_iterations=3)
    with pytest.raises(OpError, match=r"while_loop: loop variable 0 comes into the body with "
                                      r"shape \(2,\) but the body returns it with shape \(4,\)"):
        var[0].infer_shape(v=(2,))


def message_of(call):
    with pytest.raises((OpError, TypeError)) as info:
        call()
    return type(info.value), str(info.value)


def test_imperative_and_traced_loops_refuse_a_wrong_number_of_states_with_one_message():
    two_states = lambda x_t, s: (x_t, s + s)                        # noqa: E731
    nd_error = message_of(lambda: nd.contrib.foreach(two_states, nd.ones((3, 2)),
                                                     [nd.ones((2,))]))
    sym_error = message_of(lambda: sym.contrib.foreach(two_states, sym.var("x"),
                                                       [sym.var("s")]))
    assert nd_error == sym_error == (
        OpError, "foreach: the body returns 2 loop states but was given 1; return one new "
                 "value per loop state")
    grow = lambda v: ([], [v, v])                                  # noqa: E731
    nd_error = message_of(lambda: nd.contrib.while_loop(lambda v: v.sum() < 9, grow,
                                                        [nd.ones((2,))], max_iterations=2))
    sym_error = message_of(lambda: sym.contrib.while_loop(lambda v: v.sum() < 9, grow,
                                                          [sym.var("v")], max_iterations=2))
    assert nd_error == sym_error
    assert "func returns 2 loop variables but was given 1" in nd_error[1]


def test_while_loop_without_max_iterations_is_refused_alike_imperatively_and_traced():
    step = lambda i: ([], [i + 1])                                 # noqa: E731
    nd_error = message_of(lambda: nd.contrib.while_loop(lambda i: i < 3, step, [nd.zeros((1,))]))
    sym_error = message_of(lambda: sym.contrib.while_loop(lambda i: i < 3, step,
                                                          [sym.var("i")]))
    assert nd_error == sym_error
    assert "max_iterations is required" in nd_error[1] and "Pass max_iterations=" in nd_error[1]


def test_a_loop_argument_of_the_wrong_kind_is_named_with_the_kind_expected():
    with pytest.raises(TypeError, match=r"foreach: data must be one NDArray or a \(nested\) "
                                        r"list of them, got ndarray"):
        nd.contrib.foreach(lambda x_t, s: (x_t, s), np.ones((3, 2)), nd.ones((2,)))
    with pytest.raises(TypeError, match=r"foreach: init_states must be one Symbol or a "
                                        r"\(nested\) list of them, got int"):
        sym.contrib.foreach(lambda x_t, s: (x_t, s), sym.var("x"), 0)
    with pytest.raises(TypeError, match=r"while_loop: func's second result \(its new states\) "
                                        r"must be one NDArray"):
        nd.contrib.while_loop(lambda v: v.sum() < 9, lambda v: ([], 3), [nd.ones((2,))],
                              max_iterations=2)


def test_a_loop_step_that_changes_a_shape_gets_the_same_message_from_nd_and_the_executor():
    def grow(x_t, s):
        return x_t, nd.concat(s, x_t, dim=0)
    nd_error = message_of(lambda: nd.contrib.foreach(grow, nd.ones((3, 2)), nd.ones((2,))))
    from straightdope.ops.control_flow import check_step
    direct = message_of(lambda: check_step("foreach", 0, [], None, [np.ones(4)], [np.ones(2)]))
    assert nd_error == direct == (
        OpError, "foreach: at step 0 the body returns loop state 0 with shape (4,), but it had "
                 "shape (2,) when it came in; a loop state must keep its shape from step to "
                 "step.")


def _loop_keeps(executable):
    """keep_hidden of every loop step of a reference-tier executable."""
    return [kw["keep_hidden"] for _, _, kw, _, _ in executable.steps if "keep_hidden" in kw]


def test_the_reference_tier_saves_loop_values_only_when_a_backward_reads_them():
    """A foreach keeps each step's saved values (for its gradient) only where a backward
    pass reads them: not at inference, not in the backward's own loop."""
    from straightdope.gluon import rnn
    layer = rnn.LSTM(8, num_layers=2, input_size=4, prefix="keep_hidden_")  # not lstm0_
    layer.initialize()
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (5, 2, 4)).astype(np.float32))
    imperative = layer(x).asnumpy()
    with autograd.record():
        loss = (layer(x) ** 2).sum()
    loss.backward()
    expected = {name: p.grad().asnumpy().copy() for name, p in layer.collect_params().items()}

    layer.hybridize(executor="numpy")
    np.testing.assert_allclose(layer(x).asnumpy(), imperative, rtol=1e-5, atol=1e-6)
    (inference,) = layer._cached_op.last_plan.forward.specializations.values()
    assert _loop_keeps(inference) == [False, False]
    with autograd.record():
        loss = (layer(x) ** 2).sum()
    loss.backward()
    plan = layer._cached_op.last_plan
    (forward,) = plan.forward.specializations.values()
    (backward,) = plan.backward.specializations.values()
    assert _loop_keeps(forward) == [True, True]
    assert _loop_keeps(backward) and not any(_loop_keeps(backward))
    for name, p in layer.collect_params().items():
        np.testing.assert_allclose(p.grad().asnumpy(), expected[name], rtol=1e-4, atol=1e-6)


class _Count(HybridBlock):
    """A foreach whose states have other dtypes than its data: an int32 counter."""

    def hybrid_forward(self, F, x, n):
        def body(x_t, s):
            return F.broadcast_add(x_t * 2, F.cast(s[0], "float32")), [s[0] + 1, s[1] + x_t.sum()]
        out, (k, total) = F.contrib.foreach(body, x, [n, F.zeros((1,))])
        return out, k, total


@pytest.mark.parametrize("compile", ["sync", "tiered"])
def test_a_foreach_over_inputs_of_different_dtypes_keeps_each_outputs_dtype(compile):
    x, n = nd.array(np.arange(12).reshape(4, 3)), nd.array([5], dtype="int32")
    want = _Count()(x, n)
    net = _Count()
    net.hybridize(compile=compile)
    got = net(x, n)
    assert [g.dtype for g in got] == [np.float32, np.int32, np.float32]
    np.testing.assert_array_equal(want[0].asnumpy()[:, 0], [5, 12, 19, 26])
    assert int(want[1].asnumpy()[0]) == 9
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_nested_lists_of_states_and_loop_vars_keep_their_nesting_nd_and_sym():
    def body(x_t, states):
        (a, (b,)) = states
        return [x_t + a, [b * 2]], [a + 1, [b + x_t]]
    x = np.arange(6.0).reshape(3, 2)
    outs, (a, (b,)) = nd.contrib.foreach(body, nd.array(x), [nd.zeros((2,)), [nd.ones((2,))]])
    np.testing.assert_allclose(outs[0].asnumpy(), x + np.arange(3)[:, None])
    np.testing.assert_allclose(b.asnumpy(), 1 + x.sum(0))
    t_outs, (ta, (tb,)) = sym.contrib.foreach(body, sym.var("x"), [sym.var("a"), [sym.var("b")]])
    got = sym.Group([t_outs[0], t_outs[1][0], ta, tb]).eval(
        x=nd.array(x), a=nd.zeros((2,)), b=nd.ones((2,)))
    for g, w in zip(got, [outs[0], outs[1][0], a, b]):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy())

    def func(v, pair):
        return None, [v + 1, [pair[0] * 2]]
    for F, arrays in ((nd, [nd.array([0.0]), [nd.array([1.0])]]),
                      (sym, [sym.var("v"), [sym.var("p")]])):
        res = F.contrib.while_loop(lambda v, pair: v < 3, func, arrays, max_iterations=5)
        outs, (v, (p,)) = res
        if F is sym:
            v, p = sym.Group([v, p]).eval(v=nd.array([0.0]), p=nd.array([1.0]))
        assert outs == [] and float(v.asnumpy()[0]) == 3 and float(p.asnumpy()[0]) == 8


def test_bind_and_backward_ignore_what_the_graph_does_not_have_as_mxnet():
    x = sym.var("x")
    y = x * 2
    grad = nd.zeros((2,))
    ex = y.bind(args={"x": nd.ones((2,)), "unused": nd.ones((3,))},
                args_grad={"x": grad, "unused": nd.zeros((3,))})
    ex.forward(is_train=True)
    ex.backward([nd.ones((2,)), nd.ones((5,))])       # the second has no output: not read
    np.testing.assert_allclose(grad.asnumpy(), [2, 2])
    with pytest.raises(ValueError, match="0 out_grads for 1 outputs"):
        ex.backward([])


def test_a_foreach_state_the_body_never_reads_is_refused_with_mxnets_error_type():
    with pytest.raises(AssertionError, match="the body does not use loop state 0"):
        sym.contrib.foreach(lambda x_t, s: (x_t, [sym.var("other")]), sym.var("x"),
                            [sym.var("s")])
