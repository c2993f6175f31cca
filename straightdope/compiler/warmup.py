"""The kernels the setup step compiles (`python -m straightdope.warmup`, whose module
says how they are derived from the networks it traces): their plan saved in a manifest,
what is missing (`kernels_missing()`, read by tiers.py and the book), and the worker
processes that compile them into the cache.

Below gluon on purpose: the tier machinery asks what is missing; tracing the networks
(which needs gluon) is `straightdope/warmup.py`'s.
"""
from __future__ import annotations

import hashlib
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import cache


# ------------------------------------------------------ the kernels a graph calls
class Literal(int):
    """An integer written as a constant in a whole-graph function's source. Numba types
    it as that very constant (`Literal[int](1)`, not int64) when it compiles the kernel
    the function calls, so the kernel's cache entry is for that type."""


def _register_literal():
    from numba import types
    from numba.extending import typeof_impl

    @typeof_impl.register(Literal)
    def _typeof_literal(value, context):
        return types.literal(int(value))


_register_literal()


# ------------------------------------------------------------ example arguments
def describe(arg) -> list:
    """An example argument as JSON: its type is all Numba needs."""
    if isinstance(arg, Literal):
        return ["literal", int(arg)]
    if isinstance(arg, np.ndarray):
        return ["array", arg.dtype.name, arg.ndim]
    if isinstance(arg, tuple):
        return ["tuple", len(arg)]
    return ["float"] if isinstance(arg, float) else ["int"]


def example(text: list):
    """An argument of the type `describe` wrote."""
    kind = text[0]
    if kind == "literal":
        return Literal(text[1])
    if kind == "array":
        return np.empty((0,) * text[2], text[1])
    return (0,) * text[1] if kind == "tuple" else (0.0 if kind == "float" else 0)


# ------------------------------------------------------- the manifest: the plan, saved
def _source_hash() -> str:
    """Hash of straightdope's source: which kernels the networks call depends on the
    layers, the passes and the code generator, so a new version derives its plan again."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def manifest_path() -> Path:
    """Where the plan of this version is kept: next to the kernels' Numba cache files
    (`<cache dir>/numba/<kernel hash>/`), so it goes when they go."""
    folder = cache.folders()[1] / "numba" / cache._kernel_hash()[:16]
    return folder / f"warmup-{_source_hash()[:16]}.json"


def _read_manifest():
    try:
        return json.loads(manifest_path().read_text())["items"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_manifest(items):
    from ..serialization import atomic_write
    path = manifest_path()
    data = json.dumps({"items": items}, indent=0).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, lambda f: f.write(data))
    except OSError:
        pass                 # only a shortcut: without it the plan is derived again


# a generated module's function -> the first word of its plan item (and back)
_KINDS = {"loop": "loop", "run_graph": "graph"}
_FUNCTIONS = {kind: function for function, kind in _KINDS.items()}


def job_item(item) -> tuple:
    """The job item (`cache.resolve`) of a plan item: a kernel, or the source of a fused
    loop or of a whole-graph function."""
    if item[0][0] in _FUNCTIONS:
        return ("module", item[0][1], _FUNCTIONS[item[0][0]])
    return ("kernel", *item[0])


def label(item) -> str:
    if item[0][0] in _FUNCTIONS:
        return f"{item[0][0]} {cache._digest(item[0][1])[:8]}"
    return ".".join(item[0])


def is_cached(item) -> bool:
    return cache.is_cached(cache.resolve(job_item(item)), [example(a) for a in item[1]])


NOT_RUN = "all (python -m straightdope.warmup has not run for this version of straightdope)"


def kernels_missing() -> list:
    """The kernels not compiled on this machine yet, by name ([] when the setup ran); a
    single NOT_RUN entry when it never ran for this version. Compiles nothing and derives
    nothing: it reads the saved plan and Numba's cache indexes (a fraction of a second)."""
    items = _read_manifest()
    if items is None:
        return [NOT_RUN]
    return sorted({label(item) for item in items if not is_cached(item)})


# ------------------------------------------------------------ the worker processes
def _worker():
    """A compile worker (`python -m straightdope.compiler.warmup --worker`): reads items
    as JSON lines on stdin, compiles each into the cache and answers one line per item:
    [number, seconds, error or null]. It ends when stdin closes or its parent dies."""
    import signal
    import threading
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C reaches us too: the parent decides
    parent = os.getppid()

    def orphaned():                  # the parent was killed (kill -9): stop at once
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)
    threading.Thread(target=orphaned, daemon=True).start()
    for line in sys.stdin:
        number, name, args = json.loads(line)
        start, error = time.perf_counter(), None
        try:
            cache.compile_function(cache.resolve(job_item([name, args])),
                                   [example(a) for a in args], freeze=False)
        except Exception as err:                    # reported by the parent
            error = f"{type(err).__name__}: {err}"
        print(json.dumps([number, time.perf_counter() - start, error]), flush=True)


def _callees(func) -> list:
    """The kernels `func` calls (by name, or as module.function)."""
    from numba.core.registry import CPUDispatcher
    names, scope, found = func.py_func.__code__.co_names, func.py_func.__globals__, []
    for value in [scope.get(n) for n in names]:
        if isinstance(value, type(sys)):
            found += [getattr(value, n, None) for n in names]
        else:
            found.append(value)
    return [f for f in found if isinstance(f, CPUDispatcher)]


def _reach(func, stop=frozenset()) -> set:
    """`func` and every kernel it calls, directly or not (not looking inside `stop`)."""
    seen, todo = set(), [func]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            if f is func or f not in stop:
                todo += _callees(f)
    return seen


class Batch(NamedTuple):
    items: list       # item numbers, compiled one after the other by one worker
    needs: set        # items of other batches it calls: compiled (or failed) before it starts


def batches(items) -> list:
    """The items in `Batch`es, each compiled by one worker, costliest first (its cost:
    the bytecode Numba compiles for it), so that no long compile starts last.

    * Items that share code which is not an item of its own (the convolutions call the
      same im2col and Winograd kernels, which Numba compiles into each) go together
      (code inlined into its callers does not count: it is compiled into each anyway),
      so that the shared code is compiled once; so do the signatures of one function,
      so that no two workers write one function's cache entries at once.
    * An item that calls other items (a whole-graph function, the VM) *needs* them:
      compiled first, they are loaded from the cache when it compiles, not compiled
      again inside it. Without this, one worker would compile nearly everything."""
    own = [cache.resolve(job_item(item)) for item in items]
    planned = set(own)
    reach = [_reach(f, stop=planned) for f in own]
    group = list(range(len(items)))           # union-find over the items

    def find(k):
        while group[k] != k:
            k = group[k]
        return k
    inlined = {f for r in reach for f in r if f.targetoptions.get("inline") == "always"}
    for a in range(len(items)):          # (inlined code is compiled into each caller anyway)
        for b in range(a):
            if own[a] is own[b] or (reach[a] & reach[b]) - planned - inlined:
                group[find(a)] = find(b)
    together = {}
    for k in range(len(items)):
        together.setdefault(find(k), []).append(k)
    by_function = {}
    for k, f in enumerate(own):
        by_function.setdefault(f, set()).add(k)

    def needs(batch):
        called = {j for k in batch for f in reach[k] - {own[k]} for j in by_function.get(f, ())}
        return called - set(batch)

    def cost(batch):
        return sum(len(f.py_func.__code__.co_code)
                   for f in {own[k] for k in batch} | {f for k in batch for f in reach[k] - planned})
    return [Batch(b, needs(b)) for b in sorted(together.values(), key=cost, reverse=True)]


def _next_batch(order: list, finished, anyone_busy: bool):
    """The first batch of `order` whose needs are finished (taken out of `order`); if
    none is and no worker is busy, the first anyway (it compiles what it calls)."""
    for n, batch in enumerate(order):
        if batch.needs <= finished.keys():
            return order.pop(n)
    return None if anyone_busy else order.pop(0)


class _Worker:
    def __init__(self):
        # the worker must import this very straightdope (the cache is keyed by its source)
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "straightdope.compiler.warmup", "--worker"], env=env,
            text=True, bufsize=1, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.item = None                  # (number, start time) of the item it compiles
        self.batch = []                   # the numbers of the items it compiles next

    def send(self, number, item):
        self.item = (number, time.perf_counter())
        self.process.stdin.write(json.dumps([number, *item]) + "\n")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()           # its cache writes are safe: numba_internals._save_in_turn
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def compile_items(items, jobs, progress) -> dict:
    """Compile `items` in up to `jobs` worker processes, a batch (`batches`) at a time
    per worker; returns {item number: error or None}. The workers are stopped however
    this ends (done, an error, Ctrl-C)."""
    order = batches(items)
    workers = [_Worker() for _ in range(max(1, min(jobs, len(order))))]
    results, selector = {}, selectors.DefaultSelector()
    for w in workers:
        selector.register(w.process.stdout, selectors.EVENT_READ, w)
    try:
        while len(results) < len(items):
            for w in workers:
                if w.item is None and w.process.poll() is None:
                    if not w.batch and order:
                        busy = any(v.item is not None for v in workers)
                        batch = _next_batch(order, results, busy)
                        w.batch = list(batch.items) if batch else []
                    if w.batch:
                        k = w.batch.pop(0)
                        w.send(k, items[k])
            busy = [w for w in workers if w.item is not None]
            if not busy:                       # every worker died: nothing more will finish
                for k in range(len(items)):
                    results.setdefault(k, "no compile worker left")
                break
            for key, _ in selector.select(timeout=0.25):
                w = key.data
                line = w.process.stdout.readline()
                if not line:                   # it died (a crash in Numba or LLVM)
                    selector.unregister(w.process.stdout)
                    results[w.item[0]] = f"the worker ended (exit code {w.process.wait()})"
                    if w.batch:                # another worker compiles the rest
                        order.append(Batch(w.batch, set()))
                    w.batch = []
                else:
                    _, _, results[w.item[0]] = json.loads(line)
                w.item = None
            busy = [w for w in workers if w.item is not None]
            oldest = min(busy, key=lambda w: w.item[1]) if busy else None
            progress.show(len(results), label(items[oldest.item[0]]) if oldest else "")
    finally:
        for w in workers:
            w.stop()
    return results


# ----------------------------------------------------------------- the progress bar
class Progress:
    """`compiling straightdope's kernels for this machine [####....] 23/41  conv.conv2d  18 s`
    on stderr: redrawn in place on a terminal, else a plain line now and then."""
    WIDTH, EVERY = 24, 15.0           # bar characters; seconds between plain lines

    def __init__(self, total, stream=None):
        self.total, self.stream = total, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = self.last = time.perf_counter()
        self.shown = -1

    def show(self, done, what=""):
        now = time.perf_counter()
        if not self.tty and done < self.total and (now - self.last < self.EVERY
                                                    and done // 10 == self.shown // 10):
            return                    # plain lines: every 10 kernels or EVERY seconds
        self.last, self.shown = now, done
        filled = self.WIDTH * done // max(self.total, 1)
        line = (f"compiling straightdope's kernels for this machine "
                f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total}  "
                f"{what}  {now - self.start:.0f} s")
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ---------------------------------------------------------------------- the command
def cache_problem():
    """Why the kernels cannot be stored, with what to do; None when they can. (The cache
    dir must be writable, and private: `cache.folders()` and `cache.untrusted_reason`.)"""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # said once already, at import, or below
        state = cache.folders()[2]
    if state == "ok":
        return None
    where = cache.cache_dir()
    if state == "read-only":
        why, fix = "it is read-only", f"make it writable (chmod u+w {where})"
    else:
        why, fix = "it cannot be used", f"make it yours and private (chmod 700 {where})"
        for path in (where, where / "numba"):
            try:
                why = cache.untrusted_reason(path) or why
            except OSError as err:
                why = f"{err.strerror or err}: {err.filename or path}"
            if why != "it cannot be used":
                break
    return (f"cannot store the compiled kernels in straightdope's cache "
            f"STRAIGHTDOPE_CACHE_DIR={where}: {why}. To fix it, {fix}, or set "
            f"STRAIGHTDOPE_CACHE_DIR to a directory of yours that only you can write "
            f"(created if missing).")


if __name__ == "__main__":                   # a compile worker (`_Worker` starts it)
    if sys.argv[1:] != ["--worker"]:
        sys.exit("usage: python -m straightdope.warmup (this module runs its workers)")
    sys.exit(_worker())
