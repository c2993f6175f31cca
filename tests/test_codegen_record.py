"""Generated code is returned as data, never parsed back as text: `codegen.generate`
returns the source with its record (`codegen.Generated`), and what reads generated code
reads the record. Here the record is checked against what the code does when it runs."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, gluon, nd
from straightdope.compiler import NumbaBackend
from straightdope.gluon import nn

ROOT = Path(__file__).resolve().parents[1]


class Net(gluon.HybridBlock):
    """Kernels of several modules: conv, batch norm, pooling, matmul, softmax CE."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.conv = nn.Conv2D(4, 3, padding=1)
        self.bn = nn.BatchNorm()
        self.pool = nn.MaxPool2D(2)
        self.out = nn.Dense(3)

    def hybrid_forward(self, F, x, label):
        y = self.out(self.pool(F.relu(self.bn(self.conv(x)))))
        return F.softmax_cross_entropy(y, label), F.softmax(y).reshape((-1,))


@pytest.fixture(scope="module")
def graphs():
    """The annotated forward and backward graphs of a training step."""
    net = Net()
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32))
    label = nd.array([0, 2])
    net(x, label)
    net.hybridize(executor="numpy")
    with autograd.record():
        net(x, label)
    plan = net._cached_op.last_plan
    return plan.forward.graph, plan.backward.graph


class _Recorder:
    """Stands for a `k_<module>` of a generated function: records each call's function
    and what its arguments are, then makes the call."""

    def __init__(self, name, module, log):
        self._name, self._module, self._log = name, module, log

    def __getattr__(self, func):
        real = getattr(self._module, func)

        def call(*args):
            self._log.append((self._name, func, [_seen(a) for a in args]))
            return real(*args)
        return call


def _seen(arg):
    if isinstance(arg, np.ndarray):
        return ("array", arg.dtype.name, arg.ndim)
    if isinstance(arg, tuple):
        return ("tuple", len(arg))
    if isinstance(arg, (float, np.floating)):
        return ("float",)
    return ("int", int(arg))


def _expected(kind, inputs):
    if kind[0] == "input":
        return ("array", inputs[kind[1]].dtype.name, inputs[kind[1]].ndim)
    if kind[0] == "array":
        return ("array", kind[1], 1)
    return kind


def _agrees(seen, kind, inputs):
    if kind[0] == "int":
        return seen[0] == "int"
    if kind[0] == "flag":
        return seen == ("int", kind[1])
    return seen == _expected(kind, inputs)


def test_the_recorded_kernel_calls_are_the_calls_the_steps_tier_makes(graphs):
    for graph in graphs:
        ex = NumbaBackend().for_shapes(graph, is_train=True, tier="steps")
        source = ex.stages["source"]
        namespace: dict = {}
        exec(compile(str(source), "<test>", "exec"), namespace)
        log: list = []
        for name in [k for k in namespace if k.startswith("k_")]:
            namespace[name] = _Recorder(name[2:], namespace[name], log)
        rng = np.random.default_rng(1)
        inputs = [(rng.integers(0, 3, n.shapes[0]) if n.name.endswith("label")
                   else rng.standard_normal(n.shapes[0])).astype(n.dtypes[0])
                  for n in graph.nodes if n.is_var]
        outs = namespace["run_graph"](*inputs, *ex.new_arenas(), ex.meta, ex.loops)
        assert len(outs) > 0
        assert [(m, f) for m, f, _ in log] == [(c.module, c.func) for c in source.calls]
        assert {c.module for c in source.calls} >= {"util", "conv", "norm", "pool", "blas",
                                                   "softmax"}
        for (module, func, seen), call in zip(log, source.calls):
            assert len(seen) == len(call.args), (module, func)
            bad = [(s, k) for s, k in zip(seen, call.args) if not _agrees(s, k, inputs)]
            assert not bad, f"{module}.{func}: ran with / recorded: {bad}"


def test_the_record_knows_the_arenas_and_each_steps_code(graphs):
    from widgets.graph_view import code_for
    graph = graphs[1]
    ex = NumbaBackend().for_shapes(graph, is_train=True, tier="graph")
    source = ex.stages["source"]
    assert [dt.name for dt, _ in ex.arena_specs] == list(source.arenas) == ["float32"]
    fused = ex.stages["fused"]
    shown = 0
    for step in fused.steps:
        code = source.steps.get(step.id)
        if code is None:
            assert step.kind in ("view", "fused")      # a view, or a loop with no outputs
            continue
        assert code in source and code.lstrip().startswith(f"# step {step.id}:")
        node = fused.graph.nodes[step.nodes[0]]
        assert code_for(ex.stages, node) == code.rstrip()
        shown += 1
    assert shown >= 5
    assert type(ex.stages["source"]) is not str and isinstance(ex.stages["source"], str)
    copied = __import__("copy").deepcopy(source)                 # a copied Executable's
    assert copied == source and copied.calls == source.calls and copied.steps == source.steps


@pytest.mark.parametrize("path", ["straightdope/compiler/backend.py",
                                  "straightdope/compiler/tiers.py",
                                  "straightdope/compiler/warmup.py",
                                  "straightdope/compiler/loops.py",
                                  "straightdope/compiler/vm.py"])
def test_what_reads_generated_code_does_not_parse_it(path):
    """The design rule: the record, not regular expressions on the text."""
    tree = ast.parse((ROOT / path).read_text())
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for a in node.names}
    assert "re" not in imported, f"{path} imports re: read codegen.Generated instead"
