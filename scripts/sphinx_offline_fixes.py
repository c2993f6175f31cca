"""Sphinx extension loaded by jupyter_book.yml (`sphinx.local_extensions`).

1. De-duplicates the <script> tags of a page. Sphinx 7.4 adds every inline
   script registered after the builder started twice (once with filename None,
   once with ""), so sphinx-thebe's `const THEBE_JS_URL = ...` is declared twice
   and every page throws "Identifier 'THEBE_JS_URL' has already been declared".
2. Warns (so `-W` fails the build) when a page would load a script or a
   stylesheet from another host: the book must work offline.
"""

from __future__ import annotations

import os

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _key(asset):
    filename = os.fspath(asset.filename) if asset.filename else ""
    return filename, asset.priority, tuple(sorted(asset.attributes.items()))


def _is_remote(asset) -> bool:
    filename = os.fspath(asset.filename) if asset.filename else ""
    return "://" in filename or filename.startswith("//")


def _fix_page(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        seen, unique = set(), []
        for js in scripts:
            key = _key(js)
            if key not in seen:
                seen.add(key)
                unique.append(js)
        scripts[:] = unique
    for kind in ("script_files", "css_files"):
        for asset in context.get(kind) or ():
            if _is_remote(asset):
                logger.warning(
                    "page %s loads %s from another host; serve it from book/static_js/ "
                    "(see scripts/build_book.sh)", pagename, os.fspath(asset.filename),
                    type="straightdope", subtype="offline",
                )


def setup(app):
    # After myst-nb and the themes have added their per-page assets.
    app.connect("html-page-context", _fix_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
