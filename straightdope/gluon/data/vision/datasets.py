"""Image datasets read from local files. Nothing is ever downloaded.

* :class:`MNIST` / :class:`FashionMNIST` read the standard IDX files from a folder you fill.
* :class:`Digits` needs no files at all: it upsamples scikit-learn's 1797 handwritten 8x8
  digits to MNIST's format, so every chapter of the book runs offline.

All of them give samples ``(image, label)``: the image is a NumPy uint8 array of shape
``(28, 28, 1)`` (HWC, like MXNet's MNIST) and the label a NumPy int32. The DataLoader turns
batches of them into NDArrays.
"""
import gzip
import os
import zlib

import numpy as np

from ..dataset import Dataset
from .transforms import resize

__all__ = ['MNIST', 'FashionMNIST', 'Digits', 'read_idx']

# IDX format: 2 zero bytes, one byte for the element type, one byte for the number of
# dimensions, then each dimension as a big-endian int32, then the data (big-endian).
_IDX_DTYPES = {0x08: np.dtype('u1'), 0x09: np.dtype('i1'), 0x0B: np.dtype('>i2'),
               0x0C: np.dtype('>i4'), 0x0D: np.dtype('>f4'), 0x0E: np.dtype('>f8')}
IMAGES_MAGIC = 0x00000803   # 2051: unsigned bytes, 3 dimensions (count, rows, cols)
LABELS_MAGIC = 0x00000801   # 2049: unsigned bytes, 1 dimension (count)


def _read_bytes(path):
    opener = gzip.open if path.endswith('.gz') else open
    try:
        with opener(path, 'rb') as f:
            return f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot be read as a {'gzip' if opener is gzip.open else ''}"
                         f" file ({e}); it is probably truncated or corrupt, copy it again"
                         ) from None


def read_idx(path, expected_magic=None):
    """Read one IDX file (raw or ``.gz``) into a NumPy array.

    ``expected_magic`` (e.g. 2051 for images, 2049 for labels) guards against swapped or
    foreign files. Errors name the file and say what was expected and what was found.
    """
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(f"{path}: truncated IDX file, only {len(raw)} bytes (the header alone "
                         f"needs at least 4)")
    magic = int.from_bytes(raw[:4], 'big')
    if expected_magic is not None and magic != expected_magic:
        raise ValueError(f"{path}: wrong magic number: expected {expected_magic} "
                         f"(0x{expected_magic:08x}), found {magic} (0x{magic:08x}). Is this "
                         f"the right file (images vs labels), and not an HTML page or a "
                         f"still-compressed file?")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file: header bytes {raw[:4].hex()} should be "
                         f"00 00 <type> <ndim> with type one of "
                         f"{[hex(k) for k in _IDX_DTYPES]}")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX file: header needs {header} bytes for "
                         f"{ndim} dimensions, found {len(raw)}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], 'big') for i in range(ndim))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(raw) - header
    if found != expected:
        what = "truncated" if found < expected else "too long"
        raise ValueError(f"{path}: {what} IDX file: header says shape {shape} = {expected} "
                         f"bytes of data, found {found} bytes. Copy the file again.")
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder('='))  # native byte order, and a writable copy


class _ImageDataset(Dataset):
    """Images and labels held in memory; ``transform(image, label)`` is applied on read."""

    def __init__(self, transform=None):
        self._transform = transform
        self._data, self._label = self._get_data()

    def _get_data(self):
        raise NotImplementedError

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class MNIST(_ImageDataset):
    """The MNIST handwritten digits, read from local IDX files.

    ``root`` must hold ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte`` (training)
    and/or ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (test), each raw or with
    ``.gz``. ``transform(image, label) -> (image, label)`` is applied on every read.
    Images: uint8 ``(28, 28, 1)``; labels: int32.
    """

    _name = 'MNIST'
    _source = 'http://yann.lecun.com/exdb/mnist/'
    _files = {True: ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
              False: ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte')}

    def __init__(self, root='~/.straightdope/datasets/mnist', train=True, transform=None):
        self._root = os.path.expanduser(root)
        self._train = train
        super().__init__(transform)

    def _find(self, name):
        """The path of ``name`` or ``name.gz`` in root (uncompressed preferred), or None."""
        for candidate in (name, name + '.gz'):
            path = os.path.join(self._root, candidate)
            if os.path.isfile(path):
                return path
        return None

    def _get_data(self):
        names = self._files[bool(self._train)]
        paths = [self._find(n) for n in names]
        missing = [n for n, p in zip(names, paths) if p is None]
        if missing:
            split = 'training' if self._train else 'test'
            raise FileNotFoundError(
                f"{self._name} {split} set not found: missing "
                f"{' and '.join(repr(n) for n in missing)} (raw or .gz) in {self._root!r}. "
                f"straightdope never downloads data. Copy the files (from {self._source}) "
                f"into that folder or pass root='folder/with/the/files'. No files at hand? "
                f"vision.Digits() is a small MNIST-like data set that works offline.")
        images = read_idx(paths[0], IMAGES_MAGIC)
        labels = read_idx(paths[1], LABELS_MAGIC)
        if len(images) != len(labels):
            raise ValueError(f"{self._name}: {paths[0]} holds {len(images)} images but "
                             f"{paths[1]} holds {len(labels)} labels; the files do not belong "
                             f"together")
        return images[..., None], labels.astype(np.int32)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: same file names and format as MNIST, 10 kinds of clothing."""

    _name = 'FashionMNIST'
    _source = 'https://github.com/zalandoresearch/fashion-mnist'

    def __init__(self, root='~/.straightdope/datasets/fashion-mnist', train=True,
                 transform=None):
        super().__init__(root, train, transform)


def _load_sklearn_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError("vision.Digits needs scikit-learn, which ships the 8x8 digit "
                          "images: pip install scikit-learn") from None
    bunch = load_digits()
    return bunch.images, bunch.target


_DIGITS_CACHE = {}


def _digits_arrays(size):
    """All 1797 digits as uint8 (N, size, size, 1) and int32 labels, computed once per size."""
    if size not in _DIGITS_CACHE:
        images, labels = _load_sklearn_digits()
        # scikit-learn stores intensities 0..16 as floats; MNIST uses 0..255 bytes.
        images = (images[..., None] * (255.0 / 16.0)).astype(np.float32)
        images = resize(images, size, size)
        images = np.clip(np.rint(images), 0, 255).astype(np.uint8)
        _DIGITS_CACHE[size] = (images, labels.astype(np.int32))
    return _DIGITS_CACHE[size]


def digits_split(labels, test_fraction, seed):
    """Deterministic stratified split: the same fraction of every class goes to the test set.

    Returns (train_indices, test_indices), each sorted, so the split depends only on
    ``seed`` and ``test_fraction``, never on the global random state.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction!r}")
    rng = np.random.RandomState(seed)
    train, test = [], []
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_test = int(round(test_fraction * len(idx)))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


class Digits(_ImageDataset):
    """An offline MNIST look-alike: scikit-learn's handwritten digits, upsampled.

    The 1797 grey 8x8 images are resized bilinearly to ``size x size``, scaled to 0..255 and
    shaped ``(size, size, 1)`` uint8 like MNIST; labels are int32 0..9. ``test_fraction`` of
    every class (chosen with ``seed``) forms the test set, so train and test never overlap
    and are the same on every machine. ``transform(image, label)`` is applied on read.

    >>> train, test = Digits(train=True), Digits(train=False)
    >>> len(train), len(test)
    (1347, 450)
    """

    def __init__(self, train=True, size=28, test_fraction=0.25, seed=0, transform=None):
        self._train = train
        self._size = int(size)
        self._test_fraction = test_fraction
        self._seed = seed
        super().__init__(transform)

    def _get_data(self):
        images, labels = _digits_arrays(self._size)
        train_idx, test_idx = digits_split(labels, self._test_fraction, self._seed)
        idx = train_idx if self._train else test_idx
        return images[idx], labels[idx]
