"""The chapters' MyST admonitions ("How MXNet does it") in JupyterLab: jupyterlab-myst (the
`book` extra) draws them as boxes; without it, JupyterLab's Markdown renderer shows the
`:::{admonition}` lines as raw text. (The HTML book draws them with jupyter-book, the
lecture decks with scripts/slides_prep.py: tests/test_book_slides.py.)
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil

import nbformat
import pytest

from jupyterlab_util import REPO_ROOT, jupyterlab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOOK = REPO_ROOT / "book"
ADMONITION = re.compile(r"^(?:`{3,}|:{3,})\{(?:admonition|note|tip|hint|important|warning"
                        r"|caution|attention|danger|error|seealso)\}", re.M)
RAW_DIRECTIVE = re.compile(r":::|```|\{admonition\}|^:class:", re.M)


def admonitions(path) -> int:
    """Admonitions in the notebook's Markdown cells, solutions (folded) left out."""
    nb = nbformat.read(path, as_version=4)
    return sum(len(ADMONITION.findall(c.source)) for c in nb.cells
               if c.cell_type == "markdown" and "solution" not in c.metadata.get("tags", []))


CHAPTERS = [p.relative_to(BOOK).as_posix()
            for p in sorted(BOOK.glob("[0-9]*.ipynb")) + sorted(BOOK.glob("zh/[0-9]*.ipynb"))
            if admonitions(p)]

# Per rendered Markdown cell: its text, and its admonitions drawn as boxes with a title.
# (Only the notebook shown: the others open in the same lab are in hidden tabs.)
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
RENDERED = f"""() => [...document.querySelectorAll('{NOTEBOOK} .jp-MarkdownCell .jp-Cell-inputArea')].map(c => ({{
  text: c.innerText,
  boxes: [...c.querySelectorAll('aside, .admonition')].filter(a => {{
    const st = getComputedStyle(a);
    return a.offsetHeight > 0 && parseFloat(st.borderLeftWidth) > 0
      && a.querySelector('[class*=admonition-header], .admonition-title');
  }}).length}}))"""


@pytest.fixture(scope="module")
def myst_lab(tmp_path_factory):
    if importlib.util.find_spec("jupyterlab_myst") is None:
        reason = "jupyterlab-myst is not installed: pip install -e '.[book]' (make venv)"
        if os.environ.get("STRAIGHTDOPE_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail(reason)
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("myst_lab")
    root = tmp / "book"
    (root / "zh").mkdir(parents=True)
    for name in CHAPTERS:
        shutil.copy(BOOK / name, root / name)
    home = tmp / "jupyter"
    home.mkdir()
    with jupyterlab(root, home) as url:
        yield url


def test_there_are_admonitions_to_check():
    assert len(CHAPTERS) >= 2, CHAPTERS


@pytest.mark.parametrize("name", CHAPTERS)
def test_admonitions_render_as_boxes_in_jupyterlab(name, myst_lab, chromium_browser):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    expected = admonitions(BOOK / name)
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        # ?reset: a fresh workspace, without the notebooks the earlier tests opened.
        page.goto(f"{myst_lab}/lab/tree/{name}?reset", wait_until="domcontentloaded")
        page.wait_for_selector(f"{NOTEBOOK} .jp-MarkdownCell", timeout=60_000)
        # Markdown cells render once the notebook is open; MyST renders asynchronously.
        try:
            page.wait_for_function(
                f"() => ({RENDERED})().reduce((n, c) => n + c.boxes, 0) >= {expected}",
                timeout=30_000)
        except PlaywrightTimeout:
            pass                       # the assertions below say what is missing
        cells = page.evaluate(RENDERED)
        raw = [c["text"][:80] for c in cells if RAW_DIRECTIVE.search(c["text"])]
        assert not raw, f"{name}: MyST directives shown as raw text in JupyterLab: {raw}"
        assert sum(c["boxes"] for c in cells) == expected, (
            f"{name}: {expected} admonitions, "
            f"{sum(c['boxes'] for c in cells)} drawn as boxes")
    finally:
        context.close()
