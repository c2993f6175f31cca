"""Every registry op through the Numba compiler: Numba vs the NumPy reference vs imperative.

The cases are the shared ones in `op_cases.py` (one small call per op). Numba
compile time dominates, so the cases are compiled in a few *groups*: one graph
holds many cases side by side, is compiled once (a CachedOp: one forward and one
backward graph, float32) and each case then checks its own slice of the outputs
and gradients against the reference executor and against imperative `nd` +
autograd. Compiled code stays in the on-disk cache, so a second run of this file
compiles nothing.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from op_cases import CASES, as_dtype

import straightdope as mx  # noqa: F401
from straightdope import autograd, nd, sym
from straightdope.cached_op import CachedOp
from straightdope.compiler import NumbaBackend
from straightdope.compiler.kernels import EMITTERS
from straightdope.compiler.loops import placement
from straightdope.compiler.lower import REWRITES
from straightdope.graph import ReferenceBackend
from straightdope.ops import OPS
from straightdope.ops.registry import PLACEMENTS

def _hosted(case) -> bool:
    """Does the registry run this case on the host (`host_when`: prelu's LeakyReLU)?"""
    op = OPS[case.op]
    if op.host_when is None:
        return False
    arrays = case.make(np.random.default_rng(0))
    return op.host_when(op.parse_attrs(case.attrs), [np.shape(a) for a in arrays])


FAMILIES = {
    # an output size that only running decides: such a graph runs on the reference
    # executor (cached_op._backend_for), so it gets a group of its own
    "dynamic": lambda c: c.op in ("_contrib_boolean_mask", "_npi_bincount", "_npi_unique"),
    "elementwise": lambda c: (OPS[c.op].scalar_expr is not None and not _hosted(c)) or c.op in (
        "add_n", "Cast", "broadcast_to", "broadcast_like", "_zeros", "_ones", "_full"),
    "reduce": lambda c: c.op in ("sum", "mean", "max", "min", "prod", "argmax", "argmin",
                                 "softmax",
                                 "log_softmax", "pick", "one_hot", "SoftmaxOutput", "Softmax",
                                 "softmax_cross_entropy"),
    "nn": lambda c: c.op in ("dot", "batch_dot", "FullyConnected", "Convolution", "Pooling",
                             "BatchNorm", "LayerNorm", "Dropout"),
}


def family(case):
    for name, test in FAMILIES.items():
        if test(case):
            return name
    return "shape"


def _input_names(k, case, arrays):
    return [f"c{k}_{j}" for j in range(len(arrays))]


def _build(cases, dtype):
    """One symbol holding all cases; per case its input names, arrays and output slice."""
    rng = np.random.default_rng(0)
    outs, info = [], []
    for k, case in enumerate(cases):
        arrays = [as_dtype(a, dtype) for a in case.make(rng)]
        names = _input_names(k, case, arrays)
        variables = [sym.var(n) for n in names]
        out = getattr(sym, case.op)(*variables, **case.attrs)
        visible = OPS[case.op].visible_count(out._outputs[0][0].attrs)
        start = len(outs)
        for j in range(visible):
            outs.append(out[j] if len(out._outputs) > 1 else out)
        info.append((case, names, arrays, slice(start, len(outs))))
    return sym.Group(outs), info


GROUPS = {}
TOL = dict(rtol=1e-5, atol=1e-5)


def _run(cases, backend, dtype, train):
    """All `cases` as one CachedOp (one forward and one backward compile) under autograd:
    outputs, input gradients, and the stages of the compiled forward graph."""
    group, info = _build(cases, dtype)
    params = {}
    rng = np.random.default_rng(1)
    for case, names, arrays, _ in info:
        for j, (n, a) in enumerate(zip(names, arrays)):
            params[n] = nd.array(a, dtype=a.dtype)
            if j in case.wrt:
                params[n].attach_grad()
    op = CachedOp(group, [], backend=backend)
    with autograd.record(train_mode=train):
        outs = op([], params)
    heads = [nd.array(rng.standard_normal(o.shape), dtype=dtype) for o in outs]
    autograd.backward(outs, heads)
    result = {"out": [o.asnumpy() for o in outs], "heads": heads, "info": info,
              "grad": {n: p.grad.asnumpy() for n, p in params.items() if p.grad is not None},
              "stages": op.last_plan.forward.stages}
    if isinstance(backend, NumbaBackend):     # once more, compiled: which NumPy forwards run?
        with _numpy_forwards_recorded() as calls:
            with autograd.record(train_mode=train):
                outs = op([], params)
            autograd.backward(outs, heads)
        plan = op.last_plan
        result["host_calls"] = calls
        result["ops"] = {node.op.name for part in (plan.forward, plan.backward)
                         for node in part.graph.op_nodes}
    return result


@contextlib.contextmanager
def _numpy_forwards_recorded():
    """Record (op name, where its registry entry places it for these attributes and
    data) for every registry op's NumPy forward that runs inside the block."""
    ops = list({id(op): op for op in OPS.values() if op.forward is not None}.values())
    calls, saved = set(), [(op, op.forward) for op in ops]     # (aliases share an Op)

    def spy(op, forward):
        def recorded(attrs, *arrays, **kwargs):
            calls.add((op.name, op.placement_for(attrs, [np.shape(a) for a in arrays])))
            return forward(attrs, *arrays, **kwargs)
        return recorded
    for op in ops:
        op.forward = spy(op, op.forward)
    try:
        yield calls
    finally:
        for op, forward in saved:
            op.forward = forward


def _group(key):
    """A family of cases compiled once per session with the Numba backend, and run
    with the reference backend for comparison (float32, like the library's default)."""
    if key not in GROUPS:
        name, train = key
        cases = [c for c in CASES if family(c) == name and c.train == train]
        GROUPS[key] = (_run(cases, NumbaBackend(), np.float32, train),
                       _run(cases, ReferenceBackend(), np.float32, train))
    return GROUPS[key]


def _imperative(case, names, arrays, heads, train):
    xs = [nd.array(a, dtype=a.dtype) for a in arrays]
    for j in case.wrt:
        xs[j].attach_grad()
    with autograd.record(train_mode=train):
        out = getattr(nd, case.op)(*xs, **case.attrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    outs = outs[:len(heads)]
    if case.wrt:
        autograd.backward(outs, heads)
    return [o.asnumpy() for o in outs], {names[j]: xs[j].grad.asnumpy() for j in case.wrt}


class _Planner(ReferenceBackend):
    """Plans every graph as the Numba backend would, without compiling it (compile=False:
    the passes up to the generated source run, Numba does not), and runs it with the
    reference backend."""

    def __init__(self):
        self.plans = []

    def compile(self, graph, is_train=False, **flags):
        self.plans.append(NumbaBackend().for_shapes(graph, is_train, compile=False))
        return super().compile(graph, is_train, **flags)


def _declared(graph, node) -> str:
    """The op's placement; "host" for data or attributes its kernel does not cover."""
    return placement(graph, node)


def test_every_op_declares_a_placement_its_compiler_pass_knows():
    """kernel: an emitter in compiler/kernels; lowered: a rule in lower.py; fused: a
    scalar expression, or one of the few forms codegen writes itself."""
    for op in OPS.values():
        assert op.placement in PLACEMENTS, op.name
        assert (op.placement == "kernel") == (op.name in EMITTERS), op.name
        if op.placement == "lowered":
            assert op.name in REWRITES, op.name


@pytest.mark.parametrize("key", sorted({(family(c), c.train) for c in CASES}),
                         ids=lambda k: f"{k[0]}-{'train' if k[1] else 'predict'}")
def test_each_op_case_is_planned_where_its_placement_says(key):
    """Every op case, forward and backward graphs, planned as compiled graphs are (up to
    the generated source): each op node runs where its registry entry says, lowered ops
    never reach the plan, and every op of the cases is in a plan or lowered away."""
    name, train = key
    planner = _Planner()
    _run([c for c in CASES if family(c) == name and c.train == train], planner,
         np.float32, train)
    if name == "dynamic":          # nothing is planned: the reference executor runs it
        assert not planner.plans
        return
    planned = set()
    for exe in planner.plans:
        for graph, node, how in exe.placements():
            assert how == _declared(graph, node), \
                f"{node.op.name} ('{node.name}') runs as {how}, declared {node.op.placement}"
            planned.add(node.op.name)
    cases = {OPS[c.op].name for c in CASES if family(c) == name and c.train == train}
    lowered = {n for n in cases if OPS[n].placement == "lowered"}
    assert not lowered & planned
    assert cases - lowered - planned <= REWRITTEN, cases - lowered - planned


def test_loops_and_branches_are_planned_where_their_placement_says():
    """foreach compiles its body once and runs it per step ("loop", the body's ops
    planned too); while_loop and cond run on the host (the NumPy forward, which
    interprets the body): their registry entries say so, and so does the plan."""
    x, s = sym.var("x"), sym.var("s")
    outs, state = sym.contrib.foreach(lambda x_t, h: (sym.tanh(x_t + h),) * 2, x, s)
    looped, _ = sym.contrib.while_loop(lambda i: i < 3, lambda i: ([i * 2.0], [i + 1]),
                                       [s], max_iterations=4)
    branch = sym.contrib.cond(s.sum() > 0, lambda: s * 3.0, lambda: s * s)
    group = sym.Group([outs, state, looped[0], branch])
    planner = _Planner()
    op = CachedOp(group, [], backend=planner)
    op([], {"x": nd.ones((4, 3)), "s": nd.ones((3,))})
    (exe,) = planner.plans
    how = {node.op.name: how for _, node, how in exe.placements()}
    assert how["_foreach"] == OPS["_foreach"].placement == "loop"
    assert how["tanh"] == "fused"                       # the loop body, planned too
    assert how["_while_loop"] == OPS["_while_loop"].placement == "host"
    assert how["_cond"] == OPS["_cond"].placement == "host"


# Ops the lowering pass rewrites for some attributes or shapes only, into a view or into
# other ops (Cast to the same dtype, Dropout at inference, add_n of one array, ...)
REWRITTEN = {name for name in REWRITES if OPS[name].placement != "lowered"}


@pytest.mark.parametrize("key", sorted({(family(c), c.train) for c in CASES}),
                         ids=lambda k: f"{k[0]}-{'train' if k[1] else 'predict'}")
def test_each_op_runs_where_the_compiler_says_it_does(key):
    """Compiled graphs run an op's NumPy forward exactly where its registry placement
    says so: a kernel, fused or viewed op whose NumPy forward still runs, or a host op
    that never does, fails."""
    numba, _ = _group(key)
    if key[0] == "dynamic":        # the reference executor ran it: no compiled host steps
        assert not numba["host_calls"]
        return
    for name, declared in sorted(numba["host_calls"]):
        assert declared == "host", \
            f"{name} ran its NumPy forward in a compiled graph, but is declared " \
            f"{declared!r} for those attributes and data"
    called = {name for name, _ in numba["host_calls"]}
    for name in sorted(numba["ops"]):
        if OPS[name].placement == "host":
            assert name in called, f"{name} is declared 'host', but its NumPy forward " \
                                   f"never ran"


def test_every_forward_op_has_a_case():
    """Gradient-only ops (names starting with '_') run inside the backward graphs."""
    names = {op.name for op in OPS.values() if not op.name.startswith("_")}
    assert names - {c.op for c in CASES} == set()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op_numba_vs_reference_vs_imperative(case):
    numba, ref = _group((family(case), case.train))
    k = next(i for i, (c, *_rest) in enumerate(numba["info"]) if c is case)
    _, names, arrays, sl = numba["info"][k]
    imp_out, imp_grad = _imperative(case, names, arrays, numba["heads"][sl], case.train)
    for got, want, imp in zip(numba["out"][sl], ref["out"][sl], imp_out):
        assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
        if case.op == "Dropout" and case.train:
            continue
        np.testing.assert_allclose(got, want, **TOL, err_msg=f"{case.id}: numba vs reference")
        np.testing.assert_allclose(got, imp, **TOL, err_msg=f"{case.id}: numba vs imperative")
    for n, imp in imp_grad.items():
        np.testing.assert_allclose(numba["grad"][n], ref["grad"][n], **TOL,
                                   err_msg=f"{case.id}: gradient of {n}, numba vs reference")
        np.testing.assert_allclose(numba["grad"][n], imp, **TOL,
                                   err_msg=f"{case.id}: gradient of {n}, numba vs imperative")


def test_groups_really_fuse_and_plan():
    stages = _group(("elementwise", False))[0]["stages"]
    assert list(stages) == ["traced", "shapes", "fused", "memory", "source"]
    assert stages["fused"].groups
    assert "def run_graph(" in stages["source"]
