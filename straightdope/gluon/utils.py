"""Small helpers that Gluon code expects: splitting batches, clipping gradients,
hook handles, checking and fetching files."""
from __future__ import annotations

import hashlib
import math
import os
import shutil
import ssl
import urllib.request
import warnings
import weakref
from collections import OrderedDict

import numpy as _np

from ..context import check_context
from ..ndarray import NDArray, array
from ..serialization import atomic_write
from .parameter import shape_is_known  # noqa: F401  (MXNet exports it from here)

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "shape_is_known", "HookHandle"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Cut a batch into `num_slice` parts along `batch_axis` (one per device in MXNet)."""
    size = data.shape[batch_axis]
    if size < num_slice:
        raise ValueError(f"Too many slices for data with shape {data.shape}: {num_slice} slices "
                         f"of a batch of {size}. Use a larger batch or fewer slices.")
    if even_split and size % num_slice:
        raise ValueError(f"data with shape {data.shape} cannot be evenly split into "
                         f"{num_slice} slices along axis {batch_axis}. Use a batch size that "
                         f"is a multiple of {num_slice} or set even_split=False.")
    step = size // num_slice
    bounds = [i * step for i in range(num_slice)] + [size]
    if not even_split:          # spread the remainder over the first slices
        extra = size - step * num_slice
        bounds = [i * step + min(i, extra) for i in range(num_slice)] + [size]
    data = data if isinstance(data, NDArray) else array(data)
    return [data.slice_axis(axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split a batch over devices. straightdope has one device (the CPU), so a list with
    one context gives the whole batch back in a one-element list."""
    check_context(ctx_list)
    if not isinstance(data, NDArray):
        data = array(data)
    if not isinstance(ctx_list, (list, tuple)):
        ctx_list = [ctx_list]
    if len(ctx_list) == 1:
        return [data]
    return split_data(data, len(ctx_list), batch_axis, even_split)


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale the arrays (in place) so that their joint L2 norm is at most `max_norm`.
    Returns the norm before clipping."""
    if not arrays:
        raise ValueError("clip_global_norm: no arrays given")
    total = math.sqrt(sum(float(_np.sum(_np.square(a._data, dtype=_np.float64)))
                          for a in arrays))
    if check_isfinite and not math.isfinite(total):
        import warnings
        warnings.warn("nan or inf found in the gradients: clipping leaves them as they are",
                      stacklevel=2)
    scale = max_norm / (total + 1e-8)
    if scale < 1.0:
        for a in arrays:
            a._data *= scale
    return total


def check_sha1(filename, sha1_hash):
    """Does the file's SHA-1 match `sha1_hash`?"""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def _fetch(url, fname, verify_ssl):
    """Copy `url` into the file `fname`, atomically: an http(s) URL with `requests` when it
    is installed (as MXNet does), anything else (file://, no requests) with the standard
    library."""
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.")
    requests = None
    if url.lower().startswith(("http://", "https://")):      # requests fetches only these
        try:
            import requests
        except ImportError:
            pass
    if requests is None:
        context = ssl.create_default_context()
        if not verify_ssl:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        with urllib.request.urlopen(url, context=context) as response:
            atomic_write(fname, lambda f: shutil.copyfileobj(response, f))
        return
    response = requests.get(url, stream=True, verify=verify_ssl)
    if response.status_code != 200:
        raise OSError(f"the server answered HTTP {response.status_code}")

    def write(f):
        for chunk in response.iter_content(chunk_size=1 << 20):
            f.write(chunk)
    atomic_write(fname, write)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=1, verify_ssl=True):
    """Fetch `url` to `path` (a file or a folder), atomically, and check its SHA-1.

    Returns the file name. An existing file with the right hash is not fetched again;
    a failed try is repeated up to `retries` times in all.
    """
    fname = url.split("/")[-1] or "download"
    if path is not None:
        fname = os.path.join(os.path.expanduser(path), fname) if os.path.isdir(path) else path
    folder = os.path.dirname(os.path.abspath(fname))
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(fname) and not overwrite and (not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    last_error = None
    for _ in range(max(1, retries)):
        try:
            _fetch(url, fname, verify_ssl)
            break
        except OSError as err:
            last_error = err
    else:
        raise OSError(f"could not download {url}: {last_error}. Check the network or fetch "
                      f"the file by hand and place it at {fname}.")
    if sha1_hash and not check_sha1(fname, sha1_hash):
        os.unlink(fname)
        raise ValueError(f"{fname}: downloaded from {url}, but its SHA-1 does not match "
                         f"{sha1_hash}; the file was removed. The source may have changed.")
    return fname


def summary(block, *inputs):
    """Print each layer's output shape and parameter count (run one forward pass).

    Call it before hybridize(): a hybridized block runs its cached graph, so the
    layers' forward hooks that collect the table would not fire. Containers
    (Sequential, HybridSequential: `_summary_container = True`) get no row of their own.
    """
    rows = OrderedDict()
    seen = set()
    hooks = []

    def shape_str(args):
        def shapes(a):
            if isinstance(a, (list, tuple)):
                return [shapes(x) for x in a]
            return a.shape if isinstance(a, NDArray) else a
        s = shapes(args)
        return str(s)[1:-1] if isinstance(s, list) else str(s)

    def hook(b, _, outputs):
        key = f"{type(b).__name__}-{len(rows)}"
        row = rows[key] = {"output_shape": shape_str(outputs), "n_params": 0,
                           "trainable": 0, "shared": 0}
        for p in b.params.values():
            size = p.data().size
            row["n_params"] += size
            row["trainable"] += 0 if p.grad_req == "null" else size
            if id(p) in seen:
                row["shared"] += size
            seen.add(id(p))

    def check(b):
        if getattr(b, "_active", False):      # a hybridized HybridBlock
            raise AssertionError(
                f'"{b.name}" must not be hybridized to print summary: a hybridized '
                f'block runs its cached graph and its layers are never called one by one. '
                f'Call summary() before hybridize() (build the network again, or call '
                f'hybridize(active=False) first), then hybridize.')
        for child in b._children.values():
            check(child)

    def register(b):
        if not getattr(b, "_summary_container", False):
            hooks.append(b.register_forward_hook(hook))

    rows["Input"] = {"output_shape": shape_str(list(inputs)), "n_params": 0,
                     "trainable": 0, "shared": 0}
    check(block)        # outermost first, so the message names the block you called
    try:
        block.apply(register)
        block(*inputs)
        line = "{:>20}  {:>42} {:>15}"
        print("-" * 80)
        print(line.format("Layer (type)", "Output Shape", "Param #"))
        print("=" * 80)
        total = trainable = shared = 0
        for key, row in rows.items():
            print(line.format(key, row["output_shape"], row["n_params"]))
            total += row["n_params"]
            trainable += row["trainable"]
            shared += row["shared"]
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {total}")
        print(f"   Trainable params: {trainable}")
        print(f"   Non-trainable params: {total - trainable}")
        print(f"Shared params in forward computation graph: {shared}")
        print(f"Unique parameters in model: {total - shared}")
        print("-" * 80)
    finally:
        for h in hooks:
            h.detach()


def watch_ops(graph, cached_op_args, arrays, callback, monitor_all):
    """A hybridized block's op hook (register_op_hook), called op by op. The compiled graph
    fuses ops, so their values do not exist there: the reference interpreter runs the
    traced `graph` a second time, on the same inputs (`arrays`, in `cached_op_args`
    order), and shows each value named as MXNet does: `dense0_fwd_output`,
    `dense0_fwd_weight`."""
    from .. import autograd
    from ..graph.ir import Graph
    feeds = {name: array for (_, name, _), array in zip(cached_op_args, arrays)}
    values = {}
    for node in Graph.from_symbol(graph).nodes:
        if node.is_var:
            values[(node.id, 0)] = feeds[node.name]._data
            continue
        inputs = [values[tuple(e)] for e in node.inputs]
        if monitor_all:
            for name, array in zip(node.op.monitor_input_names(node.attrs, len(inputs)), inputs):
                callback(f"{node.name}_{name}", node.op.name, NDArray(array))
        results = node.op.run(node.attrs, inputs, autograd.is_training())
        names = node.op.output_names if len(node.op.output_names) == len(results) \
            else [f"output{k}" for k in range(len(results))]
        for k, (name, result) in enumerate(zip(names, results)):
            values[(node.id, k)] = result
            callback(f"{node.name}_{name}", node.op.name, NDArray(result))


class HookHandle:
    """What register_forward_hook returns: `detach()` removes the hook (also `with`)."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict: OrderedDict, hook):
        if self._hooks_dict_ref is not None:
            raise RuntimeError("this handle is already attached to a hook")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
