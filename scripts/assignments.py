"""An nbgrader release of the book's exercises: one chapter per part (`make assignments`).

    python scripts/assignments.py [--out _build/assignments] [03_linear_regression ...]

For each chapter it writes an nbgrader *source* notebook, then runs nbgrader's
`generate_assignment`, which strips the solutions into the student *release*:

    <out>/source/<chapter>/<chapter>.ipynb    instructor version (solutions, tests)
    <out>/release/<chapter>/<chapter>.ipynb   student version (what to hand out)

The source notebook is the chapter up to its exercises, then per exercise N:

- the exercise's text (markdown);
- an answer cell (nbgrader "solution"): the chapter's Solution N code, ending with
  `answer_N = dict(...)`, between `### BEGIN SOLUTION` / `### END SOLUTION`; the release
  keeps only the comment naming what to define;
- a test cell (nbgrader "autograder tests", 1 point): `assert check("CC.N", **answer_N)`,
  the check the book runs (widgets/exercises.py).

The solutions' prose and the book's `check(..., None)` cells are left out. Grade with
`nbgrader autograde` from <out> (its nbgrader_config.py, copied from scripts/, sets the
cell timeout); tests/test_assignments.py grades a right and a wrong submission.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.solutions import HEADINGS, SUMMARY, exercise_numbers  # noqa: E402

BOOK = REPO / "book"
# One chapter per part of the book (its number's first digit), two of Part 3, the core.
CHAPTERS = ["03_linear_regression", "14_lenet", "21_hybridblock", "25_pitfalls",
            "30_training_lenet"]
CHECK_TAG = "exercise-check"
ITEM = re.compile(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", re.M | re.S)


def _meta(grade_id, *, solution=False, grade=False, points=0):
    meta = {"grade_id": grade_id, "solution": solution, "grade": grade,
            "locked": not solution, "schema_version": 3}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def split_check(code: str, chapter: str, number: int):
    """The solution code without its last statement `assert check("CC.N", a=..., ...)`,
    and that call's answers as source text: (code, {name: expression})."""
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body else None
    call = getattr(last, "test", None)
    key = f"{chapter[:2]}.{number}"
    if not (isinstance(last, ast.Assert) and isinstance(call, ast.Call)
            and getattr(call.func, "id", None) == "check"
            and isinstance(call.args[0], ast.Constant) and call.args[0].value == key):
        raise ValueError(f"book/{chapter}.ipynb: the code of Solution {number} must end with "
                         f'`assert check("{key}", ...)` (widgets/exercises.py)')
    lines = code.splitlines()
    answers = {kw.arg: ast.get_source_segment(code, kw.value) for kw in call.keywords}
    return "\n".join(lines[:last.lineno - 1]).rstrip(), answers


def choices_text(key: str) -> str:
    """The multiple choices of exercise `key`, as the book's check cell prints them."""
    from widgets.exercises import CHECKS
    exercise = CHECKS[key]
    parts = []
    for name in exercise.choices:
        options = "\n".join(f"- {letter}) {text[0]}"
                            for letter, text in exercise.shown(name).items())
        parts.append(f"\n\n`{name}` is one letter:\n\n{options}")
    return "".join(parts)


def source_notebook(chapter: str):
    """The nbgrader source notebook of book/<chapter>.ipynb (see the module docstring)."""
    nb = nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4)
    heading = HEADINGS["en"][0]
    at = next(i for i, c in enumerate(nb.cells)
              if c.cell_type == "markdown" and heading in c.source)
    numbers = exercise_numbers(nb)
    if not any(CHECK_TAG in c.metadata.get("tags", []) for c in nb.cells):
        raise ValueError(f"book/{chapter}.ipynb has no exercise checks (cells tagged "
                         f"{CHECK_TAG!r}); add them before releasing it as an assignment")
    texts = {int(n): text.strip() for n, text in
             ITEM.findall(nb.cells[at].source.split(heading, 1)[1])}
    codes: dict[int, list[str]] = {}
    current = None
    for cell in nb.cells[at + 1:]:
        match = SUMMARY.match(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = int(match.group(1))
        elif cell.cell_type == "code" and current and "solution" in cell.metadata.get("tags", []):
            codes.setdefault(current, []).append(cell.source)
    # What each answer is, from the comment of the book's check cell for the exercise.
    asked = {}
    for cell in nb.cells:
        if CHECK_TAG in cell.metadata.get("tags", []):
            key = re.search(r'check\("(\d+\.\d+)"', cell.source).group(1)
            comment = [line.lstrip("# ").strip() for line in cell.source.splitlines()
                       if line.startswith("#")]
            asked[key] = re.sub(r"^Exercise \d+: ", "", " ".join(comment))
    cells = [c for c in nb.cells[:at + 1] if CHECK_TAG not in c.metadata.get("tags", [])]
    cells.append(nbformat.v4.new_markdown_cell(
        "Each exercise has an answer cell: replace `raise NotImplementedError()` with your "
        "code, ending with the `answer_N = dict(...)` it names. The cell after it checks "
        "your answer (1 point)."))
    key_of = chapter[:2]
    for n in numbers:
        body, answers = split_check("\n\n".join(codes.get(n, [])), chapter, n)
        fields = ", ".join(f"{k}={v}" for k, v in answers.items())
        names = ", ".join(f"{k}=..." for k in answers)
        cells.append(nbformat.v4.new_markdown_cell(
            f"### Exercise {n}\n\n{texts.get(n, '')}{choices_text(f'{key_of}.{n}')}",
            metadata=_meta(f"ex{n}_text")))
        cells[-1].metadata["nbgrader"]["locked"] = True
        what = textwrap.fill(asked.get(f"{key_of}.{n}", ""), 76, initial_indent="# ",
                             subsequent_indent="# ")
        cells.append(nbformat.v4.new_code_cell(
            f"# Exercise {n}: define answer_{n} = dict({names})\n{what}\n### BEGIN SOLUTION\n"
            + (f"{body}\n" if body else "") + f"answer_{n} = dict({fields})\n### END SOLUTION",
            metadata=_meta(f"ex{n}_answer", solution=True)))
        cells.append(nbformat.v4.new_code_cell(
            f'from widgets.exercises import check\nassert check("{key_of}.{n}", **answer_{n})',
            metadata=_meta(f"ex{n}_check", grade=True, points=1)))
    nb.cells = cells
    for i, cell in enumerate(nb.cells):   # nbgrader wants unique ids; keep them stable
        cell.id = f"a{i:03d}"
    return nb


def nbgrader(*args, cwd: Path):
    """Run the nbgrader command line in the course directory `cwd`."""
    # nbgrader runs `alembic` (its database migrations) from PATH: the venv's bin/, which
    # `make` does not put on PATH.
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ.get("PATH", "")]))
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed in {cwd}:\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def release(out: Path, chapters=CHAPTERS) -> list[Path]:
    """Write the source notebooks and generate the student release under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "scripts" / "nbgrader_config.py", out / "nbgrader_config.py")
    released = []
    for chapter in chapters:
        folder = out / "source" / chapter
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{chapter}.ipynb"
        tmp = path.with_suffix(".tmp")
        nbformat.write(source_notebook(chapter), tmp)
        tmp.replace(path)                  # atomic: a half-written notebook never lands
        nbgrader("generate_assignment", chapter, "--force", cwd=out)
        released.append(out / "release" / chapter / f"{chapter}.ipynb")
    return released


def autograde(out: Path, chapter: str, student: str, notebook: Path) -> tuple[float, float]:
    """Grade `notebook` as `student`'s submission of `chapter` with nbgrader's autograde
    (it runs the notebook, with the test cells of the release put back as they were);
    returns (score, max_score)."""
    from nbgrader.api import Gradebook
    folder = out / "submitted" / student / chapter
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, folder / f"{chapter}.ipynb")
    nbgrader("autograde", chapter, "--student", student, "--force", cwd=out)
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(chapter, student)
        return submission.score, submission.max_score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*", default=CHAPTERS)
    parser.add_argument("--out", type=Path, default=REPO / "_build" / "assignments")
    args = parser.parse_args()
    for path in release(args.out, args.chapters):
        print(f"released {path.relative_to(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
