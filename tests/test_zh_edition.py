"""The Chinese edition (book/zh/) kept in step with the English one, without running it.

* Every book/zh/<name>.ipynb has the cells of book/<name>.ipynb: same number, types and
  metadata, and code cells that differ only in comments and string literals (compared
  token by token with `tokenize`). This FAILS the suite: a translation must never change
  what the code does.
* Its Markdown is Chinese: no paragraph of English prose left (code, math, links aside).
* It records the English version it translates (`straightdope.source_blob`);
  scripts/zh_status.py lists the chapters whose English source changed since. That drift
  only REPORTS (test_zh_status_reports_this_repository prints it): an English edit must
  not break the build, it must be visible (`make zh-status`).
* jupyter_book_zh.yml is jupyter_book.yml apart from the keys that make it Chinese.
* The language switch links each page to the same page in the other edition.

The Chinese chapters run in tests/test_book_part12.py and test_book_part34.py (or, with
STRAIGHTDOPE_ZH_EXECUTE=0, only in the book build); their built pages are checked in
tests/test_book_html.py; widgets and fonts in Chinese in tests/test_zh_widgets.py.
"""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "book"
ZH = BOOK / "zh"
ZH_CHAPTERS = sorted(p.stem for p in ZH.glob("[0-9]*.ipynb"))
sys.path.insert(0, str(REPO))

from scripts import zh_status  # noqa: E402
from scripts.sphinx_language_switch import other_page_url  # noqa: E402

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def read(path):
    return nbformat.read(path, as_version=4)


# ----------------------------------------------------------------- code cells in step
def code_tokens(source: str) -> list[tuple[int, str]]:
    """The tokens of a code cell that a translation may not change: everything except
    comments and the text of string literals (a string stays a string). IPython lines
    (`%timeit`, `!ls`) are compared as they are."""
    magic = [line for line in source.splitlines() if line.lstrip().startswith(("%", "!"))]
    code = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())
    tokens = []
    for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        tokens.append((tok.type, "<string>" if tok.type == tokenize.STRING else tok.string))
    return tokens + [(0, line) for line in magic]


def test_code_tokens_ignore_comments_and_strings_only():
    english = 'x = nd.ones((2, 3))  # two rows\nprint("shape:", x.shape)\n'
    assert code_tokens(english) == code_tokens(
        'x = nd.ones((2, 3))  # 两行\nprint("形状：", x.shape)\n')
    for changed in ('x = nd.ones((2, 4))  # two rows\nprint("shape:", x.shape)\n',
                    'y = nd.ones((2, 3))\nprint("shape:", y.shape)\n',
                    'x = nd.ones((2, 3))\nprint("shape:", x.shape, sep="")\n'):
        assert code_tokens(changed) != code_tokens(english), changed


def mismatches(english, chinese) -> list[str]:
    """Where a translation's cells differ from the English ones beyond what may differ."""
    if len(english.cells) != len(chinese.cells):
        return [f"{len(chinese.cells)} cells, the English has {len(english.cells)}"]
    found = []
    for i, (en, zh) in enumerate(zip(english.cells, chinese.cells)):
        if en.cell_type != zh.cell_type:
            found.append(f"cell {i}: {zh.cell_type}, the English is {en.cell_type}")
        elif en.get("metadata", {}) != zh.get("metadata", {}):
            found.append(f"cell {i}: metadata {dict(zh.metadata)} != English {dict(en.metadata)}")
        elif en.cell_type == "code":
            try:
                same = code_tokens(en.source) == code_tokens(zh.source)
            except (tokenize.TokenError, SyntaxError, IndentationError):
                same = en.source == zh.source
            if not same:
                found.append(f"cell {i}: code differs from the English beyond comments and "
                             f"strings:\n{zh.source[:300]}")
        elif en.cell_type == "markdown":
            labels = re.compile(r"^\(([^)\s]+)\)=\s*$", re.M)
            if labels.findall(en.source) != labels.findall(zh.source):
                found.append(f"cell {i}: MyST targets {labels.findall(zh.source)} != English "
                             f"{labels.findall(en.source)}")
    return found


def test_mismatches_catch_a_changed_cell():
    english = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("(intro)=\n# Title"),
        nbformat.v4.new_code_cell("net.hybridize()  # compile", metadata={"tags": ["x"]})])
    good = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("(intro)=\n# 标题"),
        nbformat.v4.new_code_cell("net.hybridize()  # 编译", metadata={"tags": ["x"]})])
    assert mismatches(english, good) == []
    bad = json.loads(json.dumps(good))
    bad = nbformat.from_dict(bad)
    bad.cells[1].source = "net.hybridize(static_alloc=True)"
    bad.cells[0].source = "# 标题"
    found = mismatches(english, bad)
    assert any("cell 1: code differs" in f for f in found), found
    assert any("cell 0: MyST targets" in f for f in found), found
    bad.cells[1].metadata = {}
    assert any("cell 1: metadata" in f for f in mismatches(english, bad))


@pytest.mark.parametrize("name", ZH_CHAPTERS)
def test_translation_has_the_english_cells(name):
    english_path = BOOK / f"{name}.ipynb"
    assert english_path.is_file(), f"book/zh/{name}.ipynb translates no book/{name}.ipynb"
    found = mismatches(read(english_path), read(ZH / f"{name}.ipynb"))
    assert not found, (f"book/zh/{name}.ipynb is out of step with book/{name}.ipynb "
                       "(translate comments, strings and Markdown only):\n" + "\n".join(found))


@pytest.mark.parametrize("name", ZH_CHAPTERS)
def test_translation_records_its_english_version(name):
    meta = read(ZH / f"{name}.ipynb").metadata.get("straightdope", {})
    assert meta.get("translation_of") == f"{name}.ipynb", meta
    assert re.fullmatch(r"[0-9a-f]{40}", meta.get("source_blob", "")), (
        f"book/zh/{name}.ipynb: set metadata.straightdope.source_blob to "
        f"`git hash-object book/{name}.ipynb` of the version translated")


# ----------------------------------------------------------------- Chinese prose
MARKUP = [
    re.compile(r"```.*?```|~~~.*?~~~", re.S),               # fenced code
    re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S),            # math
    re.compile(r"`[^`\n]*`"),                                # inline code
    re.compile(r"\]\([^)]*\)|<[^>]+>|https?://\S+"),        # link targets, HTML tags, URLs
    re.compile(r"\{[a-z]+\}|^\s*:::.*$|^\(\S+\)=\s*$", re.M),  # roles, fences, targets
]
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def english_paragraphs(markdown: str, min_words: int = 6) -> list[str]:
    """Paragraphs of `markdown` with `min_words` or more English words and no Chinese
    character, once code, math, links and markup are taken out."""
    for pattern in MARKUP:
        markdown = pattern.sub(" ", markdown)
    return [p.strip() for p in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)", markdown)
            if len(WORD.findall(p)) >= min_words and not CJK.search(p)]


def test_english_paragraphs_finds_english_prose_only():
    text = ("# 标题\n\n命令式编程（imperative programming）会立即执行 `net(x)`。\n\n"
            "This paragraph was left in English by mistake, sadly.\n\n"
            "```python\nprint('this is code and it has many English words')\n```\n\n"
            "$$\\mathrm{this\\ is\\ math\\ with\\ many\\ words\\ too}$$")
    assert english_paragraphs(text) == ["This paragraph was left in English by mistake, sadly."]


@pytest.mark.parametrize("name", ZH_CHAPTERS)
def test_translation_markdown_is_chinese(name):
    left = [(i, p[:120]) for i, cell in enumerate(read(ZH / f"{name}.ipynb").cells)
            if cell.cell_type == "markdown" for p in english_paragraphs(cell.source)]
    assert not left, f"book/zh/{name}.ipynb: English paragraphs left (cell, text): {left}"


@pytest.mark.parametrize("page", ["index", "glossary", "references", "instructor_guide"])
def test_chinese_pages_are_chinese(page):
    path = ZH / f"{page}.md"
    if not path.is_file():
        pytest.skip(f"book/zh/{page}.md is not written yet")
    text = path.read_text(encoding="utf-8")
    if page == "glossary":       # its English column is English by design
        text = re.sub(r"^\|[^|\n]*\|", "|", text, flags=re.M)
    assert CJK.search(text)
    assert not english_paragraphs(text), english_paragraphs(text)


def test_glossary_has_the_shared_terms_once():
    rows = [line.split("|")[1:4] for line in (ZH / "glossary.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| English")]
    english = [r[0].strip() for r in rows]
    assert len(rows) >= 100, len(rows)
    assert len(set(english)) == len(english), "a term is listed twice"
    terms = {r[0].strip(): r[1].strip() for r in rows}
    for en, zh in [("imperative programming", "命令式编程"), ("symbolic programming", "符号式编程"),
                   ("deferred initialization", "延迟初始化"), ("operator fusion", "算子融合"),
                   ("memory planning", "内存规划"), ("BLAS", "BLAS"), ("oneDNN", "oneDNN"),
                   ("loop fission", "循环分裂"), ("MLAS", "MLAS")]:
        assert terms[en].startswith(zh), (en, terms[en])
    assert all(r[2].strip() and CJK.search(r[2]) for r in rows), "a term lacks its meaning"


# ----------------------------------------------------------------- configuration
def test_chinese_config_is_the_english_one_apart_from_its_language():
    en = yaml.safe_load((REPO / "jupyter_book.yml").read_text())
    zh = yaml.safe_load((REPO / "jupyter_book_zh.yml").read_text())
    en_cfg, zh_cfg = en["sphinx"].pop("config"), zh["sphinx"].pop("config")
    assert zh_cfg.pop("language") == "zh_CN"
    assert zh_cfg.pop("straightdope_other_edition") == {
        "source": "..", "url": "../", "label": "English", "lang": "en"}
    assert en_cfg.pop("straightdope_other_edition")["url"] == "zh/"
    assert zh_cfg.pop("html_static_path") == [
        f"../{p}" for p in en_cfg.pop("html_static_path")] + ["static_js"]
    assert CJK.search(zh_cfg.pop("nb_code_prompt_show"))
    assert CJK.search(zh_cfg.pop("nb_code_prompt_hide"))
    assert zh_cfg == en_cfg
    assert CJK.search(zh.pop("title")) and en.pop("title")
    assert zh["html"].pop("favicon") == "../" + en["html"].pop("favicon")
    assert zh == en


def test_language_switch_links_to_the_same_page_or_the_front_page(tmp_path):
    (tmp_path / "zh").mkdir()
    for path in ("01_a.ipynb", "02_b.ipynb", "zh/01_a.ipynb", "zh/glossary.md"):
        (tmp_path / path).write_text("{}")
    to_zh = {"source": "zh", "url": "zh/", "label": "中文", "lang": "zh-CN"}
    to_en = {"source": "..", "url": "../", "label": "English", "lang": "en"}
    assert other_page_url(tmp_path, "01_a", to_zh) == "zh/01_a.html"
    assert other_page_url(tmp_path, "02_b", to_zh) == "zh/index.html"     # not translated
    assert other_page_url(tmp_path, "search", to_zh) == "zh/search.html"
    assert other_page_url(tmp_path / "zh", "01_a", to_en) == "../01_a.html"
    assert other_page_url(tmp_path / "zh", "glossary", to_en) == "../index.html"


# ----------------------------------------------------------------- drift: zh_status
def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def small_repo(tmp_path):
    """A git repository with two English chapters, one translated from the committed one."""
    (tmp_path / "book" / "zh").mkdir(parents=True)
    english = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# One"),
                                              nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(english, tmp_path / "book" / "01_one.ipynb")
    nbformat.write(english, tmp_path / "book" / "02_two.ipynb")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "en")
    blob = subprocess.run(["git", "-C", str(tmp_path), "hash-object", "book/01_one.ipynb"],
                          capture_output=True, text=True, check=True).stdout.strip()
    chinese = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 一"),
                                              nbformat.v4.new_code_cell("x = 1")])
    chinese.metadata["straightdope"] = {"translation_of": "01_one.ipynb", "source_blob": blob}
    nbformat.write(chinese, tmp_path / "book" / "zh" / "01_one.ipynb")
    return tmp_path


def test_zh_status_finds_the_chapter_whose_english_changed(small_repo, capsys):
    states = {s.name: s.state for s in zh_status.status(small_repo)}
    assert states == {"01_one.ipynb": "current", "02_two.ipynb": "untranslated"}
    assert zh_status.main(["--root", str(small_repo), "--check"]) == 0

    path = small_repo / "book" / "01_one.ipynb"
    nb = read(path)
    nb.cells.append(nbformat.v4.new_code_cell("y = 2"))
    nbformat.write(nb, path)
    behind = {s.name: s for s in zh_status.status(small_repo)}["01_one.ipynb"]
    assert behind.state == "behind"
    assert any(h.startswith("+") and " -" in h for h in behind.hint), behind.hint
    assert any("insert English cell 2" in h for h in behind.hint), behind.hint
    capsys.readouterr()
    assert zh_status.main(["--root", str(small_repo), "--check"]) == 1
    out = capsys.readouterr().out
    assert "book/zh/01_one.ipynb" in out and "Behind the English source" in out
    assert "book/02_two.ipynb" in out.split("Not translated yet:")[1]


def test_zh_status_follows_markdown_pages_by_their_first_line_comment(small_repo):
    (small_repo / "book" / "index.md").write_text("# Front\n")
    blob = subprocess.run(["git", "-C", str(small_repo), "hash-object", "book/index.md"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (small_repo / "book" / "zh" / "index.md").write_text(
        f"<!-- translation_of: index.md source_blob: {blob} -->\n# 首页\n")
    assert {s.name: s.state for s in zh_status.status(small_repo)}["index.md"] == "current"
    (small_repo / "book" / "index.md").write_text("# Front page\n")
    page = {s.name: s for s in zh_status.status(small_repo)}["index.md"]
    assert page.state == "behind" and page.recorded == blob


@pytest.mark.parametrize("page", ["index", "references", "instructor_guide"])
def test_chinese_pages_record_their_english_version(page):
    if not (ZH / f"{page}.md").is_file():
        pytest.skip(f"book/zh/{page}.md is not written yet")
    assert re.fullmatch(r"[0-9a-f]{40}", zh_status.recorded_blob(ZH / f"{page}.md")), (
        f"book/zh/{page}.md: first line <!-- translation_of: {page}.md source_blob: <sha> -->")


def test_zh_status_reports_this_repository():
    """The drift of this checkout, printed (it reports, it does not fail the suite)."""
    statuses = zh_status.status(REPO)
    text = zh_status.report(statuses)
    print(text)
    translated = {s.name for s in statuses if s.state != "untranslated"}
    assert {f"{n}.ipynb" for n in ZH_CHAPTERS} <= translated
    assert f"of {len(list(BOOK.glob('[0-9]*.ipynb')))} chapters translated" in text
    assert shutil.which("git")
