"""From a straightdope graph to an ONNX model: one small translator per op.

The graph is first annotated with shapes and dtypes (the compiler's own pass), then
walked in topological order. Each op name maps to a function in `TRANSLATORS`
that appends ONNX nodes computing exactly what the op computes in inference. An op
without a translator, or an attribute value a translator cannot express, stops the
export with an `OnnxExportError` naming the node: never a silently different model.
"""
from __future__ import annotations

import numpy as np

from ..graph.ir import Graph
from ..graph.shapes import annotate
from ..ops import OPS, OpError
from ..ops.elemwise import row_condition_shape, selects_rows

OPSET = 21     # ONNX opset written (Gelu needs 20; ONNX Runtime 1.20+ and ORT Web run it)


class OnnxExportError(ValueError):
    """A graph that cannot be written as an equivalent ONNX model."""


TRANSLATORS: dict = {}


def translates(*op_names):
    """Register a translator: fn(e, node, inputs, outputs) -> None."""
    def register(fn):
        for name in op_names:
            TRANSLATORS[name] = fn
        return fn
    return register


# ------------------------------------------------------------------ emitter
class Emitter:
    """Collects ONNX nodes and constants for one graph; knows every value's shape/dtype."""

    def __init__(self, graph: Graph, varied: Graph | None):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.graph, self.varied = graph, varied
        self.nodes, self.initializers = [], []
        self.taken = {n.name for n in graph.nodes}
        self.node = None                       # the straightdope node being translated

    def fresh(self, hint: str) -> str:
        """A new, unused value name derived from the current node's name."""
        base = f"{self.node.name}_{hint}" if self.node is not None else hint
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}{k}", k + 1
        self.taken.add(name)
        return name

    def add(self, op_type, inputs, outputs=None, **attrs) -> str:
        """Append one ONNX node; returns its (first) output name."""
        outputs = outputs or [self.fresh(op_type.lower())]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs),
                                                name=self.fresh(op_type), **attrs))
        return outputs[0]

    def const(self, value, dtype=None, hint="const") -> str:
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def ints(self, values, hint="ints") -> str:
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), hint=hint)

    # facts about the current node's inputs and outputs
    def in_shape(self, k=0):
        src, out = self.node.inputs[k]
        return self.graph.nodes[src].shapes[out]

    def in_dtype(self, k=0):
        src, out = self.node.inputs[k]
        return self.graph.nodes[src].dtypes[out]

    def out_shape(self, k=0):
        return self.node.shapes[k]

    def out_shape_for_onnx(self, k=0):
        """The output shape as a Reshape/Expand target: -1 marks the one dim that follows
        a dynamic input size (found by annotating the graph a second time, resized)."""
        shape = list(self.node.shapes[k])
        if self.varied is None:
            return shape
        other = self.varied.nodes[self.node.id].shapes[k]
        moving = [a for a, (d1, d2) in enumerate(zip(shape, other)) if d1 != d2]
        if len(moving) > 1:
            self.fail(f"its output shape {tuple(shape)} has {len(moving)} dims that follow "
                      f"the dynamic input sizes; ONNX can infer only one. Export with "
                      f"dynamic=False or fewer dynamic dims (dynamic_input_shapes)")
        for a in moving:
            shape[a] = -1
        return shape

    def out_moving(self, k=0) -> set:
        """The axes of output k whose size follows a dynamic input size."""
        if self.varied is None:
            return set()
        other = self.varied.nodes[self.node.id].shapes[k]
        return {a for a, (d1, d2) in enumerate(zip(self.out_shape(k), other)) if d1 != d2}

    def in_moving(self, k=0) -> set:
        """The axes of input k whose size follows a dynamic input size."""
        if self.varied is None:
            return set()
        src, out = self.node.inputs[k]
        other = self.varied.nodes[src].shapes[out]
        return {a for a, (d1, d2) in enumerate(zip(self.in_shape(k), other)) if d1 != d2}

    def param_of(self, entry):
        """The value of a graph input that is a parameter, else None."""
        src = self.graph.nodes[entry[0]]
        return self.params.get(src.name) if src.is_var else None

    def value_of(self, entry):
        """The ONNX name of an already emitted value (node id, output index)."""
        return self.values[tuple(entry)]

    def fail(self, why):
        node = self.node
        raise OnnxExportError(f"node '{node.name}' ({node.op.name}): {why}")


def _onnx_dtype(dtype):
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# -------------------------------------------------------------- the model
def graph_to_onnx(symbol, params: dict, in_shapes: dict, in_types: dict, dynamic_dims: dict,
                  model_name="straightdope"):
    """Build an onnx.ModelProto. `dynamic_dims` maps an input name to the set of its axes
    that may vary at run time. Four steps: annotate the graph with shapes and dtypes,
    then emit its inputs, its op nodes and its outputs."""
    from onnx import helper

    graph = Graph.from_symbol(symbol, data_names=list(in_shapes))
    shapes, dtypes = _input_facts(graph, params, in_shapes, in_types)
    try:
        annotated = annotate(graph, shapes, dtypes)
    except OpError as err:
        raise OnnxExportError(f"cannot infer the graph's shapes for inputs {in_shapes}: "
                              f"{err}") from None
    varied = _annotate_resized(graph, shapes, dtypes, in_shapes, dynamic_dims)

    e = Emitter(annotated, varied)
    e.params = params
    e.values = values = {}                 # (node id, output index) -> ONNX value name
    inputs = _emit_inputs(e, values, params, dynamic_dims)
    _emit_op_nodes(e, values)
    outputs = _emit_outputs(e, values)
    _drop_unread(e.nodes, {o.name for o in outputs})
    # A parameter no node reads (BatchNorm's gamma under fix_gamma=True) is left out.
    read = {name for node in e.nodes for name in node.input}
    initializers = [t for t in e.initializers if t.name in read]
    onnx_graph = helper.make_graph(e.nodes, model_name, inputs, outputs, initializers)
    model = helper.make_model(onnx_graph, producer_name="straightdope",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 10)      # what ONNX Runtime 1.20+ reads
    return model


def _drop_unread(nodes, outputs):
    """Remove the nodes whose values nothing reads (the input projection that an ONNX
    LSTM node computes itself), walking back from the graph's outputs."""
    read, keep = set(outputs), []
    for node in reversed(nodes):
        if read.intersection(node.output):
            keep.append(node)
            read.update(node.input)
    nodes[:] = keep[::-1]


def _input_facts(graph, params, in_shapes, in_types):
    """Every variable's shape and dtype: parameters from their values, inputs as given.
    A variable that is neither, or an input the graph does not read, is an error."""
    names = set(graph.input_names)
    missing = [n for n in graph.input_names if n not in params and n not in in_shapes]
    if missing:
        raise OnnxExportError(f"the graph's variables {missing} are neither inputs (in_shapes) "
                              f"nor parameters (params); pass their values in params")
    unused = [n for n in in_shapes if n not in names]
    if unused:
        raise OnnxExportError(f"inputs {unused} are not variables of the graph, whose "
                              f"variables are {sorted(names)}")
    shapes = {n: tuple(params[n].shape) for n in names if n in params}
    dtypes = {n: params[n].dtype for n in names if n in params}
    shapes.update(in_shapes)
    dtypes.update(in_types)
    return shapes, dtypes


def _emit_inputs(e, values, params, dynamic_dims) -> list:
    """Parameters become initializers (constants in the file); the rest become graph
    inputs, with a named symbolic size on each dynamic axis."""
    from onnx import helper
    inputs = []
    for node in e.graph.nodes:
        if not node.is_var:
            continue
        values[(node.id, 0)] = node.name
        if node.name in params:
            e.initializers.append(e.numpy_helper.from_array(
                np.ascontiguousarray(params[node.name]), node.name))
        else:
            dims = [f"{node.name}_dim{a}" if a in dynamic_dims.get(node.name, ()) else d
                    for a, d in enumerate(node.shapes[0])]
            inputs.append(helper.make_tensor_value_info(node.name,
                                                        _onnx_dtype(node.dtypes[0]), dims))
    return inputs


def _emit_op_nodes(e, values):
    """Translate each op node in topological order, naming its ONNX outputs."""
    graph = e.graph
    written = set(values.values())         # value names taken by inputs and earlier nodes
    for node in graph.op_nodes:
        e.node = node
        translate = TRANSLATORS.get(node.op.name)
        if translate is None:
            raise OnnxExportError(_no_translation(node))
        used = node.op.visible_count(node.attrs)
        for src, k in graph.outputs:
            if src == node.id:
                used = max(used, k + 1)
        outs = [node.name if k == 0 else f"{node.name}_output{k}" for k in range(used)]
        for k, name in enumerate(outs):
            # ONNX names every value once; an unrolled loop repeats its cell's node names
            if k or name in e.taken - {node.name} or name in written:
                outs[k] = e.fresh(f"output{k}")
        written.update(outs)
        translate(e, node, [values[entry] for entry in node.inputs], outs)
        for k, name in enumerate(outs):
            values[(node.id, k)] = name
    e.node = None


def _emit_outputs(e, values) -> list:
    """The graph's outputs, each under its own name (ONNX forbids an output twice or an
    input as output: an Identity node gives it a new one)."""
    from onnx import helper
    graph, outputs, seen = e.graph, [], set()
    for k, (src, out) in enumerate(graph.outputs):
        name = values[(src, out)]
        node = graph.nodes[src]
        if name in seen or node.is_var:
            name = e.add("Identity", [name], [e.fresh(f"output{k}")])
        seen.add(name)
        dims = list(node.shapes[out])
        if e.varied is not None:
            other = e.varied.nodes[src].shapes[out]
            dims = [d if d == o else f"{name}_dim{a}" for a, (d, o) in enumerate(zip(dims, other))]
        outputs.append(helper.make_tensor_value_info(name, _onnx_dtype(node.dtypes[out]), dims))
    return outputs


def _no_translation(node) -> str:
    """Why a node cannot be exported, and what to do instead."""
    if node.subgraphs:
        return (f"node '{node.name}': op {node.op.name} is control flow (it runs "
                f"{len(node.subgraphs)} subgraph(s)), and exporting loops and branches to "
                f"ONNX (its Loop, Scan and If operators) is not implemented; only the loops "
                f"of the rnn.LSTM, GRU and RNN layers export (as ONNX LSTM, GRU, RNN). For "
                f"a fixed sequence length, build the model from cells and unroll them "
                f"(cell.unroll(length, inputs, merge_outputs=True)): that graph has no loop "
                f"node and exports. Or keep the "
                f"loop: export() writes MXNet's JSON, which SymbolBlock.imports reads back.")
    return (f"node '{node.name}': op {node.op.name} has no ONNX translation; the ops that "
            f"export are listed by straightdope.onnx.export_coverage()")


def _annotate_resized(graph, shapes, dtypes, in_shapes, dynamic_dims):
    """The graph annotated again with every dynamic dim one larger: the dims of a value
    that change are the dims that follow the dynamic inputs. None without dynamic dims.

    A dim that cannot change (all of a Dense layer's input features) makes this fail;
    then only the batch axis (0) is resized, and if even that fails, nothing is."""
    if not any(dynamic_dims.values()):
        return None
    for only_batch in (False, True):
        resized = dict(shapes)
        for name, axes in dynamic_dims.items():
            resized[name] = tuple(d + 1 if a in axes and (a == 0 or not only_batch) else d
                                  for a, d in enumerate(in_shapes[name]))
        try:
            return annotate(graph, resized, dtypes)
        except OpError:
            continue
    return None


# ------------------------------------------------------------ translators
# An op whose registry entry names its ONNX operator (`onnx`) is that operator.
@translates(*(name for name, op in OPS.items() if op.onnx))
def _one_to_one(e, node, x, out):
    e.add(node.op.onnx, x, out)


@translates("Activation")
def _activation(e, node, x, out):
    e.add(OPS[node.attrs["act_type"]].onnx, x, out)


@translates("square")
def _square(e, node, x, out):
    e.add("Mul", [x[0], x[0]], out)


@translates("LeakyReLU")
def _leaky_relu(e, node, x, out):
    kind, slope = node.attrs["act_type"], node.attrs["slope"]
    if kind == "leaky":
        e.add("LeakyRelu", x, out, alpha=slope)
    elif kind == "elu":
        e.add("Elu", x, out, alpha=slope)
    elif kind == "selu":
        from ..ops.elemwise import _SELU_ALPHA, _SELU_LAMBDA
        e.add("Selu", x, out, alpha=_SELU_ALPHA, gamma=_SELU_LAMBDA)
    elif kind == "prelu":                           # gamma spread over data's axes 0, 1
        from ..ops.elemwise import _prelu_gamma_shape
        spread = _prelu_gamma_shape(e.in_shape(1), e.in_shape(0))
        e.add("PRelu", [x[0], e.add("Reshape", [x[1], e.ints(list(spread), "shape")])], out)
    elif kind == "gelu":
        e.add("Gelu", x, out)                       # the exact (erf) form, like MXNet
    else:
        e.fail(f"act_type {kind!r} has no ONNX export here")


_COMPARE = {"equal": "Equal", "not_equal": "Equal", "greater": "Greater",
            "greater_equal": "GreaterOrEqual", "lesser": "Less", "lesser_equal": "LessOrEqual"}


def _compare(e, onnx_op, negate, a, b, out):
    """MXNet's comparisons give 0/1 in the input's dtype; ONNX's give booleans."""
    flag = e.add(onnx_op, [a, b])
    if negate:
        flag = e.add("Not", [flag])
    e.add("Cast", [flag], out, to=_onnx_dtype(e.in_dtype(0)))


@translates(*(f"broadcast_{k}" for k in _COMPARE), *(f"_{k}" for k in _COMPARE))
def _broadcast_compare(e, node, x, out):
    kind = node.op.name.removeprefix("broadcast_").removeprefix("_")
    _compare(e, _COMPARE[kind], kind == "not_equal", x[0], x[1], out)


_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False)}


@translates(*_SCALAR)
def _scalar(e, node, x, out):
    onnx_op, reflected = _SCALAR[node.op.name]
    c = e.const(node.attrs["scalar"], e.in_dtype(0), "scalar")
    e.add(onnx_op, [c, x[0]] if reflected else [x[0], c], out)


@translates(*(f"_{k}_scalar" for k in _COMPARE))
def _scalar_compare(e, node, x, out):
    kind = node.op.name[1:-len("_scalar")]
    c = e.const(node.attrs["scalar"], e.in_dtype(0), "scalar")
    _compare(e, _COMPARE[kind], kind == "not_equal", x[0], c, out)


@translates("add_n", "ElementWiseSum")
def _add_n(e, node, x, out):
    e.add("Sum", x, out)


@translates("clip")
def _clip(e, node, x, out):
    dt = e.in_dtype(0)
    e.add("Clip", [x[0], e.const(node.attrs["a_min"], dt, "min"),
                   e.const(node.attrs["a_max"], dt, "max")], out)


@translates("where")
def _where(e, node, x, out):
    flag = e.add("Cast", [x[0]], to=_onnx_dtype(bool))
    if selects_rows(e.in_shape(0), e.in_shape(1)):       # ONNX broadcasts trailing axes
        flag = e.add("Reshape", [flag, e.ints(row_condition_shape(e.in_shape(1)))])
    e.add("Where", [flag, x[1], x[2]], out)


@translates("Cast", "cast")
def _cast(e, node, x, out):
    e.add("Cast", x, out, to=_onnx_dtype(node.attrs["dtype"]))


# ------------------------------------------------------------- layers
@translates("FullyConnected")
def _fully_connected(e, node, x, out):
    """flatten=True: Gemm on the flattened data. flatten=False: MatMul over the last axis."""
    data, weight = x[0], x[1]
    bias = [] if node.attrs["no_bias"] else [x[2]]
    if node.attrs["flatten"] or len(e.in_shape(0)) == 2:
        if len(e.in_shape(0)) != 2:
            data = e.add("Flatten", [data], axis=1)
        e.add("Gemm", [data, weight] + bias, out, transB=1)
    else:
        wt = e.add("Transpose", [weight], perm=[1, 0])
        if bias:
            e.add("Add", [e.add("MatMul", [data, wt]), bias[0]], out)
        else:
            e.add("MatMul", [data, wt], out)


def _window_attrs(node, kernel, conv=True):
    kernel = tuple(kernel)
    n = len(kernel)

    def get(name, default):
        value = tuple(node.attrs.get(name) or ())
        return list(value) if value else [default] * n

    pads = get("pad", 0)
    attrs = {"kernel_shape": list(kernel), "strides": get("stride", 1), "pads": pads + pads}
    if conv:
        attrs["dilations"] = get("dilate", 1)
    return attrs


@translates("Convolution")
def _convolution(e, node, x, out):
    attrs = _window_attrs(node, node.attrs["kernel"])
    e.add("Conv", x, out, group=node.attrs["num_group"], **attrs)


@translates("Deconvolution")
def _deconvolution(e, node, x, out):
    """ConvTranspose: the same weight layout (in, out / groups, kernel...); adj is ONNX's
    output_padding. A target_shape is written only if the attributes give it anyway."""
    a = node.attrs
    attrs = _window_attrs(node, a["kernel"])
    adj = list(a["adj"] or ()) or [0] * len(a["kernel"])
    made = [(n - 1) * s - 2 * p + d * (k - 1) + 1 + j for n, k, s, p, d, j in zip(
        e.in_shape()[2:], attrs["kernel_shape"], attrs["strides"],
        attrs["pads"][:len(adj)], attrs["dilations"], adj)]
    if a["target_shape"] and list(a["target_shape"]) != made:
        e.fail(f"target_shape {tuple(a['target_shape'])} differs from the size {tuple(made)} "
               f"that kernel, stride, pad and adj give; give pad and adj instead")
    e.add("ConvTranspose", x, out, group=a["num_group"], output_padding=adj, **attrs)


@translates("Pooling")
def _pooling(e, node, x, out):
    kind, a = node.attrs["pool_type"], node.attrs
    if a["global_pool"]:
        if kind == "sum":
            e.add("ReduceSum", [x[0], e.ints([2, 3])], out, keepdims=1)
        else:
            e.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", x, out)
        return
    if a["pooling_convention"] == "same":
        e.fail("pooling_convention='same' (MXNet's 1-D windows cut at the end) is not "
               "written to ONNX here; pool with pooling_convention='full' instead")
    attrs = _window_attrs(node, a["kernel"], conv=False)
    empty = [0] * len(a["kernel"])
    if a["pooling_convention"] == "full":
        empty = _full_convention(e, kind, a["count_include_pad"], attrs)
    pooled = out if not any(empty) else [e.fresh("pooled")]
    include = int(a["count_include_pad"] or kind == "sum")
    if kind == "max":
        e.add("MaxPool", x, pooled, **attrs)
    elif kind == "avg":
        e.add("AveragePool", x, pooled, count_include_pad=include, **attrs)
    else:                                              # sum = mean over the full window * size
        mean = e.add("AveragePool", x, count_include_pad=1, **attrs)
        size = e.const(float(np.prod(a["kernel"])), e.in_dtype(0), "window_size")
        e.add("Mul", [mean, size], pooled)
    if any(empty):             # the last windows hold padding only: -inf for max, else 0
        fill = e.const(-np.inf if kind == "max" else 0, e.in_dtype(0), "pad_value")
        e.add("Pad", [pooled[0], e.ints([0] * (2 + len(empty)) + [0, 0] + empty, "pads"),
                      fill], out, mode="constant")


def _full_convention(e, kind, count_include_pad, attrs):
    """pooling_convention='full' (the last, partial windows kept) in ONNX terms: sets the
    pads in `attrs` and returns how many last windows per axis hold padding only.

    ONNX's ceil_mode=1 drops a last window that starts in the end padding, which this
    convention keeps, and divides a last average by the part of the window that lies in
    the padded input, where we divide by the whole window. So the file gets explicit end
    pads that make exactly our windows, with ceil_mode=0. ONNX Runtime wants every pad
    smaller than the window (and gives -3.4e38, not -inf, for a window of padding only):
    windows of padding only are added after the pooling, by a Pad node."""
    n = len(attrs["kernel_shape"])
    kernel, stride = attrs["kernel_shape"], attrs["strides"]
    begin = attrs["pads"][:n]
    if any(2 + a in e.in_moving() for a in range(n)):
        # The size varies at run time: ceil_mode=1 is exact only when no window can start
        # in the end padding (begin + stride <= kernel) and no average is divided.
        if all(p + s <= k for p, s, k in zip(begin, stride, kernel)) \
                and (kind == "max" or (kind == "avg" and not count_include_pad)):
            attrs["ceil_mode"] = 1
            return [0] * n
        e.fail(f"pooling_convention='full' over a spatial size that varies at run time "
               f"cannot be written so that ONNX makes the same windows (kernel {kernel}, "
               f"stride {stride}, pad {begin}); export with fixed spatial sizes "
               f"(dynamic_input_shapes with None only for the batch)")
    sizes, outs = e.in_shape()[2:], e.out_shape()[2:]
    # windows holding input: those that start before its end
    real = [min(o, -(-(h + p) // s)) for o, h, p, s in zip(outs, sizes, begin, stride)]
    if real != list(outs) and kind == "avg" and not count_include_pad:
        e.fail(f"a last window (kernel {kernel}, stride {stride}, pad {begin}, input "
               f"{tuple(sizes)}) holds padding only, whose average is 0/0 here; ONNX "
               f"cannot make that window. Use less padding or pooling_convention='valid'")
    attrs["pads"] = list(begin) + [max((r - 1) * s + k - h - p, 0) for r, s, k, h, p
                                   in zip(real, stride, kernel, sizes, begin)]
    return [o - r for o, r in zip(outs, real)]


@translates("BatchNorm")
def _batch_norm(e, node, x, out):
    """Inference: normalise with the running mean/variance (MXNet's use_global_stats).
    fix_gamma=True means gamma is 1 whatever the parameter holds, as in MXNet."""
    if node.attrs["axis"] % len(e.in_shape(0)) != 1:
        e.fail(f"ONNX BatchNormalization normalises axis 1, this node axis "
               f"{node.attrs['axis']}; transpose the data instead")
    if len(out) > 1:
        e.fail("only the normalised output can be exported (output_mean_var / the running "
               "statistics are training-time outputs)")
    gamma = x[1]
    if node.attrs["fix_gamma"]:
        channels = e.in_shape(0)[1]
        gamma = e.const(np.ones(channels), e.in_dtype(0), "fixed_gamma")
    e.add("BatchNormalization", [x[0], gamma, x[2], x[3], x[4]], out,
          epsilon=node.attrs["eps"], momentum=node.attrs["momentum"])


@translates("LayerNorm")
def _layer_norm(e, node, x, out):
    rank = len(e.in_shape(0))
    if node.attrs["axis"] % rank != rank - 1:
        e.fail(f"only LayerNorm over the last axis exports (ONNX LayerNormalization "
               f"normalises every axis from `axis` on), this node uses axis "
               f"{node.attrs['axis']} of {rank}")
    if len(out) > 1:
        e.fail("output_mean_var outputs cannot be exported")
    e.add("LayerNormalization", x, out, axis=-1, epsilon=node.attrs["eps"])


@translates("Dropout")
def _dropout(e, node, x, out):
    """Inference: Dropout passes data through unchanged (mode='always' would not)."""
    if node.attrs["mode"] == "always":
        e.fail("mode='always' drops units at inference too; ONNX inference graphs cannot "
               "draw random masks the same way. Use mode='training' to export")
    if len(out) > 1:
        e.fail("the dropout mask is a training-time output")
    e.add("Identity", x, out)


@translates("Embedding")
def _embedding(e, node, x, out):
    """Rows of the weight picked by index; indices are clipped to the table, as here."""
    index = e.add("Cast", [x[0]], to=_onnx_dtype(np.int64))
    index = e.add("Clip", [index, e.const(0, np.int64, "first_row"),
                           e.const(node.attrs["input_dim"] - 1, np.int64, "last_row")])
    e.add("Gather", [x[1], index], out, axis=0)


@translates("softmax", "log_softmax")
def _softmax(e, node, x, out):
    data = x[0]
    if node.attrs["temperature"] != 1.0:
        t = e.const(node.attrs["temperature"], e.in_dtype(0), "temperature")
        data = e.add("Div", [data, t])
    e.add("Softmax" if node.op.name == "softmax" else "LogSoftmax", [data], out,
          axis=node.attrs["axis"])


@translates("Flatten", "flatten")
def _flatten(e, node, x, out):
    e.add("Flatten", x, out, axis=1)


# -------------------------------------------------------------- shapes
@translates("Reshape", "reshape")
def _reshape(e, node, x, out):
    """MXNet's codes 0 (copy) and -1 (infer) mean the same in ONNX; the other codes are
    resolved from the known shapes."""
    code = list(node.attrs["shape"])
    if node.attrs["reverse"] or any(c < -1 for c in code) or not code:   # (target_shape)
        code = e.out_shape_for_onnx()
    e.add("Reshape", [x[0], e.ints(code, "shape")], out)


@translates("transpose")
def _transpose(e, node, x, out):
    axes = list(node.attrs["axes"]) or list(range(len(e.in_shape(0))))[::-1]
    e.add("Transpose", x, out, perm=axes)


@translates("concat", "Concat")
def _concat(e, node, x, out):
    e.add("Concat", x, out, axis=node.attrs["dim"])


@translates("expand_dims")
def _expand_dims(e, node, x, out):
    e.add("Unsqueeze", [x[0], e.ints([node.attrs["axis"]], "axes")], out)


@translates("slice_axis")
def _slice_axis(e, node, x, out):
    a = node.attrs
    end = np.iinfo(np.int64).max if a["end"] is None else a["end"]
    e.add("Slice", [x[0], e.ints([a["begin"]], "starts"), e.ints([end], "ends"),
                    e.ints([a["axis"]], "axes")], out)


@translates("slice")
def _slice(e, node, x, out):
    a, big = node.attrs, np.iinfo(np.int64).max
    step = list(a["step"] or ())
    starts, ends, steps = [], [], []
    for k in range(len(a["begin"])):
        s = step[k] if k < len(step) and step[k] is not None else 1
        b = a["begin"][k]
        t = a["end"][k] if k < len(a["end"]) else None
        starts.append((0 if s > 0 else -1) if b is None else b)
        ends.append((big if s > 0 else -big) if t is None else t)
        steps.append(s)
    e.add("Slice", [x[0], e.ints(starts, "starts"), e.ints(ends, "ends"),
                    e.ints(range(len(starts)), "axes"), e.ints(steps, "steps")], out)


@translates("reverse", "flip")
def _reverse(e, node, x, out):
    axes = [a % len(e.in_shape(0)) for a in node.attrs["axis"]]
    n = len(axes)
    e.add("Slice", [x[0], e.ints([-1] * n, "starts"), e.ints([-2 ** 63] * n, "ends"),
                    e.ints(axes, "axes"), e.ints([-1] * n, "steps")], out)


@translates("split", "SliceChannel")
def _split(e, node, x, out):
    a = node.attrs
    n = a["num_outputs"]
    pieces = out if not a["squeeze_axis"] else [e.fresh(f"piece{k}") for k in range(n)]
    pieces = pieces + [e.fresh(f"unused{k}") for k in range(len(pieces), n)]
    e.add("Split", x, pieces, axis=a["axis"], num_outputs=n)
    if a["squeeze_axis"]:
        for piece, name in zip(pieces, out):
            e.add("Squeeze", [piece, e.ints([a["axis"]], "axes")], [name])


@translates("pad", "Pad")
def _pad(e, node, x, out):
    width = list(node.attrs["pad_width"])
    pads = width[0::2] + width[1::2]             # ONNX: every begin, then every end
    fill = e.const(node.attrs["constant_value"], e.in_dtype(0), "pad_value")
    e.add("Pad", [x[0], e.ints(pads, "pads"), fill], out, mode=node.attrs["mode"])


@translates("broadcast_to")
def _broadcast_to(e, node, x, out):
    """ONNX Expand has no -1: a dim that the input already has is written as 1 (Expand
    keeps the input's size there, whatever it is at run time); the dims broadcast from 1
    are written as numbers, which must then not follow a dynamic input size."""
    target, moving = e.out_shape(), e.out_moving()
    source = (1,) * (len(target) - len(e.in_shape())) + tuple(e.in_shape())
    grown = [a for a, (d, t) in enumerate(zip(source, target)) if d != t]
    if any(a in moving for a in grown):
        e.fail(f"it broadcasts {tuple(e.in_shape())} to {tuple(target)} along axes "
               f"{sorted(set(grown) & moving)}, whose size follows a dynamic input size; "
               f"ONNX Expand needs that size as a number. Export with dynamic=False, or "
               f"broadcast with broadcast_like from the input that has the size")
    shape = [t if a in grown else 1 for a, t in enumerate(target)]
    e.add("Expand", [x[0], e.ints(shape, "shape")], out)


@translates("broadcast_like")
def _broadcast_like(e, node, x, out):
    e.add("Expand", [x[0], e.add("Shape", [x[1]])], out)


@translates("reshape_like")
def _reshape_like(e, node, x, out):
    if any(v is not None for v in node.attrs.values()):     # part of rhs's shape: known
        e.add("Reshape", [x[0], e.const(node.shapes[0], np.int64)], out)
    else:
        e.add("Reshape", [x[0], e.add("Shape", [x[1]])], out)


@translates("zeros_like", "ones_like")
def _fill_like(e, node, x, out):
    value = e.numpy_helper.from_array(
        np.array([node.op.name == "ones_like"], dtype=e.in_dtype(0)))
    e.add("ConstantOfShape", [e.add("Shape", x)], out, value=value)


# ----------------------------------------------------------- reductions
_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


@translates(*_REDUCE)
def _reduce(e, node, x, out):
    a, rank = node.attrs, len(e.in_shape(0))
    axes = None if a["axis"] is None else sorted(k % rank for k in a["axis"])
    if a["exclude"] and axes is not None:
        axes = [k for k in range(rank) if k not in axes]
    inputs = [x[0]] if axes is None else [x[0], e.ints(axes, "axes")]
    e.add(_REDUCE[node.op.name], inputs, out, keepdims=int(a["keepdims"]))


@translates("norm")
def _norm(e, node, x, out):
    a, rank = node.attrs, len(e.in_shape(0))
    axes = None if a["axis"] is None else sorted(k % rank for k in a["axis"])
    inputs = [x[0]] if axes is None else [x[0], e.ints(axes, "axes")]
    reduce_op = "ReduceL1" if a["ord"] == 1 else "ReduceL2"
    if a["out_dtype"] is None:
        e.add(reduce_op, inputs, out, keepdims=int(a["keepdims"]))
    else:
        e.add("Cast", [e.add(reduce_op, inputs, keepdims=int(a["keepdims"]))], out,
              to=_onnx_dtype(np.dtype(a["out_dtype"])))


@translates("argmax", "argmin")
def _argmax(e, node, x, out):
    """Indices come back as floats (the input's dtype), as in MXNet."""
    data, axis, keep = x[0], node.attrs["axis"], int(node.attrs["keepdims"])
    if axis is None:                                   # over all elements, flattened
        data, axis, keep = e.add("Reshape", [data, e.ints([-1], "flat")]), 0, 0
    index = e.add("ArgMax" if node.op.name == "argmax" else "ArgMin", [data], axis=axis,
                  keepdims=keep, select_last_index=0)
    e.add("Cast", [index], out, to=_onnx_dtype(e.in_dtype(0)))


@translates("dot")
def _dot(e, node, x, out):
    a, (lhs, rhs) = node.attrs, x
    if len(e.in_shape(1)) != 2 or (a["transpose_a"] and len(e.in_shape(0)) != 2):
        e.fail(f"dot of shapes {e.in_shape(0)} and {e.in_shape(1)} contracts other axes than "
               f"ONNX MatMul; only a 2-D right-hand side exports")
    if a["transpose_a"]:
        lhs = e.add("Transpose", [lhs], perm=[1, 0])
    if a["transpose_b"]:
        rhs = e.add("Transpose", [rhs], perm=[1, 0])
    e.add("MatMul", [lhs, rhs], out)


@translates("batch_dot")
def _batch_dot(e, node, x, out):
    lhs, rhs = x
    if node.attrs["transpose_a"]:
        lhs = e.add("Transpose", [lhs], perm=[0, 2, 1])
    if node.attrs["transpose_b"]:
        rhs = e.add("Transpose", [rhs], perm=[0, 2, 1])
    e.add("MatMul", [lhs, rhs], out)


@translates("pick")
def _pick(e, node, x, out):
    """data[..., index, ...] along `axis`: GatherElements with the index as int64."""
    if node.attrs["mode"] != "clip":
        e.fail("mode 'wrap' has no ONNX export here: wrap the index (index % size) first")
    axis = node.attrs["axis"] % len(e.in_shape(0))
    index = e.add("Cast", [x[1]], to=_onnx_dtype(np.int64))
    index = e.add("Unsqueeze", [index, e.ints([axis], "axes")])
    picked = e.add("GatherElements", [x[0], index],
                   None if not node.attrs["keepdims"] else out, axis=axis)
    if not node.attrs["keepdims"]:
        e.add("Squeeze", [picked, e.ints([axis], "axes")], out)


@translates("one_hot")
def _one_hot(e, node, x, out):
    a = node.attrs
    index = e.add("Cast", [x[0]], to=_onnx_dtype(np.int64))
    values = e.const([a["off_value"], a["on_value"]], a["dtype"], "values")
    e.add("OneHot", [index, e.ints([a["depth"]], "depth"), values], out, axis=-1)


# ------------------------------------------------------------ recurrent layers
# ONNX orders the gates differently: ONNX block j holds our block _GATE_ORDER[kind][j].
_GATE_ORDER = {"lstm": [0, 3, 1, 2],       # ours i, f, g, o -> ONNX i, o, f, c
               "gru": [1, 0, 2],           # ours r, z, n -> ONNX z, r, h
               "rnn_relu": [0], "rnn_tanh": [0]}
_ONNX_RNN = {"lstm": "LSTM", "gru": "GRU", "rnn_relu": "RNN", "rnn_tanh": "RNN"}


def _body_form(body):
    """A loop body's structure without its names: ops, attributes, wiring."""
    from ..symbol.symbol import topological
    nodes = topological(body._outputs)
    index = {id(n): k for k, n in enumerate(nodes)}
    names = body.list_inputs()
    form = [("var", names.index(n.name)) if n.is_var else
            (n.op.name, sorted((k, repr(v)) for k, v in n.attrs.items() if k != "subgraphs"),
             [(index[id(i)], k) for i, k in n.inputs]) for n in nodes]
    return form + [[(index[id(n)], k) for n, k in body._outputs]]


def _layer_kind(node, hidden):
    """Which of rnn.LSTM/GRU/RNN wrote this loop: the one whose own loop, traced with
    the same hidden size, has exactly this body (None if none does)."""
    from .. import symbol
    from ..gluon import rnn
    from ..symbol.symbol import topological
    locs = ("in_data_locs", "in_state_locs", "remain_locs", "num_out_data")
    form = _body_form(node.subgraphs[0])
    for kind, layer in (("lstm", rnn.LSTM(hidden)), ("gru", rnn.GRU(hidden)),
                        ("rnn_relu", rnn.RNN(hidden)), ("rnn_tanh", rnn.RNN(hidden,
                                                                             activation="tanh"))):
        traced = layer(symbol.var("data"))
        loop = next(n for n in topological(traced._outputs) if n.subgraphs)
        if all(loop.attrs[k] == node.attrs[k] for k in locs) \
                and _body_form(loop.subgraphs[0]) == form:
            return kind
    return None


@translates("_foreach")
def _foreach(e, node, x, out):
    """The loop of one layer and direction of rnn.LSTM/GRU/RNN: one ONNX LSTM/GRU/RNN
    node, which also does the input projection (the FullyConnected before the loop)."""
    a, graph = node.attrs, e.graph
    n_states = len(a["in_state_locs"])
    body_names = node.subgraphs[0].list_inputs()
    remain = {body_names[loc]: k for k, loc in enumerate(a["remain_locs"])}
    fc = next((n for n in _body_nodes(node) if n.op is not None
               and n.op.name == "FullyConnected"), None)
    weights = []                               # the hidden projection's weight and bias
    for var, _ in (fc.inputs[1:] if fc is not None else ()):
        k = remain.get(var.name)
        weights.append(None if k is None else e.param_of(node.inputs[1 + n_states + k]))
    hidden = weights[0].shape[1] if len(weights) == 2 and weights[0] is not None \
        and weights[0].ndim == 2 else None
    kind = None if hidden is None or any(w is None for w in weights) \
        else _layer_kind(node, hidden)
    if kind is None:
        raise OnnxExportError(_no_translation(node))
    # the loop's sequence: FullyConnected(x) (the input projection), maybe reversed
    source = graph.nodes[node.inputs[0][0]]
    reverse = source.op.name == "reverse"
    if reverse:
        if tuple(source.attrs["axis"]) not in ((0,),):
            e.fail("the reversed input projection is not reversed along time")
        source = graph.nodes[source.inputs[0][0]]
    if source.op.name != "FullyConnected" or source.attrs["flatten"] \
            or source.attrs["no_bias"]:
        e.fail("its sequence is not the input projection (FullyConnected) of a recurrent "
               "layer")
    i2h_w, i2h_b = (e.param_of(entry) for entry in source.inputs[1:3])
    if i2h_w is None or i2h_b is None:
        e.fail("the input projection's weight and bias must be parameters")
    order = _GATE_ORDER[kind]

    def gates(w):                   # our gate blocks in ONNX's order, with a direction axis
        return np.concatenate([w[k * hidden:(k + 1) * hidden] for k in order])[None]

    h2h_w, h2h_b = weights
    data = e.value_of(source.inputs[0])
    if reverse:
        data = e.add("Slice", [data, e.ints([-1], "starts"), e.ints([-2 ** 63], "ends"),
                               e.ints([0], "axes"), e.ints([-1], "steps")])
    states = [e.add("Unsqueeze", [x[1 + k], e.ints([0], "axes")]) for k in range(n_states)]
    inputs = [data, e.const(gates(i2h_w), hint="W"), e.const(gates(h2h_w), hint="R"),
              e.const(np.concatenate([gates(i2h_b), gates(h2h_b)], axis=1), hint="B"), "",
              *states]
    attrs = {"hidden_size": hidden, "direction": "forward"}
    if kind == "gru":
        attrs["linear_before_reset"] = 1        # ours applies the reset after h2h, as cuDNN
    elif kind != "lstm":
        attrs["activations"] = ["Relu" if kind == "rnn_relu" else "Tanh"]
    results = [e.fresh("Y"), e.fresh("Y_h")] + ([e.fresh("Y_c")] if kind == "lstm" else [])
    e.add(_ONNX_RNN[kind], inputs, results, **attrs)
    e.add("Squeeze", [results[0], e.ints([1], "axes")], [out[0]])
    for k, name in enumerate(out[1:]):
        e.add("Squeeze", [results[1 + k], e.ints([0], "axes")], [name])


def _body_nodes(node):
    from ..symbol.symbol import topological
    return topological(node.subgraphs[0]._outputs)
