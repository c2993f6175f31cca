"""MXNet's own binary NDArray file: the `.params` that MXNet's save_parameters, export and
nd.save write. Read and written here byte for byte, so checkpoints move both ways.

The layout (little-endian), from apache/mxnet 1.9.1 `src/ndarray/ndarray.cc`
(`NDArray::Save(dmlc::Stream*, data, names)` and `NDArray::Save(dmlc::Stream*)`):

    u64 0x112 (kMXAPINDArrayListMagic)   u64 0 (reserved)
    u64 number of arrays, then each array:
        u32 magic   0xF993FAC9 (V2) | 0xF993FACA (V3, NumPy shapes) | 0xF993FAC8 (V1)
        i32 storage type (0 = dense; sparse arrays are not supported here)
        i32 ndim, then ndim x i64 dims        (TShape::Save, include/mxnet/tuple.h)
        i32 device type, i32 device id        (Context::Save, include/mxnet/base.h)
        i32 type flag (mshadow TypeFlag: 0 float32, 1 float64, 2 float16, 3 uint8, ...)
        the values, C order
    u64 number of names (0 for a list), then each: u64 length, UTF-8 bytes

Reading trusts nothing: the file is read once (its own size bounds everything), every
count and shape is checked against the bytes left before anything is allocated, and
values are only ever numbers (nothing is unpickled or evaluated).
"""
from __future__ import annotations

import math
import os
import struct

import numpy as np

from .files import ArrayFileError, atomic_write

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DENSE, CPU = 0, 1
MAX_NDIM = 32
# mshadow's TypeFlag (3rdparty/mshadow/mshadow/base.h), the dtypes NumPy has.
DTYPES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
          6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64"}
TYPE_FLAGS = {np.dtype(name): flag for flag, name in DTYPES.items()}
FILE_START = struct.pack("<QQ", LIST_MAGIC, 0)


class MXNetFileError(ArrayFileError):
    """A file that is not a readable MXNet NDArray file."""


def is_mxnet_file(path) -> bool:
    """True if the file starts like an MXNet NDArray list file."""
    with open(path, "rb") as f:
        return f.read(16)[:8] == FILE_START[:8]


class _Cursor:
    """Reads fixed-size fields from bytes, failing clearly when the file is too short."""

    def __init__(self, data: bytes, source: str):
        self.data, self.pos, self.source = data, 0, source

    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, why):
        raise MXNetFileError(f"{self.source}: {why} (at byte {self.pos}). Is it an MXNet "
                             f".params/nd.save file, and complete?")

    def take(self, n: int, what: str) -> bytes:
        if n > self.left():
            self.fail(f"{what} needs {n} bytes but only {self.left()} are left")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str):
        values = struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))
        return values if len(values) > 1 else values[0]


def _read_array(c: _Cursor, k: int) -> np.ndarray:
    where = f"array {k}"
    magic = c.unpack("I", f"{where}: magic number")
    if magic in (V2_MAGIC, V3_MAGIC):
        stype = c.unpack("i", f"{where}: storage type")
        if stype != DENSE:
            c.fail(f"{where} is a sparse array (storage type {stype}); only dense arrays "
                   f"are supported: convert it with tostype('default') in MXNet")
    if magic == V1_MAGIC or magic in (V2_MAGIC, V3_MAGIC):
        ndim = c.unpack("i", f"{where}: ndim")
        if ndim == -1 and magic == V3_MAGIC or ndim == 0 and magic != V3_MAGIC:
            c.fail(f"{where} is an empty (none) NDArray, which holds no values")
        if not 0 <= ndim <= MAX_NDIM:
            c.fail(f"{where}: ndim {ndim} is not between 0 and {MAX_NDIM}")
        shape = c.unpack(f"{ndim}q", f"{where}: shape") if ndim else ()
    elif 0 < magic <= MAX_NDIM:     # the oldest layout: no magic, ndim then u32 dims
        shape = c.unpack(f"{magic}I", f"{where}: shape")
    else:
        c.fail(f"{where}: unknown array magic number {magic:#x}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(d < 0 for d in shape):
        c.fail(f"{where}: negative dims in shape {shape}")
    dev_type, _dev_id = c.unpack("ii", f"{where}: context")
    if dev_type not in (1, 2, 3, 5):
        c.fail(f"{where}: unknown device type {dev_type}")
    flag = c.unpack("i", f"{where}: type flag")
    if flag not in DTYPES:
        c.fail(f"{where}: unknown type flag {flag} (known: {DTYPES})")
    dtype = np.dtype(DTYPES[flag]).newbyteorder("<")
    if math.prod(d for d in shape if d) * dtype.itemsize >= 2 ** 63:
        c.fail(f"{where}: shape {shape} is too big for any array (a damaged or hostile file)")
    nbytes = math.prod(shape) * dtype.itemsize
    raw = c.take(nbytes, f"{where}: values of shape {shape} ({DTYPES[flag]})")
    return np.frombuffer(raw, dtype=dtype).astype(DTYPES[flag]).reshape(shape)


def load(path) -> tuple[list[np.ndarray], list[str]]:
    """(arrays, names) from an MXNet NDArray file; names is [] for a list."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        c = _Cursor(f.read(), path)
    header, _reserved = c.unpack("QQ", "the header")
    if header != LIST_MAGIC:
        c.fail(f"not an MXNet NDArray file (header {header:#x}, expected {LIST_MAGIC:#x})")
    count = c.unpack("Q", "the number of arrays")
    smallest = 4 + 4 + 4 + 8 + 4                 # magic, stype, ndim, context, type flag
    if count * smallest > c.left():
        c.fail(f"the file announces {count} arrays, more than its {c.left()} bytes can hold")
    arrays = [_read_array(c, k) for k in range(count)]
    n_names = c.unpack("Q", "the number of names")
    if n_names not in (0, count):
        c.fail(f"{n_names} names for {count} arrays")
    names = []
    for k in range(n_names):
        length = c.unpack("Q", f"name {k}: length")
        try:
            names.append(c.take(length, f"name {k}").decode("utf-8"))
        except UnicodeDecodeError:
            c.fail(f"name {k} is not UTF-8 text")
    if c.left():
        c.fail(f"{c.left()} unexpected bytes after the last name")
    if len(set(names)) != len(names):
        c.fail("the same name appears twice")
    return arrays, names


def load_dict(path) -> dict[str, np.ndarray]:
    """{name: array}; an unnamed list gives keys 'list:000000', 'list:000001', ..."""
    arrays, names = load(path)
    names = names or [f"list:{k:06d}" for k in range(len(arrays))]
    return dict(zip(names, arrays))


def _array_bytes(array: np.ndarray, name: str, magic: int) -> bytes:
    array = np.asarray(array)
    flag = TYPE_FLAGS.get(array.dtype.newbyteorder("="))     # big-endian too: written as <
    if flag is None:
        raise TypeError(f"{name}: dtype {array.dtype} has no MXNet type flag; use one of "
                        f"{sorted(set(DTYPES.values()))}")
    head = struct.pack(f"<Iii{array.ndim}qiii", magic, DENSE, array.ndim, *array.shape,
                       CPU, 0, flag)
    return head + np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def encode(data, np_shape=None) -> bytes:
    """The bytes of an MXNet file holding a dict {name: array} or a list of arrays.

    np_shape=True writes every array as MXNet 1.9.1 does under ``mx.np_shape()`` (V3 magic;
    MXNet then loads the file only under np_shape too). None: when np_shape is on here, or
    an array is 0-d, which only that layout can hold (V2 reads ndim 0 as "no array")."""
    if isinstance(data, dict):
        names, arrays = list(data), [np.asarray(a) for a in data.values()]
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"array names must be strings, got {name!r}")
    else:
        names, arrays = [], [np.asarray(a) for a in data]
    if np_shape is None:
        from .util import is_np_shape
        np_shape = is_np_shape() or any(a.ndim == 0 for a in arrays)
    magic = V3_MAGIC if np_shape else V2_MAGIC
    if magic == V2_MAGIC and any(a.ndim == 0 for a in arrays):
        raise ValueError("MXNet's layout without NumPy shapes (np_shape=False) has no 0-d "
                         "arrays; pass np_shape=True (or None), or reshape them to (1,)")
    parts = [FILE_START, struct.pack("<Q", len(arrays))]
    for k, array in enumerate(arrays):
        parts.append(_array_bytes(array, names[k] if names else f"array {k}", magic))
    parts.append(struct.pack("<Q", len(names)))
    for name in names:
        raw = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(parts)


def save(path, data, np_shape=None) -> None:
    """Write a dict {name: array} or a list of arrays as MXNet does (atomically); np_shape
    as in `encode`."""
    blob = encode(data, np_shape)
    atomic_write(path, lambda f: f.write(blob))
