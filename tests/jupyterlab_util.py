"""Run a real JupyterLab for browser tests: a server on 127.0.0.1 (free port, no token)
with its own settings and runtime folders, and the clicks that run a notebook.

Used by test_widgets_browser.py (the widgets demo) and test_book_jupyterlab.py (book
chapters opened as a student opens them).
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# JupyterLab user settings for the test server: render every cell (the default windowing
# modes may detach cells outside the viewport, and the test looks for their outputs).
# Not asking about Jupyter news is the project's own setting (LAB_OVERRIDES), not the test's.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
# The settings override `make venv` installs into the environment (see the Makefile).
LAB_OVERRIDES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
NEWS_QUESTION = "official Jupyter news"
# The interface's words the helpers below click or wait for, per JupyterLab locale (the
# Chinese one comes from jupyterlab-language-pack-zh-cn, the `book` extra).
UI = {"en": {"View": "View", "Expand All Code": "Expand All Code", "Run": "Run",
             "Run All Cells": "Run All Cells", "Idle": "Idle"},
      "zh_CN": {"View": "查看", "Expand All Code": "展开所有代码", "Run": "运行",
                "Run All Cells": "运行所有单元格", "Idle": "空闲"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n"
                               f"{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/api/status", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"jupyter lab did not answer at {url} within {timeout} s:\n"
                       f"{log.read_text()[-3000:]}")


@contextmanager
def jupyterlab(root: Path, home: Path, env_overrides: dict | None = None, locale: str = "en"):
    """Run JupyterLab serving `root`; yields its base URL. Stopped (and killed if it must
    be) on the way out. `home` holds its settings, workspaces and runtime files, so that
    nothing of the user's ~/.jupyter is read or written. `env_overrides` sets variables
    of the server's (and so its kernels') environment. `locale` "zh_CN" shows the
    interface in Chinese (as Settings > Language does)."""
    settings = home / "settings"
    user_settings = dict(LAB_SETTINGS)
    if locale != "en":
        user_settings["@jupyterlab/translation-extension/plugin.jupyterlab-settings"] = {
            "locale": locale}
    for rel, value in user_settings.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port = _free_port()
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                        os.environ.get("PYTHONPATH")])),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               # BLAS threads: the machine is shared and the benchmark cell times calls.
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    env.update(env_overrides or {})
    log = home / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", "--ServerApp.allow_root=True",
           "--ServerApp.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={settings}",
           f"--LabApp.workspaces_dir={home / 'workspaces'}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class="
           "jupyterlab.handlers.announcements.NeverCheckForUpdate"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(url, proc, log)
        yield url
    finally:
        proc.terminate()              # SIGTERM: the server shuts its kernels down
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_for_kernel_idle(page, timeout_ms=90_000, locale="en"):
    """Wait until the notebook's kernel is connected and idle. (The toolbar's execution
    indicator already says 'idle' while the kernel is still starting, and cells run then
    are lost, so read the status bar: "Python 3 (ipykernel) | Idle".)"""
    idle = UI[locale]["Idle"]
    page.locator(".jp-StatusBar-Widget", has_text=re.compile(rf"\| {idle}")).first.wait_for(
        timeout=timeout_ms)


def run_all_cells(page, timeout_ms=240_000, locale="en"):
    """Run > Run All Cells (command `runmenu:run-all`), then wait until every code cell
    has an execution count and the kernel is idle, or until a cell shows an error
    (JupyterLab then stops running the rest: the caller checks for error outputs).
    Cells with hidden code (the book's solutions) show no execution count, so View >
    Expand All Code comes first."""
    words = UI[locale]
    for menu, item in (("View", "Expand All Code"), ("Run", "Run All Cells")):
        page.locator(".lm-MenuBar-itemLabel",
                     has_text=re.compile(f"^{words[menu]}$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{words[item]}$")).click()
    page.wait_for_function(
        """() => {
            if (document.querySelector(".jp-OutputArea-output[data-mime-type*='error']"))
                return true;
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=timeout_ms)
