"""GraphView: the graph that hybridize() traced, one compiler stage at a time.

Nothing here re-draws a model from its Python code. The drawing comes from the very
objects the executor runs: a hybridized block's cached graph (`block._cached_op`) and
the stages its compiler kept (`block.compiled`: traced -> shapes -> fused -> memory ->
source), each of which knows how to describe itself (`str`, `to_dot()`).

    view = GraphView(net, x)            # hybridizes net if needed and calls it once
    view = GraphView(sym_out, (1, 3))   # a plain Symbol plus the shapes of its data

For a Symbol, `executor=` picks the backend that compiles it ('numba' or 'numpy', as in
`hybridize(executor=...)`); a block is drawn as its own hybridize() flags compiled it.
"""
from __future__ import annotations

import inspect
import io
import re

import ipywidgets as w
import numpy as np

from straightdope.compiler.backend import STAGES
from straightdope.graph import Graph, annotate
from straightdope.symbol import Symbol

from . import _style as st
from .messages import MESSAGES, graphviz_font, t

STAGE_ORDER = STAGES          # the compiler's pipeline list (compiler/backend.py PIPELINE)
#: Below this width (px) for the drawing, the node inspector moves under it.
GRAPH_MIN_WIDTH = 520
STAGE_KEYS = ("traced", "shapes", "fused", "memory", "source")


def stage_label(key: str) -> str:
    """The button and title text of a compiler stage, in the reader's language."""
    return t(f"graph.stage.{key}") if key in STAGE_KEYS else key


# ------------------------------------------------------------ collecting the stages
def is_block(obj) -> bool:
    # A class has these attributes too: a factory may be the class itself (Net(width)).
    return (callable(obj) and not isinstance(obj, type) and hasattr(obj, "hybridize")
            and hasattr(obj, "collect_params"))


def is_hybridized(block) -> bool:
    # MXNet 1.x keeps the flag in `_active`; be tolerant of a public spelling too.
    return bool(getattr(block, "_active", False) or getattr(block, "hybridized", False))


def as_ndarray(x):
    from straightdope import nd
    return x if isinstance(x, nd.NDArray) else nd.array(np.asarray(x, dtype=np.float32))


def _shape_dtype(x):
    """(shape, dtype) of an example input: an NDArray, a NumPy array, or just a shape."""
    if isinstance(x, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in x):
        return tuple(int(d) for d in x), np.dtype("float32")
    data = getattr(x, "_data", x)
    data = np.asarray(data)
    return tuple(data.shape), data.dtype


def _ordered(stages: dict) -> dict:
    known = [k for k in STAGE_ORDER if k in stages]
    return {k: stages[k] for k in known + [k for k in stages if k not in known]}


def _merge_backend_stages(base: dict, backend_stages: dict) -> dict:
    """The executor's own stages win; the reference executor calls its only stage 'graph'
    (the annotated graph it runs), which is our 'shapes' stage."""
    stages = dict(base)
    for key, value in (backend_stages or {}).items():
        stages["shapes" if key == "graph" else key] = value
    return _ordered(stages)


def symbol_stages(symbol, *example_inputs, data_names=None, executor=None) -> dict:
    """Stages for a plain Symbol: traced, and with example inputs (arrays or shapes) also
    shapes inferred plus whatever the executor's compile() keeps (fused, memory, source).
    The data variables are `data_names`, else the first arguments of the symbol.
    `executor`: 'numba' or 'numpy', as in hybridize() (default: $STRAIGHTDOPE_EXECUTOR)."""
    names = list(data_names) if data_names else symbol.list_arguments()[:len(example_inputs)]
    traced = Graph.from_symbol(symbol, names)
    if not example_inputs:
        return {"traced": traced}
    info = [_shape_dtype(x) for x in example_inputs]
    shapes = {n: s for n, (s, _) in zip(names, info)}
    dtypes = {n: d for n, (_, d) in zip(names, info)}
    annotated = annotate(traced, shapes, dtypes)
    from straightdope.cached_op import get_backend
    executable = get_backend(executor).compile(annotated)
    return _merge_backend_stages({"traced": traced, "shapes": annotated},
                                 getattr(executable, "stages", {}))


def block_stages(block, *example_inputs) -> dict:
    """Stages for a HybridBlock: hybridize it if needed, call it once on the examples,
    then read what the call compiled."""
    if not example_inputs:
        raise ValueError("GraphView(block, x): give an example input, the graph is traced "
                         "(and its shapes inferred) by calling the block on it")
    if not is_hybridized(block):
        block.hybridize()
    # Tracing runs the block's Python once, prints included; this view shows the graph,
    # the TraceInspector shows the prints.
    with st.thread_stdout(io.StringIO()):
        block(*[as_ndarray(x) for x in example_inputs])
    op = getattr(block, "_cached_op", None)
    compiled = getattr(block, "compiled", None) or {}
    base = {}
    if op is not None:
        base["traced"] = Graph.from_symbol(op.symbol, op.data_names)
        plan = op.last_plan
        if plan is not None:
            compiled = {**getattr(plan.forward, "stages", {}), **compiled}
    if not base and not compiled:
        raise ValueError(f"{type(block).__name__} has no cached graph after a hybridized "
                         f"call: is it a HybridBlock?")
    return _merge_backend_stages(base, compiled)


def collect_stages(obj, *example_inputs, data_names=None, executor=None) -> dict:
    if isinstance(obj, Symbol):
        return symbol_stages(obj, *example_inputs, data_names=data_names, executor=executor)
    if isinstance(obj, Graph):
        return {"shapes" if obj.nodes and obj.nodes[0].shapes else "traced": obj}
    if is_block(obj):
        return block_stages(obj, *example_inputs)
    raise TypeError(f"GraphView draws a HybridBlock, a Symbol or a Graph, "
                    f"not {type(obj).__name__}")


# ------------------------------------------------------------------- drawing a stage
def graph_of(stage):
    """The IR Graph a stage shows, if it has one (a Graph, or an object with `.graph`)."""
    if isinstance(stage, Graph):
        return stage
    graph = getattr(stage, "graph", None)
    return graph if isinstance(graph, Graph) else None


def _stage_to_dot(stage, hide_params, title):
    if isinstance(stage, Graph):
        return stage.to_dot(hide_params=hide_params, title=title)
    to_dot = getattr(stage, "to_dot", None)
    if to_dot is None:
        return None
    # Compiler stages title themselves ("3 steps, 2 fused loops", "4 buffers: ... bytes"),
    # which says more than the stage's name: only pass what the method accepts.
    try:
        accepted = inspect.signature(to_dot).parameters
    except (TypeError, ValueError):
        accepted = {}
    return to_dot(**({"hide_params": hide_params} if "hide_params" in accepted else {}))


def _polish(dot: str) -> str:
    """Graph-level defaults: Graphviz titles the drawing in Times by default."""
    first = dot.index("{") + 1
    return (dot[:first] + f'\n  graph [fontname="{graphviz_font()}", fontsize=15];'
            + dot[first:])


def _highlight(dot: str, node_id) -> str:
    """Re-state one node with a thick red border. DOT lets a later statement add
    attributes to a node defined earlier (even inside a cluster)."""
    if node_id is None or not re.search(rf"^\s*n{node_id} \[", dot, re.M):
        return dot
    end = dot.rstrip().rfind("}")
    return dot[:end] + f'  n{node_id} [color="#d62728", penwidth=4];\n' + dot[end:]


def stage_dot(stage, hide_params=False, highlight=None, title=None) -> str | None:
    """DOT source for a stage, or None when the stage is text only (generated code)."""
    dot = _stage_to_dot(stage, hide_params, title)
    return None if dot is None else _highlight(_polish(dot), highlight)


# --------------------------------------------------------------------- node details
def _type_text(graph, entry):
    shape, dtype = graph.shape_of(entry), graph.dtype_of(entry)
    if shape is None:
        return "shape not known yet"
    return f"{tuple(shape)}" + (f" {np.dtype(dtype).name}" if dtype is not None else "")


PLACES = {"input": "graph.place.input", "output": "graph.place.output"}


def _stage_rows(stage, graph, node):
    """What a compiler stage knows about a node: its fused step (fusion), where each of
    its outputs is stored (memory plan). Duck-typed on the stage objects' queries."""
    rows = []
    step_of, steps = getattr(stage, "step_of", None), getattr(stage, "steps", None)
    if isinstance(step_of, dict) and node.id in step_of and steps is not None:
        step = next((s for s in steps if s.id == step_of[node.id]), None)
        if step is not None:
            label = step.label(graph) if hasattr(step, "label") else str(step)
            rows.append((t("graph.row.step"), f"{step.id}: {label}"))
    clusters = getattr(stage, "clusters", None)
    clusters = clusters() if callable(clusters) else clusters
    if isinstance(clusters, dict) and node.id in clusters:
        rows.append((t("graph.row.fused_group"), clusters[node.id]))
    where, root = getattr(stage, "where", None), getattr(stage, "root", None)
    if callable(where) and isinstance(root, dict):
        buffer_of = getattr(stage, "buffer_of", {})
        registers = set(getattr(stage, "fused_away", ()))
        for k in range(node.num_outputs):
            entry = (node.id, k)
            if entry not in root:
                continue
            place = where(entry)
            if entry in registers:
                place = t("graph.place.register")
            elif place == "arena" and root[entry] in buffer_of:
                place = t("graph.place.arena", buffer=buffer_of[root[entry]])
                buffers = getattr(stage, "buffers", None)
                if buffers is not None:
                    others = [graph._value(v) for v in buffers[buffer_of[root[entry]]].values
                              if v != root[entry]]
                    if others:
                        place += t("graph.place.reused", others=", ".join(others))
            elif place in PLACES:
                place = t(PLACES[place])
            if root[entry] != entry:
                place += t("graph.place.view", value=graph._value(root[entry]))
            stored = t("graph.row.stored")
            rows.append((f"{stored} ({k})" if node.num_outputs > 1 else stored, place))
    return rows


def _step_of(stages: dict, node):
    """The compiled step that computes `node` (its node id must be from the fused graph)."""
    for stage in stages.values():
        fused = stage if hasattr(stage, "step_of") else getattr(stage, "fused", None)
        step_of = getattr(fused, "step_of", None)
        if isinstance(step_of, dict) and graph_of(fused) is not None:
            if node.id in step_of and graph_of(fused).nodes[node.id].name == node.name:
                return step_of[node.id]
    return None


def code_for(stages: dict, node) -> str | None:
    """The generated code that computes `node`, when the stages can say: a stage's own
    `code_for(node_id)`, else the lines the code generator wrote for the node's step (a
    fused loop, a kernel call), from the source's record (`codegen.Generated.steps`)."""
    for stage in stages.values():
        finder = getattr(stage, "code_for", None)
        if callable(finder):
            code = finder(node.id)
            if code:
                return str(code)
    steps, step = getattr(stages.get("source"), "steps", {}), _step_of(stages, node)
    return steps.get(step, "").rstrip() or None


def node_details_html(stages: dict, stage_key: str, node) -> str:
    stage = stages[stage_key]
    graph = graph_of(stage)
    if node is None or graph is None:
        return st.note(t("graph.pick_node"))
    kind = node.kind if node.is_var else node.op.name
    parts = [st.heading(f"{node.name}", size=16), st.note(kind)]
    rows = []
    if node.is_var:
        role = f"graph.role.{node.kind}"
        rows.append((t("graph.row.role"), t(role) if role in MESSAGES else node.kind))
        rows.append((t("graph.row.value"), _type_text(graph, (node.id, 0))))
    else:
        defaults = {k: a.default for k, a in node.op.attrs.items()}
        for k, v in node.attrs.items():
            if v != defaults.get(k) or k in ("num_hidden", "act_type"):
                rows.append((k, v))
        names = node.op.input_names(node.attrs, len(node.inputs))
        for name, entry in zip(names, node.inputs):
            rows.append((f"{t('graph.row.in')}: {name}", f"{graph.nodes[entry[0]].name}  "
                                        f"{_type_text(graph, entry)}"))
        for k in range(node.num_outputs):
            rows.append((f"{t('graph.row.out')} {k}" if node.num_outputs > 1
                         else t("graph.row.out"),
                         _type_text(graph, (node.id, k))))
        params = graph.num_params(node)
        if params:
            rows.append((t("graph.row.parameters"), f"{params:,}"))
    rows.extend(_stage_rows(stage, graph, node))
    parts.append(st.table(rows))
    code = code_for(stages, node)
    if code:
        parts.append(st.note(t("graph.generated_code")))
        parts.append(st.pre(code))
    return "".join(parts)


# ------------------------------------------------------------------------ the widget
class GraphView(w.VBox):
    """The traced graph, stage by stage, with a node inspector at the side.

    Attributes worth reading in tests or chapters: `stages` (dict of the stage objects),
    `stage` (the key on show), `dot` and `svg` (what is drawn), `graph` (its IR Graph).
    """

    def __init__(self, block_or_symbol, *example_inputs, hide_params=False,
                 data_names=None, stage=None, executor=None, zoom=1.25):
        self.stages = collect_stages(block_or_symbol, *example_inputs, data_names=data_names,
                                     executor=executor)
        self.zoom = zoom
        self.dot, self.svg = None, ""
        if stage is None:
            stage = "shapes" if "shapes" in self.stages else next(iter(self.stages))
        self.stage_buttons = w.ToggleButtons(
            options=[(stage_label(k), k) for k in self.stages], value=stage,
            tooltips=[t("graph.stage_tooltip", stage=k) for k in self.stages],
            style={"button_width": "auto"})
        self.hide_params = w.Checkbox(value=hide_params, description=t("graph.hide_params"),
                                      indent=False)
        self.node_picker = w.Dropdown(description=t("graph.node"), layout=w.Layout(width="95%"))
        # A loop (foreach, while_loop, cond) is one node; this opens its body.
        self.body_button = w.Button(description=t("graph.open_body"), icon="search-plus",
                                    layout=w.Layout(display="none"))
        self.body_button.on_click(lambda _: self.open_body())
        self.body = None            # (node name, body Graph) while a body is on show
        # The drawing and the node inspector sit side by side when there is room for
        # both (JupyterLab); in a narrow column (the HTML book, about 700 px) the
        # inspector wraps below, so the drawing keeps the full width and readable labels
        # instead of shrinking to 3/5 of the column.
        self.graph_html = w.HTML(layout=w.Layout(flex=f"3 1 {GRAPH_MIN_WIDTH}px",
                                                 overflow="auto"))
        self.details_html = w.HTML(layout=w.Layout(width="100%"))
        side = w.VBox([self.node_picker, self.body_button, self.details_html],
                      layout=w.Layout(flex="2 1 280px", min_width="280px",
                                      padding="0 0 0 12px"))
        header = w.HTML(st.CSS + st.heading(t("graph.heading")))
        super().__init__([header, w.HBox([self.stage_buttons, self.hide_params]),
                          w.HBox([self.graph_html, side],
                                 layout=w.Layout(width="100%", flex_flow="row wrap"))])
        self.add_class("sd-widget")
        self.stage_buttons.observe(self._on_stage, names="value")
        self.hide_params.observe(lambda change: self._draw(), names="value")
        self.node_picker.observe(self._on_node, names="value")
        self._quiet = False
        self._on_stage()

    # ---------------------------------------------------------------- queries
    @property
    def stage(self) -> str:
        return self.stage_buttons.value

    @property
    def graph(self):
        """The IR Graph of the stage on show (the last one that had a graph, for text
        stages such as the generated source)."""
        keys = list(self.stages)
        for key in reversed(keys[:keys.index(self.stage) + 1]):
            graph = graph_of(self.stages[key])
            if graph is not None:
                return graph
        return None

    def _selected_node(self):
        graph = self.graph
        if graph is None or self.node_picker.value is None:
            return None
        return next((n for n in graph.nodes if n.name == self.node_picker.value), None)

    # ---------------------------------------------------------------- drawing
    def _on_stage(self, change=None):
        graph = self.graph
        previous = self.node_picker.value
        options = []
        if graph is not None:
            # Ops first (what a student clicks on most), variables after.
            ordered = graph.op_nodes + [n for n in graph.nodes if n.is_var]
            options = [(f"{n.label if not n.is_var else n.name}  ({n.name})"
                        if not n.is_var else f"{n.name}  ({n.kind})", n.name) for n in ordered]
        names = [v for _, v in options]
        self._quiet = True          # one redraw for the whole change, not one per trait
        try:
            self.node_picker.options = options
            self.node_picker.value = previous if previous in names else (
                names[0] if names else None)
        finally:
            self._quiet = False
        self._draw()

    def _on_node(self, change):
        if not self._quiet:
            self._draw()

    def open_body(self, node_name=None):
        """Draw the body of a loop node (the selected one by default); call it again,
        or click the button, to go back to the whole graph."""
        from straightdope.graph import Graph
        if self.body is not None and node_name is None:
            self.body = None
        else:
            node = self._selected_node() if node_name is None else next(
                n for n in self.graph.nodes if n.name == node_name)
            if node is None or not node.subgraphs:
                raise ValueError(f"node {getattr(node, 'name', None)!r} is not a loop: it "
                                 f"has no body to open")
            self.body = (node.name, Graph.from_symbol(node.subgraphs[-1]))
        self._draw()

    def _draw(self):
        stage = self.stages[self.stage]
        node = self._selected_node()
        has_body = node is not None and bool(getattr(node, "subgraphs", ()))
        self.body_button.layout.display = None if has_body or self.body else "none"
        self.body_button.description = t("graph.back" if self.body else "graph.open_body")
        if self.body is not None:
            name, body = self.body
            self.dot = body.to_dot(hide_params=self.hide_params.value,
                                   title=t("graph.body_title", name=name))
            self.svg = st.dot_to_svg(self.dot, self.zoom)
            self.graph_html.value = f'<div style="text-align: center;">{self.svg}</div>'
            self.details_html.value = node_details_html(self.stages, self._last_graph_stage(),
                                                        node)
            return
        self.dot, self.svg, self.graph_html.value = self._render(stage, node)
        self.details_html.value = node_details_html(self.stages, self._last_graph_stage(), node)

    def _render(self, stage, node):
        """(dot, svg, html) of the main panel: a drawing, or the text of a text stage."""
        title = t("graph.stage_title", stage=stage_label(self.stage))
        highlight = node.id if node is not None and graph_of(stage) is not None else None
        try:
            dot = stage_dot(stage, self.hide_params.value, highlight, title)
            if dot is None:          # a text stage (the generated source): show the text
                return None, "", st.pre(str(stage))
            svg = st.dot_to_svg(dot, self.zoom)
        except Exception as exc:   # noqa: BLE001 - one broken stage must not break the view
            return None, "", st.pre(f"{t('graph.cannot_draw')}{type(exc).__name__}: {exc}", color=st.ERROR, background="#fdecea",
                                    border=st.ERROR)
        return dot, svg, f'<div style="text-align: center;">{svg}</div>'

    def _last_graph_stage(self):
        keys = list(self.stages)
        for key in reversed(keys[:keys.index(self.stage) + 1]):
            if graph_of(self.stages[key]) is not None:
                return key
        return self.stage
