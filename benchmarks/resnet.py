"""ResNet-18 v1 (classes=10) on (8, 3, 64, 64): imperative vs hybridized, forward and a
training step (softmax cross entropy, SGD), the steady-state target of issue 11
(hybridized >= 2x faster than imperative). Run by `python -m benchmarks.run` (rows
"R18 ..."), timed in CPU seconds of this process: a forward is tens of milliseconds,
long enough that a shared machine's other processes would dominate wall-clock time.
"""
from __future__ import annotations

import numpy as np

from straightdope import nd
from straightdope.gluon.model_zoo import vision

from .workloads import _copy_params, _gluon_step, _hybrid, _net

SHAPE = (8, 3, 64, 64)


def resnet18():
    return vision.get_model("resnet18_v1", classes=10)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, SHAPE).astype(np.float32)
    labels = rng.integers(0, 10, SHAPE[0]).astype(np.float32)
    return x, labels


def forward_resnet18():
    x, _ = _inputs()
    imp = _net(resnet18, x)
    hyb = _hybrid(resnet18, x, imp)
    xn = nd.array(x)
    return {"imperative": lambda: imp(xn), "hybridized": lambda: hyb(xn)}, {"hybridized": hyb}


def train_resnet18():
    x, labels = _inputs()
    imp = _net(resnet18, x)
    hyb = _hybrid(resnet18, x, imp)
    xn, yn = nd.array(x), nd.array(labels)
    variants = {"imperative": _gluon_step(imp, xn, yn, False),
                "hybridized": _gluon_step(hyb, xn, yn, True)}
    return variants, {"hybridized": hyb}


WORKLOADS = {
    "R18 ResNet-18 fwd b=8": forward_resnet18,
    "R18 ResNet-18 train b=8": train_resnet18,
}
