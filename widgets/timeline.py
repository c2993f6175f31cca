"""Timeline: a profiler trace drawn in the notebook, one row per thread.

    mx.profiler.set_state("run")
    ...                               # ops under the threaded engine
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    Timeline()                        # the events recorded so far (or a trace dict/file)

Each op is a bar on the row of the thread that ran it, from its start for its duration
(hover for name and times). Under NaiveEngine every op sits on the front end's row
(MainThread); under the threaded engine they sit on the workers' rows, and the front
end's row shows in red where `waitall()`/`wait_to_read()` blocked it. Two chains that
ran at the same time show as bars stacked on two worker rows; the summary below says for
how long two workers were busy at once. Bars are coloured by profiler scope (`with
mx.profiler.scope("chain A"):`), or by op with the dropdown.

The drawing is inline SVG in an HTML widget, so a static page keeps it.
"""
from __future__ import annotations

import json
import os

import ipywidgets as w

from . import _style as st
from .messages import t as tr

WIDTH, LABEL, ROW, BAR = 860, 150, 30, 20
PALETTE = ("#1f77b4", "#e07b00", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22",
           "#7f7f7f")
WAIT_COLOR = st.ERROR


def load_events(source=None) -> list[dict]:
    """Events as dicts (name, cat, thread, start_us, dur_us) from: None (the profiler's
    events so far), a Chrome trace dict (profiler.trace(), or a dumped file's JSON),
    a path to a dumped file, or a list of such dicts."""
    if source is None:
        from straightdope import profiler
        return profiler.events()
    if isinstance(source, (str, os.PathLike)):
        with open(source, encoding="utf-8") as f:
            source = json.load(f)
    if isinstance(source, dict):
        raw = source.get("traceEvents")
        if raw is None:
            raise ValueError("Timeline: a trace dict needs 'traceEvents' (what "
                             "mx.profiler.dump() writes or profiler.trace() returns)")
        names = {e["tid"]: e["args"]["name"] for e in raw if e.get("ph") == "M"}
        return [{"name": e["name"], "cat": e.get("cat", ""),
                 "thread": names.get(e["tid"], f"thread {e['tid']}"),
                 "start_us": float(e["ts"]), "dur_us": float(e.get("dur", 0))}
                for e in raw if e.get("ph") == "X"]
    return [dict(e) for e in source]


def _scope(name):
    return name.rsplit(":", 1)[0] if ":" in name else ""


def _base(name):
    return name.rsplit(":", 1)[-1]


def summarize(events) -> dict:
    """Plain numbers (milliseconds): the span, per thread the ops it ran and its busy
    time, the time the front end waited, and how long two or more engine workers were
    busy at the same time (`overlap_ms`)."""
    ops = [e for e in events if e["cat"] == "operator"]
    waits = [e for e in events if e["cat"] == "wait"]
    if not events:
        return {"span_ms": 0.0, "threads": {}, "waited_ms": 0.0, "overlap_ms": 0.0,
                "ops": 0}
    start = min(e["start_us"] for e in events)
    end = max(e["start_us"] + e["dur_us"] for e in events)
    threads = {}
    for e in ops:
        entry = threads.setdefault(e["thread"], {"ops": 0, "busy_ms": 0.0})
        entry["ops"] += 1
        entry["busy_ms"] += e["dur_us"] / 1e3
    return {"span_ms": (end - start) / 1e3, "threads": threads, "ops": len(ops),
            "waited_ms": sum(e["dur_us"] for e in waits) / 1e3,
            "overlap_ms": _overlap([e for e in ops if e["thread"] != "MainThread"]) / 1e3}


def _overlap(ops) -> float:
    """Microseconds during which ops of two or more different threads ran at once."""
    points = []
    for e in ops:
        points.append((e["start_us"], 1, e["thread"]))
        points.append((e["start_us"] + e["dur_us"], -1, e["thread"]))
    points.sort(key=lambda p: (p[0], p[1]))
    busy, total, last = {}, 0.0, None
    for time_us, step, thread in points:
        if last is not None and sum(1 for n in busy.values() if n > 0) >= 2:
            total += time_us - last
        busy[thread] = busy.get(thread, 0) + step
        last = time_us
    return total


def _thread_order(name):
    return (name != "MainThread", name)


def draw(events, color_by="scope") -> str:
    """The timeline as inline SVG: a row per thread, a bar per event."""
    if not events:
        return st.note(tr("timeline.empty"))
    threads = sorted({e["thread"] for e in events}, key=_thread_order)
    start = min(e["start_us"] for e in events)
    span = max(e["start_us"] + e["dur_us"] for e in events) - start or 1.0
    scale = (WIDTH - LABEL - 10) / span
    keys = sorted({(_scope(e["name"]) if color_by == "scope" else _base(e["name"]))
                   for e in events if e["cat"] != "wait"})
    colors = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}
    height = ROW * len(threads) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'style="max-width: 100%; height: auto; font-family: \'DejaVu Sans\', '
             f'sans-serif; font-size: 13px;">']
    for row, thread in enumerate(threads):
        y = row * ROW + 4
        label = tr("timeline.front_end") if thread == "MainThread" else thread
        parts.append(f'<text x="4" y="{y + BAR - 5}" fill="#222">{st.esc(label)}</text>'
                     f'<line x1="{LABEL}" x2="{WIDTH - 5}" y1="{y + BAR + 3}" '
                     f'y2="{y + BAR + 3}" stroke="#ddd"/>')
    for e in events:
        row = threads.index(e["thread"])
        x = LABEL + (e["start_us"] - start) * scale
        width = max(e["dur_us"] * scale, 1.0)
        if e["cat"] == "wait":
            fill = WAIT_COLOR
        else:
            fill = colors[_scope(e["name"]) if color_by == "scope" else _base(e["name"])]
        title = tr("timeline.bar_title", name=e["name"], thread=e["thread"],
                   start=(e["start_us"] - start) / 1e3, dur=e["dur_us"] / 1e3)
        parts.append(f'<rect class="sd-{st.esc(e["cat"])}" x="{x:.1f}" '
                     f'y="{row * ROW + 4}" width="{width:.1f}" height="{BAR}" '
                     f'fill="{fill}" fill-opacity="0.85" stroke="#fff" stroke-width="0.5">'
                     f'<title>{st.esc(title)}</title></rect>')
    axis_y = ROW * len(threads) + 20
    parts.append(f'<text x="{LABEL}" y="{axis_y}" fill="#666">0 ms</text>'
                 f'<text x="{WIDTH - 5}" y="{axis_y}" fill="#666" text-anchor="end">'
                 f'{span / 1e3:.2f} ms</text>')
    legend_x = LABEL + 80
    for key in keys[:6]:
        label = key or (tr("timeline.no_scope") if color_by == "scope" else key)
        parts.append(f'<rect x="{legend_x}" y="{axis_y - 11}" width="12" height="12" '
                     f'fill="{colors[key]}"/><text x="{legend_x + 16}" y="{axis_y}" '
                     f'fill="#222">{st.esc(label)}</text>')
        legend_x += 24 + 8 * len(label)
    if any(e["cat"] == "wait" for e in events):
        parts.append(f'<rect x="{legend_x}" y="{axis_y - 11}" width="12" height="12" '
                     f'fill="{WAIT_COLOR}"/><text x="{legend_x + 16}" y="{axis_y}" '
                     f'fill="#222">{st.esc(tr("timeline.waiting"))}</text>')
    parts.append("</svg>")
    return "".join(parts)


class Timeline(w.VBox):
    """Which thread ran which op, and when (see the module docstring)."""

    def __init__(self, source=None, color_by="scope"):
        self.events = load_events(source)
        self.color = w.Dropdown(options=[(tr("timeline.by_scope"), "scope"),
                                         (tr("timeline.by_op"), "op")],
                                value=color_by, description=tr("timeline.colour"))
        self.drawing = w.HTML()
        self.summary_html = w.HTML()
        self.color.observe(lambda change: self.redraw(), names="value")
        super().__init__([w.HTML(st.CSS + st.heading(tr("timeline.heading"))), self.color,
                          self.drawing, self.summary_html])
        self.add_class("sd-widget")
        self.redraw()

    def summary(self) -> dict:
        return summarize(self.events)

    def redraw(self):
        self.drawing.value = draw(self.events, self.color.value)
        s = self.summary()
        rows = [(tr("timeline.span"), f"{s['span_ms']:.2f} ms")]
        for thread in sorted(s["threads"], key=_thread_order):
            entry = s["threads"][thread]
            name = tr("timeline.front_end") if thread == "MainThread" else thread
            rows.append((name, tr("timeline.thread_row", ops=entry["ops"],
                                  busy=entry["busy_ms"])))
        rows.append((tr("timeline.waited"), f"{s['waited_ms']:.2f} ms"))
        rows.append((tr("timeline.overlap"), f"{s['overlap_ms']:.2f} ms"))
        self.summary_html.value = st.table(rows)

