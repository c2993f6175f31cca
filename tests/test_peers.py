"""benchmarks/peers.py: the torch/jax comparison cannot rot while torch and jax are absent.

torch and jax are not dependencies, so CI runs the "missing" path, the correctness check
that guards every timing (with NumPy standing in for a peer), the count of the matrix
products, and the run of one workload with fake peers (no timing is asserted). Where
torch or jax are installed (a scratch venv), the slow tests check their peers too.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks import numpy_ref, peers  # noqa: E402

MLP = ["w1", "b1", "w2", "b2", "w3", "b3"]


@pytest.fixture(scope="module")
def w1():
    return peers._case("W1 MLP fwd b=1")


def test_missing_peers_are_named_with_how_to_install_them(monkeypatch, capsys):
    monkeypatch.setattr(peers, "PEER_MODULES", {"torch": "no_such_module_torch",
                                                "jax": "no_such_module_jax"})
    assert peers.main([]) == {}                    # nothing built, nothing timed
    out = capsys.readouterr().out
    assert "not installed: torch, jax" in out
    assert "python3.11 -m venv" in out and 'pip install "jax[cpu]"' in out
    assert "pip install torch --index-url" in out


def test_no_report_when_every_peer_is_there():
    assert peers.missing_report({"torch": object(), "jax": object()}) == ""


def test_a_numpy_peer_passes_the_check_and_a_wrong_one_fails_naming_it(w1):
    weights = dict(zip(MLP, w1.weights))
    peers.check(w1, "numpy", numpy_ref.mlp_forward(w1.x, weights))
    with pytest.raises(AssertionError, match="W1 MLP fwd b=1: numpy's output differs"):
        peers.check(w1, "numpy", numpy_ref.mlp_forward(w1.x, weights) * 1.01)
    with pytest.raises(AssertionError, match=r"shape \(2,\)"):
        peers.check(w1, "numpy", numpy_ref.mlp_forward(w1.x, weights)[0])


def test_the_products_of_the_mlp_are_its_three_layers(w1):
    assert w1.products == [(1, 256, 512, 0, 1, 1), (1, 128, 256, 0, 1, 1),
                           (1, 2, 128, 0, 1, 1)]
    assert peers.flops(w1.products) == 2 * (512 * 256 + 256 * 128 + 128 * 2)


def test_a_workload_runs_its_peers_after_checking_them_and_skips_broken_ones(w1):
    weights = dict(zip(MLP, w1.weights))

    def numpy_peer():
        call = lambda: numpy_ref.mlp_forward(w1.x, weights)     # noqa: E731
        return call, call()

    def broken():
        raise RuntimeError("no C++ compiler\nsecond line")
    times, threads, skipped = peers.run_workload(
        w1, {"numpy": numpy_peer, "broken": broken}, rounds=1)
    assert set(times) == set(threads) == {"hybridized", peers.OURS_COMPILED, "numpy"}
    assert all(t > 0 for t in times.values())
    assert skipped == {"broken": "RuntimeError: no C++ compiler"}

    def wrong():
        call = lambda: numpy_ref.mlp_forward(w1.x, weights) + 1    # noqa: E731
        return call, call()
    with pytest.raises(AssertionError, match="wrong's output"):
        peers.run_workload(w1, {"wrong": wrong}, rounds=1)


@pytest.mark.slow
def test_a_training_peer_is_checked_on_every_parameter_update():
    case = peers._case("W4 MLP train b=64")
    # our products: 3 forward, 3 weight gradients, 2 data gradients (not the input's)
    assert len(case.products) == 8
    p = dict(zip(MLP, [w.copy() for w in case.weights]))
    numpy_ref.mlp_train_step(case.x, case.y, p, case.lr)
    updates = [p[k] - w for k, w in zip(MLP, case.weights)]
    peers.check(case, "numpy", updates)
    updates[2] = updates[2] * 1.5
    with pytest.raises(AssertionError, match="update of trainable parameter 2"):
        peers.check(case, "numpy", updates)
    with pytest.raises(AssertionError, match="updated 5 parameters"):
        peers.check(case, "numpy", updates[:5])


@pytest.mark.slow
def test_a_training_update_may_equal_ours_computed_in_float64_instead():
    """A ReLU input within float32 rounding of zero flips on one side only: the check
    then accepts a peer whose update equals the same step in float64 (`case.exact`)."""
    case = peers._case("W4 MLP train b=64")
    assert [u.dtype for u in case.exact] == [np.float64] * len(case.expected)
    for ours, exact in zip(case.expected, case.exact):   # the same step, within float32
        assert np.allclose(ours, exact, rtol=1e-3, atol=1e-3 * np.abs(exact).max())
    flipped = [e.copy() for e in case.exact]
    flipped[0] = case.expected[0] + 0.05 * np.abs(case.expected[0]).max()   # ours moved
    case.expected = flipped[:1] + case.expected[1:]
    peers.check(case, "torch-like", [e.astype(np.float32) for e in case.exact])
    wrong = [e.astype(np.float32) for e in case.exact]
    wrong[0] = wrong[0] * 1.5
    with pytest.raises(AssertionError, match="update of trainable parameter 0"):
        peers.check(case, "torch-like", wrong)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["W3 LeNet fwd b=64", "W3 LeNet train b=64",
                                  "R18 ResNet-18 fwd b=8", "R18 ResNet-18 train b=8",
                                  "W5 LSTM fwd", "W5 LSTM train"])
@pytest.mark.parametrize("peer", ["torch", "jax"])
def test_installed_peers_compute_our_numbers(peer, name):
    module = pytest.importorskip(peer)
    case = peers._case(name)
    make = (peers.torch_variants(module, case, compile_too=False) if peer == "torch"
            else peers.jax_variants(module, case))
    for variant, factory in make.items():
        peers.check(case, variant, factory()[1])


def test_settle_waits_for_another_busy_thread_of_the_process():
    """A peer's spinning threads must not be charged to the variant timed next."""
    import threading
    import time
    stop = time.perf_counter() + 0.3

    def spin():
        while time.perf_counter() < stop:
            pass
    t = threading.Thread(target=spin)
    start = time.perf_counter()
    t.start()
    assert peers.settle(limit=2.0)
    assert time.perf_counter() - start >= 0.25      # returned only once it had stopped
    t.join()
    start = time.perf_counter()
    assert peers.settle()                           # nothing busy: returns at once
    assert time.perf_counter() - start < 0.5
