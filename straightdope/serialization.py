"""Saving arrays safely: NumPy's .npz container, never pickle, always atomic.

A file is written to a temporary name beside its target and renamed into place,
so a crash mid-write leaves the old file (or none), never half of a new one.
Loading refuses pickled objects, so a file can only ever give back numbers.
"""
from __future__ import annotations

import os
import tempfile
import zipfile

import numpy as np


class ArrayFileError(ValueError):
    """A parameter/array file that cannot be read back: name the file and the fix."""


def atomic_write(path: str, write) -> None:
    """Call write(fileobj) on a temporary file, then rename it to `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
    for name, value in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"array names must be strings, got {name!r}")
        if np.asarray(value).dtype == object:
            raise TypeError(f"{name}: only numeric arrays can be saved")
    atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


def load_arrays(path: str) -> dict[str, np.ndarray]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"\x12\x01\x00\x00":   # MXNet's own binary format (its list magic 0x112)
        from .mxnet_format import load_dict
        return load_dict(path)
    if magic != b"PK\x03\x04":      # every .npz is a zip archive
        raise ArrayFileError(f"{path}: not a straightdope array file (an .npz zip archive "
                             f"starts with PK, this file starts with {magic!r}). Was it "
                             f"written by save_parameters/export/nd.save?")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, KeyError) as err:
        raise ArrayFileError(f"{path}: not a readable straightdope array file (.npz "
                             f"container): {err}. The file may be truncated or not "
                             f"written by save_parameters/export/nd.save.") from None
    except ValueError as err:
        raise ArrayFileError(f"{path}: refused to load it: {err} (files holding pickled "
                             f"Python objects are never loaded)") from None
