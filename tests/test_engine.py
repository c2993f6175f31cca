"""The dependency engine (straightdope/engine.py) and the profiler (straightdope/profiler.py).

MXNet's own tests/python/unittest/test_engine.py and test_exc_handling.py, as far as they
are in scope, plus what they take for granted: ops return before they are computed, reads
wait, writes wait for readers, independent ops run on two worker threads at once. No test
here asserts a duration: where order matters, a task blocked on an Event holds the engine.
"""
import json
import threading
import time

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, engine, gluon, nd, profiler
from straightdope.base import MXNetError


@pytest.fixture
def threaded():
    previous = engine.set_engine_type("ThreadedEngine", workers=2)
    yield engine._engine
    try:
        engine.waitall()
    except MXNetError:
        pass
    engine.set_engine_type(previous)


def _gate(memory):
    """A task writing `memory` that runs only once the returned Event is set."""
    event = threading.Event()
    task = engine._Task(lambda: event.wait(10), "gate")
    engine._engine.push(task, writes=[memory])
    return event, task


def test_engine_type_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice")
    assert mx.config.engine_type() == "ThreadedEngine"
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "NaiveEngine")
    assert mx.config.engine_type() == "NaiveEngine"
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "TurboEngine")
    with pytest.raises(ValueError, match="TurboEngine.*NaiveEngine or ThreadedEngine"):
        mx.config.engine_type()


def test_an_op_returns_before_it_is_computed(threaded):
    x = nd.ones((4, 4))
    event, _ = _gate(x._data)
    y = nd.dot(x, x) + 1
    assert engine.is_pending(y)
    assert y.shape == (4, 4) and y.dtype == np.float32     # known without waiting
    assert engine.is_pending(y)
    event.set()
    np.testing.assert_allclose(y.asnumpy(), np.full((4, 4), 5.0))
    assert not engine.is_pending(y)


def test_a_write_waits_for_the_ops_reading_the_array(threaded):
    x = nd.ones((3,))
    source = nd.zeros((3,))
    event, _ = _gate(source._data)
    y = source + x                  # reads x, but only after the gate
    assert engine.is_pending(y)
    threading.Timer(0.05, event.set).start()
    x[:] = 100                      # must wait until y has read x
    np.testing.assert_array_equal(y.asnumpy(), [1, 1, 1])
    np.testing.assert_array_equal(x.asnumpy(), [100, 100, 100])


def test_two_independent_chains_run_on_two_workers(threaded):
    """Each chain's first op waits for the other chain's gate to open: only two
    workers running both at once can finish (one worker would never get there)."""
    a_ready, b_ready = threading.Event(), threading.Event()
    a, b = nd.ones((2, 2)), nd.ones((2, 2))

    def meet(mine, other):
        mine.set()
        if not other.wait(10):
            raise RuntimeError("the other chain never started")
    for mine, other, memory in ((a_ready, b_ready, a._data), (b_ready, a_ready, b._data)):
        engine._engine.push(engine._Task(lambda m=mine, o=other: meet(m, o), "meet"),
                            writes=[memory])
    chain_a, chain_b = a, b
    for _ in range(3):
        chain_a, chain_b = nd.dot(chain_a, chain_a), nd.dot(chain_b, chain_b)
    nd.waitall()
    np.testing.assert_allclose(chain_a.asnumpy(), np.full((2, 2), 128.0))
    np.testing.assert_allclose(chain_b.asnumpy(), np.full((2, 2), 128.0))


def test_bulk_as_in_mxnet(threaded):
    """MXNet's test_engine.py::test_bulk."""
    with mx.engine.bulk(10):
        x = mx.nd.ones((10,))
        x *= 2
        x += 1
        x.wait_to_read()
        x += 1
        assert (x.asnumpy() == 4).all()
        for _ in range(100):
            x += 1
    assert (x.asnumpy() == 104).all()


def test_set_bulk_size_returns_the_previous_size(threaded):
    assert mx.engine.set_bulk_size(8) == 1
    try:
        x = nd.ones((5,))
        ys = [x * i for i in range(20)]       # chained in bulks of 8, still all correct
        assert [float(y.sum().asscalar()) for y in ys] == [5.0 * i for i in range(20)]
    finally:
        assert mx.engine.set_bulk_size(1) == 8


# ---------------------------------------------------- MXNet's test_exc_handling.py
def test_exc_imperative(threaded):
    def imperative(exec_numpy=True):
        a = mx.nd.random.normal(0, 1, (2, 2))
        b = mx.nd.random.normal(0, -1, (2, 2))
        c = mx.nd.dot(a, b)
        if exec_numpy:
            c.asnumpy()
    imperative(exec_numpy=False)
    with pytest.raises(MXNetError, match="random.normal: scale < 0"):
        imperative(exec_numpy=True)
    nd.waitall()        # the first call's failure was the one raised (next test)


def test_a_failed_draw_fails_the_draws_after_it_until_raised(threaded):
    """As in MXNet, where every random op writes the generator's state: the second
    call's draws share the first call's failure, and raising it once clears it."""
    bad = nd.random.normal(0, -1, (2, 2))
    fine_args = nd.random.uniform(0, 1, (3,))
    with pytest.raises(MXNetError, match="random.normal: scale < 0"):
        fine_args.asnumpy()
    with pytest.raises(MXNetError, match="random.normal"):
        bad.asnumpy()                   # still failed, as every failed array
    assert nd.random.uniform(0, 1, (3,)).asnumpy().shape == (3,)   # cleared
    nd.waitall()


@pytest.mark.parametrize("waitall", [False, True])
def test_exc_multiple_waits(threaded, waitall):
    for _ in range(2):
        a = mx.nd.random.normal(0, -1, (2, 2)).copyto(mx.cpu())
        with pytest.raises(MXNetError):
            mx.nd.waitall() if waitall else a.wait_to_read()


@pytest.mark.parametrize("waitall", [False, True])
def test_exc_mutable_var_fail(threaded, waitall):
    a, b = mx.nd.random_normal(0, -1, (2, 2)).copyto(mx.cpu())
    a = mx.nd.dot(a, a)
    with pytest.raises(MXNetError):
        mx.nd.waitall() if waitall else a.asnumpy()


def test_multiple_waitalls_raise_a_failure_once(threaded):
    mx.nd.random.normal(0, -1, (2, 2)).copyto(mx.cpu())
    with pytest.raises(MXNetError):
        mx.nd.waitall()
    mx.nd.waitall()


def test_a_failed_array_raises_on_every_read(threaded):
    """MXNet raises a failure once and then hands out whatever memory holds
    (test_exc_post_fail); here every read of a failed array raises (docs/engine.md)."""
    bad = nd.random.normal(0, -1, (2, 2))
    later = nd.exp(bad) + 1
    for read in (later.asnumpy, later.wait_to_read, lambda: print(later), bad.asnumpy):
        with pytest.raises(MXNetError, match="random.normal"):
            read()
    nd.waitall()        # reads raised it already: nothing new to report


def test_an_op_failing_in_a_worker_is_named(threaded, monkeypatch):
    """An op whose forward fails while it runs (its shapes are fine): the error is
    kept by the worker and raised at the read, naming the op."""
    def overflowing(attrs, x):
        raise FloatingPointError("overflow encountered in exp")
    monkeypatch.setattr(mx.ops.get_op("exp"), "forward", overflowing)
    x = nd.ones((3, 3))
    event, _ = _gate(x._data)
    after = nd.exp(x) * 2
    event.set()
    with pytest.raises(MXNetError, match="exp: FloatingPointError: overflow"):
        after.asnumpy()


def test_a_shape_error_raises_at_the_call(threaded):
    """Shape inference runs in the front end, as in MXNet: no need to wait for it."""
    with pytest.raises(MXNetError, match="dot"):
        nd.dot(nd.ones((2, 3)), nd.ones((4, 5)))



def test_a_draw_with_parameters_of_two_shapes_raises_at_the_call(threaded):
    """sample_*'s shape inference refuses parameters of two shapes, as MXNet's does."""
    with pytest.raises(MXNetError, match="sample_normal: the parameters .* one shape"):
        nd.sample_normal(mu=nd.zeros((2,)), sigma=nd.ones((3,)))
    with pytest.raises(MXNetError, match="uniform: the parameters .* one shape"):
        nd.random.uniform(nd.zeros((2,)), nd.ones((2, 2)))
    assert nd.random.uniform(0, 1, (2,)).asnumpy().shape == (2,)   # nothing left failed


def test_a_failed_draw_has_its_shape_and_raises_its_own_error_at_the_read(threaded):
    bad = nd.sample_normal(mu=nd.zeros((2,)), sigma=-nd.ones((2,)), shape=(3,))
    assert bad.shape == (2, 3)                      # inferred, not waited for
    with pytest.raises(MXNetError, match="random.sample_normal: scale < 0"):
        bad.asnumpy()
    mixed = nd.random.generalized_negative_binomial(nd.ones((4,)), -1.0)
    assert mixed.shape == (4,)
    with pytest.raises(MXNetError, match="generalized_negative_binomial: .*alpha"):
        mixed.asnumpy()

# ---------------------------------------------------- the rest of the library
def test_autograd_trainer_and_in_place_writes(threaded):
    """A few SGD steps give the same weights as under NaiveEngine."""
    def train():
        mx.random.seed(3)
        net = gluon.nn.Dense(3, in_units=4)
        net.initialize(mx.init.Xavier())
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        x, y = nd.random.normal(shape=(8, 4)), nd.random.normal(shape=(8, 3))
        for _ in range(3):
            with autograd.record():
                loss = gluon.loss.L2Loss()(net(x), y)
            loss.backward()
            trainer.step(8)
        return net.weight.data().asnumpy()
    threaded_weights = train()
    engine.set_engine_type("NaiveEngine")
    naive_weights = train()
    engine.set_engine_type("ThreadedEngine")
    np.testing.assert_allclose(threaded_weights, naive_weights, rtol=1e-6)


def test_hybridized_block_and_dataloader(threaded):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, activation="relu"), gluon.nn.Dense(2))
    net.initialize()
    data = gluon.data.ArrayDataset(np.random.rand(12, 3).astype("float32"),
                                   np.arange(12, dtype="float32"))
    loader = gluon.data.DataLoader(data, batch_size=4, num_workers=2)
    batches = [(x, y) for x, y in loader]
    imperative = [net(x).asnumpy() for x, _ in batches]
    net.hybridize()
    hybridized = [net(nd.exp(x) * 0 + x).asnumpy() for x, _ in batches]
    for a, b in zip(imperative, hybridized):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_switching_back_to_naive_waits_for_everything():
    engine.set_engine_type("ThreadedEngine")
    y = nd.dot(nd.ones((50, 50)), nd.ones((50, 50)))
    assert engine.set_engine_type("NaiveEngine") == "ThreadedEngine"
    assert not engine.is_pending(y)
    assert type(nd.NDArray.__dict__["_data"]).__name__ == "member_descriptor"
    assert float(y[0, 0].asscalar()) == 50.0


# ---------------------------------------------------- nothing hangs (issue 32)
class _HookedLock:
    """A lock that calls `on_release` once, right after its next release: it puts a
    worker's step exactly where a thread switch could put it."""

    def __init__(self):
        self._lock, self.on_release = threading.Lock(), None

    def acquire(self, *args):
        return self._lock.acquire(*args)

    def release(self):
        self._lock.release()
        hook, self.on_release = self.on_release, None
        if hook is not None:
            hook()

    def _is_owned(self):
        return self._lock.locked()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


def test_a_task_made_ready_as_its_push_ends_is_queued_once():
    """The CI hang: a worker finished a task's last dependency between push() letting go
    of the lock and push() looking at the task's counter, so both queued it; it ran
    twice and the count of unfinished tasks never came back to zero."""
    eng = engine.ThreadedEngine(workers=0)     # no threads: the test runs the tasks itself
    lock = _HookedLock()
    eng._lock, eng._idle = lock, threading.Condition(lock)
    ran = []
    first = eng.push(engine._Task(lambda: ran.append("first"), "first"))
    assert eng._queue.get_nowait() is first
    second = engine._Task(lambda: ran.append("second"), "second")
    lock.on_release = lambda: eng._run(first)      # a worker finishing `first` just then
    eng.push(second, after=[first])
    queued = []
    while not eng._queue.empty():
        queued.append(eng._queue.get_nowait())
    assert queued == [second]
    eng._run(second)
    assert ran == ["first", "second"] and eng._pending == 0 and second.failure is None


class _Abort(BaseException):
    """Not an Exception, as SystemExit or pytest's outcomes (pytest.fail, skip) are."""


@pytest.mark.timeout(120)
def test_an_op_raising_a_base_exception_fails_and_its_worker_lives(threaded, monkeypatch):
    def aborting(attrs, x):
        raise _Abort("stop here")
    monkeypatch.setattr(mx.ops.get_op("exp"), "forward", aborting)
    for _ in range(3):              # more than the two workers: each must survive
        y = nd.exp(nd.ones((2,)))
        with pytest.raises(MXNetError, match="exp: _Abort: stop here"):
            y.asnumpy()
    monkeypatch.undo()
    assert float(nd.exp(nd.zeros((2,))).sum().asscalar()) == 2.0
    nd.waitall()


@pytest.mark.timeout(120)
def test_waitall_inside_an_op_raises_instead_of_waiting_for_itself(threaded):
    seen = []

    def waits_for_all():
        for wait in (engine.waitall, lambda: engine.set_engine_type("NaiveEngine")):
            try:
                wait()
            except MXNetError as err:
                seen.append(str(err))
    threaded.push(engine._Task(waits_for_all, "waits for all"))
    nd.waitall()
    assert len(seen) == 2 and all("engine worker" in s for s in seen)
    assert engine.engine_type() == "ThreadedEngine"


def test_an_interrupted_push_leaves_nothing_to_wait_for(threaded, monkeypatch):
    """Ctrl-C between counting a task and queueing it: the task is finished as failed
    (the caller got the KeyboardInterrupt), nothing waits for it."""
    def interrupted(task):
        raise KeyboardInterrupt
    x = nd.ones((2,))
    monkeypatch.setattr(threaded, "_enqueue", interrupted)
    with pytest.raises(KeyboardInterrupt):
        nd.exp(x)
    monkeypatch.undo()
    x[:] = 3                        # no task left reading x
    nd.waitall()                    # nothing left, nothing to raise
    assert float(nd.exp(x * 0).sum().asscalar()) == 2.0


@pytest.mark.parametrize("where", ["_predict_dtype", "_scoped_name", "shapes", "_buffer"])
def test_a_failure_while_an_op_is_pushed_leaves_nothing_behind(threaded, monkeypatch, where):
    """Dtype and shape prediction, the profiler's naming and the engine's bookkeeping
    failing at the call: the call raises, and nothing is left for anyone to wait for."""
    def broken(*args, **kwargs):
        raise RuntimeError(f"{where} broke")
    target = {"shapes": mx.ops.get_op("exp"), "_buffer": threaded}.get(where, engine)
    x = nd.ones((2, 3))
    monkeypatch.setattr(target, where, broken)
    with pytest.raises(RuntimeError, match=f"{where} broke"):
        nd.exp(x)
    monkeypatch.undo()
    assert threaded._pending == 0 and not threaded._buffers
    x[:] = 2                        # nothing reads x
    nd.waitall()
    assert float(nd.exp(x * 0).sum().asscalar()) == 6.0


def _stuck_array(name="ghost"):
    """An array whose producer was never pushed: nothing will ever compute it (what a
    lost task looks like), and an op reading it and a real array."""
    ghost = engine._Task(lambda: None, name)
    lost = nd.NDArray(engine._Pending((2,), np.float32, ghost), None)
    return ghost, lost


@pytest.mark.timeout(120)
def test_waitall_that_can_never_end_raises_naming_the_stuck_ops(threaded):
    ghost, lost = _stuck_array()
    x = nd.ones((3, 4))
    threaded.push(engine._Task(lambda: None, "reader"), reads=[x._data], after=[ghost])
    y = nd.exp(lost)
    with pytest.raises(MXNetError) as raised:
        nd.waitall()
    message = str(raised.value)
    assert message.startswith("WaitAll: would wait forever: no op is queued or running")
    assert "reader: reads arrays [(3, 4) float32], writes [-], waits for ghost " \
           "(never pushed to this engine)" in message
    assert "exp: reads arrays [-], writes [-], waits for ghost" in message
    assert "NaiveEngine" in message and "report" in message
    with pytest.raises(MXNetError, match="would wait forever"):
        y.asnumpy()                 # the stuck op failed with that error
    x[:] = 5                        # nothing reads x any more: the write does not wait
    nd.waitall()                    # the engine is usable again: nothing left
    assert float((x + 1).sum().asscalar()) == 72.0


@pytest.mark.timeout(120)
def test_a_read_that_can_never_end_raises(threaded):
    ghost, lost = _stuck_array("lost producer")
    y = nd.exp(lost) * 2
    with pytest.raises(MXNetError, match=r"WaitForVar _mul_scalar: would wait forever"
                                         r"(?s:.*)exp: .*waits for lost producer"):
        y.wait_to_read()
    with pytest.raises(MXNetError, match="lost producer: was pushed to another engine"):
        lost.asnumpy()              # its task is in no engine at all
    nd.waitall()


@pytest.mark.timeout(120)
def test_a_long_running_op_is_waited_for(threaded, monkeypatch):
    """The front end waits as long as an op runs: the op here ends only once the front
    end is blocked in waitall()."""
    blocked = threading.Event()
    real_wait = threaded._idle.wait

    def wait(*args):
        blocked.set()
        return real_wait(*args)
    monkeypatch.setattr(threaded._idle, "wait", wait)
    x = nd.ones((2, 2))
    threaded.push(engine._Task(lambda: blocked.wait(60), "long"), writes=[x._data])
    y = x + 1
    nd.waitall()
    assert blocked.is_set()
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 2), 2.0))


@pytest.mark.timeout(120)
def test_switching_engines_ends_the_old_workers(threaded):
    (nd.ones((2,)) + 1).wait_to_read()
    old = engine._engine
    assert len(old._threads) == 2
    engine.set_engine_type("ThreadedEngine", workers=2)
    for thread in old._threads:
        thread.join(60)
        assert not thread.is_alive()


# ---------------------------------------------------------------- profiler
@pytest.mark.parametrize("engine_type", ["NaiveEngine", "ThreadedEngine"])
def test_profiler_trace_has_every_op_with_thread_start_and_duration(tmp_path, engine_type):
    previous = engine.set_engine_type(engine_type, workers=2)
    path = tmp_path / "profile.json"
    try:
        profiler.set_config(profile_all=True, filename=str(path), aggregate_stats=True)
        profiler.set_state("run")
        x = nd.ones((30, 30))
        with profiler.scope("chain"):
            y = nd.dot(x, x)
        z = nd.relu(y - 1)
        profiler.pause()
        nd.sigmoid(z)
        profiler.resume()
        nd.waitall()
        profiler.set_state("stop")
        table = profiler.dumps()
        profiler.dump()
    finally:
        profiler.set_state("stop")
        engine.set_engine_type(previous)
    trace = json.loads(path.read_text())
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "operator"]
    names = [e["name"] for e in ops]
    assert names.count("chain:dot") == 1 and "relu" in names and "_minus_scalar" in names
    assert "sigmoid" not in names                       # paused
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    expected = "MainThread" if engine_type == "NaiveEngine" else "engine worker"
    op_threads = {e["tid"] for e in ops}
    assert all(any(expected in t for t in threads) for _ in op_threads)
    assert all(e["dur"] >= 0 and e["ts"] > 0 for e in ops)
    dot, relu = (next(e for e in ops if e["name"] == n) for n in ("chain:dot", "relu"))
    assert relu["ts"] >= dot["ts"] + dot["dur"] - 1e-3      # relu read dot's output
    assert "chain:dot" in table and "Total Count" in table
    assert profiler.events() == []                          # dump(finished=True) forgets


def test_profiler_records_where_the_front_end_waited(threaded):
    x = nd.ones((3, 3))
    event, _ = _gate(x._data)
    profiler.set_state("run")
    try:
        y = nd.exp(x)
        threading.Timer(0.02, event.set).start()
        nd.waitall()
    finally:
        profiler.set_state("stop")
    waits = [e for e in profiler.events() if e["cat"] == "wait"]
    assert [w["name"] for w in waits] == ["WaitAll"] and waits[0]["thread"] == "MainThread"
    assert float(y.sum().asscalar()) == pytest.approx(9 * np.e, rel=1e-5)
    profiler.dumps(reset=True)
    assert profiler.events() == []


def test_ops_run_in_the_front_end_are_not_recorded_while_the_profiler_is_off(threaded):
    """The threaded engine runs random ops, and ops on two dtypes, at the call: with the
    profiler stopped they leave no event (they did: a long session's list grew forever,
    and test_timeline_widget counted other tests' ops under make test-threaded)."""
    profiler.dumps(reset=True)
    nd.random.multinomial(nd.array([[0.5, 0.5]]), shape=3)      # a random op
    (nd.ones((2,)) + nd.ones((2,), dtype="float64")).wait_to_read()   # two dtypes
    nd.waitall()
    assert profiler.events() == []


def test_profiler_refuses_unknown_settings():
    with pytest.raises(ValueError, match="profile_everything"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        profiler.set_state("go")
    with pytest.raises(ValueError, match="sort_by"):
        profiler.dumps(sort_by="name")


def test_profiler_user_events_and_json_stats():
    profiler.dumps(reset=True)
    profiler.set_state("run")
    try:
        domain = profiler.Domain("book")
        with domain.new_task("load"):
            pass
        counter = domain.new_counter("batches", 0)
        counter += 2
        domain.new_marker("epoch").mark()
    finally:
        profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json", reset=True))
    assert stats["Time"]["task"]["book::load"]["Total Count"] == 1
    assert stats["Time"]["counter"]["book::batches"]["Total Count"] == 2
    assert counter.value == 2


@pytest.mark.timeout(120)
def test_a_forked_child_gets_an_engine_of_its_own(threaded):
    """A child process has none of the parent's worker threads: the parent lets its
    tasks finish before the fork, and the child starts a fresh engine."""
    import os
    x = nd.ones((50, 50))
    y = nd.dot(x, x)
    pid = os.fork()
    if pid == 0:                                    # the child: compute, report, leave
        try:
            ok = float(nd.dot(y, x)[0, 0].asscalar()) == 2500.0
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert float(y[1, 1].asscalar()) == 50.0


def test_a_gradient_adopted_while_its_op_finishes_gets_the_values(threaded):
    """autograd hands a fresh gradient to `.grad` with try_adopt; a worker finishing that
    gradient's op at the same moment must fill `.grad` too (it left it pending for good,
    and x.grad read zeros: a flaky failure of test_hybrid_routing under the engine)."""
    placeholder = engine._Pending((2,), np.float32, engine._Task(None, "stand-in"))
    source = nd.NDArray(placeholder)
    target = nd.zeros((2,))
    finisher = []

    class FinishingNow(list):          # the worker finishes as try_adopt adds `target`
        def append(self, array):
            fill = threading.Thread(target=engine._fill, args=(
                mx.ops.OPS["_copy"], [placeholder], [np.ones(2, np.float32)]))
            fill.start()
            fill.join(0.5)             # blocked until try_adopt is done: the fix
            finisher.append(fill)
            super().append(array)
    placeholder.arrays = FinishingNow([source])
    assert engine.try_adopt(target, source)
    finisher[0].join(10)
    np.testing.assert_array_equal(engine._SLOT.__get__(target), np.ones(2, np.float32))
