"""The compiler's passes, memory plan, caches and safety (the ops themselves are in
test_compiler_ops.py).

Numba compile time dominates this file: graphs are small and reused, compiled
code stays in the on-disk cache (a second run compiles almost nothing), and the
hypothesis tests keep `max_examples` low.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.cached_op import CachedOp
from straightdope.compiler import STAGES, NumbaBackend, cache, numba_internals
from straightdope.graph import Graph, ReferenceBackend, annotate, run_reference
from straightdope.ops import OpError
from straightdope.symbol import SymbolFileError

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(0)


def mlp_symbol(hidden=(8, 6), out=3):
    x = sym.var("data")
    h = x
    for k, n in enumerate(hidden):
        h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{k}"), act_type="relu")
    return sym.FullyConnected(h, num_hidden=out, name="out")


def compile_symbol(symbol, shapes, is_train=False, dtype=np.float32, **flags):
    graph = annotate(Graph.from_symbol(symbol, ["data"]), shapes,
                     {n: dtype for n in shapes})
    return graph, NumbaBackend().compile(graph, is_train=is_train, **flags)


def random_inputs(graph, dtype=np.float32, rng=RNG):
    return [rng.standard_normal(n.shapes[0]).astype(dtype) for n in graph.nodes if n.is_var]


def mlp_shapes(batch=4, features=5):
    return {"data": (batch, features)}


# ------------------------------------------------------------------- stages
def test_stages_are_printable_drawable_objects_and_timed():
    graph, ex = compile_symbol(mlp_symbol(), mlp_shapes())
    assert tuple(ex.stages) == STAGES == ("traced", "shapes", "fused", "memory", "source")
    assert ex.stages["shapes"] is ex.graph                # the very graph it was given
    assert all(n.shapes is None for n in ex.stages["traced"].nodes)
    fused, plan, source = ex.stages["fused"], ex.stages["memory"], ex.stages["source"]
    assert "FullyConnected -> dot" in str(fused)
    # bias add + relu of each hidden layer: one loop of two ops, drawn as a box
    assert [len(g.nodes) for g in fused.groups] == [2, 2, 1]
    assert "subgraph cluster_" in fused.to_dot()
    assert "bytes planned" in str(plan) and "fillcolor" in plan.to_dot()
    assert plan.bytes_planned <= plan.bytes_imperative
    assert source.count("def run_graph(") == 1 and "k_blas.matmul" in source
    for key in ("shapes", "fuse", "plan", "codegen", "numba_compile"):
        assert ex.timings[key] >= 0.0
    # the graph came annotated: its "shapes" phase is the time annotate took for it
    assert ex.timings["shapes"] >= graph.annotate_seconds > 0.0
    assert isinstance(ex.timings["cache_hit"], bool)
    assert ex.timings["cache"] in ("memory", "disk", "miss")


def test_fusion_keeps_chains_and_cuts_at_kernels_and_views():
    x = sym.var("data")
    a = sym.exp(sym.tanh(x) * 2.0 + 1.0)                 # one chain of four ops
    s = sym.sum(a, axis=1, keepdims=True)                # a reduction cuts it
    y = sym.relu(sym.broadcast_sub(a, s))                # a new chain, broadcasting s
    z = sym.reshape(y, shape=(-1,))                      # a view
    graph, ex = compile_symbol(sym.Group([z * 3.0, s]), {"data": (3, 4)})
    kinds = [(st.kind, len(st.nodes)) for st in ex.stages["fused"].steps]
    assert kinds == [("fused", 4), ("kernel", 1), ("fused", 2), ("view", 1), ("fused", 1)]
    inputs = random_inputs(graph)
    for got, want in zip(ex.run(inputs), run_reference(graph, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_no_cycle_through_a_kernel():
    """`a` feeds a dot whose result is added to `a`: the add cannot join a's loop."""
    x = sym.var("data")
    a = sym.tanh(x)
    y = a + sym.dot(a, sym.var("w"))
    graph = annotate(Graph.from_symbol(y, ["data"]), {"data": (3, 3), "w": (3, 3)})
    ex = NumbaBackend().compile(graph)
    order = [st.label(ex.stages["fused"].graph) for st in ex.stages["fused"].steps]
    assert order == ["fused tanh", "kernel dot", "fused elemwise_add"]   # MXNet's `+`
    inputs = random_inputs(graph)
    np.testing.assert_allclose(ex.run(inputs)[0], run_reference(graph, inputs)[0], rtol=1e-5)


def test_debug_prints_the_stages(monkeypatch, capsys):
    monkeypatch.setenv("STRAIGHTDOPE_DEBUG", "3")
    compile_symbol(mlp_symbol(), mlp_shapes())
    err = capsys.readouterr().err
    assert "[straightdope] compiled" in err and "fused:" in err and "memory:" in err
    assert "def run_graph(" in err


# -------------------------------------------------------------- memory plan
def check_plan(ex):
    """An independent check of a memory plan: no two values that are live at the same
    time share bytes of an arena, except a fused loop writing over the operand it reads
    last, element for element."""
    fused, plan = ex.stages["fused"], ex.stages["memory"]
    g = fused.graph
    outputs = {tuple(e) for e in g.outputs}
    step_kind = {}
    source = {}                                     # a view -> the value it aliases
    defined, last = {}, {}
    for step in fused.steps:
        for n in step.nodes:
            step_kind[n] = step.kind
        for e in step.outputs:
            defined[e] = step.id
        if step.kind == "view":
            node = g.nodes[step.nodes[0]]
            if (node.id, 0) not in outputs:
                source[(node.id, 0)] = tuple(node.inputs[0])
        for e in step.inputs:
            last[tuple(e)] = step.id

    def base(e):
        while e in source:
            e = source[e]
        return e
    spans = {}                                      # value -> [def, last use] of its storage
    for e, d in defined.items():
        b = base(e)
        if b not in defined or g.nodes[b[0]].is_var:
            continue
        lo, hi = spans.get(b, (defined[b], defined[b]))
        spans[b] = (lo, max(hi, last.get(e, d), d))
    ranges = {}
    for e in spans:
        if plan.where(e) != "arena":
            continue
        dt = np.dtype(g.dtype_of(e))
        n = int(np.prod(g.shape_of(e))) if g.shape_of(e) else 1
        start = plan.offset(e)
        assert start + n <= plan.arena_sizes[dt.name], "a value beyond its arena"
        ranges[e] = (dt.name, start, start + n)
    values = list(ranges)
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            (da, sa, ea), (db, sb, eb) = ranges[a], ranges[b]
            if da != db or ea <= sa or eb <= sb or ea <= sb or eb <= sa:
                continue                            # different arenas or disjoint bytes
            (a0, a1), (b0, b1) = spans[a], spans[b]
            if a1 < b0 or b1 < a0:
                continue                            # never live at the same time
            first, second = (a, b) if a0 <= b0 else (b, a)
            in_place = (spans[first][1] == spans[second][0]
                        and step_kind[second[0]] == "fused"
                        and ranges[first][1:] == ranges[second][1:])
            assert in_place, f"values {a} and {b} overlap while both live ({spans[a]}, {spans[b]})"


def test_memory_plan_of_a_training_graph_reuses_buffers():
    net = mlp_symbol(hidden=(16, 16, 16))
    op = CachedOp(net, ["data"], backend=NumbaBackend())
    params = {}
    for n, s in [("fc0_weight", (16, 5)), ("fc0_bias", (16,)), ("fc1_weight", (16, 16)),
                 ("fc1_bias", (16,)), ("fc2_weight", (16, 16)), ("fc2_bias", (16,)),
                 ("out_weight", (3, 16)), ("out_bias", (3,))]:
        params[n] = nd.array(RNG.standard_normal(s))
        params[n].attach_grad()
    with autograd.record():
        (y,) = op([nd.array(RNG.standard_normal((4, 5)))], params)
    y.backward()
    for ex in (op.last_plan.forward, op.last_plan.backward):
        check_plan(ex)
    bwd = op.last_plan.backward.stages["memory"]
    assert bwd.bytes_planned <= 0.5 * bwd.bytes_imperative


def test_outputs_are_fresh_arrays_never_overwritten():
    graph, ex = compile_symbol(mlp_symbol(), mlp_shapes(), static_alloc=True)
    first_inputs = random_inputs(graph)
    first = ex.run(first_inputs)
    kept = [o.copy() for o in first]
    ex.run(random_inputs(graph))
    for o, k in zip(first, kept):
        np.testing.assert_array_equal(o, k)
        for arena in ex.current.arenas:
            assert not np.shares_memory(o, arena)


def test_static_alloc_keeps_the_arena_and_static_shape_skips_checks():
    graph, ex = compile_symbol(mlp_symbol(), mlp_shapes(), static_alloc=True,
                               static_shape=True)
    arenas = ex.current.arenas
    ex.run(random_inputs(graph))
    assert ex.current.arenas is arenas and sum(a.size for a in arenas) > 0
    graph, ex2 = compile_symbol(mlp_symbol(), mlp_shapes())
    assert ex2.current.arenas is None                     # a fresh arena per call


def test_a_new_batch_size_replans_without_a_new_numba_compile():
    graph, ex = compile_symbol(mlp_symbol(), mlp_shapes(batch=4))
    inputs = random_inputs(graph)
    inputs[0] = RNG.standard_normal((7, 5)).astype(np.float32)     # run() itself re-plans
    got = ex.run(inputs)[0]
    assert got.shape == (7, 3)
    assert ex.timings["cache"] in ("memory", "disk")                # same source, no compile
    assert list(ex.specializations) == [((4, 5), (8, 5), (8,), (6, 8), (6,), (3, 6), (3,)),
                                        ((7, 5), (8, 5), (8,), (6, 8), (6,), (3, 6), (3,))]
    assert ex.stages["shapes"].shape_of(ex.graph.outputs[0]) == (7, 3)
    big = annotate(Graph.from_symbol(mlp_symbol(), ["data"]), {"data": (7, 5)})
    np.testing.assert_allclose(got, run_reference(big, inputs)[0], rtol=1e-5, atol=1e-6)
    graph9, ex9 = compile_symbol(mlp_symbol(), mlp_shapes(batch=9))
    assert ex9.stages["source"] == ex.stages["source"] and ex9.timings["cache_hit"]


# ------------------------------------------------------- random small graphs
UNARY = ["relu", "tanh", "sigmoid", "negative", "abs", "square", "softsign"]
BINARY = ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum"]


@st.composite
def random_graphs(draw):
    """A small random graph over data (B, F): elementwise chains, broadcasting against
    parameters, dense layers, reductions, softmax, reshapes and concat."""
    features = draw(st.sampled_from([3, 4]))
    data = sym.var("data")
    pool = [(data, features)]                  # (symbol, feature count) of shape (B, F)
    n_params = 0
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "bias", "dense", "reduce", "softmax",
                                     "reshape", "concat", "scalar"]))
        s, f = draw(st.sampled_from(pool))
        if kind == "unary":
            pool.append((getattr(sym, draw(st.sampled_from(UNARY)))(s), f))
        elif kind == "binary":
            same = [p for p in pool if p[1] == f]
            other, _ = draw(st.sampled_from(same))
            pool.append((getattr(sym, draw(st.sampled_from(BINARY)))(s, other), f))
        elif kind == "bias":
            n_params += 1
            pool.append((sym.broadcast_add(s, sym.var(f"p{n_params}", shape=(f,))), f))
        elif kind == "dense":
            n_params += 1
            h = draw(st.sampled_from([2, 3, 5]))
            pool.append((sym.FullyConnected(s, num_hidden=h, name=f"fc{n_params}"), h))
        elif kind == "reduce":
            r = getattr(sym, draw(st.sampled_from(["sum", "mean", "max"])))(
                s, axis=1, keepdims=True)
            pool.append((sym.broadcast_sub(s, r), f))
        elif kind == "softmax":
            pool.append((sym.softmax(s), f))
        elif kind == "reshape":
            pool.append((sym.reshape(sym.reshape(s, shape=(-1,)), shape=(-1, f)), f))
        elif kind == "concat":
            other, g = draw(st.sampled_from(pool))
            pool.append((sym.concat(s, other, dim=1), f + g))
        else:
            pool.append((s * draw(st.sampled_from([0.5, -2.0])) + 1.0, f))
    picks = draw(st.lists(st.integers(1, len(pool) - 1), min_size=1, max_size=2, unique=True))
    return sym.Group([pool[i][0] for i in picks]), features


def _run_cached(symbol, backend, x, params, flags):
    op = CachedOp(symbol, ["data"], backend=backend, **flags)
    params = {k: nd.array(v) for k, v in params.items()}
    for p in params.values():
        p.attach_grad()
    xs = nd.array(x)
    xs.attach_grad()
    with autograd.record():
        outs = op([xs], params)
    heads = [nd.array(np.linspace(-1, 1, o.size).reshape(o.shape)) for o in outs]
    autograd.backward(outs, heads)
    grads = {k: p.grad.asnumpy() for k, p in params.items()}
    grads["data"] = xs.grad.asnumpy()
    return [o.asnumpy() for o in outs], grads, op


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_random_graphs_numba_equals_reference(spec, static_alloc, static_shape, seed):
    symbol, features = spec
    rng = np.random.default_rng(seed)
    # static_shape needs static_alloc, as in MXNet
    flags = dict(static_alloc=static_alloc or static_shape, static_shape=static_shape)
    batches = [3] if static_shape else [3, 5]                 # a shape change re-plans
    graph = Graph.from_symbol(symbol, ["data"])
    for batch in batches:
        shapes = annotate(graph, {"data": (batch, features)})
        params = {n.name: rng.standard_normal(n.shapes[0]).astype(np.float32)
                  for n in shapes.nodes if n.is_var and n.name != "data"}
        x = rng.standard_normal((batch, features)).astype(np.float32)
        got, got_grads, op = _run_cached(symbol, NumbaBackend(), x, params, flags)
        want, want_grads, _ = _run_cached(symbol, ReferenceBackend(), x, params, flags)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        for k in want_grads:
            np.testing.assert_allclose(got_grads[k], want_grads[k], rtol=1e-4, atol=1e-5,
                                       err_msg=f"gradient of {k}")
        check_plan(op.last_plan.forward)
        check_plan(op.last_plan.backward)
        check_fresh_outputs(op.last_plan.forward)
        check_fresh_outputs(op.last_plan.backward)


def check_fresh_outputs(ex):
    """What Executable.fresh_outputs promises (autograd hands such arrays to .grad without
    copying): outputs share memory with no input, no other output and no arena."""
    assert ex.fresh_outputs
    inputs = [x.astype(n.dtypes[0]) for x, n in
              zip(random_inputs(ex.graph), [n for n in ex.graph.nodes if n.is_var])]
    outs = ex.run(inputs)
    others = inputs + list(ex.current.arenas or [])
    for i, o in enumerate(outs):
        for other in others + outs[i + 1:]:
            assert not np.shares_memory(o, other), "an output shares memory"


# --------------------------------------------------------------- randomness
def test_seeding_makes_compiled_dropout_reproducible():
    x = sym.var("data")
    graph = annotate(Graph.from_symbol(sym.Dropout(x, p=0.3), ["data"]), {"data": (200, 50)})
    ex = NumbaBackend().compile(graph, is_train=True)
    ones = [np.ones((200, 50), np.float32)]
    mx.random.seed(7)
    a = ex.run(ones)[0]
    mx.random.seed(7)
    b = ex.run(ones)[0]
    mx.random.seed(8)
    c = ex.run(ones)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    kept = (a != 0).mean()
    assert abs(kept - 0.7) < 0.03 and np.allclose(a[a != 0], 1 / 0.7)


# ------------------------------------------------------------ on-disk cache
SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import straightdope as mx
    from straightdope import sym
    from straightdope.graph import Graph, annotate, run_reference
    from straightdope.compiler import NumbaBackend
    x = sym.var("data")
    y = sym.tanh(sym.FullyConnected(x, num_hidden=4, name="fc")) * {scale}
    g = annotate(Graph.from_symbol(y, ["data"]), {{"data": (2, 3)}})
    ex = NumbaBackend().compile(g)
    inputs = [np.full(n.shapes[0], 0.5, np.float32) for n in g.nodes if n.is_var]
    ok = bool(np.allclose(ex.run(inputs)[0], run_reference(g, inputs)[0], atol=1e-6))
    t = ex.timings
    print(json.dumps({{"cache": t["cache"], "hit": t["cache_hit"], "ok": ok,
                       "file": t["cache_file"], "status": t["cache_file_status"]}}))
""")


def run_child(cache_dir, scale=1.5, **env):
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(scale=scale)], cwd=ROOT,
                         env=dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir), **env),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow          # compiles in fresh processes
def test_a_second_process_loads_the_compiled_graph_from_disk(tmp_path):
    first = run_child(tmp_path)
    assert first == {**first, "cache": "miss", "hit": False, "ok": True, "status": "written"}
    second = run_child(tmp_path)
    assert second == {**second, "cache": "disk", "hit": True, "ok": True, "status": "reused"}
    text = Path(first["file"]).read_text()
    assert text.startswith("# straightdope-generated key=")


@pytest.mark.slow          # compiles in fresh processes
def test_a_corrupted_cache_is_detected_and_rebuilt(tmp_path):
    first = run_child(tmp_path, scale=2.5)
    path = Path(first["file"])
    path.write_text(path.read_text()[:200])               # a truncated module
    again = run_child(tmp_path, scale=2.5)
    assert again["status"] == "rebuilt" and again["ok"]
    damaged = list((path.parent / "numba").rglob(path.stem + ".*"))   # see cache.py
    assert damaged
    for f in damaged:
        f.write_bytes(b"garbage")                        # Numba's own cache files
    third = run_child(tmp_path, scale=2.5)
    assert third["ok"] and third["status"] == "reused"


def test_a_change_to_any_kernel_file_moves_every_cached_kernel_to_a_new_folder(monkeypatch,
                                                                                request):
    """Numba checks a cached kernel against its own file only, but conv.py's kernels
    compile in winograd.py's: the folder is keyed by all kernel files together."""
    from straightdope.compiler.kernels import conv
    kernel = conv.im2col_rows.py_func
    locator = numba_internals._TrustedLocator
    where = locator.from_function(kernel, conv.__file__).get_cache_path()
    assert cache._kernel_hash()[:16] in Path(where).parts
    read_bytes = Path.read_bytes                    # winograd.py edited, conv.py not
    monkeypatch.setattr(Path, "read_bytes", lambda self: read_bytes(self) + (
        b"# edited\n" if self.name == "winograd.py" else b""))
    from straightdope.compiler import fingerprint
    fingerprint.kernel_hash.cache_clear()           # hashed anew, and again afterwards
    request.addfinalizer(fingerprint.kernel_hash.cache_clear)
    moved = locator.from_function(kernel, conv.__file__).get_cache_path()
    assert moved != where and Path(moved).name == Path(where).name


BLAS_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from straightdope import sym
    from straightdope.graph import Graph, annotate, run_reference
    from straightdope.compiler import NumbaBackend
    x = sym.var("data")
    g = annotate(Graph.from_symbol(sym.FullyConnected(x, num_hidden=4, name="fc"), ["data"]),
                 {"data": (2, 3)})
    inputs = [np.full(n.shapes[0], 0.5, np.float32) for n in g.nodes if n.is_var]
    ok = np.allclose(NumbaBackend().compile(g).run(inputs)[0], run_reference(g, inputs)[0])
    print("ok" if ok else "wrong", "scipy.linalg" in sys.modules)
    import scipy.linalg
    print(scipy.linalg.cython_blas.__name__, scipy.linalg.blas.sdot(np.ones(3, np.float32),
                                                                  np.ones(3, np.float32)))
""")


def test_compiled_dot_runs_without_importing_scipy_linalg_which_still_imports_later():
    out = subprocess.run([sys.executable, "-c", BLAS_SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "False", "scipy.linalg.cython_blas", "3.0"]


LINK_SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import njit
    from straightdope.compiler import cache
    from straightdope.compiler.kernels import util
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    loaded = cache.compile_function(util.copy, [x, 0, y, 0, 0], freeze=False)["cache_hit"]
    library = util.copy.overloads[tuple(util.copy.signatures[0])].library
    waiting = getattr(library, "_bitcode", None) is not None
    from numba.core.runtime import rtsys
    runtime = "loaded" if getattr(rtsys.library, "_bitcode", None) else "compiled"
    util.copy(x, 1, y, 0, 3)

    @njit
    def caller(x, y, n):       # compiled now: inlines the loaded kernel's bitcode
        util.copy(x, n - n, y, n - 2, n)
        return y
    print(loaded, waiting, y.tolist(), caller(x, y.copy(), 3).tolist(),
          getattr(library, "_bitcode", None) is None)
    print("runtime", runtime)
""")


def run_link_script(cache_dir):
    out = subprocess.run([sys.executable, "-c", LINK_SCRIPT], cwd=ROOT, capture_output=True,
                         env=dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir)),
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_a_kernel_loaded_from_the_cache_parses_its_bitcode_only_when_a_caller_links_it(
        tmp_path):
    run_link_script(tmp_path)                    # compiles the kernel
    loaded = run_link_script(tmp_path)
    assert loaded[0] == "True True [1.0, 2.0, 3.0, 0.0] [1.0, 0.0, 1.0, 2.0] True"


@pytest.mark.slow          # compiles in fresh processes
def test_numbas_runtime_is_loaded_from_the_cache_and_a_damaged_copy_is_replaced(tmp_path):
    for _ in range(2):                           # the second process saves the runtime
        run_link_script(tmp_path)
    assert run_link_script(tmp_path)[1] == "runtime loaded"
    [saved] = (tmp_path / "numba").glob("runtime-*.bin")
    saved.write_bytes(saved.read_bytes()[:-10] + b"0123456789")
    damaged = run_link_script(tmp_path)
    assert damaged == [damaged[0], "runtime compiled"] and damaged[0].endswith("True")
    assert run_link_script(tmp_path)[1] == "runtime loaded"


def test_cache_files_are_written_atomically(tmp_path):
    target = tmp_path / "sub" / "x.py"
    cache.atomic_write_text(target, "a = 1\n")
    assert target.read_text() == "a = 1\n"
    assert [p.name for p in target.parent.iterdir()] == ["x.py"]   # no temporary left


def test_numba_disable_jit_still_works(tmp_path):
    result = run_child(tmp_path, scale=3.5, NUMBA_DISABLE_JIT="1")
    assert result["ok"] and result["cache"] == "off"


# ------------------------------------------------------------------- safety
HOSTILE = ["a\"b", "x'); __import__('os').system('echo pwned') #", "line\nbreak",
           "\\u0000", "{0}", "v0"]


def hostile_json(name_of_relu, attrs=None):
    nodes = [{"op": "null", "name": HOSTILE[0], "inputs": []},
             {"op": "null", "name": HOSTILE[1], "inputs": []},
             {"op": "broadcast_add", "name": HOSTILE[2], "inputs": [[0, 0, 0], [1, 0, 0]]},
             {"op": "_mul_scalar", "name": HOSTILE[3], "attrs": attrs or {"scalar": "2.5"},
              "inputs": [[2, 0, 0]]},
             {"op": "relu", "name": name_of_relu, "inputs": [[3, 0, 0]]}]
    return json.dumps({"nodes": nodes, "arg_nodes": [0, 1], "heads": [[4, 0, 0]],
                       "attrs": {"mxnet_version": ["int", 10900]}})


def test_hostile_node_names_never_reach_the_generated_source():
    symbol = sym.load_json(hostile_json("__import__('os').system('touch /tmp/pwned')"))
    names = symbol.list_arguments()
    graph = annotate(Graph.from_symbol(symbol, []), {n: (2, 3) for n in names})
    ex = NumbaBackend().compile(graph)
    source = ex.stages["source"]
    for name in HOSTILE + ["__import__", "pwned", "system"]:
        if name not in ("v0", "{0}"):
            assert name not in source
    assert "__import__" not in source and "os." not in source
    inputs = random_inputs(graph)
    np.testing.assert_allclose(ex.run(inputs)[0], run_reference(graph, inputs)[0], rtol=1e-6)


@pytest.mark.parametrize("bad", ["__import__('os').system('x')", "1e400 if True else 0",
                                 "(lambda: 1)()", "[1, 2]"])
def test_hostile_attributes_are_rejected_before_codegen(bad):
    with pytest.raises((OpError, SymbolFileError, ValueError)):
        symbol = sym.load_json(hostile_json("r", {"scalar": bad}))
        names = symbol.list_arguments()
        graph = annotate(Graph.from_symbol(symbol, []), {n: (2, 3) for n in names})
        NumbaBackend().compile(graph)


def test_codegen_refuses_anything_but_numbers():
    from straightdope.compiler.codegen import CodegenError, lit, typed
    assert lit(2) == "2" and lit(-0.5) == "(-0.5)" and lit(float("inf")) == "np.inf"
    assert lit(True) == "1"
    for bad in ("1", None, [1], object()):
        with pytest.raises(CodegenError):
            lit(bad)
    assert typed(3) == "np.int64(3)" and typed("s4") == "s4"
    assert typed("(1, s3)") == "(np.int64(1), s3)"
