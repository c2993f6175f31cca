"""Reliability and security (issue 13): threads, the compile cache's trust model,
untrusted model files, limits, and the edges where imperative and hybridized meet.
docs/security.md explains the rules these tests hold the library to."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from straightdope import nd
from straightdope.gluon import nn


def run_in_threads(work, n=4):
    """Start n threads on work(i) together; return the exceptions they raised."""
    errors, start = [], threading.Barrier(n)

    def body(i):
        start.wait()
        try:
            work(i)
        except Exception as err:          # noqa: BLE001 - reported by the test
            errors.append(err)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


# ----------------------------------------------------------------- threads (3, 4)
def test_static_alloc_gives_every_thread_its_own_arena_and_correct_results():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu", in_units=512), nn.Dense(10, in_units=256))
    net.initialize()
    net.hybridize(static_alloc=True)
    rng = np.random.default_rng(0)
    xs = [nd.array(rng.random((256, 512), dtype=np.float32)) for _ in range(4)]
    refs = [net(x).asnumpy() for x in xs]
    wrong = []

    def work(i):
        for _ in range(30):
            if not np.array_equal(net(xs[i]).asnumpy(), refs[i]):
                wrong.append(i)
    assert run_in_threads(work) == []
    assert wrong == [], f"{len(wrong)} of 120 calls from 4 threads gave wrong results"


def test_threads_making_the_first_call_together_compile_once_and_all_succeed():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, 3, activation="relu", in_channels=1), nn.MaxPool2D(2),
            nn.Dense(7, in_units=3 * 5 * 5))
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.default_rng(1).random((2, 1, 12, 12), dtype=np.float32))
    results = [None] * 4

    def work(i):
        for _ in range(3):
            results[i] = net(x).asnumpy()
    assert run_in_threads(work) == []
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    op = net._cached_op
    assert op.compiles == 1


def test_threads_recording_autograd_on_a_new_net_each_get_their_gradients():
    from straightdope import autograd
    net = nn.HybridSequential()
    net.add(nn.Dense(5, activation="tanh", in_units=4), nn.Dense(2, in_units=5))
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.default_rng(2).random((3, 4), dtype=np.float32))
    outs = [None] * 2

    def work(i):
        with autograd.record():
            y = net(x)
        outs[i] = y.asnumpy()
    assert run_in_threads(work, n=2) == []
    np.testing.assert_array_equal(outs[0], outs[1])
