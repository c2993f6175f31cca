"""What compiled code depends on besides its own source, read without importing Numba.

Two keys are made from it: `cache.cache_key` (a generated module on disk) and
`ready.job_key` (a graph marked compiled). Both must change whenever the machine code
could: with Python, NumPy, Numba, this library, or the kernels' and code generator's
source (Numba does not notice that a callee changed when it loads a cached caller).
A first tiered call reads them, so nothing here imports Numba (its import costs a
few tenths of a second).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


@functools.lru_cache(maxsize=None)
def kernel_hash() -> str:
    """Hash of the kernels' and the code generator's source."""
    h = hashlib.sha256()
    for path in sorted(HERE.glob("kernels/*.py")) + [HERE / "codegen.py", HERE / "emitting.py"]:
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def numba_version() -> str:
    """Numba's version from its installed metadata's folder name (numba-0.68.1.dist-info),
    without importing Numba or importlib.metadata (tens of milliseconds)."""
    spec = importlib.util.find_spec("numba")
    folder = Path(spec.origin).parent.parent if spec and spec.origin else None
    found = sorted(folder.glob("numba-*.dist-info")) if folder else []
    if len(found) == 1:
        return found[0].name[len("numba-"):-len(".dist-info")]
    from importlib import metadata
    return metadata.version("numba")


def versions() -> str:
    """One line naming everything compiled code depends on besides its source."""
    from ..base import __version__
    jit = "off" if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0") else "on"
    # the checkout's folder too: Numba keeps the kernels' machine code per source folder,
    # so a graph compiled with another checkout's kernels is not "ready" for this one
    return (f"python={sys.version_info[:3]} numpy={np.__version__} "
            f"numba={numba_version()} straightdope={__version__} at {HERE.parents[1]} "
            f"kernels={kernel_hash()} jit={jit}")
