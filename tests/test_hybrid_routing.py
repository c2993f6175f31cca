"""HybridBlock._call decides where every call goes; its two shortcuts (a layer's
_array_shortcut, the compiled steady state) must give what the general path gives, and
step aside whenever that path would do something else."""
import numpy as onp

import straightdope as mx
from straightdope import autograd, nd
from straightdope.gluon import nn


def _mlp():
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
