"""The lecture slides: every chapter is also a reveal.js deck (scripts/build_slides.sh,
`make slides`), with slide types chosen per cell in the notebooks (docs/authoring.md).

The static tests read the notebooks. The browser tests build the decks from the book
build's executed notebooks (the `built_book` fixture, conftest.py) and open each deck in
headless Chromium: it loads offline, has slides, and its widgets and figures show.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from browser_util import PageLog, serve_directory

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


@pytest.fixture(scope="session")
def built_slides(built_book) -> Path:
    """scripts/build_slides.sh into the book build's directory; the slides/ directory."""
    out = built_book.parent.parent
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
