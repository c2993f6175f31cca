"""Saving arrays safely: NumPy's .npz container, never pickle, always atomic.

A file is written to a temporary name beside its target and renamed into place,
so a crash mid-write leaves the old file (or none), never half of a new one; the
temporary files a killed process left behind are removed by the next save.

Loading reads every member's `.npy` header first (name, shape, dtype) and checks
them before any data is decompressed: no pickled objects, no member twice, no
more than `max_load_bytes()` in all, and (`read_headers` + `StoredArray`) shapes
that fit the network. So a file can only ever give back the numbers it declares.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

from .files import ArrayFileError, atomic_write, exclusive_lock  # noqa: F401  (their old home)

ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")     # a zip with members / an empty zip
MXNET_MAGIC = b"\x12\x01\x00\x00"
from .config import DEFAULT_MAX_LOAD_BYTES  # noqa: F401  (16 GiB, see config.py)


def save_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
    for name, value in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"array names must be strings, got {name!r}")
        if np.asarray(value).dtype == object:
            raise TypeError(f"{name}: only numeric arrays can be saved")
    atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


# ------------------------------------------------------------------- reading
def max_load_bytes() -> int:
    """The most array data one file may declare ($STRAIGHTDOPE_MAX_LOAD_BYTES, 16 GiB)."""
    from . import config
    return config.max_load_bytes()


class StoredArray:
    """One array of a file, known by its header (`shape`, `dtype`); `read()` (or
    np.asarray) decompresses it, checking that it still is what the header said."""

    def __init__(self, path, member, shape, fortran, dtype):
        self.path, self.member = path, member
        self.shape, self.fortran, self.dtype = shape, fortran, dtype

    def read(self) -> np.ndarray:
        with _open_zip(self.path) as zf, zf.open(self.member) as f:
            if _read_header(self.path, self.member, f) != (self.shape, self.fortran,
                                                           self.dtype):
                raise ArrayFileError(f"{self.path}: changed while it was being read")
            buffer = bytearray(int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize)
            if f.readinto(buffer) != len(buffer):
                raise ArrayFileError(f"{self.path}: member {self.member!r} is truncated")
        data = np.frombuffer(buffer, self.dtype).reshape(self.shape,
                                                        order="F" if self.fortran else "C")
        # big-endian files (written on another machine) give the same numbers, native order
        return data if data.dtype.isnative else data.astype(data.dtype.newbyteorder("="))

    def __array__(self, dtype=None, copy=None):
        data = self.read()
        return data if dtype is None else data.astype(dtype)

    def __repr__(self):
        return f"<StoredArray {self.member} {self.shape} {self.dtype}>"


def _open_zip(path):
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise ArrayFileError(f"{path}: not a readable straightdope array file (.npz "
                             f"container): {err}. The file may be truncated or not "
                             f"written by save_parameters/export/nd.save.") from None


def _read_header(path, member, f):
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except ValueError as err:
        raise ArrayFileError(f"{path}: member {member!r} is not a readable .npy array: "
                             f"{err}") from None
    if dtype.hasobject:
        raise ArrayFileError(f"{path}: refused to load it: member {member!r} holds Python "
                             f"objects (files holding pickled Python objects are never "
                             f"loaded)")
    return tuple(shape), fortran, dtype


def read_headers(path) -> dict[str, StoredArray]:
    """Name -> StoredArray for every member, reading headers only (no array data).
    (An MXNet binary file gives its arrays, read and checked by `mxnet_format`.)"""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == MXNET_MAGIC:        # MXNet's own binary format (its list magic 0x112)
        from .mxnet_format import load_dict
        return load_dict(path)      # its reader checks every header against the bytes left
    if magic not in ZIP_MAGICS:      # every .npz is a zip archive
        raise ArrayFileError(f"{path}: not a straightdope array file (an .npz zip archive "
                             f"starts with PK, this file starts with {magic!r}). Was it "
                             f"written by save_parameters/export/nd.save?")
    stored, total = {}, 0
    with _open_zip(path) as zf:
        for info in zf.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name in stored:
                raise ArrayFileError(f"{path}: holds two arrays named {name!r}; a file "
                                     f"written by save_parameters/nd.save never does. "
                                     f"Refusing to guess which one is meant.")
            with zf.open(info) as f:
                shape, fortran, dtype = _read_header(path, info.filename, f)
                header_bytes = f.tell()
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if info.file_size != header_bytes + nbytes:
                raise ArrayFileError(f"{path}: member {info.filename!r} declares shape "
                                     f"{shape} {dtype.name} ({nbytes:,} bytes) but holds "
                                     f"{info.file_size - header_bytes:,} bytes of data")
            total += nbytes
            if total > max_load_bytes():
                raise ArrayFileError(
                    f"{path}: declares more than {max_load_bytes():,} bytes of arrays "
                    f"(refused before reading any; set STRAIGHTDOPE_MAX_LOAD_BYTES to allow "
                    f"bigger files you trust)")
            stored[name] = StoredArray(path, info.filename, shape, fortran, dtype)
    return stored


def load_arrays(path: str) -> dict[str, np.ndarray]:
    """Every array of the file, after `read_headers` checked them all."""
    return {name: stored.read() if isinstance(stored, StoredArray) else stored
            for name, stored in read_headers(path).items()}
