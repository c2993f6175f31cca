"""The four workloads, each as a set of callables that do the same work.

W1  MLP 512-256(relu)-128(relu)-2 forward, batch 1
W2  the same, batch 64
W3  LeNet (Conv 6x3x3 relu, maxpool 2, Conv 16x3x3 relu, maxpool 2, Dense 120, 84, 10)
    on (64, 1, 28, 28): forward, and a training step
W4  the MLP training step at batch 64 (softmax cross entropy, SGD)

Variants: "numpy" (numpy_ref.py), "hand-written" (handwritten.py, W1/W2/W4),
"imperative" (a gluon net, not hybridized), "hybridized" (the same net after
hybridize(static_alloc=True, static_shape=True)), and for the forward workloads
"compiled run" (only the compiled graph: Executable.run on NumPy arrays, what is
left when the Python of gluon/CachedOp around it is taken away).
"""
from __future__ import annotations

import numpy as np

import straightdope as mx
from straightdope import autograd, gluon, nd, sym
from straightdope.cached_op import CachedOp
from straightdope.gluon import nn

from . import handwritten, numpy_ref

LR = 0.05


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    return net


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, kernel_size=3, activation="relu"), nn.MaxPool2D(2),
            nn.Conv2D(16, kernel_size=3, activation="relu"), nn.MaxPool2D(2),
            nn.Dense(120, activation="relu"), nn.Dense(84, activation="relu"), nn.Dense(10))
    return net


def _net(factory, x, seed=0):
    mx.random.seed(seed)
    net = factory()
    net.initialize(mx.init.Xavier())
    net(nd.array(x))                               # deferred shapes resolved
    return net


def _copy_params(src, dst):
    for p, q in zip(src.collect_params().values(), dst.collect_params().values()):
        q.set_data(p.data().copy())


def _numpy_params(net, names):
    arrays = [p.data().asnumpy() for p in net.collect_params().values()]
    return dict(zip(names, arrays))


def _hybrid(factory, x, like, **flags):
    net = _net(factory, x)
    _copy_params(like, net)
    # compile="sync": the compiled code from the first call (timed runs must not start
    # on the reference tier of a tiered compile)
    net.hybridize(static_alloc=True, static_shape=True, compile="sync", **flags)
    net(nd.array(x))
    return net


def _compiled_run(net, x):
    """Executable.run of the net's compiled forward graph, with NumPy inputs."""
    op = net._cached_op
    ex = op.last_plan.forward
    params = {p.name: p.data()._data for p in net.collect_params().values()}
    params[op.data_names[0]] = x
    inputs = [params[n] for n in ex.graph.input_names]
    return lambda: ex.run(inputs)


# ------------------------------------------------------------------ forward
def forward_mlp(batch, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 512)).astype(np.float32)
    ref = _net(mlp, x)
    hyb = _hybrid(mlp, x, ref)
    xn = nd.array(x)
    p = _numpy_params(ref, ["w1", "b1", "w2", "b2", "w3", "b3"])
    h1 = np.empty((batch, 256), np.float32)
    h2 = np.empty((batch, 128), np.float32)
    args = (x, p["w1"], p["b1"], p["w2"], p["b2"], p["w3"], p["b3"], h1, h2)
    variants = {
        "numpy": lambda: numpy_ref.mlp_forward(x, p),
        "hand-written": lambda: handwritten.mlp_forward(*args),
        "imperative": lambda: ref(xn),
        "hybridized": lambda: hyb(xn),
        "compiled run": _compiled_run(hyb, x),
    }
    return variants, {"hybridized": hyb}


def forward_lenet(batch=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    ref = _net(lenet, x)
    hyb = _hybrid(lenet, x, ref)
    xn = nd.array(x)
    p = _numpy_params(ref, ["c1w", "c1b", "c2w", "c2b", "d1w", "d1b", "d2w", "d2b", "d3w",
                            "d3b"])
    variants = {
        "numpy": lambda: numpy_ref.lenet_forward(x, p),
        "imperative": lambda: ref(xn),
        "hybridized": lambda: hyb(xn),
        "compiled run": _compiled_run(hyb, x),
    }
    return variants, {"hybridized": hyb}


# ----------------------------------------------------------------- training
def _gluon_step(net, x, y, hybrid):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    if hybrid:
        loss_fn.hybridize(static_alloc=True, static_shape=True, compile="sync")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    batch = x.shape[0]

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        return loss
    step()                                          # compile / warm up
    return step


def _graph_step(net, x, y):
    """Net and loss traced into ONE graph, run by a CachedOp under autograd, then a plain
    in-place SGD on the NumPy arrays: the training step without gluon's Trainer and
    without a second graph for the loss (what is left of the framework around the
    compiled forward and backward graphs)."""
    data, label = sym.var("data"), sym.var("label")
    loss = -sym.pick(sym.log_softmax(net(data)), label)
    op = CachedOp(loss, ["data", "label"], static_alloc=True, static_shape=True,
                  compile="sync")       # time the compiled code, not the NumPy tier
    params = {p.name: p.data() for p in net.collect_params().values()}
    scale = LR / x.shape[0]

    def step():
        with autograd.record():
            (out,) = op([x, y], params)
        out.backward()
        for p in params.values():
            w, g = p._data, p.grad._data
            g *= scale
            w -= g
        return out
    step()
    return step


def train_mlp(batch=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 512)).astype(np.float32)
    labels = rng.integers(0, 2, batch)
    ref = _net(mlp, x)
    hyb = _hybrid(mlp, x, ref)
    imp = _net(mlp, x)
    _copy_params(ref, imp)
    xn, yn = nd.array(x), nd.array(labels.astype(np.float32))
    p = _numpy_params(ref, ["w1", "b1", "w2", "b2", "w3", "b3"])
    q = {k: v.copy() for k, v in p.items()}
    f32 = np.float32
    bufs = [np.empty(s, f32) for s in ((batch, 256), (batch, 128), (batch, 2), (batch, 128),
                                       (batch, 256), (256, 512), (128, 256), (2, 128))]
    args = (x, labels, q["w1"], q["b1"], q["w2"], q["b2"], q["w3"], q["b3"], *bufs, LR)
    variants = {
        "numpy": lambda: numpy_ref.mlp_train_step(x, labels, p, LR),
        "hand-written": lambda: handwritten.mlp_train_step(*args),
        "imperative": _gluon_step(imp, xn, yn, False),
        "hybridized": _gluon_step(hyb, xn, yn, True),
        # what most users write: the net hybridized, the loss left imperative
        "hybridized net, loss not": _gluon_step(_hybrid(mlp, x, ref), xn, yn, False),
        "one graph + plain SGD": _graph_step(_hybrid(mlp, x, ref), xn, yn),
    }
    return variants, {"hybridized": hyb}


def train_lenet(batch=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    ref = _net(lenet, x)
    hyb = _hybrid(lenet, x, ref)
    imp = _net(lenet, x)
    _copy_params(ref, imp)
    xn, yn = nd.array(x), nd.array(labels.astype(np.float32))
    p = _numpy_params(ref, ["c1w", "c1b", "c2w", "c2b", "d1w", "d1b", "d2w", "d2b", "d3w",
                            "d3b"])
    variants = {
        "numpy": lambda: numpy_ref.lenet_train_step(x, labels, p, LR),
        "imperative": _gluon_step(imp, xn, yn, False),
        "hybridized": _gluon_step(hyb, xn, yn, True),
        "one graph + plain SGD": _graph_step(_hybrid(lenet, x, ref), xn, yn),
    }
    return variants, {"hybridized": hyb}


WORKLOADS = {
    "W1 MLP fwd b=1": lambda: forward_mlp(1),
    "W2 MLP fwd b=64": lambda: forward_mlp(64),
    "W3 LeNet fwd b=64": forward_lenet,
    "W3 LeNet train b=64": train_lenet,
    "W4 MLP train b=64": train_mlp,
}


def memory_report(net, train: bool) -> dict:
    """Planned vs imperative bytes of intermediates: the forward graph, and for a training
    step the forward-with-saved-values graph plus the backward graph."""
    out = {"imperative": 0, "planned": 0}
    for plan in net._cached_op.plans.values():
        if (plan.backward is not None) != train:
            continue
        for ex in (plan.forward, plan.backward):
            if ex is not None and "memory" in getattr(ex, "stages", {}):
                out["imperative"] += ex.stages["memory"].bytes_imperative
                out["planned"] += ex.stages["memory"].bytes_planned
        break
    return out
