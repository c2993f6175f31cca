"""From an ONNX file to a SymbolBlock, treating the file as untrusted input.

The file is parsed with the `onnx` protobuf classes only: nothing in it is executed,
no external file it names is opened, and no checker or shape-inference code runs on
it. Every tensor's size is checked against the bytes that the file really holds
before an array is made. Each ONNX node maps to straightdope ops through a table
(`IMPORTERS`); an op, an opset or an attribute value outside it is an
`OnnxImportError` that names the node.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..ops import OPS, OpError
from .folding import _CAST, FOLDS, MAX_EXPAND_ELEMENTS, Dim, fold  # noqa: F401

MIN_OPSET, MAX_OPSET = 13, 23     # Softmax has today's meaning from opset 13 on
MAX_FILE_BYTES = 2 ** 31 - 1      # protobuf's own limit for one message

def _require_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("straightdope.onnx needs the 'onnx' package: "
                          "pip install 'straightdope[onnx]' (or pip install onnx)") from None


_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_,
           10: np.float16, 11: np.float64}
_TYPED_FIELD = {np.float32: "float_data", np.float64: "double_data", np.int64: "int64_data",
                np.int32: "int32_data", np.int8: "int32_data", np.uint8: "int32_data",
                np.bool_: "int32_data", np.float16: "int32_data"}


class OnnxImportError(ValueError):
    """An ONNX file that cannot be read as an equivalent straightdope graph."""


IMPORTERS: dict = {}


def imports(*op_types):
    """Register an importer: fn(b, node) -> list of Symbols (the node's outputs)."""
    def register(fn):
        for name in op_types:
            IMPORTERS[name] = fn
        return fn
    return register


# ------------------------------------------------------------------ tensors
def tensor_to_array(tensor, where: str) -> np.ndarray:
    """The values of a TensorProto, after checking its size against what it holds."""
    if tensor.data_location == 1 or len(tensor.external_data):
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' refers to external data "
                              f"(another file); only self-contained models are read")
    dtype = _DTYPES.get(tensor.data_type)
    if dtype is None:
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' has ONNX data type "
                              f"{tensor.data_type}, which is not supported (float, double, "
                              f"float16, int8/32/64, uint8, bool are)")
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' has negative dims {dims}")
    count = math.prod(dims)
    if tensor.HasField("segment"):
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' is segmented; not supported")
    if tensor.raw_data:
        need = count * np.dtype(dtype).itemsize
        if len(tensor.raw_data) != need:
            raise OnnxImportError(f"{where}: tensor '{tensor.name}' declares shape {dims} "
                                  f"({need} bytes) but holds {len(tensor.raw_data)} bytes")
        return np.frombuffer(tensor.raw_data, dtype=np.dtype(dtype).newbyteorder("<")) \
            .astype(dtype).reshape(dims)
    values = getattr(tensor, _TYPED_FIELD[dtype])
    if len(values) != count:
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' declares shape {dims} "
                              f"({count} values) but holds {len(values)}")
    if math.prod(d for d in dims if d) > MAX_EXPAND_ELEMENTS:     # an empty, absurd shape
        raise OnnxImportError(f"{where}: tensor '{tensor.name}' declares shape {dims}, whose "
                              f"non-zero dims ask for more than {MAX_EXPAND_ELEMENTS} elements")
    if dtype == np.float16:          # stored as the 16 bits of each value, in int32s
        return np.array(values, dtype=np.uint16).view(np.float16).reshape(dims)
    return np.array(values, dtype=dtype).reshape(dims)


def parse_model(path):
    """Read and parse an ONNX file into a ModelProto, with clear errors."""
    from google.protobuf.message import DecodeError
    from onnx import ModelProto

    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise OnnxImportError(f"{path}: {size} bytes is more than one ONNX protobuf can hold; "
                              f"models with external data are not read")
    with open(path, "rb") as f:
        raw = f.read()
    model = ModelProto()
    try:
        model.ParseFromString(raw)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise OnnxImportError(f"{path}: not a valid ONNX file (the protobuf does not parse: "
                              f"{err})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError(f"{path}: the file holds no ONNX graph (no nodes)")
    return model


# ------------------------------------------------------------------ builder
class Builder:
    """Turns ONNX nodes into straightdope Symbols, one node at a time."""

    def __init__(self, model, source):
        from .. import symbol as sym
        self.sym, self.source = sym, source
        self.constants = {}            # value name -> numpy array (initializers, Constant)
        self.values = {}               # value name -> Symbol
        self.params = {}               # parameter name -> numpy array
        self.shape_of = {}             # value name -> Symbol whose shape it is (Shape op)
        self.dims = {}                 # value name -> shape arithmetic with run-time dims
        self.unsqueezed = {}           # value name -> (Symbol before Unsqueeze, axes)
        self.node = None
        self.declared = {}             # graph input name -> its shape (None: symbolic dim)
        self.shapes = {}               # id(symbol node) -> (node, its output shapes)
        self.opset = _check_opsets(model, source)
        for k, tensor in enumerate(model.graph.initializer):
            self.constants[tensor.name] = tensor_to_array(tensor, f"{source}: initializer {k}")
        if len(model.graph.sparse_initializer):
            raise OnnxImportError(f"{source}: sparse initializers are not supported")

    def fail(self, why):
        node = self.node
        raise OnnxImportError(f"{self.source}: node '{node.name}' ({node.op_type}): {why}")

    def attr(self, name, default=None):
        from onnx import helper
        for a in self.node.attribute:
            if a.name == name:
                if a.type in (5, 10):      # GRAPH, GRAPHS: subgraphs are not supported
                    self.fail(f"attribute '{name}' holds a subgraph; not supported")
                value = helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                elif isinstance(value, list) and value and isinstance(value[0], bytes):
                    value = [v.decode("utf-8", "replace") for v in value]
                if hasattr(value, "dims"):
                    value = tensor_to_array(value, f"{self.source}: node '{self.node.name}'")
                return value
        return default

    def has_input(self, k):
        return k < len(self.node.input) and self.node.input[k] != ""

    def tensor(self, k):
        """Input k as a Symbol (an initializer becomes a parameter variable)."""
        return self.value(self.node.input[k])

    def value(self, name):
        """The value `name` as a Symbol (an initializer becomes a parameter variable)."""
        if name in self.values:
            return self.values[name]
        if name in self.constants:
            array = self.constants[name]
            self.params[name] = array
            self.values[name] = self.sym.var(name, shape=array.shape, dtype=array.dtype)
            return self.values[name]
        if name in self.dims:
            self.fail(f"input '{name}' is shape arithmetic on dims known only at run time "
                      f"({self.dims[name].tolist()}); only Reshape and Expand take it")
        self.fail(f"input '{name}' is neither a graph input, an initializer nor the output "
                  f"of an earlier node")

    def const(self, k, what):
        """Input k as a constant NumPy array (an initializer or a Constant node)."""
        name = self.node.input[k] if self.has_input(k) else None
        if name not in self.constants:
            self.fail(f"input {k} ({what}) must be a constant (an initializer) to import, "
                      f"got '{name}'")
        return self.constants[name]

    def is_const(self, k):
        return self.has_input(k) and self.node.input[k] in self.constants

    def op(self, op_name, *inputs, **attrs):
        """Add a straightdope op named by this module (never by the file)."""
        try:
            return getattr(self.sym, op_name)(*inputs, **attrs)
        except OpError as err:
            self.fail(str(err))

    def rank(self, k):
        """The number of dims of input k, from our own shape inference (see shape)."""
        shape = self.shape(k)
        if shape is None:
            self.fail(f"the rank of input '{self.node.input[k]}' is unknown (declare the graph "
                      f"inputs' shapes)")
        return len(shape)

    def check_shapes(self, outputs):
        """Infer the shapes of a node's new values now, so that a node whose shapes
        disagree (an axis out of range, sizes that do not match) is refused by name."""
        for out in outputs:
            node = out._outputs[0][0]
            self.shapes.pop(id(node), None)
            self._infer(node, strict=True)

    def shape(self, k):
        """Input k's shape, inferred forwards from the graph inputs' declared shapes and
        the parameters: None for a dim not known here (a symbolic dim of a graph input),
        None if even the rank is not. Each value's shape is worked out once."""
        node, index = self.tensor(k)._outputs[0]
        outs = self._infer(node)
        return tuple(outs[index]) if index < len(outs) and outs[index] is not None else None

    def _infer(self, node, strict=False):
        from ..graph.shapes import _node_shapes
        todo = [node]
        while todo:
            top = todo[-1]
            if id(top) in self.shapes:
                todo.pop()
                continue
            if top.is_var:
                given = self.declared.get(top.name)
                if top.name in self.params:
                    given = self.params[top.name].shape
                self.shapes[id(top)] = (top, [given])
                continue
            waiting = [n for n, _ in top.inputs if id(n) not in self.shapes]
            if waiting:
                todo.extend(waiting)
                continue
            ins = [self.shapes[id(n)][1][i] for n, i in top.inputs]
            try:
                outs = _node_shapes(top, ins, [None] * top.num_outputs())[1]
            except (OpError, ValueError, TypeError, IndexError) as err:
                if strict and top is node:
                    self.fail(f"its input shapes {ins} do not fit: {err}")
                outs = []
            self.shapes[id(top)] = (top, list(outs))
        return self.shapes[id(node)][1]

    def check_axes(self, axes, k=0, extra=0, what="axes"):
        """Axes of input k (of an output `extra` dims larger) as non-negative numbers, after
        checking each lies in [-rank, rank) and none repeats. A rank not known here
        leaves the check to the op."""
        shape = self.shape(k)
        if shape is None:
            return list(axes)
        rank = len(shape) + extra
        if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) \
                != len(axes):
            self.fail(f"{what} {list(axes)} are not distinct axes of a {rank}-D array "
                      f"(input shape {shape})")
        return [a % rank for a in axes]

    def axes(self, input_index=1, attr="axes"):
        if self.has_input(input_index):
            return [int(a) for a in self.const(input_index, "axes").reshape(-1)]
        value = self.attr(attr)
        return None if value is None else [int(a) for a in value]


def _check_opsets(model, source):
    opset = None
    for entry in model.opset_import:
        if entry.domain not in ("", "ai.onnx"):
            raise OnnxImportError(f"{source}: the model uses operator set domain "
                                  f"'{entry.domain}', which is not supported (only the "
                                  f"standard ONNX domain is)")
        if opset is not None:
            raise OnnxImportError(f"{source}: the model lists the standard domain's opset "
                                  f"twice ({opset} and {entry.version}); which one it means "
                                  f"is not clear")
        opset = entry.version
    if opset is None or not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxImportError(f"{source}: the model uses ONNX opset {opset}; opsets "
                              f"{MIN_OPSET}..{MAX_OPSET} are read (convert it with "
                              f"onnx.version_converter first)")
    return opset


def check_nodes(model, source, opset):
    """Every node against its op's ONNX schema at the model's opset, before anything is
    built: a supported op of the standard domain, the number of inputs and outputs,
    required inputs present, attributes the op defines with the types it defines (so
    no subgraph), required attributes given, inputs defined by an earlier node (or a
    graph input or initializer) and every value written once. Also the node limit."""
    from onnx import defs

    from .. import config
    nodes, limit = model.graph.node, config.onnx_max_nodes()
    if len(nodes) > limit:
        raise OnnxImportError(f"{source}: the graph has {len(nodes)} nodes, more than the "
                              f"{limit} that are read (set STRAIGHTDOPE_ONNX_MAX_NODES to "
                              f"read a larger model)")
    written = set()
    for group in (model.graph.initializer, model.graph.input):  # an input may name an
        names = [v.name for v in group]                         # initializer (old files)
        twice = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) \
            != len(names) else []
        if twice or "" in names:
            raise OnnxImportError(f"{source}: graph inputs or initializers {twice or ['']} "
                                  f"are declared twice or without a name")
        written.update(names)
    single = defs.OpSchema.FormalParameterOption.Single
    for k, node in enumerate(nodes):
        if not node.name:
            node.name = f"node{k}"

        def fail(why):
            raise OnnxImportError(f"{source}: node '{node.name}' ({node.op_type}): {why}")

        if node.domain not in ("", "ai.onnx"):
            fail(f"operator domain '{node.domain}' is not supported")
        if node.op_type not in IMPORTERS and node.op_type not in FOLDS:
            fail(f"op {node.op_type} is not supported; the ONNX ops that import are listed "
                 f"by straightdope.onnx.import_coverage()")
        try:
            schema = defs.get_schema(node.op_type, opset, "")
        except defs.SchemaError:
            fail(f"op {node.op_type} does not exist in ONNX opset {opset}")
        for kind, names, formals, low, high in (
                ("inputs", node.input, schema.inputs, schema.min_input, schema.max_input),
                ("outputs", node.output, schema.outputs, schema.min_output,
                 schema.max_output)):
            if not low <= len(names) <= high:
                fail(f"has {len(names)} {kind}; {node.op_type} takes "
                     f"{low if low == high else f'{low} to {min(high, 2 ** 31 - 1)}'}")
            for i, formal in enumerate(formals[:len(names)]):
                if formal.option == single and not names[i]:
                    fail(f"its required {kind[:-1]} {i} ({formal.name}) is empty")
        for name in node.input:
            if name and name not in written:
                fail(f"input '{name}' is neither a graph input, an initializer nor the "
                     f"output of an earlier node")
        for name in node.output:
            if name in written:
                fail(f"writes the value '{name}', which a graph input, an initializer or an "
                     f"earlier node already defines (ONNX values are written once)")
            if name:
                written.add(name)
        given = set()
        for a in node.attribute:
            spec = schema.attributes.get(a.name)
            if a.name in given:
                fail(f"attribute '{a.name}' is given twice")
            given.add(a.name)
            if spec is None:
                fail(f"has an attribute '{a.name}', which {node.op_type} does not define")
            if a.type != int(spec.type):
                fail(f"attribute '{a.name}' holds type {a.type} (AttributeProto), "
                     f"{node.op_type} defines it as {spec.type.name}")
        missing = [n for n, spec in schema.attributes.items() if spec.required and
                   n not in given]
        if missing:
            fail(f"lacks the required attribute(s) {missing}")
    for value in model.graph.output:
        if value.name not in written:
            raise OnnxImportError(f"{source}: graph output '{value.name}' is not computed by "
                                  f"any node")


def onnx_to_symbol(model, source="<model>"):
    """(outputs Symbol, input names, {param name: array}) for an ONNX ModelProto."""
    check_nodes(model, source, _check_opsets(model, source))
    b = Builder(model, source)
    sym = b.sym
    input_names = []
    for value in model.graph.input:
        if value.name in b.constants:
            continue                      # old exporters list initializers as inputs too
        elem = value.type.tensor_type.elem_type
        dtype = _DTYPES.get(elem)
        if dtype is None:
            raise OnnxImportError(f"{source}: graph input '{value.name}' has type {elem}; "
                                  f"only tensors of numbers are supported")
        b.values[value.name] = sym.var(value.name, dtype=dtype)
        input_names.append(value.name)
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.HasField("shape"):
            b.declared[value.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                           for d in dims)
    for node in model.graph.node:
        b.node = node
        if fold(b, node):                     # shape arithmetic, computed now
            continue
        if node.op_type not in IMPORTERS:
            b.fail(f"imports only when its inputs are known at import (constants or "
                   f"shapes), as shape arithmetic")
        try:
            outputs = IMPORTERS[node.op_type](b, node)
        except (IndexError, KeyError, TypeError, ValueError, OverflowError) as err:
            if isinstance(err, OnnxImportError):
                raise
            b.fail(f"cannot be read ({type(err).__name__}: {err})")
        if outputs is None:                   # a constant (Constant, Shape): no Symbol
            continue
        for name, out in zip(node.output, outputs):
            if name:
                b.values[name] = out
        b.check_shapes(outputs)
    heads = []
    for value in model.graph.output:
        heads.append(b.value(value.name))
    out = heads[0] if len(heads) == 1 else sym.Group(heads)
    used = set(out.list_inputs())         # a graph input no node reads is left out
    return out, [n for n in input_names if n in used], b.params


def import_model(path, ctx=None):
    """Load an ONNX file as a SymbolBlock: `net = import_model('lenet.onnx'); net(x)`.

    The block's inputs are the graph's inputs (in file order), its parameters the
    initializers the graph computes with."""
    from ..gluon.symbol_block import SymbolBlock
    from ..gluon.parameter import load_by_name
    from ..symbol import var
    _require_onnx()
    path = os.fspath(path)
    model = parse_model(path)
    out, input_names, params = onnx_to_symbol(model, source=path)
    net = SymbolBlock(out, [var(n) for n in input_names])
    load_by_name(net._params, params, path, ctx)
    return net


def import_to_gluon(path, ctx=None):
    """MXNet 1.x's name for import_model (which gives a SymbolBlock here)."""
    return import_model(path, ctx)


# ------------------------------------------------------------------ ops
# ONNX operators of one input that a registry op computes (its `onnx`; the first op
# registered, when several do)
_UNARY = {}
for _op in OPS.values():
    if _op.onnx and len(_op.inputs) == 1 and not _op.variadic:
        _UNARY.setdefault(_op.onnx, _op.name)


@imports(*_UNARY)
def _unary(b, node):
    return [b.op(_UNARY[node.op_type], b.tensor(0), name=node.output[0])]


@imports("Softplus")
def _softplus(b, node):
    return [b.op("Activation", b.tensor(0), act_type="softrelu", name=node.output[0])]


@imports("LeakyRelu", "Elu")
def _leaky(b, node):
    kind = "leaky" if node.op_type == "LeakyRelu" else "elu"
    slope = b.attr("alpha", 0.01 if kind == "leaky" else 1.0)
    return [b.op("LeakyReLU", b.tensor(0), act_type=kind, slope=slope, name=node.output[0])]


@imports("Gelu")
def _gelu(b, node):
    if b.attr("approximate", "none") != "none":
        b.fail("only the exact (erf) GELU is supported, not approximate='tanh'")
    return [b.op("LeakyReLU", b.tensor(0), act_type="gelu", name=node.output[0])]


@imports("Dropout")
def _dropout(b, node):
    """Inference: Dropout is the identity (its mask output is not)."""
    if len(node.output) > 1 and node.output[1]:
        b.fail("the dropout mask output is used; only inference graphs import")
    return [b.op("identity", b.tensor(0), name=node.output[0])]


@imports("Softmax", "LogSoftmax")
def _softmax(b, node):
    op = "softmax" if node.op_type == "Softmax" else "log_softmax"
    (axis,) = b.check_axes([b.attr("axis", -1)], what="axis")
    return [b.op(op, b.tensor(0), axis=axis, name=node.output[0])]


_BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
           "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
           "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
           "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
           "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
           "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
           "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}


def _scalar_const(b, k):
    """The single number held by input k, if it is a one-element float constant."""
    if not b.is_const(k):
        return None
    value = b.constants[b.node.input[k]]
    if value.size != 1 or value.dtype.kind != "f" or value.ndim > 1:
        return None            # a (1, 1) constant would also raise the rank: keep it a tensor
    return float(value.reshape(-1)[0])


@imports(*_BINARY)
def _binary(b, node):
    if len(node.input) != 2:
        b.fail(f"takes {len(node.input)} inputs; only two import")
    tensor_op, scalar_op, reflected_op = _BINARY[node.op_type]
    right, left = _scalar_const(b, 1), _scalar_const(b, 0)
    if right is not None:
        return [b.op(scalar_op, b.tensor(0), scalar=right, name=node.output[0])]
    if left is not None:
        return [b.op(reflected_op, b.tensor(1), scalar=left, name=node.output[0])]
    return [b.op(tensor_op, b.tensor(0), b.tensor(1), name=node.output[0])]


_COMPARE = {"Equal": "broadcast_equal", "Greater": "broadcast_greater",
            "GreaterOrEqual": "broadcast_greater_equal", "Less": "broadcast_lesser",
            "LessOrEqual": "broadcast_lesser_equal"}


@imports(*_COMPARE)
def _compare(b, node):
    """Booleans are held as 0/1 in the inputs' dtype, as MXNet's comparisons give them."""
    return [b.op(_COMPARE[node.op_type], b.tensor(0), b.tensor(1), name=node.output[0])]


@imports("Not")
def _not(b, node):
    return [b.op("_rminus_scalar", b.tensor(0), scalar=1.0, name=node.output[0])]


@imports("Sum")
def _sum(b, node):
    return [b.op("add_n", *[b.tensor(k) for k in range(len(node.input))], name=node.output[0])]


@imports("Clip")
def _clip(b, node):
    big = float(np.finfo(np.float32).max)
    low = float(b.const(1, "min")) if b.has_input(1) else -big
    high = float(b.const(2, "max")) if b.has_input(2) else big
    return [b.op("clip", b.tensor(0), a_min=low, a_max=high, name=node.output[0])]


@imports("Where")
def _where(b, node):
    return [b.op("where", b.tensor(0), b.tensor(1), b.tensor(2), name=node.output[0])]


@imports("Cast")
def _cast(b, node):
    to = b.attr("to")
    if to not in _CAST:
        b.fail(f"cast to ONNX type {to} is not supported")
    return [b.op("cast", b.tensor(0), dtype=_CAST[to], name=node.output[0])]


# -------------------------------------------------------------- layers
@imports("Gemm")
def _gemm(b, node):
    """Gemm(A, B, C) with alpha = beta = 1: a Dense layer (FullyConnected)."""
    if b.attr("alpha", 1.0) != 1.0 or b.attr("beta", 1.0) != 1.0 or b.attr("transA", 0):
        b.fail("only alpha=1, beta=1, transA=0 import (a Dense layer)")
    weight_name = node.input[1]
    if weight_name not in b.constants:
        b.fail("the weight (input B) must be an initializer")
    weight = b.constants[weight_name]
    if weight.ndim != 2:
        b.fail(f"the weight must be 2-D, got shape {weight.shape}")
    if not b.attr("transB", 0):               # FullyConnected keeps the weight as (out, in)
        weight = np.ascontiguousarray(weight.T)
        weight_name = f"{weight_name}_transposed"
        b.constants[weight_name] = weight
        node.input[1] = weight_name
    bias = []
    if b.has_input(2):
        c = b.constants.get(node.input[2])
        if c is None or c.shape != (weight.shape[0],):
            b.fail("the bias (input C) must be an initializer of shape (N,)")
        bias = [b.tensor(2)]
    out = b.op("FullyConnected", b.tensor(0), b.tensor(1), *bias, num_hidden=weight.shape[0],
               no_bias=not bias, flatten=True, name=node.output[0])
    return [out]


@imports("MatMul")
def _matmul(b, node):
    """A 2-D right-hand side: dot (any left rank). Two 3-D arrays: batch_dot."""
    left, right = b.rank(0), b.rank(1)
    if right == 2:
        return [b.op("dot", b.tensor(0), b.tensor(1), name=node.output[0])]
    if left == right == 3:
        return [b.op("batch_dot", b.tensor(0), b.tensor(1), name=node.output[0])]
    b.fail(f"MatMul of a {left}-D and a {right}-D array is not supported")


def _symmetric_pads(b, n):
    pads = list(b.attr("pads", [0] * (2 * n)))
    if b.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        b.fail(f"auto_pad={b.attr('auto_pad')!r} is not supported; give explicit pads")
    if len(pads) != 2 * n or pads[:n] != pads[n:]:
        b.fail(f"pads {pads} are not the same at both ends of each axis (straightdope "
               f"pads symmetrically)")
    return tuple(pads[:n])


@imports("Conv")
def _conv(b, node):
    weight = b.const(1, "weight")
    if not 3 <= weight.ndim <= 5:
        b.fail(f"the weight must have 3 to 5 dims (filters, channels, kernel), got shape "
               f"{weight.shape}")
    n = weight.ndim - 2
    kernel = tuple(b.attr("kernel_shape", weight.shape[2:]))
    attrs = dict(kernel=kernel, stride=tuple(b.attr("strides", [1] * n)),
                 dilate=tuple(b.attr("dilations", [1] * n)), pad=_symmetric_pads(b, n),
                 num_filter=weight.shape[0], num_group=b.attr("group", 1),
                 no_bias=not b.has_input(2))
    bias = [b.tensor(2)] if b.has_input(2) else []
    return [b.op("Convolution", b.tensor(0), b.tensor(1), *bias, name=node.output[0], **attrs)]


@imports("ConvTranspose")
def _conv_transpose(b, node):
    """Deconvolution: the same weight layout; output_padding is MXNet's adj."""
    weight = b.const(1, "weight")
    if not 3 <= weight.ndim <= 5:
        b.fail(f"the weight must have 3 to 5 dims (channels, filters, kernel), got shape "
               f"{weight.shape}")
    if b.attr("output_shape") is not None:
        b.fail("output_shape is not supported; give pads and output_padding")
    n, group = weight.ndim - 2, b.attr("group", 1)
    attrs = dict(kernel=tuple(b.attr("kernel_shape", weight.shape[2:])),
                 stride=tuple(b.attr("strides", [1] * n)),
                 dilate=tuple(b.attr("dilations", [1] * n)), pad=_symmetric_pads(b, n),
                 adj=tuple(b.attr("output_padding", [0] * n)),
                 num_filter=weight.shape[1] * group, num_group=group,
                 no_bias=not b.has_input(2))
    bias = [b.tensor(2)] if b.has_input(2) else []
    return [b.op("Deconvolution", b.tensor(0), b.tensor(1), *bias, name=node.output[0],
                 **attrs)]


@imports("MaxPool", "AveragePool")
def _pool(b, node):
    kernel = tuple(b.attr("kernel_shape"))
    n = len(kernel)
    if any(d != 1 for d in b.attr("dilations", [1] * n)) or b.attr("storage_order", 0):
        b.fail("dilated pooling and storage_order=1 are not supported")
    if len(node.output) > 1 and node.output[1]:
        b.fail("the Indices output of MaxPool is not supported")
    if b.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        b.fail(f"auto_pad={b.attr('auto_pad')!r} is not supported; give explicit pads")
    kind = "max" if node.op_type == "MaxPool" else "avg"
    stride = tuple(b.attr("strides", [1] * n))
    pads = list(b.attr("pads", [0] * (2 * n)))
    if len(pads) != 2 * n:
        b.fail(f"pads {pads} needs {2 * n} entries for a {n}-D kernel")
    include = bool(b.attr("count_include_pad", 0))
    data, pad, convention = _pool_windows(b, kind, kernel, stride, pads, include)
    return [b.op("Pooling", data, kernel=kernel, pool_type=kind, stride=stride, pad=pad,
                 pooling_convention=convention, count_include_pad=include,
                 name=node.output[0])]


def _onnx_pool_size(size, k, s, begin, end, ceil_mode):
    """The number of windows ONNX (its spec, reference evaluator and ONNX Runtime) makes
    on one axis: with ceil_mode=1, a last window that would start in the end padding is
    dropped."""
    span = size + begin + end - k
    count = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (count - 1) * s >= size + begin:
        count -= 1
    return count


def _pool_windows(b, kind, kernel, stride, pads, include):
    """(data, pad, pooling_convention) for our Pooling to make ONNX's windows.

    Ours pad both ends by `pad`, then 'valid' rounds the window count down and 'full' up;
    an average that counts the padding is divided by the whole window, where ONNX divides
    a last window reaching past its padded input by less. Uneven pads are made by a pad
    op first (-inf for max, 0 for an average that counts them)."""
    from ..ops.nn import conv_out_size
    n, ceil_mode = len(kernel), bool(b.attr("ceil_mode", 0))
    begin, end = pads[:n], pads[n:]
    if any(p >= k for p, k in zip(begin + end, kernel + kernel)):
        b.fail(f"pads {pads} are not all smaller than the kernel {list(kernel)}, as ONNX "
               f"requires")
    if begin == end and (not ceil_mode or (
            all(p + s <= k for p, s, k in zip(begin, stride, kernel))
            and (kind == "max" or not include))):
        # no window can start in the end padding: the same windows whatever the size
        return b.tensor(0), tuple(begin), "full" if ceil_mode else "valid"
    shape = b.shape(0)
    sizes = None if shape is None or len(shape) != n + 2 else shape[2:]
    if sizes is None or None in sizes:
        b.fail(f"pads {pads} with ceil_mode={int(ceil_mode)} make windows that depend on the "
               f"input's spatial size, which is not known here (input shape {shape}); "
               f"declare the graph input's spatial dims")
    want = [_onnx_pool_size(h, k, s, p, q, ceil_mode)
            for h, k, s, p, q in zip(sizes, kernel, stride, begin, end)]
    padded = begin != end and (kind == "max" or include)
    ours = [0] * n if padded else begin          # our pads after the optional pad op
    width = [h + p + q if padded else h for h, p, q in zip(sizes, begin, end)]
    for convention in ("valid", "full"):
        try:
            got = [conv_out_size(h, k, s, p, 1, convention == "full")
                   for h, k, s, p in zip(width, kernel, stride, ours)]
        except OpError:
            continue
        inside = all((o - 1) * s + k <= h + p + q
                     for o, s, k, h, p, q in zip(got, stride, kernel, sizes, begin, end))
        if got == want and (kind == "max" or not include or inside):
            if not padded:
                return b.tensor(0), tuple(begin), convention
            fill = -np.inf if kind == "max" else 0.0
            width = [0, 0, 0, 0] + [v for p, q in zip(begin, end) for v in (p, q)]
            data = b.op("pad", b.tensor(0), mode="constant", pad_width=tuple(width),
                        constant_value=fill, name=f"{b.node.output[0]}_padded")
            return data, (0,) * n, convention
    b.fail(f"pads {pads}, strides {list(stride)} and ceil_mode={int(ceil_mode)} on spatial "
           f"size {tuple(sizes)} make {want} windows that straightdope's Pooling cannot "
           f"make (it divides every average that counts the padding by the whole window, "
           f"where ONNX divides a last window reaching past the padded input by less, and "
           f"an average over uneven pads that does not count them has no translation)")


@imports("GlobalMaxPool", "GlobalAveragePool")
def _global_pool(b, node):
    kind = "max" if node.op_type == "GlobalMaxPool" else "avg"
    return [b.op("Pooling", b.tensor(0), pool_type=kind, global_pool=True, kernel=(1, 1),
                 name=node.output[0])]


@imports("BatchNormalization")
def _batch_norm(b, node):
    if b.attr("training_mode", 0) or len([o for o in node.output if o]) > 1:
        b.fail("only inference BatchNormalization (one output) imports")
    inputs = [b.tensor(k) for k in range(5)]
    return [b.op("BatchNorm", *inputs, eps=b.attr("epsilon", 1e-5),
                 momentum=b.attr("momentum", 0.9), fix_gamma=False, use_global_stats=True,
                 name=node.output[0])]


@imports("LayerNormalization")
def _layer_norm(b, node):
    if b.attr("axis", -1) != -1 or not b.has_input(2) or len(node.output) > 1:
        b.fail("only LayerNormalization over the last axis (axis=-1) with a bias and one "
               "output imports")
    return [b.op("LayerNorm", b.tensor(0), b.tensor(1), b.tensor(2), axis=-1,
                 eps=b.attr("epsilon", 1e-5), name=node.output[0])]


@imports("Gather")
def _gather(b, node):
    """Rows of a constant 2-D table: an Embedding layer."""
    table = b.constants.get(node.input[0])
    if b.attr("axis", 0) != 0 or table is None or table.ndim != 2 or not table.shape[0]:
        b.fail("only Gather of rows (axis 0) from a 2-D initializer with rows imports (an "
               "Embedding)")
    weight = b.tensor(0)
    return [b.op("Embedding", b.tensor(1), weight, input_dim=table.shape[0],
                 output_dim=table.shape[1], dtype=table.dtype.name, name=node.output[0])]


# -------------------------------------------------------------- shapes
@imports("Flatten")
def _flatten(b, node):
    if b.attr("axis", 1) != 1:
        b.fail(f"only Flatten(axis=1) imports, got axis={b.attr('axis')}")
    return [b.op("Flatten", b.tensor(0), name=node.output[0])]


@imports("Reshape")
def _reshape(b, node):
    if node.input[1] in b.shape_of:
        return [b.op("reshape_like", b.tensor(0), b.shape_of[node.input[1]], name=node.output[0])]
    if node.input[1] in b.dims:           # a dim of the data known only at run time: code 0
        shape = []
        for k, d in enumerate(b.dims[node.input[1]].reshape(-1)):
            if isinstance(d, Dim) and (d.name, d.axis) != (node.input[0], k):
                b.fail(f"the target shape's dim {k} is {d}, known only at run time; only "
                       f"the data's own dim at the same place imports (MXNet's code 0)")
            shape.append(0 if isinstance(d, Dim) else int(d))
    else:
        shape = [int(d) for d in b.const(1, "shape").reshape(-1)]
    if b.attr("allowzero", 0) and 0 in shape:
        b.fail("allowzero=1 with a 0 in the shape (an empty dim) is not supported")
    if any(d < -1 for d in shape):
        b.fail(f"bad target shape {shape}")
    return [b.op("reshape", b.tensor(0), shape=tuple(shape), name=node.output[0])]


@imports("Transpose")
def _transpose(b, node):
    perm = b.attr("perm")
    shape = b.const(0, "data").shape if b.is_const(0) else b.shape(0)
    if perm is not None and shape is not None and sorted(perm) != list(range(len(shape))):
        b.fail(f"perm {list(perm)} is not an order of the {len(shape)} axes of its input")
    if b.is_const(0):               # a transposed weight: transpose the values, once, here
        b.constants[node.output[0]] = np.ascontiguousarray(
            np.transpose(b.const(0, "data"), perm or None))
        return None
    return [b.op("transpose", b.tensor(0), axes=tuple(perm or ()), name=node.output[0])]


@imports("Concat")
def _concat(b, node):
    inputs = [b.tensor(k) for k in range(len(node.input))]
    (axis,) = b.check_axes([b.attr("axis")], what="axis")
    return [b.op("concat", *inputs, dim=axis, name=node.output[0])]


@imports("Unsqueeze")
def _unsqueeze(b, node):
    axes = b.axes()
    if not axes:
        b.fail("Unsqueeze needs axes")
    axes = b.check_axes(axes, extra=len(axes))
    if any(a < 0 for a in axes):
        b.fail(f"axes {axes}: only non-negative axes import (or give the input's shape)")
    out = b.tensor(0)
    b.unsqueezed[node.output[0]] = (out, sorted(axes))
    for k, axis in enumerate(sorted(axes)):
        out = b.op("expand_dims", out, axis=axis,
                   name=node.output[0] if k == len(axes) - 1 else f"{node.output[0]}_{k}")
    return [out]


@imports("Squeeze")
def _squeeze(b, node):
    """Drop axes of length 1 (all of them without axes); another length is an error, here
    when the shape is known, else at run time."""
    axes = b.axes()
    shape = b.shape(0)
    if axes and shape is not None:
        rank = len(shape)
        if any(not -rank <= a < rank for a in axes):
            b.fail(f"axes {axes} are outside the {rank} axes of its input")
        wrong = [a for a in axes if shape[a] not in (1, None)]
        if wrong:
            b.fail(f"axes {wrong} of input shape {shape} are not of length 1; only axes of "
                   f"length 1 can be squeezed")
    return [b.op("squeeze", b.tensor(0), axis=tuple(axes) if axes else None,
                 name=node.output[0])]


@imports("Slice")
def _slice(b, node):
    starts = [int(v) for v in b.const(1, "starts").reshape(-1)]
    ends = [int(v) for v in b.const(2, "ends").reshape(-1)]
    rank = b.rank(0)
    axes = [int(v) for v in b.const(3, "axes").reshape(-1)] if b.has_input(3) \
        else list(range(len(starts)))
    steps = [int(v) for v in b.const(4, "steps").reshape(-1)] if b.has_input(4) \
        else [1] * len(starts)
    if not starts or not len(starts) == len(ends) == len(axes) == len(steps):
        b.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must be "
               f"non-empty and of one length")
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        b.fail(f"axes {axes} are not distinct axes of its {rank}-D input")
    if 0 in steps:
        b.fail(f"steps {steps} contain 0")
    axes = [a % rank for a in axes]
    big = 2 ** 62
    begin, end, step = [None] * rank, [None] * rank, [None] * rank
    for a, s, e, t in zip(axes, starts, ends, steps):
        begin[a] = None if (t > 0 and s == 0) or (t < 0 and s == -1) else s
        end[a] = None if abs(e) >= big else e
        step[a] = t
    if len(axes) == 1 and steps[0] == 1:
        return [b.op("slice_axis", b.tensor(0), axis=axes[0], begin=starts[0],
                     end=end[axes[0]], name=node.output[0])]
    return [b.op("slice", b.tensor(0), begin=tuple(begin), end=tuple(end), step=tuple(step),
                 name=node.output[0])]


@imports("Pad")
def _pad(b, node):
    """Constant pads (ONNX lists all begins, then all ends) around any axes."""
    mode = b.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        b.fail(f"mode {mode!r} is not supported (constant, edge and reflect are)")
    pads = [int(v) for v in b.const(1, "pads").reshape(-1)]
    rank = b.rank(0)
    axes = [int(a) for a in b.const(3, "axes").reshape(-1)] if b.has_input(3) \
        else list(range(rank))
    if len(pads) != 2 * len(axes) or any(p < 0 for p in pads) \
            or any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) \
            != len(axes):
        b.fail(f"pads {pads} for axes {axes} of a {rank}-D input: need two non-negative "
               f"pads per distinct axis")
    width = [0] * (2 * rank)
    for k, a in enumerate(axes):
        width[2 * (a % rank)], width[2 * (a % rank) + 1] = pads[k], pads[len(axes) + k]
    value = 0.0
    if b.has_input(2):
        fill = b.const(2, "constant_value").reshape(-1)
        if fill.size != 1:
            b.fail(f"constant_value must hold one number, got {fill.size}")
        value = float(fill[0])
    return [b.op("pad", b.tensor(0), mode=mode, pad_width=tuple(width), constant_value=value,
                 name=node.output[0])]


@imports("Split")
def _split(b, node):
    n = len(node.output)
    if b.has_input(1):
        sizes = b.const(1, "split").reshape(-1)
        if len(set(sizes.tolist())) != 1:
            b.fail(f"unequal split sizes {sizes.tolist()} are not supported")
    (axis,) = b.check_axes([b.attr("axis", 0)], what="axis")
    out = b.op("split", b.tensor(0), num_outputs=n, axis=axis, name=node.output[0])
    return [out[k] for k in range(n)]


@imports("GatherElements")
def _gather_elements(b, node):
    """One element per row along `axis`, the index given with that axis unsqueezed: pick."""
    axis = b.attr("axis", 0)
    source, axes = b.unsqueezed.get(node.input[1], (None, None))
    if source is None or axes != [axis] or axis < 0:
        b.fail("only GatherElements whose indices come from Unsqueeze on the same "
               "(non-negative) axis imports (MXNet's pick)")
    return [b.op("pick", b.tensor(0), source, axis=axis, keepdims=True, name=node.output[0])]


@imports("Expand")
def _expand(b, node):
    if node.input[1] in b.shape_of:
        return [b.op("broadcast_like", b.tensor(0), b.shape_of[node.input[1]], name=node.output[0])]
    dims = b.dims[node.input[1]].reshape(-1) if node.input[1] in b.dims \
        else b.const(1, "shape").reshape(-1)
    shape = [1 if isinstance(d, Dim) else int(d) for d in dims]     # run-time dims later
    if any(d < 1 for d in shape) or math.prod(shape) > MAX_EXPAND_ELEMENTS:
        b.fail(f"target shape {shape} is empty, negative or larger than "
               f"{MAX_EXPAND_ELEMENTS} elements")
    data, rank = b.tensor(0), b.rank(0)
    if len(shape) > rank:           # ONNX aligns the trailing dims, as NumPy broadcasting
        for k in range(len(shape) - rank):
            data = b.op("expand_dims", data, axis=0, name=f"{node.output[0]}_ranked{k}")
    elif len(shape) < rank:
        shape = [1] * (rank - len(shape)) + shape
        dims = [1] * (rank - len(dims)) + list(dims)
    # a 1 in ONNX's shape keeps the input's dim: MXNet's code for that is 0
    out = b.op("broadcast_to", data, shape=tuple(0 if d == 1 else d for d in shape),
               name=f"{node.output[0]}_fixed" if any(isinstance(d, Dim) for d in dims)
               else node.output[0])
    return [_run_time_dims(b, out, dims, node.output[0])]


def _run_time_dims(b, data, dims, name):
    """`data` broadcast along each axis whose target is a run-time Dim, to that dim."""
    by_value = {}
    for k, d in enumerate(dims):
        if isinstance(d, Dim):
            by_value.setdefault(d.name, []).append((k, d.axis))
    for n, (value, pairs) in enumerate(by_value.items()):
        data = b.op("broadcast_like", data, b.value(value),
                    lhs_axes=tuple(k for k, _ in pairs), rhs_axes=tuple(a for _, a in pairs),
                    name=name if n == len(by_value) - 1 else f"{name}_like{n}")
    return data


@imports("ConstantOfShape")
def _constant_of_shape(b, node):
    """Of a shape with dims known only at run time (the rest are constants, folded):
    the value broadcast along those dims, from the values they belong to."""
    if node.input[0] in b.shape_of:
        like = b.shape_of[node.input[0]]
        value = b.attr("value")
        value = 0.0 if value is None else float(np.asarray(value).reshape(-1)[0])
        if value in (0.0, 1.0):
            return [b.op("ones_like" if value else "zeros_like", like, name=node.output[0])]
    if node.input[0] not in b.dims:
        b.fail("its shape is computed by the graph; only shapes known at import (constants, "
               "the graph's own shapes) import")
    dims = b.dims[node.input[0]].reshape(-1)
    value = b.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    fixed = [1 if isinstance(d, Dim) else int(d) for d in dims]
    if any(d < 0 for d in fixed) or math.prod(fixed) > MAX_EXPAND_ELEMENTS:
        b.fail(f"shape {dims.tolist()} is negative or too large")
    base = f"{node.output[0]}_value"
    b.constants[base] = np.full(fixed, value[0], dtype=value.dtype)
    return [_run_time_dims(b, b.value(base), dims, node.output[0])]


@imports("Constant")
def _constant(b, node):
    value = b.attr("value")
    if not isinstance(value, np.ndarray):
        b.fail("only a Constant holding a tensor ('value') imports")
    b.constants[node.output[0]] = value
    return None


# ---------------------------------------------------------- reductions
_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod"}


@imports(*_REDUCE)
def _reduce(b, node):
    axes = b.axes()
    keep = bool(b.attr("keepdims", 1))
    if not axes:
        if b.attr("noop_with_empty_axes", 0):
            return [b.op("identity", b.tensor(0), name=node.output[0])]
        axes = None
    else:
        axes = b.check_axes(axes)
    return [b.op(_REDUCE[node.op_type], b.tensor(0), axis=None if axes is None else tuple(axes),
                 keepdims=keep, name=node.output[0])]


@imports("ReduceL1", "ReduceL2")
def _norm(b, node):
    axes = b.axes()
    if not axes and b.attr("noop_with_empty_axes", 0):
        b.fail("noop_with_empty_axes=1 is not supported")
    axes = b.check_axes(axes) if axes else None
    return [b.op("norm", b.tensor(0), ord=1 if node.op_type == "ReduceL1" else 2,
                 axis=tuple(axes) if axes else None, keepdims=bool(b.attr("keepdims", 1)),
                 name=node.output[0])]


@imports("ArgMax", "ArgMin")
def _argmax(b, node):
    if b.attr("select_last_index", 0):
        b.fail("select_last_index=1 is not supported")
    op = "argmax" if node.op_type == "ArgMax" else "argmin"
    (axis,) = b.check_axes([b.attr("axis", 0)], what="axis")
    index = b.op(op, b.tensor(0), axis=axis, keepdims=bool(b.attr("keepdims", 1)),
                 name=f"{node.output[0]}_float")
    return [b.op("cast", index, dtype="int64", name=node.output[0])]


@imports("OneHot")
def _one_hot(b, node):
    if b.attr("axis", -1) != -1:
        b.fail("only OneHot along the last axis (axis=-1) imports")
    depth = int(b.const(1, "depth").reshape(-1)[0])
    if not 0 < depth <= MAX_EXPAND_ELEMENTS:
        b.fail(f"depth {depth} is not between 1 and {MAX_EXPAND_ELEMENTS}")
    values = b.const(2, "values").reshape(-1)
    return [b.op("one_hot", b.tensor(0), depth=depth, off_value=float(values[0]),
                 on_value=float(values[1]), dtype=values.dtype.name, name=node.output[0])]


# ---------------------------------------------------------- recurrent ops
_RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                        "RNN": ["Tanh"]}


@imports("LSTM", "GRU", "RNN")
def _recurrent(b, node):
    """ONNX's recurrent ops as the graph of our rnn.LSTM/GRU/RNN layer (one loop per
    direction), with the weights put back in our gate order."""
    from ..gluon import rnn
    from .export import _GATE_ORDER
    op = node.op_type
    direction = b.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        b.fail(f"direction {direction!r} is not forward, reverse or bidirectional")
    unsupported = [name for name in ("clip", "activation_alpha", "activation_beta")
                   if b.attr(name) is not None]
    if b.attr("layout", 0):
        unsupported.append("layout=1")
    if op == "LSTM" and (b.attr("input_forget", 0) or b.has_input(7)):
        unsupported.append("input_forget / peepholes (P)")
    if op == "GRU" and not b.attr("linear_before_reset", 0):
        unsupported.append("linear_before_reset=0 (ours applies the reset after the hidden "
                           "projection, linear_before_reset=1)")
    if b.has_input(4):
        unsupported.append("sequence_lens")
    if unsupported:
        b.fail(f"{', '.join(unsupported)} not supported")
    dirs = 2 if direction == "bidirectional" else 1
    activations = list(b.attr("activations", _DEFAULT_ACTIVATIONS[op] * dirs))
    kind = {"LSTM": "lstm", "GRU": "gru"}.get(op)
    if op == "RNN" and activations in (["Relu"] * dirs, ["Tanh"] * dirs):
        kind = "rnn_" + activations[0].lower()
    elif activations != _DEFAULT_ACTIVATIONS[op] * dirs:
        kind = None
    if kind is None:
        b.fail(f"activations {activations} are not supported")
    w, r = b.const(1, "W"), b.const(2, "R")
    gates = _RNN_GATES[op]
    hidden = b.attr("hidden_size", r.shape[-1] if r.ndim == 3 else 0)
    rows = gates * hidden
    bias = b.const(3, "B") if b.has_input(3) else np.zeros((dirs, 2 * rows), w.dtype)
    if w.ndim != 3 or w.shape[:2] != (dirs, rows) or r.shape != (dirs, rows, hidden) \
            or bias.shape != (dirs, 2 * rows):
        b.fail(f"W {w.shape}, R {r.shape} and B {bias.shape} do not fit {dirs} direction(s) "
               f"of {gates} gate(s) of hidden_size {hidden}")
    back = np.argsort(_GATE_ORDER[kind])                # ONNX's gate order -> ours

    def ours(array):
        return np.ascontiguousarray(np.concatenate(
            [array[k * hidden:(k + 1) * hidden] for k in back]))

    params = {}
    for d, side in enumerate("lr"[:dirs]):
        for key, value in (("i2h_weight", w[d]), ("h2h_weight", r[d]),
                           ("i2h_bias", bias[d, :rows]), ("h2h_bias", bias[d, rows:])):
            name = f"{node.name}_{side}0_{key}"
            b.constants[name] = ours(value)
            params[f"{side}0_{key}"] = b.value(name)
    layer = {"lstm": rnn.LSTM, "gru": rnn.GRU}.get(kind, rnn.RNN)(
        hidden, bidirectional=dirs == 2, prefix=f"{node.name}_",
        **({"activation": kind[4:]} if op == "RNN" else {}))
    x = b.tensor(0)
    if direction == "reverse":
        x = b.op("reverse", x, axis=(0,), name=f"{node.name}_reversed")
    with layer.name_scope():
        states = [b.tensor(k) for k in (5, 6)[:2 if op == "LSTM" else 1] if b.has_input(k)]
        if len(states) != (2 if op == "LSTM" else 1):
            states = layer._zero_states(b.sym, x)
        y, last = layer.hybrid_forward(b.sym, x, list(states), **params)
    if direction == "reverse":
        y = b.op("reverse", y, axis=(0,), name=f"{node.name}_y_reversed")
    # ours: (T, N, dirs * hidden); ONNX: (T, dirs, N, hidden)
    y = b.op("transpose", b.op("reshape", y, shape=(0, 0, dirs, hidden),
                               name=f"{node.name}_y_split"), axes=(0, 2, 1, 3),
             name=node.output[0] or f"{node.name}_Y")
    return [y] + list(last)
