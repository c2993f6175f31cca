"""The VM tier (compiler/vm.py, compiler/kernels/vm.py): a graph as a program for one
precompiled function. It must compute what the reference tier computes, take the
graphs it claims to take, refuse the others by name, and be what a tiered
`hybridize()` runs from the first call once the VM is compiled."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from op_cases import CASES, as_dtype

from straightdope import autograd, nd, sym
from straightdope.cached_op import CachedOp
from straightdope.compiler import vm
from straightdope.graph import AnyShape, ReferenceBackend, annotate
from straightdope.gluon import nn
from straightdope.ops import OPS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StrictVMBackend:
    """Every graph on the VM, or NotForTheVM: what the tests compare."""
    name = "vm"

    def compile(self, graph, is_train=False, static_alloc=False, static_shape=False):
        return AnyShape(graph, lambda shaped: vm.VMExecutable(shaped, is_train), static_shape)


def _run(case, backend, poison=None):
    rng = np.random.default_rng(0)
    arrays = [as_dtype(a, np.float32) for a in case.make(rng)]     # ints stay ints
    if poison is not None:             # NaN and infinities in the (float) data inputs
        for j in [j for j in case.wrt or (0,) if j < len(arrays)
                  and arrays[j].dtype.kind == "f"]:
            flat = arrays[j].reshape(-1)
            flat[::3] = poison
            flat[1::5] = -poison if poison == poison else poison
    names = [f"x{j}" for j in range(len(arrays))]
    out = getattr(sym, case.op)(*[sym.var(n) for n in names], **case.attrs)
    visible = OPS[case.op].visible_count(out._outputs[0][0].attrs)
    group = sym.Group([out[j] for j in range(visible)] if len(out._outputs) > 1 else [out])
    params = {n: nd.array(a, dtype=a.dtype) for n, a in zip(names, arrays)}
    for j in case.wrt:
        params[names[j]].attach_grad()
    op = CachedOp(group, [], backend=backend)
    with autograd.record(train_mode=case.train):
        outs = op([], params)
    heads = [nd.array(np.random.default_rng(1).standard_normal(o.shape)) for o in outs]
    if case.wrt:
        autograd.backward(outs, heads)
    return [o.asnumpy() for o in outs], {n: p.grad.asnumpy() for n, p in params.items()
                                         if p.grad is not None}


def _float32_case(case):
    return not any(k in case.op for k in ("Cast", "one_hot", "arg", "pick", "Embedding"))


@pytest.mark.parametrize("case", [c for c in CASES if _float32_case(c)], ids=lambda c: c.id)
def test_vm_computes_what_the_reference_tier_computes(case):
    """Forward and gradients, for every op case whose graphs the VM takes."""
    try:
        got, got_grad = _run(case, StrictVMBackend())
    except vm.NotForTheVM as err:
        pytest.skip(f"not for the VM: {err}")      # (test_the_vm_takes_what_it_lists)
    want, want_grad = _run(case, ReferenceBackend())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=case.id)
    assert got_grad.keys() == want_grad.keys()
    for name in got_grad:
        np.testing.assert_allclose(got_grad[name], want_grad[name], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{case.id}: gradient of {name}")


@pytest.mark.parametrize("poison", [np.nan, np.inf], ids=["nan", "inf"])
@pytest.mark.parametrize("case", [c for c in CASES if _float32_case(c)], ids=lambda c: c.id)
def test_vm_agrees_with_the_reference_tier_on_nan_and_inf(case, poison):
    """NaN propagates and infinities give what NumPy gives (max keeps a NaN, as
    np.maximum does), forward and gradients."""
    try:
        with np.errstate(all="ignore"):
            got, got_grad = _run(case, StrictVMBackend(), poison)
    except vm.NotForTheVM as err:
        pytest.skip(f"not for the VM: {err}")
    with np.errstate(all="ignore"):
        want, want_grad = _run(case, ReferenceBackend(), poison)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True, err_msg=case.id)
    for name in got_grad:
        np.testing.assert_allclose(got_grad[name], want_grad[name], rtol=1e-5, atol=1e-5,
                                   equal_nan=True, err_msg=f"{case.id}: gradient of {name}")


def test_the_vm_takes_what_it_lists():
    """Every op of `vm.SCALAR_OPS` with a case, and dot and sum, run on the VM (the
    first case of each whose attributes the VM has a rule for)."""
    refused = {}
    for name in sorted(set(vm.SCALAR_OPS) | {"dot", "sum"}):
        cases = [c for c in CASES if c.op == name and _float32_case(c)]
        if name == "Activation":
            cases = [c for c in cases if c.attrs.get("act_type") in ("relu", "tanh")]
        if not cases:
            continue
        try:
            _run(cases[0], StrictVMBackend())
        except vm.NotForTheVM as err:
            refused[cases[0].id] = str(err)
    assert not refused, refused


def test_the_vm_takes_the_ops_of_an_mlp_and_its_training_step():
    """The ops a Dense network's forward and backward lower to all run on the VM, and
    the numbers match the reference tier (the net's loss left imperative)."""
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(8, activation="sigmoid"),
            nn.Dense(8, activation="tanh"), nn.Dense(3))
    net.initialize()
    x = nd.random.normal(shape=(5, 7))
    results = {}
    for name, backend in (("vm", StrictVMBackend()), ("reference", ReferenceBackend())):
        net.hybridize(executor=backend)
        with autograd.record():
            y = net(x)
            loss = (y * y).sum()
        loss.backward()
        results[name] = [y.asnumpy()] + [p.grad().asnumpy().copy()
                                           for p in net.collect_params().values()]
    for got, want in zip(results["vm"], results["reference"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_broadcasting_in_both_loop_levels():
    """An operand broadcast along the rows, another along the columns, a scalar."""
    a, b, c = sym.var("a"), sym.var("b"), sym.var("c")
    out = sym.broadcast_mul(sym.broadcast_add(a, b), c) * 2.0 - 1.0
    shapes = {"a": (4, 6), "b": (1, 6), "c": (4, 1)}
    from straightdope.graph import Graph
    graph = annotate(Graph.from_symbol(out), shapes, {k: "float32" for k in shapes})
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shapes[n]).astype(np.float32) for n in graph.input_names]
    got = vm.VMExecutable(graph).run(arrays)[0]
    values = dict(zip(graph.input_names, arrays))
    want = (values["a"] + values["b"]) * values["c"] * 2.0 - 1.0
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_what_it_cannot_run_is_refused_by_name():
    x = sym.var("x")
    from straightdope.graph import Graph
    graph = annotate(Graph.from_symbol(sym.Convolution(x, sym.var("w"), kernel=(3, 3),
                                                       num_filter=2, no_bias=True)),
                     {"x": (1, 1, 5, 5), "w": (2, 1, 3, 3)}, {"x": "float32", "w": "float32"})
    with pytest.raises(vm.NotForTheVM, match="Convolution"):
        vm.VMExecutable(graph)
    graph = annotate(Graph.from_symbol(x * 2), {"x": (3,)}, {"x": "float64"})
    with pytest.raises(vm.NotForTheVM, match="float32 only"):
        vm.VMExecutable(graph)


def test_a_convnet_is_refused_before_any_pass_runs(monkeypatch):
    """A tiered first call asks the VM first: for a convolution it must say no at once,
    not after the passes the compiled tier then runs again (lowering, fusion, memory)."""
    from straightdope.compiler import backend
    ran = []
    monkeypatch.setattr(backend, "PIPELINE", tuple(
        (stage, key, lambda ex, stages, run=run, stage=stage: ran.append(stage) or run(ex, stages))
        for stage, key, run in backend.PIPELINE))
    x = sym.var("x")
    from straightdope.graph import Graph
    net = sym.relu(sym.Pooling(sym.Convolution(x, sym.var("w"), kernel=(3, 3), num_filter=2,
                                               no_bias=True), kernel=(2, 2), pool_type="max"))
    graph = annotate(Graph.from_symbol(net), {"x": (1, 1, 6, 6), "w": (2, 1, 3, 3)},
                     {"x": "float32", "w": "float32"})
    with pytest.raises(vm.NotForTheVM, match="Convolution|Pooling"):
        vm.VMExecutable(graph)
    assert ran == []
    dense = annotate(Graph.from_symbol(sym.relu(x) * 2.0), {"x": (3, 4)}, {"x": "float32"})
    vm.VMExecutable(dense)                 # the passes still run for a graph it takes
    assert ran[:4] == ["traced", "shapes", "fused", "memory"]


def test_outputs_are_fresh_and_inputs_may_change_between_calls():
    """Each call's outputs are new arrays; a new input array (another address) is read."""
    from straightdope.graph import Graph
    x = sym.var("x")
    graph = annotate(Graph.from_symbol(sym.relu(x) + 1.0), {"x": (3, 4)}, {"x": "float32"})
    ex = vm.VMExecutable(graph)
    first = np.ones((3, 4), np.float32)
    y1 = ex.run([first])[0]
    y2 = ex.run([-first])[0]
    assert y1 is not y2 and not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, 2.0)
    np.testing.assert_array_equal(y2, 1.0)
    first[:] = 5.0                   # the same array, changed in place: read again
    np.testing.assert_array_equal(ex.run([first])[0], 6.0)
    strided = np.ones((3, 8), np.float32)[:, ::2]           # not contiguous: copied
    np.testing.assert_array_equal(ex.run([strided])[0], 2.0)
    y = sym.relu(x) + 1.0                   # one value returned twice, and an input
    graph = annotate(Graph.from_symbol(sym.Group([y, y, x])), {"x": (3, 4)}, {"x": "float32"})
    a, b, c = vm.VMExecutable(graph).run([first])
    assert not np.shares_memory(a, b) and not np.shares_memory(c, first)
    np.testing.assert_array_equal(b, 6.0)


def _cache_after_vm_setup(tmp_path):
    """(cache dir, environment) after the setup step for the VM only (the kernels it
    calls come along: it is one function), for fresh processes in the default mode."""
    cache = tmp_path / "cache"
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache), PYTHONPATH=REPO)
    env.pop("STRAIGHTDOPE_COMPILE", None)
    subprocess.run([sys.executable, "-c", textwrap.dedent("""
        from straightdope.compiler import vm, tiers
        vm.compile_all(); tiers.mark_ready(tiers.vm_key())""")], env=env, check=True,
        timeout=600)
    return cache, env


@pytest.mark.slow
def test_a_short_run_on_the_vm_starts_no_compile_yet_leaves_its_graph_compiled(tmp_path):
    """The VM answers at once, so a short run's calls pay neither for looking the graph
    up nor for starting the compile process (first contact: seed 002 times the first
    1,000 calls); at exit the graph goes to the compile process, and the next run loads
    its compiled code once the VM has run a while."""
    cache, env = _cache_after_vm_setup(tmp_path)
    program = textwrap.dedent("""
        import json, sys, time
        from straightdope import nd
        from straightdope.compiler import tiers
        from straightdope.gluon import nn
        net = nn.HybridSequential()
        net.add(nn.Dense(6, activation="relu"), nn.Dense(3))
        net.initialize()
        x = nd.ones((2, 5))
        net.hybridize()
        for _ in range(LONG and 10**6 or 20):
            net(x)
            if net._cached_op.stats()["forward"]["tier"] != "vm":
                break
        print(json.dumps({"tier": net._cached_op.stats()["forward"]["tier"],
                          "process": tiers._COMPILER is not None,
                          "pending": net._cached_op.stats()["forward"]["pending"]}))
        """)
    short = program.replace("LONG", "False")
    done = subprocess.run([sys.executable, "-c", short], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"tier": "vm", "process": False,
                                                        "pending": True}
    ready = cache / "ready"
    deadline = time.monotonic() + 300          # the compile process outlives the program
    while len(list(ready.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(list(ready.iterdir())) == 2, "the graph was not compiled after the exit"
    done = subprocess.run([sys.executable, "-c", program.replace("LONG", "True")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    # compiled by the first run: loaded from the cache, nothing handed to a process
    assert json.loads(done.stdout.splitlines()[-1]) == {"tier": "graph", "process": False,
                                                        "pending": False}


@pytest.mark.slow
def test_a_tiered_net_runs_the_vm_from_its_first_call(tmp_path):
    """After the setup step compiled the VM, a fresh process's first hybridized call
    runs the VM, and the graph's compiled code takes over once the background process
    has built it (the answers agree throughout)."""
    cache, env = _cache_after_vm_setup(tmp_path)
    program = textwrap.dedent("""
        import json
        import numpy as np
        from straightdope import nd
        from straightdope.gluon import nn
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(2))
        net.initialize()
        x = nd.random.normal(shape=(4, 5))
        want = net(x).asnumpy()
        net.hybridize()
        first = net(x).asnumpy()
        tier = net._cached_op.stats()["forward"]["tier"]
        net._cached_op.last_plan.forward.wait(300)
        later = net(x).asnumpy()
        print(json.dumps({"first_tier": tier,
                          "later_tier": net._cached_op.stats()["forward"]["tier"],
                          "first_ok": bool(np.allclose(first, want, atol=1e-6)),
                          "later_ok": bool(np.allclose(later, want, atol=1e-6))}))
        """)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"first_tier": "vm", "later_tier": "graph", "first_ok": True,
                      "later_ok": True}, result
    # run again: the graph is compiled, yet the VM answers first; the compiled code is
    # loaded (by the loader thread) once the VM has run LOAD_AFTER_VM_SECONDS
    again = program.replace("net._cached_op.last_plan.forward.wait(300)", textwrap.dedent("""
        import time
        deadline = time.monotonic() + 300
        while net._cached_op.stats()["forward"]["tier"] == "vm" and time.monotonic() < deadline:
            net(x)
        """))
    done = subprocess.run([sys.executable, "-c", again], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == result


def test_without_the_vm_compiled_the_first_call_stays_on_the_reference_tier(tmp_path):
    """A new machine (nothing compiled): hybridize() loads nothing, the reference runs."""
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO)
    env.pop("STRAIGHTDOPE_COMPILE", None)
    program = textwrap.dedent("""
        import sys
        from straightdope import nd
        from straightdope.gluon import nn
        net = nn.Dense(2)
        net.initialize()
        net.hybridize()
        net(nd.ones((1, 3)))
        print(net._cached_op.stats()["forward"]["tier"], "numba" in sys.modules)
        """)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["reference", "False"]


@pytest.mark.parametrize("shape", [(3, 0), (0, 4), (0, 0)])
def test_an_empty_array_runs_on_the_vm_and_gives_an_empty_result(shape):
    """A fused loop over zero elements (MXNet's tests hybridize zero-size arrays): its
    block width was min(inner, CHUNK) = 0, a range step of 0 that raised."""
    x = sym.var("x")
    op = CachedOp(sym.Group([sym.relu(x * 2.0 + 1.0)]), [], backend=StrictVMBackend())
    data = nd.array(np.ones(shape, np.float32))
    data.attach_grad()
    with autograd.record():
        (out,) = op([], {"x": data})
    out.backward(nd.ones(shape))
    assert out.shape == shape and out.asnumpy().size == 0
    assert data.grad.shape == shape
