"""Shared fixtures.

`chromium_browser` (session scope) is a Playwright Browser running the system
Chromium headless; see tests/browser_util.py for the launch flags and helpers
(serve_directory, PageLog). Tests that use it are marked `browser`
automatically and run after all other tests (see below).

Two tiers: `make test` runs what is not marked `slow` (the library, compiler, widgets,
the notebooks' static checks), `make test-slow` the rest; CI runs both. A test that uses
the browser or the book build (`built_book`) is marked `slow` here, whatever its file says.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Tests are deterministic: a hybridized block compiles in its first call (no background
# compile and switch; tests/test_tiers.py asks for compile="tiered" where it tests that).
os.environ.setdefault("STRAIGHTDOPE_COMPILE", "sync")

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from browser_util import chromium_executable, launch_chromium  # noqa: E402


def _browser_required() -> bool:
    # `make test` sets this: there the browser was installed, so a missing one
    # is a failure rather than a skip.
    return os.environ.get("STRAIGHTDOPE_REQUIRE_BROWSER", "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    """Mark tests that use the browser `browser` and `slow`, those that use the book
    build `slow`, and run the browser tests last.

    While Playwright's sync API is active, the main thread counts as running an
    asyncio loop, so `asyncio.run()` would fail in any other test. Running every
    browser test at the end keeps the session-scoped browser from overlapping
    with the other tests.
    """
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "chromium_browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if ("chromium_browser" in fixtures or "built_book" in fixtures) \
                and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def chromium_browser():
    """A headless Chromium (Playwright `Browser`), shared by the whole session.

    Open pages in a fresh context per test: `ctx = chromium_browser.new_context()`.
    """
    if chromium_executable() is None:
        reason = ("no `chromium` binary on PATH: apt-get install chromium "
                  "(`make sysdeps` does it as root)")
        if _browser_required():
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        if _browser_required():
            raise
        pytest.skip(f"playwright is not installed ({exc}): pip install -e '.[test]'")

    pw = sync_playwright().start()
    try:
        browser = launch_chromium(pw)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """`artifacts/` at the repository root (git-ignored): screenshots, logs."""
    path = REPO_ROOT / "artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Run scripts/build_book.sh into a temp dir; return the html/ directory.
    (Shared by the book's HTML tests and the slides tests, which reuse its executed
    notebooks in ../jupyter_execute/.) STRAIGHTDOPE_BOOK_BUILD=OUT reuses the build
    that `scripts/build_book.sh OUT` made, instead of building again."""
    reuse = os.environ.get("STRAIGHTDOPE_BOOK_BUILD")
    if reuse:
        html = Path(reuse) / "_build" / "html"
        assert (html / "index.html").is_file(), f"STRAIGHTDOPE_BOOK_BUILD: no {html}/index.html"
        return html
    out = tmp_path_factory.mktemp("book_build")
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "build_book.sh"), str(out)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    elapsed = time.monotonic() - start
    log_path = REPO_ROOT / "artifacts" / "book_build.log"
    log_path.parent.mkdir(exist_ok=True)
    log_path.write_text(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-80:])
        pytest.fail(
            f"scripts/build_book.sh failed (exit {proc.returncode}) after {elapsed:.0f} s; "
            f"full log in {log_path}. Last lines:\n{tail}",
            pytrace=False,
        )
    html = out / "_build" / "html"
    assert (html / "index.html").is_file(), f"no index.html in {html}"
    print(f"book built in {elapsed:.1f} s")
    return html
