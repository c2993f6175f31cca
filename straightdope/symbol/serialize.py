"""MXNet's JSON layout for graphs: `nodes` (op, name, attrs, inputs), `arg_nodes`, `heads`.

Loading trusts nothing in the file: every op name is looked up in the registry,
every attribute goes through the op's own parser (literals only, never `eval`),
and every input must point at an earlier node. A bad file gets one clear
`SymbolFileError` that says where it is wrong.
"""
from __future__ import annotations

import json

from ..ops import OpError, get_op
from ..ops.control_flow import check_loaded
from ..util import is_np_shape
from .symbol import JSON_FORMAT, Node, Symbol, topological

MXNET_VERSION = 10901       # the layout of MXNet 1.9
MAX_NODES = 1_000_000       # per file: more is refused before building anything

# A variable's "__dtype__" is MXNet's type code in a file ("0": float32; _DTYPE_NP_TO_MX in
# MXNet's python/mxnet/ndarray/ndarray.py) and a NumPy name in memory here.
DTYPE_CODES = {"float32": "0", "float64": "1", "float16": "2", "uint8": "3", "int32": "4",
               "int8": "5", "int64": "6", "bool": "7"}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


def _var_attrs(attrs, table):
    """A variable's attributes with "__dtype__" translated by `table` (names <-> codes)."""
    attrs = dict(attrs)
    if "__dtype__" in attrs:
        attrs["__dtype__"] = table.get(attrs["__dtype__"], attrs["__dtype__"])
    return attrs


class SymbolFileError(ValueError):
    """A symbol JSON file or string that cannot be turned into a graph."""


def _attr_text(name, value):
    # MXNet prints its index lists (a loop's *_locs) as [0, 1] and shapes as (2, 3)
    if name.endswith("_locs"):
        return str(list(value))
    return str(value)


def graph_doc(entries) -> dict:
    """The JSON document (a dict) of the graph that computes `entries`; the body of a
    control-flow node is written the same way, inside the node ("subgraphs")."""
    nodes = topological(entries)
    index = {id(n): k for k, n in enumerate(nodes)}
    out_nodes = []
    for node in nodes:
        entry = {"op": "null" if node.is_var else node.op.name, "name": node.name}
        if node.is_var:
            if node.var_attrs:
                entry["attrs"] = _var_attrs(node.var_attrs, DTYPE_CODES)
        else:
            attrs = {k: _attr_text(k, v) for k, v in node.attrs.items()
                     if node.op.spec(k).kind != "subgraphs"
                     and (v != node.op.spec(k).default or node.op.spec(k).required)}
            if "num_args" in node.op.attrs and node.attrs.get("num_args") is None:
                attrs["num_args"] = str(len(node.inputs))   # MXNet requires it (concat)
            attrs.update(node.var_attrs)            # its own: __mood__, __lr_mult__, ...
            if attrs:
                entry["attrs"] = attrs
        entry["inputs"] = [[index[id(child)], i, 0] for child, i in node.inputs]
        if node.subgraphs:
            entry["subgraphs"] = [graph_doc(g.entries) for g in node.subgraphs]
        out_nodes.append(entry)
    row_ptr = [0]
    for node in nodes:
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    return {
        "nodes": out_nodes,
        "arg_nodes": [k for k, n in enumerate(nodes) if n.is_var],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(node)], i, 0] for node, i in entries],
    }


def to_json(symbol: Symbol) -> str:
    doc = graph_doc(symbol.entries)
    doc["attrs"] = {"mxnet_version": ["int", MXNET_VERSION]}
    if is_np_shape():               # tells a reader that 0 in a shape means size 0
        doc["attrs"]["is_np_shape"] = ["int", 1]
    return json.dumps(doc, indent=2)


def from_json(text: str, source: str = "<string>") -> Symbol:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SymbolFileError(f"{source}: not valid JSON ({err}); is this a -symbol.json "
                              f"file written by export()?") from None
    except RecursionError:
        raise SymbolFileError(f"{source}: JSON nested too deeply to read; a -symbol.json "
                              f"file is a flat list of nodes") from None
    return from_doc(doc, source)


def from_doc(doc, source: str = "<string>", depth: int = 0) -> Symbol:
    """The Symbol of a parsed JSON document (a control-flow node's subgraphs too)."""
    def fail(why):
        raise SymbolFileError(f"{source}: {why}") from None

    if depth > 16:
        fail("subgraphs are nested more than 16 deep")
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) \
            or not isinstance(doc.get("heads"), list):
        fail("expected a JSON object with 'nodes' and 'heads' lists (MXNet's symbol layout)")
    if len(doc["nodes"]) > MAX_NODES:
        fail(f"{len(doc['nodes']):,} nodes, more than the {MAX_NODES:,} a file may hold")
    nodes = []
    for k, raw in enumerate(doc["nodes"]):
        where = f"node {k}"
        if not isinstance(raw, dict):
            fail(f"{where} is not an object")
        op_name, name = raw.get("op"), raw.get("name")
        if not isinstance(op_name, str) or not isinstance(name, str) or not name:
            fail(f"{where} needs string 'op' and 'name' fields")
        where = f"node {k} ({name!r})"
        attrs = raw.get("attrs", raw.get("attr", raw.get("param", {}))) or {}
        if not isinstance(attrs, dict) or not all(
                isinstance(a, str) and isinstance(v, str) for a, v in attrs.items()):
            fail(f"{where}: attributes must be a mapping of strings to strings")
        inputs_raw = raw.get("inputs", [])
        if not isinstance(inputs_raw, list):
            fail(f"{where}: 'inputs' must be a list")
        inputs = []
        for entry in inputs_raw:
            if not (isinstance(entry, list) and 2 <= len(entry) <= 3
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in entry)):
                fail(f"{where}: each input must be [node, output, version] integers, got "
                     f"{entry!r:.60}")
            src, out = entry[0], entry[1]
            if not 0 <= src < k:
                fail(f"{where}: input refers to node {src}, but only nodes 0..{k - 1} come "
                     f"before it")
            if not 0 <= out < nodes[src].num_outputs():
                fail(f"{where}: input refers to output {out} of node {src} "
                     f"({nodes[src].name!r}), which has {nodes[src].num_outputs()}")
            inputs.append((nodes[src], out))
        if op_name == "null":
            if inputs:
                fail(f"{where}: a variable cannot have inputs")
            nodes.append(Node(None, name, var_attrs=_var_attrs(attrs, DTYPE_NAMES)))
            continue
        raw_subgraphs = raw.get("subgraphs", [])
        if not isinstance(raw_subgraphs, list):
            fail(f"{where}: 'subgraphs' must be a list of graphs")
        subgraphs = tuple(from_doc(g, f"{source}: {where}, subgraph {i}", depth + 1)
                          for i, g in enumerate(raw_subgraphs))
        try:
            op = get_op(op_name)
            given = {a: v for a, v in attrs.items() if not a.startswith("__")}
            if "subgraphs" in op.attrs:
                given["subgraphs"] = subgraphs
            elif subgraphs:
                fail(f"{where}: {op_name} holds no subgraphs, but the file gives "
                     f"{len(subgraphs)}")
            parsed = op.parse_attrs(given)
            if "subgraphs" in op.attrs:
                check_loaded(op_name, parsed, len(inputs))
        except OpError as err:
            fail(f"{where}: {err}")
        if op.variadic:
            expected = len(inputs)
        else:
            expected = len(op.input_names(parsed))
        if len(inputs) != expected:
            fail(f"{where}: {op_name} takes {expected} inputs, the file gives {len(inputs)}")
        own = {a: v for a, v in attrs.items() if a.startswith("__")}
        nodes.append(Node(op, name, parsed, inputs, own))
    heads = []
    for entry in doc["heads"]:
        if not (isinstance(entry, list) and len(entry) >= 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in entry)):
            fail(f"each head must be [node, output, version] integers, got {entry!r:.60}")
        if not 0 <= entry[0] < len(nodes) or not 0 <= entry[1] < nodes[entry[0]].num_outputs():
            fail(f"head {entry} points outside the graph")
        heads.append((nodes[entry[0]], entry[1]))
    if not heads:
        fail("the graph has no outputs ('heads' is empty)")
    return Symbol(heads)


def load_json(json_str: str) -> Symbol:
    return from_json(json_str)


def load(fname) -> Symbol:
    try:
        with open(fname, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{fname}: no such symbol file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SymbolFileError(f"{fname}: not a UTF-8 text file; a symbol file is JSON") from None
    return from_json(text, source=str(fname))


JSON_FORMAT.update(to_json=to_json, load_json=load_json)      # Symbol.tojson(), pickle
