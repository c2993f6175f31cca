"""A class's shared compile cache (STRAIGHTDOPE_SHARED_CACHE_DIR, compiler/cache.py's
`seed_from_shared`): filled once by the administrator, read by every student, written by
none; refused, with what to do, when someone else could have written it.

The slow test fills a shared cache as classroom/setup.sh does (`python -m
straightdope.warmup --only mlp`, then made read-only for all but its owner) and looks at
it from a fresh student process with an empty cache of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from classroom_util import shared_cache
from straightdope.compiler import cache

ROOT = Path(__file__).resolve().parents[1]


def tree(folder) -> dict:
    """Every path under `folder` with its size, mode and modification time."""
    return {p: (p.lstat().st_size, p.lstat().st_mode, p.lstat().st_mtime_ns)
            for p in [Path(folder), *Path(folder).rglob("*")]}


def fake_shared(tmp_path) -> Path:
    """A shared cache as the administrator leaves it (world-readable, writable by its
    owner only) holding two functions' Numba files, the warm-up's manifest and the runtime."""
    shared = tmp_path / "shared"
    kernels = shared / "numba" / cache._kernel_hash()[:16] / "kernels_abc"
    kernels.mkdir(parents=True)
    for name in ("conv.conv2d-10.py311.nbi", "conv.conv2d-10.py311.1.nbc",
                 "conv.conv2d-10.py311.2.nbc", "blas.matmul-5.py311.nbi",
                 "blas.matmul-5.py311.1.nbc"):
        (kernels / name).write_bytes(b"shared " + name.encode())
    (kernels.parent / "warmup-0123.json").write_text('{"items": []}')
    (shared / "numba" / "runtime-0123.bin").write_bytes(b"runtime")
    (kernels / "save.lock").write_bytes(b"")
    for path in [shared, *shared.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return shared


def seed(shared, own):
    cache.seed_from_shared.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copied = cache.seed_from_shared(shared, own)
    return copied, [str(w.message) for w in caught if w.category is cache.CacheDirWarning]


def test_a_student_gets_what_the_shared_cache_holds_and_keeps_what_they_compiled(tmp_path):
    shared, own = fake_shared(tmp_path), tmp_path / "own"
    mine = own / "numba" / cache._kernel_hash()[:16] / "kernels_abc"
    mine.mkdir(parents=True, mode=0o700)
    for folder in (own, own / "numba", mine.parent):
        folder.chmod(0o700)
    (mine / "blas.matmul-5.py311.nbi").write_bytes(b"mine")     # compiled by the student
    (mine / "blas.matmul-5.py311.nbi").chmod(0o600)
    before = tree(shared)
    copied, warned = seed(shared, own)
    assert warned == [] and copied == 5       # conv2d's index and 2 data files, manifest, runtime
    name = "conv.conv2d-10.py311.2.nbc"
    assert (mine / name).read_bytes() == b"shared " + name.encode()
    assert (mine / "blas.matmul-5.py311.nbi").read_bytes() == b"mine"
    assert not (mine / "blas.matmul-5.py311.1.nbc").exists()   # kept whole: not mixed
    assert (mine.parent / "warmup-0123.json").exists()
    assert (own / "numba" / "runtime-0123.bin").read_bytes() == b"runtime"
    for path in mine.iterdir():               # private like everything in your cache
        assert path.stat().st_mode & 0o077 == 0, path
    assert cache.untrusted_inside(own / "numba") is None
    assert tree(shared) == before             # nothing written, not even a lock
    assert seed(shared, own) == (0, [])       # once there, nothing is copied again


def test_a_graph_compiled_into_the_shared_cache_is_read_from_there_if_intact(
        tmp_path, monkeypatch):
    shared, own = fake_shared(tmp_path), tmp_path / "own"
    source = "def run_graph(x0):\n    return x0\n"
    key = cache.cache_key(source)
    module = cache.module_path(key, shared)
    module.write_text(cache.HEADER.format(key=key, digest=cache._digest(source)) + source)
    (shared / "ready").mkdir()
    (shared / "ready" / key[:40]).write_bytes(b"compiled\n")
    for path in (module, shared / "ready", shared / "ready" / key[:40]):
        path.chmod(0o755 if path.is_dir() else 0o644)
    monkeypatch.setenv("STRAIGHTDOPE_CACHE_DIR", str(own))
    monkeypatch.setenv("STRAIGHTDOPE_SHARED_CACHE_DIR", str(shared))
    cache.seed_from_shared.cache_clear()
    info = {}
    assert cache._write_module(key, source, info) == module and info["file"] == "reused"
    assert (own / "ready" / key[:40]).read_bytes() == b"compiled\n"   # tiers.is_ready
    # edited there: not used, written into your own cache instead
    module.write_text(module.read_text().replace("return x0", "return -x0"))
    info = {}
    assert cache._write_module(key, source, info) == cache.module_path(key, own)
    assert info["file"] == "written"


@pytest.mark.parametrize("where", ["the dir", "its numba", "a file inside"])
def test_a_shared_cache_others_can_write_is_refused_naming_it_and_what_to_do(tmp_path, where):
    shared = fake_shared(tmp_path)
    target = {"the dir": shared, "its numba": shared / "numba",
              "a file inside": next(shared.rglob("*.nbc"))}[where]
    target.chmod(target.stat().st_mode | 0o020)          # group-writable
    copied, warned = seed(shared, tmp_path / "own")
    assert copied == -1 and len(warned) == 1
    assert f"STRAIGHTDOPE_SHARED_CACHE_DIR={shared} is not used" in warned[0]
    assert f"{target} is writable by others" in warned[0]
    assert f"chmod -R a+rX,go-w {shared}" in warned[0]
    assert not (tmp_path / "own" / "numba").exists()     # nothing copied


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_shared_cache_of_another_user_is_refused(tmp_path):
    shared = fake_shared(tmp_path)
    os.chown(shared / "numba", 65534, 65534)             # nobody
    copied, warned = seed(shared, tmp_path / "own")
    assert copied == -1
    assert f"{shared / 'numba'} belongs to user id 65534" in warned[0]


def test_a_shared_cache_without_this_versions_kernels_says_who_fills_it(tmp_path):
    shared = tmp_path / "shared"
    (shared / "numba" / "0000000000000000").mkdir(parents=True)   # another version's
    shared.chmod(0o755)
    copied, warned = seed(shared, tmp_path / "own")
    assert copied == -1
    assert "holds no kernels of this version of straightdope" in warned[0]
    assert f"STRAIGHTDOPE_CACHE_DIR={shared} python -m straightdope.warmup" in warned[0]


def test_the_shared_dir_is_read_from_the_environment(monkeypatch, tmp_path):
    from straightdope import config
    monkeypatch.delenv("STRAIGHTDOPE_SHARED_CACHE_DIR", raising=False)
    assert config.shared_cache_dir() is None
    monkeypatch.setenv("STRAIGHTDOPE_SHARED_CACHE_DIR", str(tmp_path))
    assert config.shared_cache_dir() == tmp_path


# A student's first process: the MLP's kernels (as the warm-up derives them) are in the
# cache before anything compiles, then each loads as a Numba cache hit; then the network
# runs hybridized. Prints what it found.
STUDENT = r"""
import json, sys, warnings
warnings.simplefilter("error", UserWarning)         # a CacheDirWarning fails the run
from straightdope import warmup
from straightdope.compiler import cache, tiers
from straightdope.compiler.backend import Executable
from straightdope import nd
tiers.prepare()                          # what hybridize() does first: the VM loads?
vm = tiers._vm_loaded()
graphs, _ = warmup.traced("mlp")
items = [item for graph, is_train in graphs
         for item in Executable(graph, is_train, tier="steps", compile=False).job()
         if item[0][0] == "kernel"]
missing = [w for w, _ in cache.missing(items)]
if sys.argv[1:] == ["check"]:
    print(json.dumps({"missing": missing}))
    sys.exit()
hits = [cache.compile_function(cache.resolve(w), a, freeze=False)["cache_hit"] for w, a in items]
net, inputs, _, _ = warmup.NETWORKS["mlp"]()
net.initialize()
net.hybridize(compile="sync")
out = net(*inputs)
print(json.dumps({"items": len(items), "missing": missing, "hits": hits, "vm": vm,
                  "shape": list(out.shape), "warmup_missing": warmup.kernels_missing()}))
"""


@pytest.mark.slow
def test_a_student_loads_the_shared_kernels_without_compiling_and_never_writes_there(tmp_path):
    shared = shared_cache()                   # filled by classroom/setup.sh (--only mlp)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    env.pop("STRAIGHTDOPE_SHARED_CACHE_DIR", None)
    before = tree(shared)

    def student(name, *args, **extra):
        run = subprocess.run([sys.executable, "-c", STUDENT, *args], cwd=ROOT, capture_output=True,
                             text=True, timeout=600,
                             env=dict(env, STRAIGHTDOPE_CACHE_DIR=str(tmp_path / name), **extra))
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout.splitlines()[-1])

    alone = student("alone", "check")         # without the shared cache: all to compile
    found = student("ada", STRAIGHTDOPE_SHARED_CACHE_DIR=str(shared))
    assert len(alone["missing"]) == found["items"] > 0 and found["missing"] == []
    assert all(found["hits"]), found          # every kernel a Numba cache hit: none compiled
    assert found["shape"] == [32, 10]
    assert found["vm"], "the VM compiled into the shared cache did not load"
    assert tree(shared) == before             # the shared cache is never written


def test_a_file_that_another_process_renames_during_the_check_is_not_an_error(tmp_path,
                                                                               monkeypatch):
    """Numba writes a cache file as `name.tmp.<id>` and renames it into place: the trust
    check's walk can list the temporary file and find it gone (two notebooks compiling)."""
    folder = tmp_path / "numba"
    folder.mkdir(mode=0o700)
    (folder / "g.run_graph-1.py311.1.nbc.tmp.abc").write_bytes(b"half written")
    real_walk = os.walk

    def walk_then_rename(top, *args, **kwargs):
        for root, dirs, files in real_walk(top, *args, **kwargs):
            for name in files:                          # the other process finishes
                if ".tmp." in name:
                    os.replace(os.path.join(root, name),
                               os.path.join(root, name.split(".tmp.")[0]))
            yield root, dirs, files
    monkeypatch.setattr(os, "walk", walk_then_rename)
    assert cache.untrusted_inside(folder) is None
    (folder / "link").symlink_to(tmp_path)               # still refused: a symbolic link
    assert "link" in cache.untrusted_inside(folder)
