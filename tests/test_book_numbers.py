"""No measured number is typed into a chapter's prose.

A time or a speed-up written into markdown ("a second or two", "16 s", "3x faster") goes
stale: the next compiler change, or another machine, makes it wrong, and nothing notices.
Measured quantities belong in a code cell's output, and the prose refers to that output
("the cell prints the ratio"). A paragraph may quote a number that `benchmarks/README.md`
records with its machine and date, if it names that file.

What counts as a measured quantity, in markdown outside code spans, code blocks, math and
HTML tags:
  * a number with a unit of time: `16.4 s`, `10-30 s`, `2 ms`, `40 µs`, `3 minutes`;
  * a ratio: `3x`, `1.5×`, `4 times faster` (but not a shape such as `28×28` or `3x3`);
  * a percentage: `12%`;
  * a duration in words with a count: `two seconds`, `a second or two`, `a minute or more`;
  * in the Chinese edition, the same with Chinese units: `16.4 秒`, `3 倍`, `10-20 秒`.
Chapter numbers, years, versions, sizes and shapes have no such unit and are not flagged;
vague durations ("a few seconds", "a fraction of a second") are not numbers.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
CHAPTERS = sorted([p.stem for p in BOOK.glob("[0-9]*.ipynb")]
                  + [f"zh/{p.stem}" for p in (BOOK / "zh").glob("[0-9]*.ipynb")])
SOURCE_OF_RECORD = "benchmarks/README.md"

_UNIT = r"(?:s|ms|µs|μs|us|ns|sec|secs|seconds?|minutes?|mins?|hours?)\b"
_NUMBER = r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s*(?:-|–|to)\s*\d+(?:[.,]\d+)?)?"
_RATIO = (r"(?:[x×](?![\w\d])(?!\s*\d)|\s+times\s+(?:faster|slower|as\s+fast|longer|shorter|"
          r"more|less|larger|smaller))")
_COUNT_WORD = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|sixty)"
_WORD_UNIT = r"(?:(?:milli|micro)?seconds?|minutes?|hours?)"
MEASURED = re.compile(
    rf"{_NUMBER}\s*(?:{_UNIT}|%)|{_NUMBER}{_RATIO}"
    rf"|\b{_COUNT_WORD}(?:\s+(?:or|to)\s+{_COUNT_WORD})?\s+{_WORD_UNIT}\b"
    rf"|\ban?\s+{_WORD_UNIT}\s+or\s+(?:two|more|so)\b"
    # Chinese: a number right after a Chinese character counts too (\w would match it)
    rf"|(?<![0-9A-Za-z_.])\d+(?:[.,]\d+)?(?:\s*(?:-|–|到|至)\s*\d+(?:[.,]\d+)?)?"
    rf"\s*(?:秒|毫秒|微秒|分钟|小时|倍|%)", re.IGNORECASE)

_NOT_PROSE = [re.compile(p, re.S) for p in
              (r"```.*?```", r"\$\$.*?\$\$", r"\$[^$\n]+\$", r"`[^`\n]*`", r"<[^>\n]+>")]


def prose(markdown: str) -> str:
    """The markdown without code blocks, code spans, math and HTML tags."""
    for pattern in _NOT_PROSE:
        markdown = pattern.sub(" ", markdown)
    return markdown


def typed_numbers(markdown: str) -> list[str]:
    """The measured quantities typed into this markdown's prose (see the module docstring),
    except in paragraphs that name the benchmarks' record."""
    found = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        if SOURCE_OF_RECORD in paragraph:
            continue
        found += [m.group(0).strip() for m in MEASURED.finditer(prose(paragraph))]
    return found


@pytest.mark.parametrize("text, expected", [
    ("The first call costs 16.4 s here.", ["16.4 s"]),
    ("Compiling takes 10-30 s the first time.", ["10-30 s"]),
    ("About 250 ms per epoch, 40 µs per call.", ["250 ms", "40 µs"]),
    ("The hybridized net is 3.2x faster.", ["3.2x"]),
    ("It is 4 times faster than NumPy.", ["4 times faster"]),
    ("It saves 12% of the time.", ["12%"]),
    ("It costs a second or two, not minutes.", ["a second or two"]),
    ("It takes two minutes.", ["two minutes"]),
    ("冷启动编译耗时16.4秒，快了 3 倍。", ["16.4秒", "3 倍"]),
    ("多花 10-20 秒", ["10-20 秒"]),
])
def test_a_planted_number_is_found(text, expected):
    assert typed_numbers(text) == expected


@pytest.mark.parametrize("text", [
    "Chapter 23 (2026) uses MXNet 1.9.1 and 28×28 images, 3x3 filters, 5 × 5 kernels.",
    "The cell prints the ratio measured on this machine.",
    "A second network of the same shape; a few seconds; a fraction of a second.",
    "The code `timeit(number=200)` prints `3.1 s` and $O(n^2)$ steps.",
    "ResNet-18 took 10.9 CPU s cold (benchmarks/README.md).",
    "Train for 2 epochs with batch 64 and 1797 images.",
    "第 21 章用 28×28 的图像训练 4 轮，只需几秒。",
])
def test_what_is_not_a_measured_number(text):
    assert typed_numbers(text) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_measured_number_is_typed_into_prose(name):
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    typed = [(i, number) for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
             for number in typed_numbers(cell.source)]
    assert not typed, (
        f"{name}.ipynb: (cell, number) typed into the prose: {typed}. Print the measurement "
        f"in a code cell and refer to its output, or cite {SOURCE_OF_RECORD} in the paragraph")
