"""Tiered execution: answer from the first call, switch to compiled code when it is ready.

A JIT in a browser or a JVM does not make the first call wait for its best code: it
runs an interpreter first and swaps in compiled code when it is done.
`hybridize(compile="tiered")` (the default) does the same, in three steps:

1. **The first call never compiles.** `hybridize()` has loaded the *VM* (compiler/vm.py:
   one function compiled once per machine by the setup step, that runs any graph of
   matrix products, reductions and elementwise loops written as a program, as MXNet
   calls its precompiled kernels). The first call writes the graph's program (a few
   milliseconds) and runs it: compiled code from the first call. A graph the VM cannot
   run (a convolution, a loop) runs on the *reference* tier instead, the NumPy
   interpreter of `graph/interpret.py`; so does every graph on a new machine, where the
   VM is not compiled yet (and Numba is not even imported). A graph on the reference
   tier goes to a background process at once, unless the disk cache says some process
   compiled this very graph before (same ops, shapes, dtypes, library and Numba
   versions: `job_key`). A graph on the VM, already compiled code, waits until the VM
   has run it `LOAD_AFTER_VM_SECONDS` before either (or until `wait()`, or the exit):
   a student's first thousand calls pay for neither.
2. **A compile process** (one per Python process, on another core, at low priority)
   runs the compiler's passes and Numba on that graph, writes the machine code into the
   disk cache (`cache.py`) and marks the graph as done (`ready/<key>`); on a new machine
   it then compiles the VM for the next run. It outlives its parent: a short script
   that exits before the compile is done still leaves the compiled graph for its next
   run (the process finishes the jobs it has, within `ORPHAN_SECONDS`, then exits).
3. **A loader thread** in the parent loads the compiled code from the cache when the
   process reports it done (for a graph compiled by an earlier run: once the VM has run
   `LOAD_AFTER_VM_SECONDS`), and switches `active` to it; calls keep running on the VM
   or the reference tier meanwhile instead of waiting. At exit, the graphs the VM ran
   without deciding yet go to the compile process, for the program's next run.

The compiled tiers give the same numbers bit for bit; the VM and the reference tier the
same up to rounding (another order of sums, NumPy's maths functions). `switches` records when the tier changed,
`wait()` blocks until it has; `hybridize(compile="sync")` compiles in the first call
instead (tests and benchmarks that time compiled code use it). If the background
compile fails, the VM or the reference tier stays and a warning says why. Where no compile
process can run (no `sys.executable`, a frozen app) or the cache dir cannot be shared
with one, the loader thread compiles in this process instead.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path

from .. import config
from ..graph.interpret import ReferenceExecutable
from .ready import (describe, is_ready, job_key, mark_ready, ready_path,  # noqa: F401
                    rebuild, vm_key)

# After its parent has gone, the compile process finishes the jobs it has for at most
# this many seconds, then exits (a kernel compile on a new machine takes ~20 s).
ORPHAN_SECONDS = 300.0
# At exit, the parent waits at most this long to hand its queued jobs to the process.
HANDOVER_SECONDS = 5.0
# A graph starts on the VM when it can; once the VM has run it this long (about what
# loading costs: ski rental), its compiled code is loaded, or compiled if no run has.
LOAD_AFTER_VM_SECONDS = 0.1
SETUP_COMMAND = "python -m straightdope.warmup"


_ROOT = Path(__file__).resolve().parents[2]      # the folder that holds straightdope/


def prepare():
    """Load the VM now if it is compiled on this machine (`hybridize()` calls this).

    Importing Numba and loading the VM take a few tenths of a second, once per
    process: paid here, the first hybridized call then runs compiled code at once
    (`TieredExecutable`). Without the VM in the cache (a new machine) nothing is
    loaded, and the first calls run the reference tier without Numba; the compile
    process is started now instead (starting a process takes milliseconds, which the
    first call would pay) and waits for the first graph."""
    if config.shared_cache_dir() is not None:    # a class's cache: its VM is copied first
        from .cache import folders
        folders()
    if is_ready(vm_key()):
        from . import vm
        vm.prepare()
    elif os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0"):
        try:
            start()
        except OSError:                      # the first graph's submit says why
            pass


def _vm_loaded() -> bool:
    vm = sys.modules.get(f"{__package__}.vm")
    return vm is not None and vm.READY


# ---------------------------------------------------- the background compile process
class Ticket:
    """A job handed to the compile process: `done()`, `wait()`, `error`, `seconds`."""

    def __init__(self):
        self._event = threading.Event()
        self.error, self.seconds, self._start = None, None, time.perf_counter()
        self.here = False                    # True: the process asks us to compile here
        self._callbacks = []

    def finish(self, error=None, here=False):
        self.error, self.here = error, here
        self.seconds = time.perf_counter() - self._start
        self._event.set()
        for callback in self._callbacks:
            callback(self)

    def then(self, callback):
        """Call `callback(ticket)` when done (at once if it is)."""
        self._callbacks.append(callback)
        if self.done():
            callback(self)

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout=None) -> bool:
        return self._event.wait(timeout)


def _can_start_process() -> str | None:
    """Why no compile process can be started here, or None if one can."""
    if getattr(sys, "frozen", False):
        return "a frozen application (sys.executable is the app itself)"
    if not sys.executable or not os.access(sys.executable, os.X_OK):
        return f"no runnable Python interpreter (sys.executable={sys.executable!r})"
    return None


# The compile process imports exactly what its parent imports: Python starts isolated
# (-I: neither the current directory nor PYTHONPATH nor user site-packages on sys.path)
# and is given the parent's path, without the current directory's entry.
_BOOT = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
         "from straightdope.compiler.tiers import _main; _main(int(sys.argv[2]))")


def _spawn():
    """Start a compile process: (its Popen, the read end of its answers pipe)."""
    paths = [str(_ROOT)] + [p for p in sys.path if p and p != str(_ROOT)]
    answers_read, answers_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, json.dumps(paths), str(answers_write)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(answers_write,), text=True, start_new_session=True)
    except BaseException:
        os.close(answers_read)
        raise
    finally:
        os.close(answers_write)
    return process, answers_read


def _job_line(number: int, description: dict, key: str) -> str:
    return json.dumps({"id": number, "key": key, "graph": description}) + "\n"


class BackgroundCompiler:
    """One Python process that compiles graphs one after the other into the caches.
    Jobs go in on its stdin (written by a thread here: the pipe holds only 64 KB);
    answers come back on a pipe of their own (nothing else writes to it), read by
    another thread here."""

    def __init__(self):
        self.process, answers_read = _spawn()
        self._answers = os.fdopen(answers_read, "r")
        self._tickets: dict = {}            # number -> Ticket, the jobs not answered yet
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True, name="straightdope-compiler").start()
        self._writer = threading.Thread(target=self._write, daemon=True,
                                        name="straightdope-jobs")
        self._writer.start()

    def submit(self, description: dict, key: str) -> Ticket:
        """Queue a job; returns at once."""
        if self.process.poll() is not None:
            raise BrokenPipeError("the background compile process has ended")
        ticket = Ticket()
        with self._lock:
            number = next(self._ids)
            self._tickets[number] = ticket
        self._outbox.put(_job_line(number, description, key))
        return ticket

    def _write(self):
        while True:
            line = self._outbox.get()
            if line is None:                 # the parent is exiting: end of jobs
                break
            try:
                self.process.stdin.write(line)
                self.process.stdin.flush()
            except (OSError, ValueError):    # it ended: _read answers the pending tickets
                return
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def _read(self):
        for line in self._answers:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if "notice" in answer:
                _notice(answer["notice"])
                continue
            with self._lock:
                ticket = self._tickets.pop(answer.get("id"), None)
            if ticket is not None:
                ticket.finish(answer.get("error"), here=bool(answer.get("here")))
        code = self.process.wait()
        with self._lock:
            pending, self._tickets = list(self._tickets.values()), {}
        for ticket in pending:
            ticket.finish(f"the background compile process ended (exit code {code})",
                          here=True)

    def close(self, seconds: float):
        """Hand over the queued jobs (for at most `seconds`) and close the job pipe:
        the process finishes them on its own, then exits."""
        self._outbox.put(None)
        self._writer.join(seconds)


_NOTICED = set()


def _notice(what: str):
    """Say once per process what the compile process is doing that takes long."""
    if what in _NOTICED:
        return
    _NOTICED.add(what)
    if what == "kernels":
        print(f"straightdope: the library's kernels are not compiled for this machine yet; "
              f"the background compile compiles those this graph needs (once per machine, "
              f"up to half a minute; `{SETUP_COMMAND}` compiles them all ahead of time). "
              f"Hybridized nets run on the NumPy reference tier until then.",
              file=sys.stderr, flush=True)


_COMPILER: BackgroundCompiler | None = None
_COMPILER_LOCK = threading.Lock()


def start() -> BackgroundCompiler:
    """The compile process, started (or restarted) if needed; OSError if it cannot."""
    global _COMPILER
    with _COMPILER_LOCK:
        if _COMPILER is None or _COMPILER.process.poll() is not None:
            reason = _can_start_process()
            if reason is not None:
                raise OSError(f"no background compile process: {reason}")
            _COMPILER = BackgroundCompiler()
        return _COMPILER


def submit(description: dict, key: str) -> Ticket:
    """Hand a graph to the compile process; a ticket that asks to compile here if no
    process can be started."""
    global _COMPILER
    for attempt in (1, 2):
        try:
            return start().submit(description, key)
        except BrokenPipeError:              # it died meanwhile: once more
            with _COMPILER_LOCK:
                _COMPILER = None
        except OSError as err:               # cannot start one at all
            ticket = Ticket()
            ticket.finish(str(err), here=True)
            return ticket
    ticket = Ticket()
    ticket.finish("the background compile process keeps ending", here=True)
    return ticket


@atexit.register
def _stop():
    """At exit the compile process is left to finish what it was given (see ORPHAN_SECONDS),
    and given the graphs the VM ran without deciding yet: the next run of the program
    then finds them compiled. (No new thread here: Python 3.12 refuses them at exit.)"""
    _LOADS.put(None)
    jobs = []
    for executable in list(_UNDECIDED):
        try:
            description = describe(executable.graph, executable.is_train)
        except Exception:                    # noqa: BLE001 - exiting: the next run tries
            continue
        key = job_key(description)
        if not is_ready(key):
            jobs.append((description, key))
    alive = _COMPILER is not None and _COMPILER.process.poll() is None
    if alive:
        for description, key in jobs:
            _COMPILER.submit(description, key)
        _COMPILER.close(HANDOVER_SECONDS)
    elif jobs and _can_start_process() is None:
        try:
            process, answers = _spawn()
            os.close(answers)                # nobody waits for the answers: the cache is it
            process.stdin.write("".join(_job_line(n, d, k) for n, (d, k) in enumerate(jobs)))
            process.stdin.close()
        except (OSError, ValueError):        # exiting anyway: the next run compiles it
            pass


# ------------------------------------------------------------ the loader thread
_LOADS: queue.SimpleQueue = queue.SimpleQueue()
_LOADER: threading.Thread | None = None
# VM-run executables that have not decided yet whether to load or compile (`_decide`):
# at exit they hand their graphs to the compile process, for the program's next run.
_UNDECIDED: weakref.WeakSet = weakref.WeakSet()


def _load_switches():
    while True:
        job = _LOADS.get()
        if job is None:
            return
        executable, method = job
        try:
            getattr(executable, method)()
        except Exception as err:             # noqa: BLE001 - reported, never raised here
            # loading what the process compiled failed: stay on the VM or the reference
            # tier, no longer pending, and say why (stats(), executable.error)
            executable.error = f"{type(err).__name__}: {err}"
            executable.ticket = None


def _later(executable, method: str):
    """Have the loader thread call `executable.<method>()` (`_switch` or `_decide`)."""
    global _LOADER
    with _COMPILER_LOCK:
        if _LOADER is None or not _LOADER.is_alive():
            _LOADER = threading.Thread(target=_load_switches, daemon=True,
                                       name="straightdope-loader")
            _LOADER.start()
    _LOADS.put((executable, method))


def _load_later(executable):
    """Have the loader thread switch `executable` to its compiled code."""
    _later(executable, "_switch")


# ------------------------------------------------------------ the tiered executable
class TieredExecutable:
    """Runs the VM (or, where it cannot, the reference tier) until the graph's compiled
    code (`backend.Executable`) is in the cache, then that. `tier` says which runs now;
    `decided` whether the graph was looked up and loaded or handed to the compile process
    yet; `switches` lists (call number, tier, seconds until it was ready); `calls` counts
    the calls before the compiled code took over (then `run` is its own). One input
    shape, as every backend's executable (graph.AnyShape makes one per shape)."""

    def __init__(self, graph, is_train=False, static_alloc=False):
        self.graph, self.is_train, self.static_alloc = graph, is_train, static_alloc
        self.calls, self.switches, self.ticket, self.error = 0, [], None, None
        self._planned, self._key, self._vm_seconds_left = None, None, None
        self.decided = True                  # loaded, or handed to the compile process
        self._lock = threading.Lock()        # the loader and wait() may switch at once
        self.active = self._vm() if _vm_loaded() else None
        if self.active is not None:
            # Compiled code at once. Whether the graph's own compiled code is in the cache,
            # and compiling it if not, waits until the VM has run LOAD_AFTER_VM_SECONDS:
            # a short run pays for neither, and the first call stays a few milliseconds.
            self._vm_seconds_left, self.decided = LOAD_AFTER_VM_SECONDS, False
            _UNDECIDED.add(self)
            return
        description = describe(graph, is_train)
        self._key = job_key(description)
        if is_ready(self.key) or _compiler_loaded() and self._all_cached():
            self._use(self._compiled())      # in the caches: loading takes milliseconds
            return
        self.active = ReferenceExecutable(graph, is_train)
        self._submit(description, self.key)

    def _submit(self, description: dict, key: str):
        """Have the compile process build the graph; the loader switches when it is done."""
        self.ticket = submit(description, key)
        self.ticket.then(lambda ticket: _load_later(self) if ticket.error is None or
                         ticket.here else None)

    def _decide(self):
        """After the VM's first LOAD_AFTER_VM_SECONDS (or at wait(), or at exit): load
        the graph's compiled code if some run compiled it before, else compile it."""
        with self._lock:
            if self.decided:                 # by another thread, or wait()
                return
            description = describe(self.graph, self.is_train)
            key = self._key = job_key(description)
            ready = is_ready(key)
            if ready:
                self.ticket = Ticket()
                self.ticket.finish()
            else:
                self._submit(description, key)
            self.decided, self._vm_seconds_left = True, None
            _UNDECIDED.discard(self)
        if ready:
            _load_later(self)

    @property
    def key(self) -> str:
        """The graph's name in the cache (`job_key`): its `ready/` marker."""
        if self._key is None:
            self._key = job_key(describe(self.graph, self.is_train))
        return self._key

    def _vm(self):
        """The graph as a VM program (compiler/vm.py), or None if the VM cannot run it."""
        from . import vm
        try:
            return vm.VMExecutable(self.graph, self.is_train)
        except vm.NotForTheVM:
            return None

    @property
    def planned(self):
        """The compiled tier's executable with its passes run (stages, timings), not
        yet compiled: made when first asked for (it imports the compiler and Numba).
        None for a graph with loops (`loops.LoopExecutable` compiles as it is made)."""
        from .loops import needs_loops
        if self._planned is None and not needs_loops(self.graph):
            from .backend import Executable
            self._planned = Executable(self.graph, self.is_train, self.static_alloc,
                                       compile=False)
        return self._planned

    def _all_cached(self) -> bool:
        planned = self.planned
        return planned is not None and not planned.missing()

    def _compiled(self):
        """The compiled executable (loaded from the caches, or compiled here)."""
        if self.planned is None:
            return compiled_executable(self.graph, self.is_train, self.static_alloc)
        self.planned.compile()
        return self.planned

    @property
    def tier(self) -> str:
        if isinstance(self.active, ReferenceExecutable):
            return "reference"
        return getattr(self.active, "tier", "numba")     # a LoopExecutable: "numba"

    fresh_outputs = property(lambda self: getattr(self.active, "fresh_outputs", False))
    @property
    def stages(self):
        """The compiler's stages (the final tier's, even before it runs)."""
        planned = self.planned
        return planned.stages if planned is not None else self.active.stages

    @property
    def timings(self):
        if self.tier not in ("reference", "vm"):
            return self.active.timings
        return {"tier": self.tier, "total": 0.0, "numba_compile": 0.0,
                "cache": "compiling" if self.pending else "off"}

    @property
    def pending(self) -> bool:
        """Is the compiled tier still to come?"""
        return self.ticket is not None or not self.decided

    def run(self, inputs: list) -> list:
        """Run the tier active now: the VM (timed: once it has run LOAD_AFTER_VM_SECONDS,
        the loader thread decides what comes next, `_decide`) or the reference tier. Once
        the compiled code runs, `run` is its own (`_use`): calls skip this method."""
        if self._vm_seconds_left is None:
            ticket = self.ticket
            if ticket is not None and ticket.done() and ticket.error is not None \
                    and not ticket.here:
                self._switch()               # a failed compile: warn in the caller's thread
            self.calls += 1
            return self.active.run(inputs)
        start = time.perf_counter()
        self.calls += 1
        out = self.active.run(inputs)
        left = self._vm_seconds_left         # (None if wait() decided meanwhile)
        if left is not None:
            left -= time.perf_counter() - start
            self._vm_seconds_left = left if left > 0 else None
            if left <= 0:
                _later(self, "_decide")
        return out

    def _use(self, compiled):
        """Run the compiled executable from now on: `self.run` is its run, so that every
        later call goes to it directly (it is the last tier: nothing switches after it)."""
        self.active = compiled
        self.run = compiled.run

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the compiled code runs (or the compile failed); False on timeout."""
        if not self.decided:
            self._decide()
        ticket = self.ticket
        if ticket is not None and not ticket.wait(timeout):
            return False
        self._switch()
        return True

    def _switch(self):
        with self._lock:
            ticket = self.ticket
            if ticket is None:
                return
            if ticket.error is not None and not ticket.here:
                self.ticket, self.error = None, ticket.error
                where = "the VM" if self.tier == "vm" else "the NumPy reference tier"
                warnings.warn(f"straightdope: compiling this graph in the background failed "
                              f"({self.error}); it keeps running on {where}. hybridize(compile='sync') shows the error where it "
                              f"happens.", RuntimeWarning, stacklevel=4)
                return
            self._use(self._compiled())      # from the caches, or here if it asked us to
            self.ticket = None
            self.switches.append((self.calls, self.tier, time.perf_counter()
                                  - ticket._start))


def _compiler_loaded() -> bool:
    """Is the compiler (and Numba) imported in this process already? Then checking the
    caches costs milliseconds, and a graph found there is loaded at once."""
    return "straightdope.compiler.backend" in sys.modules


def compiled_executable(graph, is_train, static_alloc=False):
    """What `NumbaBackend` runs for this graph: an `Executable`, or a `LoopExecutable`
    for a graph with loops (compiled, or loaded from the caches)."""
    from .backend import NumbaBackend
    return NumbaBackend().for_shapes(graph, is_train, static_alloc)


def can_be_tiered(graph) -> bool:
    """Graphs worth a reference tier first: not float16 ones (`NumbaBackend` runs those
    on NumPy anyway) and nothing when Numba's JIT is off (nothing to wait for)."""
    from .dtypes import dtypes_without_arithmetic
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        return False
    return not dtypes_without_arithmetic(graph)


class TieredBackend:
    """`compile(annotated graph, ...)` -> an executable for inputs of any shape
    (`graph.AnyShape`): per input shapes a `TieredExecutable`, or what `NumbaBackend`
    makes for the graphs it treats apart."""
    name = "numba"

    def compile(self, graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False):
        from ..graph import AnyShape
        return AnyShape(graph, lambda shaped: self.for_shapes(shaped, is_train,
                                                              static_alloc), static_shape)

    def for_shapes(self, graph, is_train=False, static_alloc=False):
        if can_be_tiered(graph):
            return TieredExecutable(graph, is_train, static_alloc)
        from .backend import NumbaBackend
        return NumbaBackend().for_shapes(graph, is_train, static_alloc)


# ------------------------------------------------------------- the compile process
def _main(answers_fd: int):
    """The compile process: compile each graph read from stdin into the caches, mark it
    ready, answer on `answers_fd`. Ends when its parent closes the pipe and the jobs
    it has are done, or ORPHAN_SECONDS after that."""
    try:
        os.nice(10)                          # the student's own process comes first
    except OSError:
        pass
    answers = os.fdopen(answers_fd, "w")
    jobs: queue.SimpleQueue = queue.SimpleQueue()

    def read_jobs():                         # read all jobs at once: the pipe never fills
        for line in sys.stdin:
            jobs.put(json.loads(line))
        jobs.put(None)
        timer = threading.Timer(ORPHAN_SECONDS, os._exit, (0,))
        timer.daemon = True
        timer.start()
    threading.Thread(target=read_jobs, daemon=True).start()

    def answer(message):
        try:
            answers.write(json.dumps(message) + "\n")
            answers.flush()
        except (OSError, ValueError):        # the parent has gone: the cache is the answer
            pass

    from . import cache
    from .warmup import kernels_missing
    shared = cache.folders()[2] == "ok"
    kernels_cold = bool(kernels_missing())   # the setup step has not run on this machine
    while (job := jobs.get()) is not None:
        reply = {"id": job["id"]}
        if not shared:     # what we compile would stay in a private dir: parent does it
            reply.update(error="the cache dir cannot be shared", here=True)
            answer(reply)
            continue
        try:
            with _one_compile_per_cache(cache.folders()[1]):
                if kernels_cold:                 # a new machine: this takes a while
                    answer({"notice": "kernels"})
                    kernels_cold = False
                compiled_executable(rebuild(job["graph"]), job["graph"]["is_train"])
                mark_ready(job["key"])
        except OSError as err:
            reply["error"] = _disk_error(err)
        except Exception as err:             # reported, and the process goes on
            reply["error"] = f"{type(err).__name__}: {err}"
        answer(reply)
        if shared and "error" not in reply and not is_ready(vm_key()):
            _compile_vm()                    # for this program's next run


def _compile_vm():
    """Compile the VM into the cache (a new machine's first compile process does, after
    its first graph) and mark it ready: the next process runs it from its first call."""
    from . import cache, vm
    try:
        with _one_compile_per_cache(cache.folders()[1]):
            vm.compile_all()
            mark_ready(vm_key())
    except Exception:                        # noqa: BLE001 - only a head start for later
        pass


def _disk_error(err: OSError) -> str:
    """What a failed write into the cache dir means, and what to do about it."""
    import errno
    if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return (f"the cache dir {config.cache_dir()} is full ({err.strerror}): free some "
                f"space there, or set STRAIGHTDOPE_CACHE_DIR to a folder on another disk")
    return f"{type(err).__name__}: {err}"


def _one_compile_per_cache(folder: Path):
    """Compile processes of several programs (two notebooks, a script run twice) take
    turns on one cache dir: the second then finds the kernels the first compiled,
    instead of compiling them too on the same cores."""
    from ..serialization import exclusive_lock
    return exclusive_lock(folder / "compile.lock")
