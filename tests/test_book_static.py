"""What every chapter notebook must be, without running it: committed without outputs,
with a title, 'What you will learn', a Summary and Exercises, and code lines that fit
the HTML page. (tests/test_book_part12.py and test_book_part34.py run the notebooks.)"""
from __future__ import annotations

import unicodedata
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
# The Chinese edition's chapters (book/zh/), as "zh/<name>".
ZH_CHAPTERS = sorted(f"zh/{p.stem}" for p in BOOK.glob("zh/[0-9]*.ipynb"))
HEADINGS = {"en": ("**What you will learn**", "## Summary", "## Exercises"),
            "zh": ("## 小结", "## 练习")}

# The HTML book shows about 80 characters of a code cell; longer lines are cut off
# behind a horizontal scroll bar (see artifacts/screenshots/).
MAX_CODE_LINE = 80


def read(name):
    return nbformat.read(BOOK / f"{name}.ipynb", as_version=4)


def columns(line: str) -> int:
    """How many monospace columns a line takes: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_there_are_chapters():
    assert len(CHAPTERS) >= 19, CHAPTERS


@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_committed_without_outputs(name):
    stale = [i for i, cell in enumerate(read(name).cells) if cell.cell_type == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not stale, f"{name}.ipynb has outputs in cells {stale}: clear them before committing"


@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_chapter_structure(name):
    """Every chapter has a title, 'What you will learn', a Summary and Exercises."""
    nb = read(name)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    for heading in HEADINGS["zh" if name.startswith("zh/") else "en"]:
        assert heading in text, f"{name}.ipynb lacks {heading!r}"


@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_code_lines_fit_the_page(name):
    long = [(i, columns(line)) for i, cell in enumerate(read(name).cells)
            if cell.cell_type == "code"
            for line in cell.source.splitlines() if columns(line) > MAX_CODE_LINE]
    assert not long, (f"{name}.ipynb: (cell, columns) of code lines wider than "
                      f"{MAX_CODE_LINE} columns (a Chinese character takes two): {long}")
