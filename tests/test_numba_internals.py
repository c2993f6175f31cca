"""compiler/numba_internals.py: Numba's private API, used only with the tested Numba.

Each test runs fresh processes on one temporary cache dir, as a user's restarted
notebook does: the first compiles, the next loads."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest

from straightdope.compiler import cache, numba_internals
from straightdope.compiler.kernels import util

ROOT = Path(__file__).resolve().parent.parent
# Each test compiles or loads in fresh Python processes (about a minute in all): make test-slow.
pytestmark = pytest.mark.slow
with_tested_numba = pytest.mark.skipif(not numba_internals.USED,
                                  reason="this Numba is not the tested one: internals unused")

# A kernel and a whole graph (a FullyConnected layer, which inlines the BLAS kernels),
# compiled or loaded; PATCH runs first (after Numba's import, before straightdope's).
SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import numba
        from numba.core.cpu import CPUContext
        {patch}
        refreshes = []                  # Numba's full start-up, counted
        full_refresh = CPUContext.refresh
        def counted(self):
            refreshes.append(1)
            return full_refresh(self)
        CPUContext.refresh = counted

        import numpy as np
        from straightdope import sym
        from straightdope.compiler import NumbaBackend, cache, numba_internals
        from straightdope.compiler.kernels import util
        from straightdope.graph import Graph, annotate, run_reference
        x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
        kernel = cache.compile_function(util.copy, [x, 0, y, 0, 0], freeze=False)
        util.copy(x, 1, y, 0, 3)
        g = annotate(Graph.from_symbol(sym.FullyConnected(sym.var("data"), num_hidden=4,
                                                          name="fc"), ["data"]),
                     {{"data": (2, 3)}})
        inputs = [np.linspace(-1, 1, int(np.prod(n.shapes[0])), dtype=np.float32)
                  .reshape(n.shapes[0]) for n in g.nodes if n.is_var]
        out = NumbaBackend().compile(g, tier="graph").run(inputs)[0]
    print(json.dumps({{
        "kernel": kernel, "copied": y.tolist(),
        "graph_ok": bool(np.allclose(out, run_reference(g, inputs)[0], atol=1e-6)),
        "fast_loads": numba_internals.FAST_LOADS, "refreshes": len(refreshes),
        "used": numba_internals.USED, "used_fast": numba_internals.USED_FAST,
        "warnings": [str(w.message) for w in caught
                     if w.category.__name__ == "NumbaVersionWarning"]}}))
""")


def run(cache_dir, patch=""):
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(patch=patch)], cwd=ROOT,
                         env=dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(cache_dir)),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def numba_files(cache_dir) -> dict:
    """Every file in the cache's numba/ folder, with its bytes."""
    return {p: p.read_bytes() for p in (Path(cache_dir) / "numba").rglob("*") if p.is_file()}


@with_tested_numba
def test_a_second_process_loads_through_the_fast_path_without_numbas_full_start_up(tmp_path):
    first = run(tmp_path)
    assert first["kernel"]["cache_hit"] is False and first["refreshes"] > 0
    second = run(tmp_path)
    assert second["kernel"] == {**second["kernel"], "cache_hit": True, "fast_load": True}
    assert second["fast_loads"] >= 2                      # the kernel and the graph
    assert second["refreshes"] == 0                       # Numba's start-up never ran
    assert second["copied"] == first["copied"] == [1.0, 2.0, 3.0, 0.0]
    assert second["graph_ok"] and first["graph_ok"] and not second["warnings"]


OTHER_VERSION = "numba.__version__ = '0.67.0'"
MISSING_NAME = "del numba.core.caching.Cache._index_key"


@with_tested_numba
@pytest.mark.parametrize("patch", [OTHER_VERSION, MISSING_NAME])
def test_another_numba_compiles_with_the_public_api_only_and_deletes_nothing(tmp_path, patch):
    run(tmp_path)                                     # a tested Numba filled the cache
    before = numba_files(tmp_path)
    other = run(tmp_path, patch)
    assert other["used"] is False and other["fast_loads"] == 0
    assert other["kernel"] == {**other["kernel"], "cache_hit": False, "fast_load": False}
    assert other["copied"] == [1.0, 2.0, 3.0, 0.0] and other["graph_ok"]
    [warning] = other["warnings"]
    assert ">=0.68.1,<0.69" in warning and "numba 0.6" in warning
    assert ("0.67.0" in warning) == (patch == OTHER_VERSION)
    assert numba_files(tmp_path) == before        # nothing deleted, nothing cached beside


@with_tested_numba
def test_a_fast_load_that_breaks_on_a_sound_entry_warns_and_deletes_nothing(tmp_path):
    """A private API that changed is no reason to delete what Numba can still load."""
    run(tmp_path)
    before = numba_files(tmp_path)
    broken = run(tmp_path, "import straightdope.compiler.numba_internals as ni\n"
                           "    def gone(*args): raise AttributeError('renamed in Numba')\n"
                           "    ni._LinkedOnDemand._unserialize = classmethod(gone)")
    assert broken["used_fast"] is False and broken["fast_loads"] == 0
    assert broken["kernel"] == {**broken["kernel"], "cache_hit": True, "fast_load": False}
    assert broken["copied"] == [1.0, 2.0, 3.0, 0.0] and broken["graph_ok"]
    [warning] = broken["warnings"]
    assert "renamed in Numba" in warning and ">=0.68.1,<0.69" in warning
    assert before.items() <= numba_files(tmp_path).items()      # all kept, unchanged


@with_tested_numba
@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_a_damaged_cache_entry_is_replaced(tmp_path, suffix):
    run(tmp_path)
    [damaged] = [p for p in numba_files(tmp_path) if p.name.startswith("util.copy-")
                 and p.suffix == suffix]
    damaged.write_bytes(b"garbage")
    again = run(tmp_path)
    assert again["kernel"]["cache_hit"] is False and again["copied"] == [1.0, 2.0, 3.0, 0.0]
    assert again["used_fast"] and not again["warnings"]
    assert damaged.read_bytes() != b"garbage"
    assert run(tmp_path)["kernel"]["fast_load"] is True


# Issue 28 item 6: several threads whose first compiled call (np.dot inside) starts at once.
THREADS = textwrap.dedent("""
    import sys, threading
    sys.setswitchinterval(1e-6)     # threads take turns often: a race shows (4 runs in 6)
    import numpy as np
    from straightdope import sym
    from straightdope.compiler.backend import Executable
    from straightdope.graph import Graph, annotate, run_reference
    g = annotate(Graph.from_symbol(sym.FullyConnected(sym.var("data"), num_hidden=4,
                                                      name="fc"), ["data"]), {"data": (2, 3)})
    inputs = [np.full(n.shapes[0], 0.5, np.float32) for n in g.nodes if n.is_var]
    planned = [Executable(g, compile=False) for _ in range(8)]
    start, errors = threading.Barrier(len(planned)), []

    def first_call(executable):
        start.wait()
        try:
            executable.compile()             # loads SciPy's BLAS table first
            assert np.allclose(executable.run(inputs)[0], run_reference(g, inputs)[0])
        except Exception as err:
            errors.append(repr(err))

    threads = [threading.Thread(target=first_call, args=(e,)) for e in planned]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(errors)
""")


def test_threads_making_their_first_compiled_call_at_once_all_succeed(tmp_path):
    for _ in range(5):                      # the race showed in about 1 of 3 processes
        out = subprocess.run([sys.executable, "-c", THREADS], cwd=ROOT, timeout=600,
                             env=dict(os.environ, STRAIGHTDOPE_CACHE_DIR=str(tmp_path)),
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[]"


RECURRENCE = '''
from numba import njit


@njit(cache=False)
def run_graph(a):
    s = 0.0
    for i in range(6):          # a fixed trip count: LLVM's unroller unrolls it fully
        s = s * a[i] + 1.0
    return s
'''


def _multiplies(func, a) -> int:
    """How many multiplies the optimised LLVM IR of `func` for `a` holds."""
    return func.inspect_llvm((numba.typeof(a),)).count("fmul")


@pytest.mark.parametrize("used", [True, False])
def test_generated_code_is_optimised_without_unrolling_with_the_tested_numba(monkeypatch,
                                                                             used):
    """cache.compile_function compiles a generated function with LLVM's loop unrolling off
    (one multiply in a loop), a function of any other module as Numba does (six, unrolled);
    with another Numba, everything as Numba does. The results are the same."""
    if used and not numba_internals.USED:
        pytest.skip("this Numba is not the tested one")
    monkeypatch.setattr(numba_internals, "USED", used)
    a = np.arange(1.0, 7.0)
    text = RECURRENCE + f"# {used}\n"          # a new module (and source) per case
    generated, _ = cache.load(text)
    namespace = {"__name__": "not_generated"}
    exec(compile(RECURRENCE, "<not generated>", "exec"), namespace)
    other = namespace["run_graph"]
    for func in (generated.run_graph, other):
        assert cache.compile_function(func, [a], freeze=False)["jit"]
    assert generated.run_graph(a) == other(a) == 1237.0
    assert _multiplies(other, a) == 6
    assert _multiplies(generated.run_graph, a) == (1 if used else 6)


CALLER = '''
import numpy as np
from numba import njit

from straightdope.compiler.kernels import util as k_util


@njit(cache=True)
def run_graph(x, y):
    k_util.copy(k_util.flat(x), np.int64(0), y, np.int64(0), np.int64(x.size))
    for i in range(y.size):
        y[i] = k_util.nan_max(y[i], np.float32(1.5))
    return y
'''


def _defined_or_declared(func, args, name) -> set:
    """'define' and/or 'declare', for the functions named `name` in func's final IR."""
    text = func.inspect_llvm(tuple(numba.typeof(a) for a in args))
    return {line.split()[0] for line in text.splitlines()
            if line.startswith(("define", "declare")) and f"{len(name)}{name}B" in line}


@with_tested_numba
def test_generated_code_calls_the_loaded_array_kernels_and_a_later_process_loads_them(
        tmp_path, monkeypatch):
    """A generated function calls `copy` (arrays) where it is loaded instead of linking a
    copy of its code in, and still inlines the scalar `nan_max` and the view `flat`. Its cache entry loads the
    kernels first (reload_init); an entry whose kernels are not what it calls any more
    (StaleEntry) is removed and compiled again."""
    monkeypatch.setenv("STRAIGHTDOPE_CACHE_DIR", str(tmp_path))
    x = np.array([0.5, 2.0, np.nan], np.float32)
    args = [x, np.zeros(3, np.float32)]
    expected = [1.5, 2.0, np.nan]

    def compiled_anew():
        cache._MODULES.clear()             # a new dispatcher: loads from the disk cache
        module, _ = cache.load(CALLER)
        return module.run_graph, cache.compile_function(module.run_graph, args)

    func, first = compiled_anew()
    assert not first["cache_hit"]
    np.testing.assert_array_equal(func(*args), expected)
    assert _defined_or_declared(func, args, "copy") == {"declare"}
    for linked in ("nan_max", "flat"):                       # inlined or linked as usual
        assert _defined_or_declared(func, args, linked) <= {"define"}

    func, again = compiled_anew()
    assert again["cache_hit"]
    np.testing.assert_array_equal(func(x, np.zeros(3, np.float32)), expected)

    def stale(callees):
        raise numba_internals.StaleEntry("copy was compiled again")
    monkeypatch.setattr(numba_internals, "_load_callees", stale)
    func, rebuilt = compiled_anew()
    assert not rebuilt["cache_hit"]
    np.testing.assert_array_equal(func(x, np.zeros(3, np.float32)), expected)


@with_tested_numba
def test_loading_the_kernels_of_an_entry_checks_they_are_the_ones_it_calls():
    x = np.zeros(2, np.float32)
    cache.compile_function(util.copy, [x, 0, x, 0, 0], freeze=False)
    sig = (numba.typeof(x), numba.int64, numba.typeof(x), numba.int64, numba.int64)
    symbol = util.copy.overloads[sig].fndesc.mangled_name
    module = util.copy.py_func.__module__
    numba_internals._load_callees(((module, "copy", sig, symbol),))         # no error
    with pytest.raises(numba_internals.StaleEntry):
        numba_internals._load_callees(((module, "copy", sig, symbol + "x"),))
    with pytest.raises(numba_internals.StaleEntry):
        numba_internals._load_callees((("os.path", "join", sig, symbol),))
