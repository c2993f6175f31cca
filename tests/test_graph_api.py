"""The symbol graph's public API and the layering around it: `straightdope.graph` is built
on `straightdope.symbol` (Symbol.walk(), .entries, Node fields, node.subgraphs) and never
the reverse, and a loop's body is walked, printed, drawn and serialised by the same code
as any graph."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from straightdope import sym
from straightdope.graph import Graph
from straightdope.symbol.serialize import from_json

PACKAGE = Path(__file__).resolve().parent.parent / "straightdope"


def imported_modules(path: Path):
    """(line, module) of every import in a file, relative ones spelled with their dots,
    including imports inside functions."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            yield node.lineno, "." * node.level + (node.module or "")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_the_symbol_package_never_imports_the_graph_package():
    found = [(path.name, line, module) for path in sorted((PACKAGE / "symbol").glob("*.py"))
             for line, module in imported_modules(path)
             if re.fullmatch(r"(\.\.|straightdope\.)graph(\..*)?", module)]
    assert not found, f"symbol/ imports graph/ (graph is built on symbol): {found}"


def test_code_around_the_symbol_graph_uses_only_its_public_api():
    private = re.compile(r"\._outputs\b|\b_Node\b|\b_topo\b|\._nodes\(")
    users = [*(PACKAGE / "graph").glob("*.py"), *(PACKAGE / "compiler").glob("*.py"),
             PACKAGE / "cached_op.py", PACKAGE / "gluon" / "block.py",
             PACKAGE / "gluon" / "parameter.py", PACKAGE / "symbol" / "serialize.py",
             PACKAGE / "symbol" / "contrib.py", PACKAGE / "viz.py"]
    found = [(path.name, k + 1, line.strip()) for path in users
             for k, line in enumerate(path.read_text(encoding="utf-8").splitlines())
             if private.search(line)]
    assert not found, f"private Symbol internals used outside symbol.py: {found}"


def test_import_straightdope_alone_gives_symbols_shape_inference_and_evaluation():
    code = ("import straightdope as mx\n"
            "x = mx.sym.var('x')\n"
            "y = mx.sym.FullyConnected(x, num_hidden=4, name='fc')\n"
            "print(y.infer_shape(x=(2, 3)))\n"
            "print(mx.sym.relu(x - 1.0).eval(x=mx.nd.array([0.0, 3.0]))[0].asnumpy())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "([(2, 3), (4, 3), (4,)], [(2, 4)], [])" in out.stdout
    assert "[0. 2.]" in out.stdout


def loop():
    """A foreach over x with one state; its body reads a weight from outside."""
    x, w = sym.var("x"), sym.var("w")

    def body(x_t, h):
        h = sym.tanh(sym.dot(x_t, w) + h)
        return h * 2.0, h
    outs, last = sym.contrib.foreach(body, x, sym.var("h0"))
    return sym.Group([outs, last])


def test_a_loop_body_is_a_symbol_walked_and_printed_by_the_graph_code():
    group = loop()
    node = next(n for n in group.walk() if n.subgraphs)
    body, = node.subgraphs
    body_ops = [n.op.name for n in body.walk() if n.op is not None]
    assert body_ops == ["dot", "elemwise_add", "tanh", "_mul_scalar"]
    as_graph = Graph.from_symbol(body)
    assert [n.name for n in as_graph.nodes] == [n.name for n in body.walk()]
    printed = str(Graph.from_symbol(group))
    assert "body graph {" in printed
    for op in body_ops:
        assert f"{op}(" in printed
    assert "(body: 4 ops)" in Graph.from_symbol(group).to_dot()
    assert 'label="tanh"' in as_graph.to_dot()


def test_a_loop_body_is_serialised_like_a_graph_and_read_back():
    group = loop()
    doc = json.loads(group.tojson())
    loop_entry, = [n for n in doc["nodes"] if n["op"] == "_foreach"]
    body, = next(n for n in group.walk() if n.subgraphs).subgraphs
    written, = loop_entry["subgraphs"]
    assert [n["name"] for n in written["nodes"]] == [n.name for n in body.walk()]
    again = from_json(group.tojson())
    body_again, = next(n for n in again.walk() if n.subgraphs).subgraphs
    assert [(n.name, None if n.op is None else n.op.name) for n in body_again.walk()] == \
        [(n.name, None if n.op is None else n.op.name) for n in body.walk()]
    shapes = dict(x=(5, 2, 3), w=(3, 4), h0=(2, 4))
    assert again.infer_shape(**shapes)[1] == group.infer_shape(**shapes)[1] == \
        [(5, 2, 4), (2, 4)]
    rng = np.random.RandomState(0)
    values = {k: rng.rand(*s).astype(np.float32) for k, s in shapes.items()}
    for a, b in zip(again.eval(**values), group.eval(**values)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_graph_to_symbol_and_back_keeps_every_node():
    group = loop()
    graph = Graph.from_symbol(group)
    back = graph.to_symbol()
    assert [(n.name, n.op) for n in back.walk()] == [(n.name, n.op) for n in group.walk()]
    assert back.list_outputs() == group.list_outputs()
