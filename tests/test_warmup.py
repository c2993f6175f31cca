"""The setup step that compiles the library's kernels once per machine (straightdope/warmup.py,
compiler/warmup.py).

The slow tests run `python -m straightdope.warmup --only mlp` in subprocesses, each with a
fresh STRAIGHTDOPE_CACHE_DIR, and look at the cache from *other* fresh processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from straightdope import warmup as setup_step          # the networks, the command
from straightdope.compiler import cache, warmup         # the manifest, the workers

ROOT = Path(__file__).resolve().parents[1]


def run(cache_dir, *args, **kwargs):
    """`python -m straightdope.warmup ARGS` with its own cache dir, this checkout first."""
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, "-m", "straightdope.warmup", *args]
    if kwargs.pop("background", False):
        return subprocess.Popen(command, env=env, cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


# A fresh process: are the kernel items of the MLP's steps-tier plans (inference and the
# training step's forward and backward graphs) in the cache? Prints the missing ones.
MLP_MISSING = r"""
import json
from straightdope import warmup
from straightdope.compiler import cache
from straightdope.compiler.backend import Executable
graphs, _ = warmup.traced("mlp")
items = [item for graph, is_train in graphs
         for item in Executable(graph, is_train, tier="steps", compile=False).job()
         if item[0][0] == "kernel"]
print(json.dumps({"items": len(items), "missing": [w for w, _ in cache.missing(items)]}))
"""


def mlp_missing(cache_dir) -> dict:
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", MLP_MISSING], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def numba_files(cache_dir) -> dict:
    """Numba's cache files (index and machine code) with their modification times."""
    return {p: p.stat().st_mtime_ns for p in Path(cache_dir, "numba").rglob("*.nb[ic]")}


# ------------------------------------------------------------------ fast: the pieces
def test_the_graph_tier_calls_are_typed_as_numba_types_them():
    from straightdope.compiler.codegen import KernelCall
    f32, i = ("array", "float32"), ("int",)
    recorded = [KernelCall("util", "flat", (("input", 0),)),
                KernelCall("util", "empty", (i, f32)),
                KernelCall("blas", "matmul", (f32, i, f32, i, f32, i, i, i, i,
                                              ("flag", 0), ("flag", 1))),
                KernelCall("util", "shaped", (f32, ("tuple", 2)))]
    calls = setup_step._graph_tier_calls(recorded, [np.empty((0, 0), np.float32)])
    assert [what for what, _ in calls] == [("kernel", "util", "flat"), ("kernel", "util", "empty"),
                                           ("kernel", "blas", "matmul"),
                                           ("kernel", "util", "shaped")]
    assert calls[0][1][0].ndim == 2 and calls[3][1][1] == (0, 0)
    import numba
    matmul = [numba.typeof(a) for a in calls[2][1]]
    # a bare integer in the source is a constant of its own type for Numba
    assert matmul[-2:] == [numba.types.literal(0), numba.types.literal(1)]
    assert matmul[:2] == [numba.float32[::1], numba.int64]
    assert warmup.example(warmup.describe(warmup.Literal(1))) == 1
    assert isinstance(warmup.example(["literal", 1]), warmup.Literal)


def mlp(*widths):
    from straightdope.gluon import nn
    net = nn.HybridSequential()
    for width in widths:
        net.add(nn.Dense(width, activation="relu"))
    net.add(nn.Dense(10))
    return net


def whole_graph_sources(net, shape) -> list:
    """The whole-graph functions' sources of `net`'s inference and training graphs."""
    from straightdope import autograd, init, nd
    from straightdope.compiler.backend import Executable, choose_tier
    tracer = setup_step._Tracer()
    net.initialize(init.Xavier())
    net.hybridize(executor=tracer)
    x = nd.array(np.ones(shape, np.float32))
    net(x)
    with autograd.record():
        y = net(x)
        loss = (y * y).mean()
    loss.backward()
    return [Executable(graph, is_train, tier="graph", compile=False).stages["source"]
            for graph, is_train in tracer.graphs if choose_tier(graph) == "graph"]


def test_the_plan_holds_the_small_networks_whole_graph_functions_other_sizes_share():
    """Sizes are run-time values of a whole-graph function (`meta`), so the warm-up's
    MLP (512-256-128-10) compiles the very functions of any MLP of two hidden ReLU
    layers; a third layer is another function."""
    graphs = {item[0][1] for item in setup_step.plan(["mlp"]) if item[0][0] == "graph"}
    assert len(graphs) >= 3           # inference, a training step's forward and backward
    other_sizes = whole_graph_sources(mlp(300, 40), (5, 70))
    assert len(other_sizes) == 3 and set(other_sizes) <= graphs
    assert not set(whole_graph_sources(mlp(300, 40, 20), (5, 70))) & graphs
    item = next(i for i in setup_step.plan(["mlp"]) if i[0][0] == "graph")
    assert warmup.job_item(item) == ("module", item[0][1], "run_graph")
    assert warmup.label(item).startswith("graph ")


def test_kernels_that_share_code_are_compiled_in_one_batch():
    items = [[["pool", "pool2d"], []], [["conv", "conv2d"], []], [["util", "flat"], []],
             [["conv", "conv2d_grad_data"], []], [["pool", "pool2d_grad"], []]]
    batches = warmup.batches(items)
    assert sorted(sorted(b.items) for b in batches) == [[0, 4], [1, 3], [2]]
    assert batches[0].items == [1, 3]            # the convolutions cost most: first
    assert all(b.needs == set() for b in batches)


def test_a_function_that_calls_other_items_waits_for_them_in_a_batch_of_its_own():
    """The VM calls the matrix product and the reductions: it is compiled after them
    (loading them from the cache), not together with everything it calls."""
    items = [[["vm", "run_program"], []], [["blas", "matmul"], []],
             [["conv", "conv2d"], []], [["blas", "matmul"], [["int"]]]]
    batches = warmup.batches(items)
    vm_batch = next(b for b in batches if 0 in b.items)
    assert vm_batch.items == [0] and {1, 3} <= vm_batch.needs
    assert next(b for b in batches if 1 in b.items).items == [1, 3]   # one function
    vm_first = [vm_batch] + [b for b in batches if b is not vm_batch]
    assert 0 not in warmup._next_batch(vm_first, {}, anyone_busy=True).items
    waiting = [vm_batch]
    assert warmup._next_batch(waiting, {1: None}, anyone_busy=True) is None   # it waits
    assert warmup._next_batch(waiting, {1: None, 3: "failed"}, anyone_busy=True) is vm_batch
    assert warmup._next_batch([vm_batch], {}, anyone_busy=False) is vm_batch  # or goes on


def test_a_cache_dir_it_cannot_write_is_named_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("STRAIGHTDOPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "folders", lambda: (tmp_path, tmp_path / "private", "read-only"))
    problem = warmup.cache_problem()
    assert "read-only" in problem and f"STRAIGHTDOPE_CACHE_DIR={tmp_path}" in problem
    assert "chmod u+w" in problem
    monkeypatch.setattr(cache, "folders", lambda: (tmp_path, tmp_path, "ok"))
    assert warmup.cache_problem() is None


def test_kernels_missing_reads_the_saved_plan_and_compiles_nothing(monkeypatch, tmp_path):
    manifest = tmp_path / "warmup.json"
    monkeypatch.setattr(warmup, "manifest_path", lambda: manifest)
    assert warmup.kernels_missing() == [warmup.NOT_RUN]          # never ran
    item = [["update", "sgd"], [["array", "float32", 1], ["array", "float32", 1]] +
            [["float"]] * 4]
    manifest.write_text(json.dumps({"items": [item]}))
    cached = {}
    monkeypatch.setattr(warmup, "is_cached", lambda item: cached.get(warmup.label(item), False))
    assert warmup.kernels_missing() == ["update.sgd"]
    cached["update.sgd"] = True
    assert warmup.kernels_missing() == []


def test_an_unknown_network_is_refused_with_the_choices(tmp_path):
    done = run(tmp_path / "cache", "--check", "--only", "alexnet")
    assert done.returncode == 2 and "alexnet" in done.stderr and "mlp" in done.stderr


# ------------------------------------------------ slow: real compiles in subprocesses
@pytest.mark.slow
def test_warmup_fills_the_cache_a_fresh_process_uses_and_a_second_run_compiles_nothing(
        tmp_path):
    folder = tmp_path / "cache"
    before = mlp_missing(folder)
    assert before["items"] > 0 and before["missing"]           # a new machine
    done = run(folder, "--check", "--only", "mlp")
    assert done.returncode == 1 and "not compiled" in done.stdout

    done = run(folder, "--only", "mlp")
    assert done.returncode == 0, done.stderr
    assert "compiling straightdope's kernels" in done.stderr     # the progress lines
    assert mlp_missing(folder) == {"items": before["items"], "missing": []}

    files = numba_files(folder)
    again = run(folder, "--only", "mlp")
    assert again.returncode == 0 and "already compiled" in again.stdout
    assert numba_files(folder) == files                          # nothing written again
    assert run(folder, "--check", "--only", "mlp").returncode == 0


def workers_of(pid) -> list:
    """The child processes of `pid` (Linux: /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status                           # a zombie has ended


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_an_interrupted_warmup_leaves_no_worker_and_a_rerun_completes(tmp_path):
    folder = tmp_path / "cache"
    process = run(folder, "--only", "mlp", background=True)
    deadline = time.monotonic() + 600
    while not numba_files(folder) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)                          # until the first kernel is in the cache
    workers = workers_of(process.pid)
    assert workers and process.poll() is None
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "Run it again" in err
    deadline = time.monotonic() + 60
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(w) for w in workers)

    assert run(folder, "--check", "--only", "mlp").returncode == 1
    done = run(folder, "--only", "mlp")
    assert done.returncode == 0, done.stderr
    assert "already there" in done.stdout and "compiled" in done.stdout
    assert run(folder, "--check", "--only", "mlp").returncode == 0


LENET_FIRST_CALL = r"""
import json
import numpy as np
from straightdope import autograd, gluon
from straightdope import warmup
net, inputs, labels, _ = warmup.NETWORKS["lenet"]()
net.initialize()
want = net(*inputs).asnumpy()
net.hybridize(compile="tiered")
loss = gluon.loss.SoftmaxCrossEntropyLoss()
with autograd.record():
    got = net(*inputs)
    loss(got, labels).backward()
stats = net._cached_op.stats()
print(json.dumps({"forward": stats["forward"]["tier"], "backward": stats["backward"]["tier"],
                  "same": bool(np.allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5))}))
"""


def _after_setup(tmp_path, network, program):
    """Run the setup step for `network` into a new cache, then `program` in a fresh
    process on that cache; return the JSON of its last line."""
    folder = tmp_path / "cache"
    done = run(folder, "--only", network)
    assert done.returncode == 0, done.stderr
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(folder), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_after_the_setup_a_convnet_runs_compiled_steps_from_its_first_call(tmp_path):
    """The setup step compiles the fused loops of the networks that run as steps
    (convolutions): their first tiered call, forward and backward, loads all of it from
    the cache and runs compiled code, instead of the NumPy reference tier."""
    assert _after_setup(tmp_path, "lenet", LENET_FIRST_CALL) == {
        "forward": "steps", "backward": "steps", "same": True}


SMALL_NET_FIRST_CALL = r"""
import json
import numpy as np
from numba.core.cpu import CPUContext
refreshes = []
full_refresh = CPUContext.refresh
def counted(self):
    refreshes.append(1)
    return full_refresh(self)
CPUContext.refresh = counted
from straightdope import autograd, nd
from straightdope.gluon import nn
net = nn.HybridSequential()
net.add(nn.Dense(300, activation="relu"), nn.Dense(40, activation="relu"), nn.Dense(10))
net.initialize()
x = nd.array(np.linspace(-1, 1, 5 * 70, dtype=np.float32).reshape(5, 70))
want = net(x).asnumpy()
net.hybridize(compile="sync")
with autograd.record():
    got = net(x)
    (got * got).mean().backward()
plan = net._cached_op.last_plan
print(json.dumps({"refreshes": len(refreshes),
                  "tiers": [plan.forward.current.tier, plan.backward.current.tier],
                  "cache": [plan.forward.current.timings["cache"],
                            plan.backward.current.timings["cache"]],
                  "same": bool(np.allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6))}))
"""


@pytest.mark.slow
def test_after_the_setup_a_small_net_of_other_sizes_compiles_nothing(tmp_path):
    """The setup step compiles the whole-graph functions of the small networks: an MLP
    of the same layers at other sizes loads them in its first synchronous training step,
    and Numba's compiler (its full start-up, before any compile) never runs."""
    assert _after_setup(tmp_path, "mlp", SMALL_NET_FIRST_CALL) == {
        "refreshes": 0, "tiers": ["graph", "graph"], "cache": ["disk", "disk"], "same": True}
