"""The library's layers (docs/internals.md, "Layers"), checked on its import graph.

grimp (import-linter's graph engine) reads every import statement of `straightdope/`,
those inside functions too. A module may import its own layer and the layers below it.
The imports that break this today are listed in ALLOWED, each with why and what would
fix it: the list may only shrink (an entry that no longer exists fails the test, so it
is deleted when fixed), and with those imports set aside the graph has no cycle at all.
"""
import grimp
import pytest
from grimp import Layer

# High to low. Siblings in one Layer may import each other (not independent).
LAYERS = [
    Layer("demo", "warmup", independent=False),                  # entry points
    Layer("onnx", independent=False),
    Layer("gluon", "viz", independent=False),
    Layer("optimizer", "lr_scheduler", "metric", "initializer", "image", independent=False),
    Layer("executor", independent=False),                        # Symbol.bind: a CachedOp
    Layer("cached_op", independent=False),
    Layer("compiler", independent=False),
    Layer("graph", independent=False),
    Layer("numpy", "numpy_extension", independent=False),          # mx.np: nd or sym
    Layer("autograd", independent=False),                         # MXNet's API on the tape
    Layer("symbol", independent=False),
    Layer("ndarray", "tape", "random", "engine", "profiler", independent=False),
    Layer("ops", independent=False),
    Layer("base", "config", "context", "name", "util", "runtime", "files", "serialization",
          "mxnet_format", independent=False),
]

_SD = "straightdope."
# (importer, imported): why it is there, and the fix. Empty since 5 December 2026: keep it
# so (a new entry needs a reason and a fix written next to it).
ALLOWED = {
}


def _name(short):
    return "straightdope" + ("." + short if short else "")


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("straightdope")


def test_every_allowed_import_still_exists_so_the_list_only_shrinks(graph):
    gone = [pair for pair in ALLOWED
            if not graph.direct_import_exists(importer=_name(pair[0]), imported=_name(pair[1]))]
    assert not gone, (f"these imports are gone (fixed?): delete them from ALLOWED in "
                      f"tests/test_layers.py: {gone}")


def _without_allowed(graph):
    graph = graph.copy() if hasattr(graph, "copy") else grimp.build_graph("straightdope")
    for importer, imported in ALLOWED:
        graph.remove_import(importer=_name(importer), imported=_name(imported))
    return graph


def _explain(graph, importer, imported):
    details = graph.get_import_details(importer=importer, imported=imported)
    return "; ".join(f"{d['importer']}:{d['line_number']} {d['line_contents']}"
                     for d in details)


def test_no_module_imports_a_layer_above_its_own(graph):
    graph = _without_allowed(graph)
    illegal = graph.find_illegal_dependencies_for_layers(LAYERS, containers={"straightdope"})
    lines = []
    for dep in sorted(illegal, key=lambda d: (d.importer, d.imported)):
        for route in dep.routes:
            chain = f"{sorted(route.heads)} -> {list(route.middle)} -> {sorted(route.tails)}"
            lines.append(f"{dep.importer} imports the higher {dep.imported}: {chain}")
    assert not lines, ("imports against the layers (docs/internals.md, Layers); move the "
                       "code to its layer:\n" + "\n".join(lines))


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycle_besides_the_allowed_imports(graph):
    graph = _without_allowed(graph)
    cycles = _cycles(graph)
    report = []
    for component in cycles:
        inside = set(component)
        edges = [f"  {_explain(graph, m, i)}" for m in component
                 for i in sorted(graph.find_modules_directly_imported_by(m)) if i in inside]
        report.append(f"{component}:\n" + "\n".join(edges))
    assert not cycles, "import cycles (counting imports inside functions):\n" + \
        "\n".join(report)


def test_the_cycle_finder_finds_a_cycle():
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.c")
    assert _cycles(g) == []
    g.add_import(importer="p.c", imported="p.a")
    assert _cycles(g) == [["p.a", "p.b", "p.c"]]
