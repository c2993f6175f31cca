"""The shared look of the widgets, and the helpers that keep them alive in a static page.

Two constraints shape everything here:
- a projector: body text 15px, code 14px, nothing below 12px;
- the book's static HTML keeps each widget's *state* (an HTML widget's value, an Image's
  PNG bytes) but none of the notebook's CSS and no running kernel. So every visual is
  inline HTML with inline styles: `<pre>` for text, inline `<svg>` for graphs, PNG for plots.
"""
from __future__ import annotations

import contextlib
import html
import io
import re
import sys
import threading

FONT = "font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif; font-size: 15px;"
MONO = "font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 14px;"

#: The widgets' own controls (buttons, labels, dropdowns) at projector size. Scoped to the
#: `sd-widget` class that every widget here carries, so the notebook around is untouched.
#: The font is set on the widget's root only (descendants inherit it): a static page has
#: no JupyterLab stylesheet and would fall back to a serif font, while icon fonts and the
#: inline styles of <pre> blocks must keep their own.
CSS = ("<style>.sd-widget {font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif;} "
       ".sd-widget button, .sd-widget .widget-label, .sd-widget select, "
       ".sd-widget .widget-readout, .sd-widget .widget-label-basic, "
       ".sd-widget .jupyter-widget-Collapse-header "
       "{font-size: 15px !important;} .sd-widget .widget-html-content {line-height: 1.3;}"
       "</style>")

#: One colour per mode, used in panels and plots alike so that they read together.
IMPERATIVE = "#1f77b4"
HYBRIDIZED = "#e07b00"
ERROR = "#c62828"
MUTED = "#666666"


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def pre(text, color="#222222", background="#f7f7f7", border=None) -> str:
    """Text in a `<pre>` that wraps long lines (printed Symbols and paths can be long)."""
    edge = f"border-left: 4px solid {border};" if border else ""
    return (f'<pre style="{MONO} color: {color}; background: {background}; {edge} '
            f'margin: 4px 0; padding: 6px 10px; white-space: pre-wrap; '
            f'word-break: break-word; line-height: 1.35;">{esc(text)}</pre>')


def heading(text, color="#222222", size=17) -> str:
    return (f'<div style="{FONT} font-size: {size}px; font-weight: bold; color: {color}; '
            f'margin: 2px 0 6px 0;">{esc(text)}</div>')


def note(text, color=MUTED) -> str:
    return f'<div style="{FONT} color: {color}; margin: 4px 0;">{esc(text)}</div>'


def panel(inner_html, accent="#999999") -> str:
    """A bordered box; the accent colour says which mode (or an error) it belongs to."""
    return (f'<div style="{FONT} border: 2px solid {accent}; border-radius: 6px; '
            f'padding: 8px 12px; background: #ffffff;">{inner_html}</div>')


def table(rows) -> str:
    """A two-column key/value table; values are escaped text."""
    cells = "".join(
        f'<tr><td style="padding: 2px 10px 2px 0; color: {MUTED}; vertical-align: top; '
        f'white-space: nowrap;">{esc(k)}</td>'
        f'<td style="padding: 2px 0; {MONO}">{esc(v)}</td></tr>' for k, v in rows)
    return f'<table style="{FONT} border-collapse: collapse;">{cells}</table>'


def dot_to_svg(dot: str, zoom: float = 1.0) -> str:
    """Render DOT with Graphviz's `dot` into inline SVG markup.

    The XML prolog and DOCTYPE are dropped (they are not allowed inside HTML), and the
    drawing may shrink to fit its column (max-width) but keeps its proportions. `zoom`
    scales the natural size: Graphviz draws 11pt labels, a bit small for a projector.
    """
    import graphviz
    svg = graphviz.Source(dot).pipe(format="svg", encoding="utf-8")
    svg = svg[svg.index("<svg"):]

    def scale(match):
        value, unit = float(match.group(2)), match.group(3)
        return f'{match.group(1)}="{value * zoom:.1f}{unit}"'
    head_end = svg.index(">")
    head = re.sub(r'(width|height)="([\d.]+)(pt|px)?"', scale, svg[:head_end])
    head += ' style="max-width: 100%; height: auto;"'
    return head + svg[head_end:]


def figure_png(fig, dpi=100) -> bytes:
    """PNG bytes of a matplotlib Figure, drawn with Agg (no pyplot, no GUI, thread-safe
    as long as one thread draws a given figure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


class Discard:
    """A stream that forgets what is written to it (a benchmark's thousands of prints)."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


class _PerThreadStdout:
    """sys.stdout that sends the writes of some threads to their own sinks.

    `contextlib.redirect_stdout` swaps sys.stdout for the whole process: a benchmark
    running in a background thread would swallow the notebook's prints too. This proxy
    redirects only the threads that asked; every other thread writes where it did before.
    """

    def __init__(self, fallback):
        self.fallback = fallback
        self.sinks = {}

    def _target(self):
        return self.sinks.get(threading.get_ident(), self.fallback)

    def write(self, text):
        return self._target().write(text)

    def flush(self):
        return self._target().flush()

    def __getattr__(self, name):
        return getattr(self.fallback, name)


_stdout_lock = threading.Lock()


@contextlib.contextmanager
def thread_stdout(sink):
    """Inside the block, what *this thread* prints goes to `sink` (a StringIO, say)."""
    ident = threading.get_ident()
    with _stdout_lock:
        proxy = sys.stdout
        if not isinstance(proxy, _PerThreadStdout):
            proxy = sys.stdout = _PerThreadStdout(sys.stdout)
        previous = proxy.sinks.get(ident)
        proxy.sinks[ident] = sink
    try:
        yield sink
    finally:
        with _stdout_lock:
            if previous is None:
                proxy.sinks.pop(ident, None)
            else:
                proxy.sinks[ident] = previous
            # Put the original stream back once nobody needs the proxy, unless someone
            # else has replaced sys.stdout meanwhile (then it is theirs to restore).
            if not proxy.sinks and sys.stdout is proxy:
                sys.stdout = proxy.fallback


def call_capturing(fn, *args, **kwargs):
    """Run `fn(*args, **kwargs)` and return (result, printed text, exception or None).

    What the function prints (in this thread) goes into a buffer instead of the notebook,
    so a widget can show it in its own panel. An exception is returned, not raised: the
    widget shows the message and keeps working.
    """
    buffer = io.StringIO()
    result, error = None, None
    with thread_stdout(buffer):
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:   # noqa: BLE001 - shown to the student, not swallowed
            error = exc
    return result, buffer.getvalue(), error
