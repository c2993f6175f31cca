"""A class on loopback: N students log in at once, start their servers and run a chapter
top to bottom through the hub's API and the kernel protocol (as JupyterLab does).

    python classroom/loadtest.py --students 10            # docs/classroom.md has the table
    python classroom/loadtest.py --students 10 --no-shared-cache   # each student compiles

It starts its own hub (classroom/hub.py: 127.0.0.1, a free port, state in a temporary
folder, the shared cache filled by classroom/setup.sh unless --no-shared-cache) and
stops it at the end. Per student it reports: seconds from login to the server being
ready, to the chapter's first output and to its end, how long its first hybridize()
cell took, the peak memory of their server (the server, its kernel and the kernel's
compile process), and whether the run was correct: no error, and every cell printed
what the other students' same cell printed (timings aside). Exit status 1 if a run was
not correct.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub import REPO, running_hub, setup  # noqa: E402

CHAPTER = "book/21_hybridblock.ipynb"
PASSWORD = "classroom"
# Every student is a server and a kernel on this one machine: a test, not a stress test.
MAX_STUDENTS = 60
FIRST_HYBRID = "net.hybridize()"          # the first cell that compiles: its time is reported
# Differ between runs and are not results: timings, addresses, and the time in a tier
# switch, (2, 'graph', 32.3).
VARYING = re.compile(r"\d+(\.\d+)?(e-?\d+)?\s*(s|ms|µs|us|x|%)\b|0x[0-9a-f]+"
                     r"|(?<=, )\d+\.\d+(?=\)\])")


def login(url, user) -> float:
    """Log in through the hub's login form, as a browser does; the seconds it took."""
    import http.cookiejar
    start = time.perf_counter()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(f"{url}/hub/login", timeout=60).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": user, "password": PASSWORD, "_xsrf": xsrf})
    try:
        answer = opener.open(urllib.request.Request(f"{url}/hub/login?next=/hub/home",
                                                    data=form.encode()), timeout=60)
    except urllib.error.HTTPError as err:
        raise RuntimeError(f"{user} could not log in at {url}: HTTP {err.code}") from None
    if "/hub/login" in answer.geturl():
        raise RuntimeError(f"{user} could not log in at {url}")
    return time.perf_counter() - start


class Kernel:
    """A kernel of a student's server, spoken to over its websocket (Jupyter's JSON
    messages, as JupyterLab sends them)."""

    def __init__(self, server_url, token, path):
        import websocket
        request = urllib.request.Request(
            f"{server_url}api/sessions", method="POST",
            data=json.dumps({"path": path, "type": "notebook", "name": "",
                             "kernel": {"name": "python3"}}).encode(),
            headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            kernel_id = json.loads(answer.read())["kernel"]["id"]
        self.session = uuid.uuid4().hex
        self.ws = websocket.create_connection(
            f"{server_url.replace('http', 'ws', 1)}api/kernels/{kernel_id}/channels"
            f"?session_id={self.session}", header=[f"Authorization: token {token}"],
            timeout=600)

    def execute(self, code, on_output=None) -> list:
        """Run `code`; returns its outputs as (kind, text). `on_output` is called at the
        first one."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "",
                       "session": self.session, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        outputs = []
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                outputs.append((content["name"], content["text"]))
            elif kind in ("execute_result", "display_data"):
                outputs.append((kind, content["data"].get("text/plain", "")))
            elif kind == "error":
                outputs.append(("error", f"{content['ename']}: {content['evalue']}"))
            elif kind == "status" and content["execution_state"] == "idle":
                return outputs
            if outputs and on_output is not None and len(outputs) == 1 and kind != "status":
                on_output()

    def close(self):
        self.ws.close()


def code_cells(path) -> list:
    notebook = json.loads((REPO / path).read_text())
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


def peak_memory(hub, user, stop, result):
    """Sample the RSS of `user`'s server and everything it started until `stop` is set."""
    import psutil
    peak = 0
    while not stop.wait(0.5):
        pid = hub.servers().get(user)
        if pid is None:
            continue
        try:
            proc = psutil.Process(pid)
            procs = [proc] + proc.children(recursive=True)
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.NoSuchProcess:
                    pass
            peak = max(peak, total)
        except psutil.NoSuchProcess:
            pass
    result["peak_mb"] = peak / 2**20


def student(hub, user, chapter, cells, start_line, result):
    """One student: log in, start the server, open the chapter, run every cell."""
    stop = threading.Event()
    watcher = threading.Thread(target=peak_memory, args=(hub, user, stop, result), daemon=True)
    try:
        start_line.wait()
        t0 = time.perf_counter()
        result["login_s"] = login(hub.url, user)
        token = hub.api("POST", f"users/{user}/tokens",
                        {"expires_in": 3600, "note": "loadtest"})["token"]
        hub.api("POST", f"users/{user}/server", token=token)
        watcher.start()
        while not (server := hub.api("GET", f"users/{user}", token=token)["servers"]
                   .get("", {})).get("ready"):
            time.sleep(0.5)
        result["ready_s"] = time.perf_counter() - t0
        kernel = Kernel(f"{hub.url}{server['url']}", token, chapter)
        result["outputs"] = []
        for code in cells:
            def first():
                result.setdefault("first_output_s", time.perf_counter() - t0)
            began = time.perf_counter()
            outputs = kernel.execute(code, first)
            if FIRST_HYBRID in code:
                result.setdefault("hybrid_cell_s", time.perf_counter() - began)
            result["outputs"].append(outputs)
            if any(kind == "error" for kind, _ in outputs):
                break
        kernel.close()
        result["chapter_s"] = time.perf_counter() - t0
    except Exception as err:                      # reported in the table
        result["failure"] = f"{type(err).__name__}: {err}"
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join()


def same_text(outputs) -> list:
    """Per cell, what it printed and returned with the numbers that vary masked. Streams
    are joined: a kernel may send one print() as several messages."""
    def masked(text):
        return " ".join(VARYING.sub("#", text).split())     # "  66.3 ms" and "112.5 ms" alike
    return [[masked("".join(text for kind, text in cell if kind == "stdout"))]
            + [(kind, masked(text)) for kind, text in cell if kind not in ("stdout", "stderr")]
            for cell in outputs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--chapter", default=CHAPTER, help=f"the notebook to run ({CHAPTER})")
    parser.add_argument("--no-shared-cache", action="store_true",
                        help="students compile the kernels themselves (for comparison)")
    parser.add_argument("--warmup", default="",
                        help='arguments for the shared cache\'s warm-up ("--only mlp")')
    parser.add_argument("--state", help="the hub's folder (default: a temporary one)")
    parser.add_argument("--timeout", type=float, default=1200,
                        help="seconds before a student's run counts as failed")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= MAX_STUDENTS:
        parser.error(f"--students {args.students}: give 1 to {MAX_STUDENTS} (each starts a "
                     f"JupyterLab server and a kernel on this machine)")
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: give the seconds a student's run may take")
    cells = code_cells(args.chapter)
    state = Path(args.state or tempfile.mkdtemp(prefix="classroom-load-"))
    shared = state / "shared-cache"
    if not args.no_shared_cache:
        start = time.perf_counter()
        setup(shared, args.warmup)
        print(f"setup: the shared cache filled in {time.perf_counter() - start:.0f} s")
    env = {} if not args.no_shared_cache else {"CLASSROOM_SHARED_CACHE": ""}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with running_hub(state, students=args.students, env=env) as hub:
        users = [f"student{k}" for k in range(1, args.students + 1)]
        results = {u: {} for u in users}
        start_line = threading.Event()
        threads = [threading.Thread(target=student, args=(hub, u, args.chapter, cells,
                                                          start_line, results[u]),
                                    daemon=True) for u in users]
        for t in threads:
            t.start()
        began = time.perf_counter()
        start_line.set()
        load = []
        while any(t.is_alive() for t in threads) and time.perf_counter() - began < args.timeout:
            load.append(os.getloadavg()[0])
            time.sleep(1)
        for u, t in zip(users, threads):
            if t.is_alive():
                results[u].setdefault("failure", f"not done after {args.timeout:.0f} s")
    print(f"stopped the hub; processes left behind and killed: {hub.leftovers or 'none'}")
    reference = next((same_text(r["outputs"]) for r in results.values()
                      if "failure" not in r and len(r.get("outputs", [])) == len(cells)), None)
    print(f"\n{args.students} students, chapter {args.chapter} ({len(cells)} code cells), "
          f"{'shared cache' if not args.no_shared_cache else 'no shared cache'}; "
          f"load average during the run: max {max(load, default=0):.1f}\n")
    print("| student | login (s) | server ready (s) | first output (s) | first hybridize() "
          "cell (s) | whole chapter (s) | peak memory (MB) | correct |")
    print("|---|---|---|---|---|---|---|---|")
    bad = 0
    for u, r in results.items():
        errors = [text for cell in r.get("outputs", []) for kind, text in cell if kind == "error"]
        ok = ("failure" not in r and not errors and reference is not None
              and same_text(r["outputs"]) == reference)
        bad += not ok
        differs = [k for k, (a, b) in enumerate(zip(same_text(r.get("outputs", [])), reference
                                                    or [])) if a != b]
        why = "yes" if ok else (r.get("failure") or (errors[0] if errors else
                                                     f"cell {differs[:1]} differs"))
        (state / f"outputs-{u}.json").write_text(json.dumps(r.get("outputs"), indent=1))
        print(f"| {u} | {r.get('login_s', float('nan')):.1f} | {r.get('ready_s', float('nan')):.1f}"
              f" | {r.get('first_output_s', float('nan')):.1f}"
              f" | {r.get('hybrid_cell_s', float('nan')):.1f} "
              f"| {r.get('chapter_s', float('nan')):.1f} | {r.get('peak_mb', 0):.0f} | {why} |")
    print(f"\n(each student's outputs: {state}/outputs-<student>.json)")
    return 1 if bad or reference is None else 0


if __name__ == "__main__":
    sys.exit(main())
