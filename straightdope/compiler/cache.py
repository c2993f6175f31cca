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

import contextlib
import functools
import hashlib
import os
import sys
import threading
import time
import types
import warnings
from pathlib import Path

import numba

from . import fingerprint, numba_internals
# where the cache lives and which files may be loaded: cache_folders.py (which
# numba_internals imports too); cache.X names stay, as callers and tests use them
from .cache_folders import (  # noqa: F401
    cache_dir, CacheDirWarning, untrusted_reason, untrusted_inside,
    make_dirs, read_trusted, folders, SHARED_OWNERS,
    shared_dir, SHARED_WHAT, seed_from_shared, numba_folder,
    write_bytes, atomic_write_text, _not_yours_alone, _writable,
    _folders_for, _copy_missing, _private_dir, _trusted_or_private,
    _kernel_hash, _digest)

HEADER = "# straightdope-generated key={key} sha256={digest}\n"
GENERATED_PREFIX = "straightdope_generated_"      # the module name of a generated source
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


def cache_key(source: str) -> str:
    return hashlib.sha256((fingerprint.versions() + "\n" + source).encode()).hexdigest()



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
    name = f"{GENERATED_PREFIX}{key[:40]}"
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


def _optimised_for_compile_time(func):
    """Generated functions (a whole graph, a steps-tier loop) are compiled the cheaper
    way of `numba_internals.generated_code`; the kernels as Numba does."""
    if (func.py_func.__module__ or "").startswith(GENERATED_PREFIX):
        return numba_internals.generated_code(func, _kernel_dispatchers())
    return contextlib.nullcontext()


def _kernel_dispatchers() -> list:
    """The Numba functions of compiler/kernels (their machine code is cached) that
    generated code calls where they are loaded; not `util.flat`, which it calls once per
    input and LLVM inlines to nothing (W1 took ~0.7% longer per call with a real call)."""
    from numba.core.registry import CPUDispatcher
    from . import kernels
    modules = [m for m in vars(kernels).values() if isinstance(m, types.ModuleType)
               and m.__name__.startswith(f"{kernels.__name__}.")]
    return [k for m in modules for k in vars(m).values()
            if isinstance(k, CPUDispatcher) and k.py_func.__module__ == m.__name__
            and k is not kernels.util.flat]


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
        with _optimised_for_compile_time(func):
            try:
                func.compile(sig)
            except numba_internals.StaleEntry:      # it calls kernels compiled since
                numba_internals.remove_entry(func, sig)
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
