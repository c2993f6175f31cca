"""Compile straightdope's own kernels once per machine, ahead of time.

    python -m straightdope.warmup            # compile what is missing (about a minute, once)
    python -m straightdope.warmup --check    # exit 0 if everything is compiled, 1 if not
    python -m straightdope.warmup --only mlp # just the kernels of one network

The kernels in `kernels/` (convolution, matrix products, pooling, BatchNorm, their
gradients, ...) are compiled by Numba the first time a hybridized graph calls them, and
kept in Numba's disk cache (`cache.py`: `<STRAIGHTDOPE_CACHE_DIR>/numba/<kernel hash>/`).
On a new machine that first time costs 10-20 s inside a student's first calls. This
setup step pays it before: in `make venv`, Binder's postBuild, or by hand.

Which kernels, for which argument types, is not listed by hand: it is *derived*. We
build the networks the book and the benchmarks train (`NETWORKS`), trace each for
inference and for a training step with a backend that compiles nothing (`_Tracer`),
run the compiler's passes on every graph, and read off what the generated code would
ask Numba for:

* the steps tier: `Executable(graph, tier="steps", compile=False).job()`'s kernels and
  fused loops;
* the graph tier (small graphs, loop bodies): the kernels its `@njit` function calls.
  Numba types an integer written in that source as the constant itself (a kernel called
  with `0` and with `1` there is compiled twice), so those arguments are `Literal`s;
  and for a small network's own graphs, that whole-graph function itself;
* the optimizers' update loops, as `Trainer.step` calls them.

Neither a loop's nor a whole-graph function's source names a size (sizes are run-time
values), so networks made of the same layers at other sizes or depths load them too.

Worker processes (one per core) compile the distinct items into the cache; a manifest
next to them records what this version of straightdope needs, so that checking
(`kernels_missing()`, `--check`) costs a fraction of a second and compiles nothing.
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


# ---------------------------------------------------------------- the networks
# name -> a function returning (net, inputs, labels, loss): the networks of the book's
# chapters and of benchmarks/ (float32), at the shapes they use. Shapes matter little
# (the code takes sizes as arguments) but pick some kernels (a 3x3 convolution's
# Winograd path, pooling windows), so they are the real ones.
def _mlp():
    from ..gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(10))
    return net, [_data(32, 512)], _labels(32, 10), "softmax_ce"


def _dropout_mlp():
    from ..gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="tanh"), nn.Dropout(0.5), nn.Dense(10))
    return net, [_data(32, 784)], _labels(32, 10), "softmax_ce"


def _lenet(activation="relu"):
    from ..gluon.model_zoo import vision
    return (vision.get_model("lenet", activation=activation), [_data(64, 1, 28, 28)],
            _labels(64, 10), "softmax_ce")


def _classic_lenet():
    """LeNet with tanh and average pooling (book chapter 30)."""
    from ..gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=3, activation="tanh"), nn.AvgPool2D(2, 2),
            nn.Conv2D(16, kernel_size=3, activation="tanh"), nn.AvgPool2D(2, 2),
            nn.Dense(120, activation="tanh"), nn.Dense(10))
    return net, [_data(64, 1, 28, 28)], _labels(64, 10), "softmax_ce"


def _resblock():
    """ResNet basic blocks with BatchNorm, one with a strided shortcut (benchmarks'
    `blocks` cases, the model zoo's BasicBlockV1)."""
    from ..gluon import nn
    from ..gluon.model_zoo.vision.resnet import BasicBlockV1
    net = nn.HybridSequential()
    net.add(BasicBlockV1(16, 1, in_channels=16), BasicBlockV1(32, 2, True, in_channels=16),
            nn.GlobalAvgPool2D(), nn.Dense(10))
    return net, [_data(8, 16, 16, 16)], _labels(8, 10), "softmax_ce"


def _resnet18():
    from ..gluon.model_zoo import vision
    return (vision.get_model("resnet18_v1", classes=10), [_data(8, 3, 64, 64)],
            _labels(8, 10), "softmax_ce")


def _lstm():
    """A 2-layer LSTM (benchmarks/rnn.py) over an embedding, as the book's CharLM."""
    from .. import gluon
    from ..gluon import nn, rnn

    class CharLM(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.embed = nn.Embedding(40, 32)
                self.lstm = rnn.LSTM(64, num_layers=2, input_size=32)
                self.out = nn.Dense(40, flatten=False)

        def hybrid_forward(self, F, ids):
            return self.out(self.lstm(self.embed(ids)))
    ids = _labels(8 * 4, 40).reshape((8, 4))
    return CharLM(), [ids], _data(8, 4, 40), "l2"


def _lstm_cell():
    """An LSTMCell unrolled over a few steps (book chapter 31, benchmarks/rnn.py)."""
    from .. import gluon
    from ..gluon import rnn

    class Unrolled(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.cell = rnn.LSTMCell(32, input_size=8)

        def hybrid_forward(self, F, x):
            out, _ = self.cell.unroll(3, x, layout="TNC", merge_outputs=True)
            return out
    return Unrolled(), [_data(3, 4, 8)], _data(3, 4, 32), "l2"


NETWORKS = {"mlp": _mlp, "dropout": _dropout_mlp, "lenet": _lenet,
            "lenet_classic": _classic_lenet, "resblock": _resblock, "resnet18": _resnet18,
            "lstm": _lstm, "lstm_cell": _lstm_cell}


def _data(*shape):
    from .. import nd
    return nd.array(np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))


def _labels(n, classes):
    from .. import nd
    return nd.array(np.arange(n) % classes, dtype=np.float32)


def _loss(name):
    from ..gluon import loss
    return {"softmax_ce": loss.SoftmaxCrossEntropyLoss, "l2": loss.L2Loss}[name]()


# ------------------------------------------------- tracing without compiling anything
class _Tracer:
    """A backend that compiles nothing: it keeps every graph a CachedOp hands it (annotated
    with the call's shapes) and answers each call with zeros of the right shapes. The
    warm-up needs the graphs, not their values."""
    name = "warmup"

    def __init__(self):
        self.graphs = []               # (annotated graph, is_train)

    def compile(self, graph, is_train=False, static_alloc=False, static_shape=False):
        from ..graph import AnyShape

        def make(shaped):
            self.graphs.append((shaped, is_train))
            return _Zeros(shaped)
        return AnyShape(graph, make, static_shape)


class _Zeros:
    fresh_outputs = True

    def __init__(self, graph):
        self.graph = graph

    def run(self, inputs):
        g = self.graph
        return [np.zeros(g.shape_of(e), g.dtype_of(e)) for e in g.outputs]


class _UpdateRecorder:
    """Stands in for `kernels/update.py` during a Trainer.step: notes how each update
    loop is called instead of running it."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((("kernel", "update", name), [_like(a) for a in args]))
        return record


def _like(arg):
    """An example argument of the same Numba type, holding no data."""
    return np.empty((0,) * arg.ndim, arg.dtype) if isinstance(arg, np.ndarray) else arg


def traced(name) -> tuple:
    """(graphs, update calls) of network `name`: its inference graph, the forward and
    backward graphs of a training step (the loss hybridized too), and the optimizers'
    update loops as SGD, SGD with momentum and Adam call them."""
    from .. import autograd, gluon, init, optimizer, random
    random.seed(0)
    net, inputs, labels, loss_name = NETWORKS[name]()
    net.initialize(init.Xavier())
    loss = _loss(loss_name)
    tracer = _Tracer()
    for block in (net, loss):
        block.hybridize(executor=tracer)
    net(*inputs)                                        # inference
    updates = _UpdateRecorder()
    for opt, options in (("sgd", {}), ("sgd", {"momentum": 0.9}), ("adam", {})):
        trainer = gluon.Trainer(net.collect_params(), opt, {"learning_rate": 0.01, **options})
        with autograd.record():                         # a training step
            out = loss(net(*inputs), labels)
        out.backward()
        kernels, optimizer._update_kernels = optimizer._update_kernels, updates
        try:
            trainer.step(labels.shape[0])
        finally:
            optimizer._update_kernels = kernels
    return tracer.graphs, updates.calls


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


def _executables(graph, is_train) -> list:
    """The compiler's plans for one graph, passes only (nothing compiled): the steps
    tier always, the graph tier too when it is the one that runs; for a graph with
    loops, its compiled segments and loop bodies as `loops.LoopExecutable` makes them."""
    from unittest import mock
    from . import loops
    from .backend import Executable, NumbaBackend, choose_tier
    if not loops.needs_loops(graph):
        plans = [Executable(graph, is_train, tier="steps", compile=False)]
        if choose_tier(graph) == "graph":
            plans.append(Executable(graph, is_train, tier="graph", compile=False))
        return plans
    # LoopExecutable compiles its pieces as it makes them: here it must only plan them
    with mock.patch.object(Executable, "compile", lambda self: None):
        looped = loops.LoopExecutable(graph, NumbaBackend(), is_train)
    plans, todo = [], [looped]
    while todo:
        piece = todo.pop()
        if isinstance(piece, loops.LoopExecutable):
            todo += [getattr(s, "exe", None) or getattr(s, "body", None) for s in piece.steps]
        elif isinstance(piece, Executable):
            plans.append(piece)
    return plans


def kernel_items(plan, whole=False) -> list:
    """(("kernel", module, function), example arguments) for every kernel call of one
    plan (an `Executable` made with compile=False); for a steps-tier plan, its fused
    loops too, as (("module", source, "loop"), arguments): then a network that runs as
    steps (convolutions, large graphs: `backend.choose_tier`) loads everything it runs
    from the caches in its first call, and so does a deeper network made of the same
    layers (a loop's text names no sizes: MLP-32 calls the MLP's loops). `whole`: a
    whole-graph plan's own function too, (("module", source, "run_graph"), arguments):
    its source names no sizes either (they are `meta`), so a network of the same layers
    at other sizes (seed 002's MLP, the benchmarks' MLP-2) loads it compiled."""
    if plan.tier == "steps":
        return plan.job()
    source = plan.stages["source"]
    calls = _graph_tier_calls(source.calls, plan._inputs())
    if whole:
        calls.append((("module", source, "run_graph"), plan._examples(source)))
    return calls


def _graph_tier_calls(calls, inputs: list) -> list:
    """The kernel calls of a whole-graph function (its record's `calls`): a flag there
    is a `Literal`, and the `k_util` helpers are kernels too. (Calls inside fused loops
    are `inline="always"` maths, compiled into the loop, never on their own.)"""
    from .backend import call_examples
    return [(("kernel", call.module, call.func), call_examples(call, inputs, Literal))
            for call in calls]


# ------------------------------------------------------------------- the plan
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


def plan(only=None) -> list:
    """The distinct kernel items of the networks (all, or those named in `only`), as
    [[module, function], [described arguments]] in the order first met."""
    names = list(NETWORKS) if not only else only
    unknown = [n for n in names if n not in NETWORKS]
    if unknown:
        raise ValueError(f"unknown network(s) {unknown}: choose from {list(NETWORKS)}")
    from .loops import needs_loops
    items = {}
    for name in names:
        graphs, updates = traced(name)
        found = [item for graph, is_train in graphs for p in _executables(graph, is_train)
                 for item in kernel_items(p, whole=not needs_loops(graph))]
        for what, args in found + updates:
            name = [_KINDS[what[2]], what[1]] if what[0] == "module" else list(what[1:])
            item = [name, [describe(a) for a in args]]
            items.setdefault(json.dumps(item), item)
    from .vm import signatures
    for fn, args in signatures():           # the VM tier's own two (compiler/vm.py)
        item = [["vm", fn.__name__], [describe(a) for a in args]]
        items.setdefault(json.dumps(item), item)
    for function, args in _imperative_loss_calls():
        item = [["softmax", function], [describe(a) for a in args]]
        items.setdefault(json.dumps(item), item)
    return list(items.values())


def _imperative_loss_calls() -> list:
    """The loops an imperative SoftmaxCrossEntropyLoss calls once Numba is loaded
    (ops/reduce.py `_compiled_ce_loops`; after the setup step, hybridize() loads it):
    float32 scores, float32 or int labels, sizes as plain integers."""
    x = np.empty(0, np.float32)
    calls = []
    for label in (np.empty(0, np.float32), np.empty(0, np.int32), np.empty(0, np.int64)):
        calls.append(("sparse_softmax_ce", [x, 0, label, 0, x, 0, 0, 0, 0]))
        calls.append(("sparse_softmax_ce_grad", [x, 0, x, 0, label, 0, x, 0, 0, 0, 0]))
    return calls


def _mark_vm_ready(items):
    """Note that the VM is compiled (tiers.prepare then loads it in hybridize())."""
    from . import tiers
    if all(is_cached(item) for item in items if item[0][0] == "vm"):
        tiers.mark_ready(tiers.vm_key())


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


def needed(only=None) -> list:
    """The items to compile: the saved plan of this version, or a new one (saved)."""
    if only:
        return plan(only)
    items = _read_manifest()
    if items is None:
        items = plan()
        _write_manifest(items)
    return items


# a generated module's function -> the first word of its plan item (and back)
_KINDS = {"loop": "loop", "run_graph": "graph"}
_FUNCTIONS = {kind: function for function, kind in _KINDS.items()}


def job_item(item) -> tuple:
    """The job item (`tiers.resolve`) of a plan item: a kernel, or the source of a fused
    loop or of a whole-graph function."""
    if item[0][0] in _FUNCTIONS:
        return ("module", item[0][1], _FUNCTIONS[item[0][0]])
    return ("kernel", *item[0])


def label(item) -> str:
    if item[0][0] in _FUNCTIONS:
        return f"{item[0][0]} {cache._digest(item[0][1])[:8]}"
    return ".".join(item[0])


def is_cached(item) -> bool:
    from .tiers import resolve
    return cache.is_cached(resolve(job_item(item)), [example(a) for a in item[1]])


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
    from .tiers import resolve
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
            cache.compile_function(resolve(job_item([name, args])),
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
    from .tiers import resolve
    own = [resolve(job_item(item)) for item in items]
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


def main(argv=None) -> int:
    import argparse
    import signal
    parser = argparse.ArgumentParser(
        prog="python -m straightdope.warmup",
        description="Compile straightdope's Numba kernels for this machine, once "
                    "(a setup step: the first hybridized calls then skip 10-20 s).")
    parser.add_argument("--check", action="store_true",
                        help="compile nothing: exit 0 if everything is compiled, else 1 "
                             "and list what is missing")
    parser.add_argument("--only", default="",
                        help=f"only these networks' kernels (comma-separated: "
                             f"{','.join(NETWORKS)})")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: one per core)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker()
    start = time.perf_counter()
    problem = cache_problem()
    if problem and not args.check:
        print(f"straightdope.warmup: {problem}", file=sys.stderr)
        return 2
    only = [n for n in args.only.split(",") if n]
    try:
        items = needed(only)
    except ValueError as err:
        parser.error(str(err))
    todo = [item for item in items if not is_cached(item)]
    where = cache.folders()[1] / "numba"
    if args.check:
        if todo:
            print(f"{len(todo)} of {len(items)} kernel signatures are not compiled in "
                  f"{where}: {', '.join(sorted({label(i) for i in todo}))}. "
                  f"Run: python -m straightdope.warmup")
            return 1
        print(f"all {len(items)} kernel signatures are compiled in {where}")
        return 0
    if not todo:
        _mark_vm_ready(items)
        print(f"straightdope's kernels are already compiled for this machine: "
              f"{len(items)} kernel signatures in {where}")
        return 0

    def stop(signum, frame):          # SIGTERM: end as Ctrl-C does (workers stopped)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with it ignored
    progress = Progress(len(todo))
    try:
        results = compile_items(todo, args.jobs, progress)
    except KeyboardInterrupt:
        progress.end()
        left = sum(1 for item in todo if not is_cached(item))
        print(f"straightdope.warmup: interrupted; {len(todo) - left} of {len(todo)} kernel "
              f"signatures compiled and kept, {left} left. Run it again to finish.",
              file=sys.stderr)
        return 130
    progress.end()
    failed = {label(todo[k]): error for k, error in results.items() if error}
    seconds = time.perf_counter() - start
    if failed:
        for name, error in sorted(failed.items()):
            print(f"straightdope.warmup: {name} did not compile: {error}", file=sys.stderr)
        print(f"straightdope.warmup: {len(failed)} kernel signatures failed (a bug: please "
              f"report it); the others are compiled.", file=sys.stderr)
        return 1
    _mark_vm_ready(items)
    print(f"compiled {len(todo)} kernel signatures for this machine in {seconds:.0f} s "
          f"(into {where}); {len(items) - len(todo)} were already there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
