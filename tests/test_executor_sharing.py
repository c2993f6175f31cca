"""Executor details MXNet's own tests rely on: a Symbol bound again reuses its compiled
graph (one CachedOp per Symbol), and a head gradient takes its output's dtype."""
import numpy as np

import straightdope as mx


def test_a_symbol_bound_again_shares_its_compiled_graph_and_gives_each_arrays_results():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = a * b + a
    rng = np.random.default_rng(0)
    executors = []
    for shape in [(2, 3), (4,), (2, 3)]:
        x, y = rng.random(shape), rng.random(shape)
        ga, gb = mx.nd.zeros(shape), mx.nd.zeros(shape)
        exe = c.bind(mx.cpu(), args={"a": mx.nd.array(x), "b": mx.nd.array(y)},
                     args_grad={"a": ga, "b": gb})
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones(shape)])
        np.testing.assert_allclose(exe.outputs[0].asnumpy(), x * y + x, rtol=1e-6)
        np.testing.assert_allclose(ga.asnumpy(), y + 1, rtol=1e-6)
        np.testing.assert_allclose(gb.asnumpy(), x, rtol=1e-6)
        executors.append(exe)
    assert executors[0]._cached is executors[1]._cached is executors[2]._cached
    other = (a * b + a).bind(mx.cpu(), args={"a": mx.nd.ones((1,)), "b": mx.nd.ones((1,))})
    assert other._cached is not executors[0]._cached       # another Symbol: its own


def test_a_head_gradient_takes_its_outputs_dtype():
    # MXNet copies out_grads into a buffer of the output's dtype: for an int32 output 2.7
    # arrives as 2, and the cast's gradient hands that back to the float input. (An int32
    # `%` would give 0 whatever the head, MXNet's mod_grad for integers.)
    a = mx.sym.Variable("a")
    c = mx.sym.cast(a, dtype="int32")
    ga = mx.nd.zeros((2,))
    exe = c.bind(mx.cpu(), args={"a": mx.nd.array([7.0, 9.0])}, args_grad={"a": ga})
    exe.forward(is_train=True)
    head = np.array([2.7, 0.45])
    exe.backward([mx.nd.array(head)])
    np.testing.assert_array_equal(ga.asnumpy(), np.trunc(head))
