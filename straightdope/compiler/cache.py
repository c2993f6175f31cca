"""The on-disk compile cache: generated modules, compiled once per machine.

Numba can cache compiled code (`cache=True`) only for functions defined in real
`.py` files, so each generated source is written to

    $STRAIGHTDOPE_CACHE_DIR (default ~/.cache/straightdope)/g_<key>.py

where `key` hashes the source together with the versions it was compiled with
(Python, NumPy, Numba, straightdope, and the kernels' own source). The file is
written atomically (a temporary file renamed into place) and starts with a
header holding the hash of its body: a truncated or edited file is detected and
rewritten.

What may run (see docs/security.md, "the cache's trust model"):

* The generated module is never *imported*: we run the text we generated
  ourselves, after checking that the file holds exactly that text, so a planted
  `__pycache__/*.pyc` or an edited `.py` never runs.
* Numba's own cache files (`.nbi`/`.nbc`) are pickles, and loading a pickle can
  run code. Ours (generated functions and the kernels in `kernels/`) live only
  in `<cache dir>/numba/`, which must be a directory of this user that nobody
  else can write (as ssh checks `~/.ssh`). `numba_folder` says where, and
  `numba_internals` (every use of Numba's internals) tells Numba.
* A cache dir that fails those checks, or cannot be created, is not used: one
  warning naming STRAIGHTDOPE_CACHE_DIR, and compiled code goes to a private
  temporary dir for this process (as if uncached). A read-only cache dir is used
  for reading; what is new goes to the private dir.
* A class's shared cache (STRAIGHTDOPE_SHARED_CACHE_DIR, filled once by the
  administrator) is only read: what it holds for this version of the kernels is
  copied into your own cache dir (`seed_from_shared`), after the same checks except
  that root may own it; its generated modules are read where they are. Nothing is
  ever written there.

In one process, modules are also kept in memory by key: a graph that generates
the same source (e.g. the same network at a new batch size, since shapes are
runtime values) reuses the compiled function at once.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import types
import warnings
from pathlib import Path

import numba
import numpy as np

from ..serialization import atomic_write, exclusive_lock
from . import fingerprint, numba_internals

HEADER = "# straightdope-generated key={key} sha256={digest}\n"
_MODULES: dict = {}          # key -> loaded module
_LOCK = threading.RLock()


def _one_thread_at_a_time(fn):
    """Threads that need the same module or compiled function at once: the first
    loads or compiles it, the others wait and then find it done. (Without this, a
    thread could see a module another thread is still compiling, try to compile it
    itself and fail: Numba's `disable_compile()` had already been called.)"""
    @functools.wraps(fn)
    def serialized(*args, **kwargs):
        with _LOCK:
            return fn(*args, **kwargs)
    return serialized


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
    missing folder holds nothing untrusted."""
    for root, dirs, files in os.walk(folder):
        for path in [root] + [os.path.join(root, name) for name in dirs + files]:
            st = os.lstat(path)
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


def cache_key(source: str) -> str:
    return hashlib.sha256((fingerprint.versions() + "\n" + source).encode()).hexdigest()


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def write_bytes(path: Path, data: bytes):
    """Write a cache file atomically (a reader sees the old file or the new one), with
    mode 600 whatever the umask."""
    make_dirs(path.parent)
    atomic_write(path, lambda f: f.write(data), mode=0o600)


def atomic_write_text(path: Path, text: str):
    write_bytes(path, text.encode("utf-8"))


def check_file(path: Path, key: str, source: str, owners=None) -> bool:
    """Is the cached file intact (header, hash and body all as expected) and yours alone
    (or one of `owners`')?"""
    try:
        text = read_trusted(path, owners).decode("utf-8")
    except (AttributeError, UnicodeDecodeError):      # None: missing or not yours alone
        return False
    first, _, body = text.partition("\n")
    return (first + "\n" == HEADER.format(key=key, digest=_digest(body))
            and body == source)


def module_path(key: str, folder: Path | None = None) -> Path:
    return (folder or cache_dir()) / f"g_{key[:40]}.py"


def _write_module(key: str, source: str, info: dict) -> Path:
    """Find the verified file for `source`, or write it; `info` says which."""
    read_dir, write_dir, _ = folders()
    shared = shared_dir(write_dir)
    for folder in dict.fromkeys([read_dir, shared, write_dir]):
        owners = SHARED_OWNERS + (os.getuid(),) if folder == shared else None
        if folder is not None and check_file(module_path(key, folder), key, source, owners):
            info["file"] = "reused"
            return module_path(key, folder)
    path = module_path(key, write_dir)
    info["file"] = "rebuilt" if os.path.lexists(path) else "written"
    try:
        atomic_write_text(path, HEADER.format(key=key, digest=_digest(source)) + source)
    except OSError as err:
        warnings.warn(f"straightdope's compile cache STRAIGHTDOPE_CACHE_DIR={cache_dir()}: "
                      f"cannot write {path} ({err.strerror or err}); this graph is compiled "
                      f"for this process only. Remove what is in the way.",
                      CacheDirWarning, stacklevel=3)
        path = module_path(key, _private_dir())
        atomic_write_text(path, HEADER.format(key=key, digest=_digest(source)) + source)
    return path


@_one_thread_at_a_time
def load(source: str) -> tuple:
    """(module, info) for a generated source; info says what happened:
    {'key', 'path', 'memory': bool, 'file': 'reused'|'written'|'rebuilt'}.

    The module runs `source` itself, the text we generated, never what the file
    holds: the file is there for Numba, which caches only functions that come
    from a real file, and is checked to hold exactly that text."""
    key = cache_key(source)
    info = {"key": key, "memory": key in _MODULES}
    if key in _MODULES:
        info["path"] = _MODULES[key].__file__
        info["file"] = "reused"
        return _MODULES[key], info
    path = _write_module(key, source, info)
    info["path"] = str(path)
    name = f"straightdope_generated_{key[:40]}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    # registered before it runs: Numba's cached code looks its module up by name
    sys.modules[name] = module
    code = compile(HEADER.format(key=key, digest=_digest(source)) + source, str(path), "exec")
    exec(code, module.__dict__)       # our own text, not the file's (see above)
    _MODULES[key] = module
    return module, info


def is_cached(func, example_args) -> bool:
    """Is `func` compiled for these argument types, in this process or in Numba's
    cache on disk? (Then getting it costs milliseconds, not a compile.)"""
    if numba.config.DISABLE_JIT or not hasattr(func, "compile"):
        return True
    sig = tuple(numba.typeof(a) for a in example_args)
    return sig in func.overloads or numba_internals.is_cached(func, sig)


# What Numba compiles for a graph (`Executable.job()`): (what, example arguments), what
# being ("module", source, function name) for generated code or ("kernel", module,
# function) for a library kernel.
def resolve(what) -> object:
    """The Numba function named by a job item (only our kernels and our own sources)."""
    if what[0] == "module":
        module, _ = load(what[1])
        return getattr(module, what[2])
    if what[0] == "kernel" and what[1].isidentifier() and what[2].isidentifier():
        import importlib
        return getattr(importlib.import_module(f"{__package__}.kernels.{what[1]}"), what[2])
    raise ValueError(f"not a compile job item: {what[:1]}")


def missing(job) -> list:
    """The items of a job that are not compiled in the caches yet."""
    return [(what, args) for what, args in job if not is_cached(resolve(what), args)]


_BLAS = "scipy.linalg.cython_blas"


class _ForgetPreloadedBlas:
    """An import hook: when `scipy.linalg` is imported for real, it takes the preloaded
    `cython_blas` out of `sys.modules`, so the package imports it as usual (and gets
    the same module object: an extension is initialised once per process). It stays in
    `sys.meta_path` (removing it while Python walks that list would skip a finder)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "scipy.linalg":
            sys.modules.pop(_BLAS, None)
        return None        # the usual finders do the import


@_one_thread_at_a_time
def preload_blas():
    """Load SciPy's BLAS table without importing `scipy.linalg`.

    Compiled `np.dot` calls BLAS through function pointers that Numba reads, at the
    first call, from `scipy.linalg.cython_blas`: importing that module first runs
    `scipy.linalg/__init__.py` (its array-API layer, `numpy.f2py`, ...), 0.2 s of a
    cached first call. Numba only reads the extension's table of pointers, so we load
    the extension file by itself under its own name, and step aside if scipy.linalg
    is imported later (`_ForgetPreloadedBlas`). Nothing happens if it already was.
    One thread at a time: a second thread loading the extension while the first is
    still initialising it gets "Module 'cython_blas' has already been imported"."""
    if _BLAS in sys.modules or "scipy.linalg" in sys.modules:
        return
    import importlib.machinery
    import importlib.util
    try:
        import scipy
    except ImportError:
        return             # no SciPy: Numba says so when it compiles np.dot
    folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
    finder = importlib.machinery.FileFinder(folder, (importlib.machinery.ExtensionFileLoader,
                                                     importlib.machinery.EXTENSION_SUFFIXES))
    spec = finder.find_spec(_BLAS)
    if spec is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[_BLAS] = module
    if _ForgetPreloadedBlas not in sys.meta_path:
        sys.meta_path.insert(0, _ForgetPreloadedBlas)


@_one_thread_at_a_time
def compile_function(func, example_args, freeze=True) -> dict:
    """Compile (or load from Numba's cache) for the argument types of `example_args`;
    then (`freeze`) forbid further compilation so a wrongly typed call fails fast instead
    of compiling a second version. Returns {'seconds', 'cache_hit', 'jit', 'fast_load'}.

    If loading fails, the cache entry is removed and compiled again only when it is
    damaged (it no longer unpickles); any other error is raised and the files kept."""
    start = time.perf_counter()
    if numba.config.DISABLE_JIT or not hasattr(func, "compile"):
        return {"seconds": 0.0, "cache_hit": False, "jit": False, "fast_load": False}
    sig = tuple(numba.typeof(a) for a in example_args)
    if sig in func.overloads:
        return {"seconds": time.perf_counter() - start, "cache_hit": True, "jit": True,
                "fast_load": False}
    hits_before = sum(func.stats.cache_hits.values())
    fast = numba_internals.fast_load(func, sig)
    if not fast:
        try:
            func.compile(sig)
        except Exception:
            if not numba_internals.remove_damaged_entry(func, sig):
                raise
            func.compile(sig)
    hit = sum(func.stats.cache_hits.values()) > hits_before
    if freeze:
        func.disable_compile()
    return {"seconds": time.perf_counter() - start, "cache_hit": hit, "jit": True,
            "fast_load": fast}
