"""What the shared compile cache saves a student: the first hybridized call of Chapter 21's
network in a new student's first process, with and without the class's shared cache, and
on a laptop after its setup step (its own cache holding what the shared one holds).

    python classroom/first_call.py SHARED_CACHE_DIR      # filled by classroom/setup.sh

Each case runs in a fresh process with an empty cache of its own (as a new student's
server starts), compiling in the first call (STRAIGHTDOPE_COMPILE=sync) so that the call's
time is the whole cost (the library's kernels, and the network's own graph, which every
student compiles); prints both, and how many kernels were loaded from a cache or compiled.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STUDENT = r"""
import json, sys, time
start = time.perf_counter()
import straightdope as mx
from straightdope import gluon as gn, nd
imported = time.perf_counter() - start
mx.random.seed(0)
net = gn.nn.HybridSequential()
net.add(gn.nn.Dense(128, activation="relu"), gn.nn.Dense(64, activation="relu"), gn.nn.Dense(2))
net.initialize()
x = nd.random_normal(shape=(1, 512))
net(x)
net.hybridize()
start = time.perf_counter()
net(x).wait_to_read()
first = time.perf_counter() - start
# the library's kernels this call needed: loaded from a cache (hits) or compiled (misses)
from numba.core.registry import CPUDispatcher
kernels = [f for name, module in list(sys.modules.items())
           if name.startswith("straightdope.compiler.kernels.")
           for f in vars(module).values() if isinstance(f, CPUDispatcher)]
print(json.dumps({"import_s": imported, "first_call_s": first,
                  "loaded": sum(sum(f.stats.cache_hits.values()) for f in kernels),
                  "compiled": sum(sum(f.stats.cache_misses.values()) for f in kernels)}))
"""


def first_call(shared: Path | None, own_from: Path | None = None) -> dict:
    """The student's first call in a fresh process; their own cache starts empty, or as a
    copy of `own_from` (what `python -m straightdope.warmup` leaves on a laptop)."""
    with tempfile.TemporaryDirectory(prefix="straightdope-student-") as home:
        if own_from is not None:
            shutil.copytree(own_from, Path(home, "cache"))
        env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(Path(home, "cache")),
                   STRAIGHTDOPE_COMPILE="sync", PYTHONPATH=str(REPO),
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        env.pop("STRAIGHTDOPE_SHARED_CACHE_DIR", None)
        if shared is not None:
            env["STRAIGHTDOPE_SHARED_CACHE_DIR"] = str(shared)
        done = subprocess.run([sys.executable, "-c", STUDENT], env=env, cwd=home,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        return json.loads(done.stdout.splitlines()[-1])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    shared = Path(argv[0])
    for label, shared_dir, own in (("with the shared cache", shared, None),
                                   ("without", None, None),
                                   ("a laptop after setup", None, shared)):
        r = first_call(shared_dir, own)
        print(f"{label:22s}: first hybridized call {r['first_call_s']:6.1f} s "
              f"(kernels: {r['loaded']} loaded from a cache, {r['compiled']} compiled); "
              f"import {r['import_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
