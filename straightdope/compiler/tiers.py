"""Tiered execution: answer the first call at once, switch to compiled code when it is ready.

A JIT in a browser or a JVM does not make the first call wait for its best code: it
runs an interpreter first and swaps in compiled code when it is done.
`hybridize(compile="tiered")` (the default) does the same:

1. the first call runs the passes (shapes, fusion, memory plan, source: a few
   milliseconds per op, and any error the compiler would raise is raised now) and
   asks: is everything Numba has to compile for the final tier already in the caches
   (a new process with a warm disk cache), or is only a few of the steps tier's loops
   missing (its kernels are compiled)? Then the compiled tier is made in the call;
2. if not, a background process (the second core) compiles the final tier's
   functions into the disk cache: the whole-graph function, or the steps tier's loops
   and kernels. The first call waits for it at most `FIRST_CALL_WAIT` seconds in all
   (`settle`: a training step's forward and backward graphs together; not at all when
   other graphs' jobs are still ahead in the queue), then
   runs on the *reference* tier, the NumPy interpreter of `graph/interpret.py` (about
   the speed of imperative code, nothing to compile);
3. the first call after the background process has finished loads the compiled code
   from the cache (milliseconds to a fraction of a second); every later call runs it.

The compiled tiers give the same numbers bit for bit; the reference tier the same up
to rounding (NumPy sums in another order). `switches` records when the tier changed,
`wait()` blocks until it has; `hybridize(compile="sync")` compiles the final tier in
the first call instead (tests and benchmarks that time compiled code use it). If the
background compile fails, the reference tier stays and `error` says why.
"""
from __future__ import annotations

import atexit
import importlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from ..graph.interpret import ReferenceExecutable
from . import cache
from .backend import PHASES, Executable


# ------------------------------------------------ what the background process compiles
# A job is a list of (what, example arguments): what is ("module", source, function
# name) for generated code or ("kernel", module, function) for a library kernel.
def describe(arg) -> list:
    """An example argument as JSON: its type is all Numba needs."""
    if isinstance(arg, np.ndarray):
        return ["array", arg.dtype.name, arg.ndim]
    if isinstance(arg, tuple):
        return ["tuple", len(arg)]
    return ["float"] if isinstance(arg, float) else ["int"]


def example(text: list):
    kind = text[0]
    if kind == "array":
        return np.empty((0,) * text[2], text[1])
    return (0,) * text[1] if kind == "tuple" else (0.0 if kind == "float" else 0)


def resolve(what) -> object:
    """The Numba function named by a job item (only our kernels and our own sources)."""
    if what[0] == "module":
        module, _ = cache.load(what[1])
        return getattr(module, what[2])
    if what[0] == "kernel" and what[1].isidentifier() and what[2].isidentifier():
        return getattr(importlib.import_module(f"{__package__}.kernels.{what[1]}"), what[2])
    raise ValueError(f"not a compile job item: {what[:1]}")


def missing(job) -> list:
    """The items of a job that are not compiled in the caches yet."""
    return [(what, args) for what, args in job if not cache.is_cached(resolve(what), args)]


def quick(final_tier, todo) -> bool:
    """Is compiling `todo` here cheaper than the detour through the reference tier?
    Yes when nothing is left, or only a few of the steps tier's loops (each a small
    function, ~0.3 s): then the kernels are compiled, and waiting for the background
    process would cost more than compiling here."""
    return not todo or (final_tier == "steps" and len(todo) <= QUICK_LOOPS
                        and all(what[0] == "module" for what, _ in todo))


# ---------------------------------------------------- the background compile process
class Ticket:
    """A job handed to the background process: `done()`, `wait()`, `error`, `seconds`."""

    def __init__(self):
        self._event = threading.Event()
        self.error, self.seconds, self._start = None, None, time.perf_counter()
        self.number = None                   # its place in the background process's queue

    def finish(self, error=None):
        self.error, self.seconds = error, time.perf_counter() - self._start
        self._event.set()

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout=None) -> bool:
        return self._event.wait(timeout)


class BackgroundCompiler:
    """One Python process (`python -m straightdope.compiler.tiers`) that compiles jobs
    one after the other into the caches; a thread here reads its answers."""

    def __init__(self):
        # the process must import this very straightdope (its source is in the cache key)
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "straightdope.compiler.tiers"], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._tickets: dict = {}            # number -> Ticket, the jobs not answered yet
        self._ids = itertools.count()
        self._lock = threading.Lock()
        # Jobs go to the process through a queue and a writer thread: the pipe holds only
        # 64 KB, and the process reads the next job after compiling the last one, so
        # writing in submit() would make a hybridized call wait for the whole backlog.
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True, name="straightdope-compiler").start()
        threading.Thread(target=self._write, daemon=True, name="straightdope-jobs").start()

    def submit(self, job) -> Ticket:
        """Queue a job; returns at once."""
        if self.process.poll() is not None:
            raise BrokenPipeError("the background compile process has ended")
        ticket = Ticket()
        items = [[list(what), [describe(a) for a in args]] for what, args in job]
        with self._lock:                     # numbers in the order the process reads them
            ticket.number = next(self._ids)
            self._tickets[ticket.number] = ticket
            self._outbox.put(json.dumps({"id": ticket.number, "items": items}) + "\n")
        return ticket

    def busy_before(self, number) -> bool:
        """Is a job submitted before job `number` still being compiled?"""
        with self._lock:
            return any(n < number for n in self._tickets)

    def _write(self):
        while True:
            line = self._outbox.get()
            try:
                self.process.stdin.write(line)
                self.process.stdin.flush()
            except (OSError, ValueError):  # it ended: _read answers the pending tickets
                return

    def _read(self):
        for line in self.process.stdout:
            answer = json.loads(line)
            with self._lock:
                ticket = self._tickets.pop(answer["id"], None)
            if ticket is not None:
                ticket.finish(answer.get("error"))
        code = self.process.wait()
        with self._lock:
            pending, self._tickets = list(self._tickets.values()), {}
        for ticket in pending:
            ticket.finish(f"the background compile process ended (exit code {code})")


_COMPILER: BackgroundCompiler | None = None
_COMPILER_LOCK = threading.Lock()
# A tiered first call waits this long (seconds) for the background compile before it
# runs on the reference tier: a small graph whose kernels are compiled is often ready by
# then (compiled code from the first call on), and a long compile never blocks.
FIRST_CALL_WAIT = 1.0
# Up to this many loop functions of the steps tier are compiled in the first call itself.
QUICK_LOOPS = 8


def start() -> BackgroundCompiler:
    """The background process, started (or restarted) if needed. CachedOp starts it
    before tracing, so that it imports Numba while this process runs the passes."""
    global _COMPILER
    with _COMPILER_LOCK:
        if _COMPILER is None or _COMPILER.process.poll() is not None:
            _COMPILER = BackgroundCompiler()
        return _COMPILER


def submit(job) -> Ticket:
    """Hand a job to the background process."""
    global _COMPILER
    for attempt in (1, 2):
        try:
            return start().submit(job)
        except (BrokenPipeError, ValueError):     # it died meanwhile: once more
            with _COMPILER_LOCK:
                _COMPILER = None
    raise OSError("cannot start the background compile process")


@atexit.register
def _stop():
    if _COMPILER is None:
        return
    if _COMPILER.process.poll() is None:
        _COMPILER.process.kill()
    for pipe in (_COMPILER.process.stdin, _COMPILER.process.stdout):
        try:
            pipe.close()
        except (OSError, ValueError):
            pass


# ------------------------------------------------------------ the tiered executable
class TieredExecutable:
    """Runs the reference tier until the background process has compiled the final tier
    (`Executable`), then that. `tier` says which runs now; `switches` lists (call
    number, tier, seconds the background compile took). One input shape, as every
    backend's executable (graph.AnyShape makes one per shape)."""

    def __init__(self, graph, is_train=False, static_alloc=False):
        self.planned = Executable(graph, is_train, static_alloc, compile=False)  # the passes
        self.final = self.planned.tier
        self.calls, self.switches, self.ticket, self.error = 0, [], None, None
        self._lock = threading.Lock()        # two threads may both see the ticket done
        todo = missing(self.planned.job())
        if quick(self.final, todo):
            self.active = self._compiled()
            return
        self.active = ReferenceExecutable(graph, is_train)
        try:
            self.ticket = submit(todo)
        except OSError:                      # no second process here: compile now
            self.active = self._compiled()

    def _compiled(self):
        """The planned executable, compiled: its passes ran once, in __init__."""
        self.planned.compile()
        return self.planned

    graph = property(lambda self: self.planned.graph)
    tier = property(lambda self: getattr(self.active, "tier", "reference"))
    fresh_outputs = property(lambda self: getattr(self.active, "fresh_outputs", False))

    @property
    def stages(self):
        """The compiler's stages (the final tier's, even before it runs)."""
        return getattr(self.active, "stages", None) if self.tier != "reference" \
            else self.planned.stages

    @property
    def timings(self):
        if self.tier != "reference":
            return self.active.timings
        t = dict(self.planned.timings)
        passes = sum(t.get(k, 0.0) for k in PHASES if k != "numba_compile")
        return {**t, "numba_compile": 0.0, "total": passes, "tier": "reference",
                "cache": "compiling" if self.pending else "off"}

    @property
    def pending(self) -> bool:
        """Is the compiled tier still being built?"""
        return self.ticket is not None

    def run(self, inputs: list) -> list:
        if self.ticket is not None and self.ticket.done():
            self._switch()
        self.calls += 1
        return self.active.run(inputs)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background compile is done (and switch); False on timeout."""
        ticket = self.ticket
        if ticket is not None and not ticket.wait(timeout):
            return False
        self._switch()
        return True

    def _switch(self):
        with self._lock:
            ticket, self.ticket = self.ticket, None
            if ticket is None:
                return
            self.error = ticket.error
            if self.error is not None:       # stay on the reference tier; say why
                warnings.warn(f"straightdope: compiling this graph in the background failed "
                              f"({self.error}); it keeps running on the NumPy reference "
                              f"tier. hybridize(compile='sync') shows the error where it "
                              f"happens.", RuntimeWarning, stacklevel=3)
                return
            self.active = self._compiled()
            self.switches.append((self.calls, self.final, ticket.seconds))


def settle(executables, seconds: float | None = None):
    """Wait up to `seconds` (default FIRST_CALL_WAIT) in all for the background compiles
    of these executables (a training step's forward and backward, submitted together)
    and switch those that are done; the others stay on the reference tier."""
    tickets = [e.ticket for e in executables if getattr(e, "ticket", None) is not None]
    if not tickets:
        return
    # Behind other graphs' compiles (many small nets hybridized one after the other) a
    # wait would only add a second to each first call: run on the reference tier at once.
    compiler, numbers = _COMPILER, [t.number for t in tickets if t.number is not None]
    if compiler is not None and numbers and compiler.busy_before(min(numbers)):
        seconds = 0.0
    deadline = time.perf_counter() + (FIRST_CALL_WAIT if seconds is None else seconds)
    for executable in executables:
        ticket = getattr(executable, "ticket", None)
        if ticket is not None and ticket.wait(max(deadline - time.perf_counter(), 0)):
            executable._switch()


def _main():
    """The background process: compile each job read from stdin, answer on stdout."""
    for line in sys.stdin:
        job = json.loads(line)
        answer = {"id": job["id"]}
        try:
            for what, args in job["items"]:
                cache.compile_function(resolve(what), [example(a) for a in args],
                                       freeze=False)
        except Exception as err:               # reported, and the process goes on
            answer["error"] = f"{type(err).__name__}: {err}"
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _main()
