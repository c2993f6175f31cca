"""Part 1 and Part 2 of the book: every chapter notebook runs from top to bottom without an error.

Each notebook is executed with nbclient in a fresh kernel whose working directory is a
temporary directory (so a chapter that writes files cannot leave any in the repository).
The test is parametrized per notebook: a failing chapter is named in the test id, and the
failure message shows the failing cell's error. Notebooks are committed without outputs.
The Chinese chapters (book/zh/, "zh/<name>") are checked too: by default in the run the
Chinese book build made of them (tests/zh_util.py says why and how to run them here).
"""
from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from zh_util import executed_by_book_build, execute_here, is_zh, kernel_environment, zh_names

BOOK = Path(__file__).resolve().parent.parent / "book"

NOTEBOOKS = [
    "00_how_to_use",
    "01_ndarray",
    "02_autograd",
    "03_linear_regression",
    "10_layers_and_dense",
    "11_sequential",
    "12_custom_blocks",
    "13_parameters_and_custom_layers",
    "14_lenet",
    "15_model_zoo",
    "16_save_and_load",
    "17_summary_and_plot",
    "18_builders_guide",
]

pytestmark = pytest.mark.slow


def error_outputs(nb):
    """(cell index, 'ename: evalue') for every error output of an executed notebook."""
    return [(i, f"{out.get('ename')}: {out.get('evalue')}")
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


@pytest.mark.parametrize("name", NOTEBOOKS + zh_names(NOTEBOOKS))
def test_notebook_runs_without_error(name, tmp_path, request):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = BOOK / f"{name}.ipynb"
    assert path.exists(), f"{path} is missing"
    if is_zh(name) and not execute_here():
        nb = executed_by_book_build(request.getfixturevalue("built_book"), name)
        assert not error_outputs(nb), f"{name}.ipynb has error outputs: {error_outputs(nb)}"
        return
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with kernel_environment(name):
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": str(tmp_path)}}).execute()
    except CellExecutionError as err:
        pytest.fail(f"{name}.ipynb: a cell failed:\n{err}", pytrace=False)
    seconds = time.perf_counter() - start
    print(f"\n{name}: executed in {seconds:.1f} s")
    assert not error_outputs(nb), f"{name}.ipynb has error outputs: {error_outputs(nb)}"
