"""Book chapters opened as a student opens them: in JupyterLab, in headless Chromium.

The book build executes every chapter with nbclient (test_book_part*.py), but a student
runs them in JupyterLab, where widgets need their front end and the library runs with
its defaults (the tiered compile: the first hybridized call may answer from the NumPy
tier while a background process compiles). Each chapter here is copied with the book's
data into a temporary root, run with Run > Run All Cells, and checked in the DOM. A Chinese
chapter runs in JupyterLab's Chinese interface, its widgets speaking Chinese.
"""
from __future__ import annotations

import re
import shutil

import pytest

from browser_util import PageLog
from jupyterlab_util import REPO_ROOT, jupyterlab, run_all_cells, wait_for_kernel_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOOK = REPO_ROOT / "book"
RECURRENT = "31_recurrent_networks.ipynb"


@pytest.fixture
def book_lab(tmp_path):
    """JupyterLab serving a copy of book/, with the library's default compile mode (the
    test suite itself runs with STRAIGHTDOPE_COMPILE=sync)."""
    root = tmp_path / "book"
    shutil.copytree(BOOK, root, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    home = tmp_path / "jupyter"
    home.mkdir()
    with jupyterlab(root, home, env_overrides={"STRAIGHTDOPE_COMPILE": "tiered"}) as url:
        yield url


def cell_output(page, tag_text: str) -> str:
    """The text output of the code cell whose source contains `tag_text`."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea", has_text=tag_text))
    return cell.first.locator(".jp-OutputArea").inner_text()


def test_the_recurrent_networks_chapter_runs_in_jupyterlab(book_lab, chromium_browser,
                                                           artifacts_dir):
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    log = PageLog.attach(page)
    try:
        page.goto(f"{book_lab}/lab/tree/{RECURRENT}", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_for_kernel_idle(page)
        run_all_cells(page, timeout_ms=900_000)

        errors = page.locator(".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, errors.first.inner_text()

        # The lesson of the chapter: the foreach graph keeps its size, the unrolled one grows.
        table = cell_output(page, "unrolled ops  foreach ops")
        rows = [line.split() for line in table.splitlines() if re.match(r"\s*\d+\s", line)]
        assert [int(r[0]) for r in rows] == [5, 10, 20, 35], table
        unrolled, looped = [int(r[1]) for r in rows], [int(r[2]) for r in rows]
        assert unrolled == sorted(unrolled) and unrolled[-1] > 5 * unrolled[0], table
        assert len(set(looped)) == 1 and looped[0] < unrolled[0], table

        # The graph widget shows the body of the loop it opened, drawn by Graphviz.
        body = page.locator(".sd-widget svg", has_text="compiled once, run per step")
        body.first.wait_for(timeout=30_000)
        assert body.first.locator("g.node").count() > 3

        # The live perplexity plot is a real PNG, and the trained model wrote text.
        plot = page.locator(".jp-CodeCell", has=page.locator(
            ".jp-InputArea", has_text="LivePlot(epochs")).first.locator("img").first
        size = plot.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert size[0] > 300 and size[1] > 150, size
        summary = cell_output(page, "LivePlot(epochs")
        train_ppl, held_ppl = map(float, re.search(
            r"perplexity after \d+ epochs: ([\d.]+) on the training text, ([\d.]+) held out",
            summary).groups())
        vocabulary = int(re.search(r"vocabulary: (\d+)", summary).group(1))
        assert train_ppl < vocabulary / 3 and held_ppl < vocabulary / 2, summary
        written = cell_output(page, "text.generate(predict")
        assert written.startswith("The ") and len(written) > 100, written

        assert not log.page_errors, log.page_errors
        assert not log.failed_responses, log.failed_responses
    finally:
        # Also on failure: the screenshot shows where the run stopped.
        shots = artifacts_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "chapter31_jupyterlab.png"), full_page=True)
        context.close()


ZH_CHAPTER = "zh/21_hybridblock.ipynb"


@pytest.fixture
def chinese_lab(tmp_path):
    """JupyterLab with its Chinese interface (jupyterlab-language-pack-zh-cn) serving a
    copy of book/, and no STRAIGHTDOPE_LANG: the widgets must find the language from
    the kernel's working directory (book/zh/)."""
    if not (BOOK / ZH_CHAPTER).is_file():
        pytest.skip(f"book/{ZH_CHAPTER} is not translated yet")
    root = tmp_path / "book"
    shutil.copytree(BOOK, root, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    home = tmp_path / "jupyter"
    home.mkdir()
    with jupyterlab(root, home, env_overrides={"STRAIGHTDOPE_COMPILE": "tiered",
                                               "STRAIGHTDOPE_LANG": ""},
                    locale="zh_CN") as url:
        yield url


def test_a_chinese_chapter_runs_in_jupyterlab_in_chinese(chinese_lab, chromium_browser,
                                                          artifacts_dir):
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    log = PageLog.attach(page)
    try:
        page.goto(f"{chinese_lab}/lab/tree/{ZH_CHAPTER}", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        # The interface is Chinese: the menu bar reads 文件 (File), 运行 (Run).
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        assert "文件" in menus and "运行" in menus, menus
        wait_for_kernel_idle(page, locale="zh_CN")
        run_all_cells(page, timeout_ms=600_000, locale="zh_CN")

        errors = page.locator(".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, errors.first.inner_text()
        # The TraceInspector speaks Chinese, found from the kernel's folder (book/zh/).
        widget = page.locator(".sd-widget", has_text="hybrid_forward 打印了什么").first
        widget.wait_for(timeout=30_000)
        assert widget.locator("button", has_text="再调用一次").count() == 1
        assert "命令式：net(x) 运行 Python 代码" in widget.inner_text()
        assert not log.page_errors, log.page_errors
        assert not log.failed_responses, log.failed_responses
    finally:
        shots = artifacts_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "zh_chapter21_jupyterlab.png"), full_page=True)
        context.close()
