"""Common-subexpression elimination (straightdope/graph/cse.py), as MXNet's executor
does it: repeated expressions merged, random ops and different attributes kept apart,
the values and gradients unchanged, MXNET_ELIMINATE_COMMON_EXPR=0 keeping the graph."""
import numpy as np
import pytest

import straightdope as mx
from straightdope.graph import Graph, eliminate_common_expr, optimized_symbol

SHAPE = (3, 4)


def _ops(symbol):
    return [node.op.name for node in symbol.walk() if not node.is_var]


def _bind(symbol, monkeypatch, cse, grad_req="write"):
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1" if cse else "0")
    shapes = {name: SHAPE for name in symbol.list_arguments()}
    return symbol.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)


def test_repeated_expressions_are_computed_once():
    a, b, c = mx.sym.Variable("a"), mx.sym.Variable("b"), mx.sym.Variable("c")
    twice = ((a + b) + c) * ((a + b) + c)
    merged = optimized_symbol(twice)
    # five ops written, three left: one a+b, one +c (merged in one walk), the product
    assert len(_ops(twice)) == 5 and len(_ops(merged)) == 3
    product = merged.walk()[-1]
    assert product.inputs[0] == product.inputs[1]
    assert merged.list_arguments() == twice.list_arguments()
    assert merged.list_outputs() == twice.list_outputs()


def test_different_attributes_or_inputs_are_not_merged():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    for symbol in ((a + 1) + (a + 2), (a + b) * (a - b), (a * b) + (b * a),
                   mx.sym.relu(a) + mx.sym.sigmoid(a),
                   mx.sym.sum(a, axis=0) + mx.sym.sum(a, axis=1).reshape((1, -1))[0]):
        graph = Graph.from_symbol(symbol)
        assert eliminate_common_expr(graph) is graph, symbol
        assert optimized_symbol(symbol) is symbol


def test_random_ops_and_writers_are_never_merged():
    a = mx.sym.Variable("a")
    for symbol in (mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5),
                   mx.sym.random.uniform(shape=SHAPE) + mx.sym.random.uniform(shape=SHAPE),
                   mx.sym.zeros(SHAPE) + mx.sym.zeros(SHAPE)):
        assert optimized_symbol(symbol) is symbol, _ops(symbol)
    # BatchNorm writes its running statistics: merged, they would be updated once
    gamma, beta = mx.sym.Variable("g"), mx.sym.Variable("be")
    mean, var = mx.sym.Variable("m"), mx.sym.Variable("v")
    norm = (mx.sym.BatchNorm(a, gamma, beta, mean, var) +
            mx.sym.BatchNorm(a, gamma, beta, mean, var))
    assert optimized_symbol(norm) is norm


def test_a_repeated_output_stays_an_output_of_its_own():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    group = mx.sym.Group([a * b + b, a * b + b])
    merged = optimized_symbol(group)
    assert _ops(merged).count("_copy") == 1
    # a*b twice and +b twice became one each, plus the copy: one node saved (MXNet's count)
    assert len(merged.get_internals()) + 1 == len(group.get_internals())
    (first, _), (second, _) = merged.entries
    assert second.op.name == "_copy" and second.inputs == [(first, 0)]


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_values_and_gradients_are_unchanged(monkeypatch, grad_req):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s = mx.sym.exp(a * b)
    group = mx.sym.Group([s + mx.sym.exp(a * b) * a, mx.sym.exp(a * b)])
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, SHAPE), rng.uniform(-1, 1, SHAPE)
    heads = [rng.uniform(size=SHAPE), rng.uniform(size=SHAPE)]
    results = {}
    for cse in (False, True):
        exe = _bind(group, monkeypatch, cse, grad_req)
        outs = exe.forward(is_train=True, a=x, b=y)
        exe.backward([mx.nd.array(h) for h in heads])
        results[cse] = ([o.asnumpy() for o in outs],
                        [exe.grad_dict[n].asnumpy() for n in ("a", "b")],
                        len(_ops(exe.get_optimized_symbol())))
    e = np.exp(x * y)
    # NumPy's own: outputs e + e*x and e; d/da and d/db of h0*(e + e*x) + h1*e
    want_out = [e + e * x, e]
    common = heads[0] * (e + e * x) + heads[1] * e
    want_grad = [common * y + heads[0] * e, common * x]
    for cse in (False, True):
        outs, grads, _ = results[cse]
        for got, want in zip(outs + grads, want_out + want_grad):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # written: exp(a * b) three times (six ops), then *a and +; merged: one exp(a * b)
    assert results[False][2] == 8 and results[True][2] == 4


def test_the_switch_off_keeps_the_graph(monkeypatch):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    twice = (a + b) + (a + b)
    assert _bind(twice, monkeypatch, cse=False).get_optimized_symbol() is twice
    on = _bind(twice, monkeypatch, cse=True).get_optimized_symbol()
    assert len(_ops(on)) == 2 and len(_ops(twice)) == 3
    # a graph without duplicates runs as given, switch or not
    once = (a + b) * a
    assert _bind(once, monkeypatch, cse=True).get_optimized_symbol() is once


def test_nd_cached_op_runs_the_merged_graph_and_keeps_its_outputs_apart(monkeypatch):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    group = mx.sym.Group([mx.sym.exp(a * b), mx.sym.exp(a * b) + b])
    x, y = np.random.default_rng(1).uniform(-1, 1, (2,) + SHAPE)
    for cse in ("0", "1"):
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", cse)
        op = mx.nd.CachedOp(group)
        ran = op._compiled.symbol
        assert len(_ops(ran)) == (3 if cse == "1" else 5)
        first, second = op(mx.nd.array(x), mx.nd.array(y))
        np.testing.assert_allclose(first.asnumpy(), np.exp(x * y), rtol=1e-6)
        np.testing.assert_allclose(second.asnumpy(), np.exp(x * y) + y, rtol=1e-6)
    # a*b twice: one product and a copy of it, two arrays (writing one leaves the other)
    first, second = mx.nd.CachedOp(mx.sym.Group([a * b, a * b]))(mx.nd.array(x),
                                                                   mx.nd.array(y))
    first[:] = 0
    np.testing.assert_allclose(second.asnumpy(), x * y, rtol=1e-6)
