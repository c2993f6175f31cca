"""Build the book (scripts/build_book.sh, into a temporary directory) and open
every page in headless Chromium.

For each page (index + one per book/[0-9]*.ipynb) it asserts:
  * the page exists in the build (so every chapter made it into the TOC),
  * no request goes to a host other than 127.0.0.1 (the book works offline),
  * no local resource is missing (HTTP >= 400) and no JavaScript error,
  * no output cell shows an error or a traceback,
  * math renders (MathJax served locally),
  * pages with saved widget views render widgets (html-manager served locally).
A full-page screenshot of each page goes to artifacts/screenshots/<page>.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from browser_util import PageLog, serve_directory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
PAGES = ["index", *CHAPTERS]

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="session")
def book_url(built_book):
    with serve_directory(built_book) as base_url:
        yield base_url


def _wait_quietly(page, expression: str, timeout_ms: int) -> bool:
    try:
        page.wait_for_function(expression, timeout=timeout_ms)
        return True
    except Exception:  # playwright TimeoutError; the assertions below explain
        return False


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_offline(name, built_book, book_url, chromium_browser, artifacts_dir):
    html_file = built_book / f"{name}.html"
    assert html_file.is_file(), (
        f"{name}.html is missing from the build: is book/{name}.ipynb in book/_toc.yml?"
    )
    source = html_file.read_text(encoding="utf-8")
    n_widget_views = source.count(WIDGET_VIEW_MIME)

    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        log = PageLog.attach(page)
        page.goto(f"{book_url}/{name}.html", wait_until="networkidle", timeout=60_000)

        n_math = page.locator(".math").count()
        if n_math:
            # MathJax 3 typesets asynchronously after load.
            _wait_quietly(
                page,
                "window.MathJax && MathJax.startup && MathJax.startup.document"
                " && document.querySelectorAll('mjx-container').length > 0",
                30_000,
            )
        if n_widget_views:
            _wait_quietly(
                page,
                "document.querySelectorAll(\".cell_output [class*='widget-'],"
                " .cell_output .jupyter-widgets svg, .cell_output .jupyter-widgets img\").length > 0",
                30_000,
            )
        page.wait_for_load_state("networkidle")

        shots = artifacts_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

        assert not log.foreign_requests, (
            f"{name}: requests to other hosts (the book must work offline):\n"
            + "\n".join(sorted(set(log.foreign_requests)))
        )
        assert not log.failed_responses and not log.failed_requests, (
            f"{name}: missing local resources:\n"
            + "\n".join(log.failed_responses + log.failed_requests)
        )
        assert not log.page_errors, f"{name}: JavaScript errors:\n" + "\n".join(log.page_errors)
        assert not log.console_errors, f"{name}: console errors:\n" + "\n".join(log.console_errors)

        error_outputs = page.locator(
            ".cell_output .output.error, .cell_output .output.traceback, "
            ".cell_output .highlight-ipythontb"
        )
        assert error_outputs.count() == 0, (
            f"{name}: {error_outputs.count()} error output(s):\n"
            + error_outputs.first.inner_text()[:2000]
        )
        overflowing = page.evaluate(
            "[...document.querySelectorAll('div.cell_output pre')]"
            ".filter(p => p.scrollWidth > p.clientWidth + 2)"
            ".map(p => p.innerText.split('\\n').sort((a, b) => b.length - a.length)[0])")
        assert not overflowing, (
            f"{name}: {len(overflowing)} output(s) wider than the page, e.g. "
            f"{overflowing[0][:200]!r}")
        outputs_text = "\n".join(page.locator(".cell_output").all_inner_texts())
        assert "Traceback" not in outputs_text, f"{name}: a cell output shows a Traceback"
        assert "Error displaying widget" not in page.content(), f"{name}: a widget failed to render"

        if n_math:
            assert page.locator("mjx-container").count() > 0, (
                f"{name}: {n_math} math element(s) but MathJax rendered none"
            )
        if n_widget_views:
            rendered = page.locator(
                ".cell_output [class*='widget-'], "
                ".cell_output .jupyter-widgets svg, .cell_output .jupyter-widgets img"
            ).count()
            assert rendered > 0, (
                f"{name}: {n_widget_views} saved widget view(s) but none rendered"
            )
    finally:
        context.close()


def test_every_chapter_notebook_is_in_the_toc(built_book):
    """The generated TOC lists every book/[0-9]*.ipynb, in order (pages such as
    references and the instructor's guide may follow them)."""
    toc = (BOOK / "_toc.yml").read_text()
    listed = [line.split(":", 1)[1].strip() for line in toc.splitlines()
              if line.startswith("- file:")]
    assert [f for f in listed if f[:1].isdigit()] == CHAPTERS
    assert "references" in listed


def test_executed_notebooks_keep_widget_state(built_book):
    """A chapter that displays widgets must keep their state after execution,
    otherwise the HTML shows nothing where the widget was."""
    executed = built_book.parent / "jupyter_execute"
    for name in CHAPTERS:
        nb_path = executed / f"{name}.ipynb"
        if not nb_path.is_file():
            continue
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        has_views = any(
            WIDGET_VIEW_MIME in out.get("data", {})
            for cell in nb.get("cells", []) if cell.get("cell_type") == "code"
            for out in cell.get("outputs", [])
        )
        if has_views:
            state = nb.get("metadata", {}).get("widgets", {})
            assert "application/vnd.jupyter.widget-state+json" in state, (
                f"{name}: widget views in outputs but no saved widget state"
            )


def test_a_digit_drawn_in_chapter_26_is_classified_in_the_page_as_python_does(
        built_book, book_url, chromium_browser):
    """Chapter 26's drawing pad: mouse strokes on the canvas, ONNX Runtime Web (WebAssembly,
    served by the book) runs the exported LeNet, and its prediction for the pixels the page
    fed it equals our Python model's (the same .onnx imported as a SymbolBlock)."""
    import numpy as np

    from straightdope import nd
    from straightdope import onnx as sdonnx

    model_file = built_book / "_static" / "models" / "digits_lenet.onnx"
    assert model_file.is_file(), "chapter 26 did not publish its .onnx into the build"
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        log = PageLog.attach(page)
        page.goto(f"{book_url}/26_deploying.html", wait_until="networkidle", timeout=60_000)
        page.wait_for_selector(".sd-digits[data-ready='true']", timeout=60_000)
        page.locator("canvas.sd-pad").scroll_into_view_if_needed()
        pad = page.locator("canvas.sd-pad").bounding_box()       # in the viewport now
        python_model = sdonnx.import_model(model_file)
        mean, std = (float(page.locator(".sd-digits").get_attribute(a)) for a in
                     ("data-mean", "data-std"))
        strokes = {  # a "1" (one stroke) and a "7" (two), in fractions of the pad
            "one": [[(0.5, 0.15), (0.5, 0.85)]],
            "seven": [[(0.25, 0.2), (0.75, 0.2)], [(0.75, 0.2), (0.4, 0.85)]],
        }
        for k, (name, lines) in enumerate(strokes.items()):
            page.locator(".sd-clear").click()
            for line in lines:
                (x0, y0), (x1, y1) = line
                page.mouse.move(pad["x"] + x0 * pad["width"], pad["y"] + y0 * pad["height"])
                page.mouse.down()
                page.mouse.move(pad["x"] + x1 * pad["width"], pad["y"] + y1 * pad["height"],
                                steps=12)
                page.mouse.up()
            page.wait_for_function(
                f"Number(document.querySelector('.sd-digits').dataset.predictions) >= "
                f"{sum(len(v) for v in list(strokes.values())[:k + 1])}", timeout=30_000)
            result = page.evaluate("window.sdDigitsLast")
            pixels = np.array(result["pixels"], dtype="float32").reshape(1, 1, 28, 28)
            assert pixels.max() > 0.5 and (pixels > 0.1).mean() < 0.5, name   # ink drawn
            logits = python_model(nd.array((pixels - mean) / std)).asnumpy()[0]
            probabilities = np.exp(logits - logits.max())
            probabilities /= probabilities.sum()
            assert result["prediction"] == int(probabilities.argmax()), name
            np.testing.assert_allclose(result["probabilities"], probabilities, atol=1e-4)
            shown = page.locator(".sd-prediction").inner_text()
            assert shown == str(result["prediction"])
            assert page.locator(".sd-bar").count() == 10
        assert not log.foreign_requests, log.foreign_requests
        assert not log.page_errors and not log.console_errors, log.page_errors + log.console_errors
        assert any(url.endswith(".wasm") for url in log.requests), "no WebAssembly was loaded"
    finally:
        context.close()
