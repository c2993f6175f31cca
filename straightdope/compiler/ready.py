"""Ready markers: what identifies a compile (a graph as data, its key) and the files in
the cache dir that say a graph, or the VM, is compiled there. The executor marks what
it compiled; tiers.py looks before it compiles."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .. import config
from . import fingerprint


def describe(graph, is_train: bool) -> dict:
    """A graph as JSON-able data another process can rebuild it from (`rebuild`): its
    ops as MXNet JSON, which inputs are data, and the shapes and dtypes of its inputs."""
    variables = [n for n in graph.nodes if n.is_var]
    return {"symbol": graph.to_symbol().tojson(),
            "data": [n.name for n in variables if n.kind == "data"],
            "shapes": {n.name: list(n.shapes[0]) for n in variables},
            "dtypes": {n.name: np.dtype(n.dtypes[0]).name for n in variables},
            "is_train": bool(is_train)}


def rebuild(description: dict):
    """The annotated Graph of `describe(graph)`."""
    from ..graph import Graph, annotate
    from ..symbol import load_json
    graph = Graph.from_symbol(load_json(description["symbol"]), description["data"])
    return annotate(graph, {k: tuple(v) for k, v in description["shapes"].items()},
                    description["dtypes"])


def job_key(description: dict) -> str:
    """The name under which a compiled graph is marked ready in the cache dir."""
    text = fingerprint.versions() + "\n" + json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def ready_path(key: str) -> Path:
    return config.cache_dir() / "ready" / key[:40]


def is_ready(key: str) -> bool:
    """Did some process of this user compile this graph into the cache dir? (A marker
    only says where to look: what is loaded is checked by cache.py as always; one that
    another user could have written is ignored.)"""
    path = ready_path(key)
    try:
        return all(os.stat(p).st_uid == os.getuid() and not os.stat(p).st_mode & 0o022
                   for p in (path.parent.parent, path.parent, path))
    except OSError:
        return False


def vm_key() -> str:
    """The ready marker of the VM (kernels/vm.py): compiled for this library, Numba and
    machine by the setup step or by a compile process."""
    return hashlib.sha256((fingerprint.versions() + "\nthe VM").encode()).hexdigest()



def mark_ready(key: str):
    """Note in the cache dir that the graph of `key` is compiled (only in a cache dir
    that is used as it is: see cache.folders)."""
    from ..serialization import atomic_write
    from .cache import folders
    if folders()[2] != "ok" or is_ready(key):    # (a load marks nothing: no fsync)
        return
    path = ready_path(key)
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        atomic_write(path, lambda f: f.write(b"compiled\n"), mode=0o600)
    except OSError:
        pass
