"""The instructor's guide is a plan a lecturer can follow: every chapter is taught in some
50-minute session, each session's minute marks run from 0 to at most 50 with a 5-minute
buffer, its slides are sections of the chapters it names, and its live demo names cells
that exist in those chapters, under the sections it says."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
GUIDE = BOOK / "instructor_guide.md"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
SESSION_MINUTES = 50
BUFFER_MINUTES = 5

CHAPTER_NAME = r"\d\d_[a-z0-9_]+"


def flat(text):
    """Markdown wraps lines anywhere: compare with single spaces."""
    return " ".join(text.split())


def sessions(guide_text):
    """{number: text} of the guide's '## Session N: ...' sections."""
    parts = re.split(r"(?m)^## Session (\d+):", guide_text)
    found = {}
    for number, body in zip(parts[1::2], parts[2::2]):
        found[int(number)] = re.split(r"(?m)^## ", body)[0]
    return found


def paragraph(body, label):
    """The paragraph that starts with **label:**, whitespace flattened."""
    match = re.search(rf"(?ms)^\*\*{re.escape(label)}:\*\*(.*?)(?:\n\s*\n|\Z)", body)
    return flat(match.group(1)) if match else None


def minute_rows(body):
    """(start, end, what) of each row of the session's timing table."""
    return [(int(a), int(b), what.strip()) for a, b, what in
            re.findall(r"(?m)^\|\s*(\d+)\s*-\s*(\d+)\s*\|([^|]*)\|", body)]


def headings(name):
    """Every ## and ### heading of a chapter, without the #s, whitespace flattened."""
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    return {flat(line.lstrip("#")) for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if re.match(r"#{2,3} ", line)}


def code_cells(name):
    """(section, first line) of each code cell: the section is the nearest ## or ###
    heading above it."""
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    section, cells = None, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if re.match(r"#{2,3} ", line):
                    section = flat(line.lstrip("#"))
        elif cell.source.strip():
            cells.append((section, cell.source.strip().splitlines()[0].strip()))
    return cells


def demo_problems(demo, chapters):
    """What is wrong with a **Live demo:** paragraph: each `NN_name.ipynb` it names must be
    one of the session's chapters, and each `section "S", cell `C`` (or `cell `C``) a code
    cell of that chapter whose first line starts with C, under the heading S."""
    problems, current, named = [], None, 0
    pattern = (rf"`({CHAPTER_NAME})\.ipynb`"
               r'|section "([^"]+)", cell `([^`]+)`'
               r"|(?<![(])\bcell `([^`]+)`")
    for nb, section, cell, bare in re.findall(pattern, demo):
        if nb:
            current = nb
            if nb not in chapters:
                problems.append(f"{nb} is not among the session's chapters {chapters}")
            continue
        cell = cell or bare
        named += 1
        if current is None:
            problems.append(f"cell {cell!r} named before any notebook")
            continue
        matches = [s for s, first in code_cells(current) if first.startswith(cell)]
        if not matches:
            problems.append(f"{current}: no code cell starts with {cell!r}")
        elif section and section not in matches:
            problems.append(f"{current}: the cell {cell!r} is under {matches}, "
                            f"not under {section!r}")
    if not named:
        problems.append("names no cell")
    return problems


@pytest.fixture(scope="module")
def plan():
    found = sessions(GUIDE.read_text(encoding="utf-8"))
    assert found, f"{GUIDE} has no '## Session N:' sections"
    return found


def test_sessions_are_numbered_in_order(plan):
    assert sorted(plan) == list(range(1, len(plan) + 1)), sorted(plan)


def test_the_table_of_sessions_lists_every_session(plan):
    text = GUIDE.read_text(encoding="utf-8")
    table = text.split("## Sessions", 1)[1].split("\n## ", 1)[0]
    listed = [int(n) for n in re.findall(r"(?m)^\|\s*(\d+)\s*\|", table)]
    assert listed == sorted(plan), f"the table lists sessions {listed}, the guide has {sorted(plan)}"


def test_every_chapter_is_taught_in_a_session(plan):
    taught = {}
    for number, body in plan.items():
        chapters = paragraph(body, "Chapters")
        assert chapters, f"session {number} has no **Chapters:** paragraph"
        for name in re.findall(rf"`({CHAPTER_NAME})`", chapters):
            taught.setdefault(name, []).append(number)
    unknown = sorted(set(taught) - set(CHAPTERS))
    assert not unknown, f"the guide teaches chapters that do not exist: {unknown}"
    missing = [name for name in CHAPTERS if name not in taught]
    assert not missing, f"no session teaches {missing}"


def minute_problems(rows):
    """What is wrong with a session's timing rows: they must run on from minute 0 without
    gaps or overlaps, last at most 50 minutes and end with a buffer of at least 5."""
    if not rows:
        return ["no timing table"]
    problems, start = [], 0
    for a, b, what in rows:
        if a != start or b <= a:
            problems.append(f"row {a}-{b} ({what}) should start at minute {start}")
        start = b
    total = sum(b - a for a, b, _ in rows)
    if total > SESSION_MINUTES or start > SESSION_MINUTES:
        problems.append(f"lasts {total} minutes, ends at minute {start}")
    a, b, what = rows[-1]
    if not what.lower().startswith("buffer") or b - a < BUFFER_MINUTES:
        problems.append(f"does not end with a {BUFFER_MINUTES}-minute buffer: {rows[-1]}")
    return problems


def test_minute_marks_fit_fifty_minutes_with_a_buffer(plan):
    problems = [f"session {number}: {p}" for number, body in plan.items()
                for p in minute_problems(minute_rows(body))]
    assert not problems, "\n".join(problems)


def test_each_session_has_check_points_and_a_cut_list(plan):
    for number, body in plan.items():
        assert re.search(r"\*\*Check points\*\*\s*\n\s*\n1\. \(minute \d+\)", body), (
            f"session {number} has no numbered check points with a minute")
        assert "Expect:" in body, f"session {number} gives no answer to expect"
        cuts = paragraph(body, "Cut list")
        assert cuts and re.search(r"\(1\).*\(2\)", cuts), (
            f"session {number} has no ordered cut list")


def test_slides_are_sections_of_the_sessions_chapters(plan):
    problems = []
    for number, body in plan.items():
        slides = paragraph(body, "Slides")
        chapters = re.findall(rf"`({CHAPTER_NAME})`", paragraph(body, "Chapters") or "")
        if not slides:
            problems.append(f"session {number}: no **Slides:** paragraph")
            continue
        decks = re.split(rf"`({CHAPTER_NAME})\.slides\.html`", slides)
        if len(decks) < 3:
            problems.append(f"session {number}: names no deck")
        for deck, titles in zip(decks[1::2], decks[2::2]):
            if deck not in chapters:
                problems.append(f"session {number}: deck {deck} is not one of {chapters}")
                continue
            known = headings(deck)
            for title in re.findall(r'"([^"]+)"', titles):
                if title not in known:
                    problems.append(f"session {number}: {deck} has no section {title!r}")
    assert not problems, "\n".join(problems)


def test_each_live_demo_names_cells_that_exist(plan):
    problems = []
    for number, body in plan.items():
        demo = paragraph(body, "Live demo")
        chapters = re.findall(rf"`({CHAPTER_NAME})`", paragraph(body, "Chapters") or "")
        if not demo:
            problems.append(f"session {number}: no **Live demo:** paragraph")
            continue
        problems += [f"session {number}: {p}" for p in demo_problems(demo, chapters)]
    assert not problems, "\n".join(problems)


def test_the_demo_check_can_fail():
    """A demo naming a cell that is not there, or under another section, is caught."""
    good = ('`21_hybridblock.ipynb`, section "The TraceInspector widget", cell '
            '`from widgets import TraceInspector`')
    assert demo_problems(good, ["21_hybridblock"]) == []
    assert demo_problems(good.replace("TraceInspector`", "Nothing`"), ["21_hybridblock"])
    assert demo_problems(good.replace("The TraceInspector widget", "Summary"),
                         ["21_hybridblock"])
    assert demo_problems(good, ["20_imperative_vs_symbolic"])
    assert demo_problems("no cell at all", ["21_hybridblock"])


def test_the_minute_check_can_fail():
    rows = minute_rows("| 0-20 | a | |\n| 20-45 | b | |\n| 45-50 | buffer | |\n")
    assert [(a, b) for a, b, _ in rows] == [(0, 20), (20, 45), (45, 50)]
    assert minute_problems(rows) == []
    assert minute_problems(rows[:1] + [(25, 45, "b")] + rows[2:])        # a gap
    assert minute_problems(rows[:2] + [(45, 55, "buffer")])             # over 50
    assert minute_problems(rows[:2] + [(45, 48, "buffer")])             # short buffer
    assert minute_problems(rows[:2])                                    # no buffer
    assert minute_problems([])
