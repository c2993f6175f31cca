"""Compile straightdope's own kernels once per machine, ahead of time.

    python -m straightdope.warmup            # compile what is missing (about a minute, once)
    python -m straightdope.warmup --check    # exit 0 if everything is compiled, 1 if not
    python -m straightdope.warmup --only mlp # just the kernels of one network

The kernels in `compiler/kernels/` (convolution, matrix products, pooling, BatchNorm, their
gradients, ...) are compiled by Numba the first time a hybridized graph calls them, and
kept in Numba's disk cache (`compiler/cache.py`: `<STRAIGHTDOPE_CACHE_DIR>/numba/<kernel hash>/`).
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
Both are `compiler/warmup.py`'s, below gluon: the tiers ask it what is missing.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from .compiler import cache
from .compiler.warmup import (  # noqa: F401  (kernels_missing, NOT_RUN: the API)
    _KINDS, NOT_RUN, Literal, Progress, _read_manifest, _write_manifest, cache_problem,
    compile_items, describe, is_cached, kernels_missing, label)


# ---------------------------------------------------------------- the networks
# name -> a function returning (net, inputs, labels, loss): the networks of the book's
# chapters and of benchmarks/ (float32), at the shapes they use. Shapes matter little
# (the code takes sizes as arguments) but pick some kernels (a 3x3 convolution's
# Winograd path, pooling windows), so they are the real ones.
def _mlp():
    from .gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(10))
    return net, [_data(32, 512)], _labels(32, 10), "softmax_ce"


def _dropout_mlp():
    from .gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="tanh"), nn.Dropout(0.5), nn.Dense(10))
    return net, [_data(32, 784)], _labels(32, 10), "softmax_ce"


def _lenet(activation="relu"):
    from .gluon.model_zoo import vision
    return (vision.get_model("lenet", activation=activation), [_data(64, 1, 28, 28)],
            _labels(64, 10), "softmax_ce")


def _classic_lenet():
    """LeNet with tanh and average pooling (book chapter 30)."""
    from .gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=3, activation="tanh"), nn.AvgPool2D(2, 2),
            nn.Conv2D(16, kernel_size=3, activation="tanh"), nn.AvgPool2D(2, 2),
            nn.Dense(120, activation="tanh"), nn.Dense(10))
    return net, [_data(64, 1, 28, 28)], _labels(64, 10), "softmax_ce"


def _resblock():
    """ResNet basic blocks with BatchNorm, one with a strided shortcut (benchmarks'
    `blocks` cases, the model zoo's BasicBlockV1)."""
    from .gluon import nn
    from .gluon.model_zoo.vision.resnet import BasicBlockV1
    net = nn.HybridSequential()
    net.add(BasicBlockV1(16, 1, in_channels=16), BasicBlockV1(32, 2, True, in_channels=16),
            nn.GlobalAvgPool2D(), nn.Dense(10))
    return net, [_data(8, 16, 16, 16)], _labels(8, 10), "softmax_ce"


def _resnet18():
    from .gluon.model_zoo import vision
    return (vision.get_model("resnet18_v1", classes=10), [_data(8, 3, 64, 64)],
            _labels(8, 10), "softmax_ce")


def _lstm():
    """A 2-layer LSTM (benchmarks/rnn.py) over an embedding, as the book's CharLM."""
    from . import gluon
    from .gluon import nn, rnn

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
    from . import gluon
    from .gluon import rnn

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
    from . import nd
    return nd.array(np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))


def _labels(n, classes):
    from . import nd
    return nd.array(np.arange(n) % classes, dtype=np.float32)


def _loss(name):
    from .gluon import loss
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
        from .graph import AnyShape

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
    from . import autograd, gluon, init, optimizer, random
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
def _executables(graph, is_train) -> list:
    """The compiler's plans for one graph, passes only (nothing compiled): the steps
    tier always, the graph tier too when it is the one that runs; for a graph with
    loops, its compiled segments and loop bodies as `loops.LoopExecutable` makes them."""
    from unittest import mock
    from .compiler import loops
    from .compiler.backend import Executable, NumbaBackend, choose_tier
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
    from .compiler.backend import call_examples
    return [(("kernel", call.module, call.func), call_examples(call, inputs, Literal))
            for call in calls]


def plan(only=None) -> list:
    """The distinct kernel items of the networks (all, or those named in `only`), as
    [[module, function], [described arguments]] in the order first met."""
    names = list(NETWORKS) if not only else only
    unknown = [n for n in names if n not in NETWORKS]
    if unknown:
        raise ValueError(f"unknown network(s) {unknown}: choose from {list(NETWORKS)}")
    from .compiler.loops import needs_loops
    items = {}
    for name in names:
        graphs, updates = traced(name)
        found = [item for graph, is_train in graphs for p in _executables(graph, is_train)
                 for item in kernel_items(p, whole=not needs_loops(graph))]
        for what, args in found + updates:
            name = [_KINDS[what[2]], what[1]] if what[0] == "module" else list(what[1:])
            item = [name, [describe(a) for a in args]]
            items.setdefault(json.dumps(item), item)
    from .compiler.vm import signatures
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
    from .compiler import tiers
    if all(is_cached(item) for item in items if item[0][0] == "vm"):
        tiers.mark_ready(tiers.vm_key())


def needed(only=None) -> list:
    """The items to compile: the saved plan of this version, or a new one (saved)."""
    if only:
        return plan(only)
    items = _read_manifest()
    if items is None:
        items = plan()
        _write_manifest(items)
    return items


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
    args = parser.parse_args(argv)
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
