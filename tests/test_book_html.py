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

The Chinese edition (book/zh/, built into zh/) gets the same checks on its pages, and:
<html lang="zh-CN">, the language switch to the English page (every English page has
one to the Chinese), no paragraph of English prose outside code, its Chinese drawn with a
font that has the glyphs (no tofu), and no figure that matplotlib drew with missing glyphs.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from browser_util import PageLog, serve_directory
from test_zh_edition import CJK, english_paragraphs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9]*.ipynb"))
ZH_CHAPTERS = sorted(p.stem for p in BOOK.glob("zh/[0-9]*.ipynb"))
PAGES = ["index", *CHAPTERS, "zh/index", "zh/glossary", *(f"zh/{c}" for c in ZH_CHAPTERS)]

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
        page.screenshot(path=str(shots / f"{name.replace('/', '_')}.png"), full_page=True)

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

        check_language(page, name)
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


def check_language(page, name):
    """The page's language, its switch to the other edition, and (Chinese) its prose."""
    chinese = name.startswith("zh/")
    lang = page.locator("html").get_attribute("lang")
    assert lang == ("zh-CN" if chinese else "en"), f"{name}: <html lang={lang!r}>"
    link = page.locator(".bd-article .sd-lang-switch a")
    assert link.count() == 1, f"{name}: no language switch"
    stem = name.split("/")[-1]
    if chinese:
        english = (BOOK / f"{stem}.ipynb").is_file() or stem == "index"
        assert link.get_attribute("href") == f"../{stem if english else 'index'}.html"
        assert link.inner_text() == "English"
        # Prose outside code cells, code and math: no paragraph left in English.
        prose = page.evaluate("""() => {
            const article = document.querySelector('.bd-article').cloneNode(true);
            article.querySelectorAll('.cell, pre, code, .math, mjx-container, '
                + '.sd-lang-switch, .headerlink, script, style').forEach(e => e.remove());
            return [...article.querySelectorAll('p, li, h1, h2, h3, td, th, summary, caption')]
                .map(e => e.innerText);
        }""")
        english_prose = [p for text in prose for p in english_paragraphs(text)]
        if stem == "glossary":            # its first column is the English term
            english_prose = [p for p in english_prose if len(p.split()) > 8]
        assert not english_prose, f"{name}: English prose in the Chinese page: {english_prose[:3]}"
        assert CJK.search(page.locator("h1").first.inner_text())
    else:
        translated = (BOOK / "zh" / f"{stem}.ipynb").is_file() or stem == "index"
        assert link.get_attribute("href") == f"zh/{stem if translated else 'index'}.html"
        assert link.inner_text() == "中文"


def fonts_drawing(page, selector: str) -> list[str]:
    """The fonts Chromium drew the text of `selector` with (DevTools: platform fonts)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return [f["familyName"] for f in fonts if f["glyphCount"]]


def glyphs_of(family: str) -> set[int]:
    """The code points of the font fontconfig picks for `family` (what Chromium loads)."""
    from fontTools.ttLib import TTCollection, TTFont
    path = subprocess.run(["fc-match", "-f", "%{file}", family], capture_output=True,
                          text=True, check=True).stdout
    font = TTCollection(path).fonts[0] if path.endswith(".ttc") else TTFont(path, lazy=True)
    return set(font.getBestCmap())


def test_chinese_pages_draw_their_text_with_a_cjk_font(built_book, book_url, chromium_browser,
                                                       artifacts_dir):
    """No tofu: the fonts Chromium used for the heading and a paragraph of the Chinese
    front page have a glyph for every character, and two different Chinese words render
    differently (tofu would be the same empty box for both)."""
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{book_url}/zh/index.html", wait_until="networkidle", timeout=60_000)
        for selector in (".bd-article h1", ".bd-article p"):
            text = page.locator(selector).first.inner_text()
            families = fonts_drawing(page, selector)
            covered = set().union(*(glyphs_of(f) for f in families))
            missing = sorted({c for c in text if CJK.match(c) and ord(c) not in covered})
            assert not missing, f"{selector}: {families} lack {missing[:10]} (tofu)"
            assert any("CJK" in f for f in families), families
        page.evaluate("""words => words.forEach((word, k) => {
            const span = document.createElement('span');
            span.id = 'sd-font-probe-' + k; span.textContent = word;
            span.style.fontSize = '40px'; span.style.display = 'inline-block';
            document.querySelector('.bd-article').prepend(span);
        })""", ["命令式", "符号式"])
        shots = [page.locator(f"#sd-font-probe-{k}").screenshot() for k in range(2)]
        assert shots[0] != shots[1], "two different Chinese words drew the same pixels: tofu"
        (artifacts_dir / "screenshots").mkdir(exist_ok=True)
        (artifacts_dir / "screenshots" / "zh_font_probe.png").write_bytes(shots[0])
    finally:
        context.close()


def test_chinese_figures_were_drawn_with_every_glyph(built_book):
    """matplotlib warns 'Glyph N (...) missing from font(s)' when it draws tofu: no
    executed Chinese chapter has that warning in an output."""
    executed = built_book.parent / "zh" / "_build" / "jupyter_execute"
    tofu = []
    for name in ZH_CHAPTERS:
        nb = json.loads((executed / f"{name}.ipynb").read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", ""))       # a string, or a list of lines
                if re.search(r"Glyph \d+ .* missing from font", text):
                    tofu.append((name, i, text[:160]))
    assert not tofu, tofu


def test_every_chinese_chapter_is_in_the_chinese_toc(built_book):
    toc = (BOOK / "zh" / "_toc.yml").read_text()
    listed = [line.split(":", 1)[1].strip() for line in toc.splitlines()
              if line.startswith("- file:")]
    assert [f for f in listed if f[:1].isdigit()] == ZH_CHAPTERS
    assert "glossary" in listed
    for name in ZH_CHAPTERS:
        assert (built_book / "zh" / f"{name}.html").is_file(), name


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
    executed_zh = built_book.parent / "zh" / "_build" / "jupyter_execute"
    for nb_path in ([executed / f"{name}.ipynb" for name in CHAPTERS]
                    + [executed_zh / f"{name}.ipynb" for name in ZH_CHAPTERS]):
        name = nb_path.stem
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
