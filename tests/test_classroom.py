"""`make classroom`: the class's JupyterHub (classroom/jupyterhub_config.py) from this
checkout, with 2 students, on 127.0.0.1; a student logs in in a real browser, lands in
JupyterLab on the book, opens chapter 21 and runs a cell that hybridizes; the hub then
stops with every process it started.

The shared compile cache is filled by classroom/setup.sh (the MLP's kernels only, to
stay in the test budget: tests/classroom_util.py; tests/test_shared_cache.py tests the
cache itself)."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from browser_util import PageLog  # noqa: E402
from classroom_util import shared_cache  # noqa: E402
from hub import running_hub  # noqa: E402
from loadtest import Kernel  # noqa: E402
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
        assert set(hub.servers()) == {"student2"}          # only she has a server now

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
        # Her network ran on the class's VM, which compiles a graph only once it has run
        # it LOAD_AFTER_VM_SECONDS, or hands it to the compile process when the kernel
        # exits (compiler/tiers.py): three cells are not enough, so she shuts her kernel
        # down, as JupyterLab's Kernel menu does, and the graph is compiled for her next
        # run before the hub stops (no compile process is left behind).
        shut_down_kernels(hub, "student2")
        deadline = time.monotonic() + 120
        copied = {p.name for p in (hub.shared / "ready").glob("*")}   # the VM's, if any
        while not {p.name for p in (home / ".cache" / "straightdope" / "ready").glob("*")} - copied:
            assert time.monotonic() < deadline, "her graph was not compiled in time"
            time.sleep(1)
        assert not log.page_errors, log.page_errors
    except Exception:
        page.screenshot(path=str(artifacts_dir / "classroom_failure.png"), full_page=True)
        raise
    finally:
        context.close()


def shut_down_kernels(hub, user):
    """Shut down every kernel of `user`'s server through its REST API (the kernel exits
    cleanly, running its exit handlers)."""
    import urllib.request
    token = hub.api("POST", f"users/{user}/tokens", {"expires_in": 600})["token"]
    server = f"{hub.url}{hub.api('GET', f'users/{user}', token=token)['servers']['']['url']}"

    def call(method, path):
        request = urllib.request.Request(f"{server}api/{path}", method=method,
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.read()

    kernels = json.loads(call("GET", "kernels"))
    assert kernels, f"{user}'s server has no kernel to shut down"
    for kernel in kernels:
        call("DELETE", f"kernels/{kernel['id']}")
    assert json.loads(call("GET", "kernels")) == []


# ----------------------------------------------------------- the autograder, through the hub
ASSIGNMENT = "21_hybridblock"
NBGRADER = """
import os, subprocess, sys
os.chdir(os.environ["HOME"])
def nbgrader(*args, cwd="."):
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, ("nbgrader", args, done.stdout[-1500:], done.stderr[-3000:])
"""
TEACHER_RELEASES = NBGRADER + """
sys.path.insert(0, {repo!r})
from pathlib import Path
from scripts import assignments               # make assignments (scripts/assignments.py)
assignments.release(Path("course"), [{chapter!r}])
nbgrader("release_assignment", {chapter!r}, cwd="course")
print("released")
"""
STUDENT_SUBMITS = NBGRADER + """
import glob, json, nbformat
nbgrader("fetch_assignment", {chapter!r})
(path,) = glob.glob("**/{chapter}.ipynb", recursive=True, root_dir={chapter!r})
path = os.path.join({chapter!r}, path)
nb = nbformat.read(path, as_version=4)
answers = json.loads({answers!r})
for cell in nb.cells:
    grade_id = cell.metadata.get("nbgrader", {{}}).get("grade_id")
    if grade_id in answers:
        cell.source = answers[grade_id]
nbformat.write(nb, path)
nbgrader("submit", {chapter!r})
print("submitted", sorted(answers))
"""
TEACHER_GRADES = NBGRADER + """
import json
nbgrader("collect", {chapter!r}, cwd="course")
nbgrader("autograde", {chapter!r}, cwd="course")
from nbgrader.api import Gradebook
with Gradebook("sqlite:///course/gradebook.db") as gradebook:
    print(json.dumps({{s: [gradebook.find_submission({chapter!r}, s).score,
                         gradebook.find_submission({chapter!r}, s).max_score]
                      for s in ("student1", "student2")}}))
"""


def kernel_of(hub, user) -> Kernel:
    """A new kernel in `user`'s server (started through the hub's API if it is not
    running), as JupyterLab opens one."""
    token = hub.api("POST", f"users/{user}/tokens", {"expires_in": 3600})["token"]
    if not hub.api("GET", f"users/{user}", token=token)["servers"]:
        hub.api("POST", f"users/{user}/server", token=token)
    deadline = time.monotonic() + 240
    while not (server := hub.api("GET", f"users/{user}", token=token)["servers"]
               .get("", {})).get("ready"):
        assert time.monotonic() < deadline, f"{user}'s server did not start"
        time.sleep(0.5)
    return Kernel(f"{hub.url}{server['url']}", token, f"book/{CHAPTER}")


def run(kernel, code) -> str:
    outputs = kernel.execute(code)
    errors = [text for kind, text in outputs if kind == "error"]
    assert not errors, errors
    return "".join(text for kind, text in outputs if kind == "stdout")


def _answer_cells(notebook: Path) -> dict:
    import nbformat
    nb = nbformat.read(notebook, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


@pytest.mark.slow
def test_the_autograder_round_trip_through_the_hub(request):
    """The teacher releases the exercises of chapter 21 (make assignments' nbgrader
    release), student1 and student2 fetch them in their own servers and submit, one right,
    one partly wrong; the teacher collects and autogrades: 4/4 and 1/4."""
    pytest.importorskip("nbgrader", reason="nbgrader: installed by `make venv` once the "
                        "exercises' release (make assignments) is merged")
    if not (ROOT / "scripts" / "assignments.py").is_file():
        pytest.skip("scripts/assignments.py (make assignments) is not in this checkout")
    hub = request.getfixturevalue("classroom")         # (not started when skipped)
    chapter = CHAPTER.removesuffix(".ipynb")
    try:
        teacher = kernel_of(hub, "teacher")
        try:
            assert "released" in run(teacher, TEACHER_RELEASES.format(repo=str(ROOT),
                                                                      chapter=chapter))
        finally:
            teacher.close()
        source = hub.state / "home" / "teacher" / "course" / "source" / chapter
        right = _answer_cells(source / f"{chapter}.ipynb")
        assert sorted(right) == [f"ex{n}_answer" for n in (1, 2, 3, 4)]
        # exercise 1 right, exercise 2 wrong (6 prints, not 2), 3 and 4 left as released
        wrong = {"ex1_answer": right["ex1_answer"],
                 "ex2_answer": right["ex2_answer"].replace("total_prints=2", "total_prints=6")}
        assert wrong["ex2_answer"] != right["ex2_answer"]
        for user, answers in (("student1", right), ("student2", wrong)):
            kernel = kernel_of(hub, user)
            try:
                assert "submitted" in run(kernel, STUDENT_SUBMITS.format(
                    chapter=chapter, answers=json.dumps(answers)))
            finally:
                kernel.close()
        teacher = kernel_of(hub, "teacher")
        try:
            scores = json.loads(run(teacher, TEACHER_GRADES.format(chapter=chapter))
                                .strip().splitlines()[-1])
        finally:
            teacher.close()
        assert scores == {"student1": [4.0, 4.0], "student2": [1.0, 4.0]}, scores
    finally:
        for user in ("teacher", "student1", "student2"):     # as before this test
            try:
                hub.api("DELETE", f"users/{user}/server")
            except OSError:
                pass
        deadline = time.monotonic() + 60
        while hub.servers() and time.monotonic() < deadline:
            time.sleep(0.5)


def test_the_load_test_is_bounded_in_students_and_time(capsys):
    """classroom/loadtest.py refuses a class it should not start on one machine, before it
    starts anything."""
    import loadtest
    for args, message in ((["--students", "0"], "--students 0: give 1 to"),
                          (["--students", str(loadtest.MAX_STUDENTS + 1)], "give 1 to"),
                          (["--timeout", "0"], "--timeout 0.0: give the seconds")):
        with pytest.raises(SystemExit) as stopped:
            loadtest.main(args)
        assert stopped.value.code == 2
        assert message in capsys.readouterr().err
