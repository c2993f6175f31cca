"""Where the compile cache lives, and which of its files may be loaded.

The half of the cache that knows folders and files (see cache.py for the other half,
the generated modules): the configured dir and whether it is used (`folders`), the
trust checks (`untrusted_reason`, `untrusted_inside`, `read_trusted`: a folder or file
others could write never holds code we run, as ssh checks `~/.ssh`), the folder Numba
keeps our functions' cache files in (`numba_folder`), a class's shared cache
(`seed_from_shared`) and atomic writes. `numba_internals` (which tells Numba these
folders) and cache.py both import it; it imports neither.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

from ..serialization import atomic_write, exclusive_lock
from . import fingerprint


def cache_dir() -> Path:
    """Where the cache is meant to be ($STRAIGHTDOPE_CACHE_DIR or ~/.cache/straightdope);
    `folders()` says whether it is used."""
    from .. import config
    return config.cache_dir()


class CacheDirWarning(UserWarning):
    """The cache dir cannot be (fully) used; compiled code is kept for this process only."""


def _not_yours_alone(path, st, owners=None) -> str | None:
    """Why the file or folder `path` (whose lstat is `st`) may hold what others wrote:
    it belongs to none of `owners` (default: you) or group or others may write it."""
    if st.st_uid not in (owners or (os.getuid(),)):
        return f"{path} belongs to user id {st.st_uid}, not to you ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def untrusted_reason(path: Path, owners=None) -> str | None:
    """Why `path` must not hold code we run, or None when it may: it must be a real
    directory owned by this user, and neither it nor a parent writable by others
    (a parent owned by root, or world-writable with the sticky bit like /tmp, is
    fine), as ssh requires of ~/.ssh. `owners`: the user ids that may own it (you)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory (a symbolic link or a file)"
    reason = _not_yours_alone(path, st, owners)
    if reason is not None:
        return reason
    for parent in path.resolve().parents:
        st = os.stat(parent)
        if st.st_uid not in (0, os.getuid()):
            return f"its parent {parent} belongs to user id {st.st_uid}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"its parent {parent} is writable by others without the sticky bit"
    return None


def untrusted_inside(folder: Path, owners=None) -> str | None:
    """Why something in `folder` must not be loaded, or None: every folder and file in
    it (itself included) must be a plain one of yours that nobody else can write. A
    missing folder holds nothing untrusted, nor does a file that is gone by the time it
    is looked at (another process of yours renamed its temporary file into place)."""
    for root, dirs, files in os.walk(folder):
        for path in [root] + [os.path.join(root, name) for name in dirs + files]:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                return f"{path} is not a plain file or folder (a symbolic link?)"
            reason = _not_yours_alone(path, st, owners)
            if reason is not None:
                return reason
    return None


def make_dirs(path: Path):
    """Create `path` and its missing parents, each with mode 700 whatever the umask."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)      # the umask can only take bits away
        except FileExistsError:
            pass                         # another process of yours was first


def read_trusted(path: Path, owners=None) -> bytes | None:
    """The bytes of a cache file, or None when it is missing or others could have
    written it (not yours, or one of `owners`'; or writable by group or others)."""
    try:
        with open(path, "rb") as f:
            if _not_yours_alone(path, os.fstat(f.fileno()), owners):
                return None
            return f.read()
    except OSError:
        return None


def _writable(path: Path) -> bool:
    try:
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def _folders_for(configured: Path) -> tuple:
    """(read_dir or None, write_dir, state) for a configured cache dir; state is
    'ok', 'read-only' or 'unused'. Warns once when the dir is not (fully) used."""
    try:
        make_dirs(configured)
        reason = untrusted_reason(configured)
        numba_dir = configured / "numba"
        if reason is None and not os.path.lexists(numba_dir) and _writable(configured):
            os.mkdir(numba_dir, 0o700)
        if reason is None and os.path.lexists(numba_dir):
            reason = untrusted_reason(numba_dir)
    except OSError as err:
        reason = f"it cannot be used ({err.strerror or err}: {err.filename or configured})"
    what = ("Set STRAIGHTDOPE_CACHE_DIR to a directory of yours that only you can write "
            "(it is created with mode 700 if missing).")
    if reason is not None:
        warnings.warn(f"straightdope's compile cache STRAIGHTDOPE_CACHE_DIR={configured} is "
                      f"not used: {reason}. Compiled graphs are kept for this process only. "
                      + what, CacheDirWarning, stacklevel=4)
        return None, _private_dir(), "unused"
    if _writable(configured):
        return configured, configured, "ok"
    warnings.warn(f"straightdope's compile cache STRAIGHTDOPE_CACHE_DIR={configured} is "
                  f"read-only: what it holds is used, new graphs are compiled for this "
                  f"process only.", CacheDirWarning, stacklevel=4)
    private = _private_dir()
    if numba_dir.is_dir() and untrusted_inside(numba_dir) is None:   # else compiled afresh
        shutil.copytree(numba_dir, private / "numba", dirs_exist_ok=True)
        for root, dirs, files in os.walk(private / "numba"):  # copied dirs follow the umask
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
    return configured, private, "read-only"


def folders() -> tuple:
    """(read_dir or None, write_dir, state): see `_folders_for`. With a shared cache
    (STRAIGHTDOPE_SHARED_CACHE_DIR), write_dir is first given what it holds."""
    found = _folders_for(cache_dir())
    shared_dir(found[1])
    return found


SHARED_OWNERS = (0,)         # besides you: root, the administrator who filled it


def shared_dir(write_dir: Path) -> Path | None:
    """The class's shared cache, if one is set and used (then seeded into `write_dir`)."""
    from .. import config
    shared = config.shared_cache_dir()
    return shared if shared is not None and seed_from_shared(shared, write_dir) >= 0 else None


SHARED_WHAT = ("Ask the administrator to fill it (STRAIGHTDOPE_CACHE_DIR={dir} python -m "
               "straightdope.warmup) and let only its owner, root or you, write it: "
               "chown -R root: {dir} && chmod -R a+rX,go-w {dir}.")


@functools.lru_cache(maxsize=None)
def seed_from_shared(shared: Path, write_dir: Path) -> int:
    """Copy into `write_dir` what the class's shared cache `shared` holds for this version
    of the kernels and your cache lacks; once per process. Returns the number of files
    copied, or -1 (with one warning) when the shared cache is not used.

    Why a copy: Numba reads and writes one folder per source file and a student must
    never write the shared one, so the kernels are loaded from the student's copy (a
    Numba cache hit, no compile; about 5 MB once per student). It is checked as strictly as
    your own cache dir, except that root may own it (the administrator who filled it)."""
    source = shared / "numba"
    kernels = source / _kernel_hash()[:16]
    owners = SHARED_OWNERS + (os.getuid(),)
    try:
        if shared.resolve() == write_dir.resolve():
            return 0                         # the administrator's own run
        reason = (untrusted_reason(shared, owners) or untrusted_reason(source, owners)
                  or (untrusted_reason(kernels, owners) if os.path.lexists(kernels) else
                      "it holds no kernels of this version of straightdope")
                  or untrusted_inside(kernels, owners))
    except OSError as err:
        reason = f"it cannot be read ({err.strerror or err}: {err.filename or shared})"
    if reason is not None:
        warnings.warn(f"straightdope's shared compile cache STRAIGHTDOPE_SHARED_CACHE_DIR="
                      f"{shared} is not used: {reason}. Kernels are compiled into your own "
                      f"cache instead. " + SHARED_WHAT.format(dir=shared),
                      CacheDirWarning, stacklevel=4)
        return -1
    copied = 0
    for path in source.glob("runtime-*.bin"):        # Numba's runtime (numba_internals)
        copied += _copy_missing(path, write_dir / "numba" / path.name, owners)
    for root, _, files in os.walk(kernels):
        here = write_dir / "numba" / Path(root).relative_to(source)
        make_dirs(here)
        # under the lock Numba's saves take (numba_internals._save_in_turn): no process
        # of yours adds an entry here while we copy
        with exclusive_lock(os.path.join(here, "save.lock")):
            for index in sorted(f for f in files if f.endswith(".nbi")):
                if os.path.lexists(here / index):
                    continue                 # compiled by you: yours is kept whole
                stem = index[:-len("nbi")]
                data = [f for f in files if f.startswith(stem) and f.endswith(".nbc")]
                for name in data + [index]:  # the machine code before the index naming it
                    copied += _copy_missing(Path(root, name), here / name, owners, True)
            for name in files:
                if name.endswith(".json"):   # the warm-up's manifest
                    copied += _copy_missing(Path(root, name), here / name, owners)
    # what was compiled there (ready.is_ready): its graphs' modules are read from `shared`
    # (_write_module), their machine code and the kernels are in the copy
    if os.path.isdir(shared / "ready") and untrusted_inside(shared / "ready", owners) is None:
        for path in (shared / "ready").iterdir():
            copied += _copy_missing(path, write_dir / "ready" / path.name, owners)
    return copied


def _copy_missing(source: Path, target: Path, owners, replace=False) -> bool:
    """Copy a file of the shared cache (checked again as it is read) to your cache
    unless it is there already (`replace`: whatever is there)."""
    if os.path.lexists(target) and not replace:
        return False
    data = read_trusted(source, owners)
    if data is None:
        return False
    write_bytes(target, data)
    return True


@functools.lru_cache(maxsize=None)
def _private_dir() -> Path:
    """A fresh directory only this process uses (mode 700), removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="straightdope-uncached-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def numba_folder(module: str, py_file: str) -> Path | None:
    """Where Numba keeps the cache files of the functions of `module` (from `py_file`),
    if they are ours (the kernels and the generated modules):
    `<write dir>/numba/<kernel hash>/<source folder>_<its hash>/`. None for any other
    module (cached as usual).

    Why the kernel hash: Numba checks a cached function against its own file only, yet
    a kernel compiles in the kernels it calls from other files (conv.py calls
    winograd.py). After any kernel file changes, every cached kernel is stale, so the
    folder changes with them and they compile afresh. Why the source folder: two
    checkouts sharing a cache dir do not overwrite each other's kernels."""
    if not module.startswith((f"{__package__}.kernels.", "straightdope_generated_")):
        return None
    source = os.path.dirname(os.path.abspath(py_file))
    kernels = _trusted_or_private(folders()[1] / "numba" / _kernel_hash()[:16])
    return kernels / f"{os.path.basename(source)}_{_digest(source)[:12]}"


@functools.lru_cache(maxsize=None)
def _trusted_or_private(folder: Path) -> Path:
    """`folder` (in the checked `numba/`) if everything in it is yours alone, else the
    same folder in the private dir, with a warning. Checked once per process: its
    parents are yours alone, so after the check only you can add to it."""
    reason = untrusted_inside(folder)
    if reason is None:
        return folder
    private = _private_dir() / "numba" / folder.name
    warnings.warn(f"straightdope's compile cache STRAIGHTDOPE_CACHE_DIR={cache_dir()}: "
                  f"{folder} is not loaded: {reason}. Its kernels and graphs are compiled "
                  f"for this process only. Remove it (rm -r {folder}).",
                  CacheDirWarning, stacklevel=2)
    return private


def _kernel_hash() -> str:
    return fingerprint.kernel_hash()


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def write_bytes(path: Path, data: bytes):
    """Write a cache file atomically (a reader sees the old file or the new one), with
    mode 600 whatever the umask."""
    make_dirs(path.parent)
    atomic_write(path, lambda f: f.write(data), mode=0o600)


def atomic_write_text(path: Path, text: str):
    write_bytes(path, text.encode("utf-8"))
