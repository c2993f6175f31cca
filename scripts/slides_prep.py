"""Shape an executed chapter for its lecture deck: an nbconvert preprocessor that
scripts/build_slides.sh runs (through scripts/slides_template/straightdope_reveal/conf.json)
before nbconvert's reveal.js template turns cells into slides.

- The solutions are left out: cells tagged `solution` and the `## Solutions` section.
- Every `##` section starts a slide: a markdown cell is cut where a `##` heading starts
  inside it, and the heading's cell gets `slide_type: slide`.
- MyST admonitions (```` ```{note} ````, `:::{admonition} Title` with `:class:`), which
  nbconvert's Markdown renderer would show as raw text, become HTML boxes
  (`<div class="admonition note">`, styled by the template) around their Markdown body.

Slides taller than the screen are cut in the browser, where their height can be measured
(scripts/slides_template/fit_slides.js).
"""
from __future__ import annotations

import copy
import html
import re

from nbconvert.preprocessors import Preprocessor

from scripts.solutions import HEADINGS, TAG

# MyST's admonition directives and their default titles (as Sphinx prints them).
ADMONITIONS = {
    "en": {"note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important",
           "warning": "Warning", "caution": "Caution", "attention": "Attention",
           "danger": "Danger", "error": "Error", "seealso": "See also", "admonition": ""},
    "zh": {"note": "注意", "tip": "提示", "hint": "提示", "important": "重要",
           "warning": "警告", "caution": "小心", "attention": "注意", "danger": "危险",
           "error": "错误", "seealso": "参见", "admonition": ""},
}
OPENING = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}\s*(?P<arg>.*)$")
CODE_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
SECTION = re.compile(r"^## ", re.M)


def chapter_language(nb) -> str:
    """'zh' for the Chinese edition (its notebooks name the chapter they translate)."""
    return "zh" if nb.metadata.get("straightdope", {}).get("translation_of") else "en"


def _inline(text: str) -> str:
    """A title's Markdown inline code as HTML (HTML blocks are not parsed as Markdown)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def render_admonitions(source: str, lang: str = "en", where: str = "markdown") -> str:
    """`source` with every MyST admonition replaced by an HTML box around its body.

    The body stays Markdown: blank lines around it end the HTML blocks, so the renderer
    parses it (lists, code, math). Fenced code blocks are copied untouched. Any other
    directive is refused, naming it and `where` it is, since the deck would show it raw.
    """
    out, stack = [], []          # stack: (fence, 'box' | 'details' | 'code'), innermost last
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        bare = line.strip()
        if stack:
            fence, kind = stack[-1]
            if bare and set(bare) == {fence[0]} and len(bare) >= len(fence):
                stack.pop()
                out.append(line if kind == "code" else
                           "\n</details>\n" if kind == "details" else "\n</div>\n")
                continue
            if kind == "code":
                out.append(line)
                continue
        opening = OPENING.match(bare)
        if opening is None:
            code = CODE_FENCE.match(bare)
            if code:
                stack.append((code["fence"], "code"))
            out.append(line)
            continue
        name, arg = opening["name"], opening["arg"].strip()
        options = {}
        while i < len(lines) and OPTION.match(lines[i].strip()):
            option = OPTION.match(lines[i].strip())
            options[option["key"]] = option["value"].strip()
            i += 1
        if name == "dropdown":
            out += [f"<details class=\"dropdown {options.get('class', '')}\">",
                    f"<summary>{_inline(arg)}</summary>", ""]
            stack.append((opening["fence"], "details"))
            continue
        titles = ADMONITIONS.get(lang, ADMONITIONS["en"])
        if name not in titles:
            raise ValueError(
                f"{where}: the MyST directive {{{name}}} has no slide rendering; the deck "
                f"would show it as raw text. Use an admonition ({', '.join(sorted(titles))}) "
                "or teach scripts/slides_prep.py to render it")
        if name == "admonition":
            title, classes = arg, options.get("class", "note")
        else:                                 # {note} Text: the text is the body's start
            title, classes = titles[name], " ".join(filter(None, [name, options.get("class")]))
        out += [f'<div class="admonition {html.escape(classes)}">',
                f'<p class="admonition-title">{_inline(title)}</p>', ""]
        if name != "admonition" and arg:
            out.append(arg)
        stack.append((opening["fence"], "box"))
    if any(kind != "code" for _, kind in stack):
        raise ValueError(f"{where}: a MyST directive opened with {stack[-1][0]} is never "
                         "closed; close it with the same fence on a line of its own")
    return "\n".join(out)


def split_sections(cell) -> list:
    """The markdown `cell` cut before every `## ` heading after its first line (code
    fences ignored); each piece a cell of its own, the headed ones starting a slide."""
    starts, fence = [0], None
    offset = 0
    for line in cell.source.split("\n"):
        code = CODE_FENCE.match(line.strip())
        if code and (fence is None or code["fence"][0] == fence[0]):
            fence = None if fence else code["fence"]
        elif fence is None and offset and SECTION.match(line):
            starts.append(offset)
        offset += len(line) + 1
    pieces = [cell.source[a:b].strip("\n") for a, b in zip(starts, starts[1:] + [None])]
    cells = []
    for k, text in enumerate(pieces):
        piece = copy.deepcopy(cell)
        piece.source = text
        if k:
            piece["id"] = f"{cell.get('id', 'cell')}-{k}"
        slide_type = piece.metadata.get("slideshow", {}).get("slide_type")
        if SECTION.match(text) and slide_type not in ("skip", "notes"):
            piece.metadata["slideshow"] = {**piece.metadata.get("slideshow", {}),
                                           "slide_type": "slide"}
        cells.append(piece)
    return cells


def deck_cells(nb, where: str = "notebook") -> list:
    """The cells of the deck: no solutions, a slide per `##` section, admonitions as HTML."""
    lang = chapter_language(nb)
    solutions_heading = HEADINGS[lang][1]
    cells, in_solutions = [], False
    for index, cell in enumerate(nb.cells):
        if TAG in cell.metadata.get("tags", []):
            continue
        pieces = split_sections(cell) if cell.cell_type == "markdown" else [cell]
        for piece in pieces:
            if piece.cell_type == "markdown" and SECTION.match(piece.source):
                in_solutions = piece.source.split("\n", 1)[0].strip() == solutions_heading
            if in_solutions:
                continue
            if piece.cell_type == "markdown":
                piece.source = render_admonitions(piece.source, lang, f"{where}, cell {index}")
            cells.append(piece)
    return cells


class DeckPreprocessor(Preprocessor):
    """nbconvert preprocessor: `deck_cells` for every chapter rendered as slides."""

    def preprocess(self, nb, resources):
        name = resources.get("metadata", {}).get("name", "notebook")
        nb.cells = deck_cells(nb, f"{name}.ipynb")
        return nb, resources
