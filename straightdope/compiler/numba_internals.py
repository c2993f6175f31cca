"""Every use of Numba's private internals, in one place, for one tested range of versions.

Numba's public API compiles and caches (`njit(cache=True)`, `func.compile(sig)`), but
four things straightdope needs are not in it:

* where Numba keeps the cache files of *our* functions (a folder only you can write:
  `_TrustedLocator`, docs/security.md);
* whether a signature is in that cache already (`is_cached`), without loading it;
* loading a cached function without Numba's half-second start-up (`fast_load`), also
  when Python calls a kernel with new argument types (`load_first`);
* compiling a generated function faster: optimised once, without loop unrolling, and
  calling the kernels where they are loaded instead of compiling them in again
  (`generated_code`).

They reach into `numba.core` (names in `EXPECTED`), which changes between releases
without notice. So they are used only with a Numba in `SUPPORTED` (the range
`pyproject.toml` pins and tests/test_numba_internals.py runs against) that has every
name in `EXPECTED`. With any other Numba, straightdope warns once and uses only the
public API: our functions are compiled without a disk cache (`DISK_CACHE` is False,
since Numba alone would put its pickles beside the source or in ~/.cache/numba, places
we have not checked), `is_cached` says False and nothing loads the fast way.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib
import os
import struct
import warnings
from pathlib import Path

import llvmlite.binding as ll
import numba

from . import cache_folders

SUPPORTED = ("0.68.1", "0.69")        # first version tested, first one not tested
EXPECTED = (
    "numba.core.caching._CacheLocator",
    "numba.core.caching._SourceFileBackedLocatorMixin",
    "numba.core.caching.CacheImpl._locator_classes",
    "numba.core.caching.Cache._index_key",
    "numba.core.caching.IndexDataCacheFile._load_index",
    "numba.core.caching.IndexDataCacheFile._load_data",
    "numba.core.caching.IndexDataCacheFile._open_for_write",
    "numba.core.caching.IndexDataCacheFile._save_index",
    "numba.core.caching.IndexDataCacheFile._save_data",
    "numba.core.caching.IndexDataCacheFile._data_name",
    "numba.core.codegen.JITCodeLibrary._unserialize",
    "numba.core.codegen.JITCodeLibrary._set_compiled_object",
    "numba.core.codegen.JITCodeLibrary._finalize_final_module",
    "numba.core.codegen.JITCodeLibrary._get_module_for_linking",
    "numba.core.codegen.JITCodeLibrary.serialize_using_object_code",
    "numba.core.codegen.JITCPUCodegen._library_class",
    "numba.core.codegen.CPUCodegen._pass_builder",
    "numba.core.codegen.CPUCodeLibrary._optimize_functions",
    "numba.core.codegen.CPUCodeLibrary._optimize_final_module",
    "numba.core.codegen.CPUCodeLibrary.finalize",
    "numba.core.compiler.CompileResult._rebuild",
    "numba.core.config.OPT",
    "numba.core.codegen.JitEngine._load_defined_symbols",
    "numba.core.cpu.CPUContext.refresh",
    "numba.core.compiler_lock.global_compiler_lock",
    "numba.core.runtime.rtsys",
    "numba.core.runtime.nrtdynmod.compile_nrt_functions",
    "numba.core.runtime.nrtdynmod.create_nrt_module",
    "numba.core.dispatcher.Dispatcher._compile_for_args",
)
FAST_LOADS = 0             # functions fast_load loaded in this process (tests read it)
USED_FAST = True           # False once fast_load failed on an entry that reads fine


class NumbaVersionWarning(UserWarning):
    """This Numba is not the tested one: straightdope uses only its public API."""


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("+")[0].split(".")[:3] if part.isdigit())


def _find(dotted: str):
    """The object a dotted name names (importing its module), or raise."""
    module, _, rest = dotted.partition(".")
    obj = importlib.import_module(module)
    for part in rest.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
    return obj


def problem() -> str | None:
    """Why the internals cannot be used with this Numba, or None when they can."""
    low, high = SUPPORTED
    if not _version(low) <= _version(numba.__version__) < _version(high):
        return "not a tested version"
    for name in EXPECTED:
        try:
            _find(name)
        except (ImportError, AttributeError):
            return f"it has no {name}"
    return None


def _fall_back(reason: str, what: str):
    warnings.warn(f"straightdope is tested with numba>={SUPPORTED[0]},<{SUPPORTED[1]}; this is "
                  f"numba {numba.__version__} ({reason}): {what} Install a tested version: "
                  f"pip install 'numba>={SUPPORTED[0]},<{SUPPORTED[1]}'.",
                  NumbaVersionWarning, stacklevel=3)


PROBLEM = problem()
USED = PROBLEM is None
DISK_CACHE = USED          # the kernels' and generated functions' njit(cache=...)
if not USED:
    _fall_back(PROBLEM, "compiled code is not kept on disk (every new process compiles "
                        "again) and loads take Numba's usual way.")

try:
    from numba.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin
    from numba.core.codegen import JITCodeLibrary
except ImportError:        # such a Numba is not USED: the classes below are never made
    _CacheLocator = JITCodeLibrary = object
    _SourceFileBackedLocatorMixin = type("Missing", (), {})


# ------------------------------------------------------------------ where files go
class _TrustedLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Tells Numba where to keep the cache files of *our* functions (the kernels and
    the generated modules): the folder `cache_folders.numba_folder` names, never `__pycache__`
    next to the source or ~/.cache/numba. Numba asks each class in
    `CacheImpl._locator_classes` in turn; this one is asked first and answers only for
    our modules, so other Numba functions in the process are cached as usual."""

    folders: set = set()       # every folder given out (their files are made private)

    def __init__(self, py_func, py_file, folder: Path):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(folder)
        self.folders.add(self._cache_path)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        cache_folders.make_dirs(Path(self._cache_path))

    @classmethod
    def from_function(cls, py_func, py_file):
        folder = cache_folders.numba_folder(py_func.__module__ or "", py_file)
        return None if folder is None else cls(py_func, py_file, folder)


def _open_privately(open_for_write):
    """Numba's way of opening a cache file for writing (a temporary name, renamed into
    place), giving our files mode 600 before anything is written: Numba would leave
    them to the umask (0666 under umask 000)."""
    @contextlib.contextmanager
    def opened(self, filepath):
        with open_for_write(self, filepath) as f:
            if os.path.dirname(filepath) in _TrustedLocator.folders:
                os.fchmod(f.fileno(), 0o600)
            yield f
    return opened


def _save_in_turn(self, key, data):
    """Numba's `IndexDataCacheFile.save`, safe between processes (the background compile
    processes of two notebooks, the setup step's workers).

    Numba adds an entry by reading the function's index, picking a free data file name,
    writing the index, then the data. Two processes adding entries of one function at
    once could pick the same name: one signature's entry would point at the other's
    machine code. Here they take turns (a lock file per cache folder), and the data is
    written before the index entry that points to it, so a process killed halfway
    leaves no entry without its data."""
    import itertools
    from ..serialization import exclusive_lock
    with exclusive_lock(os.path.join(self._cache_path, "save.lock")):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in taken)
        self._save_data(name, data)
        overloads[key] = name
        self._save_index(overloads)


if USED:
    from numba.core.caching import CacheImpl, IndexDataCacheFile
    if _TrustedLocator not in CacheImpl._locator_classes:
        CacheImpl._locator_classes.insert(0, _TrustedLocator)
        IndexDataCacheFile._open_for_write = _open_privately(IndexDataCacheFile._open_for_write)
        IndexDataCacheFile.save = _save_in_turn


# ------------------------------------------------------------- what is cached
def _entry(func, sig) -> tuple:
    """(Numba's cache file object, the index key of `sig`) of a dispatcher."""
    cache_obj = func._cache
    return cache_obj._cache_file, cache_obj._index_key(sig, func.targetctx.codegen())


def is_cached(func, sig) -> bool:
    """Does Numba's cache on disk hold `func` compiled for `sig`? (False when unsure.)"""
    if not USED:
        return False
    try:
        cache_file, key = _entry(func, sig)
        return key in cache_file._load_index()
    except Exception:        # unreadable (then loading it removes it) or not a Numba we know
        return False


def remove_damaged_entry(func, sig) -> bool:
    """Remove the cache entry of `func` for `sig` if it is damaged: its index or its data
    file no longer unpickles. True when something was removed. An entry that reads
    fine, and every entry when this Numba is not the tested one, is left alone: a
    failure elsewhere is no reason to delete what a later run could load."""
    if not USED:
        return False
    try:
        cache_file, key = _entry(func, sig)
    except AttributeError:
        return False
    try:
        name = cache_file._load_index().get(key)
    except Exception:
        return _unlink(cache_file._index_path)
    if name is None:
        return False
    try:
        cache_file._load_data(name)
    except OSError:
        return False               # not there: Numba compiles it anew by itself
    except Exception:
        return _unlink(cache_file._data_path(name))
    return False


def remove_entry(func, sig) -> bool:
    """Remove the cache entry of `func` for `sig` (a `StaleEntry`), its index line first;
    True when there was one."""
    from ..serialization import exclusive_lock
    try:
        cache_file, key = _entry(func, sig)
        with exclusive_lock(os.path.join(cache_file._cache_path, "save.lock")):
            overloads = cache_file._load_index()
            name = overloads.pop(key, None)
            if name is None:
                return False
            cache_file._save_index(overloads)
    except Exception:
        return False
    _unlink(cache_file._data_path(name))
    return True


def _unlink(path) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


# ------------------------------------------------- lighter LLVM for generated code
def _pass_builder_without_unrolling(codegen):
    """Numba's `CPUCodegen._pass_builder`, with LLVM's loop unrolling off."""
    from numba.core import config

    def pass_builder(opt=None, loop_vectorize=None, slp_vectorize=None):
        options = ll.create_pipeline_tuning_options()
        options.speed_level = config.OPT if opt is None else opt
        options.loop_vectorization = config.LOOP_VECTORIZE if loop_vectorize is None \
            else loop_vectorize
        options.slp_vectorization = config.SLP_VECTORIZE if slp_vectorize is None \
            else slp_vectorize
        options.loop_unrolling = False
        return ll.create_pass_builder(codegen._tm, options)
    return pass_builder


@contextlib.contextmanager
def _unrolling_off(codegen):
    codegen._pass_builder = _pass_builder_without_unrolling(codegen)
    try:
        yield
    finally:
        del codegen._pass_builder           # Numba's method again


class StaleEntry(Exception):
    """A cached generated function calls kernel code that this process cannot load as it
    was: the entry is removed and the function compiled again."""


def _load_callees(callees):
    """Load the kernels a cached generated function calls (module, name, signature, the
    symbol it calls), before Numba loads that function's machine code: LLVM would abort
    the process on a symbol it cannot resolve. Numba runs this from the cache entry
    (a CompileResult's `reload_init`)."""
    for module, name, sig, symbol in callees:
        if not module.startswith(f"{__package__}.kernels."):
            raise StaleEntry(f"not a kernel: {module}.{name}")
        func = getattr(importlib.import_module(module), name)
        if sig not in func.overloads:
            if not is_cached(func, sig):
                raise StaleEntry(f"{name}{sig} is not in the cache")
            func.compile(sig)                     # a load from the cache
        if func.overloads[sig].fndesc.mangled_name != symbol:
            raise StaleEntry(f"{name}{sig} was compiled again since")


class _GeneratedLibrary(JITCodeLibrary):
    """The code library of a generated function, made cheaper to compile:

    * LLVM's loop unrolling is off (the vectorizer still runs, and interleaves);
      unrolling the vectorized fused loops cost an 8-layer MLP 0.06 of 0.57 s of LLVM;
    * its functions are optimised once, with the module (`_optimize_functions`);
    * the kernels it calls that work on arrays (`matmul`, `shaped`, ..., those of
      `kernels` that are cached) are called where they are, compiled and loaded,
      instead of having their LLVM code linked in, optimised and compiled again for
      every graph (a third of an MLP's code). Their symbols resolve against the loaded
      kernels: a cached copy loads them first (`_load_callees`). Scalar helpers
      (`fmath`, `nan_max`) are linked as usual, for the vectorized loops to inline them.
    See benchmarks/README.md for the figures."""
    kernels: tuple = ()          # the kernel dispatchers (set by `generated_code`)

    def finalize(self):
        compiled = {id(cres.library): (kernel, sig, cres) for kernel in self.kernels
                    for sig, cres in list(kernel.overloads.items())}
        callees = {}            # id(library) -> what _load_callees needs to load it
        for library in self._linking_libraries:
            kernel, sig, cres = compiled.get(id(library), (None, None, None))
            on_arrays = kernel is not None and any(isinstance(a, numba.types.Array)
                                                   for a in sig)
            if on_arrays and id(library) not in callees and is_cached(kernel, sig):
                callees[id(library)] = (kernel.py_func.__module__, kernel.py_func.__name__,
                                        sig, cres.fndesc.mangled_name)
        self._linking_libraries = [lib for lib in self._linking_libraries
                                   if id(lib) not in callees]
        if callees:
            self._reload_init.add(functools.partial(_load_callees,
                                                    tuple(callees.values())))
        super().finalize()

    def _optimize_functions(self, ll_module):
        """Numba optimises each function of a module on its own before linking the module
        and optimising it whole: for one function and its wrappers, the same passes twice."""
        ll_module.data_layout = self._codegen._data_layout

    def _optimize_final_module(self):
        with _unrolling_off(self._codegen):
            super()._optimize_final_module()


class _Libraries:
    """Stands in for the codegen's library class while one function compiles: that
    function's library is a `_GeneratedLibrary`, any other (a kernel compiled on the
    way) Numba's own."""

    def __init__(self, name, kernels, usual):
        self.name, self.kernels, self.usual = name, kernels, usual

    def __call__(self, codegen, name, **kwargs):
        if name != self.name:
            return self.usual(codegen, name, **kwargs)
        library = _GeneratedLibrary(codegen, name, **kwargs)
        library.kernels = self.kernels
        return library

    def __getattr__(self, attr):               # _unserialize, the object cache hooks
        return getattr(self.usual, attr)


@contextlib.contextmanager
def generated_code(func, kernels=()):
    """While this context lasts, compiling the dispatcher `func` (a generated function)
    is cheaper: see `_GeneratedLibrary`; `kernels`, the library's kernel dispatchers,
    whose cached code it may call. Only with the tested Numba: otherwise Numba's usual
    compile (the same results, compiled more slowly)."""
    if not USED:
        yield
        return
    from numba.core.compiler_lock import global_compiler_lock
    codegen = func.targetctx.codegen()
    with global_compiler_lock:
        codegen._library_class = _Libraries(func.py_func.__qualname__, tuple(kernels),
                                            codegen._library_class)
        try:
            yield
        finally:
            del codegen._library_class        # the class's attribute again


# ------------------------------------------------------------------- fast load
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


def fast_load(func, sig) -> bool:
    """Load `func` for `sig` from Numba's cache without Numba's full start-up; True
    when it did, False (nothing done) when it is not cached or cannot load this way.

    Before its first compile *or load* Numba "refreshes" its target: it imports and
    registers every typing and lowering registry (NumPy, linalg, random, typed
    containers, ...), about half a second, although loading machine code from the
    cache only needs its runtime (NRT) to be initialised. So we load with just that
    (and leave the bitcode unparsed: `_LinkedOnDemand`); a later real compile refreshes
    fully, as usual. If the load fails although the entry reads fine, this way of
    loading is broken for this Numba: one warning, and never again in this process."""
    global USED_FAST, FAST_LOADS
    if not (USED and USED_FAST) or not is_cached(func, sig):
        return False
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import nrtdynmod, rtsys
    hits = sum(func.stats.cache_hits.values())
    try:
        ctx = func.targetctx
        codegen, cls = ctx.codegen(), type(ctx)
        with global_compiler_lock:    # no other thread compiles while Numba is patched
            full, compile_runtime = cls.refresh, nrtdynmod.compile_nrt_functions
            cls.refresh = lambda self: rtsys.initialize(self)
            codegen._library_class = _LinkedOnDemand     # for this load only
            nrtdynmod.compile_nrt_functions = _runtime_library
            try:
                func.compile(sig)
            finally:
                cls.refresh, nrtdynmod.compile_nrt_functions = full, compile_runtime
                del codegen._library_class
    except StaleEntry:
        remove_entry(func, sig)
        return False
    except Exception as err:
        if not _damaged(func, sig):
            USED_FAST = False
            _fall_back(f"loading a cached function failed: {type(err).__name__}: {err}",
                       "cached code now loads Numba's usual way (about half a second "
                       "more for the first one in a process).")
        return False
    loaded = sum(func.stats.cache_hits.values()) > hits
    FAST_LOADS += loaded
    return loaded


def load_first(func):
    """Have the dispatcher `func`, called from Python with argument types it has no
    machine code for yet, fast-load that code from the cache before it compiles.

    Numba's dispatcher (C code) calls `func._compile_for_args(*args)` then, which refreshes
    Numba fully even when it only loads the cache: the half second `fast_load` avoids.
    Kernels called from Python (an imperative loss's loops, an optimizer's update, a
    steps-tier kernel not preloaded) go through here. Not cached: Numba's own way."""
    compile_for_args = func._compile_for_args

    def load_or_compile(*args, **kws):
        if not kws and USED and USED_FAST:
            try:
                sig = tuple(func.typeof_pyval(a) for a in args)
            except Exception:            # noqa: BLE001 - Numba's way says what is wrong
                sig = None
            if sig is not None and sig not in func.overloads and fast_load(func, sig):
                return func.overloads[sig].entry_point
        return compile_for_args(*args, **kws)
    func._compile_for_args = load_or_compile     # the C dispatcher looks it up by name
    return func


def _damaged(func, sig) -> bool:
    """Does the entry of `func` for `sig` fail to unpickle? (Not removed here.)"""
    try:
        cache_file, key = _entry(func, sig)
        cache_file._load_data(cache_file._load_index()[key])
        return False
    except Exception:
        return True


def _valid_object(code: bytes, bitcode: bytes) -> bool:
    """Is `code` a well-formed 64-bit ELF object (every header and section inside the
    file) and `bitcode` LLVM bitcode? LLVM aborts the whole process on a malformed object
    ("LLVM ERROR: ... not a valid object file"), so a damaged file is caught here first.
    Other object formats (macOS, Windows) are not read back: compiled instead."""
    try:
        if code[:6] != b"\x7fELF\x02\x01" or bitcode[:4] != b"BC\xc0\xde" or \
                struct.unpack_from("<H", code, 16)[0] != 1:       # ET_REL
            return False
        shoff, = struct.unpack_from("<Q", code, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<3H", code, 0x3A)
        if shentsize != 64 or not 0 < shnum <= 4096 or shstrndx >= shnum \
                or shoff + shnum * 64 > len(code):
            return False
        sections = [struct.unpack_from("<IIQQQQIIQQ", code, shoff + 64 * k)
                    for k in range(shnum)]
        for _, kind, _, _, offset, size, link, _, _, _ in sections:
            if (kind != 8 and offset + size > len(code)) or link >= shnum:   # 8: NOBITS
                return False
        return all(_resolvable(code, sections, s) for s in sections if s[1] == 2)  # SYMTAB
    except (struct.error, UnicodeDecodeError):
        return False


def _resolvable(code, sections, symtab) -> bool:
    """Does every symbol the object needs from outside exist in this process? LLVM
    aborts on one that does not ("Symbol not found"), e.g. a damaged name."""
    _, _, _, _, offset, size, link, _, _, _ = symtab
    strings = code[sections[link][4]:sections[link][4] + sections[link][5]]
    for at in range(offset, offset + size - size % 24, 24):
        name, info, _, shndx = struct.unpack_from("<IBBH", code, at)
        if shndx == 0 and name and info >> 4 == 1:          # undefined, global
            end = strings.find(b"\0", name)
            if end < 0 or ll.address_of_symbol(strings[name:end].decode("ascii")) is None:
                return False
    return True


def _crashed_loading(path: Path) -> bool:
    """Did a process die while loading `path`? Its marker is left behind (see _loading):
    damage the checks above missed, so the file is removed and compiled again instead of
    aborting every later process too."""
    crashed = False
    for marker in path.parent.glob(path.name + ".loading-*"):
        pid = int(marker.name.rsplit("-", 1)[1]) if marker.name.rsplit("-", 1)[1].isdigit() \
            else 0
        try:
            if pid:
                os.kill(pid, 0)                  # alive: still loading, or a reused pid
                continue
        except PermissionError:
            continue
        except OSError:
            pass
        crashed = True
        with contextlib.suppress(OSError):
            marker.unlink()
    if crashed:
        with contextlib.suppress(OSError):
            path.unlink()
    return crashed


@contextlib.contextmanager
def _loading(path: Path):
    """A marker file naming this process, from before LLVM reads `path` until the process
    ends: LLVM links the code lazily, so a fault may come at any later compile. (A
    process that dies of anything else costs the next one a 25 ms runtime compile.)"""
    marker = path.with_name(f"{path.name}.loading-{os.getpid()}")
    cache_folders.write_bytes(marker, b"")
    atexit.register(lambda: marker.unlink(missing_ok=True))
    yield


def _runtime_library(ctx):
    """Numba's runtime functions (reference counts, atomics) from our cache.

    Numba compiles its runtime's small LLVM module in every process (~25 ms, a twentieth
    of a cached first call) and never caches it. We keep its machine code and bitcode,
    raw bytes after a line with their SHA-256 and sizes (no pickle), in the checked
    Numba folder, keyed by what they were compiled for (Numba, LLVM, the CPU), and load
    them like a kernel; anything unexpected compiles them as Numba would."""
    codegen = ctx.codegen()
    what = f"{numba.__version__} {ll.llvm_version_info} {codegen.magic_tuple()}"
    digest = hashlib.sha256(what.encode()).hexdigest()
    path = cache_folders.folders()[1] / "numba" / f"runtime-{digest[:16]}.bin"
    head, _, data = (cache_folders.read_trusted(path) or b"").partition(b"\n")
    try:
        digest, size = head.decode().split()
        code, bitcode = data[:int(size)], data[int(size):]
        if hashlib.sha256(data).hexdigest() == digest and _valid_object(code, bitcode) \
                and not _crashed_loading(path):
            with _loading(path):
                return codegen.unserialize_library(("nrt", "object", (code, bitcode)))
    except ValueError:          # missing, not yours alone, or damaged: compiled below
        pass
    from numba.core.runtime.nrtdynmod import create_nrt_module
    ir_module, library = create_nrt_module(ctx)
    library.enable_object_caching()          # so that its machine code can be saved
    library.add_ir_module(ir_module)
    library.finalize()
    _, _, (code, bitcode) = library.serialize_using_object_code()
    data = code + bitcode
    try:
        head = f"{hashlib.sha256(data).hexdigest()} {len(code)}\n".encode()
        cache_folders.write_bytes(path, head + data)
    except OSError:
        pass                                 # used uncached, as Numba does
    return library
