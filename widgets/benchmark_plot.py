"""BenchmarkPlot: time one net imperatively and hybridized, and plot it as it runs.

    bench = BenchmarkPlot(lambda width: make_mlp(width), (1, 512))
    bench                      # sliders for batch size and width, Run / Stop
    result = bench.run(repeats=50)   # or measure right now, and get plain numbers back

The same net is measured both ways (same weights): first `repeats` imperative calls,
then `hybridize()` and `repeats` hybridized calls. The very first hybridized call traces
the Python and compiles the graph; it is a one-off cost, reported apart and kept out of
the medians. Everything else is steady state: the time a training loop would see.
With tiered compilation (the default), the first hybridized calls may run on a tier
that answers while the graph's own code is being built (`EARLY_TIERS`: the VM, or the
NumPy reference tier): those calls are drawn hollow, the switch is marked, and the
hybridized median counts only the calls after it.

The live version measures in a background thread so that the notebook stays responsive,
and draws between calls (never during one) so that drawing does not skew the timings.
`stop()` and `close()` join the thread: nothing keeps running behind your back.
"""
from __future__ import annotations

import statistics
import threading
import time
import warnings

import ipywidgets as w
import numpy as np

from . import _style as st
from .messages import t as tr, use_fonts
from .graph_view import is_block, is_hybridized

MODES = ("imperative", "hybridized")
COLORS = {"imperative": st.IMPERATIVE, "hybridized": st.HYBRIDIZED}
KNOB_KEYS = {"batch_size": "bench.batch_size", "width": "bench.config_width"}


# ---------------------------------------------------------------- measuring
def _initialize(net):
    """Give a fresh net's parameters values (a factory may or may not have done it)."""
    with warnings.catch_warnings():
        # MXNet warns, and does nothing, for parameters that already have values.
        warnings.simplefilter("ignore")
        net.initialize()


def _step(net, x, backward):
    """One call: the forward pass, or forward + backward as in a training step."""
    from straightdope import autograd, nd
    if backward:
        with autograd.record():
            y = net(x)
        y.backward()
    else:
        y = net(x)
    # straightdope computes synchronously; MXNet would need this to time honestly.
    nd.waitall()
    return y


def _timed(net, x, backward) -> float:
    start = time.perf_counter()
    _step(net, x, backward)
    return time.perf_counter() - start


# Tiers that run a graph before its own compiled code is ready (compiler/tiers.py):
# the VM (after the setup step) or the NumPy reference tier (compiler/vm.py can't run it,
# or a new machine). `hybridize(executor="vm")` runs the VM alone: then it is the tier.
EARLY_TIERS = ("reference", "vm")


def tier_of(net) -> str | None:
    """The tier the hybridized net's last call ran on ('vm' or 'reference' while the
    compiled code is being built, then 'graph' or 'steps'; 'numpy' for that executor)."""
    op = getattr(net, "_cached_op", None)
    if op is None or not hasattr(op, "stats"):
        return None
    stats = op.stats()
    tiers = [stats[part]["tier"] for part in ("forward", "backward") if part in stats]
    early = [tier for tier in EARLY_TIERS if tier in tiers]
    return early[0] if early else (tiers[0] if tiers else None)


def measure(net, x, repeats, backward=False, stop=None, hybridize_kwargs=None):
    """Time `net` on `x`: yields (mode, seconds) per call, then a final ("done", data).
    After each hybridized call (the first, "compile", included) it also yields ("tier",
    the tier that call ran on).

    A generator, so that a caller can draw or stop between calls. `stop` is an optional
    threading.Event checked before every call.
    """
    def stopped():
        return stop is not None and stop.is_set()

    data = {"imperative": [], "hybridized": [], "compile_seconds": None, "tiers": []}
    net.hybridize(False)
    _step(net, x, backward)   # warm-up: deferred initialisation and caches, not timed
    for mode in MODES:
        if mode == "hybridized":
            net.hybridize(**(hybridize_kwargs or {}))
            if stopped():
                break
            # The first hybridized call traces and compiles: a one-off cost, kept apart.
            data["compile_seconds"] = _timed(net, x, backward)
            yield "compile", data["compile_seconds"]
            data["first_tier"] = tier_of(net)
            yield "tier", data["first_tier"]
        for _ in range(repeats):
            if stopped():
                break
            seconds = _timed(net, x, backward)
            # the tier this call ran on, read before yielding: the switch to compiled
            # code happens in another thread, at any time (compiler/tiers.py)
            tier = tier_of(net) if mode == "hybridized" else None
            data[mode].append(seconds)
            yield mode, seconds
            if mode == "hybridized":
                data["tiers"].append(tier)
                yield "tier", tier
    data["pending"] = _pending(net)
    yield "done", data


def _pending(net) -> bool:
    """Is the hybridized net's own compiled code still being built?"""
    op = getattr(net, "_cached_op", None)
    stats = op.stats() if op is not None and hasattr(op, "stats") else {}
    return any(stats.get(part, {}).get("pending", False) for part in ("forward", "backward"))


def summarize(data, **config) -> dict:
    """Plain numbers: the per-call times (seconds), their medians, and the speedup.

    `tiers`: the tier of each hybridized call; `switch_call`: the first hybridized call
    (1, 2, ...) on compiled code after calls on an early tier (`EARLY_TIERS`), else None.
    The hybridized median counts the calls on compiled code when there are any."""
    tiers = list(data.get("tiers", []))
    compiled = [t for t, tier in zip(data["hybridized"], tiers) if tier not in EARLY_TIERS]
    steady = {"imperative": data["imperative"],
              "hybridized": compiled if compiled else data["hybridized"]}
    medians = {m: statistics.median(steady[m]) if steady[m] else None for m in MODES}
    speedup = (medians["imperative"] / medians["hybridized"]
               if medians["imperative"] and medians["hybridized"] else None)
    before = [data.get("first_tier")] + tiers
    switch = next((k for k in range(1, len(before))
                   if before[k - 1] in EARLY_TIERS and before[k] not in EARLY_TIERS), None)
    return {"imperative": list(data["imperative"]), "hybridized": list(data["hybridized"]),
            "median": medians, "speedup": speedup, "tiers": tiers, "switch_call": switch,
            "compile_seconds": data["compile_seconds"], "first_tier": data.get("first_tier"),
            "pending": data.get("pending", True), **config}


# ------------------------------------------------------------------ drawing
def _unit(seconds):
    if seconds < 1e-3:
        return 1e6, "µs"
    if seconds < 1:
        return 1e3, "ms"
    return 1.0, "s"


def format_seconds(seconds) -> str:
    scale, unit = _unit(seconds)
    return f"{seconds * scale:.3g} {unit}"


def draw(result: dict, fig=None):
    """Draw a summary (from `summarize`) on a matplotlib Figure: time per call on the
    left, median bars and the speedup on the right, the compile time in the title."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
    use_fonts()
    fig = fig if fig is not None else Figure(figsize=(10, 4.4))
    fig.clf()
    fig.set_layout_engine("constrained")
    left, right = fig.subplots(1, 2, width_ratios=[2.2, 1])
    every = [t for m in MODES for t in result[m]]
    scale, unit = _unit(statistics.median(every) if every else 1e-3)
    known = [result["median"][m] for m in MODES if result["median"][m]]
    # On a linear axis a much faster line would be flat on zero: then compare on a log
    # scale. On a linear one, a few calls slowed down by the machine (another process, the
    # garbage collector) would squash the rest: cap the axis and mark them at the top.
    log = len(known) == 2 and max(known) / min(known) > 8
    cap = 1.5 * float(np.percentile(every, 90)) * scale if every and not log else None
    for mode in MODES:
        times = np.asarray(result[mode]) * scale
        if not len(times):
            continue
        calls = np.arange(1, len(times) + 1)
        # calls of a tiered compile that ran before the compiled code (the VM or the
        # NumPy reference tier): drawn hollow, and kept out of the median and the band
        # when compiled calls followed (with executor="vm" the VM is the steady state)
        tiers = result.get("tiers") or []
        early = np.array([mode == "hybridized" and k < len(tiers)
                          and tiers[k] in EARLY_TIERS for k in range(len(times))], dtype=bool)
        if mode == "hybridized" and not result.get("switch_call") \
                and not result.get("pending", True):
            early[:] = False
        steady = times[~early] if (~early).any() else times
        # Dots, not a line: consecutive calls are independent samples, and a line through
        # them draws noise as a zig-zag. The median line and the band holding the middle
        # 80% of the calls are what to read.
        low, high = np.percentile(steady, [10, 90])
        left.axhspan(low, high if cap is None else min(high, cap), color=COLORS[mode],
                     alpha=0.15, lw=0)
        left.axhline(np.median(steady), color=COLORS[mode], lw=2)
        shown = times if cap is None else np.minimum(times, cap)
        left.plot(calls[~early], shown[~early], ".",
                  color=COLORS[mode], ms=4 if len(times) <= 200 else 2, alpha=0.7,
                  label=tr("bench.band", mode=tr(f"bench.{mode}")))
        if early.any():
            left.plot(calls[early], shown[early], "o", mfc="none", color=COLORS[mode],
                      ms=5, label=tr(f"bench.{tiers[int(np.argmax(early))]}_tier"))
        if mode == "hybridized" and result.get("switch_call"):
            left.axvline(result["switch_call"] - 0.5, color=COLORS[mode], ls="--", lw=1.5,
                         label=tr("bench.switch"))
        if cap is not None and (times > cap).any():
            off = times > cap
            left.plot(calls[off], np.full(off.sum(), cap), "^", ms=9, color=COLORS[mode])
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel(tr("bench.axis_call"), fontsize=14)
    left.set_ylabel(tr("bench.axis_time", unit=unit), fontsize=14)
    if log:
        left.set_yscale("log")
        left.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        left.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        left.yaxis.set_minor_formatter(NullFormatter())
    else:
        left.set_ylim(0, cap * 1.04 if cap else None)
        slow = sum(t * scale > cap for t in every) if cap else 0
        if slow:
            left.set_title(tr("bench.slow_calls" if slow > 1 else "bench.slow_call", n=slow,
                              time=format_seconds(max(every))), fontsize=12, loc="left",
                           color=st.MUTED)
    left.tick_params(labelsize=12)
    left.grid(alpha=0.3)
    if every:
        left.legend(fontsize=13, loc="best")
    medians = [(result["median"][m] or 0) * scale for m in MODES]
    # Error bars: the 10th to 90th percentile of the calls, around the median.
    spread = [np.percentile(np.asarray(result[m]) * scale, [10, 90]) if result[m] else (0, 0)
              for m in MODES]
    yerr = [[max(med - lo, 0) for med, (lo, _) in zip(medians, spread)],
            [max(hi - med, 0) for med, (_, hi) in zip(medians, spread)]]
    bars = right.bar([tr(f"bench.{m}") for m in MODES], medians, color=[COLORS[m] for m in MODES], yerr=yerr,
                     capsize=6, ecolor=st.MUTED)
    for bar, value, (_, high) in zip(bars, medians, spread):
        if value:
            right.annotate(f"{value:.3g} {unit}",
                           (bar.get_x() + bar.get_width() / 2, max(value, high)),
                           ha="center", va="bottom", fontsize=13, xytext=(0, 2),
                           textcoords="offset points")
    right.set_ylabel(tr("bench.axis_median", unit=unit), fontsize=13)
    right.tick_params(labelsize=13)
    right.set_ylim(0, max(medians + [hi for _, hi in spread] + [1e-12]) * 1.25)
    if result["speedup"]:
        speedup = result["speedup"]
        right.set_title(tr("bench.faster", x=speedup) if speedup >= 1 else
                        tr("bench.slower", x=1 / speedup), fontsize=16, fontweight="bold")
    what = tr("bench.backward" if result.get("backward") else "bench.forward")
    config = ", ".join(f"{tr(KNOB_KEYS[k])} {result[k]}" for k in ("batch_size", "width")
                       if result.get(k) is not None)
    compile_text = ("" if result["compile_seconds"] is None else
                    "\n" + tr("bench.compile_title",
                               time=format_seconds(result["compile_seconds"])))
    fig.suptitle(f"{what}, {config}{compile_text}", fontsize=14)
    return fig


# ------------------------------------------------------------------- widget
class BenchmarkPlot(w.VBox):
    """Imperative vs hybridized time per call, measured live (or at once with `run`).

    `net_or_factory`: a (Hybrid)Block, or a function `width -> net` (then a width slider
    appears and every run builds and initializes a fresh net of that width).
    `input_shape`: the shape of one input batch; the batch-size slider changes its first
    dimension. Controls changed while it runs restart the measurement.
    A net you pass is hybridized with its own hybridize() options (unless
    `hybridize_kwargs` says otherwise) and is left in the mode it was in after each run.
    """

    def __init__(self, net_or_factory, input_shape, repeats=50, backward=False,
                 width=256, widths=(16, 64, 128, 256, 512, 1024),
                 batch_sizes=(1, 4, 16, 64, 256), hybridize_kwargs=None,
                 redraw_seconds=0.3, seed=0):
        self.factory = None if is_block(net_or_factory) else net_or_factory
        self.net = net_or_factory if self.factory is None else None
        self.input_shape = tuple(input_shape)
        if hybridize_kwargs is None and self.net is not None:
            # Measure the net as its owner hybridized it (executor, static_alloc...), as
            # the TraceInspector does; a factory's nets get the defaults.
            hybridize_kwargs = dict(getattr(self.net, "_flags", None) or {})
        self.hybridize_kwargs = hybridize_kwargs or {}
        self.redraw_seconds = redraw_seconds
        self.seed = seed
        self.result = None            # the last summary (a dict), see run()
        self.figure = None            # the last matplotlib Figure
        self._thread = None
        self._stop = threading.Event()

        batches = sorted(set(batch_sizes) | {self.input_shape[0]})
        self.batch_slider = w.SelectionSlider(options=batches, value=self.input_shape[0],
                                              description=tr("bench.batch_size"),
                                              style={"description_width": "initial"},
                                              layout=w.Layout(width="320px"))
        widths = sorted(set(widths) | {width})
        self.width_slider = w.SelectionSlider(
            options=widths, value=width, description=tr("bench.width"),
            style={"description_width": "initial"},
            layout=w.Layout(width="360px", display="flex" if self.factory else "none"))
        self.repeats_box = w.BoundedIntText(value=repeats, min=1, max=100000,
                                            description=tr("bench.repeats"),
                                            style={"description_width": "initial"},
                                            layout=w.Layout(width="200px"))
        self.backward_box = w.Checkbox(value=backward, description=tr("bench.backward"),
                                       indent=False)
        self.run_button = w.Button(description=tr("bench.run"), icon="play", button_style="primary",
                                   layout=w.Layout(width="auto"))
        self.stop_button = w.Button(description=tr("bench.stop"), icon="stop", button_style="danger",
                                    disabled=True, layout=w.Layout(width="auto"))
        self.progress = w.IntProgress(value=0, min=0, max=1, description=tr("bench.progress"),
                                      layout=w.Layout(width="360px"))
        self.status_html = w.HTML(st.note(tr("bench.press_run")))
        self.image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))

        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self._quiet = False           # True while run() moves the controls itself
        for control in (self.batch_slider, self.width_slider, self.backward_box):
            control.observe(self._on_control, names="value")
        header = w.HTML(st.CSS + st.heading(tr("bench.heading")))
        super().__init__([
            header,
            w.HBox([self.batch_slider, self.width_slider], layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.repeats_box, self.backward_box, self.run_button, self.stop_button],
                   layout=w.Layout(align_items="center", flex_flow="row wrap")),
            self.progress,
            self.status_html,
            self.image])
        self.add_class("sd-widget")

    # ------------------------------------------------------------ settings
    def _on_control(self, change):
        if not self._quiet:
            self.start()

    def _sync_controls(self, config):
        """Show the settings of a run() in the controls, without starting another run."""
        self._quiet = True
        try:
            for slider, value in ((self.batch_slider, config["batch_size"]),
                                  (self.width_slider, config["width"])):
                if value is None:
                    continue
                if value not in slider.options:
                    slider.options = sorted(set(slider.options) | {value})
                slider.value = value
            self.repeats_box.value = config["repeats"]
            self.backward_box.value = config["backward"]
        finally:
            self._quiet = False

    def _config(self, repeats=None, batch_size=None, width=None, backward=None):
        return {"repeats": int(repeats if repeats is not None else self.repeats_box.value),
                "batch_size": int(batch_size if batch_size is not None
                                  else self.batch_slider.value),
                "width": (width if width is not None else self.width_slider.value)
                if self.factory else None,
                "backward": bool(self.backward_box.value if backward is None else backward)}

    def _prepare(self, config):
        """The net and an input batch for one run."""
        from straightdope import nd, random
        if self.factory is not None:
            net = self.factory(config["width"])
            _initialize(net)
        else:
            net = self.net
        random.seed(self.seed)
        x = nd.random.normal(shape=(config["batch_size"],) + self.input_shape[1:])
        return net, x

    # ------------------------------------------------------------- running
    def _measure(self, config, stop):
        """Yield (mode, seconds) per call and finally ("done", summary); updates progress
        and keeps the net's own prints out of the notebook."""
        net, x = self._prepare(config)
        was_hybridized = is_hybridized(net)
        total = 2 * config["repeats"] + 1
        self.progress.max, self.progress.value = total, 0
        # Each progress update is a message to the browser: about a hundred per run is enough.
        every, done = max(1, total // 100), 0
        try:
            with st.thread_stdout(st.Discard()):   # a net that prints would flood the page
                for mode, value in measure(net, x, config["repeats"], config["backward"],
                                           stop, self.hybridize_kwargs):
                    if mode == "done":
                        self.progress.value = done
                        self.result = summarize(value, stopped=bool(stop and stop.is_set()),
                                                **config)
                        yield mode, self.result
                        return
                    if mode == "tier":
                        yield mode, value
                        continue
                    done += 1
                    if done % every == 0:
                        self.progress.value = done
                    yield mode, value
        finally:
            # A net that was not hybridized is given back imperative (measure() ends
            # hybridized); a hybridized one stays so, with the options it was measured with.
            if not was_hybridized:
                net.hybridize(False)

    def _show(self, result):
        self.figure = draw(result, self.figure)
        self.image.value = st.figure_png(self.figure, dpi=90)
        med = result["median"]
        scale, unit = _unit(med["imperative"] or med["hybridized"] or 1e-3)
        bits = [f'<span style="color: {COLORS[m]};">{tr(f"bench.{m}")} '
                f'<b>{med[m] * scale:.3g} {unit}</b>'
                f'</span>' for m in MODES if med[m]]
        if result["speedup"]:
            bits.append(tr("bench.speedup", x=result["speedup"]))
        if result["compile_seconds"] is not None:
            bits.append(tr("bench.first_call", time=format_seconds(result["compile_seconds"])))
        tiers = result.get("tiers") or []
        if result.get("switch_call"):
            call = result["switch_call"]
            before = tiers[call - 2] if call >= 2 else result.get("first_tier")
            bits.append(tr("bench.switched", call=call, tier=tiers[call - 1],
                           before=tr(f"bench.{before}_tier_name")))
        elif tiers and tiers[-1] in EARLY_TIERS and result.get("pending", True):
            bits.append(tr("bench.still_early", before=tr(f"bench.{tiers[-1]}_tier_name")))
        if result.get("stopped"):
            bits.append(f'<span style="color: #c62828;">{tr("bench.stopped")}</span>')
        self.status_html.value = (f'<span style="{st.FONT}">'
                                  f'{" &middot; ".join(bits)}</span>')

    def run(self, repeats=None, batch_size=None, width=None, backward=None) -> dict:
        """Measure now, in this thread, and return plain numbers::

            {"imperative": [s, ...], "hybridized": [s, ...],          # seconds per call
             "median": {"imperative": s, "hybridized": s},
             "speedup": imperative median / hybridized median,
             "compile_seconds": s,                                   # first hybridized call
             "tiers": [tier, ...], "switch_call": n or None,         # tiered compile
             "repeats": n, "batch_size": b, "width": w, "backward": bool, "stopped": False}

        The plot (`self.figure`, a matplotlib Figure) is drawn once at the end and shown
        in the widget as a PNG, so a saved notebook or the built book keeps it.
        """
        self.stop()
        config = self._config(repeats, batch_size, width, backward)
        self._sync_controls(config)
        for mode, value in self._measure(config, None):
            if mode == "done":
                self._show(value)
        return self.result

    def start(self):
        """Measure in a background thread, redrawing as the numbers come in."""
        self.stop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._worker, name="BenchmarkPlot",
                                        args=(self._config(), self._stop), daemon=True)
        self.run_button.disabled, self.stop_button.disabled = True, False
        self._thread.start()

    def _worker(self, config, stop):
        data = {"imperative": [], "hybridized": [], "compile_seconds": None, "tiers": []}
        next_draw = time.perf_counter() + self.redraw_seconds
        try:
            for mode, value in self._measure(config, stop):
                if mode == "done":
                    self._show(value)
                    break
                if mode == "compile":
                    data["compile_seconds"] = value
                elif mode == "tier":
                    if data["compile_seconds"] is not None and "first_tier" not in data:
                        data["first_tier"] = value
                    else:
                        data["tiers"].append(value)
                    continue
                else:
                    data[mode].append(value)
                # Drawing takes tens to hundreds of ms: do it between calls, and rarely
                # enough that measuring, not drawing, fills at least 3/4 of the time.
                if time.perf_counter() > next_draw:
                    start = time.perf_counter()
                    self._show(summarize(data, **config))
                    took = time.perf_counter() - start
                    next_draw = start + took + max(self.redraw_seconds, 3 * took)
        except Exception as exc:   # noqa: BLE001 - shown in the widget, the thread ends
            self.status_html.value = st.pre(f"{type(exc).__name__}: {exc}", color=st.ERROR,
                                            background="#fdecea", border=st.ERROR)
        finally:
            self.run_button.disabled, self.stop_button.disabled = False, True

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout=60.0):
        """Ask the background run to stop after its current call, and wait for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(f"the benchmark thread did not stop within {timeout} s")
        self._thread = None

    def close(self):
        """Stop (and join) the background run, then close the widget and its children."""
        self.stop()
        for child in self._all_children():
            child.close()
        super().close()

    def _all_children(self):
        todo, seen = list(self.children), []
        while todo:
            child = todo.pop()
            seen.append(child)
            todo.extend(getattr(child, "children", ()))
        return seen
