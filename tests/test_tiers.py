"""The two compiled tiers (whole graph, steps) and tiered execution (compiler/tiers.py)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, gluon, nd, sym
from straightdope.compiler import NumbaBackend, tiers
from straightdope.compiler.fuse import MAX_LOOP_OPS
from straightdope.gluon import nn
from straightdope.graph import Graph, annotate


@pytest.fixture(autouse=True)
def reference_tier_first(monkeypatch):
    """These tests are about the reference tier and the compile process: the VM stays
    unloaded in this process, as on a new machine (tests/test_vm.py tests what runs
    once the setup step has compiled the VM)."""
    monkeypatch.setattr(tiers, "_vm_loaded", lambda: False)


class ConvBlock(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.conv = nn.Conv2D(4, 3, padding=1)
        self.bn = nn.BatchNorm()

    def hybrid_forward(self, F, x):
        return F.relu(self.bn(self.conv(x)) + x)


def blocks(n):
    net = nn.HybridSequential()
    for _ in range(n):
        net.add(ConvBlock())
    net.add(nn.MaxPool2D(2), nn.Dense(3))
    return net


def traced_graphs(net, x):
    """The annotated forward and backward graphs of a training step (reference executor)."""
    net.initialize(mx.init.Xavier())
    net(x)
    net.hybridize(executor="numpy")
    with autograd.record():
        net(x)
    plan = net._cached_op.last_plan
    return plan.forward.graph, plan.backward.graph


def inputs_for(graph, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n.shapes[0]).astype(n.dtypes[0]) for n in graph.nodes
            if n.is_var]


def test_the_steps_tier_computes_bit_for_bit_what_the_graph_tier_computes():
    x = nd.array(np.random.default_rng(1).standard_normal((2, 4, 6, 6)).astype(np.float32))
    for graph in traced_graphs(blocks(2), x):
        values = inputs_for(graph)
        # steps first: the graph tier then links kernels the steps tier loaded
        steps_tier = NumbaBackend().compile(graph, is_train=True, tier="steps")
        graph_tier = NumbaBackend().compile(graph, is_train=True, tier="graph")
        assert graph_tier.tier == "graph" and steps_tier.tier == "steps"
        assert "L[" in steps_tier.stages["source"] and "@njit" not in steps_tier.stages["source"]
        for a, b in zip(graph_tier.run(values), steps_tier.run(values)):
            np.testing.assert_array_equal(a, b)


def test_the_steps_tier_reshapes_and_allocates_with_numpy_and_loads_only_real_kernels():
    """Each Numba signature costs a cache load in a new process; a reshape needs none."""
    from straightdope.compiler.kernels import util
    x = nd.array(np.ones((2, 4, 6, 6), np.float32))
    for graph in traced_graphs(blocks(2), x):
        planned = NumbaBackend().for_shapes(graph, is_train=True, tier="steps")
        source = planned.stages["source"]
        assert "import in_python as k_util" in source and "k_util.flat(" in source
        kernels = [what for what, _ in planned.job() if what[0] == "kernel"]
        assert kernels and all(module != "util" for _, module, _ in kernels)
        assert util.in_python.flat(np.ones((2, 3))).shape == (6,)


def test_repeated_blocks_share_their_loop_functions():
    """Compile cost per distinct piece of work: 8 blocks have no more distinct loops than 2."""
    x = nd.array(np.ones((2, 4, 6, 6), np.float32))
    counts = []
    for n in (2, 8):
        backward = traced_graphs(blocks(n), x)[1]
        ex = NumbaBackend().compile(backward, is_train=True, tier="steps")
        calls = ex.stages["source"].count("L[")
        loops = ex.timings["distinct_loops"]
        counts.append((calls, loops))
    (calls2, loops2), (calls8, loops8) = counts
    assert calls8 > calls2 and loops8 == loops2


def chain(length):
    x = sym.var("data")
    y = x
    for i in range(length):
        y = sym.tanh(y) if i % 2 else y * 0.5
    return annotate(Graph.from_symbol(y, ["data"]), {"data": (3, 4)})


def test_a_long_elementwise_chain_is_cut_into_loops_of_bounded_length():
    distinct = []
    for pieces in (5, 10):
        graph = chain(pieces * MAX_LOOP_OPS)
        ex = NumbaBackend().compile(graph, tier="steps")
        sizes = [len(s.nodes) for s in ex.stages["fused"].groups]
        assert sizes == [MAX_LOOP_OPS] * pieces
        distinct.append(ex.timings["distinct_loops"])
    # equal pieces are one function (whether they read the input, write the output, or
    # work in place): a chain twice as long compiles no new loop
    assert distinct[0] == distinct[1] < 5
    values = inputs_for(graph)
    want = values[0]
    for i in range(10 * MAX_LOOP_OPS):
        want = np.tanh(want) if i % 2 else want * np.float32(0.5)
    np.testing.assert_allclose(ex.run(values)[0], want, rtol=1e-5)


def test_auto_picks_the_graph_tier_for_small_graphs_without_convolutions():
    x = nd.array(np.ones((2, 4, 6, 6), np.float32))
    small_conv, large = traced_graphs(blocks(1), x)[0], traced_graphs(blocks(6), x)[1]
    mlp = nn.HybridSequential()
    mlp.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    small_dense = traced_graphs(mlp, x)[0]
    assert NumbaBackend().compile(small_dense).tier == "graph"
    # a convolution compiled into a whole-graph function costs seconds per graph
    assert NumbaBackend().compile(small_conv).tier == "steps"
    assert NumbaBackend().compile(large, is_train=True).tier == "steps"


class Scaled(gluon.HybridBlock):
    """A small net whose generated code is new in every test run (its constant is):
    nothing of it is in the compile cache, so a tiered first call has to wait for it."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.scale = 1.0 + time.time_ns() % 1_000_003 / 1e7
        self.dense = nn.Dense(7, activation="relu")
        self.out = nn.Dense(3)

    def hybrid_forward(self, F, x):
        return self.out(self.dense(x) * self.scale)


def test_tiered_hybridize_starts_on_the_reference_tier_switches_and_keeps_results():
    mx.random.seed(0)
    net = Scaled()
    net.initialize()
    x = nd.array(np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32))
    want = net(x).asnumpy()
    net.hybridize(compile="tiered")
    first = net(x).asnumpy()
    stats = net._cached_op.stats()
    assert stats["mode"] == "tiered"
    assert stats["forward"] == {"tier": "reference", "pending": True, "switches": []}
    executable = net._cached_op.last_plan.forward
    # the compiler's stages are there while the background process compiles
    assert "source" in executable.stages and executable.timings["tier"] == "reference"
    assert executable.wait(timeout=600), executable.error
    assert executable.error is None
    second = net(x).asnumpy()
    stats = net._cached_op.stats()
    assert stats["forward"]["tier"] == "graph" and not stats["forward"]["pending"]
    assert [tier for _, tier, _ in stats["forward"]["switches"]] == ["graph"]
    tiered = executable.current          # switched: calls go to the compiled run at once
    assert tiered.run.__self__ is tiered.active and tiered.active.tier == "graph"
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second, want, rtol=1e-5, atol=1e-6)


def test_a_tiered_training_step_gives_the_gradients_of_a_synchronous_one():
    x = nd.array(np.random.default_rng(3).standard_normal((2, 4, 6, 6)).astype(np.float32))
    grads = {}
    for mode in ("sync", "tiered"):
        mx.random.seed(0)
        net = blocks(2)
        net.initialize(mx.init.Xavier())
        net(x)
        net.hybridize(compile=mode)
        with autograd.record():
            loss = (net(x) ** 2).mean()
        loss.backward()
        grads[mode] = [p.grad().asnumpy() for p in net.collect_params().values()
                       if p.grad_req != "null"]
        stats = net._cached_op.stats()
        assert {stats["forward"]["tier"], stats["backward"]["tier"]} <= {
            "graph", "steps", "reference"}
    assert len(grads["sync"]) == len(grads["tiered"]) > 0
    for tiered, sync in zip(grads["tiered"], grads["sync"]):
        np.testing.assert_allclose(tiered, sync, rtol=1e-4, atol=1e-5)


def test_a_tiered_first_call_runs_compiled_code_at_once_when_it_is_cached():
    def build():
        mx.random.seed(0)
        net = nn.HybridSequential()
        net.add(nn.Dense(5, activation="tanh"), nn.Dense(2))
        net.initialize()
        return net
    x = nd.ones((3, 4))
    warm = build()
    warm.hybridize(compile="sync")
    warm(x)                                          # compiled into the caches
    net = build()
    net.hybridize(compile="tiered")
    net(x)
    assert net._cached_op.stats()["forward"] == {"tier": "graph", "pending": False,
                                                 "switches": []}
    tiered = net._cached_op.last_plan.forward.current
    assert tiered.run.__self__ is tiered.active        # no tiered layer around its calls
    np.testing.assert_allclose(net(x).asnumpy(), warm(x).asnumpy(), rtol=1e-6)


def test_loading_a_compiled_graph_does_not_write_its_ready_marker_again(monkeypatch):
    """The marker is written (atomically, with an fsync: ~10 ms) when a graph is
    compiled; a process that only loads the graph must not pay for it again."""
    from straightdope import serialization
    from straightdope.compiler import ready
    x = nd.ones((2, 7))
    first = nn.Dense(3, activation="relu", prefix="marker_")   # one graph (names too)
    first.initialize()
    first.hybridize(compile="sync")
    first(x)                                         # compiled (or loaded) and marked
    forward = first._cached_op.last_plan.forward.current
    assert ready.is_ready(ready.job_key(ready.describe(forward.graph, False)))
    writes = []
    real_write = serialization.atomic_write
    monkeypatch.setattr(serialization, "atomic_write",
                        lambda *a, **k: writes.append(a[0]) or real_write(*a, **k))
    again = nn.Dense(3, activation="relu", prefix="marker_")
    again.initialize()
    again.hybridize(compile="sync")
    again(x)                                         # the same graph: loaded
    assert again._cached_op.stats()["forward"]["tier"] == "graph"
    assert writes == []


def test_a_failed_background_compile_keeps_the_reference_tier_and_says_why(monkeypatch):
    from straightdope.compiler import tiers

    def failing(description, key):
        ticket = tiers.Ticket()
        ticket.finish("CodegenError: made up for this test")
        return ticket
    monkeypatch.setattr(tiers, "submit", failing)
    net = Scaled()
    net.initialize()
    x = nd.ones((2, 5))
    want = net(x).asnumpy()
    net.hybridize(compile="tiered")
    with pytest.warns(RuntimeWarning, match="made up for this test"):
        net(x)
    got = net(x).asnumpy()
    executable = net._cached_op.last_plan.forward
    assert executable.tier == "reference" and "made up" in executable.error
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sync_mode_runs_the_final_tier_from_the_first_call():
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    net.initialize()
    net.hybridize(compile="sync")
    net(nd.ones((2, 5)))
    stats = net._cached_op.stats()
    assert stats["forward"] == {"tier": "graph", "pending": False, "switches": []}


def test_an_unknown_compile_mode_is_refused_with_the_choices():
    net = nn.Dense(3)
    with pytest.raises(ValueError, match="sync.*tiered"):
        net.hybridize(compile="fast")


def test_the_trace_inspector_shows_which_tier_ran_and_a_pending_switch():
    from widgets import TraceInspector
    net = Scaled()
    net.initialize()
    net.hybridize(compile="tiered")
    inspector = TraceInspector(net, nd.ones((1, 3)))
    assert inspector.calls[-1].tier.startswith("reference")
    assert "tier: reference" in inspector.hybridized_html.value
    assert "compiling" in inspector.hybridized_html.value
    assert net._cached_op.last_plan.forward.wait(timeout=600)
    inspector.call()
    assert inspector.calls[-1].tier == "graph"
    assert "tier: graph" in inspector.hybridized_html.value


