"""HybridBlock._call decides where every call goes; its two shortcuts (a layer's
_array_shortcut, and the compiled steady state in HybridBlock.__call__) must give what the
general path gives, and step aside whenever that path would do something else: the tests
"after the shortcut" change one thing once the shortcut is in use and check it is seen."""
import numpy as onp

import straightdope as mx
from straightdope import autograd, nd
from straightdope.gluon import nn


def _mlp():
    mx.random.seed(0)       # weights with live ReLUs at x = ones (gradients are not 0)
    net = nn.HybridSequential()
    net.add(nn.Dense(5, activation="relu", in_units=3), nn.Dense(2, in_units=5))
    net.initialize(mx.init.Xavier())
    return net


def test_dense_shortcut_gives_what_hybrid_forward_gives():
    dense = nn.Dense(4, activation="tanh", in_units=3)
    dense.initialize(mx.init.Xavier())
    x = nd.array(onp.random.default_rng(0).standard_normal((2, 3)))
    fast = dense(x)
    general = dense.hybrid_forward(nd, x, dense.weight.data(), dense.bias.data())
    onp.testing.assert_allclose(fast.asnumpy(), general.asnumpy(), rtol=1e-6)


def test_a_subclass_forward_is_never_skipped_by_the_dense_shortcut():
    class Doubled(nn.Dense):
        def forward(self, x):
            return super().forward(x) * 2

    layer = Doubled(2, in_units=3)
    layer.initialize(mx.init.One())
    # weights one, bias zero (Dense's own bias initializer): 3, doubled by the subclass
    assert (layer(nd.ones((1, 3))).asnumpy() == 6).all()


def test_hooks_of_a_dense_activation_still_fire_on_the_shortcut():
    dense = nn.Dense(2, activation="relu", in_units=3)
    dense.initialize()
    seen = []
    dense.act.register_forward_hook(lambda block, inputs, out: seen.append(out.shape))
    dense(nd.ones((4, 3)))
    assert seen == [(4, 2)]


def test_the_compiled_shortcut_starts_after_one_checked_call_and_matches_it():
    net, x = _mlp(), nd.ones((2, 3))
    want = net(x).asnumpy()
    net.hybridize(compile="sync")
    first = net(x)
    cache = net._cache
    assert cache.fast                              # the next call may take the shortcut
    assert [name for _, name, _ in cache.args] == cache.op.input_names
    assert cache.args[0] == (True, "data", 0)
    assert all(p is net.collect_params()[name] for is_arg, name, p in cache.args if not is_arg)
    onp.testing.assert_allclose(first.asnumpy(), want, rtol=1e-5)
    onp.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5)
    x.attach_grad()
    with autograd.record():
        net(x).sum().backward()
    assert onp.abs(x.grad.asnumpy()).sum() > 0


def test_an_op_hook_turns_the_shortcut_off_so_it_sees_every_call():
    net, x = _mlp(), nd.ones((1, 3))
    net.hybridize(compile="sync")
    net(x)
    net(x)
    seen = []
    net.register_op_hook(lambda name, op, array: seen.append(name))
    assert not net._cache.fast
    net(x)
    assert any(name.endswith("_output") for name in seen)
    assert not net._cache.fast


def test_a_nested_call_never_takes_the_compiled_shortcut():
    class Pair(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, pair):
            return x + pair[0] * pair[1]

    block = Pair()
    block.hybridize(compile="sync")
    x = nd.ones((2,))
    out = block(x, [x * 2, x * 3])
    assert (out.asnumpy() == 7).all()
    assert not block._cache.fast
    assert (block(x, [x, x]).asnumpy() == 2).all()


def _on_the_shortcut(net, x):
    """Call a hybridized net until its calls take the compiled shortcut."""
    net(x)
    net(x)
    assert net._cache.fast
    return net


def _by_hand(net, x):
    """The MLP's output computed with NumPy from its parameters as they are now."""
    (w1, b1), (w2, b2) = [(d.weight.data().asnumpy(), d.bias.data().asnumpy())
                          for d in net._children.values()]
    h = onp.maximum(x @ w1.T + b1, 0)
    return h @ w2.T + b2


def test_after_the_shortcut_another_dtype_gets_its_own_plan():
    import pytest
    from straightdope.ops import OpError

    class Doubled(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * 2

    block = Doubled()
    block.hybridize(compile="sync")
    _on_the_shortcut(block, nd.ones((2,)))
    out = block(nd.array([1.5, 2.5], dtype="float64"))
    assert out.dtype == onp.float64 and (out.asnumpy() == [3, 5]).all()
    assert {key[0][0] for key in block._cached_op.plans} == {onp.dtype("float32"),
                                                            onp.dtype("float64")}
    net = _mlp()            # float32 weights: float64 data is refused, as imperatively
    net.hybridize(compile="sync")
    _on_the_shortcut(net, nd.ones((2, 3)))
    with pytest.raises(OpError, match="float64"):
        net(nd.array(onp.ones((2, 3)), dtype="float64"))


def test_after_the_shortcut_another_shape_is_run_for_its_shape():
    for flags in ({}, {"static_alloc": True, "static_shape": True}):
        net = _mlp()
        net.hybridize(compile="sync", **flags)
        _on_the_shortcut(net, nd.ones((2, 3)))
        x = onp.random.default_rng(1).standard_normal((5, 3)).astype(onp.float32)
        out = net(nd.array(x))
        assert out.shape == (5, 2)
        onp.testing.assert_allclose(out.asnumpy(), _by_hand(net, x), rtol=1e-5, atol=1e-6)


def test_after_the_shortcut_the_training_flag_still_switches_dropout():
    net = nn.HybridSequential()
    net.add(nn.Dense(64, in_units=3), nn.Dropout(0.5))
    net.initialize(mx.init.One())
    net.hybridize(compile="sync")
    x = nd.ones((4, 3))
    _on_the_shortcut(net, x)
    predicted = net(x).asnumpy()
    with autograd.train_mode():
        trained = net(x).asnumpy()
    assert (trained == 0).any() and not (predicted == 0).any()
    assert (net(x).asnumpy() == predicted).all()


def test_after_the_shortcut_a_recorded_call_is_on_the_tape():
    net, x = _mlp(), nd.ones((2, 3))
    net.hybridize(compile="sync")
    _on_the_shortcut(net, x)
    bias = net._children["1"].bias
    with autograd.record():
        out = net(x)
        loss = out.sum()
    assert out._tape is not None
    loss.backward()
    assert (bias.grad().asnumpy() == 2).all()          # d(sum)/d(bias): the batch size


def test_after_the_shortcut_new_parameter_values_are_used():
    net, x = _mlp(), nd.ones((2, 3))
    net.hybridize(compile="sync")
    _on_the_shortcut(net, x)
    net.initialize(mx.init.Uniform(), force_reinit=True)       # new arrays
    onp.testing.assert_allclose(net(x).asnumpy(), _by_hand(net, onp.ones((2, 3))),
                                rtol=1e-5)
    bias = net._children["1"].bias
    bias.set_data(nd.array([10.0, -10.0]))                      # assigned
    out = net(x).asnumpy()
    onp.testing.assert_allclose(out, _by_hand(net, onp.ones((2, 3))), rtol=1e-5)
    assert out[0, 0] - out[0, 1] > 10


def test_after_the_shortcut_hybridize_again_retraces_or_turns_it_off():
    calls = []

    class Counted(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            calls.append(F.__name__)
            return x * 2

    block, x = Counted(), nd.ones((2,))
    block.hybridize(compile="sync")
    _on_the_shortcut(block, x)
    assert calls == ["straightdope.symbol"]                     # traced once
    block.hybridize(compile="sync")
    block(x)
    assert calls == ["straightdope.symbol"] * 2                 # traced again
    block.hybridize(active=False)
    assert (block(x).asnumpy() == 2).all()
    assert calls[-1] == "straightdope.ndarray"                  # its Python ran


def test_after_the_shortcut_a_forward_hook_sees_every_call():
    net, x = _mlp(), nd.ones((1, 3))
    net.hybridize(compile="sync")
    _on_the_shortcut(net, x)
    seen = []
    handle = net.register_forward_pre_hook(lambda block, inputs: seen.append("pre"))
    net.register_forward_hook(lambda block, inputs, out: seen.append(out.shape))
    out = net(x)
    assert seen == ["pre", (1, 2)]
    handle.detach()
    net(x)
    assert seen == ["pre", (1, 2), (1, 2)]
    onp.testing.assert_allclose(out.asnumpy(), _by_hand(net, onp.ones((1, 3))), rtol=1e-5)


def test_np_arrays_in_give_np_arrays_out_on_the_shortcut_too():
    from straightdope import np as mnp
    net = _mlp()
    net.hybridize(compile="sync")
    x = mnp.ones((2, 3))
    outs = [net(x) for _ in range(3)]
    assert net._cache.fast
    assert all(type(o) is mnp.ndarray for o in outs)
    assert type(net(nd.ones((2, 3)))) is mnp.ndarray      # the graph was traced on np
