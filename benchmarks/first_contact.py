"""First contact (issue 24): what a student sees right after `hybridize()`.

    python -m benchmarks.first_contact                  # both parts (~10 minutes)
    python -m benchmarks.first_contact --part tiers     # per tier, side by side
    python -m benchmarks.first_contact --part student   # seed 002 in fresh processes
    python -m benchmarks.first_contact --runs 1         # one run per scenario

Part "tiers": every workload of `benchmarks.run` (W1-W4, R18) and W5 (benchmarks/rnn.py),
in one process, interleaved rounds, median per call: the same net imperatively, on the
*reference tier* (the NumPy interpreter a tiered hybridize runs on a new machine until the
compiled code is ready: `hybridize(executor="numpy")` runs exactly it), on the *VM tier*
(precompiled kernels, what it runs after the setup step: `executor="vm"`; graphs the VM
cannot run fall back to the reference tier there too) and compiled. Training rows: the
net on that tier, the loss imperative (what most students write).

Part "student": seed 002's benchmark as a student types it (np arrays, the MLP
512-256-128-2 at batch 1, the default compile mode): 1,000 calls imperatively, then
`hybridize()` and 1,000 calls, each call timed, in a fresh process, in three states of
the caches: a new machine (nothing compiled), after the setup step
(`python -m straightdope.warmup` compiled the kernels; the graph cache empty), and the
same program run again (its graph compiled by the first run's background process,
which outlived it). Figures: the first call, the longest call, the sum of the first
1,000 hybridized calls (first call included) over the imperative sum, the same for the
seed's own `benchmark()` (first call not timed, the next 999), and the tier at the end.
One thread everywhere (set before NumPy loads).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

STUDENT = r"""
import json, sys, time
from straightdope import np, npx
from straightdope.gluon import nn
npx.set_np()

def timed(net, x, n=1000):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        net(x)
        times.append(time.perf_counter() - start)
    return times

x = np.random.normal(size=(1, 512))
net = nn.HybridSequential()
net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
net.initialize()
net(x)
imperative = timed(net, x)
start = time.perf_counter()
net.hybridize()
hybridize_seconds = time.perf_counter() - start
hybridized = timed(net, x)
stats = net._cached_op.stats()["forward"]
print("RESULT " + json.dumps({"hybridize": hybridize_seconds,
    "imperative": sum(imperative), "imperative_999": sum(imperative[1:]),
    "hybridized": sum(hybridized), "hybridized_999": sum(hybridized[1:]),
    "first_call": hybridized[0], "longest_later": max(hybridized[1:]),
    "median_imperative": sorted(imperative)[500], "median_hybridized": sorted(hybridized)[500],
    "tier": stats["tier"], "switches": len(stats["switches"])}))
"""


def run_student(cache_dir) -> dict:
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    for var in ("STRAIGHTDOPE_COMPILE", "STRAIGHTDOPE_EXECUTOR", "STRAIGHTDOPE_DEBUG"):
        env.pop(var, None)                   # the defaults, as a student has them
    done = subprocess.run([sys.executable, "-c", STUDENT], env=env, cwd=tempfile.gettempdir(),
                          capture_output=True, text=True, timeout=900)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"the student program failed: {done.stderr[-2000:]}")


def wait_for_background(cache_dir, seconds=600):
    """Wait until no compile process the student program left behind works on
    `cache_dir` any more (it finishes the program's graph, then exits; after the setup
    step a program that ran the VM starts it only as it exits, so its pid is nowhere
    to be read): the next scenario must not share the machine with it."""
    marker = f"STRAIGHTDOPE_CACHE_DIR={cache_dir}".encode() + b"\0"
    deadline = time.monotonic() + seconds

    def compiling():
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                if marker in environ.read_bytes():
                    stat = (environ.parent / "stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                        return True
            except OSError:
                continue
        return False
    while compiling() and time.monotonic() < deadline:
        time.sleep(0.2)


def set_up(cache_dir):
    """The README's setup step, into `cache_dir` (its kernels only)."""
    env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "straightdope.warmup"], env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"the setup step failed: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def scenario_rows(runs):
    rows = {"new machine, no setup": [], "after setup, empty graph cache": [],
            "run again (graph compiled by the first run)": []}
    setup_seconds = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as new, tempfile.TemporaryDirectory() as ready:
            rows["new machine, no setup"].append(run_student(Path(new) / "cache"))
            wait_for_background(Path(new) / "cache")
            setup_seconds.append(set_up(Path(ready) / "cache"))
            rows["after setup, empty graph cache"].append(run_student(Path(ready) / "cache"))
            wait_for_background(Path(ready) / "cache")
            rows["run again (graph compiled by the first run)"].append(
                run_student(Path(ready) / "cache"))
            wait_for_background(Path(ready) / "cache")
    print(f"setup step (python -m straightdope.warmup, empty caches): "
          f"{statistics.median(setup_seconds):.1f} s (median of {runs})")
    print("\nseed 002's benchmark in a fresh process, default compile mode; medians of "
          f"{runs} runs; ratios are hybridized / imperative time")
    print("| caches | hybridize() ms | first call ms | longest later call ms | first 1,000 "
          "calls, first included | seed's benchmark (999 after the first) | median call | "
          "tier at the end |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, results in rows.items():
        def med(f):
            return statistics.median(f(r) for r in results)
        tiers = "/".join(sorted({r["tier"] for r in results}))
        print(f"| {name} | {med(lambda r: r['hybridize']) * 1e3:.0f} | "
              f"{med(lambda r: r['first_call']) * 1e3:.1f} | "
              f"{med(lambda r: r['longest_later']) * 1e3:.1f} | "
              f"{med(lambda r: r['hybridized'] / r['imperative']):.2f} | "
              f"{med(lambda r: r['hybridized_999'] / r['imperative_999']):.2f} | "
              f"{med(lambda r: r['median_hybridized'] / r['median_imperative']):.2f} | "
              f"{tiers} |", flush=True)
    return rows


# ------------------------------------------------------------------- per tier
def tier_variants():
    """workload -> {imperative, reference tier, compiled} callables."""
    import numpy as np

    from straightdope import nd
    from . import resnet, rnn, workloads as w

    def forward(factory, shape):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        imp = w._net(factory, x)
        ref = w._hybrid(factory, x, imp, executor="numpy")
        hyb = w._hybrid(factory, x, imp)
        xn = nd.array(x)
        vm = w._hybrid(factory, x, imp, executor="vm")
        return {"imperative": lambda: imp(xn), "reference tier": lambda: ref(xn),
                "vm tier": lambda: vm(xn), "compiled": lambda: hyb(xn)}

    def train(factory, shape, classes):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32)
        y = nd.array(rng.integers(0, classes, shape[0]).astype(np.float32))
        imp = w._net(factory, x)
        xn = nd.array(x)
        return {"imperative": w._gluon_step(imp, xn, y, False),
                "reference tier": w._gluon_step(
                    w._hybrid(factory, x, imp, executor="numpy"), xn, y, False),
                "vm tier": w._gluon_step(
                    w._hybrid(factory, x, imp, executor="vm"), xn, y, False),
                "compiled": w._gluon_step(w._hybrid(factory, x, imp), xn, y, False)}

    def lstm():
        layers = {}
        for name, flags in (("imperative", None), ("reference tier", {"executor": "numpy"}),
                            ("vm tier", {"executor": "vm"}), ("compiled", {"compile": "sync"})):
            layer, _, x, target = rnn.build()
            if flags:
                layer.hybridize(**flags)
            layers[name] = layer
        return ({k: (lambda net=v: net(x).wait_to_read()) for k, v in layers.items()},
                {k: rnn.train_step(v, x, target) for k, v in layers.items()})

    lstm_forward, lstm_train = lstm()
    return {
        "W1 MLP fwd b=1": forward(w.mlp, (1, 512)),
        "W2 MLP fwd b=64": forward(w.mlp, (64, 512)),
        "W3 LeNet fwd b=64": forward(w.lenet, (64, 1, 28, 28)),
        "W3 LeNet train b=64": train(w.lenet, (64, 1, 28, 28), 10),
        "W4 MLP train b=64": train(w.mlp, (64, 512), 2),
        "R18 ResNet-18 fwd b=8": forward(resnet.resnet18, resnet.SHAPE),
        "R18 ResNet-18 train b=8": train(resnet.resnet18, resnet.SHAPE, 10),
        "W5 LSTM fwd": lstm_forward,
        "W5 LSTM train": lstm_train,
    }


def tier_rows(rounds):
    from threadpoolctl import threadpool_info, threadpool_limits

    from .run import measure
    with threadpool_limits(1):
        print("\nper tier, one process, interleaved rounds, median per call; ratios are "
              "times over the imperative time")
        print("| workload | imperative us | reference tier us | vm tier us | compiled us | "
              "reference / imperative | vm / imperative | compiled / imperative |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        results = {}
        for name, variants in tier_variants().items():
            clock = time.process_time if name.startswith(("R18", "W5")) else time.perf_counter
            t = measure(variants, rounds, clock=clock)
            results[name] = t
            imp = t["imperative"]
            print(f"| {name} | {imp * 1e6:,.0f} | {t['reference tier'] * 1e6:,.0f} | "
                  f"{t['vm tier'] * 1e6:,.0f} | {t['compiled'] * 1e6:,.0f} | "
                  f"{t['reference tier'] / imp:.2f} | {t['vm tier'] / imp:.2f} | "
                  f"{t['compiled'] / imp:.2f} |", flush=True)
        kernels = {i.get("architecture") for i in threadpool_info() if i.get("architecture")}
        print(f"OpenBLAS kernels: {', '.join(sorted(kernels))}; OPENBLAS_CORETYPE="
              f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("tiers", "student", "all"), default="all")
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per scenario")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per tier")
    args = parser.parse_args(argv)
    if args.part in ("student", "all"):
        scenario_rows(args.runs)
    if args.part in ("tiers", "all"):
        tier_rows(args.rounds)


if __name__ == "__main__":
    main()
