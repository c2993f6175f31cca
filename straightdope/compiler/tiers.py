"""Tiered execution: run a cheap tier now, switch to the whole-graph function when ready.

A JIT in a browser or a JVM does not make the first call wait for its best code: it
runs an interpreter or a quick compile first and swaps in the optimised code when it
is done. `hybridize(compile="tiered")` does the same with the two tiers of
`backend.py`:

1. the first call compiles the *steps* tier (kernels compiled once per machine, each
   distinct loop once; about a second) and runs it;
2. meanwhile a worker process (the second core) compiles the *graph* tier, the whole
   graph as one function, and leaves it in the on-disk cache;
3. the first call after the worker has finished loads that function from the cache
   (milliseconds) and every later call runs it.

Both tiers compute the same steps with the same kernels in the same order, so their
results are the same (a test checks it bit for bit). Large graphs stay on the steps
tier: for them the whole-graph function is slow to compile and hardly faster.
`switches` records when the tier changed; `hybridize(compile="sync")` compiles the
final tier at once instead (tests and benchmarks that measure it use that).
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from .backend import Executable, choose_tier

_WORKERS: list = []          # running worker processes, ended when Python exits


class Worker:
    """A separate Python process that compiles one generated module into the disk cache."""

    def __init__(self, source: str, examples: list):
        job = {"source": source,
               "args": [[np.dtype(a.dtype).name, a.ndim] for a in examples]}
        self.started = time.perf_counter()
        # the worker must import this very straightdope (its source is in the cache key)
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "straightdope.compiler.tiers"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.process.stdin.write(json.dumps(job).encode())
        self.process.stdin.close()
        self.seconds = None
        _WORKERS.append(self.process)

    def done(self) -> bool:
        if self.seconds is None and self.process.poll() is not None:
            self.seconds = time.perf_counter() - self.started
            _WORKERS.remove(self.process)
        return self.seconds is not None

    @property
    def failed(self) -> str | None:
        """The worker's last error line, if it did not succeed."""
        if not self.done() or self.process.returncode == 0:
            return None
        lines = self.process.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self.process.returncode}"


@atexit.register
def _end_workers():
    for process in list(_WORKERS):
        process.kill()


class TieredExecutable:
    """An `Executable` that starts on the steps tier and switches to the graph tier
    once a worker has compiled it. `tier` says which one runs now; `switches` lists
    (call number, tier, seconds the worker took)."""
    fresh_outputs = True

    def __init__(self, graph, is_train=False, static_alloc=False, static_shape=False):
        self._args = (graph, is_train, static_alloc, static_shape)
        self.active = Executable(graph, is_train, static_alloc, static_shape, tier="steps")
        self.calls, self.switches, self.worker, self.error = 0, [], None, None
        self._lock = threading.Lock()        # two threads may both see the worker done
        if choose_tier(graph) == "graph":
            source, examples = self.active.graph_tier_job()
            self.worker = Worker(source, examples)

    # what callers read from an executable: the active tier's
    graph = property(lambda self: self.active.graph)
    stages = property(lambda self: self.active.stages)
    timings = property(lambda self: self.active.timings)
    tier = property(lambda self: self.active.tier)

    @property
    def pending(self) -> bool:
        """Is a better tier still being compiled?"""
        return self.worker is not None

    def run(self, inputs: list) -> list:
        if self.worker is not None and self.worker.done():
            self._switch()
        self.calls += 1
        return self.active.run(inputs)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker is done (and switch); False if it did not finish in time."""
        if self.worker is None:
            return True
        try:
            self.worker.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self.worker.done()
        self._switch()
        return True

    def _switch(self):
        with self._lock:
            worker, self.worker = self.worker, None
            if worker is None:
                return
            self.error = worker.failed
            if self.error is not None:          # stay on the steps tier; say why
                return
            self.active = Executable(*self._args, tier="graph")
            self.switches.append((self.calls, "graph", worker.seconds))


def _main():
    """The worker: read a job from stdin, compile it into the cache, exit."""
    job = json.loads(sys.stdin.read())
    from . import cache
    module, _ = cache.load(job["source"])
    examples = [np.empty((0,) * ndim, dtype) for dtype, ndim in job["args"]]
    cache.compile_function(module.run_graph, examples)


if __name__ == "__main__":
    _main()
