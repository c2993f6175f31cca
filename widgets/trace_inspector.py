"""TraceInspector: watch hybrid_forward's prints, imperative vs hybridized, call by call.

The lesson of the third article (`Hybridize_net` with `print("F:", F)` inside
hybrid_forward): imperatively, the Python runs on every call, F is `straightdope.ndarray`
and x holds numbers. Hybridized, the Python runs *once*, at trace time: F is
`straightdope.symbol`, x is a Symbol (a placeholder), and every later call runs the
cached graph, so nothing is printed at all.

    TraceInspector(net, x)     # one imperative call, then hybridize() and one more call

Buttons: "Call once more" (in the current mode), "Hybridize"/"Un-hybridize", "Reset".
"""
from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as w

from . import _style as st
from .graph_view import as_ndarray, is_hybridized
from .messages import t

#: How many calls each panel lists (older ones are summarised in one line).
SHOWN_CALLS = 5


@dataclass
class Call:
    """One call of the block, as the inspector saw it."""
    index: int            # 1, 2, ... over the inspector's life (reset starts again)
    mode: str             # "imperative" or "hybridized"
    printed: str          # everything the block's Python printed during the call
    traced: bool          # did this call trace the block (run its Python on Symbols)?
    error: Exception | None = None
    result: str = ""      # a one-line description of what the call returned
    trace_failed: bool = False   # hybridized, no graph yet, and tracing raised `error`
    tier: str = ""        # which tier ran ('vm', 'reference', 'steps', 'graph'; compiler/tiers.py)
    pending: bool = False        # the graph's own compiled code was still being built
    switched_from: str = ""      # the tier of the hybridized call before, if it differs


def _tier(op) -> tuple[str, bool]:
    """The tier the cached graph's forward ran on, and whether a switch is pending."""
    stats = op.stats().get("forward", {}) if hasattr(op, "stats") else {}
    return stats.get("tier") or "", bool(stats.get("pending"))


def _describe(result) -> str:
    if isinstance(result, (tuple, list)):
        return ", ".join(_describe(r) for r in result)
    shape = getattr(result, "shape", None)
    if shape is not None:
        return f"{type(result).__name__} {tuple(shape)}"
    return type(result).__name__


class TraceInspector(w.VBox):
    """Side by side: what the block printed imperatively, and hybridized.

    Read in tests and chapters: `calls` (list of `Call`), `hybridized` (the mode),
    `traces` (how many times the block was traced since the last reset), `traced_json`.
    """

    def __init__(self, block, *inputs):
        if not inputs:
            raise ValueError("TraceInspector(block, x): give the input(s) to call it with")
        self.block = block
        self.inputs = [as_ndarray(x) for x in inputs]
        # Keep the block's own hybridize() options (executor, static_alloc...) for every
        # re-hybridization; toggling must not quietly switch them back to the defaults.
        self.hybridize_kwargs = dict(getattr(block, "_flags", None) or {})
        self.calls: list[Call] = []
        self.traced_json = None
        self._trace_base = 0

        self.imperative_html = w.HTML(layout=w.Layout(flex="1 1 0%", margin="0 6px 0 0"))
        self.hybridized_html = w.HTML(layout=w.Layout(flex="1 1 0%", margin="0 0 0 6px"))
        self.counter_html = w.HTML()
        self.call_button = w.Button(description=t("trace.call_button"), icon="play",
                                    button_style="primary",
                                    tooltip=t("trace.call_tooltip"),
                                    layout=w.Layout(width="auto"))
        self.mode_button = w.Button(description=t("trace.unhybridize"), layout=w.Layout(width="auto"))
        self.reset_button = w.Button(description=t("trace.reset"), icon="undo",
                                     tooltip=t("trace.reset_tooltip"),
                                     layout=w.Layout(width="auto"))
        self.json_html = w.HTML()
        self.json_view = w.Accordion(children=[self.json_html], selected_index=None)
        self.json_view.set_title(0, t("trace.json_title"))

        self.call_button.on_click(lambda _: self.call())
        self.mode_button.on_click(lambda _: self.set_hybridized(not self.hybridized))
        self.reset_button.on_click(lambda _: self.reset())
        header = w.HTML(st.CSS + st.heading(t("trace.heading")))
        super().__init__([
            header,
            w.HBox([self.call_button, self.mode_button, self.reset_button, self.counter_html],
                   layout=w.Layout(align_items="center", flex_flow="row wrap")),
            w.HBox([self.imperative_html, self.hybridized_html], layout=w.Layout(width="100%")),
            self.json_view])
        self.add_class("sd-widget")
        self.reset()

    # -------------------------------------------------------------- actions
    @property
    def hybridized(self) -> bool:
        return is_hybridized(self.block)

    @property
    def traces(self) -> int:
        """Traces since the last reset, as the block counts them (`block.trace_count`)."""
        return getattr(self.block, "trace_count", 0) - self._trace_base

    def set_hybridized(self, active: bool):
        # MXNet 1.x semantics: hybridize() (on or off) drops the cached graph, so the next
        # hybridized call traces again.
        if active:
            self.block.hybridize(True, **self.hybridize_kwargs)
        else:
            self.block.hybridize(False)
        self._refresh()

    def call(self) -> Call:
        """Call the block once on the inputs, in its current mode, and log what it printed."""
        mode = "hybridized" if self.hybridized else "imperative"
        before = getattr(self.block, "trace_count", 0)
        op_before = getattr(self.block, "_cached_op", None)
        result, printed, error = st.call_capturing(self.block, *self.inputs)
        after = getattr(self.block, "trace_count", 0)
        op_after = getattr(self.block, "_cached_op", None)
        traced = after > before or (op_after is not None and op_after is not op_before)
        # A hybridized call that raised and left no cached graph behind failed while
        # tracing: the Python did run (on Symbols), it did not just skip to a graph.
        trace_failed = (mode == "hybridized" and error is not None and not traced
                        and op_after is None)
        tier, pending = _tier(op_after) if mode == "hybridized" else ("", False)
        # the switch from the VM or the reference tier to compiled code (same graph)
        before = [c.tier for c in self.calls if c.mode == "hybridized"]
        switched = before[-1] if before and tier and before[-1] and not traced \
            and before[-1] != tier else ""
        record = Call(len(self.calls) + 1, mode, printed, traced, error,
                      "" if error is not None else _describe(result), trace_failed,
                      tier, pending, switched)
        self.calls.append(record)
        if traced and op_after is not None:
            self.traced_json = op_after.symbol.tojson()
        self._refresh()
        return record

    def reset(self):
        """Start over: one imperative call, then hybridize() and one hybridized call."""
        self.block.hybridize(False)
        self.calls = []
        self.traced_json = None
        self._trace_base = getattr(self.block, "trace_count", 0)
        self.call()
        self.set_hybridized(True)
        self.call()

    # ------------------------------------------------------------- drawing
    def _call_html(self, call: Call, accent: str) -> str:
        if call.mode == "imperative":
            what = t("trace.ran_python")
        elif call.trace_failed:
            what = t("trace.trace_failed")
        elif call.traced:
            what = t("trace.traced")
        else:
            what = t("trace.cached")
        parts = [f'<div style="{st.FONT} font-weight: bold; color: {accent}; '
                 f'margin-top: 8px;">{t("trace.call", index=call.index)} &middot; '
                 f'{st.esc(what)}</div>']
        if call.tier and call.tier != "numpy":
            pending = t("trace.tier_pending") if call.pending else ""
            parts.append(st.note(t("trace.tier", tier=call.tier) + pending))
        if call.switched_from:
            parts.append(st.note(t("trace.tier_switched", before=call.switched_from,
                                   after=call.tier)))
        if call.printed:
            parts.append(st.pre(call.printed.rstrip("\n"), border=accent))
        elif call.error is None:
            parts.append(st.note(t("trace.nothing_printed")))
        if call.error is not None:
            parts.append(st.pre(f"{type(call.error).__name__}: {call.error}", color=st.ERROR,
                                background="#fdecea", border=st.ERROR))
        else:
            parts.append(st.note(t("trace.returned", result=call.result)))
        return "".join(parts)

    def _panel_html(self, mode: str, accent: str, title: str) -> str:
        mine = [c for c in self.calls if c.mode == mode]
        active = (mode == "hybridized") == self.hybridized
        badge = t("trace.current_mode") if active else ""
        body = [f'<div style="{st.FONT} font-size: 17px; font-weight: bold; color: {accent};">'
                f'{st.esc(title)}<span style="font-size: 14px; font-weight: normal;">'
                f'{badge}</span></div>']
        if not mine:
            body.append(st.note(t("trace.no_calls")))
        hidden = len(mine) - SHOWN_CALLS
        if hidden > 0:
            body.append(st.note(t("trace.earlier_calls" if hidden > 1 else "trace.earlier_call",
                                   n=hidden)))
        body.extend(self._call_html(c, accent) for c in mine[-SHOWN_CALLS:])
        return st.panel("".join(body), accent if active else "#cccccc")

    def _refresh(self):
        self.imperative_html.value = self._panel_html("imperative", st.IMPERATIVE,
                                                      t("trace.imperative_title"))
        self.hybridized_html.value = self._panel_html("hybridized", st.HYBRIDIZED,
                                                      t("trace.hybridized_title"))
        self.mode_button.description = t("trace.unhybridize" if self.hybridized
                                        else "trace.hybridize")
        self.mode_button.icon = "pause" if self.hybridized else "bolt"
        imperative = sum(c.mode == "imperative" for c in self.calls)
        hybridized = len(self.calls) - imperative
        errors = sum(c.error is not None for c in self.calls)
        plural = "s" if self.traces != 1 else ""
        text = t("trace.counter", calls=len(self.calls), imperative=imperative,
                 hybridized=hybridized, traces=self.traces, plural=plural)
        if errors:
            text += f' &middot; <span style="color: {st.ERROR};">{t("trace.failed", n=errors)}</span>'
        self.counter_html.value = f'<span style="{st.FONT} margin-left: 12px;">{text}</span>'
        self.json_html.value = (st.pre(self.traced_json) if self.traced_json else
                                st.note(t("trace.not_traced")))
