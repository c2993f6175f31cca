"""Helpers for tests that drive a real headless Chromium through Playwright.

Uses Debian's `chromium` binary (apt-get install chromium; `make sysdeps` does it
as root). Never run `playwright install`: it downloads its own browser, which
cannot work on these offline machines.

Typical use (the `chromium_browser` fixture in conftest.py does the launching)::

    with serve_directory(html_dir) as base_url:
        page = chromium_browser.new_page()
        log = PageLog.attach(page)
        page.goto(base_url + "/index.html", wait_until="networkidle")
        assert not log.foreign_requests and not log.page_errors
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

#: Flags that make Chromium work headless as root in a container and stop it
#: from phoning home (every request to another host is a test failure here).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
# URL schemes that never leave the page.
LOCAL_SCHEMES = frozenset({"data", "blob", "about", "file", "chrome", "chrome-extension"})


def chromium_executable() -> str | None:
    """Path of the system Chromium ($CHROMIUM overrides), or None."""
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate:
            path = shutil.which(candidate)
            if path:
                return path
    return None


def launch_chromium(playwright, **kwargs):
    """Launch the system Chromium headless with a fresh profile.

    `playwright` is the object from `playwright.sync_api.sync_playwright().start()`.
    Playwright's `launch()` gives every browser a new temporary user-data dir,
    removed on `close()`. Extra keyword arguments go to `chromium.launch`.
    """
    exe = chromium_executable()
    if exe is None:
        raise FileNotFoundError(
            "no chromium binary on PATH: apt-get install chromium (or `make sysdeps` as root)"
        )
    args = list(CHROMIUM_ARGS) + list(kwargs.pop("args", []))
    return playwright.chromium.launch(
        executable_path=exe, headless=True, args=args, **kwargs
    )


def is_local_url(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in LOCAL_SCHEMES:
        return True
    return (parsed.hostname or "") in LOCAL_HOSTS


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - stdlib signature
        pass


@contextlib.contextmanager
def serve_directory(directory: str | os.PathLike):
    """Serve `directory` over HTTP on 127.0.0.1 (a free port) from a thread.

    Yields the base URL without a trailing slash, e.g. "http://127.0.0.1:40123".
    """
    handler = functools.partial(_QuietHandler, directory=str(Path(directory)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="serve_directory", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass
class PageLog:
    """Everything a page did on the network and in its console."""

    requests: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    failed_responses: list[str] = field(default_factory=list)  # "404 http://..."
    failed_requests: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    @classmethod
    def attach(cls, page, block_foreign: bool = True) -> "PageLog":
        """Record `page`'s activity; with block_foreign, requests to other hosts
        are recorded and aborted (offline they would only hang until a timeout)."""
        log = cls()

        def on_request(request):
            log.requests.append(request.url)
            if not is_local_url(request.url):
                log.foreign_requests.append(request.url)

        def on_response(response):
            if response.status >= 400:
                log.failed_responses.append(f"{response.status} {response.url}")

        def on_request_failed(request):
            if is_local_url(request.url):
                log.failed_requests.append(f"{request.failure} {request.url}")

        def on_console(message):
            if message.type == "error":
                log.console_errors.append(message.text)

        page.on("request", on_request)
        page.on("response", on_response)
        page.on("requestfailed", on_request_failed)
        page.on("pageerror", lambda error: log.page_errors.append(str(error)))
        page.on("console", on_console)
        if block_foreign:
            def route(route_):
                if is_local_url(route_.request.url):
                    route_.continue_()
                else:
                    route_.abort()
            page.route("**/*", route)
        return log
