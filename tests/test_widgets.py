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


def mlp_symbol():
    x = mx.sym.var("data")
    h = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=10, name="d1"), name="act")
    return mx.sym.FullyConnected(h, num_hidden=2, name="out")


# ------------------------------------------------------------------- GraphView
def test_graph_view_of_a_symbol_draws_one_node_per_op_with_shapes():
    view = GraphView(mlp_symbol(), (1, 3))
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
    view = GraphView(mlp_symbol(), (4, 3))
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
    view = GraphView(mlp_symbol(), (2, 3))
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


def test_graph_view_without_example_inputs_shows_the_traced_graph_only():
    view = GraphView(mlp_symbol())
    assert list(view.stages) == ["traced"]
    assert len(svg_nodes(view.svg)) == 9
    with pytest.raises(TypeError):
        GraphView(42)
