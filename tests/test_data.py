"""Tests for straightdope.gluon.data: datasets, samplers, DataLoader, vision datasets, transforms."""
import collections
import gzip
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from straightdope.gluon import data as gdata
from straightdope.gluon.data import (ArrayDataset, BatchSampler, DataLoader, RandomSampler,
                                     SequentialSampler, SimpleDataset)
from straightdope.gluon.data.vision import transforms as T
from straightdope.gluon.data.vision import datasets as vd


def _np(x):
    return x.asnumpy() if hasattr(x, 'asnumpy') else np.asarray(x)


def _indices(loader):
    """The sample indices of every batch, for a loader over SimpleDataset(range(n))."""
    return [_np(b).astype(int).tolist() for b in loader]


# ---------------------------------------------------------------- datasets

def test_array_dataset_zips_and_checks_lengths():
    X, y = np.arange(12).reshape(6, 2), np.arange(6, dtype=np.int32)
    ds = ArrayDataset(X, y)
    assert len(ds) == 6
    x3, y3 = ds[3]
    assert x3.tolist() == [6, 7] and y3 == 3
    assert ArrayDataset(X)[2].tolist() == [4, 5]          # one array: no 1-tuple
    with pytest.raises(ValueError, match=r"same length.*#0: 6, #1: 5"):
        ArrayDataset(X, y[:5])
    with pytest.raises(ValueError, match="at least one"):
        ArrayDataset()


def test_array_dataset_accepts_ndarray():
    from straightdope import ndarray as nd
    ds = ArrayDataset(nd.array(np.ones((4, 3))), nd.array(np.arange(4)))
    x, y = ds[1]
    assert _np(x).shape == (3,) and float(y) == 1.0
    X, Y = next(iter(DataLoader(ds, batch_size=4)))
    assert X.shape == (4, 3) and Y.shape == (4,)


def test_transform_lazy_eager_and_first():
    calls = []

    def double(x, y):
        calls.append(1)
        return x * 2, y

    ds = ArrayDataset(np.arange(5.0), np.arange(5))
    lazy = ds.transform(double)
    assert len(calls) == 0 and lazy[2] == (4.0, 2)        # runs at read time
    eager = ds.transform(double, lazy=False)
    assert len(calls) == 6 and isinstance(eager, SimpleDataset) and eager[4] == (8.0, 4)
    first = ds.transform_first(lambda x: -x)
    assert first[3] == (-3.0, 3)
    assert SimpleDataset([1, 2, 3]).transform_first(lambda x: x + 1)[0] == 2
    assert len(SimpleDataset(list(range(10))).take(3)) == 3
    assert [s for s in SimpleDataset(list(range(6))).filter(lambda s: s % 2)] == [1, 3, 5]


# ---------------------------------------------------------------- samplers

def test_samplers():
    assert list(SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(SequentialSampler(3, start=5)) == [5, 6, 7]
    np.random.seed(1)
    a = list(RandomSampler(10))
    np.random.seed(1)
    assert list(RandomSampler(10)) == a and sorted(a) == list(range(10))
    assert list(BatchSampler(SequentialSampler(5), 2, 'keep')) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(SequentialSampler(5), 2, 'discard')) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="last_batch"):
        BatchSampler(SequentialSampler(5), 2, 'drop')
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(SequentialSampler(5), 0)


def test_rollover_carries_leftover_to_next_epoch():
    bs = BatchSampler(SequentialSampler(5), 2, 'rollover')
    assert len(bs) == 2
    assert list(bs) == [[0, 1], [2, 3]]                  # 4 is kept back...
    assert len(bs) == 3                                  # ...so next epoch has 1 + 5 = 6
    assert list(bs) == [[4, 0], [1, 2], [3, 4]]          # ...and comes first
    assert list(bs) == [[0, 1], [2, 3]]


# ---------------------------------------------------------------- DataLoader

@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), batch_size=st.integers(1, 12), shuffle=st.booleans(),
       last_batch=st.sampled_from(['keep', 'discard', 'rollover']),
       num_workers=st.sampled_from([0, 2]), seed=st.integers(0, 2**31 - 1))
def test_every_sample_once_per_epoch(n, batch_size, shuffle, last_batch, num_workers, seed):
    np.random.seed(seed)
    loader = DataLoader(SimpleDataset(list(range(n))), batch_size=batch_size, shuffle=shuffle,
                        last_batch=last_batch, num_workers=num_workers)
    epochs = 3
    seen = collections.Counter()
    for _ in range(epochs):
        expected_len = len(loader)
        batches = _indices(loader)
        assert len(batches) == expected_len
        if last_batch == 'keep':
            assert sorted(i for b in batches for i in b) == list(range(n))
            assert all(len(b) == batch_size for b in batches[:-1])
        else:
            assert all(len(b) == batch_size for b in batches)
        if last_batch == 'discard':
            assert len(batches) == n // batch_size
            flat = [i for b in batches for i in b]
            assert len(set(flat)) == len(flat)
        if not shuffle and last_batch != 'rollover':
            flat = [i for b in batches for i in b]
            assert flat == list(range(len(flat)))         # in order
        seen.update(i for b in batches for i in b)
    if last_batch == 'rollover':
        # Nothing lost: what was yielded plus what is still carried over = epochs x each index.
        seen.update(loader._batch_sampler._prev)
        assert seen == collections.Counter({i: epochs for i in range(n)})


def test_batchify_tuples_and_dtypes():
    X = np.random.rand(10, 3, 4).astype(np.float32)
    y = np.arange(10, dtype=np.int32)
    loader = DataLoader(ArrayDataset(X, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    xb, yb = batches[0]
    assert isinstance(batches[0], tuple)
    assert xb.shape == (4, 3, 4) and np.dtype(xb.dtype) == np.float32
    assert yb.shape == (4,) and np.dtype(yb.dtype) == np.int32      # labels keep their dtype
    np.testing.assert_array_equal(_np(xb), X[:4])
    assert batches[2][0].shape == (2, 3, 4)                          # last batch kept
    # uint8 images stay uint8 (as in MXNet); ToTensor makes float32.
    img = next(iter(DataLoader(vd.Digits(), batch_size=2)))[0]
    assert np.dtype(img.dtype) == np.uint8 and img.shape == (2, 28, 28, 1)


def test_stack_shape_mismatch_message():
    ds = SimpleDataset([np.zeros((2, 2)), np.zeros((3, 2))])
    with pytest.raises(ValueError, match=r"different shapes.*\(2, 2\).*\(3, 2\)"):
        list(DataLoader(ds, batch_size=2))


def test_custom_batchify_fn():
    loader = DataLoader(SimpleDataset(list(range(5))), batch_size=2, batchify_fn=sum)
    assert list(loader) == [1, 5, 4]
    assert list(DataLoader(SimpleDataset(list(range(5))), batch_size=2, batchify_fn=sum,
                           num_workers=2)) == [1, 5, 4]


def test_dataloader_argument_errors():
    ds = SimpleDataset(list(range(5)))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(ds, batch_size=2, shuffle=True, sampler=SequentialSampler(5))
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(ds, batch_size=2, batch_sampler=BatchSampler(SequentialSampler(5), 2))
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, batch_size=2, num_workers=-1)
    bs = BatchSampler(SequentialSampler(5), 3)
    assert _indices(DataLoader(ds, batch_sampler=bs)) == [[0, 1, 2], [3, 4]]


def test_workers_give_same_batches_as_serial():
    ds = vd.Digits(train=False).transform_first(T.Compose([T.ToTensor(), T.Normalize(0.1, 0.3)]))
    runs = []
    for workers in (0, 1, 3):
        np.random.seed(42)
        loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=workers)
        runs.append([(_np(X), _np(y)) for _ in range(2) for X, y in loader])
    for other in runs[1:]:
        assert len(other) == len(runs[0])
        for (xa, ya), (xb, yb) in zip(runs[0], other):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)


def test_workers_really_run_in_parallel():
    # Every read waits for a second reader: this only finishes if two loads overlap in time.
    barrier = threading.Barrier(2, timeout=10)
    threads = set()

    class Rendezvous(gdata.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            threads.add(threading.get_ident())
            barrier.wait()
            return np.float32(i)

    batches = _indices(DataLoader(Rendezvous(), batch_size=2, num_workers=2))
    assert batches == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_worker_errors_propagate_and_break_is_clean():
    class Broken(gdata.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 4:
                raise KeyError(f"sample {i} is broken")
            return np.float32(i)

    loader = DataLoader(Broken(), batch_size=2, num_workers=2)
    with pytest.raises(KeyError, match="sample 4"):
        list(loader)
    for i, _ in enumerate(DataLoader(SimpleDataset(list(range(100))), batch_size=1,
                                     num_workers=2)):
        if i == 3:
            break                              # leaving early must not hang


# ---------------------------------------------------------------- IDX files and MNIST

def write_idx(path, array, type_code=0x08):
    array = np.asarray(array)
    header = bytes([0, 0, type_code, array.ndim]) + b''.join(
        int(d).to_bytes(4, 'big') for d in array.shape)
    payload = header + array.astype(array.dtype.newbyteorder('>')).tobytes()
    opener = gzip.open if str(path).endswith('.gz') else open
    with opener(path, 'wb') as f:
        f.write(payload)
    return payload


def _fake_mnist(root, n=7, gz=False, split='train'):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, size=n).astype(np.uint8)
    ext = '.gz' if gz else ''
    write_idx(os.path.join(root, f'{split}-images-idx3-ubyte{ext}'), images)
    write_idx(os.path.join(root, f'{split}-labels-idx1-ubyte{ext}'), labels)
    return images, labels


@pytest.mark.parametrize('gz', [False, True])
def test_idx_round_trip(tmp_path, gz):
    ext = '.gz' if gz else ''
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5
    write_idx(tmp_path / f'a{ext}', a, 0x0C)
    got = vd.read_idx(str(tmp_path / f'a{ext}'))
    np.testing.assert_array_equal(got, a)
    assert got.dtype == np.int32 and got.dtype.isnative
    f = np.linspace(-1, 1, 6).astype(np.float32)
    write_idx(tmp_path / f'f{ext}', f, 0x0D)
    np.testing.assert_array_equal(vd.read_idx(str(tmp_path / f'f{ext}')), f)


@pytest.mark.parametrize('gz', [False, True])
@pytest.mark.parametrize('cls', [vd.MNIST, vd.FashionMNIST])
def test_mnist_reads_local_files(tmp_path, gz, cls):
    images, labels = _fake_mnist(tmp_path, gz=gz)
    _fake_mnist(tmp_path, n=3, gz=gz, split='t10k')
    ds = cls(root=str(tmp_path), train=True)
    assert len(ds) == 7
    img, lab = ds[2]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert lab.dtype == np.int32 and lab == labels[2]
    np.testing.assert_array_equal(img[:, :, 0], images[2])
    assert len(cls(root=str(tmp_path), train=False)) == 3
    flipped = cls(root=str(tmp_path), transform=lambda x, y: (255 - x, y + 1))
    assert flipped[2][1] == labels[2] + 1


def test_mnist_missing_files_message(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        vd.MNIST(root=str(tmp_path))
    msg = str(err.value)
    for needle in ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte', str(tmp_path),
                   'never downloads', 'Digits'):
        assert needle in msg
    _fake_mnist(tmp_path)
    os.remove(tmp_path / 'train-labels-idx1-ubyte')
    with pytest.raises(FileNotFoundError, match="missing 'train-labels-idx1-ubyte'") as err:
        vd.MNIST(root=str(tmp_path))
    assert 'train-images' not in str(err.value)
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        vd.MNIST(root=str(tmp_path), train=False)


@pytest.mark.parametrize('gz', [False, True])
def test_truncated_file_names_the_file(tmp_path, gz):
    _fake_mnist(tmp_path, gz=gz)
    name = 'train-images-idx3-ubyte' + ('.gz' if gz else '')
    path = tmp_path / name
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match=name) as err:
        vd.MNIST(root=str(tmp_path))
    assert 'truncated' in str(err.value) or 'corrupt' in str(err.value)
    if not gz:
        assert '5488 bytes of data' in str(err.value)            # expected 7*28*28


def test_truncated_header(tmp_path):
    (tmp_path / 'x').write_bytes(bytes([0, 0, 8, 3, 0, 0]))
    with pytest.raises(ValueError, match=r"x: truncated IDX file: header needs 16 bytes"):
        vd.read_idx(str(tmp_path / 'x'))
    (tmp_path / 'y').write_bytes(b'\0')
    with pytest.raises(ValueError, match="y: truncated"):
        vd.read_idx(str(tmp_path / 'y'))


def test_wrong_magic_names_file_expected_and_found(tmp_path):
    _fake_mnist(tmp_path)
    # Swap images and labels: the classic mistake.
    img, lab = tmp_path / 'train-images-idx3-ubyte', tmp_path / 'train-labels-idx1-ubyte'
    a, b = img.read_bytes(), lab.read_bytes()
    img.write_bytes(b)
    lab.write_bytes(a)
    with pytest.raises(ValueError) as err:
        vd.MNIST(root=str(tmp_path))
    msg = str(err.value)
    assert 'train-images-idx3-ubyte' in msg and 'expected 2051' in msg and 'found 2049' in msg
    img.write_bytes(b'<html>not found</html>')
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte: wrong magic"):
        vd.MNIST(root=str(tmp_path))


def test_mismatched_counts(tmp_path):
    _fake_mnist(tmp_path)
    write_idx(tmp_path / 'train-labels-idx1-ubyte', np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match="7 images but .* 5 labels"):
        vd.MNIST(root=str(tmp_path))


# ---------------------------------------------------------------- Digits

def test_digits_shapes_dtypes_and_split():
    train, test = vd.Digits(train=True), vd.Digits(train=False)
    assert (len(train), len(test)) == (1347, 450)
    img, label = train[0]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(label, np.int32) or label.dtype == np.int32
    assert img.max() > 200 and img.min() == 0
    # Deterministic, and independent of the global random state.
    np.random.seed(123)
    again = vd.Digits(train=True)
    np.testing.assert_array_equal(again._data, train._data)
    # Stratified: every class is in both parts, in about the same proportion.
    tr, te = np.bincount(train._label), np.bincount(test._label)
    assert len(tr) == len(te) == 10
    assert np.all(np.abs(te / (tr + te) - 0.25) < 0.02)
    # Train and test are disjoint, and together they are the whole set.
    tr_idx, te_idx = vd.digits_split(np.concatenate([train._label, test._label]), 0.25, 0)
    assert len(set(tr_idx) | set(te_idx)) == 1797
    small = vd.Digits(train=False, size=16, test_fraction=0.1, seed=3)
    assert small[0][0].shape == (16, 16, 1) and len(small) in range(175, 185)
    other = vd.Digits(train=False, seed=1)
    assert not np.array_equal(other._label, test._label)


def test_digits_train_test_disjoint():
    from sklearn.datasets import load_digits
    labels = load_digits().target
    tr, te = vd.digits_split(labels, 0.25, 0)
    assert not set(tr) & set(te) and len(tr) + len(te) == len(labels)


# ---------------------------------------------------------------- transforms

def test_to_tensor_and_normalize():
    img = np.arange(2 * 3 * 2, dtype=np.uint8).reshape(2, 3, 2) * 20
    t = T.ToTensor()(img)
    assert t.shape == (2, 2, 3) and t.dtype == np.float32
    np.testing.assert_allclose(t[1], img[:, :, 1] / 255.0, rtol=1e-6)
    assert T.ToTensor()(np.stack([img, img])).shape == (2, 2, 2, 3)      # NHWC -> NCHW
    n = T.Normalize(mean=(0.5, 0.25), std=(0.5, 2.0))(t)
    np.testing.assert_allclose(n[0], (t[0] - 0.5) / 0.5, rtol=1e-6)
    np.testing.assert_allclose(n[1], (t[1] - 0.25) / 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="3 values but the tensor has 2 channels"):
        T.Normalize((0.1, 0.2, 0.3), 1)(t)
    with pytest.raises(ValueError, match=r"channel axis"):
        T.ToTensor()(np.zeros((28, 28), np.uint8))


def test_resize():
    img = np.array([[0, 100], [200, 40]], np.uint8)[:, :, None]
    up = T.Resize(4)(img)
    assert up.shape == (4, 4, 1) and up.dtype == np.uint8
    # Half-pixel bilinear: corners copy the corner pixels, inner pixels are weighted means.
    assert up[0, 0, 0] == 0 and up[0, 3, 0] == 100 and up[3, 0, 0] == 200 and up[3, 3, 0] == 40
    assert up[0, 1, 0] == 25                                   # 0.75*0 + 0.25*100
    const = np.full((5, 7, 3), 77, np.uint8)
    assert np.all(T.Resize((3, 9))(const) == 77) and T.Resize((3, 9))(const).shape == (9, 3, 3)
    assert T.Resize(10, keep_ratio=True)(const).shape == (10, 14, 3)
    near = T.Resize(4, interpolation=0)(img)
    assert set(np.unique(near)) <= {0, 100, 200, 40}
    down = T.resize(np.arange(16, dtype=np.float32).reshape(4, 4, 1), 2, 2)
    np.testing.assert_allclose(down[:, :, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_compose_cast_and_ndarray_in_ndarray_out():
    from straightdope import ndarray as nd
    pipeline = T.Compose([T.Resize(8), T.ToTensor(), T.Normalize(0.5, 0.5), T.Cast('float64')])
    img = np.random.RandomState(0).randint(0, 256, (4, 4, 1)).astype(np.uint8)
    out = pipeline(img)
    assert out.shape == (1, 8, 8) and out.dtype == np.float64
    assert 'ToTensor()' in repr(pipeline)
    t = T.ToTensor()(nd.array(img, dtype='uint8'))
    assert hasattr(t, 'asnumpy') and t.shape == (1, 4, 4)
    np.testing.assert_allclose(t.asnumpy(), T.ToTensor()(img))


SIGINT_CHILD = """
import signal, sys, time
import numpy as np
# Ctrl-C as in a terminal: a test run in a background job (`make test &`, CI runners)
# inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
signal.signal(signal.SIGINT, signal.default_int_handler)
from straightdope.gluon.data import DataLoader, Dataset

class Busy(Dataset):          # each sample holds the GIL a while, as Python transforms do
    def __len__(self):
        return 4000
    def __getitem__(self, i):
        s = 0
        for k in range(20000):
            s += k
        return np.full((8, 8), i, np.float32)

n = 0
try:
    for batch in DataLoader(Busy(), batch_size=4, num_workers=4):
        n += 1
        if n == 10:
            print("ready", flush=True)
except KeyboardInterrupt:
    print("interrupted at batch", n, flush=True)
    sys.exit(3)
print("ran to the end:", n, flush=True)
"""


def test_ctrl_c_stops_a_dataloader_with_workers_in_the_middle_of_an_epoch():
    """Issue 28: SIGINT must reach the loop at once, not after the epoch."""
    import signal
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD], stdout=subprocess.PIPE,
                             text=True, cwd=root)
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        out = child.communicate(timeout=120)[0]
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, out
    assert int(out.split()[-1]) < 10 + 25, out          # of 1000 batches
