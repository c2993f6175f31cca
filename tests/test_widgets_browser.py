"""The widgets in a real JupyterLab, in a real (headless) Chromium.

Starts JupyterLab on 127.0.0.1 (a free port, no token, a temporary copy of
tests/notebooks/ as its root), opens widgets_demo.ipynb, runs all cells from the
Run menu, clicks the TraceInspector's "Call once more", and checks in the DOM that
the graph SVG, the printed trace lines and the benchmark plot appeared. A screenshot
goes to artifacts/screenshots/widgets_jupyterlab.png.

The python-level behaviour is tested in test_widgets.py; this file checks that the
front end (JupyterLab 4 + @jupyter-widgets) really shows it.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from browser_util import PageLog
from jupyterlab_util import (LAB_OVERRIDES, NEWS_QUESTION, REPO_ROOT, jupyterlab,
                             run_all_cells, wait_for_kernel_idle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
NOTEBOOK = "widgets_demo.ipynb"


@pytest.fixture
def lab(tmp_path):
    root = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, root)
    home = tmp_path / "jupyter"
    home.mkdir()
    with jupyterlab(root, home) as url:
        yield url


def test_widgets_in_jupyterlab(lab, chromium_browser, artifacts_dir):
    shipped = REPO_ROOT / "jupyter" / "lab" / "settings" / "overrides.json"
    assert LAB_OVERRIDES.is_file() and LAB_OVERRIDES.read_text() == shipped.read_text(), (
        f"{LAB_OVERRIDES} is missing or stale: run `make venv` (it installs {shipped})")
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    log = PageLog.attach(page)
    try:
        page.goto(f"{lab}/lab/tree/{NOTEBOOK}", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_for_kernel_idle(page)
        run_all_cells(page)
        # JupyterLab asks about news a few seconds after it starts, unless told not to;
        # by now (the cells have run) the question would be on screen.
        assert page.get_by_text(NEWS_QUESTION).count() == 0, (
            "JupyterLab asked whether to fetch Jupyter news: the settings override "
            f"{shipped} did not apply")

        errors = page.locator(".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, errors.first.inner_text()

        # GraphView: an inline SVG drawn by Graphviz, one node per op with its shapes.
        graph = page.locator(".sd-widget .widget-html-content svg").first
        graph.wait_for(timeout=30_000)
        labels = graph.locator("g.node text").all_text_contents()
        assert "FullyConnected 10" in labels and "relu" in labels, labels
        edges = graph.locator("g.edge text").all_text_contents()
        assert "1x3 float32" in edges and "1x10 float32" in edges, edges

        # TraceInspector: the prints of the imperative and of the tracing call.
        panels = page.locator(".sd-widget pre")
        texts = "\n".join(panels.all_inner_texts())
        assert "F: <module 'straightdope.ndarray'" in texts
        assert "F: <module 'straightdope.symbol'" in texts
        assert "x: <Symbol data" in texts

        # One more hybridized call: it runs the cached graph, so it prints nothing.
        page.get_by_role("button", name="Call once more").click()
        page.get_by_text("call 3 · cached graph ran, no Python").wait_for(timeout=30_000)
        counter = page.get_by_text(re.compile(r"3 calls \(1 imperative, 2 hybridized\)"))
        counter.wait_for(timeout=10_000)
        assert "1 trace" in counter.inner_text()

        # BenchmarkPlot: the PNG of a real measurement.
        image = page.locator(".sd-widget img").first
        image.wait_for(timeout=30_000)
        size = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert size[0] > 300 and size[1] > 150, size

        # A live run from the Run button: it measures in a kernel thread, and the widget
        # updates it sends from there reach the page (a new PNG, Run enabled again).
        before = image.get_attribute("src")
        run = page.locator(".sd-widget button", has_text=re.compile(r"^\s*Run\s*$"))
        run.click()
        page.wait_for_function(
            """([img, before]) => img.getAttribute('src') !== before""",
            arg=[image.element_handle(), before], timeout=60_000)
        page.wait_for_function("button => !button.disabled", arg=run.element_handle(),
                               timeout=60_000)
        bench = page.locator(".sd-widget", has_text="Imperative vs hybridized")
        assert "speedup" in bench.inner_text()

        # The notebook scrolls inside JupyterLab's panel, not the page: make the window
        # tall, hide the file browser, and put the first widget at the top.
        page.keyboard.press("Control+b")
        page.set_viewport_size({"width": 1400, "height": 3000})
        page.locator(".sd-widget").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        shots = artifacts_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "widgets_jupyterlab.png"))

        assert not log.page_errors, log.page_errors
        assert not log.failed_responses, log.failed_responses
    finally:
        context.close()
