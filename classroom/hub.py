"""Start and stop the classroom's JupyterHub from Python, as `make classroom` does; used by
tests/test_classroom.py and classroom/loadtest.py.

    with running_hub(state_dir, students=2) as hub:
        hub.url           # http://127.0.0.1:<free port>
        hub.api("GET", "users")

Everything is on 127.0.0.1. The hub is stopped on the way out (SIGTERM: it stops every
student's server, then the proxy); whatever it leaves running is killed and named.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONFIG = HERE / "jupyterhub_config.py"


def setup(shared_cache: Path, warmup: str = "") -> str:
    """classroom/setup.sh: JupyterHub and the proxy if missing, the kernels compiled into
    the shared cache. Returns its output; raises with it when it fails."""
    env = dict(os.environ, PYTHON=sys.executable, WARMUP=warmup,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(["bash", str(HERE / "setup.sh"), str(shared_cache)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"classroom/setup.sh failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def free_port_block(size=3) -> int:
    """A port P with P..P+size-1 free (the proxy, its API and the hub take three)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + size < 65536 and all(_free(port + k) for k in range(size)):
            return port
    raise RuntimeError("no three consecutive free ports on 127.0.0.1")


def _free(port) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


class Hub:
    def __init__(self, url, token, state, process):
        self.url, self.token, self.state, self.process = url, token, state, process

    def api(self, method, path, body=None, token=None, timeout=30):
        """A call of the hub's REST API (/hub/api/PATH) as the `classroom` service (or
        with `token`); the decoded JSON answer (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/hub/api/{path}", data=data,
                                         method=method, headers={
                                             "Authorization": f"token {token or self.token}",
                                             "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def servers(self) -> dict:
        """{user: pid of their single-user server} of the servers running now."""
        import psutil
        found = {}
        for proc in psutil.process_iter(["cmdline"]):
            try:
                if any("jupyterhub-singleuser" in part for part in proc.info["cmdline"] or []):
                    env = proc.environ()
                    if env.get("JUPYTERHUB_API_URL", "").startswith(self.hub_api):
                        found[env.get("JUPYTERHUB_USER")] = proc.pid
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return found

    @property
    def hub_api(self) -> str:
        port = int(self.url.rsplit(":", 1)[1])
        return f"http://127.0.0.1:{port + 2}/hub/api"


@contextmanager
def running_hub(state: Path, students=2, shared_cache: Path | None = None, env=None,
                timeout=120):
    """Run the classroom hub (state in `state`, a free port) until the block ends. Its
    log is `state`/hub.log."""
    import psutil
    state = Path(state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    port, token = free_port_block(), secrets.token_hex(16)
    hub_env = dict(os.environ, CLASSROOM_STUDENTS=str(students), CLASSROOM_PORT=str(port),
                   CLASSROOM_STATE=str(state), CLASSROOM_API_TOKEN=token,
                   PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                         os.environ.get("PATH", "")]))
    if shared_cache is not None:
        hub_env["CLASSROOM_SHARED_CACHE"] = str(shared_cache)
    hub_env.update(env or {})
    log = open(state / "hub.log", "ab")
    process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
                               cwd=state, env=hub_env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", token, state, process)
    seen = set()
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyterhub exited ({process.returncode}): "
                                   f"{(state / 'hub.log').read_text()[-3000:]}")
            try:
                hub.api("GET", "", timeout=2)
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the hub did not answer within {timeout} s: "
                                       f"{(state / 'hub.log').read_text()[-3000:]}")
                time.sleep(0.5)
        hub.seen = seen
        yield hub
    finally:
        try:                          # every process of the hub and of students' servers
            seen |= {p.pid for p in psutil.Process(process.pid).children(recursive=True)}
            seen |= set(hub.servers().values())
        except psutil.NoSuchProcess:
            pass
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        hub.leftovers = _kill_leftovers(seen)


def _kill_leftovers(pids, grace=15.0) -> list:
    """Wait up to `grace` s for `pids` to end (a stopped server shuts its kernels down),
    then kill what is left; returns the command lines of those killed."""
    import psutil
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    killed = []
    for proc in alive:
        try:
            killed.append(" ".join(proc.cmdline()))
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    return killed
