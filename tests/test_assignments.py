"""`make assignments`: the nbgrader release strips the solutions, and nbgrader's autograde
gives a right submission full marks and a partly wrong one part of them
(scripts/assignments.py; the checks are widgets/exercises.py's)."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts import assignments  # noqa: E402

# The quickest of the released chapters to run (autograde runs it whole, twice).
CHAPTER = "21_hybridblock"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_the_source_notebook_hides_answers_from_the_test_cells():
    nb = assignments.source_notebook(CHAPTER)
    numbers = [int(c.metadata["nbgrader"]["grade_id"][2:].split("_")[0]) for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade")]
    assert numbers == [1, 2, 3, 4]
    for n in numbers:
        answer, test = _cell(nb, f"ex{n}_answer"), _cell(nb, f"ex{n}_check")
        assert "### BEGIN SOLUTION" in answer.source and f"answer_{n} = dict(" in answer.source
        # the line under the first says what each answer is (the book's check cell comment)
        assert len(answer.source.splitlines()[1]) > 20, answer.source
        # the test cell names the answer only: nothing of the solution leaks into it
        assert test.source.splitlines()[-1] == f'assert check("21.{n}", **answer_{n})'
        assert test.metadata["nbgrader"]["points"] == 1
    # multiple choices are printed in the exercise's text
    assert "`why` is one letter:" in _cell(nb, "ex2_text").source
    with pytest.raises(ValueError, match="must end with `assert check"):
        assignments.split_check("print(1)", CHAPTER, 1)


def test_the_release_has_a_chapter_of_every_part_each_with_a_test_per_exercise():
    """make assignments releases a chapter of each part (00-03, 10-18, 20-27, 30-31), and
    each release grades every exercise the book checks (widgets/exercises.py)."""
    from widgets.exercises import CHECKS
    parts = {path.name[0] for path in (REPO / "book").glob("[0-9]*.ipynb")}
    assert {chapter[0] for chapter in assignments.CHAPTERS} == parts
    for chapter in assignments.CHAPTERS:
        nb = assignments.source_notebook(chapter)
        graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
                  if c.metadata.get("nbgrader", {}).get("grade")]
        checked = sorted(int(key.split(".")[1]) for key in CHECKS if key[:2] == chapter[:2])
        assert checked and graded == [f"ex{n}_check" for n in checked], chapter


@pytest.mark.slow
def test_nbgrader_gives_a_right_submission_full_marks_and_a_wrong_one_part(tmp_path):
    try:
        import nbgrader  # noqa: F401
    except ImportError:
        pytest.fail("nbgrader is not installed: `make venv` installs it (the book extra)")
    out = tmp_path / "course"
    (released,) = assignments.release(out, [CHAPTER])
    source = out / "source" / CHAPTER / f"{CHAPTER}.ipynb"

    student = nbformat.read(released, as_version=4)
    text = released.read_text()
    assert "BEGIN SOLUTION" not in text and "prints=1" not in text
    for n in (1, 2, 3, 4):
        assert _cell(student, f"ex{n}_answer").source.endswith("raise NotImplementedError()")

    # Right: the instructor's source, solutions in place.
    score, max_score = assignments.autograde(out, CHAPTER, "right", source)
    assert (score, max_score) == (4, 4)

    # Partly wrong: exercise 1 right, exercise 2 wrong (6 prints, not 2), 3 and 4 left as released.
    teacher = nbformat.read(source, as_version=4)
    _cell(student, "ex1_answer").source = _cell(teacher, "ex1_answer").source
    _cell(student, "ex2_answer").source = _cell(teacher, "ex2_answer").source.replace(
        "total_prints=2", "total_prints=6")
    wrong = tmp_path / "wrong.ipynb"
    nbformat.write(student, wrong)
    score, max_score = assignments.autograde(out, CHAPTER, "wrong", wrong)
    assert (score, max_score) == (1, 4)
