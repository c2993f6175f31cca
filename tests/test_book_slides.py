"""The lecture slides: every chapter is also a reveal.js deck (scripts/build_slides.sh,
`make slides`), with slide types chosen per cell in the notebooks (docs/authoring.md).

The static tests read the notebooks. The browser tests build the decks from the book
build's executed notebooks (the `built_book` fixture, conftest.py) and open each deck in
headless Chromium: it loads offline, has slides, and its widgets and figures show; on a
1280x720 screen every slide fits, admonitions are boxes, and no solution shows.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from browser_util import PageLog, serve_directory
from scripts.slides_prep import deck_cells, render_admonitions

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
# The Chinese edition's chapters (book/zh/), their decks in slides/zh/. Every deck is
# built (built_slides fails otherwise); the browser opens those with the book's widgets
# (Chinese labels, drawn by the same widget manager), to keep `make test` in its time.
ZH_CHAPTERS = sorted(f"zh/{p.stem}" for p in BOOK.glob("zh/[0-9]*.ipynb"))
ZH_WIDGET_DECKS = [n for n in ZH_CHAPTERS
                   if "import widgets" in (BOOK / f"{n}.ipynb").read_text(encoding="utf-8")
                   or "from widgets" in (BOOK / f"{n}.ipynb").read_text(encoding="utf-8")]
STARTS = ("slide", "subslide")
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def slide_types(name):
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    return nb, [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]


@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_chapter_has_hand_chosen_slides(name):
    nb, types = slide_types(name)
    assert types[0] == "slide", f"{name}.ipynb: the title cell must start a slide"
    assert sum(t in STARTS for t in types) >= 4, (
        f"{name}.ipynb: only {sum(t in STARTS for t in types)} slides; mark the title, "
        "the key code, the widget or plot and the summary (slideshow.slide_type)")
    summary = [t for c, t in zip(nb.cells, types)
               if c.cell_type == "markdown"
               and ("## 小结" if name.startswith("zh/") else "## Summary") in c.source]
    assert summary == ["slide"], f"{name}.ipynb: the Summary cell must start a slide"


def test_admonitions_become_boxes_whose_body_stays_markdown():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    source = ("Before.\n\n:::{admonition} How `MXNet` does it\n:class: note\n\n"
              "It calls `F.RNN`:\n\n```python\n:::\n```\n\n* one\n* two\n:::\n\nAfter.")
    html = markdown2html_mistune(render_admonitions(source))
    box = re.search(r'<div class="admonition note">(.*)</div>\s*<p>After.</p>', html, re.S)
    assert box, html
    assert '<p class="admonition-title">How <code>MXNet</code> does it</p>' in box.group(1)
    assert "<code>F.RNN</code>" in box.group(1) and "<li>one</li>" in box.group(1)
    assert ":::" in box.group(1) and "{admonition}" not in html   # the code block's line
    note = markdown2html_mistune(render_admonitions("```{warning} Careful.\n```", "zh"))
    assert '<div class="admonition warning">' in note and "警告" in note and "Careful." in note


@pytest.mark.parametrize("source, message", [
    (":::{figure} a.png\n:::", "{figure}"),
    (":::{note}\nno end", "never closed"),
])
def test_directives_the_deck_cannot_draw_stop_the_build(source, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        render_admonitions(source, where="book/x.ipynb, cell 3")


@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_deck_cells_leave_out_solutions_and_start_a_slide_per_section(name):
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    cells = deck_cells(nb, name)
    solutions = "## 参考答案" if name.startswith("zh/") else "## Solutions"
    assert not [c for c in cells if "solution" in c.metadata.get("tags", [])]
    assert not [c for c in cells if c.source.startswith(solutions)], name
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        assert not re.search(r"^(:::|```)\{", cell.source, re.M), cell.source[:80]
        headed = cell.source.startswith("## ")
        assert not re.search(r"\n## ", re.sub(r"```.*?```", "", cell.source, flags=re.S)), (
            f"{name}: a ## section inside a cell: {cell.source[:60]!r}")
        if headed:
            assert cell.metadata.get("slideshow", {}).get("slide_type") in ("slide", "skip"), (
                name, cell.source[:40])
    sections = sum(len(re.findall(r"^## ", c.source, re.M)) for c in nb.cells
                   if c.cell_type == "markdown" and "solution" not in c.metadata.get("tags", []))
    assert sum(c.source.startswith("## ") for c in cells) == sections - 1   # all but Solutions


@pytest.fixture(scope="session")
def built_slides(request) -> Path:
    """scripts/build_slides.sh into the book build's directory; the slides/ directory.
    STRAIGHTDOPE_SLIDES_BUILD=OUT tests the decks `scripts/build_slides.sh OUT` made."""
    reuse = os.environ.get("STRAIGHTDOPE_SLIDES_BUILD")
    if reuse:
        slides = Path(reuse) / "_build" / "slides"
        assert (slides / "assets").is_dir(), f"STRAIGHTDOPE_SLIDES_BUILD: no decks in {slides}"
        return slides
    out = request.getfixturevalue("built_book").parent.parent
    start = time.monotonic()
    proc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "build_slides.sh"), str(out)],
                          cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    log = REPO_ROOT / "artifacts" / "slides_build.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text(proc.stdout)
    if proc.returncode != 0:
        pytest.fail(f"build_slides.sh failed (exit {proc.returncode}), log in {log}:\n"
                    + "\n".join(proc.stdout.splitlines()[-40:]), pytrace=False)
    assert "executing" not in proc.stdout, (
        "build_slides.sh executed notebooks again instead of reusing the book build's")
    missing = [n for n in ZH_CHAPTERS
               if not (out / "_build" / "slides" / f"{n}.slides.html").is_file()]
    assert not missing, f"no Chinese deck for {missing}"
    print(f"slides built in {time.monotonic() - start:.1f} s")
    return out / "_build" / "slides"


@pytest.fixture(scope="session")
def slides_url(built_slides):
    with serve_directory(built_slides) as base_url:
        yield base_url


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS + ZH_WIDGET_DECKS)
def test_deck_loads_offline_with_its_slides_widgets_and_figures(
        name, built_slides, slides_url, chromium_browser, artifacts_dir):
    deck = built_slides / f"{name}.slides.html"
    assert deck.is_file(), f"no deck for {name}"
    source = deck.read_text(encoding="utf-8")
    _, types = slide_types(name)
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        page = context.new_page()
        log = PageLog.attach(page)
        page.goto(f"{slides_url}/{name}.slides.html", wait_until="networkidle",
                  timeout=60_000)
        page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=30_000)
        total = page.evaluate("Reveal.getTotalSlides()")
        assert total >= sum(t in STARTS for t in types) >= 4, (name, total)

        if WIDGET_VIEW_MIME in source:
            page.wait_for_function(
                "document.querySelectorAll(\".jupyter-widgets [class*='widget-'],"
                " .jupyter-widgets svg, .jupyter-widgets img\").length > 0",
                timeout=30_000)
        # Figures: every image decoded (matplotlib PNGs and widget images are inline).
        broken = page.evaluate("[...document.images].filter(i => !i.complete"
                               " || i.naturalWidth === 0).map(i => i.src.slice(0, 80))")
        assert not broken, f"{name}: images that did not load: {broken}"
        # Real figures only: the template's CSS holds a small data:image/png of its own.
        if re.search(r"<img\b|<svg\b", source):
            assert page.evaluate("document.images.length + "
                                 "document.querySelectorAll('.reveal svg').length") > 0

        shot = f"{name.replace('/', '_')}.slides.png"
        page.screenshot(path=str(artifacts_dir / "screenshots" / shot))
        assert not log.foreign_requests, (
            f"{name}: requests to other hosts:\n" + "\n".join(log.foreign_requests))
        assert not log.failed_responses and not log.failed_requests, (
            f"{name}: missing local files:\n"
            + "\n".join(log.failed_responses + log.failed_requests))
        assert not log.page_errors, f"{name}: JavaScript errors:\n" + "\n".join(log.page_errors)
        assert "Error displaying widget" not in page.content(), f"{name}: a widget failed"
    finally:
        context.close()


# What a deck must never show as text: MyST directive syntax that was not rendered.
RAW_DIRECTIVE = re.compile(r":::|```|\{(?:admonition|note|tip|hint|important|warning|caution"
                           r"|attention|danger|error|seealso|dropdown)\}|^:class:", re.M)
ADMONITION = re.compile(r"^(?:`{3,}|:{3,})\{(?:admonition|note|tip|hint|important|warning"
                        r"|caution|attention|danger|error|seealso)\}", re.M)
SCREEN = {"width": 1280, "height": 720}

# Per slide: where its box is, whether anything in it overflows or scrolls, its text, and
# its admonitions drawn as boxes (a border or a background, and a title).
MEASURE_SLIDE = """() => {
  const s = Reveal.getCurrentSlide();
  const box = s.getBoundingClientRect();
  const scrolled = [...s.querySelectorAll('*')].filter(el => {
    const st = getComputedStyle(el);
    // (4 px: a last line's descent or a collapsed margin, no hidden text)
    const y = /auto|scroll|hidden/.test(st.overflowY) && el.scrollHeight > el.clientHeight + 4;
    return y && el.clientHeight > 0 && !el.closest('.widget-subarea, mjx-container');
  }).map(el => el.className.toString().slice(0, 60) + ' ' + el.scrollHeight + '>' + el.clientHeight);
  const boxes = [...s.querySelectorAll('.admonition')].filter(a => {
    const st = getComputedStyle(a);
    const title = a.querySelector('.admonition-title');
    return a.offsetHeight > 0 && title && title.offsetHeight > 0
      && (parseFloat(st.borderLeftWidth) > 0 || st.backgroundColor !== 'rgba(0, 0, 0, 0)');
  }).length;
  return {top: box.top, bottom: box.bottom, left: box.left, right: box.right,
          sh: s.scrollHeight, ch: s.clientHeight, sw: s.scrollWidth, cw: s.clientWidth,
          scrolled, boxes, text: s.innerText,
          headings: [...s.querySelectorAll('h2')].map(h => h.textContent.replace('¶', '').trim()),
          solutions: s.querySelectorAll('details.solution').length,
          zooms: [...s.querySelectorAll('[data-fit-zoom]')].map(e => e.dataset.fitZoom)};
}"""


def deck_expectations(name):
    """From the notebook: how many admonitions the slides must draw (those in cells that are
    shown), the Solutions heading, and lines of solution code that appear nowhere else."""
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    solutions_heading = "参考答案" if name.startswith("zh/") else "Solutions"
    shown, solution_code = [], []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "solution" in tags:
            if cell.cell_type == "code":
                solution_code.append(cell.source)
        elif cell.metadata.get("slideshow", {}).get("slide_type") != "skip":
            shown.append(cell)
    admonitions = sum(len(ADMONITION.findall(c.source)) for c in shown
                      if c.cell_type == "markdown" and "## " + solutions_heading not in c.source)
    elsewhere = "\n".join(c.source for c in shown)
    marker_lines = [max(lines, key=len) for lines in
                    ([ln.strip() for ln in src.splitlines()
                      if len(ln.strip()) >= 25 and ln.strip() not in elsewhere]
                     for src in solution_code) if lines]
    return admonitions, solutions_heading, marker_lines


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS + ZH_CHAPTERS)
def test_every_slide_fits_the_screen_with_boxes_and_no_solutions(
        name, built_slides, slides_url, chromium_browser):
    """Visit every slide of the deck on a 1280x720 screen: nothing overflows it or scrolls
    inside it, no MyST directive shows raw, the admonitions are drawn as boxes, and
    nothing of the solutions is on a slide."""
    admonitions, solutions_heading, solution_lines = deck_expectations(name)
    context = chromium_browser.new_context(viewport=SCREEN)
    try:
        page = context.new_page()
        page.goto(f"{slides_url}/{name}.slides.html", wait_until="networkidle",
                  timeout=60_000)
        page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=30_000)
        # fit_slides.js cuts long slides once Reveal is ready and says when it is done;
        # the promise is set just after isReady() turns true, so wait for it to exist
        # (measuring in between saw zh/31's slides uncut).
        page.wait_for_function("window.slidesFitted !== undefined", timeout=30_000)
        page.evaluate("window.slidesFitted")
        # every slide in one round trip (measured as Reveal shows it: one at a time)
        measured = page.evaluate(
            "(measure => Reveal.getSlides().map(s => Reveal.getIndices(s)).map(i => {"
            " Reveal.slide(i.h, i.v || 0); return [i, measure()]; }))(" + MEASURE_SLIDE + ")")
        indices = [index for index, _ in measured]
        overflows, raw, solutions, zooms, boxes = [], [], [], [], 0
        for index, m in measured:
            h, v = index["h"], index.get("v") or 0
            where = f"{name} slide {h}/{v} ({m['text'].strip()[:50]!r})"
            if (m["top"] < -1 or m["bottom"] > SCREEN["height"] + 1 or m["left"] < -1
                    or m["right"] > SCREEN["width"] + 1 or m["sh"] > m["ch"] + 1
                    or m["sw"] > m["cw"] + 1 or m["scrolled"]):
                overflows.append(f"{where}: box {m['top']:.0f}..{m['bottom']:.0f} px of "
                                 f"{SCREEN['height']}, content {m['sh']} px in {m['ch']}, "
                                 f"scrolling inside: {m['scrolled'][:3]}")
            found = RAW_DIRECTIVE.search(m["text"])
            if found:
                raw.append(f"{where}: {found.group(0)!r}")
            if (solutions_heading in m["headings"] or m["solutions"]
                    or any(line in m["text"] for line in solution_lines)):
                solutions.append(where)
            zooms += m["zooms"]
            boxes += m["boxes"]
        print(f"{name}: {len(indices)} slides, {boxes} admonition boxes, scaled: {zooms}")
        problems = []
        if overflows:
            problems.append(f"{len(overflows)} of {len(indices)} slides do not fit a "
                            "1280x720 screen:\n" + "\n".join(overflows))
        if raw:
            problems.append(f"{len(raw)} slides show MyST directives as raw text:\n"
                            + "\n".join(raw))
        if solutions:
            problems.append(f"{len(solutions)} slides show solutions:\n" + "\n".join(solutions))
        if boxes != admonitions:
            problems.append(f"{admonitions} admonitions in the shown cells, {boxes} drawn "
                            "as boxes with their title")
        assert not problems, f"{name}:\n" + "\n".join(problems)
    finally:
        context.close()
