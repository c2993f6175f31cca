"""Shared fixtures.

`chromium_browser` (session scope) is a Playwright Browser running the system
Chromium headless; see tests/browser_util.py for the launch flags and helpers
(serve_directory, PageLog). Tests that use it are marked `browser`
automatically and run after all other tests (see below).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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
    """Mark tests that use the browser `browser`, and run them last.

    While Playwright's sync API is active, the main thread counts as running an
    asyncio loop, so `asyncio.run()` would fail in any other test. Running every
    browser test at the end keeps the session-scoped browser from overlapping
    with the other tests.
    """
    browser_marker = pytest.mark.browser
    for item in items:
        if "chromium_browser" in getattr(item, "fixturenames", ()):
            item.add_marker(browser_marker)
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
