"""The widgets at the Python level: their state after scripted interaction.

Clicks are `button.click()`, slider moves are assignments to `.value`; what a student
would see is read back from the widgets' values (HTML text, SVG, PNG bytes). The same
widgets in a real JupyterLab + Chromium: test_widgets_browser.py.
"""
from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import straightdope as mx
from straightdope import nd
from straightdope.base import NotImplementedForSymbol
from straightdope.gluon import nn

from widgets import BenchmarkPlot, GraphView, TraceInspector

SVG = "{http://www.w3.org/2000/svg}"


def svg_nodes(svg: str) -> list[str]:
    """The text of each node Graphviz drew (one string per node, lines joined by ' ')."""
    root = ET.fromstring(svg)
    nodes = []
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "node":
            nodes.append(" ".join(t.text or "" for t in g.iter(f"{SVG}text")))
    return nodes


def svg_edge_labels(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [" ".join(t.text or "" for t in g.iter(f"{SVG}text"))
            for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]


class Hybridize_net(nn.HybridBlock):
    """The third article's net: it prints what F and x are."""

    def __init__(self, width=10, **kwargs):
        super().__init__(**kwargs)
        self.d1 = nn.Dense(width)
        self.out = nn.Dense(2)

    def hybrid_forward(self, F, x):
        print("F:", F)
        print("x:", x)
        x = F.relu(self.d1(x))
        print("hidden:", x)
        return self.out(x)


class BranchyNet(nn.HybridBlock):
    """Python control flow on a value: fine imperatively, impossible to trace."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.d1 = nn.Dense(4)

    def hybrid_forward(self, F, x):
        print("x:", x)
        if x.sum() > 0:
            x = -x
        return self.d1(x)


class PeekingNet(nn.HybridBlock):
    """Reads the values with .asnumpy(): also imperative-only."""

    def hybrid_forward(self, F, x):
        print("max:", x.asnumpy().max())
        return F.relu(x)


def make_net(cls=Hybridize_net, **kwargs):
    net = cls(**kwargs)
    net.initialize()
    return net


def mlp_symbol():
    x = mx.sym.var("data")
    h = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=10, name="d1"), name="act")
    return mx.sym.FullyConnected(h, num_hidden=2, name="out")


# ------------------------------------------------------------------- GraphView
def test_graph_view_of_a_symbol_draws_one_node_per_op_with_shapes():
    view = GraphView(mlp_symbol(), (1, 3), executor="numpy")
    assert view.stage == "shapes"
    nodes = svg_nodes(view.svg)
    ops = [n for n in nodes if n.startswith(("FullyConnected", "relu"))]
    assert ops == ["FullyConnected 10 40 params", "relu", "FullyConnected 2 22 params"]
    assert "data (1, 3)" in nodes and "d1_weight (10, 3)" in nodes
    edges = svg_edge_labels(view.svg)
    assert edges.count("1x10 float32") == 2          # d1 -> relu -> out
    assert "1x3 float32" in edges and "2x10 float32" in edges
    assert any("output 0" in n for n in nodes)


def test_graph_view_stage_switch_and_hide_params_redraw():
    view = GraphView(mlp_symbol(), (4, 3), executor="numpy")
    with_shapes = view.svg
    view.stage_buttons.value = "traced"
    assert view.svg != with_shapes
    assert not any("float32" in e for e in svg_edge_labels(view.svg))   # not inferred yet
    assert len(svg_nodes(view.svg)) == 9            # 3 ops, data, 4 params, the output
    view.hide_params.value = True
    nodes = svg_nodes(view.svg)
    assert len(nodes) == 5 and not any("weight" in n or "bias" in n for n in nodes)
    view.stage_buttons.value = "shapes"
    assert "4x10 float32" in svg_edge_labels(view.svg)


def test_graph_view_node_details_and_highlight():
    view = GraphView(mlp_symbol(), (2, 3), executor="numpy")
    view.node_picker.value = "act"
    details = view.details_html.value
    assert "act" in details and "(2, 10) float32" in details
    assert 'stroke="#d62728"' in view.svg           # the chosen node is outlined in red
    view.node_picker.value = "d1"
    assert "num_hidden" in view.details_html.value and "40" in view.details_html.value
    # The selection survives a stage switch (same node names in both stages).
    view.stage_buttons.value = "traced"
    assert view.node_picker.value == "d1"
    assert "shape not known yet" in view.details_html.value


def test_graph_view_inspector_wraps_below_the_drawing_in_a_narrow_column():
    import ipywidgets
    view = GraphView(mlp_symbol(), (2, 3), executor="numpy")
    row = next(c for c in view.children
               if isinstance(c, ipywidgets.HBox) and view.graph_html in c.children)
    assert row.layout.flex_flow == "row wrap"
    side = row.children[1]
    graph_basis = int(view.graph_html.layout.flex.split()[-1].removesuffix("px"))
    side_min = int(side.layout.min_width.removesuffix("px"))
    # The HTML book's text column (about 700 px) cannot hold both, so the inspector
    # wraps below and the drawing gets the whole width (it used to get 3/5 of it)...
    assert graph_basis + side_min > 700
    # ...while a JupyterLab notebook (about 1100 px of output) shows them side by side.
    assert graph_basis + side_min + 12 < 1100


def test_graph_view_without_example_inputs_shows_the_traced_graph_only():
    view = GraphView(mlp_symbol())
    assert list(view.stages) == ["traced"]
    assert len(svg_nodes(view.svg)) == 9
    with pytest.raises(TypeError):
        GraphView(42)


def test_graph_view_of_a_block_shows_what_the_executor_runs():
    net = make_net()
    x = nd.random.normal(shape=(1, 3))
    view = GraphView(net, x)
    assert net._active and net.trace_count == 1           # hybridized and traced once
    assert list(view.stages)[:2] == ["traced", "shapes"]
    # Not a re-drawing: the stage objects are the compiled executable's own.
    for key, stage in (net.compiled or {}).items():
        if key != "graph":
            assert view.stages[key] is stage
    ops = [n for n in svg_nodes(view.svg) if n.startswith(("FullyConnected", "relu"))]
    assert ops == ["FullyConnected 10 40 params", "relu", "FullyConnected 2 22 params"]
    assert "1x3 float32" in svg_edge_labels(view.svg)
    GraphView(net, x)                                   # already hybridized: no re-trace
    assert net.trace_count == 1


def test_graph_view_with_the_reference_executor():
    net = make_net()
    net.hybridize(executor="numpy")
    view = GraphView(net, nd.ones((2, 3)))
    assert list(view.stages) == ["traced", "shapes"]
    # The reference executor runs its annotated graph: that very object is drawn.
    assert view.stages["shapes"] is net._cached_op.last_plan.forward.graph
    assert "2x10 float32" in svg_edge_labels(view.svg)


def _compiled_view(width=16, batch=4):
    pytest.importorskip("straightdope.compiler", reason="the Numba compiler is not built yet")
    view = GraphView(make_net(width=width), nd.random.normal(shape=(batch, 3)))
    assert {"fused", "memory", "source"} <= set(view.stages)
    return view


def test_graph_view_fused_stage_and_generated_code():
    view = _compiled_view()
    view.stage_buttons.value = "fused"
    assert "Could not draw" not in view.graph_html.value
    assert 'class="cluster"' in view.svg               # the bias add + relu loop, boxed
    view.stage_buttons.value = "shapes"
    assert 'class="cluster"' not in view.svg
    view.stage_buttons.value = "source"
    assert view.svg == "" and "def " in view.graph_html.value      # the code, as text
    # The relu of the fused stage: which step computes it, and that step's code.
    view.stage_buttons.value = "fused"
    relu = next(n for n in view.graph.op_nodes if n.op.name == "relu")
    view.node_picker.value = relu.name
    details = view.details_html.value
    assert "fused" in details and "# step" in details and "max(" in details


def test_graph_view_memory_stage_colours_buffers():
    view = _compiled_view()
    view.stage_buttons.value = "memory"
    # (Fails while MemoryPlan.colors() looks up a buffer for values fused into a loop,
    # which have none: KeyError in straightdope/compiler/memory.py.)
    assert "Could not draw" not in view.graph_html.value, view.graph_html.value
    plan = view.stages["memory"]
    buffers = {c for c in plan.colors().values() if c != "#ffffff"}
    assert buffers and all(f'fill="{c}"' in view.svg for c in buffers)


# ------------------------------------------------------------- TraceInspector
def test_trace_inspector_prints_on_the_trace_only():
    net = make_net()
    inspector = TraceInspector(net, nd.random.normal(shape=(1, 3)))
    first, traced = inspector.calls
    assert first.mode == "imperative" and not first.traced
    assert "F: <module 'straightdope.ndarray'" in first.printed
    assert "<NDArray 1x3" in first.printed                   # x holds numbers
    assert traced.mode == "hybridized" and traced.traced
    assert "F: <module 'straightdope.symbol'" in traced.printed
    assert "x: <Symbol data>" in traced.printed
    assert "F: &lt;module &#x27;straightdope.symbol&#x27;" in inspector.hybridized_html.value


def test_trace_inspector_shows_modules_without_the_folder_they_were_installed_in():
    inspector = TraceInspector(make_net(), nd.random.normal(shape=(1, 3)))
    first, traced = inspector.calls
    assert "F: <module 'straightdope.ndarray'>\n" in first.printed
    assert "F: <module 'straightdope.symbol'>\n" in traced.printed
    assert " from " not in first.printed + traced.printed

    inspector.call_button.click()                          # the cached graph runs
    again = inspector.calls[-1]
    assert again.mode == "hybridized" and again.printed == "" and not again.traced
    assert again.result == "NDArray (1, 2)"
    assert "call 3 &middot; cached graph ran, no Python" in inspector.hybridized_html.value
    counter = inspector.counter_html.value
    assert "<b>3</b> calls (1 imperative, 2 hybridized)" in counter
    assert "<b>1</b> trace" in counter
    assert "FullyConnected" in inspector.traced_json
    assert "FullyConnected" in inspector.json_html.value


def test_trace_inspector_mode_toggle_and_reset():
    net = make_net()
    net.hybridize(executor="numpy")
    inspector = TraceInspector(net, nd.ones((1, 3)))
    assert inspector.mode_button.description == "Un-hybridize"
    inspector.mode_button.click()
    assert not net._active and inspector.mode_button.description == "Hybridize"
    inspector.call_button.click()
    assert inspector.calls[-1].mode == "imperative"
    assert "F: <module 'straightdope.ndarray'" in inspector.calls[-1].printed
    inspector.mode_button.click()                        # hybridize() again: traces again
    inspector.call_button.click()
    assert inspector.calls[-1].traced and inspector.traces == 2
    assert "x: <Symbol data>" in inspector.calls[-1].printed
    inspector.reset_button.click()
    assert [c.mode for c in inspector.calls] == ["imperative", "hybridized"]
    assert inspector.traces == 1 and net.trace_count == 3
    assert net._flags["executor"] == "numpy"             # the block's own options are kept
    assert "<b>2</b> calls" in inspector.counter_html.value


@pytest.mark.parametrize("cls, words", [(BranchyNet, "Python bool"), (PeekingNet, "asnumpy")])
def test_trace_inspector_shows_untraceable_forward_as_an_error(cls, words):
    net = make_net(cls)
    inspector = TraceInspector(net, nd.ones((1, 3)))
    imperative, hybridized = inspector.calls
    assert imperative.error is None and imperative.printed
    assert isinstance(hybridized.error, NotImplementedForSymbol)
    assert hybridized.trace_failed and not hybridized.traced
    panel = inspector.hybridized_html.value
    assert "NotImplementedForSymbol" in panel and words in panel
    # The Python ran (on Symbols) and raised: not "cached graph ran, no Python".
    assert "call 2 &middot; tracing failed: Python ran on Symbols" in panel
    assert "cached graph ran" not in panel
    assert "#c62828" in panel                               # in red
    assert "Traceback" not in panel
    inspector.call_button.click()                           # the widget keeps working
    assert isinstance(inspector.calls[-1].error, NotImplementedForSymbol)
    assert inspector.calls[-1].trace_failed
    assert "2 failed" in inspector.counter_html.value
    assert "Not traced yet" in inspector.json_html.value


# --------------------------------------------------------------- BenchmarkPlot
def _benchmark_threads():
    return [t for t in threading.enumerate() if t.name == "BenchmarkPlot"]


def test_benchmark_run_returns_plain_data_and_a_figure(capsys):
    from matplotlib.figure import Figure
    bench = BenchmarkPlot(Hybridize_net, (1, 3), width=10, repeats=6)
    result = bench.run()
    assert len(result["imperative"]) == len(result["hybridized"]) == 6
    assert all(t > 0 for t in result["imperative"] + result["hybridized"])
    medians = result["median"]
    assert medians["imperative"] == np.median(result["imperative"])
    assert result["speedup"] == pytest.approx(medians["imperative"] / medians["hybridized"])
    assert result["compile_seconds"] > 0
    assert (result["batch_size"], result["width"], result["backward"]) == (1, 10, False)
    assert isinstance(bench.figure, Figure)
    assert bench.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "speedup" in bench.status_html.value
    assert capsys.readouterr().out == ""          # the net's prints stay out of the page
    bench.close()


def test_benchmark_marks_the_calls_on_the_reference_tier_and_the_switch(monkeypatch):
    """A tiered compile that is not ready on a new machine (the VM not compiled): the
    first hybridized calls run on the NumPy reference tier; the plot's data says so, and
    where the switch to compiled code was."""
    from straightdope.compiler import tiers
    from widgets.benchmark_plot import measure, summarize
    monkeypatch.setattr(tiers, "_vm_loaded", lambda: False)

    class Scaled(mx.gluon.HybridBlock):          # new generated code: nothing cached
        def __init__(self):
            super().__init__()
            self.scale = 1.0 + time.time_ns() % 1_000_003 / 1e7
            self.dense = nn.Dense(4)

        def hybrid_forward(self, F, x):
            return self.dense(x) * self.scale

    tickets = []

    def pending(description, key):               # a background compile that waits for us
        tickets.append(tiers.Ticket())
        return tickets[-1]
    monkeypatch.setattr(tiers, "submit", pending)
    net = Scaled()
    net.initialize()
    data, hybridized = None, 0
    for mode, value in measure(net, nd.ones((2, 3)), repeats=4,
                               hybridize_kwargs={"compile": "tiered"}):
        if mode == "hybridized":
            hybridized += 1
            if hybridized == 2:
                for ticket in tickets:           # "the compile is done": compiled here
                    ticket.finish()
                # the loader thread switches soon; wait for it, so the next call is known
                assert net._cached_op.last_plan.forward.wait(timeout=600)
        if mode == "done":
            data = value
    result = summarize(data)
    assert data["first_tier"] == "reference"
    assert result["tiers"] == ["reference", "reference", "graph", "graph"]
    assert result["switch_call"] == 3
    assert result["median"]["hybridized"] == np.median(result["hybridized"][2:])
    bench = BenchmarkPlot(net, (2, 3))
    bench._show(result)
    assert "switched at hybridized call 3" in bench.status_html.value
    labels = [t.get_text() for t in bench.figure.axes[0].get_legend().get_texts()]
    assert "switch to the compiled code" in labels
    assert any("reference tier" in label for label in labels)
    bench.close()


class _FakeVM:
    """Stands in for compiler/vm.py's VMExecutable (compiled by the setup step, maybe not
    on a test machine): the NumPy reference executor under the tier name 'vm'."""
    tier = "vm"

    def __init__(self, graph, is_train=False):
        from straightdope.graph.interpret import ReferenceExecutable
        self.run = ReferenceExecutable(graph, is_train).run


def _tiered_with_a_pending_compile(monkeypatch, first):
    """A tiered hybridize whose background compile waits for the test (its tickets), and
    whose graphs start on `first` ('vm' or 'reference')."""
    from straightdope.compiler import tiers
    tickets = []

    def pending(description, key):
        tickets.append(tiers.Ticket())
        return tickets[-1]
    monkeypatch.setattr(tiers, "submit", pending)
    monkeypatch.setattr(tiers, "is_ready", lambda key: False)
    monkeypatch.setattr(tiers, "_vm_loaded", lambda: first == "vm")
    monkeypatch.setattr(tiers.TieredExecutable, "_vm",
                        lambda self: _FakeVM(self.graph, self.is_train))
    monkeypatch.setenv("STRAIGHTDOPE_COMPILE", "tiered")
    return tickets


class _Scaled(mx.gluon.HybridBlock):             # new generated code: nothing cached
    def __init__(self):
        super().__init__()
        self.scale = 1.0 + time.time_ns() % 1_000_003 / 1e7
        self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        return self.dense(x) * self.scale


@pytest.mark.parametrize("first", ["vm", "reference"])
def test_trace_inspector_marks_the_switch_to_compiled_code(monkeypatch, first):
    tickets = _tiered_with_a_pending_compile(monkeypatch, first)
    net = _Scaled()
    net.initialize()
    inspector = TraceInspector(net, nd.ones((2, 3)))   # imperative call, hybridized call
    early = inspector.calls[-1]
    assert (early.tier, early.pending, early.switched_from) == (first, True, "")
    # the VM is compiled code already: the graph goes to the compile process only once
    # the VM has run a while, or when asked (wait)
    assert len(tickets) == (0 if first == "vm" else 1)
    forward = net._cached_op.last_plan.forward
    assert not forward.wait(timeout=0) and len(tickets) == 1
    for ticket in tickets:                       # "the compile is done": compiled here
        ticket.finish()
    assert forward.wait(timeout=600)
    later = inspector.call()
    assert (later.tier, later.pending, later.switched_from) == ("graph", False, first)
    assert f"switched from the {first} tier to the graph tier" in inspector.hybridized_html.value
    assert inspector.call().switched_from == ""  # marked once, at the switch


def test_benchmark_marks_the_calls_on_the_vm_and_the_switch(monkeypatch):
    """After the setup step a new graph starts on the VM: its calls are drawn hollow and
    kept out of the median, and the switch from the VM to the graph's code is marked."""
    from widgets.benchmark_plot import measure, summarize
    tickets = _tiered_with_a_pending_compile(monkeypatch, "vm")
    net = _Scaled()
    net.initialize()
    data, hybridized = None, 0
    for mode, value in measure(net, nd.ones((2, 3)), repeats=4):
        if mode == "hybridized":
            hybridized += 1
            if hybridized == 2:
                forward = net._cached_op.last_plan.forward
                assert not forward.wait(timeout=0)        # hands the graph over
                for ticket in tickets:
                    ticket.finish()
                assert forward.wait(timeout=600)
        if mode == "done":
            data = value
    result = summarize(data)
    assert (data["first_tier"], data["pending"]) == ("vm", False)
    assert result["tiers"] == ["vm", "vm", "graph", "graph"]
    assert result["switch_call"] == 3
    assert result["median"]["hybridized"] == np.median(result["hybridized"][2:])
    bench = BenchmarkPlot(net, (2, 3))
    bench._show(result)
    assert "VM tier (precompiled) until the compiled code was ready" in bench.status_html.value
    assert "switched at hybridized call 3" in bench.status_html.value
    labels = [t.get_text() for t in bench.figure.axes[0].get_legend().get_texts()]
    assert "switch to the compiled code" in labels
    assert "hybridized, VM tier (compiling)" in labels
    bench.close()


def test_benchmark_of_the_vm_alone_counts_every_call():
    """hybridize(executor="vm"): the VM is the net's tier, not a stop-gap: no switch, no
    hollow calls, every call in the median (widget state from the numbers alone)."""
    from widgets.benchmark_plot import summarize
    data = {"imperative": [3e-5, 4e-5, 5e-5], "hybridized": [9e-6, 1e-5, 2e-5],
            "compile_seconds": 0.01, "tiers": ["vm"] * 3, "first_tier": "vm",
            "pending": False}
    result = summarize(data)
    assert result["switch_call"] is None
    assert result["median"]["hybridized"] == 1e-5
    bench = BenchmarkPlot(Hybridize_net, (1, 3))
    bench._show(result)
    labels = [t.get_text() for t in bench.figure.axes[0].get_legend().get_texts()]
    assert not any("compiling" in label for label in labels)
    assert "still on" not in bench.status_html.value
    assert "speedup <b>4.00x</b>" in bench.status_html.value
    bench.close()


def test_benchmark_of_a_net_forward_and_backward():
    net = make_net(width=8)
    bench = BenchmarkPlot(net, (2, 3), repeats=3, hybridize_kwargs={"executor": "numpy"})
    assert bench.width_slider.layout.display == "none"     # no factory, no width
    result = bench.run(backward=True, batch_size=4)
    assert result["backward"] and result["batch_size"] == 4 and result["width"] is None
    # The controls show what was measured (and moving them did not start another run).
    assert bench.batch_slider.value == 4 and bench.backward_box.value and not bench.running
    assert len(result["hybridized"]) == 3
    assert net.d1.weight.grad().shape == (8, 3)            # the backward really ran


def test_benchmark_of_a_net_keeps_its_mode_and_hybridize_options():
    net = make_net(width=8)                                   # imperative
    BenchmarkPlot(net, (2, 3), repeats=2).run()
    assert not net._active                                    # given back imperative
    net.hybridize(executor="numpy")
    bench = BenchmarkPlot(net, (2, 3), repeats=2)
    assert bench.hybridize_kwargs["executor"] == "numpy"      # its own options
    bench.run()
    assert net._active and net._flags["executor"] == "numpy"  # still as it was


def test_benchmark_live_run_stops_and_closes_cleanly():
    bench = BenchmarkPlot(Hybridize_net, (1, 3), width=10, repeats=20_000,
                          hybridize_kwargs={"executor": "numpy"}, redraw_seconds=0.05)
    bench.batch_slider.value = 4                       # a control change starts a run
    assert bench.running and _benchmark_threads()
    deadline = time.monotonic() + 30
    while bench.progress.value == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = bench.progress.value                        # updated every 1% of the calls
    assert seen >= 400 and bench.progress.max == 40_001
    assert bench.stop_button.disabled is False and bench.run_button.disabled is True
    bench.stop_button.click()
    assert not bench.running and not _benchmark_threads()
    assert bench.result["stopped"] and bench.result["batch_size"] == 4
    assert seen <= len(bench.result["imperative"]) < 20_000
    assert bench.run_button.disabled is False and bench.image.value[:4] == b"\x89PNG"
    bench.width_slider.value = 16                      # runs again...
    assert bench.running
    bench.close()                                      # ...and close() joins the thread
    assert not _benchmark_threads()
    assert bench.comm is None and bench.image.comm is None


# ------------------------------------------------------------------ training
def test_training_live_plot_has_whole_epoch_ticks(monkeypatch):
    import IPython.display
    from widgets.training import LivePlot

    class Handle:                       # what display(..., display_id=True) returns
        def __init__(self, obj):        # in a notebook (outside one it returns None)
            self.shown = [obj]

        def update(self, obj):
            self.shown.append(obj)

    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id: Handle(obj))
    plot = LivePlot(epochs=2)
    history = {"train_loss": [1.4, 0.3], "train_acc": [0.6, 0.9], "test_acc": [0.8, 0.9]}
    plot.update(history)
    for ax in (plot.ax_loss, plot.ax_acc):
        lo, hi = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert ticks == [1.0, 2.0], ticks                  # not 0.5, 1.0, 1.5, ...
    assert [line.get_label() for line in plot.ax_acc.get_lines()] == [
        "train accuracy", "test accuracy"]
    assert len(plot._handle.shown) == 2                     # drawn, then redrawn in place


def test_graph_view_shows_a_loop_as_one_node_whose_body_opens():
    from straightdope.gluon import rnn
    layer = rnn.LSTM(4)
    layer.initialize()
    view = GraphView(layer, nd.ones((6, 2, 3)))
    loops = [n for n in view.graph.op_nodes if n.op.name == "_foreach"]
    assert len(loops) == 1 and "(body: " in loops[0].label
    assert view.body_button.layout.display == "none"        # no loop selected yet
    view.node_picker.value = loops[0].name
    whole = view.dot
    assert view.body_button.layout.display is None
    assert view.body_button.description == "open its body"
    view.body_button.click()
    assert view.body is not None and view.body[0] == loops[0].name
    assert "the body of" in view.dot and "FullyConnected" in view.dot
    assert "label=\"_foreach" not in view.dot and "<svg" in view.svg
    assert view.body_button.description == "back to the whole graph"
    view.body_button.click()
    assert view.body is None and view.dot == whole
