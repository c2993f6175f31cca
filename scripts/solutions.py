"""The book's convention for exercise solutions, in code: the cells it makes and the check.

Every chapter ends with `## Exercises` (a numbered list), then `## Solutions`. The solution
to exercise N is one markdown cell, folded in the HTML book and in JupyterLab alike::

    <details class="solution"><summary>Solution N</summary>

    The answer, in MyST markdown (code, math, lists).

    </details>

optionally followed by code cells that show it. Those run in the book build and the tests
like any other cell, and are hidden until asked for:

- tag `hide-cell`: the HTML book folds source and output behind a button
  ("Show code for solution N", myst-nb's `code_prompt_show`);
- `jupyter.source_hidden` / `jupyter.outputs_hidden`: JupyterLab shows the cell collapsed;
- tag `solution` (on the markdown cell too): tools and tests find solutions by it;
- `slideshow.slide_type: skip`: the lecture slides leave solutions out.

Use it from a notebook-editing script::

    from scripts.solutions import solution_cells
    nb.cells += solution_cells(1, "Prose answer.", "print('code that shows it')")

`python scripts/solutions.py` prints, per chapter (and per Chinese chapter, book/zh/), the
exercises and the solutions found.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent.parent / "book"
TAG = "solution"
SUMMARY = re.compile(r'^<details class="solution"><summary>Solution (\d+)</summary>\n')
# The same headings and summaries in the Chinese edition (book/zh/).
HEADINGS = {"en": ("## Exercises", "## Solutions", "Solution"),
            "zh": ("## 练习", "## 参考答案", "参考答案")}
# A numbered item of the Exercises list starts a line: "1. Run ...".
ITEM = re.compile(r"^(\d+)\. ", re.M)


def solution_markdown(number: int, text: str):
    """The folded markdown cell holding the answer to exercise `number`."""
    source = (f'<details class="solution"><summary>Solution {number}</summary>\n\n'
              f"{text.strip()}\n\n</details>")
    return nbformat.v4.new_markdown_cell(source, metadata={
        "tags": [TAG], "slideshow": {"slide_type": "skip"}})


def solution_code(number: int, code: str):
    """A code cell of solution `number`: executed, hidden in the HTML and in JupyterLab."""
    return nbformat.v4.new_code_cell(code.strip(), metadata={
        "tags": [TAG, "hide-cell"],
        "jupyter": {"source_hidden": True, "outputs_hidden": True},
        "mystnb": {"code_prompt_show": f"Show code for solution {number}",
                   "code_prompt_hide": f"Hide code for solution {number}"},
        "slideshow": {"slide_type": "skip"}})


def solution_cells(number: int, text: str, *codes: str) -> list:
    """The markdown cell of solution `number`, then one code cell per string in `codes`."""
    return [solution_markdown(number, text), *(solution_code(number, c) for c in codes)]


def exercise_numbers(nb, lang="en") -> list[int]:
    """The item numbers of the chapter's `## Exercises` list."""
    heading = HEADINGS[lang][0]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and heading in cell.source:
            listing = cell.source.split(heading, 1)[1]
            return [int(n) for n in ITEM.findall(listing)]
    return []


def solution_numbers(nb, lang="en") -> list[int]:
    """The numbers N of the chapter's `Solution N` markdown cells, in order."""
    summary = re.compile(SUMMARY.pattern.replace("Solution", HEADINGS[lang][2]))
    return [int(m.group(1)) for cell in nb.cells if cell.cell_type == "markdown"
            for m in [summary.match(cell.source)] if m]


def main() -> int:
    total_ex = total_sol = 0
    chapters = [(p, "en") for p in sorted(BOOK.glob("[0-9]*.ipynb"))]
    chapters += [(p, "zh") for p in sorted(BOOK.glob("zh/[0-9]*.ipynb"))]
    for path, lang in chapters:
        nb = nbformat.read(path, as_version=4)
        ex, sol = exercise_numbers(nb, lang), solution_numbers(nb, lang)
        total_ex, total_sol = total_ex + len(ex), total_sol + len(sol)
        missing = sorted(set(ex) - set(sol))
        print(f"{path.relative_to(BOOK).with_suffix('').as_posix():40s} exercises {len(ex):2d}  solutions {len(sol):2d}"
              + (f"  missing {missing}" if missing else ""))
    print(f"{'total':40s} exercises {total_ex:2d}  solutions {total_sol:2d}")
    return 0 if total_ex == total_sol else 1


if __name__ == "__main__":
    sys.exit(main())
