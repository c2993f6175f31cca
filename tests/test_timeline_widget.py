"""widgets.Timeline at the widget-state level: the SVG it draws and the numbers it reports,
from hand-made events (exact) and from a real profile of the threaded engine."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from straightdope import engine, nd, profiler
from widgets import Timeline
from widgets.messages import set_language
from widgets.timeline import summarize

SVG = "{http://www.w3.org/2000/svg}"


def bars(widget, category):
    root = ET.fromstring(widget.drawing.value)
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == f"sd-{category}"]


def row_labels(widget):
    root = ET.fromstring(widget.drawing.value)
    return [t.text for t in root.iter(f"{SVG}text")]


EVENTS = [
    {"name": "A:dot", "cat": "operator", "thread": "engine worker 0", "start_us": 100.0,
     "dur_us": 10.0},
    {"name": "B:dot", "cat": "operator", "thread": "engine worker 1", "start_us": 105.0,
     "dur_us": 15.0},
    {"name": "A:relu", "cat": "operator", "thread": "engine worker 0", "start_us": 112.0,
     "dur_us": 4.0},
    {"name": "WaitAll", "cat": "wait", "thread": "MainThread", "start_us": 101.0,
     "dur_us": 19.0},
]


def test_summary_numbers_from_known_events():
    s = summarize(EVENTS)
    assert s["span_ms"] == pytest.approx(0.020)
    assert s["threads"]["engine worker 0"] == {"ops": 2, "busy_ms": pytest.approx(0.014)}
    assert s["threads"]["engine worker 1"] == {"ops": 1, "busy_ms": pytest.approx(0.015)}
    assert s["waited_ms"] == pytest.approx(0.019)
    # both workers busy during 105-110 and 112-116: 9 us
    assert s["overlap_ms"] == pytest.approx(0.009)


def test_one_bar_per_event_on_its_thread_row_and_waits_in_red():
    widget = Timeline(EVENTS)
    ops, waits = bars(widget, "operator"), bars(widget, "wait")
    assert len(ops) == 3 and len(waits) == 1
    labels = row_labels(widget)
    assert labels[:3] == ["front end", "engine worker 0", "engine worker 1"]
    assert float(waits[0].get("y")) < min(float(r.get("y")) for r in ops)   # first row
    assert waits[0].get("fill") == "#c62828"
    titles = [r.find(f"{SVG}title").text for r in ops]
    assert "B:dot on engine worker 1: starts at 0.005 ms, takes 0.015 ms" in titles
    # the two chains (scopes A and B) get two colours; A's two ops share one
    fills = {r.find(f"{SVG}title").text.split(" ")[0]: r.get("fill") for r in ops}
    assert fills["A:dot"] == fills["A:relu"] != fills["B:dot"]
    assert "0.01 ms" in widget.summary_html.value      # overlap, two decimals
    widget.color.value = "op"                           # colour by op: both dots alike
    fills = {r.find(f"{SVG}title").text.split(" ")[0]: r.get("fill")
             for r in bars(widget, "operator")}
    assert fills["A:dot"] == fills["B:dot"] != fills["A:relu"]


def test_a_dumped_trace_file_draws_the_same_as_the_events(tmp_path):
    previous = engine.set_engine_type("ThreadedEngine", workers=2)
    path = tmp_path / "trace.json"
    profiler.set_config(filename=str(path))
    try:
        profiler.set_state("run")
        a, b = nd.ones((200, 200)), nd.ones((200, 200))
        for _ in range(3):
            with profiler.scope("A"):
                a = nd.dot(a, a) / 200
            with profiler.scope("B"):
                b = nd.dot(b, b) / 200
        nd.waitall()
        profiler.set_state("stop")
        live = Timeline()
        profiler.dump()
    finally:
        profiler.set_state("stop")
        engine.set_engine_type(previous)
    from_file = Timeline(str(path))
    from_dict = Timeline(json.loads(path.read_text()))
    assert len(bars(live, "operator")) == len(bars(from_file, "operator")) == 12
    assert from_file.drawing.value == from_dict.drawing.value
    assert set(from_file.summary()["threads"]) <= {"engine worker 0", "engine worker 1"}
    assert from_file.summary()["ops"] == 12
    assert any(label.startswith("engine worker") for label in row_labels(from_file))


def test_no_events_says_how_to_get_some():
    assert "set_state(&#x27;run&#x27;)" in Timeline([]).drawing.value
    with pytest.raises(ValueError, match="traceEvents"):
        Timeline({"events": []})


def test_timeline_speaks_chinese():
    set_language("zh")
    try:
        widget = Timeline(EVENTS)
        assert "哪个线程" in widget.children[0].value
        assert row_labels(widget)[0] == "前端"
        assert "两个及以上工作线程同时忙碌" in widget.summary_html.value
    finally:
        set_language(None)
