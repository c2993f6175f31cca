"""Samplers decide the *order* in which sample indices are visited, and how they are grouped.

A sampler is just an iterable of indices with a length. The DataLoader never looks at the
data to decide the order, so the same sampler gives the same batches however the samples are
later loaded (serially or by worker threads).

Shuffling uses NumPy's global random generator, so ``np.random.seed(0)`` or
``straightdope.random.seed(0)`` makes the order reproducible.
"""
import numpy as np

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'BatchSampler']

_LAST_BATCH_MODES = ('keep', 'discard', 'rollover')


class Sampler:
    """Base class: an iterable over sample indices (or over batches of them)."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start+1, ..., start+length-1``: the order used for evaluation."""

    def __init__(self, length, start=0):
        self._length = int(length)
        self._start = int(start)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of ``0..length-1`` at the start of every epoch."""

    def __init__(self, length):
        self._length = int(length)

    def __iter__(self):
        # Drawn when iteration starts (not in __init__), so each epoch gets a new order.
        return iter(np.random.permutation(self._length).tolist())

    def __len__(self):
        return self._length


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    ``last_batch`` says what to do when the epoch does not divide evenly:

    * ``'keep'``: yield the smaller last batch;
    * ``'discard'``: drop it (every batch has exactly ``batch_size`` samples);
    * ``'rollover'``: keep the leftover indices and put them at the *front of the next epoch*,
      so no sample is lost and every batch is full.

    >>> list(BatchSampler(SequentialSampler(5), 2, 'keep'))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, last_batch='keep'):
        if int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if last_batch not in _LAST_BATCH_MODES:
            raise ValueError(f"last_batch must be one of {_LAST_BATCH_MODES}, "
                             f"got {last_batch!r}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []  # indices rolled over from the previous epoch ('rollover' only)

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == 'keep':
                yield batch
            elif self._last_batch == 'rollover':
                self._prev = batch
            # 'discard': simply drop it

    def __len__(self):
        n, b = len(self._sampler), self._batch_size
        if self._last_batch == 'keep':
            return (n + b - 1) // b
        if self._last_batch == 'discard':
            return n // b
        return (len(self._prev) + n) // b  # 'rollover': depends on what was carried over
