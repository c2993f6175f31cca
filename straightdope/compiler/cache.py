"""The on-disk compile cache: generated modules, compiled once per machine.

Numba can cache compiled code (`cache=True`) only for functions defined in real
`.py` files, so each generated source is written to

    $STRAIGHTDOPE_CACHE_DIR (default ~/.cache/straightdope)/g_<key>.py

where `key` hashes the source together with the versions it was compiled with
(Python, NumPy, Numba, straightdope, and the kernels' own source). The file is
written atomically (a temporary file renamed into place) and starts with a
header holding the hash of its body: a truncated or edited file is detected and
rewritten. Numba keeps its machine code next to it in `__pycache__/`, so a new
process imports the module and loads the code instead of compiling it.

In one process, modules are also kept in memory by key: a graph that generates
the same source (e.g. the same network at a new batch size, since shapes are
runtime values) reuses the compiled function at once.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np

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
    path = os.environ.get("STRAIGHTDOPE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "straightdope")
    return Path(path)


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
    path.parent.mkdir(parents=True, exist_ok=True)
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


def module_path(key: str) -> Path:
    return cache_dir() / f"g_{key[:40]}.py"


def _remove_numba_cache(func):
    """Delete Numba's cache files of a generated function (next to it in __pycache__,
    or under $NUMBA_CACHE_DIR)."""
    source = Path(func.py_func.__code__.co_filename)
    try:
        folder = Path(func._cache._cache_path)
    except AttributeError:
        folder = source.parent / "__pycache__"
    for f in folder.glob(source.stem + ".*"):
        try:
            f.unlink()
        except OSError:
            pass


@_one_thread_at_a_time
def load(source: str) -> tuple:
    """(module, info) for a generated source; info says what happened:
    {'key', 'path', 'memory': bool, 'file': 'reused'|'written'|'rebuilt'}."""
    key = cache_key(source)
    info = {"key": key, "memory": key in _MODULES}
    if key in _MODULES:
        info["path"] = _MODULES[key].__file__
        info["file"] = "reused"
        return _MODULES[key], info
    path = module_path(key)
    info["path"] = str(path)
    if path.exists() and check_file(path, key, source):
        info["file"] = "reused"
    else:
        # (Numba's own cache, if any, stays: it is keyed by a hash of the file's text, and
        # the rewritten text is exactly the one it was compiled from)
        info["file"] = "rebuilt" if path.exists() else "written"
        atomic_write_text(path, HEADER.format(key=key, digest=_digest(source)) + source)
    name = f"straightdope_generated_{key[:40]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered before it runs: Numba's cached code re-imports its module by name
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[key] = module
    return module, info


def _fast_load(func, sig) -> bool:
    """Load a cached compiled function without Numba's full start-up.

    Before its first compile *or load* Numba "refreshes" its target: it imports and
    registers every typing and lowering registry (NumPy, linalg, random, typed
    containers, ...), about half a second, although loading machine code from the
    cache only needs its runtime (NRT) to be initialised. When the index already
    holds our signature, we load with just that; a later real compile refreshes
    fully, as usual. Returns False (nothing done) when the entry is not cached or
    this Numba does not look as expected."""
    try:
        from numba.core.runtime import rtsys
        cache_obj = func._cache
        ctx = func.targetctx
        key = cache_obj._index_key(sig, ctx.codegen())
        if key not in cache_obj._cache_file._load_index():
            return False
    except Exception:
        return False
    from numba.core.compiler_lock import global_compiler_lock
    cls = type(ctx)
    with global_compiler_lock:        # no other thread compiles while refresh is cut short
        full = cls.refresh
        cls.refresh = lambda self: rtsys.initialize(self)
        try:
            func.compile(sig)
        finally:
            cls.refresh = full
    return sum(func._cache_hits.values()) > 0


@_one_thread_at_a_time
def compile_function(func, example_args) -> dict:
    """Compile (or load from Numba's cache) for the argument types of `example_args`;
    then forbid further compilation so a wrongly typed call fails fast instead of
    compiling a second version. Returns {'seconds', 'cache_hit'}."""
    start = time.perf_counter()
    if numba.config.DISABLE_JIT or not hasattr(func, "compile"):
        return {"seconds": 0.0, "cache_hit": False, "jit": False}
    sig = tuple(numba.typeof(a) for a in example_args)
    if sig in func.overloads or any(tuple(s) == sig for s in func.signatures):
        return {"seconds": time.perf_counter() - start, "cache_hit": True, "jit": True}
    try:
        if not _fast_load(func, sig):
            func.compile(sig)
    except Exception:
        # a damaged Numba cache file: remove it and compile from scratch
        _remove_numba_cache(func)
        func.compile(sig)
    hit = sum(func._cache_hits.values()) > 0
    func.disable_compile()
    return {"seconds": time.perf_counter() - start, "cache_hit": hit, "jit": True}
