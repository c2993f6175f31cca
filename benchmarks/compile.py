"""The compile table: seconds of the first hybridized call, each case in a fresh process.

    python -m benchmarks.compile                 # every case, Numba's kernel caches warm
    python -m benchmarks.compile --quick         # one run per case, no big cases
    python -m benchmarks.compile --only resnet18 # cases whose name contains this
    python -m benchmarks.compile --cold-kernels  # Numba's own caches empty too
    python -m benchmarks.compile --setup         # after the setup step (issue 24's state)
    python -m benchmarks.compile --json out.json # also save the figures
    python -m benchmarks.compile --against /tmp/main   # side by side with another checkout

What a new user pays (CPU seconds of the call's process, see CPU below; --wall for
wall-clock): a new process imports straightdope, builds the network, calls
it once imperatively (deferred shapes resolved: not timed), hybridizes it and calls it
again: that call (trace + compile + run) is the figure; for a training step, a
student's step: `autograd.record()`, the net, an imperative SoftmaxCrossEntropyLoss,
`backward()` and `trainer.step` (SGD). The graph cache
(STRAIGHTDOPE_CACHE_DIR) is a new empty folder for every case, so nothing compiled for
an earlier case is reused. "warm" kernels: Numba's caches of the library's own kernels
(conv, GEMM, pool, ...) were filled by an earlier run, as on any machine after the first
use; "cold": NUMBA_CACHE_DIR is a new empty folder too, so the kernels compile as well;
"--setup": each case's cache dir is what `python -m straightdope.warmup` (the README's
setup step) left in it: the kernels, the fused loops and whole-graph functions of the
book's networks, the VM; no graph of the case's own. (Restored from a copy before each
case, at the path the setup step ran with: Numba's cache files of generated code are
kept per folder of the source, here the cache dir.)
"cached" reruns the case in three other new processes with the same graph cache (the
median; the figure for a notebook restarted on the same machine). One thread
everywhere; Python's bytecode cache on (PYTHONDONTWRITEBYTECODE is dropped), as on a
user's machine. "import s" is the CPU seconds of `import straightdope` in that cached
process: what a restarted notebook pays before its first call (Numba is imported by
the first hybridized call, so its import is inside the call's figure).

The hybridized calls are synchronous by default (`--mode sync`: the figure is the time
until the compiled code has run); `--mode tiered` measures the library's default first
call, which may run on the NumPy reference tier while another process compiles (use
--wall then: that process's CPU time is not the call's). The JSON output says which tier
each figure's first call ran on.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# --------------------------------------------------------------------- the cases
# name -> (what, kind, expensive). kind: forward | train.
CASES = {
    "mlp2": "MLP, 2 hidden Dense(256), batch 32",
    "mlp8": "MLP, 8 hidden Dense(256), batch 32",
    "mlp32": "MLP, 32 hidden Dense(256), batch 32",
    "lenet": "LeNet (64,1,28,28)",
    "resnet18": "ResNet-18 v1, classes=10, (8,3,64,64)",
    "resnet50": "ResNet-50 v1, classes=10, (8,3,64,64)",
    "blocks2": "2 identical conv blocks (conv+BN+relu+residual), (8,16,16,16)",
    "blocks32": "32 identical conv blocks, (8,16,16,16)",
    "chain1k": "1k chained elementwise ops from -symbol.json, (64, 256)",
    "chain4k": "4k chained elementwise ops from -symbol.json, (64, 256)",
    "chain20k": "20k chained elementwise ops from -symbol.json, (64, 256)",
}
# (case, kind) pairs in the table, in order; the last field: expensive (one run only)
ROWS = [("mlp2", "forward"), ("mlp2", "train"), ("mlp8", "forward"), ("mlp8", "train"),
        ("mlp32", "forward"), ("mlp32", "train"), ("lenet", "forward"), ("lenet", "train"),
        ("resnet18", "forward"), ("resnet18", "train"), ("resnet50", "train"),
        ("blocks2", "train"), ("blocks32", "train"),
        ("chain1k", "forward"), ("chain4k", "forward"), ("chain20k", "forward")]
EXPENSIVE = {"resnet18", "resnet50", "blocks32", "chain4k", "chain20k"}
TIMEOUT = 900
# The figures are the first call's CPU seconds (user + system) of its process, by default:
# on a shared machine wall-clock times move 2-5x with the load of others, CPU seconds of a
# one-thread compile much less (on a quiet machine they equal the wall-clock time).
CPU = True

CHILD = r"""
import json, os, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import numpy as np
import straightdope as mx
from straightdope import autograd, nd, sym, gluon
from straightdope.gluon import nn
from straightdope.gluon.model_zoo import vision
import_cpu = time.process_time() - c0

case, kind, mode = sys.argv[1], sys.argv[2], sys.argv[3]
mx.random.seed(0)


class ConvBlock(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.conv = nn.Conv2D(16, 3, padding=1, use_bias=False)
        self.bn = nn.BatchNorm()

    def hybrid_forward(self, F, x):
        return F.relu(self.bn(self.conv(x)) + x)


def build():
    if case.startswith("mlp"):
        net = nn.HybridSequential()
        for _ in range(int(case[3:])):
            net.add(nn.Dense(256, activation="relu"))
        net.add(nn.Dense(10))
        return net, (32, 512)
    if case == "lenet":
        return vision.get_model("lenet"), (64, 1, 28, 28)
    if case.startswith("resnet"):
        return vision.get_model(case + "_v1", classes=10), (8, 3, 64, 64)
    if case.startswith("blocks"):
        net = nn.HybridSequential()
        for _ in range(int(case[6:])):
            net.add(ConvBlock())
        return net, (8, 16, 16, 16)
    if case.startswith("chain"):
        n = int(case[5:-1]) * 1000
        x = sym.var("data")
        y = x
        for i in range(n):
            y = [sym.relu, lambda s: s * 0.5, lambda s: s + 0.25, sym.tanh][i % 4](y)
        folder = os.environ["STRAIGHTDOPE_CACHE_DIR"]
        path = os.path.join(folder, "chain-symbol.json")
        y.save(path)
        return gluon.SymbolBlock.imports(path, ["data"]), (64, 256)
    raise SystemExit(f"unknown case {case}")


net, shape = build()
net.initialize(mx.init.Xavier())
x = nd.array(np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32))
out_shape = None
if not case.startswith("chain"):
    out_shape = net(x).shape                 # deferred shapes resolved (not timed)
import inspect
options = {}
if "compile" in inspect.signature(net.hybridize).parameters:
    options["compile"] = mode
net.hybridize(**options)
if kind != "forward":
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # one class index per output row (the conv blocks' (8, 16, 16, 16) output: per
    # (image, row, column), over its last axis)
    rows, classes = out_shape[:-1], out_shape[-1]
    labels = nd.array((np.arange(int(np.prod(rows))) % classes).reshape(rows),
                      dtype=np.float32)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
usage = resource.getrusage(resource.RUSAGE_SELF)
rss_before = usage.ru_maxrss
t1 = time.perf_counter()
if kind == "forward":
    y = net(x)
else:
    with autograd.record():
        loss = loss_fn(net(x), labels)
    loss.backward()
    trainer.step(shape[0])
first = time.perf_counter() - t1
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
op = net._cached_op
plan = op.last_plan
info = {"first_call": first, "first_call_cpu": cpu, "import_and_build": t1 - t0,
        "import_cpu": import_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_mb": rss_before / 1024}
fwd = getattr(plan, "forward", None)
timings = getattr(fwd, "timings", None) or {}
info["cache"] = timings.get("cache")
stats = op.stats() if hasattr(op, "stats") else {}
info["tier"] = {part: stats[part]["tier"] for part in ("forward", "backward") if part in stats}
tiers = sys.modules.get("straightdope.compiler.tiers")
compiler = getattr(tiers, "_COMPILER", None)
info["worker"] = compiler.process.pid if compiler is not None else None
print("RESULT " + json.dumps(info))
"""


def run_case(case, kind, mode, cache_dir, numba_dir=None, library=None):
    """One fresh process (importing straightdope from `library`, a checkout's folder, if
    given); returns its figures, or {'error': ...}."""
    env = dict(os.environ)
    # as on a user's machine, Python keeps the compiled bytecode of straightdope's modules
    # (without it every new process compiles them again: ~0.1 s of import and first call)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if library:
        env["PYTHONPATH"] = library
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        env[var] = "1"
    env["STRAIGHTDOPE_CACHE_DIR"] = cache_dir
    env.pop("STRAIGHTDOPE_DEBUG", None)
    if numba_dir:
        env["NUMBA_CACHE_DIR"] = numba_dir
    start = time.perf_counter()
    try:
        # run in the library's folder: `python -c` puts the working directory first on
        # sys.path, so a run started in another checkout would import that one
        done = subprocess.run([sys.executable, "-c", CHILD, case, kind, mode], env=env,
                              cwd=library or None, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"no result after {TIMEOUT} s"}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
            stop_compile_processes(cache_dir)
            return result
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {done.returncode} after {time.perf_counter() - start:.0f} s: "
                     f"{tail[:160]}"}


def setup_state() -> str:
    """--setup: the cache dir the setup step filled, as it left it (restored from a copy
    made the first time); its path, for a case."""
    folder, copy = os.path.join(WARM, "cache"), os.path.join(WARM, "after-setup")
    if not os.path.isdir(copy):
        shutil.copytree(folder, copy, symlinks=True)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(copy, folder, symlinks=True)
    return folder


def stop_compile_processes(cache_dir):
    """End the background compile processes a tiered case left behind (its graph cache
    is thrown away): the next case must not share the cores with them, nor find one
    writing into the cache dir it is restoring. Besides the one running during the call,
    a case's process starts one at its exit to hand over the graphs the VM ran (issue 24's
    "run it again"), after it printed its figures; so they are found by their command
    line and cache dir (Linux's /proc), not by a pid the case reported."""
    mine = f"STRAIGHTDOPE_CACHE_DIR={cache_dir}".encode()
    for _ in range(50):
        found = []
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"straightdope.compiler.tiers import _main" not in f.read():
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if mine in f.read().split(b"\0"):
                        found.append(int(entry))
            except (OSError, ValueError):
                continue
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        time.sleep(0.1)


WARM = tempfile.mkdtemp(prefix="sd-warm-kernels-")     # filled by warm_up()
SETUP = False            # --setup: WARM/cache is what the setup step leaves in it


def warm_up(mode, libraries, rows):
    """Run every case of the table once into WARM, so that Numba's caches hold every
    kernel (and kernel variant) the cases call: their compile is paid once per machine
    and is not what the table measures, except with --cold-kernels. With --setup, run
    the setup step (`python -m straightdope.warmup`) into WARM instead."""
    if SETUP and os.path.isdir(os.path.join(WARM, "after-setup")):
        return                               # --keep-setup: done by an earlier run
    for library in libraries:
        if SETUP:
            env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=os.path.join(WARM, "cache"))
            if library:
                env["PYTHONPATH"] = library
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "straightdope.warmup"], env=env,
                           cwd=library or None, capture_output=True, timeout=TIMEOUT)
            print(f"setup step ({library or 'this checkout'}): "
                  f"{time.perf_counter() - start:.0f} s wall", flush=True)
            continue
        for case, kind in rows:
            if not case.startswith("chain"):
                run_case(case, kind, mode, WARM, library=library)


def seed_kernels(folder):
    """Give a fresh graph cache the kernels' compiled code (not the generated graphs'):
    newer versions keep Numba's files of both in <cache dir>/numba, older ones keep the
    kernels' in the package's __pycache__ (then there is nothing to copy)."""
    source = os.path.join(WARM, "numba")
    for root, _, files in os.walk(source):
        target = os.path.join(folder, "numba", os.path.relpath(root, source))
        os.makedirs(target, mode=0o700, exist_ok=True)
        for name in files:
            if not name.startswith("g_"):
                shutil.copy2(os.path.join(root, name), os.path.join(target, name))


CACHED_RUNS = 3


def cached_median(case, kind, mode, folder, numba_dir, library):
    """The case again in new processes with the graph cache filled (cheap: everything
    loads), CACHED_RUNS times: the run with the median first call."""
    runs = [run_case(case, kind, mode, folder, numba_dir, library) for _ in range(CACHED_RUNS)]
    runs = [r for r in runs if "error" not in r] or runs[:1]
    for r in runs:
        if CPU and "first_call_cpu" in r:
            r["first_call"] = r["first_call_cpu"]
    return sorted(runs, key=lambda r: r.get("first_call", 0))[len(runs) // 2]


def measure(case, kind, runs, cold_kernels, cached, mode, library=None):
    """Median over `runs` fresh processes with empty graph caches, plus a cached rerun."""
    firsts, rss, last, errors, again = [], [], None, [], None
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as nb:
            numba_dir = nb if cold_kernels else None
            if SETUP:
                folder = setup_state()
            elif not cold_kernels:
                seed_kernels(folder)
            last = run_case(case, kind, mode, folder, numba_dir, library)
            if "error" in last:
                errors.append(last["error"])
                break
            firsts.append(last["first_call_cpu"] if CPU else last["first_call"])
            rss.append(last["peak_rss_mb"])
            if cached and again is None:
                again = cached_median(case, kind, mode, folder, numba_dir, library)
    if errors:
        return {"error": errors[0]}
    return {"first_call": statistics.median(firsts), "runs": len(firsts),
            "spread": (min(firsts), max(firsts)), "peak_rss_mb": max(rss),
            "cached": (again or {}).get("first_call"), "cache": last.get("cache"),
            "cached_import": (again or {}).get("import_cpu"),
            "tier": last.get("tier")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="",
                        help="cases whose name contains this (or any of a,b,c)")
    parser.add_argument("--quick", action="store_true", help="one run per case, no big cases")
    parser.add_argument("--runs", type=int, default=3, help="runs of the cheap cases")
    parser.add_argument("--cold-kernels", action="store_true",
                        help="Numba's caches empty too (a fresh machine)")
    parser.add_argument("--setup", action="store_true",
                        help="each case's cache dir as the setup step leaves it")
    parser.add_argument("--keep-setup", metavar="DIR",
                        help="with --setup: run the setup step into DIR once and keep it "
                             "(a later run with the same DIR skips it)")
    parser.add_argument("--mode", default="sync",
                        help="hybridize(compile=...) when the library has it (sync|tiered)")
    parser.add_argument("--json", help="save the figures to this file")
    parser.add_argument("--against", help="a checkout of another version (e.g. main in /tmp):"
                        " each case runs there too, right before, for a side-by-side table")
    parser.add_argument("--wall", action="store_true",
                        help="wall-clock seconds instead of the process's CPU seconds")
    args = parser.parse_args(argv)
    global CPU, SETUP, WARM
    CPU = not args.wall
    SETUP = args.setup
    if SETUP and args.keep_setup:
        os.makedirs(args.keep_setup, exist_ok=True)
        os.rmdir(WARM)                       # the empty default, not used
        WARM = os.path.abspath(args.keep_setup)
    if args.against:
        return compare(args)
    rows = [(c, k) for c, k in ROWS if any(o in f"{c} {k}" for o in args.only.split(","))]
    if args.quick:
        rows = [(c, k) for c, k in rows if c not in EXPENSIVE]
    if not args.cold_kernels:
        warm_up(args.mode, [None], rows)
    kernels = "cold (empty NUMBA_CACHE_DIR)" if args.cold_kernels else \
        "as the setup step leaves them" if SETUP else "warm"
    unit = "CPU" if CPU else "wall-clock"
    print(f"first hybridized call, {unit} s; fresh process, empty graph cache, one thread, "
          f"Numba kernel caches {kernels}, compile={args.mode}; median of up to {args.runs} "
          f"runs; 'cached': a new process with the graph cache filled")
    print(f"| case | what | first call s | runs (min-max) | cached s | import s | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    results = {}
    for case, kind in rows:
        runs = 1 if case in EXPENSIVE else args.runs
        r = measure(case, kind, runs, args.cold_kernels,
                    cached=not case.startswith("chain"), mode=args.mode)
        results[f"{case}/{kind}"] = r
        what = CASES[case] + ("" if kind == "forward" else ": training step")
        if "error" in r:
            print(f"| {case} {kind} | {what} | failed: {r['error']} | | | | |", flush=True)
            continue
        cached = f"{r['cached']:.2f}" if r.get("cached") is not None else ""
        imported = f"{r['cached_import']:.2f}" if r.get("cached_import") is not None else ""
        lo, hi = r["spread"]
        print(f"| {case} {kind} | {what} | {r['first_call']:.2f} | {r['runs']} "
              f"({lo:.2f}-{hi:.2f}) | {cached} | {imported} | {r['peak_rss_mb']:.0f} |",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kernels": kernels, "mode": args.mode, "results": results}, f, indent=1)
    if not args.keep_setup:
        shutil.rmtree(WARM, ignore_errors=True)


def compare(args):
    """Each case with the other checkout, then with this one, back to back: on a shared,
    noisy machine only figures taken at the same moment compare."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = [(c, k) for c, k in ROWS if any(o in f"{c} {k}" for o in args.only.split(","))]
    if args.quick:
        rows = [(c, k) for c, k in rows if c not in EXPENSIVE]
    kernels = "cold" if args.cold_kernels else "after the setup step" if SETUP else "warm"
    if not args.cold_kernels:
        warm_up(args.mode, [args.against, here], rows)
    unit = "CPU" if CPU else "wall-clock"
    print(f"first hybridized call, {unit} s, before ({args.against}) and now ({here}) "
          f"back to back; "
          f"fresh process, empty graph cache, one thread, Numba kernel caches {kernels}")
    print("| case | before s | now s | now / before | now: cached s | now: peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    results = {}
    for case, kind in rows:
        runs = 1 if case in EXPENSIVE else args.runs
        cached = not case.startswith("chain")
        before = measure(case, kind, runs, args.cold_kernels, False, args.mode, args.against)
        now = measure(case, kind, runs, args.cold_kernels, cached, args.mode, here)
        results[f"{case}/{kind}"] = {"before": before, "now": now}
        b = before.get("first_call")
        n = now.get("first_call")
        cells = [f"{b:.2f}" if b else before.get("error", "")[:60],
                 f"{n:.2f}" if n else now.get("error", "")[:60],
                 f"{n / b:.2f}" if b and n else "",
                 f"{now['cached']:.2f}" if now.get("cached") else "",
                 f"{now['peak_rss_mb']:.0f}" if n else ""]
        print(f"| {case} {kind} | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kernels": kernels, "results": results}, f, indent=1)
    if not args.keep_setup:
        shutil.rmtree(WARM, ignore_errors=True)


if __name__ == "__main__":
    main()
