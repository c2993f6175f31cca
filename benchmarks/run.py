"""Run W1-W4 and ResNet-18 (R18) side by side in one process and print the table
(medians, ratios).

    python -m benchmarks.run            # everything (a few minutes)
    python -m benchmarks.run --quick    # fewer rounds
    python -m benchmarks.run --only W1  # workloads whose name starts with W1

One thread everywhere: BLAS (NumPy's and SciPy's, which Numba uses) is pinned
through the environment *before* NumPy loads, and again with threadpoolctl.
Variants run interleaved, round after round, so a slow moment of the machine
hits all of them alike; the table shows the median per call over the rounds.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

FIRST_CALL = r"""
import os, sys, time, json
t0 = time.perf_counter()
import numpy as np
import straightdope as mx
from straightdope import nd
from straightdope.gluon import nn
net = nn.HybridSequential()
net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
net.initialize()
x = nd.array(np.ones((1, 512), np.float32))
net(x)
net.hybridize(static_alloc=True, static_shape=True, compile="sync")
t1 = time.perf_counter()
net(x)
t2 = time.perf_counter()
timings = dict(net._cached_op.last_plan.forward.timings)
print(json.dumps({"first_call": t2 - t1, "import_and_imperative": t1 - t0,
                  "cache": timings["cache"], "numba_compile": timings["numba_compile"]}))
"""


TEMPLATE = """## Results

Measured on the shared 2-core machine (Intel, AVX-512), numba 0.68, numpy 2.4, one thread.
Ratios are times: below 1 is faster than the reference column.

RESULTS_TABLE

### Memory

Bytes of intermediate values: "imperative" is one array per value (what `nd` allocates),
"planned" the arena of the compiled graph after liveness analysis, buffer reuse, in-place
loops, views, and values that live only in registers inside fused loops. For the training
rows, the forward graph (which returns every value the backward needs, so those are
outputs, not intermediates) plus the backward graph.

MEMORY_TABLE

### Compile time

The first hybridized call of W1 in a fresh process (`python -c ...`, after `import
straightdope` and an imperative call), with `STRAIGHTDOPE_CACHE_DIR` empty ("cold"), with
also Numba's kernel caches empty ("kernels cold too", what the very first use on a machine
pays), and again with the graph in the disk cache.

FIRST_CALL_TABLE

"""


HAND_FIRST_CALL = r"""
import time, json
t0 = time.perf_counter()
import numpy as np
from benchmarks import handwritten
f = np.float32
args = [np.ones(s, f) for s in ((1, 512), (256, 512), (256,), (128, 256), (128,), (2, 128), (2,),
                                (1, 256), (1, 128))]
t1 = time.perf_counter()
handwritten.mlp_forward(*args)
t2 = time.perf_counter()
print(json.dumps({"first_call": t2 - t0, "cache": "numba", "numba_compile": t2 - t1}))
"""


def first_call_times():
    """W1's first hybridized call in fresh processes: cold (empty graph cache), cold with
    Numba's kernel caches empty too, and from the disk cache."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=os.path.join(tmp, "graphs"))
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        run = lambda e: json.loads(subprocess.run(  # noqa: E731
            [sys.executable, "-c", FIRST_CALL], env=e, cwd=root, check=True,
            capture_output=True, text=True).stdout.strip().splitlines()[-1])
        cold_env = dict(env, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                        STRAIGHTDOPE_CACHE_DIR=os.path.join(tmp, "graphs-kernels-cold"))
        out["cold, kernels cold too"] = run(cold_env)
        out["cold"] = run(env)
        out["disk cache"] = run(env)
        hand = subprocess.run([sys.executable, "-c", HAND_FIRST_CALL], env=env, cwd=root,
                              check=True, capture_output=True, text=True)
        out["for comparison: the hand-written @njit function from Numba's cache, "
            "import included"] = json.loads(hand.stdout.strip().splitlines()[-1])
    return out


def measure(variants, rounds, target=0.05, clock=time.perf_counter):
    """Median seconds per call of each variant, interleaved rounds. `clock`:
    time.process_time counts only this process's CPU time (a busy shared machine)."""
    counts = {}
    for name, f in variants.items():
        f()
        start = clock()
        f()
        single = max(clock() - start, 1e-7)
        counts[name] = max(1, int(target / single))
    samples = {name: [] for name in variants}
    names = list(variants)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            f, n = variants[name], counts[name]
            start = clock()
            for _ in range(n):
                f()
            samples[name].append((clock() - start) / n)
    return {name: float(np.median(s)) for name, s in samples.items()}


def fmt_us(seconds):
    us = seconds * 1e6
    return f"{us:,.1f}" if us < 100 else f"{us:,.0f}"


def table(results):
    lines = ["| workload | variant | median us/call | x NumPy time | x hand-written time |",
             "|---|---|---:|---:|---:|"]
    for workload, times in results.items():
        base = times.get("numpy")
        hand = times.get("hand-written")
        for name, t in times.items():
            vs_np = f"{t / base:.2f}" if base else ""
            vs_hand = f"{t / hand:.2f}" if hand else ""
            lines.append(f"| {workload} | {name} | {fmt_us(t)} | {vs_np} | {vs_hand} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--no-first-call", action="store_true")
    parser.add_argument("--write-readme", action="store_true",
                        help="put the tables into benchmarks/README.md")
    args = parser.parse_args(argv)
    threadpool_limits(1)
    from . import resnet
    from .workloads import WORKLOADS, memory_report
    rounds = 5 if args.quick else 15
    results, memory = {}, {}
    for name, build in {**WORKLOADS, **resnet.WORKLOADS}.items():
        if not name.startswith(args.only):
            continue
        variants, nets = build()
        # ResNet's calls are long: CPU time of this process, not the shared machine's
        clock = time.process_time if name in resnet.WORKLOADS else time.perf_counter
        results[name] = measure(variants, rounds, clock=clock)
        memory[name] = memory_report(nets["hybridized"], train="train" in name)
        print(f"{name}: " + ", ".join(f"{k} {fmt_us(v)} us" for k, v in results[name].items()),
              flush=True)
    result_table = table(results)
    mem_lines = ["| workload | intermediates, imperative (bytes) | planned (bytes) | "
                 "planned / imperative |", "|---|---:|---:|---:|"]
    for name, m in memory.items():
        ratio = m["planned"] / m["imperative"] if m["imperative"] else 0.0
        mem_lines.append(f"| {name} | {m['imperative']:,} | {m['planned']:,} | {ratio:.0%} |")
    first_lines = []
    if not args.no_first_call and (not args.only or args.only.startswith("W1")):
        first_lines = ["| W1 first hybridized call (fresh process) | seconds | graph cache | "
                       "Numba compile/load s |", "|---|---:|---|---:|"]
        for kind, r in first_call_times().items():
            first_lines.append(f"| {kind} | {r['first_call']:.2f} | {r['cache']} | "
                               f"{r['numba_compile']:.2f} |")
    print()
    print(result_table)
    print()
    for name, times in results.items():
        if "imperative" in times and "hybridized" in times:
            print(f"{name}: hybridized {times['imperative'] / times['hybridized']:.2f}x "
                  f"faster than imperative")
    print()
    print("\n".join(mem_lines))
    if first_lines:
        print()
        print("\n".join(first_lines))
    if args.write_readme:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")
        text = open(path, encoding="utf-8").read()
        start = text.index("## Results")
        end = text.index("## Reading the numbers")
        template = TEMPLATE.replace("RESULTS_TABLE", result_table).replace(
            "MEMORY_TABLE", "\n".join(mem_lines)).replace(
            "FIRST_CALL_TABLE", "\n".join(first_lines) or "(not measured)")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:start] + template + text[end:])

if __name__ == "__main__":
    main()
