"""DataLoader: turn a Dataset into an iterable of batches.

Three small pieces do the work, one after the other:

1. a **batch sampler** picks the indices of each batch (order, shuffling, last batch);
2. the samples are read, ``dataset[i]`` for each index, and **stacked** into NumPy arrays;
3. each stacked array becomes one NDArray (the only place NumPy meets the core).

With ``num_workers > 0``, steps 2 (the expensive part: reading, transforming and stacking)
run in a pool of worker **threads**. Threads, not processes, because NumPy releases the GIL
while it copies and computes, the dataset does not have to be pickled, and nothing has to be
sent back through shared memory. The batch *order* is still decided in the main thread by the
sampler, and results are yielded in submission order, so the workers give exactly the same
batches, in the same order, as ``num_workers=0``. (A transform that draws random numbers from
threads is the one thing that can make the two paths differ.)

Workers pay off when reading a sample waits (files, decoding) or runs large NumPy operations;
for tiny in-memory samples the Python bookkeeping holds the GIL and ``num_workers=0`` is as fast.

``timeout`` bounds the wait for each batch. A thread cannot be killed, so a worker stuck in
``dataset[i]`` is *abandoned*: the loader raises at once, and the worker (a daemon thread)
never keeps the loop or the process from ending.
"""
import itertools
import queue
import threading
from concurrent.futures import Future

import numpy as np

from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ['DataLoader', 'default_batchify_fn']


def _is_ndarray(x):
    # Duck typing instead of isinstance: the data package never imports the core at load
    # time, which keeps it usable (and testable) on its own and avoids import cycles.
    return hasattr(x, 'asnumpy')


def stack_samples(data):
    """Stack a list of samples into NumPy batches (the NumPy half of batchify).

    Arrays (or numbers) become one array with a new first axis; tuples ``(x, y)`` are stacked
    field by field and give a tuple of arrays. The NumPy dtype is kept, as in MXNet: uint8
    images stay uint8 and int32 labels stay int32 (beware: Python floats give float64).
    """
    first = data[0]
    if isinstance(first, tuple):
        return tuple(stack_samples(list(field)) for field in zip(*data))
    arrays = [d.asnumpy() if _is_ndarray(d) else np.asarray(d) for d in data]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(
            f"DataLoader cannot stack {len(arrays)} samples of different shapes "
            f"{sorted(shapes)[:4]} into one batch. Give them the same shape first (e.g. "
            f"dataset.transform_first(transforms.Resize(28))) or pass your own batchify_fn.")
    return np.stack(arrays)


def to_ndarray(batch):
    """Wrap a NumPy batch (or a tuple of them) as NDArray(s), keeping each dtype
    (mx.np.ndarrays under npx.set_np(), as in MXNet)."""
    from ... import ndarray as nd  # lazy: the core imports gluon, gluon imports data
    from ...util import is_np_array
    if isinstance(batch, tuple):
        return tuple(to_ndarray(b) for b in batch)
    array = nd.array(batch, dtype=batch.dtype)
    return array.as_np_ndarray() if is_np_array() else array     # MXNet 2.0 style: np


def _relabel(batch, context):
    """The same batch (NDArrays or np ndarrays, possibly in tuples/lists) labelled with
    `context`."""
    from ...ndarray import NDArray
    if isinstance(batch, (tuple, list)):
        return type(batch)(_relabel(b, context) for b in batch)
    return type(batch)(batch._data, context) if isinstance(batch, NDArray) else batch


def default_batchify_fn(data):
    """Stack a list of samples into NDArray batch(es): ``to_ndarray(stack_samples(data))``."""
    return to_ndarray(stack_samples(data))


class DataLoader:
    """Load batches from a ``dataset``.

    Parameters (as in MXNet Gluon)
    ------------------------------
    batch_size : int
        Samples per batch. Required unless ``batch_sampler`` is given.
    shuffle : bool
        Visit samples in a new random order every epoch (``numpy.random``).
    sampler : Sampler, optional
        Custom order of indices; excludes ``shuffle``.
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with an incomplete last batch (see :class:`BatchSampler`). Default 'keep'.
    batch_sampler : Sampler, optional
        Yields lists of indices; excludes ``batch_size``, ``shuffle``, ``sampler``, ``last_batch``.
    batchify_fn : callable, optional
        Turns a list of samples into a batch. Default: stack into NDArrays, keeping dtypes.
    num_workers : int
        0 loads in the calling thread; ``n > 0`` uses ``n`` worker threads (same batches).
    prefetch : int, optional
        Batches kept in flight with workers (default ``2 * num_workers``).
    timeout : float
        Seconds to wait for one batch from a worker before raising.
    pin_memory, pin_device_id
        Batches are labelled ``cpu_pinned(pin_device_id)`` as in MXNet; the memory is the
        same ordinary memory (there is no GPU to copy to).
    auto_reload : bool
        With workers: start loading the next epoch's first batches as soon as one epoch
        ends (and at construction), so the next ``for`` loop does not wait for them.
    thread_pool
        Accepted for MXNet compatibility; workers are always threads here.

    >>> loader = DataLoader(dataset, batch_size=64, shuffle=True)
    >>> for X, y in loader:   # X, y are NDArrays
    ...     pass
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=True, timeout=120, auto_reload=False):
        if not (hasattr(dataset, '__getitem__') and hasattr(dataset, '__len__')):
            raise TypeError(f"DataLoader needs a dataset with __getitem__ and __len__, "
                            f"got {type(dataset).__name__}")
        self._dataset = dataset

        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("DataLoader: batch_size must be given when batch_sampler "
                                 "is not (e.g. DataLoader(dataset, batch_size=64))")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle \
                    else SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("DataLoader: shuffle=True cannot be combined with a sampler; "
                                 "use sampler=RandomSampler(len(dataset)) instead")
            batch_sampler = BatchSampler(sampler, batch_size,
                                         last_batch if last_batch is not None else 'keep')
        elif batch_size is not None or shuffle or sampler is not None \
                or last_batch is not None:
            raise ValueError("DataLoader: batch_size, shuffle, sampler and last_batch must "
                             "not be given together with batch_sampler (it already decides "
                             "all of them)")
        self._batch_sampler = batch_sampler

        if int(num_workers) != num_workers or num_workers < 0:
            raise ValueError(f"num_workers must be an integer >= 0, got {num_workers!r}")
        self._num_workers = int(num_workers)
        self._prefetch = 2 * self._num_workers if prefetch is None else max(0, int(prefetch))
        self._timeout = timeout

        # The default batchify is split in two: stacking (NumPy, may run in a worker) and
        # wrapping as NDArray (cheap, always in the calling thread, next to autograd).
        if batchify_fn is None:
            self._batchify_fn, self._finish = stack_samples, to_ndarray
        else:
            self._batchify_fn, self._finish = batchify_fn, (lambda batch: batch)
        if pin_memory:
            from ...context import cpu_pinned
            unpinned, pinned = self._finish, cpu_pinned(pin_device_id)
            self._finish = lambda batch: _relabel(unpinned(batch), pinned)

        self._auto_reload = bool(auto_reload)
        self._next_epoch = None        # (pool, batches, pending): an epoch already started
        if self._auto_reload and self._num_workers:
            self._next_epoch = self._start_epoch()

    def _load(self, indices):
        """Read and batchify the samples at ``indices`` (runs in a worker when there are any)."""
        return self._batchify_fn([self._dataset[i] for i in indices])

    def __iter__(self):
        if self._num_workers == 0:
            for indices in self._batch_sampler:
                yield self._finish(self._load(indices))
            return
        yield from self._iter_workers()

    def _start_epoch(self):
        """Hand the first batches of an epoch to new workers: (pool, batches, pending)."""
        window = max(self._num_workers, self._prefetch, 1)
        pool = _Workers(self._num_workers)
        batches = iter(self._batch_sampler)
        pending = [pool.submit(self._load, indices)
                   for indices in itertools.islice(batches, window)]
        return pool, batches, pending

    def _iter_workers(self):
        # Keep a window of batches in flight; always wait for the *oldest* one, so batches
        # come out in sampler order no matter which worker finishes first.
        started, self._next_epoch = self._next_epoch, None
        pool, batches, pending = started or self._start_epoch()
        try:
            while pending:
                batch = self._wait(pending.pop(0))
                indices = next(batches, None)
                if indices is not None:
                    pending.append(pool.submit(self._load, indices))
                yield self._finish(batch)
        finally:
            # Also runs when the loop is left early (break, timeout): drop queued work and
            # let the workers go without waiting for them.
            pool.stop(pending)
        if self._auto_reload and self._next_epoch is None:
            self._next_epoch = self._start_epoch()

    def __del__(self):
        started = getattr(self, "_next_epoch", None)
        if started is not None:                # a prefetched epoch nobody will read
            started[0].stop(started[2])

    def _wait(self, future):
        try:
            return future.result(timeout=self._timeout)
        except TimeoutError:
            raise TimeoutError(f"DataLoader worker took more than {self._timeout} s to load "
                               f"one batch; is dataset[i] or a transform stuck? (The stuck "
                               f"worker thread is abandoned.)") from None

    def __len__(self):
        return len(self._batch_sampler)

    def __repr__(self):
        return (f"<DataLoader: {len(self)} batches from {len(self._dataset)} samples, "
                f"num_workers={self._num_workers}>")


class _Workers:
    """A pool of daemon worker threads: `submit(fn, arg)` gives a Future. Unlike
    ThreadPoolExecutor, whose threads are joined at exit, a worker stuck forever never
    blocks `stop()` or the end of the process."""

    def __init__(self, n):
        self._jobs, self._n = queue.SimpleQueue(), n
        for k in range(n):
            threading.Thread(target=self._work, name=f"DataLoader-{k}", daemon=True).start()

    def submit(self, fn, arg):
        future = Future()
        self._jobs.put((future, fn, arg))
        return future

    def _work(self):
        while (job := self._jobs.get()) is not None:
            future, fn, arg = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(arg))
                except BaseException as err:        # handed to the caller by result()
                    future.set_exception(err)

    def stop(self, pending):
        for future in pending:
            future.cancel()
        for _ in range(self._n):
            self._jobs.put(None)
