"""Writing files safely: atomic writes (a temporary file renamed into place), locks
between processes, and the error a file that cannot be read back raises. Below every
format (serialization.py's .npz, mxnet_format.py's MXNet binary files, the compile cache).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile

from .base import MXNetError


class ArrayFileError(MXNetError, ValueError):
    """A parameter/array file that cannot be read back: name the file and the fix.
    (An MXNetError, as MXNet raises, and a ValueError.)"""


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1], 8) for ln in f if ln.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        mask = os.umask(0o022)      # the only portable way to read it is to set it
        os.umask(mask)
        return mask


def _remove_stale_temporaries(folder: str, name: str) -> None:
    """Delete `.tmp-<pid>-...-<name>` files of writers that no longer run (killed mid-save)."""
    pattern = re.compile(r"\.tmp-(\d+)-[^-]{6,}-" + re.escape(name) + r"\Z")
    for entry in os.scandir(folder):
        match = pattern.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
        except OSError:
            pass                    # alive (or not ours to signal): leave it


@contextlib.contextmanager
def exclusive_lock(path):
    """Hold an exclusive lock on the file `path` (created 0600) between processes.

    A file system without locks (some network and FUSE mounts answer ENOLCK or
    EOPNOTSUPP) gets no lock rather than an error: callers use it so that two processes
    take turns, and their writes are atomic renames either way."""
    import fcntl
    lock = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as err:
            if err.errno not in _NO_LOCKS:
                raise
        yield
    finally:
        os.close(lock)                       # closing releases the lock


_NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def atomic_write(path: str, write, mode: int | None = None) -> None:
    """Call write(fileobj) on a temporary file, then rename it to `path`.

    The file gets `mode`, else the mode a plain open() would give (0666 minus the
    umask), or keeps the mode of the file it replaces."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    _remove_stale_temporaries(folder, name)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-", suffix=f"-{name}", dir=folder)
    try:
        if mode is None:
            try:
                mode = os.stat(path).st_mode & 0o7777
            except OSError:
                mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
