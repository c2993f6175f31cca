"""Every exercise of every chapter has a worked solution, folded in the HTML book and in
JupyterLab, in the convention of scripts/solutions.py (read there what each cell carries).
The solution cells run with the rest of the chapter (test_book_part*.py, the book build)."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.solutions import HEADINGS, TAG, exercise_numbers, solution_numbers  # noqa: E402

BOOK = REPO / "book"
# English chapters, then the Chinese edition's (book/zh/, its own headings: HEADINGS).
CHAPTERS = (sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
            + sorted(f"zh/{p.stem}" for p in BOOK.glob("zh/[0-9]*.ipynb")))


def read(name):
    return nbformat.read(BOOK / f"{name}.ipynb", as_version=4)


def lang(name):
    return "zh" if name.startswith("zh/") else "en"


def solution_part(nb, language="en"):
    """The cells from the `## Solutions` heading on."""
    start = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                  and c.source.startswith(HEADINGS[language][1])), len(nb.cells))
    return nb.cells[start + 1:]


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_exercise_has_exactly_one_solution(name):
    nb = read(name)
    exercises, solutions = exercise_numbers(nb, lang(name)), solution_numbers(nb, lang(name))
    assert exercises, f"{name}.ipynb: no numbered list under '{HEADINGS[lang(name)][0]}'"
    assert solutions == exercises, (
        f"{name}.ipynb: exercises {exercises} but solutions {solutions}; add one "
        "'Solution N' cell per exercise, in order (scripts/solutions.py makes them)")


@pytest.mark.parametrize("name", CHAPTERS)
def test_solutions_follow_the_exercises_under_their_own_heading(name):
    nb = read(name)
    exercises, solutions, _ = HEADINGS[lang(name)]
    headings = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                and (exercises in c.source or c.source.startswith(solutions))]
    tagged = [i for i, c in enumerate(nb.cells) if TAG in c.metadata.get("tags", [])]
    assert len(headings) == 2, f"{name}.ipynb: want one Exercises and one Solutions heading"
    assert tagged and min(tagged) > headings[1], (
        f"{name}.ipynb: solution cells {tagged} must come after '## Solutions' "
        f"(cell {headings[1]})")
    untagged = [i for i, c in enumerate(solution_part(nb, lang(name)), headings[1] + 1)
                if TAG not in c.metadata.get("tags", [])]
    assert not untagged, f"{name}.ipynb: cells {untagged} under '## Solutions' lack the tag"


@pytest.mark.parametrize("name", CHAPTERS)
def test_solution_cells_are_folded_in_the_html_and_in_jupyterlab(name):
    summary = f'<details class="solution"><summary>{HEADINGS[lang(name)][2]} '
    for cell in solution_part(read(name), lang(name)):
        where = f"{name}.ipynb cell {cell.get('id')}"
        if cell.cell_type == "markdown":
            # A closed <details>: folded in the HTML book and in JupyterLab's rendering.
            assert cell.source.startswith(summary), where
            assert cell.source.rstrip().endswith("</details>"), where
            assert "<details open" not in cell.source, where
        else:
            assert "hide-cell" in cell.metadata.get("tags", []), (
                f"{where}: tag it hide-cell so the HTML book folds it")
            assert cell.metadata.get("jupyter") == {"source_hidden": True,
                                                    "outputs_hidden": True}, (
                f"{where}: set jupyter.source_hidden/outputs_hidden so JupyterLab folds it")
        assert cell.metadata.get("slideshow") == {"slide_type": "skip"}, (
            f"{where}: solutions stay out of the lecture slides (slide_type skip)")

