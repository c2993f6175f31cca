"""Part 3 and Part 4 of the book: every chapter notebook runs from top to bottom without an error.

Each notebook is executed with nbclient in a fresh kernel whose working directory is a
temporary directory (chapters that write files, e.g. `export`, write them there). On top of
"no error output", chapter 21 is checked for the lesson it teaches: the prints inside
`hybrid_forward` fire once, at trace time, with F = straightdope.symbol, and never again;
chapter 31 for its measurement: the foreach graph keeps one size while the unrolled one grows.
The Chinese chapters (book/zh/, "zh/<name>") are checked the same way, by default in the run
the Chinese book build made of them (tests/zh_util.py).
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from zh_util import executed_by_book_build, execute_here, is_zh, kernel_environment, zh_names

BOOK = Path(__file__).resolve().parent.parent / "book"

NOTEBOOKS = [
    "20_imperative_vs_symbolic",
    "21_hybridblock",
    "22_benchmarks",
    "23_under_the_hood",
    "24_export_and_import",
    "25_pitfalls",
    "27_async_and_other_tools",
    "30_training_lenet",
    "31_recurrent_networks",
]

pytestmark = pytest.mark.slow

_executed: dict[str, nbformat.NotebookNode] = {}


def execute(name: str, tmp_path_factory, request) -> nbformat.NotebookNode:
    """The executed notebook (run once per test session, shared by the tests below)."""
    if name not in _executed:
        from nbclient import NotebookClient
        path = BOOK / f"{name}.ipynb"
        if not path.exists():
            pytest.skip(f"{path.name} is not written yet")
        if is_zh(name) and not execute_here():
            _executed[name] = executed_by_book_build(request.getfixturevalue("built_book"), name)
            return _executed[name]
        nb = nbformat.read(path, as_version=4)
        cwd = tmp_path_factory.mktemp(name.replace("/", "_"))
        start = time.perf_counter()
        with kernel_environment(name):
            NotebookClient(nb, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": str(cwd)}}).execute()
        nb.metadata["execution_seconds"] = time.perf_counter() - start
        _executed[name] = nb
    return _executed[name]


def error_outputs(nb):
    """(cell index, 'ename: evalue') for every error output of an executed notebook."""
    return [(i, f"{out.get('ename')}: {out.get('evalue')}")
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stdout_of(cell) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "stream" and out.get("name") == "stdout")


def cell_tagged(nb, tag):
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag!r}, found {len(cells)}"
    return cells[0]


@pytest.mark.parametrize("name", NOTEBOOKS + zh_names(NOTEBOOKS))
def test_notebook_runs_without_errors(name, tmp_path_factory, request):
    nb = execute(name, tmp_path_factory, request)
    assert not error_outputs(nb), error_outputs(nb)
    if "execution_seconds" in nb.metadata:          # (the book build does not time them)
        print(f"{name}: executed in {nb.metadata['execution_seconds']:.1f} s")
        # Stay in the book's time budget (generous: shared CI machines are slower).
        assert nb.metadata["execution_seconds"] < 300


@pytest.mark.parametrize("name", ["21_hybridblock", *zh_names(["21_hybridblock"])])
def test_hybrid_forward_prints_fire_once(name, tmp_path_factory, request):
    nb = execute(name, tmp_path_factory, request)
    f_line = re.compile(r"^F:", re.MULTILINE)

    imperative = stdout_of(cell_tagged(nb, "imperative-call"))
    assert "F: <module 'straightdope.ndarray'" in imperative, imperative

    first = stdout_of(cell_tagged(nb, "hybridized-first-call"))
    assert first.count("F: <module 'straightdope.symbol'") == 1, first
    assert len(f_line.findall(first)) == 1, first

    second = stdout_of(cell_tagged(nb, "hybridized-second-call"))
    assert not f_line.findall(second), second


@pytest.mark.parametrize("name", ["31_recurrent_networks",
                                  *zh_names(["31_recurrent_networks"])])
def test_chapter_31_measures_a_fixed_size_loop_against_a_growing_unrolled_graph(
        name, tmp_path_factory, request):
    nb = execute(name, tmp_path_factory, request)
    sizes = [tuple(int(v) for v in line.split())
             for line in stdout_of(cell_tagged(nb, "graph-sizes")).splitlines()[1:]]
    assert [s[0] for s in sizes] == [5, 10, 20, 35]
    assert len({s[2] for s in sizes}) == 1, sizes                  # foreach: one size
    assert all(a[1] < b[1] for a, b in zip(sizes, sizes[1:])), sizes  # unrolled: grows
    rows = [line.split() for line in stdout_of(cell_tagged(nb, "compile-table")).splitlines()
            if line.strip() and line.split()[0].isdigit()]
    ops = {(int(r[0]), r[1]): int(r[2]) for r in rows}
    assert ops[(40, "foreach")] == ops[(5, "foreach")] < ops[(5, "unrolled")]
    assert ops[(5, "unrolled")] < ops[(20, "unrolled")] < ops[(40, "unrolled")]


def cell_with_id(nb, cell_id):
    cells = [c for c in nb.cells if c.get("id") == cell_id]
    assert len(cells) == 1, f"expected one cell with id {cell_id!r}, found {len(cells)}"
    return cells[0]


def _numbers(text):
    return [float(n) for n in re.findall(r"\d+\.\d+", text)]


@pytest.mark.parametrize("name", ["27_async_and_other_tools"]
                         + zh_names(["27_async_and_other_tools"]))
def test_chapter_27_runs_the_engine_experiments(name, tmp_path_factory, request):
    """The threaded engine's loop returns before the work is done (naive: not), a bad
    draw fails at the read naming the op, never waiting holds more memory, and the two
    chains' timeline shows two workers busy at once."""
    nb = execute(name, tmp_path_factory, request)
    ahead = stdout_of(cell_with_id(nb, "eng-ahead")).splitlines()
    naive_loop, naive_done = _numbers(ahead[0])[:2]
    threaded_loop, threaded_done = _numbers(ahead[1])[:2]
    assert threaded_loop < threaded_done / 2 and naive_loop > naive_done * 0.9
    errors = stdout_of(cell_with_id(nb, "eng-errors"))
    assert "random.normal: scale < 0" in errors and "(2, 2)" in errors
    memory = stdout_of(cell_with_id(nb, "c27-mem-code")).splitlines()
    assert _numbers(memory[-1])[0] > 1.0          # never waiting held more memory
    overlap = stdout_of(cell_with_id(nb, "eng-timeline"))
    assert _numbers(overlap)[0] > 0               # two workers busy at the same time
    widget = [o for o in cell_with_id(nb, "eng-timeline").outputs
              if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widget) == 1
