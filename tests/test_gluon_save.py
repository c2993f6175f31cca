"""Block.save(prefix) / Block.load(prefix): MXNet 2.0's whole-model files (its
tests/python/unittest/test_gluon_save.py, on a plain Block holding hybridized Dense layers)."""
import json

import numpy as onp
import pytest

import straightdope as mx
from straightdope.gluon import nn


class MyBlock(mx.gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.layers = []

    def add(self, block):
        self.layers.append(block)
        self.register_child(block)

    def forward(self, x, *args):
        out = (x,) + args
        for block in self._children.values():
            out = block(*out)
            out = out if isinstance(out, tuple) else (out,)
        return out[0]


def create_net():
    inside = MyBlock()
    inside.add(nn.Dense(10))
    net = MyBlock()
    net.add(inside)
    net.add(nn.Dense(10))
    return net


def test_a_saved_model_loads_into_a_new_network_hybridized_with_its_graphs(tmp_path):
    prefix = str(tmp_path / "MyModel")
    net1 = create_net()
    net1.initialize()
    net1.hybridize()
    x = mx.np.random.uniform(size=(1, 10))
    out1 = net1(x)
    net1.save(prefix)

    net2 = create_net()                 # not initialised, not hybridized
    net2.load(prefix)
    dense = net2._children["0"]._children["0"]
    assert dense._active and dense._cached_graph is not None and dense.trace_count == 0
    out2 = net2(x)
    onp.testing.assert_allclose(out2.asnumpy(), out1.asnumpy(), rtol=1e-6)
    assert dense.trace_count == 0       # ran the loaded graph, did not trace again
    assert isinstance(out2, mx.np.ndarray)


def test_an_unhybridized_model_saves_no_graph_and_loads_its_parameters(tmp_path):
    prefix = str(tmp_path / "plain")
    net1 = create_net()
    net1.initialize()
    x = mx.nd.ones((2, 10))
    out1 = net1(x)
    net1.save(prefix)
    saved = json.loads((tmp_path / "plain-model.json").read_text())
    assert [b["block"] for b in saved["blocks"]] == ["MyBlock", "MyBlock", "Dense", "Dense"]
    assert all("graph" not in b for b in saved["blocks"])
    net2 = create_net()
    net2.load(prefix)
    assert not net2._children["1"]._active
    onp.testing.assert_allclose(net2(x).asnumpy(), out1.asnumpy(), rtol=1e-6)


def test_loading_into_a_network_built_differently_names_the_block(tmp_path):
    prefix = str(tmp_path / "m")
    net = create_net()
    net.initialize()
    net(mx.nd.ones((1, 10)))
    net.save(prefix)
    other = MyBlock()
    other.add(nn.Dense(10))
    with pytest.raises(ValueError, match="describes 4 blocks.*has 2"):
        other.load(prefix)
    swapped = MyBlock()
    swapped.add(nn.Dense(10))
    swapped.add(MyBlock())
    swapped._children["1"].add(nn.Dense(10))
    with pytest.raises(ValueError, match="block 1 was saved as .*MyBlock.*here it is.*Dense"):
        swapped.load(prefix)


def test_a_damaged_model_file_is_refused_with_its_name(tmp_path):
    prefix = str(tmp_path / "bad")
    (tmp_path / "bad-model.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad-model.json: not a model file"):
        create_net().load(prefix)
    net = create_net()
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 10)))
    net.save(prefix)
    saved = json.loads((tmp_path / "bad-model.json").read_text())
    saved["blocks"][2]["graph"]["in_format"] = "import os"
    (tmp_path / "bad-model.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="call formats"):
        create_net().load(prefix)
