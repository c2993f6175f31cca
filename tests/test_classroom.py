"""`make classroom`: the class's JupyterHub (classroom/jupyterhub_config.py) from this
checkout, with 2 students, on 127.0.0.1; a student logs in in a real browser, lands in
JupyterLab on the book, opens chapter 21 and runs a cell that hybridizes; the hub then
stops with every process it started.

The shared compile cache is filled by classroom/setup.sh (the MLP's kernels only, to
stay in the test budget: tests/classroom_util.py; tests/test_shared_cache.py tests the
cache itself)."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from browser_util import PageLog  # noqa: E402
from classroom_util import shared_cache  # noqa: E402
from hub import running_hub  # noqa: E402
from jupyterlab_util import wait_for_kernel_idle  # noqa: E402

CHAPTER = "21_hybridblock.ipynb"


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    state = tmp_path_factory.mktemp("classroom")
    shared = shared_cache()
    with running_hub(state, students=2, shared_cache=shared) as hub:
        hub.shared = shared
        yield hub
    assert hub.leftovers == [], f"the hub left processes running: {hub.leftovers}"
    assert hub.process.returncode is not None


@pytest.mark.slow
def test_a_student_logs_in_opens_chapter_21_and_runs_a_cell(classroom, chromium_browser,
                                                             artifacts_dir):
    hub = classroom
    assert {u["name"] for u in hub.api("GET", "users")} == {"student1", "student2", "teacher"}
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    log = PageLog.attach(page)
    try:
        page.goto(f"{hub.url}/hub/login", wait_until="domcontentloaded")
        page.fill("input[name=username]", "student2")
        page.fill("input[name=password]", "wrong")
        page.click("#login_submit")
        page.wait_for_selector("text=Invalid username or password", timeout=30_000)
        page.fill("input[name=username]", "student2")
        page.fill("input[name=password]", "classroom")
        page.click("#login_submit")
        # the server starts, then JupyterLab opens on the book's front page
        page.wait_for_url(re.compile(r"/user/student2/lab"), timeout=180_000)
        page.wait_for_selector(".jp-DirListing-item", timeout=120_000)
        assert "/lab/tree/book/index.md" in page.url
        assert set(hub.servers()) == {"student2"}          # only she has a server

        page.goto(f"{hub.url}/user/student2/lab/tree/book/{CHAPTER}",
                  wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_for_kernel_idle(page, timeout_ms=120_000)
        # the imports, the network, then the cell that hybridizes it: Shift+Enter each
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        for k in range(3):
            cells.nth(k).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            cells.nth(k).locator(".jp-InputPrompt", has_text=re.compile(r"\[\d+\]")).wait_for(
                timeout=180_000)
        out = cells.nth(2).locator(".jp-OutputArea").inner_text()
        assert "without hybridize:" in out and "with hybridize:" in out, out
        errors = page.locator(".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, errors.first.inner_text()
        # the kernel runs as the hub set it up: her own cache, the class's shared one
        home = hub.state / "home" / "student2"
        assert (home / "book" / CHAPTER).is_file()
        # (by the kernel's background compile process, which may still be at it)
        shared = {p.relative_to(hub.shared) for p in (hub.shared / "numba").rglob("*.nbi")}
        deadline = time.monotonic() + 120
        while not shared <= (mine := {p.relative_to(home / ".cache" / "straightdope") for p in
                                      (home / ".cache" / "straightdope").rglob("numba/**/*.nbi")}):
            assert time.monotonic() < deadline, shared - mine   # she got the class's kernels
            time.sleep(1)
        assert shared
        assert not log.page_errors, log.page_errors
    except Exception:
        page.screenshot(path=str(artifacts_dir / "classroom_failure.png"), full_page=True)
        raise
    finally:
        context.close()
