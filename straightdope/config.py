"""The environment variables that change what straightdope does, all read here.

* `STRAIGHTDOPE_EXECUTOR` (`numba`): what runs hybridized graphs, `numba` (compiled),
  `numpy` (the reference interpreter) or `vm` (precompiled kernels, compiler/vm.py);
* `STRAIGHTDOPE_COMPILE` (`tiered`): when a graph compiles, `tiered` (in a background
  process; the VM, or on a new machine the NumPy tier, runs meanwhile) or `sync` (in
  the first call);
* `STRAIGHTDOPE_CACHE_DIR` (`~/.cache/straightdope`): the compile cache (generated
  modules and Numba's machine code);
* `STRAIGHTDOPE_SHARED_CACHE_DIR` (unset): a class's compile cache, filled once by the
  administrator (`python -m straightdope.warmup` with STRAIGHTDOPE_CACHE_DIR set to it) and
  read by every student; it must be owned by root or by you and writable by nobody else
  (docs/security.md). New compiles still go to STRAIGHTDOPE_CACHE_DIR;
* `STRAIGHTDOPE_DEBUG` (`0`): `1` prints each compile's timings, `2` also the fused steps
  and the memory plan, `3` also the generated source;
* `STRAIGHTDOPE_MAX_LOAD_BYTES` (16 GiB): the most array data one loaded file may declare;
* `STRAIGHTDOPE_ONNX_MAX_NODES` (100000): the most nodes an imported ONNX graph may have;
* `STRAIGHTDOPE_HOME` (`~/.straightdope`): where `pretrained=True` looks for weights;
* `MXNET_ENGINE_TYPE` (or `STRAIGHTDOPE_ENGINE_TYPE`; `NaiveEngine`): MXNet's variable:
  `NaiveEngine` runs each op when called, `ThreadedEngine` (or MXNet's default name
  `ThreadedEnginePerDevice`) pushes ops to worker threads (straightdope/engine.py;
  docs/engine.md says why the default is naive); read once, at import;
* `MXNET_CPU_WORKER_NTHREADS` (the number of cores, at most 4): the threaded engine's
  worker threads;
* `MXNET_ELIMINATE_COMMON_EXPR` (`1`): MXNet's variable: `0` keeps an executor's (and
  `nd.CachedOp`'s) graph as given, its repeated subexpressions unmerged (graph/cse.py);
* `STRAIGHTDOPE_LANG` (`en`, or `zh` in a notebook under `book/zh/`): the language the
  book's widgets and figures speak (widgets/messages.py).

Variables read by the libraries underneath are not read here: `OPENBLAS_CORETYPE`,
for one, forces OpenBLAS's kernels (README's table of knobs says what it costs).

Each function reads its variable when called, not at import, so setting one in a
running notebook takes effect at the next hybridize(), compile or load. An explicit
argument (`hybridize(executor=..., compile=...)`) wins over the variable.
"""
from __future__ import annotations

import os
from pathlib import Path

EXECUTORS = ("numba", "numpy", "vm")
COMPILE_MODES = ("sync", "tiered")
DEFAULT_MAX_LOAD_BYTES = 16 << 30
DEFAULT_ONNX_MAX_NODES = 100_000
LANGUAGES = ("en", "zh")
ENGINES = {"naiveengine": "NaiveEngine", "threadedengine": "ThreadedEngine",
           "threadedengineperdevice": "ThreadedEngine"}


def _choice(value, variable, default, choices, what) -> str:
    name = (value or os.environ.get(variable) or default).lower()
    if name not in choices:
        raise ValueError(f"unknown {what} {name!r}: choose one of {choices} "
                         f"(hybridize({what.split()[0]}=...) or {variable})")
    return name


def executor(name: str | None = None) -> str:
    """`name`, else $STRAIGHTDOPE_EXECUTOR, else 'numba'."""
    return _choice(name, "STRAIGHTDOPE_EXECUTOR", "numba", EXECUTORS, "executor")


def compile_mode(name: str | None = None) -> str:
    """`name`, else $STRAIGHTDOPE_COMPILE, else 'tiered'."""
    return _choice(name, "STRAIGHTDOPE_COMPILE", "tiered", COMPILE_MODES, "compile mode")


def cache_dir() -> Path:
    """$STRAIGHTDOPE_CACHE_DIR, else ~/.cache/straightdope."""
    path = os.environ.get("STRAIGHTDOPE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "straightdope")
    return Path(path)


def shared_cache_dir() -> Path | None:
    """$STRAIGHTDOPE_SHARED_CACHE_DIR, else None (no shared cache)."""
    path = os.environ.get("STRAIGHTDOPE_SHARED_CACHE_DIR")
    return Path(os.path.expanduser(path)) if path else None


def _integer(variable, default) -> int:
    try:
        return int(os.environ.get(variable) or default)
    except ValueError:
        return default


def debug_level() -> int:
    """$STRAIGHTDOPE_DEBUG as a number (0 when unset or not a number)."""
    return _integer("STRAIGHTDOPE_DEBUG", 0)


def max_load_bytes() -> int:
    """$STRAIGHTDOPE_MAX_LOAD_BYTES, else 16 GiB."""
    return _integer("STRAIGHTDOPE_MAX_LOAD_BYTES", DEFAULT_MAX_LOAD_BYTES)


def onnx_max_nodes() -> int:
    """$STRAIGHTDOPE_ONNX_MAX_NODES, else 100000 (an import takes about 7 s per 100000)."""
    return _integer("STRAIGHTDOPE_ONNX_MAX_NODES", DEFAULT_ONNX_MAX_NODES)


def home() -> Path:
    """$STRAIGHTDOPE_HOME, else ~/.straightdope."""
    return Path(os.path.expanduser(os.environ.get("STRAIGHTDOPE_HOME")
                                   or os.path.join("~", ".straightdope")))


def language(name: str | None = None, cwd: Path | None = None) -> str:
    """`name`, else $STRAIGHTDOPE_LANG, else 'zh' when the working directory is book/zh/
    (where JupyterLab starts a Chinese chapter's kernel), else 'en'."""
    here = Path.cwd() if cwd is None else Path(cwd)
    default = "zh" if (here.name, here.parent.name) == ("zh", "book") else "en"
    chosen = (name or os.environ.get("STRAIGHTDOPE_LANG") or default).lower()
    if chosen not in LANGUAGES:
        raise ValueError(f"unknown language {chosen!r}: choose one of {LANGUAGES} "
                         f"(widgets.messages.set_language(...) or STRAIGHTDOPE_LANG)")
    return chosen


def engine_type(name: str | None = None) -> str:
    """`name`, else $MXNET_ENGINE_TYPE, else $STRAIGHTDOPE_ENGINE_TYPE, else 'NaiveEngine'
    (MXNet's spellings; ThreadedEnginePerDevice is ThreadedEngine here)."""
    chosen = (name or os.environ.get("MXNET_ENGINE_TYPE")
              or os.environ.get("STRAIGHTDOPE_ENGINE_TYPE") or "NaiveEngine")
    if chosen.lower() not in ENGINES:
        raise ValueError(f"unknown engine {chosen!r}: choose NaiveEngine or ThreadedEngine "
                         f"(mx.engine.set_engine_type(...) or MXNET_ENGINE_TYPE)")
    return ENGINES[chosen.lower()]


def eliminate_common_expr() -> bool:
    """$MXNET_ELIMINATE_COMMON_EXPR: False for 0 (or false, off, no), else True (MXNet's
    default: on)."""
    value = os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1").strip().lower()
    return value not in ("0", "false", "off", "no")


def engine_workers() -> int:
    """$MXNET_CPU_WORKER_NTHREADS, else the number of cores, at most 4."""
    return max(1, _integer("MXNET_CPU_WORKER_NTHREADS", min(os.cpu_count() or 1, 4)))
