"""MXNet fidelity, first set (issue 32): what MXNet 1.9.1's first unit-test files (test_ndarray,
test_symbol, test_gluon, ...) need, each checked here in our own words
(`python scripts/mxnet_tests.py --set first` runs MXNet's files)."""
import importlib.util
import os

import pytest

import straightdope as mx
from straightdope.ndarray import ndarray as nd_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _harness():
    spec = importlib.util.spec_from_file_location(
        "mxnet_tests", os.path.join(REPO, "scripts", "mxnet_tests.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------- storage types
def test_storage_type_ids_are_mxnets_and_name_each_other():
    ids = nd_module._STORAGE_TYPE_STR_TO_ID
    assert ids["default"] == nd_module._STORAGE_TYPE_DEFAULT == 0
    assert (ids["undefined"], ids["row_sparse"], ids["csr"]) == (-1, 1, 2)
    for name, i in ids.items():
        assert nd_module._STORAGE_TYPE_ID_TO_STR[i] == name


def test_sparse_storage_is_still_refused_though_its_ids_exist():
    x = mx.nd.ones((2, 3))
    assert x.stype == "default"
    with pytest.raises(mx.base.MXNetError, match="densely"):
        x.tostype("csr")
    with pytest.raises(Exception, match="row_sparse"):
        mx.gluon.Parameter("w", shape=(2, 3), stype="row_sparse")


# ------------------------------------------------------------- the harness
def test_harness_keeps_the_name_mxnet_bound_by_import_mxnet_dot_module():
    rewrite = _harness().rewrite_imports
    out = rewrite("import mxnet.autograd\n    import mxnet.ndarray  # comment\n")
    assert out == ("import straightdope.autograd; import straightdope as mxnet\n"
                   "    import straightdope.ndarray; import straightdope as mxnet\n")
    namespace = {}
    exec(out.splitlines()[0], namespace)
    assert namespace["mxnet"] is mx and namespace["mxnet"].autograd is mx.autograd


def test_harness_rewrites_other_imports_keeping_their_names():
    rewrite = _harness().rewrite_imports
    assert rewrite("import mxnet as mx\n") == "import straightdope as mx\n"
    assert rewrite("import mxnet\n") == "import straightdope as mxnet\n"
    assert rewrite("from mxnet.gluon import nn\n") == "from straightdope.gluon import nn\n"
    assert (rewrite("import mxnet.ndarray.sparse as sps\n")
            == "import straightdope.ndarray.sparse as sps\n")
    assert rewrite("x = 'mxnet.autograd'\n") == "x = 'mxnet.autograd'\n"


def test_harness_leaves_out_exactly_the_out_of_scope_tests_not_those_they_prefix(tmp_path):
    # pytest's --deselect takes a prefix: test_parameter would take test_parameter_sharing along
    import subprocess
    import sys
    harness = _harness()
    (tmp_path / "conftest.py").write_text(
        harness.DESELECT % {"out_of_scope": {"test_x": ["test_parameter", "test_cases"]}})
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_parameter(): pass\n"
        "def test_parameter_sharing(): pass\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_cases(n): pass\n"
        "def test_cases_more(): pass\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "test_x.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert collected == ["test_x.py::test_parameter_sharing", "test_x.py::test_cases_more"]


# ------------------------------------------------------------- optimizer
def test_nag_keeps_mxnets_momentum_state_with_the_learning_rate_folded_in():
    import numpy as np
    lr, mu, wd = 0.1, 0.9, 0.01
    opt = mx.optimizer.NAG(learning_rate=lr, momentum=mu, wd=wd)
    w0 = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    weight = mx.nd.array(w0)
    state = opt.create_state(0, weight)
    w, mom = w0.astype(np.float64), np.zeros(3)
    for grad in ([0.5, 0.25, -1.0], [1.0, -0.5, 0.25]):
        opt.update(0, weight, mx.nd.array(grad), state)
        g = np.array(grad) + wd * w                   # MXNet's nag_mom_update, step by step
        mom = mu * mom - lr * g
        w = w + mu * mom - lr * g
        np.testing.assert_allclose(state.asnumpy(), mom, rtol=1e-5)
        np.testing.assert_allclose(weight.asnumpy(), w, rtol=1e-5)
    # the same step as the nag_mom_update op
    weight2, mom2 = mx.nd.array(w0), mx.nd.zeros(3)
    for grad in ([0.5, 0.25, -1.0], [1.0, -0.5, 0.25]):
        mx.nd.nag_mom_update(weight2, mx.nd.array(grad), mom2, lr=lr, momentum=mu, wd=wd,
                             out=weight2)
    np.testing.assert_allclose(weight2.asnumpy(), weight.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(mom2.asnumpy(), state.asnumpy(), rtol=1e-5)


# ------------------------------------------------------------- control-flow subgraph names
def test_control_flow_subgraphs_are_named_and_counted_as_mxnet(monkeypatch):
    import collections
    from straightdope.attribute import AttrScope
    monkeypatch.setattr(AttrScope, "_subgraph_names", collections.defaultdict(int))
    a = mx.sym.var("a")
    for _ in range(2):
        out = mx.sym.contrib.cond(a > 0.5, lambda: a * 2, lambda: a * 3, name="my_cond")
    assert dict(AttrScope._subgraph_names) == {"my_cond_pred": 2, "my_cond_then": 2,
                                               "my_cond_else": 2}
    # the branch's nodes carry their subgraph's numbered name (the second cond: ...1)
    body = out.tojson()
    assert '"__subgraph_name__": "my_cond_then1"' in body
    assert '"__subgraph_name__": "my_cond_else1"' in body
    # a subgraph inside another one is named after it
    mx.sym.contrib.foreach(
        lambda x, s: (mx.sym.contrib.cond(x > 0, lambda: x, lambda: -x, name="inner"), s),
        a, [mx.sym.var("s")], name="loop")
    assert AttrScope._subgraph_names["loop"] == 1
    assert AttrScope._subgraph_names["loop0$inner_then"] == 1
    # the names do not change what the graph computes
    assert out.eval(a=mx.nd.array([0.25]))[0].asnumpy().tolist() == [0.75]
    assert out.eval(a=mx.nd.array([2.0]))[0].asnumpy().tolist() == [4.0]


# ------------------------------------------------------------- LSTM._unfuse
@pytest.mark.parametrize("make", [
    lambda: mx.gluon.rnn.LSTM(3, num_layers=2, bidirectional=True),
    lambda: mx.gluon.rnn.GRU(3, num_layers=2),
    lambda: mx.gluon.rnn.RNN(3, activation="tanh", num_layers=2, dropout=0.5)])
def test_unfuse_gives_cells_that_share_the_layers_parameters_and_compute_the_same(make):
    import numpy as np
    layer = make()
    cells = layer._unfuse()
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.uniform(-1, 1, shape=(4, 2, 5))         # TNC
    y = layer(x)
    y_cells = cells.unroll(4, x, layout="TNC", merge_outputs=True)[0]
    np.testing.assert_allclose(y_cells.asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)
    shared = cells.collect_params()
    assert sorted(shared.keys()) == sorted(layer.collect_params().keys())
    for name, param in layer.collect_params().items():
        assert shared[name] is param


def test_unfuse_refuses_a_projection():
    with pytest.raises(NotImplementedError, match="projection"):
        mx.gluon.rnn.LSTM(4, projection_size=2)._unfuse()


def test_scope_rule_follows_a_module_helper_the_test_calls():
    """test_operator's RNN tests bind mx.mod.Module only inside check_rnn_consistency:
    the pattern there puts them out of scope; a test calling no such helper stays in."""
    text = ("def check_consistency(a):\n    mod = mx.mod.Module(a)\n\n"
            "def clean(a):\n    return a\n\n"
            "def test_uses_module():\n    check_consistency(1)\n\n"
            "def test_plain():\n    clean(1)\n")
    harness = _harness()
    helpers = harness.helper_sources(text)
    tests = harness.test_sources(text)
    assert set(helpers) == {"check_consistency", "clean"}
    assert harness.scope_reason(tests["test_uses_module"], helpers) == \
        "legacy Module/io/RecordIO: mx.mod. (in check_consistency)"
    assert harness.scope_reason(tests["test_plain"], helpers) is None
