"""The Chinese edition (book/zh/) in the notebook tests.

A Chinese chapter is named "zh/<name>" in test ids. By default its run is the Chinese book
build's (scripts/build_book.sh executes every book/zh/ notebook with -W, as it does the
English ones): the tests read the executed copy the build left, so `make test` does not
run each Chinese notebook twice. STRAIGHTDOPE_ZH_EXECUTE=1 executes them in the test
itself instead (quicker for one chapter: `STRAIGHTDOPE_ZH_EXECUTE=1 pytest
tests/test_book_part12.py -k zh/10`).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent.parent / "book"
ZH = BOOK / "zh"


def execute_here() -> bool:
    return os.environ.get("STRAIGHTDOPE_ZH_EXECUTE", "") not in ("", "0")


def is_zh(name: str) -> bool:
    return name.startswith("zh/")


def zh_names(names) -> list[str]:
    """"zh/<name>" for each chapter of `names` translated in book/zh/."""
    return [f"zh/{n}" for n in names if (ZH / f"{n}.ipynb").is_file()]


@contextmanager
def kernel_environment(name: str):
    """The environment a chapter's kernel inherits: for a Chinese chapter run outside
    book/zh/, the language of the widgets and the figures' CJK font (book/zh/matplotlibrc)."""
    if not is_zh(name):
        yield
        return
    saved = {k: os.environ.get(k) for k in ("STRAIGHTDOPE_LANG", "MATPLOTLIBRC")}
    os.environ.update(STRAIGHTDOPE_LANG="zh", MATPLOTLIBRC=str(ZH / "matplotlibrc"))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def executed_by_book_build(built_book: Path, name: str) -> nbformat.NotebookNode:
    """The Chinese chapter as the book build executed it."""
    path = built_book.parent / "zh" / "_build" / "jupyter_execute" / f"{name[3:]}.ipynb"
    assert path.is_file(), (f"the Chinese book build left no executed {path.name}: is "
                            f"book/{name}.ipynb in book/zh/_toc.yml?")
    return nbformat.read(path, as_version=4)
