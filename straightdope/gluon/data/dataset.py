"""Datasets: anything with ``__getitem__`` and ``__len__``.

A dataset answers one question: "what is sample ``i``?". It does not batch, shuffle or
convert to NDArray; that is the :class:`~straightdope.gluon.data.DataLoader`'s job. Samples here
are usually NumPy arrays or tuples ``(data, label)``; the DataLoader turns whole batches into
NDArrays at once, which is much cheaper than wrapping every sample.

Transforms are *lazy* by default: ``dataset.transform(fn)`` returns a view that calls ``fn``
each time a sample is read, so a random augmentation gives a fresh result every epoch.
"""

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset']


class Dataset:
    """Abstract dataset: subclasses implement ``__getitem__(idx)`` and ``__len__()``."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def transform(self, fn, lazy=True):
        """Return a dataset whose samples are ``fn(*sample)`` (or ``fn(sample)``).

        If a sample is a tuple ``(x, y)``, ``fn`` receives two arguments. With ``lazy=False``
        every sample is transformed once, now, and kept in memory (deterministic transforms only).
        """
        view = _LazyTransformDataset(self, fn)
        if lazy:
            return view
        return SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn, lazy=True):
        """Transform only the first element of each sample (the data, not the label).

        ``mnist.transform_first(ToTensor())`` is the usual way to turn images into tensors
        while leaving labels alone.
        """
        return self.transform(_TransformFirstClosure(fn), lazy)

    def take(self, count):
        """The first ``count`` samples (all of them if ``count`` is None): handy for quick runs."""
        if count is None or count >= len(self):
            return self
        return _SubsetDataset(self, range(count))

    def shard(self, num_shards, index):
        """Part ``index`` of ``num_shards`` contiguous parts (one per worker); the first
        ``len % num_shards`` parts hold one sample more."""
        if not 0 <= index < num_shards:
            raise ValueError(f"shard: index must be in 0..{num_shards - 1}, got {index}")
        size, rest = divmod(len(self), num_shards)
        start = index * size + min(index, rest)
        return _SubsetDataset(self, range(start, start + size + (index < rest)))

    def filter(self, fn):
        """Keep the samples for which ``fn(sample)`` is true (reads every sample once, now)."""
        keep = [i for i in range(len(self)) if fn(self[i])]
        return _SubsetDataset(self, keep)

    def __repr__(self):
        return f"<{type(self).__name__}: {len(self)} samples>"


class SimpleDataset(Dataset):
    """Wrap anything indexable with a length (a list, a NumPy array...) as a Dataset."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """Zip several arrays of the same length: sample ``i`` is ``(a[i], b[i], ...)``.

    Accepts NumPy arrays, NDArrays, lists, or any Dataset. With a single array, a sample is
    that array's row (not a 1-tuple), as in MXNet.

    >>> ds = ArrayDataset(np.zeros((10, 3)), np.arange(10))
    >>> x, y = ds[4]
    """

    def __init__(self, *args):
        if not args:
            raise ValueError("ArrayDataset needs at least one array, e.g. ArrayDataset(X, y)")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                lengths = ', '.join(f"#{j}: {len(a)}" for j, a in enumerate(args))
                raise ValueError(
                    f"ArrayDataset: all arrays must have the same length (number of samples "
                    f"along the first axis), but got {lengths}. Array #{i} does not match "
                    f"array #0; check that data and labels come from the same split.")
            # Like MXNet: a 1-D NDArray (typically labels) is read as NumPy, so that a sample's
            # label is a cheap NumPy scalar instead of a tiny NDArray.
            if hasattr(data, 'asnumpy') and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __len__(self):
        return self._length

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)


class _LazyTransformDataset(Dataset):
    """The view returned by ``Dataset.transform``: applies ``fn`` at read time."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """``fn`` applied to the first element only. A class (not a lambda) so it can be pickled."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SubsetDataset(Dataset):
    """Samples ``indices`` of another dataset, in that order."""

    def __init__(self, data, indices):
        self._data = data
        self._indices = list(indices)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[idx]]
