"""The two ways to install (pip + pyproject.toml, conda + environment.yml) agree,
and importing the library stays light."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# conda-forge name -> PyPI name, where they differ
CONDA_TO_PYPI = {
    "python-graphviz": "graphviz",
    "playwright-python": "playwright",
}

# Top-level modules that `import straightdope` must not pull in: they belong to
# the `book`/`test` extras (or Jupyter), not to the core dependencies.
HEAVY_MODULES = {
    "IPython", "ipykernel", "ipywidgets", "jupyter", "jupyter_client", "jupyter_core",
    "jupyter_server", "jupyterlab", "jupyter_book", "nbclient", "nbformat",
    "matplotlib", "graphviz", "sphinx", "tqdm", "sklearn",
    "pytest", "hypothesis", "playwright", "threadpoolctl", "onnx", "onnxruntime",
}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    """'jupyter-book<2' -> 'jupyter-book'; 'numpy[extra]>=1; python_version...' -> 'numpy'."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"cannot parse requirement {requirement!r}"
    return _normalize(match.group(1))


def _pyproject() -> dict:
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _pyproject_requirements() -> dict[str, str]:
    """normalized name -> the requirement string, over core deps and all extras."""
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    return {_requirement_name(r): r for r in reqs}


def _environment_yml() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML (comes with jupyter-book) is needed to read environment.yml")
    return yaml.safe_load((REPO_ROOT / "environment.yml").read_text())


def _conda_requirements(env: dict) -> tuple[dict[str, str], list[str]]:
    """(normalized PyPI-equivalent name -> spec string, pip entries)."""
    conda, pip = {}, []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip.extend(dep.get("pip", []))
            continue
        name = re.split(r"[=<>!~\s]", dep.strip(), maxsplit=1)[0]
        name = _normalize(name)
        conda[_normalize(CONDA_TO_PYPI.get(name, name))] = dep
    return conda, pip


def test_core_dependencies_are_only_numpy_numba_scipy():
    core = {_requirement_name(r) for r in _pyproject()["project"]["dependencies"]}
    assert core == {"numpy", "numba", "scipy"}


def test_environment_yml_lists_every_pyproject_dependency():
    env = _environment_yml()
    assert "conda-forge" in env["channels"]
    conda, pip = _conda_requirements(env)
    pip_names = {_requirement_name(p) for p in pip if not p.startswith("-")}
    available = set(conda) | pip_names
    missing = sorted(set(_pyproject_requirements()) - available)
    assert not missing, f"in pyproject.toml but not in environment.yml: {missing}"
    assert "-e ." in pip, "environment.yml should pip-install the project itself (-e .)"


def test_environment_yml_python_and_pins_match_pyproject():
    env = _environment_yml()
    conda, _ = _conda_requirements(env)
    assert conda["python"].replace(" ", "") in ("python=3.11", "python==3.11")
    assert _pyproject()["project"]["requires-python"] == ">=3.11"
    # Jupyter Book 2.x cannot build HTML offline: both files must keep 1.x.
    assert "<2" in _pyproject_requirements()["jupyter-book"]
    assert "<2" in conda["jupyter-book"]


def _versions(spec: str) -> str:
    """'numba>=0.68.1,<0.69' or 'numba >=0.68.1, <0.69' -> '>=0.68.1,<0.69'."""
    return re.sub(r"\s+", "", spec)[len(_requirement_name(spec)):]


def test_both_files_pin_numba_to_the_versions_the_compile_cache_is_tested_with():
    """compiler/numba_internals.py uses Numba's private API, for one tested range."""
    from straightdope.compiler.numba_internals import SUPPORTED
    tested = f">={SUPPORTED[0]},<{SUPPORTED[1]}"
    conda, _ = _conda_requirements(_environment_yml())
    assert _versions(_pyproject_requirements()["numba"]) == tested
    assert _versions(conda["numba"]) == tested


def test_import_straightdope_stays_light():
    """`import straightdope` needs only numpy/numba/scipy: no Jupyter, matplotlib,
    graphviz or widgets until a chapter or a widget module asks for them."""
    code = (
        "import json, sys\n"
        "import straightdope\n"
        f"heavy = {sorted(HEAVY_MODULES)!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"import straightdope failed:\n{proc.stderr}"
    imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert imported == [], f"import straightdope also imported: {imported}"
