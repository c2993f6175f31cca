"""MXNet's dependency engine, small enough to read (`mx.engine`).

Two engines, chosen with `MXNET_ENGINE_TYPE` (config.engine_type) or `set_engine_type`:

* `NaiveEngine`: every op runs when it is called, in the calling thread. Nothing to track.
* `ThreadedEngine` (`ThreadedEnginePerDevice` is the same here): an op call *pushes* a
  task and returns at once. The output arrays know their shape and dtype (shape and
  dtype inference run in the front end, as in MXNet) but not their values: their `_data`
  slot holds a `_Pending` placeholder until a worker thread has run the task. Tasks wait
  for the tasks that produce their inputs (read after write); a write into an array
  waits for the tasks still reading it (write after read). NumPy releases Python's lock
  inside its loops and BLAS calls, so workers compute while the front end runs ahead,
  and two independent chains run on two cores.

Reading values synchronises: while the threaded engine is on, `NDArray._data` is a
descriptor that waits for the array's producer and for every task still using its
memory, so all code reading `x._data` (autograd, Trainer, hybridized graphs, in-place
writes) sees finished values without knowing about the engine. An op that fails keeps
its error: every read of its outputs, or of arrays computed from them, raises it, naming
the op; `waitall()` raises each failure once.
"""
from __future__ import annotations

import contextlib
import os
import queue
import threading
import time

import numpy as np

from . import config, profiler
from .base import MXNetError

NAIVE, THREADED = "NaiveEngine", "ThreadedEngine"


class _Failure:
    """An op's error, shared by every array computed from that op's outputs."""
    __slots__ = ("error", "reported")

    def __init__(self, error, reported=False):
        self.error, self.reported = error, reported


class _Task:
    """One pushed op: runs `fn` once the tasks in front of it are done."""
    __slots__ = ("fn", "name", "waiting", "deps", "dependents", "done", "failure", "reads",
                 "writes", "after")

    def __init__(self, fn, name):
        self.fn, self.name = fn, name
        self.waiting = 0            # unfinished tasks this one waits for
        self.deps = ()              # those tasks (kept to name them if the engine is stuck)
        self.dependents = []        # tasks waiting for this one
        self.done = False
        self.failure = None
        self.reads = self.writes = ()   # buffer keys, to clear the bookkeeping when done
        self.after = None           # run straight after this one (a bulk's next op)


class _Pending:
    """What `_data` holds while an op's output is being computed: its shape and dtype
    (so `x.shape` needs no waiting), and the task that will fill it."""
    __slots__ = ("shape", "dtype", "task", "arrays", "observed")

    def __init__(self, shape, dtype, task):
        self.shape, self.dtype, self.task = tuple(shape), np.dtype(dtype), task
        self.arrays = []            # the NDArrays whose `_data` this placeholder is
        self.observed = False       # has anyone read the predicted dtype? (see _fill)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


class _Buffer:
    """Per-memory bookkeeping: the task writing it and the tasks reading it."""
    __slots__ = ("root", "writer", "readers")

    def __init__(self, root):
        self.root, self.writer, self.readers = root, None, set()


def _root(array):
    """The object owning an array's memory: views of one array share their bookkeeping."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array


_STOP = "stop"      # put on the queue once per worker: the engine was switched off


class ThreadedEngine:
    """Read/write dependency tracking and a pool of worker threads.

    Every change of the bookkeeping happens under one lock, and so does every decision
    that a task is ready (its last dependency done) together with putting it on the
    queue: a task is queued exactly once. Two sets say where the work is: `_tasks`, the
    pushed tasks not finished (`waitall` waits for it to empty), and `_ready`, those of
    them queued or running. A wait that finds its condition unmet while `_ready` is empty
    can never end (nothing left can run, and ops pushed later cannot help the ones pushed
    before them): it raises an MXNetError naming the stuck ops instead of waiting."""

    def __init__(self, workers):
        self.workers = workers
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue = queue.SimpleQueue()
        self._buffers: dict[int, _Buffer] = {}
        self._tasks: set[_Task] = set()     # pushed, not finished
        self._ready: set[_Task] = set()     # of those, queued or running
        self._unreported: list[_Failure] = []
        self._threads = []
        self.local = threading.local()      # .worker: this thread is an engine worker
        self.bulk_size = 1
        self._bulk_last = None              # the previous task of the open bulk
        self._bulk_count = 0

    @property
    def _pending(self):
        """How many pushed tasks have not finished."""
        return len(self._tasks)

    # ---------------------------------------------------------------- pushing
    def push(self, task, reads=(), writes=(), after=()):
        """Queue `task.fn()`. reads/writes: NumPy arrays whose memory it reads or writes;
        after: tasks (of pending inputs) it must follow."""
        with self._lock:
            self._start_workers()
            try:                            # (an exception here, Ctrl-C included, must
                self._register(task, reads, writes, after)      # not leave it half in)
            except BaseException as err:
                self._abandon(task, err)
                raise
        return task

    def _register(self, task, reads, writes, after):
        deps = {t for t in after if not t.done}
        failed = [t.failure for t in after if t.failure is not None]
        bufs_r = [self._buffer(array) for array in reads]
        bufs_w = [self._buffer(array) for array in writes]
        for buf in bufs_r:
            if buf.writer is not None:
                deps.add(buf.writer)
            buf.readers.add(task)
        for buf in bufs_w:
            if buf.writer is not None:
                deps.add(buf.writer)
            deps.update(buf.readers)
            deps.discard(task)
            buf.writer, buf.readers = task, set()
        task.reads = [id(buf.root) for buf in bufs_r]
        task.writes = [id(buf.root) for buf in bufs_w]
        if failed:
            task.failure = failed[0]
        if self.bulk_size > 1 and not getattr(self.local, "worker", False):
            self._chain_bulk(task, deps)
        self._tasks.add(task)
        task.deps = tuple(deps)
        task.waiting = len(deps)
        for dep in deps:
            dep.dependents.append(task)
        if task.waiting == 0:
            self._enqueue(task)

    def _enqueue(self, task):
        """(Under the lock.) The task is ready: a worker will run it."""
        self._ready.add(task)
        self._queue.put(task)

    def _abandon(self, task, err):
        """(Under the lock.) Pushing `task` was interrupted: finish it as failed, so that
        nothing waits for it. Its outputs raise `err` (already raised to the caller)."""
        if task in self._ready:
            return                          # it is queued: a worker finishes it
        for key, buf in list(self._buffers.items()):
            buf.readers.discard(task)
            if buf.writer is task:
                buf.writer = None
            self._drop_if_idle(key, buf)
        task.failure = _Failure(err if isinstance(err, MXNetError) else MXNetError(
            f"{task.name}: interrupted while being pushed ({type(err).__name__}: {err})"),
            reported=True)
        for dep in task.deps:
            if task in dep.dependents:
                dep.dependents.remove(task)
        if self._bulk_last is task:
            self._bulk_last = None
        task.fn, task.done, task.deps = None, True, ()
        self._tasks.discard(task)
        self._idle.notify_all()

    def _chain_bulk(self, task, deps):
        """Inside a bulk, each op follows the previous one and a worker runs it straight
        after it (no queue round trip), as MXNet runs a bulk as one engine op."""
        last = self._bulk_last
        if last is not None and not last.done and self._bulk_count < self.bulk_size:
            deps.add(last)
            last.after = task
            self._bulk_count += 1
        else:
            self._bulk_count = 1
        self._bulk_last = task

    def _buffer(self, array):
        root = _root(array)
        buf = self._buffers.get(id(root))
        if buf is None:
            buf = self._buffers[id(root)] = _Buffer(root)   # holds root: its id stays unique
        return buf

    # ---------------------------------------------------------------- running
    def _start_workers(self):
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, daemon=True,
                                      name=f"engine worker {len(self._threads)}")
            thread.start()                  # (counted once it runs)
            self._threads.append(thread)

    def stop(self):
        """End the worker threads once the queue is empty (the engine was switched off)."""
        for _ in self._threads:
            self._queue.put(_STOP)

    def _work(self):
        self.local.worker = True
        while True:
            task = self._queue.get()
            if task is _STOP:
                return
            while task is not None:
                task = self._run(task)

    def _run(self, task):
        """Run one task and finish it; returns a dependent to run next (a bulk's next op)."""
        if task.failure is None:
            try:
                task.fn()
            except BaseException as err:    # kept for whoever reads the outputs; not only
                if not isinstance(err, MXNetError):  # Exception: a worker must never die
                    err = MXNetError(f"{task.name}: {type(err).__name__}: {err}")
                task.failure = _Failure(err)
        task.fn = None                       # free the inputs it held
        with self._lock:
            task.done = True
            self._tasks.discard(task)
            self._ready.discard(task)
            for key in task.reads:
                buf = self._buffers.get(key)
                if buf is not None:
                    buf.readers.discard(task)
                    self._drop_if_idle(key, buf)
            for key in task.writes:
                buf = self._buffers.get(key)
                if buf is not None and buf.writer is task:
                    buf.writer = None
                    self._drop_if_idle(key, buf)
            follow = None
            for dep in task.dependents:
                if task.failure is not None and dep.failure is None:
                    dep.failure = task.failure
                dep.waiting -= 1
                if dep.waiting == 0:
                    if dep is task.after:   # a bulk's next op: this worker runs it now
                        follow = dep
                        self._ready.add(dep)
                    else:
                        self._enqueue(dep)
            task.dependents, task.deps = (), ()
            if task.failure is not None and task.failure not in self._unreported:
                self._unreported.append(task.failure)
            self._idle.notify_all()
        return follow

    def _drop_if_idle(self, key, buf):
        if buf.writer is None and not buf.readers:
            del self._buffers[key]

    # ---------------------------------------------------------------- waiting
    def wait_task(self, task):
        if not task.done:
            if getattr(self.local, "worker", False):
                raise MXNetError(f"an engine worker would wait for {task.name}: an op's "
                                 f"forward read an array that is still being computed")
            self._blocked(lambda: task.done, f"WaitForVar {task.name}", task)
        if task.failure is not None:
            task.failure.reported = True
            raise task.failure.error

    def wait_buffer(self, array):
        """Wait until no task reads or writes this memory (the front end may write it)."""
        buf = self._buffers.get(id(_root(array)))
        if buf is not None and not getattr(self.local, "worker", False):
            self._blocked(lambda: id(buf.root) not in self._buffers, "WaitForVar")

    def waitall(self):
        if getattr(self.local, "worker", False):
            raise MXNetError("waitall() inside an op running on an engine worker would wait "
                             "for that op itself: wait in the front end instead")
        self._blocked(lambda: not self._tasks, "WaitAll")
        with self._lock:
            failures, self._unreported = self._unreported, []
        for failure in failures:
            if not failure.reported:
                failure.reported = True
                raise failure.error

    def _blocked(self, finished, what, task=None):
        """Wait for `finished()`; the profiler sees how long the front end was blocked.
        Raises instead if nothing left can make it true (see the class's doc)."""
        start = time.perf_counter()
        with self._lock:
            blocked = not finished()
            while not finished():
                if not self._ready:
                    raise self._stuck(what, task)
                self._idle.wait()
        if blocked and profiler.recording():
            profiler.record(what, start, time.perf_counter(), "wait")

    def _stuck(self, what, task=None):
        """(Under the lock.) The error for a wait that can never end: it names the ops
        that cannot run and what they wait for, and fails them, so that the engine is
        usable again (their outputs raise this error)."""
        lines = [self._describe(t) for t in self._tasks]
        if task is not None and not task.done and task not in self._tasks:
            lines.append(f"  {task.name}: was pushed to another engine (one switched off, "
                         f"or the parent process's before a fork) and will never run here")
        error = MXNetError(
            f"{what}: would wait forever: no op is queued or running, yet "
            f"{len(lines)} op(s) never ran:\n" + "\n".join(sorted(lines)[:20]) +
            "\nThis is a bug in straightdope's engine, please report it with this message; "
            "the ops above now fail with it. MXNET_ENGINE_TYPE=NaiveEngine avoids it.")
        failure = _Failure(error, reported=True)
        for t in self._tasks:
            if t.failure is None:
                t.failure = failure
            t.fn, t.done, t.deps, t.dependents = None, True, (), ()
        self._tasks.clear()
        self._buffers.clear()       # only unfinished tasks are in it: the ones just failed
        self._bulk_last = None
        self._idle.notify_all()
        return error

    def _describe(self, task):
        """One line for a stuck task: its name, the arrays it uses, what it waits for."""
        def arrays(keys):
            found = [self._buffers[k].root for k in keys if k in self._buffers]
            return ", ".join(f"{getattr(a, 'shape', '?')} {getattr(a, 'dtype', type(a))}"
                             for a in found) or "-"
        waits = [d.name + ("" if d in self._tasks or d.done
                           else " (never pushed to this engine)") for d in task.deps
                 if not d.done]
        return (f"  {task.name}: reads arrays [{arrays(task.reads)}], writes "
                f"[{arrays(task.writes)}], waits for "
                f"{', '.join(sorted(waits)) if waits else 'nothing (it was never queued)'}")


# ------------------------------------------------------------------ switching
_engine = None          # the ThreadedEngine while it is on, else None
_nd = None              # straightdope.ndarray.ndarray, once it has attached itself
_SLOT = None            # NDArray's own `_data` slot (a member descriptor)


def attach(nd_module):
    """Called by straightdope.ndarray.ndarray when it is imported: the engine works on
    its NDArray and its `run`, and points its `_hook` at the engine (or the profiler's
    timer). NDArray's module imports the engine, not the other way round."""
    global _nd, _SLOT
    _nd, _SLOT = nd_module, nd_module.NDArray.__dict__["_data"]
    _install()


class _SyncedData:
    """`NDArray._data` while the threaded engine is on: a read waits for the values."""

    def __get__(self, array, cls=None):
        if array is None:
            return self
        value = _SLOT.__get__(array)
        if type(value) is _Pending:
            _engine.wait_task(value.task)
            value = _SLOT.__get__(array)
        if _engine._buffers:
            _engine.wait_buffer(value)
        return value

    def __set__(self, array, value):
        _SLOT.__set__(array, value)


def _raw(array):
    """An array's `_data` without waiting: a NumPy array or a _Pending."""
    return _SLOT.__get__(array)


def engine_type() -> str:
    """The engine now in use: 'NaiveEngine' or 'ThreadedEngine'."""
    return NAIVE if _engine is None else THREADED


def set_engine_type(name: str, workers: int | None = None) -> str:
    """Switch engines (after waiting for everything pushed); returns the previous one.
    MXNet reads MXNET_ENGINE_TYPE once at start; this lets a notebook compare both."""
    global _engine
    name = config.engine_type(name)
    previous = engine_type()
    NDArray = _nd.NDArray
    if _engine is not None:
        _engine.waitall()
        _engine.stop()
    if name == NAIVE:
        _engine = None
        NDArray._data = _SLOT
        for cls, props in _NAIVE_PROPS.items():
            for attr, prop in props.items():
                setattr(cls, attr, prop)
    else:
        _engine = ThreadedEngine(workers or config.engine_workers())
        NDArray._data = _SyncedData()
        _install_metadata(NDArray)
    _install()
    return previous


_NAIVE_PROPS: dict = {}     # class -> the properties _install_metadata replaced


def _install_metadata(NDArray):
    """shape, dtype, size, ndim read a pending array's placeholder: no waiting. Their
    getters (NDArray's and a subclass's own, such as mx.np.ndarray's dtype) read only
    `self._data`: they run as they are, on the slot's raw value, a _Pending included."""
    classes = [NDArray]
    for cls in classes:
        classes.extend(cls.__subclasses__())
    for cls in classes:
        own = {a: cls.__dict__[a] for a in _METADATA if a in cls.__dict__}
        for attr, prop in _NAIVE_PROPS.setdefault(cls, own).items():
            setattr(cls, attr, property(_reading_raw(prop.fget, attr == "dtype"),
                                        doc=prop.__doc__))


_METADATA = ("shape", "dtype", "size", "ndim")


class _Raw:
    """What a metadata getter sees as `self`: the array's `_data` slot, unsynchronised."""
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data


def _reading_raw(fget, observes):
    if observes:                    # a dtype read: the guess may no longer change (_fill)
        return lambda self: fget(_Raw(_observed(self)))
    return lambda self: fget(_Raw(_SLOT.__get__(self)))


def _observed(array):
    value = _SLOT.__get__(array)
    if type(value) is _Pending:
        value.observed = True
    return value


def _before_fork():
    """A forked child (DataLoader workers) has none of the parent's threads: let the
    parent's tasks finish first, and give the child a fresh engine."""
    if _engine is not None and not getattr(_engine.local, "worker", False):
        _engine._blocked(lambda: not _engine._tasks, "fork")


def _after_fork_in_child():
    global _engine
    if _engine is not None:
        old, _engine = _engine, ThreadedEngine(_engine.workers)
        _engine._unreported, _engine.bulk_size = old._unreported, old.bulk_size


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def deferred_failure(error, name, shape, dtype, ctx=None, after=None):
    """An array whose op failed, as the threaded engine reports it: the error is raised
    when the array is read or at waitall(), not now. (Random draws run in the front end,
    to use NumPy's generator in program order; their bad arguments fail this way.)
    after: a failed draw's task, whose failure this array shares instead of its own."""
    global _generator_task
    if after is None:
        def fail():
            raise error
        task = _Task(fail, name)
        _generator_task = task
    else:
        task = _Task(None, name)        # never runs: it inherits after's failure
    placeholder = _Pending(shape, dtype, task)
    array = _nd.NDArray(placeholder, ctx)
    placeholder.arrays.append(array)
    _engine.push(task, after=() if after is None else (after,))
    return array


_generator_task = None     # the last failed random draw (see failed_generator)


def failed_generator():
    """The task of a failed random draw whose error was not raised yet, or None: MXNet's
    random ops all write the generator's state, so a failure there fails the draws after
    it, until it has been raised (its test_exc_imperative relies on it)."""
    task = _generator_task
    if _engine is None or task is None or (task.failure is not None
                                           and task.failure.reported):
        return None
    return task


def _install():
    """Point the ndarray hot path at the right function: no engine and no profiler,
    `run` does all the work itself (NaiveEngine costs nothing). Called again whenever
    the profiler starts or stops recording."""
    if _nd is not None:
        _nd._hook = _threaded_run if _engine is not None else (
            _profiled_run if profiler.recording() else None)


profiler.on_recording_change(_install)


def _profiled_run(op, inputs, attrs):
    """Run the op now, timed if the profiler records (_threaded_run's ops that run now
    come here whether it records or not)."""
    if not profiler.recording():
        return _nd.run(op, inputs, attrs, True)
    start = time.perf_counter()
    try:
        return _nd.run(op, inputs, attrs, True)
    finally:
        profiler.record(profiler.scoped(op.name), start, time.perf_counter())


def _threaded_run(op, inputs, attrs):
    """`run` under the threaded engine: infer the outputs' shapes and dtypes, push the
    op, return its outputs at once. Ops it cannot push (see _must_run_now) run now."""
    if getattr(_engine.local, "worker", False) or _must_run_now(op, inputs):
        if _engine.bulk_size > 1:
            _engine._bulk_last = None
        return _profiled_run(op, inputs, attrs)
    raw = [_SLOT.__get__(x) for x in inputs]
    dtype = _predict_dtype(op, attrs, raw)
    if dtype is None:
        return _profiled_run(op, inputs, attrs)
    try:
        _, out_shapes = op.shapes(attrs, [a.shape for a in raw])
    except MXNetError:      # a bad call raises now, with the words NaiveEngine would use
        out_shapes = [None]
    if any(s is None or None in s for s in out_shapes):
        return _profiled_run(op, inputs, attrs)
    is_train = _nd._state.training if op.needs_train_flag else False
    ctx = inputs[0]._ctx
    cls = _nd.NDArray
    for x in inputs:
        if type(x) is not cls:
            cls = type(x)
            break
    name = _scoped_name(op.name)
    profiled = name is not None and _profiler_on()
    task = _Task(None, name)
    placeholders = [_Pending(s, dtype, task) for s in out_shapes]
    outputs = [cls(p, ctx) for p in placeholders]
    for p, out in zip(placeholders, outputs):
        p.arrays.append(out)
    args = list(raw)

    def compute():
        arrays = [a if type(a) is not _Pending else _filled(a) for a in args]
        start = time.perf_counter()
        if op.needs_train_flag:
            results = op.forward(attrs, *arrays, is_train=is_train)
        else:
            results = op.forward(attrs, *arrays)
        if type(results) is not tuple:
            results = (results,)
        _fill(op, placeholders, results)
        if profiled:                # decided at the push: a pause() then holds for it
            _record(name, start)

    pending_inputs = [a.task for a in raw if type(a) is _Pending]
    real_inputs = [a for a in raw if type(a) is not _Pending]
    task.fn = compute
    _engine.push(task, reads=real_inputs, after=pending_inputs)
    if _nd._state.recording:
        _nd._record(op, attrs, inputs, outputs, is_train)
    if len(outputs) == 1:
        return outputs[0]
    visible = outputs[:op.visible_count(attrs)]
    return visible[0] if len(visible) == 1 else visible


def basic_index_later(array, key):
    """x[key] (basic indexing) of an array still being computed, as a task: unpacking
    a pending array (`a, b = x`) does not wait. None: do it now."""
    value = _SLOT.__get__(array)
    if _engine is None or type(value) is not _Pending:
        return None
    shape = np.broadcast_to(np.empty((), value.dtype), value.shape)[key].shape
    task = _Task(None, "slice")
    placeholder = _Pending(shape, value.dtype, task)
    out = type(array)(placeholder, array._ctx)
    placeholder.arrays.append(out)

    def compute():
        view = _SLOT.__get__(value.arrays[0])[key]
        _SLOT.__set__(out, view if view.flags.c_contiguous else view.copy())
    task.fn = compute
    _engine.push(task, after=[value.task])
    return out


def _must_run_now(op, inputs):
    """Ops the engine runs in the front end, after waiting for their inputs: no inputs
    (creation ops), ops writing into an input (BatchNorm's running statistics), loops
    and branches (their bodies call ops themselves), ops drawing random numbers (NumPy's
    one generator must be used in program order), ops without shape inference, and the
    ops checking their inputs' values (`op.checks_values`: the error names the call on
    both engines)."""
    return (not inputs or op.aux_writeback or op.is_random or op.infer_shape is None
            or op.checks_values
            or any(spec.kind == "subgraphs" for spec in op.attrs.values()))


def _predict_dtype(op, attrs, raw):
    """The output dtype NumPy's forward will give, or None: run the op now. Inputs of
    several dtypes (NumPy's promotion, index arrays) run now; so do the layers that
    refuse mixed dtypes, to refuse them at the call as under NaiveEngine."""
    dtype = raw[0].dtype
    for a in raw:
        if a.dtype != dtype:
            return None
        if type(a) is _Pending:
            a.observed = True
    out = op.out_dtype(attrs, [a.dtype for a in raw])
    if isinstance(out, (list, tuple)):       # a dtype per output (np gradient ops)
        if len({np.dtype(d) for d in out}) != 1:
            return None
        out = out[0]
    return dtype if out is None else np.dtype(out)


def _filled(placeholder):
    """An input's values inside a worker: its task finished before this one started."""
    return _SLOT.__get__(placeholder.arrays[0])


def _fill(op, placeholders, results):
    if len(results) < len(placeholders):
        raise MXNetError(f"{op.name}: gave {len(results)} outputs, expected "
                         f"{len(placeholders)}")
    for p, result in zip(placeholders, results):
        result = np.asarray(result)
        if result.dtype != p.dtype and not p.observed:
            p.dtype = result.dtype      # a wrong guess nobody has seen: no harm done
        if result.shape != p.shape or result.dtype != p.dtype:
            raise MXNetError(f"{op.name}: computed an output of shape {result.shape} and "
                             f"dtype {result.dtype}, but shape and dtype inference said "
                             f"{p.shape} {p.dtype} (a bug in the op's inference: report it; "
                             f"MXNET_ENGINE_TYPE=NaiveEngine avoids it meanwhile)")
        with _ADOPTING:                 # (try_adopt may be adding an array to p)
            for array in p.arrays:
                _SLOT.__set__(array, result)


def _profiler_on():
    return profiler.recording()


def _record(name, start):
    profiler.record(name, start, time.perf_counter())


def _scoped_name(name):
    return profiler.scoped(name) if profiler.recording() else name


def is_pending(array) -> bool:
    """Is this array's value still being computed?"""
    return _engine is not None and type(_SLOT.__get__(array)) is _Pending


# ------------------------------------------------------------------ MXNet's API
def waitall():
    """Wait until every pushed op has run; raise the first error not raised yet."""
    if _engine is not None:
        _engine.waitall()


def wait_to_read(array):
    """Wait for the op computing `array` (and for a task writing into its memory)."""
    if _engine is None:
        return
    value = _SLOT.__get__(array)
    if type(value) is _Pending:
        _engine.wait_task(value.task)
        return
    buf = _engine._buffers.get(id(_root(value)))
    writer = buf.writer if buf is not None else None
    if writer is not None:
        _engine.wait_task(writer)


def try_adopt(target, source) -> bool:
    """Under the threaded engine, let `target` take over `source`'s (maybe pending)
    values when shape and dtype agree; False: do it yourself (autograd hands a fresh
    gradient to `.grad` this way, without waiting for backward to finish)."""
    if _engine is None:
        return False
    with _ADOPTING:     # else a worker filling `source` now could miss `target` for good
        value, old = _SLOT.__get__(source), _SLOT.__get__(target)
        if value.shape != old.shape or value.dtype != old.dtype:
            return False
        if type(value) is _Pending:
            value.arrays.append(target)
        _SLOT.__set__(target, value)
    return True


# Held while a finished op's values go into its arrays (_fill) and while try_adopt adds
# an array to a pending value: the two never interleave.
_ADOPTING = threading.Lock()


def set_bulk_size(size: int) -> int:
    """Run up to `size` consecutive ops as one bulk (one after another on one worker,
    no queue round trip between them); returns the previous size. 1: no bulking."""
    global _bulk_size
    previous, _bulk_size = _bulk_size, max(int(size), 1)
    if _engine is not None:
        _engine.bulk_size = _bulk_size
        _engine._bulk_last = None
    return previous


_bulk_size = 1


@contextlib.contextmanager
def bulk(size: int):
    """`with mx.engine.bulk(10):` ops inside run in bulks of up to 10."""
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)
