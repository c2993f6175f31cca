"""First contact (issue 24): what a student's first hybridized calls do in a fresh process.

On a new machine the first tiered call runs the NumPy reference tier without importing
Numba and hands the graph to a compile process that outlives its parent; the next run
of the program finds the compiled graph (and the VM, tests/test_vm.py) in the cache. Each test runs its programs in fresh processes
with a temporary cache dir; graphs carry a constant that is new in every run, so that
nothing of them is in any cache before."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, gluon, nd
from straightdope.compiler import tiers
from straightdope.gluon import nn

ROOT = Path(__file__).resolve().parents[1]


def numba_internals_used() -> bool:
    from straightdope.compiler import numba_internals
    return numba_internals.USED

# A small net whose constant (and so its generated code) is new in every run.
PROGRAM = """
import json, sys, time
import straightdope as mx
from straightdope import nd
from straightdope.gluon import nn

class Scaled(mx.gluon.HybridBlock):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.dense = nn.Dense(7, activation="relu")
        self.out = nn.Dense(3)

    def hybrid_forward(self, F, x):
        return self.out(self.dense(x) * self.scale)

mx.random.seed(0)
net = Scaled({scale})
net.initialize()
x = nd.ones((2, 5))
want = net(x).asnumpy()
net.hybridize()
got = net(x).asnumpy()
stats = net._cached_op.stats()["forward"]
from straightdope.compiler import tiers
worker = tiers._COMPILER.process.pid if tiers._COMPILER is not None else None
print(json.dumps({{"tier": stats["tier"], "pending": stats["pending"],
                   "numba": "numba" in sys.modules, "worker": worker,
                   "same": bool(abs(got - want).max() < 1e-5)}}))
"""


@pytest.fixture(autouse=True)
def reference_tier_first(monkeypatch):
    """These tests are about the reference tier and the compile process: the VM stays
    unloaded in this process, as on a new machine (tests/test_vm.py tests what runs
    once the setup step has compiled the VM)."""
    monkeypatch.setattr(tiers, "_vm_loaded", lambda: False)


def unique_scale() -> float:
    return 1.0 + time.time_ns() % 1_000_003 / 1e7


class NewCode(gluon.HybridBlock):
    """A net whose generated code is new in every test (its constant is)."""

    def __init__(self):
        super().__init__()
        self.scale = unique_scale()
        self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        return self.dense(x) * self.scale


def tiered_new_code_net():
    """A NewCode net hybridized with the tiered compile, its input and its imperative
    output."""
    net = NewCode()
    net.initialize()
    x = nd.ones((2, 3))
    want = net(x).asnumpy()
    net.hybridize(compile="tiered")
    return net, x, want


def run_program(cache_dir, scale, cwd=None, env=None, script_dir=None):
    """Run PROGRAM in a fresh process (from `script_dir`, in `cwd`); its JSON line."""
    script_dir = Path(script_dir or cache_dir)
    script = script_dir / "program.py"
    script.write_text(PROGRAM.format(scale=scale))
    environment = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir),
                       STRAIGHTDOPE_COMPILE="tiered", PYTHONPATH=str(ROOT),
                       OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **(env or {}))
    done = subprocess.run([sys.executable, str(script)], cwd=cwd or script_dir,
                          env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_until_gone(pid, seconds=600):
    """Wait for a process to end (a zombie counts as ended); True if it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_a_short_program_leaves_its_graph_compiled_for_its_next_run(tmp_path):
    scale = unique_scale()
    first = run_program(tmp_path, scale)
    # the first call ran on the reference tier, without importing Numba, and was right
    assert first == {"tier": "reference", "pending": True, "numba": False,
                     "worker": first["worker"], "same": True}
    # the program has exited; its compile process finishes the graph, then ends itself
    assert wait_until_gone(first["worker"]), "the compile process did not end"
    assert list((tmp_path / "ready").iterdir()), "nothing was marked compiled"
    second = run_program(tmp_path, scale)
    # the compile process compiled the VM too: the next run starts on it, and loads the
    # graph's compiled code once the VM has run a while (tests/test_vm.py)
    assert second["tier"] == "vm" and second["pending"] and second["same"]
    assert second["worker"] is None              # nothing left to compile
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []


@pytest.mark.slow
def test_the_compile_process_imports_nothing_from_the_current_directory(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    planted = tmp_path / "planted-ran"
    for name in ("numpy", "numba", "json"):
        (cwd / f"{name}.py").write_text(f"open({str(planted)!r}, 'a').write('{name}')\n"
                                        f"raise ImportError('planted')\n")
    (cwd / "straightdope").mkdir()
    (cwd / "straightdope" / "__init__.py").write_text((cwd / "numpy.py").read_text())
    program_dir = tmp_path / "program"
    program_dir.mkdir()
    first = run_program(tmp_path / "cache", unique_scale(), cwd=cwd, script_dir=program_dir)
    assert wait_until_gone(first["worker"])
    assert not planted.exists(), planted.read_text()
    assert list((tmp_path / "cache" / "ready").iterdir())   # and it did compile


@pytest.mark.slow
def test_output_on_the_compile_process_stdout_does_not_break_it(tmp_path):
    # Numba's own debug output goes to stdout: the answers have a pipe of their own
    first = run_program(tmp_path, unique_scale(), env={"NUMBA_DEBUG_CACHE": "1"})
    assert wait_until_gone(first["worker"])
    assert list((tmp_path / "ready").iterdir())


@pytest.mark.slow
def test_two_programs_compiling_the_same_graph_both_finish_and_agree(tmp_path):
    scale = unique_scale()
    script = tmp_path / "program.py"
    script.write_text(PROGRAM.format(scale=scale))
    environment = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(tmp_path),
                       STRAIGHTDOPE_COMPILE="tiered", PYTHONPATH=str(ROOT))
    runs = [subprocess.Popen([sys.executable, str(script)], env=environment, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["same"] for r in results)
    for r in results:
        if r["worker"] is not None:
            assert wait_until_gone(r["worker"])
    third = run_program(tmp_path, scale)
    # the graph is compiled (nothing left to compile); the VM, compiled too, answers first
    assert third["tier"] == "vm" and third["worker"] is None and third["same"]


def test_a_graph_description_rebuilds_into_the_same_graph():
    """The compile process rebuilds each graph from `tiers.describe`: it must compile
    exactly the graph the caller runs (the same description, so the same key)."""
    class Block(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.pool = nn.MaxPool2D(2)
            self.drop = nn.Dropout(0.5)
            self.dense = nn.Dense(3)

        def hybrid_forward(self, F, x):
            y = F.relu(self.bn(self.conv(x)) + x)
            return F.log_softmax(self.dense(self.drop(self.pool(y))))
    net = Block()
    net.initialize()
    x = nd.ones((2, 4, 6, 6))
    net(x)
    net.hybridize(executor="numpy")
    with autograd.record():
        net(x)
    plan = net._cached_op.last_plan
    for graph in (plan.forward.graph, plan.backward.graph):
        description = tiers.describe(graph, True)
        again = tiers.describe(tiers.rebuild(description), True)
        assert again == description
        assert tiers.job_key(again) == tiers.job_key(description)


def test_without_a_compile_process_the_graph_compiles_in_this_process(monkeypatch):
    # an embedded or frozen Python cannot start one: no raw error, a correct slower path
    monkeypatch.setattr(tiers, "_can_start_process", lambda: "made up for this test")
    monkeypatch.setattr(tiers, "_COMPILER", None)

    net, x, want = tiered_new_code_net()
    first = net(x).asnumpy()
    executable = net._cached_op.last_plan.forward
    assert executable.wait(timeout=600) and executable.error is None
    assert executable.tier == "graph"
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert tiers._COMPILER is None



@pytest.mark.parametrize("python", ["empty sys.executable", "not executable", "a directory",
                                    "a frozen app"])
def test_a_python_that_cannot_start_the_compile_process_is_told_to_compile_here(
        monkeypatch, tmp_path, python):
    """Issue 28 item 8: no raw FileNotFoundError/PermissionError, and a frozen app (whose
    sys.executable is the app itself) is never relaunched."""
    monkeypatch.setattr(tiers, "_COMPILER", None)
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(args[0])
        return real_popen(*args, **kwargs)
    monkeypatch.setattr(tiers.subprocess, "Popen", popen)
    if python == "empty sys.executable":
        monkeypatch.setattr(sys, "executable", "")
    elif python == "not executable":
        (tmp_path / "python3").write_text("")
        monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    elif python == "a directory":                   # passes os.access; Popen refuses it
        monkeypatch.setattr(sys, "executable", str(tmp_path))
    else:
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    ticket = tiers.submit({}, "no-such-key")
    assert ticket.done() and ticket.here
    assert (f"Permission denied: '{tmp_path}'" if python == "a directory" else
            "no background compile process") in ticket.error
    assert tiers._COMPILER is None
    assert len(started) == (1 if python == "a directory" else 0)

def test_the_reference_tier_runs_a_graph_as_a_list_of_numpy_calls():
    from straightdope.graph import Graph, annotate
    from straightdope.graph.interpret import ReferenceExecutable
    data = mx.sym.var("data")
    out = mx.sym.split(mx.sym.relu(data), num_outputs=2, axis=1)
    graph = annotate(Graph.from_symbol(out[1] * 2 + out[0]), {"data": (3, 4)},
                     {"data": np.float32})
    executable = ReferenceExecutable(graph, False)
    assert len(executable.steps) == len(graph.op_nodes)        # one step per op
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    relu = np.maximum(x, 0)
    np.testing.assert_allclose(executable.run([x])[0], relu[:, 2:] * 2 + relu[:, :2])


@pytest.mark.slow
def test_on_a_machine_without_the_setup_step_one_line_names_it(tmp_path):
    program = PROGRAM.format(scale=unique_scale()) + textwrap.dedent("""
        assert net._cached_op.last_plan.forward.wait(timeout=600)
        net2 = Scaled(2.5)
        net2.initialize()
        net2.hybridize()
        net2(nd.ones((3, 5)))
        assert net2._cached_op.last_plan.forward.wait(timeout=600)
        """)
    script = tmp_path / "program.py"
    script.write_text(program)
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(tmp_path / "cache"),
               STRAIGHTDOPE_COMPILE="tiered", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("python -m straightdope.warmup") == 1, done.stderr


@pytest.mark.slow
def test_the_first_contact_benchmark_runs_seed_002_in_a_fresh_process(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import first_contact
    finally:
        sys.path.remove(str(ROOT))
    result = first_contact.run_student(tmp_path / "cache")
    assert result["tier"] == "reference"
    assert 0 < result["first_call"] < result["hybridized"]
    assert result["hybridized_999"] == pytest.approx(result["hybridized"] - result["first_call"])
    first_contact.wait_for_background(tmp_path / "cache")
    assert list((tmp_path / "cache" / "ready").iterdir())


def test_a_compiled_graph_that_fails_to_load_stays_on_the_reference_tier_and_says_why(
        monkeypatch):
    def done(description, key):                  # "compiled": the loader thread loads it
        ticket = tiers.Ticket()
        ticket.finish()
        return ticket

    def broken(self):
        raise OSError("made up for this test")
    monkeypatch.setattr(tiers, "submit", done)
    monkeypatch.setattr(tiers.TieredExecutable, "_compiled", broken)

    net, x, want = tiered_new_code_net()
    net(x)
    executable = net._cached_op.last_plan.forward.current    # this shape's
    deadline = time.monotonic() + 60
    while executable.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not executable.pending and "made up for this test" in executable.error
    assert executable.tier == "reference"
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_a_killed_compile_process_leaves_a_correct_slower_path(monkeypatch):
    # the process killed (by the user, the OOM killer) while it holds the job: no hang,
    # the job is compiled in this process instead, and the numbers stay right
    import signal
    monkeypatch.setattr(tiers, "_COMPILER", None)
    net, x, want = tiered_new_code_net()
    net(x)
    executable = net._cached_op.last_plan.forward.current
    process = tiers._COMPILER.process
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert executable.wait(timeout=600) and executable.error is None
    assert executable.tier == "graph"
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert tiers._COMPILER.process.poll() is not None       # the killed one, not restarted
    net2 = NewCode()                                         # the next graph gets a new one
    net2.initialize()
    net2.hybridize(compile="tiered")
    net2(x)
    assert tiers._COMPILER.process.poll() is None


def test_on_a_new_machine_hybridize_starts_the_compile_process_not_the_first_call(
        monkeypatch):
    # target 5: starting a process costs milliseconds (6 ms of a 26 us/call MLP's first
    # 1,000 calls); hybridize() pays them, and the first call only hands the graph over
    monkeypatch.setattr(tiers, "is_ready", lambda key: False)     # no VM: a new machine
    monkeypatch.setattr(tiers, "_COMPILER", None)
    phase, spawned = ["build"], []
    real_spawn = tiers._spawn

    def spawn():
        spawned.append(phase[0])
        return real_spawn()
    monkeypatch.setattr(tiers, "_spawn", spawn)
    net = NewCode()
    net.initialize()
    x = nd.ones((2, 3))
    want = net(x).asnumpy()
    phase[0] = "hybridize"
    net.hybridize(compile="tiered")
    phase[0] = "first call"
    got = net(x).asnumpy()
    assert spawned == ["hybridize"]
    executable = net._cached_op.last_plan.forward.current
    assert executable.tier == "reference" and executable.pending
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert executable.wait(timeout=600) and executable.error is None


def test_hybridize_starts_no_compile_process_where_nothing_would_compile(monkeypatch):
    # NUMBA_DISABLE_JIT (a debugging session): the reference tier is all there is
    monkeypatch.setattr(tiers, "is_ready", lambda key: False)
    monkeypatch.setattr(tiers, "_COMPILER", None)
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    tiers.prepare()
    assert tiers._COMPILER is None


@pytest.mark.parametrize("errno_name", ["ENOLCK", "EOPNOTSUPP"])
def test_a_file_system_without_locks_compiles_without_turns(monkeypatch, tmp_path, errno_name):
    # some network and FUSE mounts have no flock: the compile goes on (writes are atomic
    # renames anyway); any other error of the lock is still raised
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(getattr(errno, errno_name), "made up for this test")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with tiers._one_compile_per_cache(tmp_path):
        entered = True
    assert entered and (tmp_path / "compile.lock").exists()

    def broken(fd, operation):
        raise OSError(errno.EBADF, "made up for this test")
    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(OSError, match="made up"):
        with tiers._one_compile_per_cache(tmp_path):
            pass


def test_a_full_cache_dir_keeps_the_reference_tier_and_says_what_to_do(tmp_path):
    # the cache dir is a 256 KB file system of its own (a private mount namespace):
    # the compile process's writes fail with ENOSPC, as on a full disk
    if os.getuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to mount a small file system")
    program = PROGRAM.format(scale=unique_scale()).replace(
        "got = net(x).asnumpy()", textwrap.dedent("""\
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = net(x).asnumpy()
            executable = net._cached_op.last_plan.forward.current
            assert executable.wait(timeout=600)
            got = net(x).asnumpy()
        print(json.dumps([str(w.message) for w in caught]))
        """))
    script, cache_dir = tmp_path / "program.py", tmp_path / "cache"
    script.write_text(program)
    cache_dir.mkdir(mode=0o700)
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir),
               STRAIGHTDOPE_COMPILE="tiered", PYTHONPATH=str(ROOT))
    mount = f"mount -t tmpfs -o size=256k,mode=0700 tmpfs {shlex.quote(str(cache_dir))}"
    done = subprocess.run(["unshare", "-m", "sh", "-c", mount + ' && exec "$0" "$1"',
                           sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0 and "mount" in done.stderr and "Traceback" not in done.stderr:
        pytest.skip(f"cannot mount a file system here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    warned, result = [json.loads(line) for line in done.stdout.strip().splitlines()[-2:]]
    assert result["tier"] == "reference" and result["same"]
    assert len(warned) == 1 and "is full" in warned[0] and "STRAIGHTDOPE_CACHE_DIR" in warned[0]


# A kernel called from Python (as an optimizer's update and an imperative loss call
# theirs), in a fresh process: compiled into the cache by the first run, loaded by the
# next; Numba's full start-up (CPUContext.refresh) counted.
KERNEL_FROM_PYTHON = textwrap.dedent("""
    import json
    import numpy as np
    from numba.core.cpu import CPUContext
    refreshes = []
    full_refresh = CPUContext.refresh
    def counted(self):
        refreshes.append(1)
        return full_refresh(self)
    CPUContext.refresh = counted
    from straightdope.compiler import numba_internals
    from straightdope.compiler.kernels import update
    w = np.linspace(-1, 1, 7, dtype=np.float32)
    g = np.linspace(2, 3, 7, dtype=np.float32)
    want = (1 - 0.1 * 0.01) * w - 0.1 * (0.5 * g)
    update.sgd(w, g, 0.1, 0.01, 0.5, -1.0)
    print(json.dumps({"refreshes": len(refreshes), "fast_loads": numba_internals.FAST_LOADS,
                      "close": bool(np.allclose(w, want, rtol=1e-6))}))
""")


@pytest.mark.skipif(not numba_internals_used(), reason="this Numba is not the tested one")
def test_a_kernel_first_called_from_python_loads_from_the_cache_without_numbas_start_up(
        tmp_path):
    """The first training step's imperative loss and optimizer call kernels from Python;
    found in the cache, they load the fast way (numba_internals.load_first), not through
    Numba's half-second start-up."""
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))

    def run():
        done = subprocess.run([sys.executable, "-c", KERNEL_FROM_PYTHON], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])
    first = run()
    assert first["close"] and first["refreshes"] > 0 and first["fast_loads"] == 0  # compiled
    second = run()
    assert second["close"] and second["refreshes"] == 0 and second["fast_loads"] == 1
