"""JupyterHub for a class, on one machine: `make classroom` (docs/classroom.md).

    jupyterhub -f classroom/jupyterhub_config.py

What this file sets up is the *test* classroom: students student1..N and a teacher log in
with one shared password (DummyAuthenticator), and every server runs as the hub's own
Unix user (SimpleLocalProcessSpawner), each in its own home folder holding its own copy
of the book. That is enough to try the book the way a class uses it, on loopback, and
to test it; it isolates nobody. For a real class keep the rest and change the two lines
marked PRODUCTION (docs/classroom.md says with what).

Settings come from the environment (the Makefile passes its variables on):

    CLASSROOM_STUDENTS     number of students (2)
    CLASSROOM_PASSWORD     everyone's password (classroom)
    CLASSROOM_PORT         the hub's address is http://127.0.0.1:PORT (8000)
    CLASSROOM_STATE        the hub's database, its secrets and the students' homes
                           (<repository>/_build/classroom)
    CLASSROOM_SHARED_CACHE the class's compile cache, filled by classroom/setup.sh
                           (<state>/shared-cache; empty: none)
    CLASSROOM_API_TOKEN    a token for the `classroom` service (admin of users and
                           servers), used by classroom/loadtest.py; no service when unset
    CLASSROOM_OPEN         the page a student lands on, under the book folder (index.md)
"""
import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub runs this file with get_config defined)

REPO = Path(__file__).resolve().parents[1]
STUDENTS = int(os.environ.get("CLASSROOM_STUDENTS") or 2)
PORT = int(os.environ.get("CLASSROOM_PORT") or 8000)
STATE = Path(os.environ.get("CLASSROOM_STATE") or REPO / "_build" / "classroom").resolve()
SHARED_CACHE = os.environ.get("CLASSROOM_SHARED_CACHE", str(STATE / "shared-cache"))
API_TOKEN = os.environ.get("CLASSROOM_API_TOKEN")
OPEN = os.environ.get("CLASSROOM_OPEN") or "index.md"
STATE.mkdir(parents=True, exist_ok=True)

# ---------------------------------------------------------------- who may log in
# PRODUCTION: a real authenticator (your university's OAuth/LDAP, or
# jupyterhub-nativeauthenticator), not one password for everyone.
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ.get("CLASSROOM_PASSWORD") or "classroom"
c.Authenticator.allowed_users = {f"student{k}" for k in range(1, STUDENTS + 1)} | {"teacher"}
c.Authenticator.admin_users = {"teacher"}

# ---------------------------------------------------------------- where servers run
# PRODUCTION: DockerSpawner (one container per student from the image classroom/Dockerfile
# builds) or KubeSpawner (zero-to-jupyterhub), which isolate students from each other.
c.JupyterHub.spawner_class = "simple"
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.args = ["--ServerApp.allow_root=True"] if os.getuid() == 0 else []
c.Spawner.default_url = f"/lab/tree/book/{OPEN}"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.environment = {
    # the library and the book's widgets from this checkout, whatever is installed
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    # each student compiles what is new into their own cache...
    "STRAIGHTDOPE_CACHE_DIR": lambda spawner: str(Path(spawner.home_dir, ".cache", "straightdope")),
    # a class shares the cores: one BLAS thread per student
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
}

if SHARED_CACHE:        # ...after loading what the class's shared cache holds (docs/security.md)
    c.Spawner.environment["STRAIGHTDOPE_SHARED_CACHE_DIR"] = SHARED_CACHE


# nbgrader's exchange, where the teacher releases assignments and students submit them
# (world-writable with the sticky bit, as nbgrader asks); the course is "straightdope".
EXCHANGE = STATE / "exchange"
EXCHANGE.mkdir(exist_ok=True)
EXCHANGE.chmod(0o1777)
NBGRADER_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "straightdope"
c.Exchange.root = {exchange!r}
"""
# nbgrader names a submission after the Unix user; here every student is the hub's user.
STUDENT_ID = """c.CourseDirectory.student_id = {name!r}
"""


def give_the_book(spawner):
    """Copy the book into a student's home the first time their server starts (their
    edits stay theirs; `rm -r` the copy to start again from the lecturer's version), and
    tell nbgrader where the class's exchange is."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = home / ".jupyter" / "nbgrader_config.py"
    if not config.exists():
        config.parent.mkdir(exist_ok=True)
        config.write_text(NBGRADER_CONFIG.format(exchange=str(EXCHANGE)) + (
            "" if spawner.user.admin else STUDENT_ID.format(name=spawner.user.name)))
    if not (home / "book").exists():
        shutil.copytree(REPO / "book", home / "book",
                        ignore=shutil.ignore_patterns("_build", "static_js", ".ipynb_checkpoints",
                                                      "*.params", "*-symbol.json", "*.onnx"))


c.Spawner.pre_spawn_hook = give_the_book

# ---------------------------------------------------------------- addresses and state
c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = PORT + 2
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 1}"
proxy = shutil.which("configurable-http-proxy", path=os.pathsep.join(
    [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
if proxy:
    c.ConfigurableHTTPProxy.command = [proxy]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True       # stopping the hub stops every student's server
c.JupyterHub.shutdown_on_logout = False

if API_TOKEN:
    c.JupyterHub.services = [{"name": "classroom", "api_token": API_TOKEN}]
    c.JupyterHub.load_roles = [{
        "name": "classroom-admin", "services": ["classroom"],
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:users"],
    }]
