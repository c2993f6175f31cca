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
  else can write (as ssh checks `~/.ssh`). `_TrustedLocator` tells Numba so.
* A cache dir that fails those checks, or cannot be created, is not used: one
  warning naming STRAIGHTDOPE_CACHE_DIR, and compiled code goes to a private
  temporary dir for this process (as if uncached). A read-only cache dir is used
  for reading; what is new goes to the private dir.

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

import llvmlite.binding as ll
import numba
import numpy as np
from numba.core import caching as numba_caching
from numba.core.codegen import JITCodeLibrary

from ..serialization import atomic_write

HEADER = "# straightdope-generated key={key} sha256={digest}\n"
_MODULES: dict = {}          # key -> loaded module
_KERNEL_HASH = None
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


def untrusted_reason(path: Path) -> str | None:
    """Why `path` must not hold code we run, or None when it may: it must be a real
    directory owned by this user, and neither it nor a parent writable by others
    (a parent owned by root, or world-writable with the sticky bit like /tmp, is
    fine), as ssh requires of ~/.ssh."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory (a symbolic link or a file)"
    if st.st_uid != os.getuid():
        return f"{path} belongs to user id {st.st_uid}, not to you ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    for parent in path.resolve().parents:
        st = os.stat(parent)
        if st.st_uid not in (0, os.getuid()):
            return f"its parent {parent} belongs to user id {st.st_uid}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"its parent {parent} is writable by others without the sticky bit"
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
        if not os.path.lexists(configured):
            os.makedirs(configured, mode=0o700)
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
    if (configured / "numba").is_dir():       # checked above: ours, written by no one else
        shutil.copytree(configured / "numba", private / "numba", dirs_exist_ok=True)
    return configured, private, "read-only"


def folders() -> tuple:
    """(read_dir or None, write_dir, state): see `_folders_for`."""
    return _folders_for(cache_dir())


@functools.lru_cache(maxsize=None)
def _private_dir() -> Path:
    """A fresh directory only this process uses (mode 700), removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="straightdope-uncached-"))
    atexit.register(shutil.rmtree, path, True)
    return path


class _TrustedLocator(numba_caching._SourceFileBackedLocatorMixin,
                      numba_caching._CacheLocator):
    """Tells Numba where to keep the cache files of *our* functions (the kernels and
    the generated modules): `<write dir>/numba/<kernel hash>/`, in a directory checked
    by `folders()`, never `__pycache__` next to the source or ~/.cache/numba. Numba asks
    each locator class in turn; this one is asked first and answers only for our files,
    so other Numba functions in the process are cached as usual.

    Why the kernel hash: Numba checks a cached function against its own file only, yet
    a kernel compiles in the kernels it calls from other files (conv.py calls
    winograd.py). After any kernel file changes, every cached kernel is stale, so the
    folder changes with them and they compile afresh."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(folders()[1] / "numba" / _kernel_hash()[:16]
                               / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        os.makedirs(self._cache_path, mode=0o700, exist_ok=True)

    @classmethod
    def from_function(cls, py_func, py_file):
        module = py_func.__module__ or ""
        ours = module.startswith((f"{__package__}.kernels.", "straightdope_generated_"))
        return cls(py_func, py_file) if ours else None


if _TrustedLocator not in numba_caching.CacheImpl._locator_classes:
    numba_caching.CacheImpl._locator_classes.insert(0, _TrustedLocator)


def _kernel_hash() -> str:
    """Hash of the kernels' and codegen's source: Numba does not notice that a callee
    changed when it loads a cached caller, so the key has to."""
    global _KERNEL_HASH
    if _KERNEL_HASH is None:
        h = hashlib.sha256()
        here = Path(__file__).parent
        for path in sorted(here.glob("kernels/*.py")) + [here / "codegen.py"]:
            h.update(path.read_bytes())
        _KERNEL_HASH = h.hexdigest()
    return _KERNEL_HASH


def cache_key(source: str) -> str:
    from .. import __version__
    versions = (f"python={sys.version_info[:3]} numpy={np.__version__} "
                f"numba={numba.__version__} straightdope={__version__} "
                f"kernels={_kernel_hash()} jit={'off' if numba.config.DISABLE_JIT else 'on'}")
    return hashlib.sha256((versions + "\n" + source).encode()).hexdigest()


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def atomic_write_text(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = text.encode("utf-8")
    atomic_write(path, lambda f: f.write(data))


def check_file(path: Path, key: str, source: str) -> bool:
    """Is the cached file intact (header, hash and body all as expected)?"""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    first, _, body = text.partition("\n")
    return (first + "\n" == HEADER.format(key=key, digest=_digest(body))
            and body == source)


def module_path(key: str, folder: Path | None = None) -> Path:
    return (folder or cache_dir()) / f"g_{key[:40]}.py"


def _remove_numba_cache(func):
    """Delete Numba's cache files of a generated function."""
    source = Path(func.py_func.__code__.co_filename)
    try:
        folder = Path(func._cache._cache_path)
    except AttributeError:
        return
    for f in folder.glob(source.stem + ".*"):
        try:
            f.unlink()
        except OSError:
            pass


def _write_module(key: str, source: str, info: dict) -> Path:
    """Find the verified file for `source`, or write it; `info` says which."""
    read_dir, write_dir, _ = folders()
    for folder in dict.fromkeys([read_dir, write_dir]):
        if folder is not None and check_file(module_path(key, folder), key, source):
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
    if sig in func.overloads:
        return True
    try:
        cache_obj = func._cache
        key = cache_obj._index_key(sig, func.targetctx.codegen())
        return key in cache_obj._cache_file._load_index()
    except Exception:
        return False


class _LinkedOnDemand(JITCodeLibrary):
    """Machine code loaded from Numba's cache whose LLVM bitcode is parsed only if needed.

    A cache entry holds a function's machine code and its LLVM bitcode, kept so that a
    function compiled later can inline it. Numba parses that bitcode at every load and
    walks it for the names it defines: half the time of a load (conv2d's bitcode holds
    every kernel it calls). A kernel called from Python (the steps tier) is never
    inlined, so the bytes wait here until something links the library (a whole-graph
    function calling the kernel, compiled later); the entry point's address comes from
    the execution engine, which knows the loaded machine code."""
    _bitcode = None            # bytes not parsed yet (None: parsed, or compiled here)

    @classmethod
    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind != "object":
            return super()._unserialize(codegen, state)
        library = codegen.create_library(name)
        object_code, library._bitcode = data
        library.enable_object_caching()
        library._set_compiled_object(object_code)
        library._finalize_final_module()
        return library

    def _get_module_for_linking(self):
        if self._bitcode is not None:
            self._shared_module = ll.parse_bitcode(self._bitcode)
            self._codegen._engine._load_defined_symbols(self._shared_module)
            self._bitcode = None
        return super()._get_module_for_linking()

    def get_pointer_to_function(self, name):
        if self._bitcode is None:
            return super().get_pointer_to_function(name)
        return self._codegen._engine.get_function_address(name)     # 0 if not defined


def _fast_load(func, sig) -> bool:
    """Load a cached compiled function without Numba's full start-up.

    Before its first compile *or load* Numba "refreshes" its target: it imports and
    registers every typing and lowering registry (NumPy, linalg, random, typed
    containers, ...), about half a second, although loading machine code from the
    cache only needs its runtime (NRT) to be initialised. When the index already
    holds our signature, we load with just that (and leave its bitcode unparsed:
    `_LinkedOnDemand`); a later real compile refreshes fully, as usual. Returns False
    (nothing done) when the entry is not cached or this Numba does not look as
    expected."""
    try:
        from numba.core.runtime import rtsys
        cache_obj = func._cache
        ctx = func.targetctx
        codegen = ctx.codegen()
        key = cache_obj._index_key(sig, codegen)
        if key not in cache_obj._cache_file._load_index():
            return False
    except Exception:
        return False
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import nrtdynmod
    cls = type(ctx)
    with global_compiler_lock:        # no other thread compiles while we patch Numba
        full, compile_runtime = cls.refresh, nrtdynmod.compile_nrt_functions
        cls.refresh = lambda self: rtsys.initialize(self)
        codegen._library_class = _LinkedOnDemand      # for this load only
        nrtdynmod.compile_nrt_functions = _runtime_library
        try:
            func.compile(sig)
        finally:
            cls.refresh, nrtdynmod.compile_nrt_functions = full, compile_runtime
            del codegen._library_class
    return sum(func._cache_hits.values()) > 0


def _runtime_library(ctx):
    """Numba's runtime functions (reference counts, atomics) from our cache.

    Numba compiles its runtime's small LLVM module in every process (~25 ms, a twentieth
    of a cached first call) and never caches it. We keep its machine code and bitcode,
    raw bytes after a line with their SHA-256 and sizes (no pickle), in the checked
    Numba folder, keyed by what they were compiled for (Numba, LLVM, the CPU), and load
    them like a kernel; anything unexpected compiles them as Numba would."""
    codegen = ctx.codegen()
    what = f"{numba.__version__} {ll.llvm_version_info} {codegen.magic_tuple()}"
    path = folders()[1] / "numba" / f"runtime-{_digest(what)[:16]}.bin"
    try:
        head, _, data = path.read_bytes().partition(b"\n")
        digest, size = head.decode().split()
        if hashlib.sha256(data).hexdigest() == digest:
            return codegen.unserialize_library(
                ("nrt", "object", (data[:int(size)], data[int(size):])))
    except (OSError, ValueError):
        pass
    from numba.core.runtime.nrtdynmod import create_nrt_module
    ir_module, library = create_nrt_module(ctx)
    library.enable_object_caching()          # so that its machine code can be saved
    library.add_ir_module(ir_module)
    library.finalize()
    _, _, (code, bitcode) = library.serialize_using_object_code()
    data = code + bitcode
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, lambda f: f.write(
            f"{hashlib.sha256(data).hexdigest()} {len(code)}\n".encode() + data))
    except OSError:
        pass                                 # used uncached, as Numba does
    return library


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


def preload_blas():
    """Load SciPy's BLAS table without importing `scipy.linalg`.

    Compiled `np.dot` calls BLAS through function pointers that Numba reads, at the
    first call, from `scipy.linalg.cython_blas`: importing that module first runs
    `scipy.linalg/__init__.py` (its array-API layer, `numpy.f2py`, ...), 0.2 s of a
    cached first call. Numba only reads the extension's table of pointers, so we load
    the extension file by itself under its own name, and step aside if scipy.linalg
    is imported later (`_ForgetPreloadedBlas`). Nothing happens if it already was."""
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
    of compiling a second version. Returns {'seconds', 'cache_hit'}."""
    start = time.perf_counter()
    if numba.config.DISABLE_JIT or not hasattr(func, "compile"):
        return {"seconds": 0.0, "cache_hit": False, "jit": False}
    sig = tuple(numba.typeof(a) for a in example_args)
    hits_before = sum(func._cache_hits.values())
    if sig in func.overloads or any(tuple(s) == sig for s in func.signatures):
        return {"seconds": time.perf_counter() - start, "cache_hit": True, "jit": True}
    try:
        if not _fast_load(func, sig):
            func.compile(sig)
    except Exception:
        # a damaged Numba cache file: remove it and compile from scratch
        _remove_numba_cache(func)
        func.compile(sig)
    hit = sum(func._cache_hits.values()) > hits_before
    if freeze:
        func.disable_compile()
    return {"seconds": time.perf_counter() - start, "cache_hit": hit, "jit": True}
