"""Sphinx extension loaded by jupyter_book.yml and jupyter_book_zh.yml (`local_extensions`).

The book has two editions built into one site: English at `_build/html/`, Chinese at
`_build/html/zh/` (scripts/build_book.sh). Every page gets a link to the same page in the
other edition (to the other edition's front page when that page is not translated yet);
everything is a relative link, so the site still loads nothing from another host.

Configuration (`sphinx.config` in the book's yml):

    straightdope_other_edition:
      source: zh          # the other edition's source folder, relative to this one
      url: zh/            # where its HTML lands, relative to this edition's root
      label: 中文          # the link text
      lang: zh-CN         # its language (hreflang and lang of the link)

In the Chinese edition (`language: zh_CN`) it also translates the solution cells' folding
buttons ("Show code for solution 2"), which come from cell metadata that a translation
copies unchanged.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes

# Pages every Sphinx HTML build has without a source file.
GENERATED_PAGES = {"genindex", "search"}

# myst-nb's folding-button texts (scripts/solutions.py writes them into cell metadata).
PROMPTS_ZH = [
    (re.compile(r"^Show code for solution (\d+)$"), r"显示参考答案 \1 的代码"),
    (re.compile(r"^Hide code for solution (\d+)$"), r"隐藏参考答案 \1 的代码"),
    (re.compile(r"^Show code cell (.*)$"), r"显示代码单元格"),
    (re.compile(r"^Hide code cell (.*)$"), r"隐藏代码单元格"),
]


def other_page_url(srcdir: Path, pagename: str, other: dict) -> str:
    """Relative URL, from `pagename`'s HTML, of the same page in the other edition."""
    up = "../" * pagename.count("/")
    source = srcdir / other["source"]
    exists = pagename in GENERATED_PAGES or any(
        (source / f"{pagename}{ext}").is_file() for ext in (".ipynb", ".md"))
    return f"{up}{other['url']}{pagename if exists else 'index'}.html"


def switch_html(url: str, other: dict) -> str:
    return (f'<div class="sd-lang-switch"><a class="sd-lang-link" href="{html.escape(url)}" '
            f'hreflang="{html.escape(other["lang"])}" lang="{html.escape(other["lang"])}">'
            f'{html.escape(other["label"])}</a></div>\n')


def _add_switch(app, pagename, templatename, context, doctree):
    other = app.config.straightdope_other_edition
    if not other or "body" not in context:
        return
    url = other_page_url(Path(app.srcdir), pagename, other)
    context["body"] = switch_html(url, other) + context["body"]


def _translate_prompts(app, doctree):
    if not (app.config.language or "").startswith("zh"):
        return
    for node in doctree.findall(nodes.Element):
        for key in ("prompt_show", "prompt_hide"):
            text = node.get(key) if key in node.attributes else None
            if not isinstance(text, str):
                continue
            for pattern, replacement in PROMPTS_ZH:
                if pattern.match(text):
                    node[key] = pattern.sub(replacement, text)
                    break


def setup(app):
    app.add_config_value("straightdope_other_edition", None, "html", types=[dict])
    app.connect("html-page-context", _add_switch)
    app.connect("doctree-read", _translate_prompts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
