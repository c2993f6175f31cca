"""`mx.profiler`: which op ran on which thread, when, and for how long, with MXNet's API.

    mx.profiler.set_config(profile_all=True, filename="profile.json", aggregate_stats=True)
    mx.profiler.set_state("run")
    ...                                  # ops to look at
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()                   # Chrome's trace format: chrome://tracing, Perfetto
    print(mx.profiler.dumps())           # a table: count, total, min, max, mean per op

Every op is one event: its name (with the current `scope`), the thread that ran it (the
front end under NaiveEngine, an engine worker under the threaded engine), its start and
its duration. Time the front end spent blocked in `waitall`/`wait_to_read` is an event
too (category "wait"), so a trace shows where Python waited for the engine.
`widgets.timeline.Timeline` draws a trace in the notebook.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
import threading
import time

_CONFIG_KEYS = {"filename", "profile_all", "profile_symbolic", "profile_imperative",
                "profile_memory", "profile_api", "continuous_dump", "dump_period",
                "aggregate_stats", "profile_process", "gpu_memory_profile_filename_prefix"}
_config = {"filename": "profile.json", "aggregate_stats": False}
_state = "stop"
_paused = False
_events: list = []          # (name, category, thread name, start s, end s, args)
_origin = time.perf_counter()
_current_scope = contextvars.ContextVar("profilerscope", default="<unk>:")


def set_config(**kwargs):
    """MXNet's keyword arguments: filename, profile_all, profile_imperative,
    aggregate_stats... (what a CPU-only, one-process library has no use for, such as
    profile_memory or profile_process='server', is accepted and changes nothing)."""
    unknown = set(kwargs) - _CONFIG_KEYS
    if unknown:
        raise ValueError(f"profiler.set_config: unknown option(s) {sorted(unknown)}; "
                         f"known: {sorted(_CONFIG_KEYS)}")
    _config.update(kwargs)


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """MXNet's older spelling of set_config."""
    set_config(profile_all=mode == "all", filename=filename)


def set_state(state="stop", profile_process="worker"):
    """'run' starts recording every op, 'stop' stops it (the events are kept for dump)."""
    global _state
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _state = state
    _reinstall()


profiler_set_state = set_state


def state() -> str:
    return _state


def pause(profile_process="worker"):
    """Stop recording for a while (set_state stays 'run'); resume() goes on."""
    global _paused
    _paused = True
    _reinstall()


def resume(profile_process="worker"):
    global _paused
    _paused = False
    _reinstall()


def recording() -> bool:
    return _state == "run" and not _paused


_on_change: list = []       # called when recording() may have changed (the engine's)


def on_recording_change(callback):
    """Call `callback()` whenever recording starts or stops: the engine re-points the
    ndarray hot path at the op timer (the profiler imports nothing of straightdope)."""
    _on_change.append(callback)


def _reinstall():
    for callback in _on_change:
        callback()


def record(name, start, end, category="operator", args=None):
    """One event: `start`/`end` from time.perf_counter(), on the calling thread."""
    _events.append((name, category, threading.current_thread().name, start, end, args))


def scoped(name):
    """An op's name as the trace shows it: prefixed with the current scope, if any."""
    prefix = _current_scope.get()
    return name if prefix == "<unk>:" else prefix + name


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=True):
    """`with profiler.scope("encoder"):` names the ops inside "encoder:dot", ...;
    nested scopes append ("net:encoder:dot") unless append_mode=False."""
    name = name if name.endswith(":") else name + ":"
    if append_mode and _current_scope.get() != "<unk>:":
        name = _current_scope.get() + name
    token = _current_scope.set(name)
    try:
        yield name
    finally:
        _current_scope.reset(token)


Scope = scope


def events():
    """The recorded events as dicts: name, cat, thread, start_us, dur_us (microseconds
    since the profiler module loaded)."""
    return [{"name": n, "cat": c, "thread": t, "start_us": (s - _origin) * 1e6,
             "dur_us": (e - s) * 1e6, **({"args": a} if a else {})}
            for n, c, t, s, e, a in list(_events)]


def trace() -> dict:
    """The events in Chrome's trace format (one complete event "X" per op)."""
    threads = sorted({e["thread"] for e in events()}, key=_thread_order)
    tid = {name: i for i, name in enumerate(threads)}
    out = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid[name],
            "args": {"name": name}} for name in threads]
    for e in events():
        event = {"name": e["name"], "cat": e["cat"], "ph": "X", "pid": 0,
                 "tid": tid[e["thread"]], "ts": round(e["start_us"], 3),
                 "dur": round(e["dur_us"], 3)}
        if "args" in e:
            event["args"] = e["args"]
        out.append(event)
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def _thread_order(name):
    return (name != "MainThread", name)


def dump(finished=True, profile_process="worker"):
    """Write the trace to set_config's filename (atomically); finished=True also stops
    recording and forgets the events, as MXNet does."""
    global _state
    path = os.fspath(_config["filename"])
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(trace(), f)
    os.replace(f.name, path)
    if finished:
        _state = "stop"
        _events.clear()
        _reinstall()


def dump_profile():
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """Aggregate statistics per op name: count, total, min, max and mean time (ms)."""
    keys = {"total": 1, "avg": 4, "min": 2, "max": 3, "count": 0}
    if format not in ("table", "json"):
        raise ValueError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in keys:
        raise ValueError(f"profiler.dumps: sort_by must be one of {sorted(keys)}, "
                         f"got {sort_by!r}")
    stats = {}
    for e in events():
        cat = stats.setdefault(e["cat"], {})
        ms = e["dur_us"] / 1e3
        count, total, low, high = cat.get(e["name"], (0, 0.0, float("inf"), 0.0))
        cat[e["name"]] = (count + 1, total + ms, min(low, ms), max(high, ms))
    if reset:
        _events.clear()
    rows = {c: sorted(((n, v + (v[1] / v[0],)) for n, v in ops.items()),
                      key=lambda r: r[1][keys[sort_by]], reverse=not ascending)
            for c, ops in stats.items()}
    if format == "json":
        return json.dumps({"Time": {c: {n: {"Total Count": v[0], "Total Time": v[1],
                                            "Min Time": v[2], "Max Time": v[3],
                                            "Avg Time": v[4]} for n, v in r}
                                    for c, r in rows.items()},
                           "Unit": {"Time": "ms"}})
    lines = ["Profile Statistics:", "\tNote that times are in milliseconds.", ""]
    for c, r in rows.items():
        lines += [c, "=" * 17,
                  f"{'Name':<40}{'Total Count':>12}{'Time (ms)':>14}{'Min Time (ms)':>15}"
                  f"{'Max Time (ms)':>15}{'Avg Time (ms)':>15}",
                  f"{'----':<40}{'-----------':>12}{'---------':>14}{'-------------':>15}"
                  f"{'-------------':>15}{'-------------':>15}"]
        for n, (count, total, low, high, avg) in r:
            lines.append(f"{n[:39]:<40}{count:>12}{total:>14.4f}{low:>15.4f}{high:>15.4f}"
                         f"{avg:>15.4f}")
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------ user events
class Domain:
    """A group for user tasks, frames, counters and markers (names are prefixed)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class Event:
    """A span of your own code: start() ... stop() becomes one event on this thread."""
    _category = "event"

    def __init__(self, name, domain=None):
        self.name = name if domain is None else f"{domain}::{name}"
        self._start = None

    def start(self):
        self._start = time.perf_counter()

    def stop(self):
        if self._start is None:
            raise RuntimeError(f"profiler {type(self).__name__} {self.name!r}: stop() "
                               f"without start()")
        if recording():
            record(self.name, self._start, time.perf_counter(), self._category)
        self._start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(Event):
    _category = "task"

    def __init__(self, domain, name):
        super().__init__(name, domain)


class Frame(Event):
    _category = "frame"

    def __init__(self, domain, name):
        super().__init__(name, domain)


class Counter:
    """A value over time (an instant event with args {'value': ...} at each change)."""

    def __init__(self, domain, name, value=None):
        self.name = f"{domain}::{name}"
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        self.value = value
        if recording():
            now = time.perf_counter()
            record(self.name, now, now, "counter", {"value": value})

    def increment(self, delta=1):
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in time (a zero-length event)."""

    def __init__(self, domain, name):
        self.name = f"{domain}::{name}"

    def mark(self, scope="process"):
        if recording():
            now = time.perf_counter()
            record(self.name, now, now, "marker", {"scope": scope})
