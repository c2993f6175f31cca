"""A class's shared compile cache for the tests, filled once per test session as
classroom/setup.sh fills it (the MLP's kernels only: a minute, not the full warm-up),
shared by tests/test_shared_cache.py and tests/test_classroom.py."""
from __future__ import annotations

import atexit
import functools
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "classroom"))
import hub  # noqa: E402  (classroom/hub.py)


@functools.lru_cache(maxsize=None)
def shared_cache() -> Path:
    """The filled shared cache (read-only for everyone but its owner); removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="straightdope-shared-"))
    atexit.register(shutil.rmtree, folder, True)
    hub.setup(folder / "shared-cache", warmup="--only mlp")
    return folder / "shared-cache"
