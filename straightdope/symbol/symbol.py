"""Symbol: a placeholder that records a graph instead of computing.

`sym.relu(x)` does not touch any numbers: it adds a node to a graph and hands
back a new Symbol that stands for the node's output. The graph can then be
inspected (`list_arguments`, `infer_shape`, `tojson`), evaluated (`eval`) or
compiled (what `hybridize()` does).

Whatever needs a *value* (`if x > 0:`, `x.asnumpy()`, `x.shape` ...) fails here
with an explanation, because a placeholder has no value yet.
"""
from __future__ import annotations

import contextlib
import copy as _copy
import itertools as _itertools
import threading

import numpy as np

from .. import name as _name
from ..base import MXNetError, NotImplementedForSymbol, postorder
from ..ops import OpError, get_op
from ..ops.registry import INDEX_INPUTS
from ..ops.elemwise import FUNCTION_ONLY, OPERATORS, SYMBOL_OPERATORS
from ..attribute import current_attrs
from ..util import is_np_shape


_serials = _itertools.count()


class Node:
    """A node of the symbol graph: an op applied to inputs, or a variable (op None).

    Public fields: `op` (a registry Op, None for a variable), `name`, `attrs` (parsed),
    `inputs` [(node, output index)], `var_attrs` (strings: a variable's hints such as
    `__shape__`, and any node's own attributes from `attr=`/AttrScope), `subgraphs`."""
    __slots__ = ("op", "name", "attrs", "inputs", "var_attrs", "serial")

    def __init__(self, op, name, attrs=None, inputs=(), var_attrs=None):
        self.op = op
        self.name = name
        self.attrs = attrs or {}
        self.inputs = list(inputs)          # [(node, output index)]
        self.var_attrs = var_attrs or {}    # "__shape__", "__init__", "__lr_mult__", ...
        self.serial = next(_serials)        # creation order: tells a loop body's nodes
                                            # from the graph around it

    @property
    def subgraphs(self):
        """The graphs a control-flow node runs (a loop body, branches), as Symbols."""
        return () if self.op is None else self.attrs.get("subgraphs", ())

    @property
    def is_var(self):
        return self.op is None

    def num_outputs(self):
        return 1 if self.op is None else self.op.output_count(self.attrs)

    def num_visible(self):
        return 1 if self.op is None else self.op.visible_count(self.attrs)

    def output_name(self, index):
        if self.op is None:
            return self.name
        names = self.op.output_names
        if 1 < self.num_outputs() <= len(names) or self.num_outputs() == len(names):
            return f"{self.name}_{names[index]}"
        return f"{self.name}_output{index}" if self.num_outputs() > 1 else f"{self.name}_output"


# Keys MXNet stores with double underscores (`lr_mult` -> `__lr_mult__`) and lists both ways
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
               "profiler_scope")


def user_attrs(attrs):
    """A node's own attributes as strings, hidden keys renamed `__key__`."""
    return {f"__{k}__" if k in HIDDEN_KEYS else k: str(v) for k, v in attrs.items()}


def _node_attrs(node):
    out = {} if node.is_var else {k: str(v) for k, v in node.attrs.items()
                                  if node.op.spec(k).kind != "subgraphs"}
    out.update(node.var_attrs)
    for key in HIDDEN_KEYS:
        if f"__{key}__" in node.var_attrs:
            out[key] = node.var_attrs[f"__{key}__"]
    return out


def topological(entries):
    """Nodes reachable from `entries` [(node, index)], inputs before the nodes using them."""
    return postorder([head for head, _ in entries],
                     lambda node: [child for child, _ in node.inputs])


# Whole-graph analyses run on the graph IR (`straightdope.graph`), the layer built on
# top of this one from Symbols. graph/ depends on symbol/ and never the reverse: when
# it is imported (by `import straightdope`), graph/ plugs its shape inference and its
# reference executor in here, for `Symbol.infer_shape_partial` and `Symbol.eval`.
GRAPH_ANALYSES: dict = {}
# The JSON format's to_json and load_json: serialize.py (which builds Symbols from JSON,
# so imports this module) puts them here when it is imported, as symbol/__init__ does.
JSON_FORMAT: dict = {}


def _analysis(name):
    try:
        return GRAPH_ANALYSES[name]
    except KeyError:
        raise RuntimeError(f"Symbol: '{name}' comes from straightdope.graph, which is not "
                           f"loaded; import straightdope (it loads it)") from None


def _no_value(what, instead):
    def method(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.name or "group", what, instead)
    return method


class Symbol:
    """One or more outputs of a graph under construction."""
    __slots__ = ("_outputs",)

    def __init__(self, outputs):
        self._outputs = list(outputs)       # [(node, output index)]

    # -------------------------------------------------------------- naming
    @property
    def name(self):
        if len(self._outputs) != 1:
            return None
        node, _ = self._outputs[0]
        return node.name

    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(n.name for n, _ in self._outputs)}]>"

    __str__ = __repr__

    def attr(self, key):
        """Attribute `key` of this Symbol's node as a string, None if it has none;
        `attr('lr_mult')` finds `__lr_mult__` (MXNet's hidden keys)."""
        node = self._outputs[0][0]
        for k in (key, f"__{key}__") if key in HIDDEN_KEYS else (key,):
            if k in node.var_attrs:
                return node.var_attrs[k]
            if not node.is_var and k in node.attrs:
                return str(node.attrs[k])
        return None

    def list_attr(self, recursive=False):
        """This node's attributes as a dict of strings (hidden keys also without
        underscores: `__lr_mult__` and `lr_mult`). `recursive=True`: `attr_dict()`'s
        entries flattened as `name$key`, MXNet's old form."""
        if recursive:
            return {f"{name}${k}": v for name, attrs in self.attr_dict().items()
                    for k, v in attrs.items()}
        return _node_attrs(self._outputs[0][0])

    def attr_dict(self):
        """{node name: its attributes} for every node of the graph that has some."""
        out = {}
        for node in self.walk():
            attrs = _node_attrs(node)
            if attrs:
                out[node.name] = attrs
        return out

    def _set_attr(self, **kwargs):
        """Set string attributes on this Symbol's node(s) (`lr_mult` is kept as
        `__lr_mult__`)."""
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"Symbol {self.name}: attribute '{key}' must be a string, "
                                 f"got {value!r}")
        for node, _ in self._outputs:
            node.var_attrs.update(user_attrs(kwargs))

    # ------------------------------------------------------------- structure
    @property
    def entries(self):
        """The values this Symbol stands for: a list of (node, output index)."""
        return list(self._outputs)

    def walk(self):
        """Every node of the graph, each after the nodes it reads (topological order).
        A control-flow node's body is not walked into: see `node.subgraphs`."""
        return topological(self._outputs)

    def substitute(self, mapping):
        """A copy of this graph with the variables named in `mapping` replaced by other
        Symbols (MXNet's `sym(**kwargs)` composition). Every op node is new."""
        new = {}

        def entry(node, k):
            replaced = new[id(node)]
            return replaced if isinstance(replaced, tuple) else (replaced, k)

        for node in topological(self._outputs):
            if node.is_var:
                target = mapping.get(node.name)
                new[id(node)] = node if target is None else target._outputs[0]
            else:
                new[id(node)] = Node(node.op, node.name, node.attrs,
                                      [entry(c, k) for c, k in node.inputs], node.var_attrs)
        return Symbol([entry(n, k) for n, k in self._outputs])

    def __call__(self, *args, name=None, **kwargs):
        """Compose: a copy of this graph with arguments replaced by other Symbols,
        positionally in `list_arguments()` order or by name (`net(fc3_data=other)`)."""
        return self.substitute(self._by_input_name("composing", "symbols", args, kwargs))

    def _by_input_name(self, action, what, args, kwargs):
        """Values given positionally (in list_arguments() order) and by name, as one dict
        keyed by input name; a name that is not an input is an error, not ignored (a
        typo would otherwise leave that input unknown without a word)."""
        names = self.list_arguments()
        if len(args) > len(names):
            raise ValueError(f"{action}: {len(args)} {what} given for {len(names)} "
                             f"arguments {names}")
        given = dict(zip(names, args))
        given.update(kwargs)
        unknown = sorted(set(given) - set(self.list_inputs()))
        if unknown:
            raise ValueError(f"{action}: {unknown} are not inputs of this symbol (not "
                             f"arguments, not auxiliary states); its arguments are {names}")
        return given

    def _aux_nodes(self):
        aux = set()
        for node in self.walk():
            if node.op is not None and node.op.aux_inputs:
                names = node.op.input_names(node.attrs, len(node.inputs))
                aux_names = node.op.aux_names(node.attrs)
                for input_name, (child, _) in zip(names, node.inputs):
                    if input_name in aux_names and child.is_var:
                        aux.add(id(child))
        return aux

    def list_arguments(self):
        """Names of the variables (data and parameters) the graph reads, in order."""
        aux = self._aux_nodes()
        return [n.name for n in self.walk() if n.is_var and id(n) not in aux]

    def list_auxiliary_states(self):
        """Variables that ops update rather than read only (BatchNorm's running stats)."""
        aux = self._aux_nodes()
        return [n.name for n in self.walk() if n.is_var and id(n) in aux]

    def list_inputs(self):
        return [n.name for n in self.walk() if n.is_var]

    def list_outputs(self):
        return [node.output_name(i) for node, i in self._outputs]

    def get_internals(self):
        """A group of every output of every node: pick inner layers by name."""
        outs = []
        for node in self.walk():
            outs.extend((node, i) for i in range(node.num_visible()))
        return Symbol(outs)

    def get_children(self):
        node = self._outputs[0][0]
        return Symbol(node.inputs) if node.inputs else None

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([o]) for o in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise ValueError(f"no output named {index!r}; outputs are {names}")
            index = names.index(index)
        if not isinstance(index, int):
            raise NotImplementedForSymbol(
                self.name, f"indexing with {index!r}",
                "x[i] on a Symbol selects output i of a group. To slice values use "
                "F.slice_axis(x, axis, begin, end) or F.slice(x, begin, end).")
        return type(self)([self._outputs[index]])

    def as_np_ndarray(self):
        """The same outputs as an `np` Symbol (MXNet's `sym.np._Symbol`): what a block
        traced with mx.np.ndarrays computes on; it gives mx.np.ndarrays when run."""
        return self if type(self) is NpSymbol else NpSymbol(self._outputs)

    def as_nd_ndarray(self):
        """The same outputs as a classic Symbol."""
        return self if type(self) is Symbol else Symbol(self._outputs)

    def _gen_atomic_symbol(self):
        """This Symbol's last op alone, on new variables named after its inputs (MXNet's
        MXGenAtomicSymbolFromSymbol: its visible outputs, as nnvm's CreateFunctor makes)."""
        node = self._outputs[0][0]
        if node.is_var:
            raise MXNetError(f"_gen_atomic_symbol: '{node.name}' is a variable, not an op")
        names = node.op.input_names(node.attrs, len(node.inputs))
        atomic = Node(node.op, node.name, node.attrs, [(Node(None, n), 0) for n in names])
        return type(self)([(atomic, i) for i in range(atomic.num_visible())])

    def __copy__(self):
        return Symbol(list(self._outputs))

    def __deepcopy__(self, memo):
        return Symbol(_copy.deepcopy(self._outputs, memo))

    # ------------------------------------------------------- shapes and types
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from some known input shapes (positionally
        in list_arguments() order, or by name), or (None, None, None) while some shape or
        dimension cannot be inferred."""
        result = self._partial_shapes(args, kwargs)
        if any(s is None or None in s for group in result for s in group):
            return None, None, None
        return result

    def infer_shape_partial(self, *args, **kwargs):
        """As infer_shape, with what it cannot infer reported as MXNet does: a shape as
        `()` and a dimension as 0; under NumPy shape semantics (`with mx.np_shape():`) as
        None and -1. Input shapes may have such unknown dimensions too: (0, 3, 4)."""
        unknown_shape, unknown_dim = (None, -1) if is_np_shape() else ((), 0)
        return tuple([unknown_shape if s is None else
                      tuple(unknown_dim if d is None else d for d in s) for s in group]
                     for group in self._partial_shapes(args, kwargs))

    def _partial_shapes(self, args, kwargs):
        """(arg, out, aux) shapes with None for an unknown shape or dimension, from given
        shapes that mark them as MXNet does (see infer_shape_partial)."""
        unknown_shape, unknown_dim = (None, -1) if is_np_shape() else ((), 0)
        given = self._by_input_name("infer_shape", "shapes", args, kwargs)
        known = {n: tuple(None if d == unknown_dim else d for d in s)
                 for n, s in given.items() if s is not None and tuple(s) != unknown_shape}
        by_name, out = _analysis("infer_shapes")(self, known)
        return ([by_name[n] for n in self.list_arguments()], out,
                [by_name[n] for n in self.list_auxiliary_states()])

    def _infer_shape_partial(self, *args, **kwargs):
        """The shapes that can be inferred completely, None for the others."""
        return tuple([s if s is not None and None not in s else None for s in group]
                     for group in self._partial_shapes(args, kwargs))

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) from some known input dtypes (positionally in
        list_arguments() order, or by name), or (None, None, None) while one is unknown."""
        result = self.infer_type_partial(*args, **kwargs)
        if any(t is None for group in result for t in group):
            return None, None, None
        return result

    def infer_type_partial(self, *args, **kwargs):
        """As infer_type, with None for the dtypes that cannot be inferred.

        An op computes in the dtype of its data inputs and passes it on; its variables of
        unknown dtype (weights, labels) take that dtype; Cast and ops with a `dtype`
        attribute set their output's; index-like inputs do not decide anything."""
        known = {n: np.dtype(t).type
                 for n, t in self._by_input_name("infer_type", "dtypes", args, kwargs).items()
                 if t is not None}
        types = {}                                       # (id(node), index) -> type
        for node in self.walk():
            if node.is_var:
                declared = node.var_attrs.get("__dtype__")
                types[(id(node), 0)] = known.get(node.name) or (
                    np.dtype(declared).type if declared else None)
                continue
            op, entries = node.op, [(id(c), k) for c, k in node.inputs]
            # variables of unknown dtype take the one the op computes in (labels too, as
            # MXNet's softmax_label; not the indices an op names itself: Embedding's)
            data = op.data_dtype(node.attrs, [types.get(e) for e in entries])
            if data is not None and op.dtype_rule != "attr":
                names_in = op.input_names(node.attrs, len(node.inputs))
                for input_name, (child, k) in zip(names_in, node.inputs):
                    if types.get((id(child), k)) is None and child.is_var and \
                            input_name not in op.index_inputs - INDEX_INPUTS:
                        types[(id(child), k)] = np.dtype(data).type
            out = op.out_dtype(node.attrs, [types.get(e) for e in entries])
            outs = out if isinstance(out, list) else [out] * node.num_outputs()  # (a loop)
            for k, t in enumerate(outs):
                types[(id(node), k)] = None if t is None else np.dtype(t).type
        by_name = {n.name: types[(id(n), 0)] for n in self.walk() if n.is_var}
        return ([by_name[n] for n in self.list_arguments()],
                [types[(id(n), k)] for n, k in self._outputs],
                [by_name[n] for n in self.list_auxiliary_states()])

    # --------------------------------------------------------------- pickle
    def __getstate__(self):
        """Pickled as its JSON text (MXNet does the same); loading it goes through the op
        registry like any symbol file, so a pickle of a Symbol holds no code."""
        return {"json": self.tojson()}

    def __setstate__(self, state):
        self._outputs = JSON_FORMAT["load_json"](state["json"])._outputs

    # -------------------------------------------------------------- running
    def eval(self, ctx=None, **kwargs):
        """Evaluate with NumPy, given every argument by name. Returns a list of NDArrays."""
        from ..ndarray import NDArray
        names = self.list_inputs()
        missing = [n for n in names if n not in kwargs]
        if missing:
            raise ValueError(f"eval: no value given for {missing}; pass every argument "
                             f"by name, e.g. eval(data=nd.ones((1, 3)))")
        values = [kwargs[n]._data if isinstance(kwargs[n], NDArray)
                  else np.asarray(kwargs[n], dtype=np.float32) for n in names]
        return [NDArray(v) for v in _analysis("evaluate")(self, values)]

    # ------------------------------------------------------------------ JSON
    def tojson(self, remove_amp_cast=True):
        return JSON_FORMAT["to_json"](self)

    def save(self, fname, remove_amp_cast=True):
        from ..serialization import atomic_write
        text = self.tojson().encode("utf-8")
        atomic_write(fname, lambda f: f.write(text))

    # ------------------------------------------------------------ operators
    def _binary(self, name, other, reflected=False):
        array_op, scalar_op, rscalar_op = OPERATORS[name]
        if isinstance(other, Symbol):
            args = [other, self] if reflected else [self, other]
            if type(self) is Symbol and type(other) is Symbol and not _broadcasting.on:
                result = _create(SYMBOL_OPERATORS[name], args, {},
                                 hint=SYMBOL_OPERATORS[name].lower())
            else:                   # np's, and in the library's own gradient rules
                result = _create(array_op, args, {})
        elif isinstance(other, (int, float, np.number, bool)):
            result = _create(rscalar_op if reflected else scalar_op, [self],
                             {"scalar": float(other)})
        else:
            return NotImplemented
        if name in _COMPARISONS and type(result) is NpSymbol:   # NumPy's: x > y is bool
            result = _create("Cast", [result], {"dtype": "bool"})
        return result

    def __neg__(self):
        return _create("negative", [self], {})

    def __abs__(self):
        return _create("abs", [self], {})

    # ------------------------------------------- what a placeholder cannot do
    __bool__ = _no_value(
        "Using it as a Python bool (`if`, `while`, `and`/`or`/`not`)",
        "choose between values inside the graph with F.where(condition, x, y), or move "
        "the Python control flow out of hybrid_forward (or do not hybridize this block).")
    asnumpy = _no_value(
        "Reading its values with .asnumpy()",
        "return the Symbol from hybrid_forward and look at the output of net(x), or call "
        "the block without hybridize() while debugging (then x is an NDArray).")
    asscalar = item = __float__ = __int__ = __index__ = _no_value(
        "Turning it into a Python number", "keep the computation in F.* ops.")
    __array__ = _no_value("Converting it to a NumPy array",
                          "use F.* ops inside hybrid_forward instead of NumPy functions.")
    __setitem__ = _no_value("Assigning into it (x[...] = v)",
                            "build a new value with F.where or F.concat instead of mutating.")
    wait_to_read = _no_value("wait_to_read()", "nothing to wait for: a Symbol is not computed.")

    @property
    def shape(self):
        raise NotImplementedForSymbol(
            self.name, "Reading .shape",
            "shapes are only known once data flows. Use shape-free ops: F.reshape with "
            "0/-1 codes, F.reshape_like, F.broadcast_like, F.zeros_like.")

    @property
    def dtype(self):
        raise NotImplementedForSymbol(self.name, "Reading .dtype",
                                      "use infer_type() on the final symbol.")

    def __hash__(self):
        return id(self)


class _Broadcasting(threading.local):
    on = False                  # True: in this thread a Symbol's + - * ... broadcast


_broadcasting = _Broadcasting()


@contextlib.contextmanager
def broadcasting_operators():
    """Within it (in this thread), `a + b` on two Symbols is `broadcast_add`, as on
    NDArrays, instead of MXNet 1.x's elemwise `_Plus`: for the library's own rules,
    such as gradients, written once for F = nd and F = sym."""
    before = _broadcasting.on
    _broadcasting.on = True
    try:
        yield
    finally:
        _broadcasting.on = before


_COMPARISONS = frozenset({"eq", "ne", "gt", "ge", "lt", "le"})


class NpSymbol(Symbol):
    """A Symbol of MXNet 2.0's NumPy interface (MXNet's `sym.np._Symbol`): the same graph
    nodes; comparisons are bool, and a hybridized block returns its values as
    mx.np.ndarrays. A block traced with mx.np.ndarrays sees its inputs as these.
    Sums, means, true divisions and Python-float operands promote bool and int data as
    mx.np.ndarray does (a `_np_promote` node, resolved when the dtypes are known)."""
    __slots__ = ()

    def _promote(self, rule):
        return _create("_np_promote", [self], {"rule": rule})

    def __getitem__(self, key):
        """A group's output `key` (an int, or a slice of outputs); of one array, NumPy's
        basic indexing as MXNet's `_Symbol`: ints and slices (a tuple of them) become a
        `slice` node, the int-indexed axes then squeezed away."""
        if len(self._outputs) > 1 or isinstance(key, str):
            if isinstance(key, slice):
                return Group([self[i] for i in range(*key.indices(len(self._outputs)))]
                             ).as_np_ndarray()
            if isinstance(key, (int, np.integer)) and not -len(self._outputs) <= key < len(
                    self._outputs):
                raise IndexError(f"output {key} of a group of {len(self._outputs)}")
            return Symbol.__getitem__(self, int(key) % len(self._outputs)
                                      if isinstance(key, (int, np.integer)) else key)
        key = key if isinstance(key, tuple) else (key,)
        if not key:
            return self
        begin, end, step, squeeze = [], [], [], []
        for axis, index in enumerate(key):
            if isinstance(index, slice):
                if index.step == 0:
                    raise ValueError("slice step cannot be zero")
                begin.append(index.start)
                end.append(index.stop)
                step.append(index.step)
            elif isinstance(index, (int, np.integer)) and not isinstance(index, bool):
                index = int(index)
                begin.append(index)
                end.append(index + 1 if index != -1 else None)
                step.append(1)
                squeeze.append(axis)
            else:
                raise NotImplementedForSymbol(
                    self.name, f"indexing with {index!r}",
                    "a traced np Symbol takes ints and slices (basic indexing); for arrays "
                    "of indices use F.np.take or F.npx.pick.")
        sliced = _create("slice", [self], {"begin": tuple(begin), "end": tuple(end),
                                           "step": tuple(step)})
        return _create("squeeze", [sliced], {"axis": tuple(squeeze)}) if squeeze else sliced

    def _binary(self, name, other, reflected=False):
        x = self
        if name == "truediv":
            other = other._promote("divide") if isinstance(other, NpSymbol) else other
            x = self._promote("divide")
        elif isinstance(other, (float, np.floating)) and name not in _COMPARISONS:
            return Symbol._binary(self._promote("float"), name, other, reflected)
        if isinstance(other, NpSymbol):
            # operands of two dtypes (float32 * bool) meet in the promoted one, as
            # mx.np.ndarray's do; the compiler drops these nodes when the dtypes agree
            x, other = (_create("_np_promote_with", [x, other], {}),
                        _create("_np_promote_with", [other, x], {}))
        return Symbol._binary(x, name, other, reflected)

    def dot(self, b, out=None):
        """np.dot, as MXNet's `_Symbol.dot`: its shape rule fills a partly known operand
        from the other (a Parameter of shape (0, n) used through x.dot(w)); the legacy
        `dot` op's, as MXNet 1.x's, does not."""
        return _create("_npi_tensordot", [self, b], {"axes": repr("dot")})

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return self._reduce("sum", "sum", axis, dtype, keepdims, kwargs)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return self._reduce("prod", "sum", axis, dtype, keepdims, kwargs)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return self._reduce("mean", "mean", axis, dtype, keepdims, kwargs)

    def _reduce(self, op, rule, axis, dtype, keepdims, kwargs):
        """An np reduction; with `dtype`, computed wide and cast to it (as np.ndarray's,
        numpy/multiarray.py: accumulating_dtype)."""
        if dtype is None:
            return _create(op, [self._promote(rule)], {"axis": axis, "keepdims": keepdims,
                                                       **kwargs})
        wide = "float64" if op == "mean" or np.dtype(dtype).kind == "f" else "int64"
        x = _create("Cast", [self], {"dtype": wide})
        out = _create(op, [x], {"axis": axis, "keepdims": keepdims, **kwargs})
        return _create("Cast", [out], {"dtype": np.dtype(dtype).name})


def _install_operators():
    for name in OPERATORS:
        if name in FUNCTION_ONLY:
            continue
        setattr(Symbol, f"__{name}__", lambda self, o, _n=name: self._binary(_n, o))
        if name in ("add", "sub", "mul", "truediv", "pow", "mod"):
            setattr(Symbol, f"__r{name}__",
                    lambda self, o, _n=name: self._binary(_n, o, reflected=True))


_install_operators()


def _create(op_name, inputs, attrs, name=None, parsed=False, hint=None, extra_attrs=None):
    """Add one op node to the graph and return its visible output(s) as a Symbol.
    `extra_attrs`: the node's own attributes (`attr=`, `lr_mult=`), over AttrScope's."""
    op = get_op(op_name)
    if not parsed:
        attrs = op.parse_attrs(attrs)
    entries = []
    for x in inputs:
        if len(x._outputs) != 1:
            raise OpError(f"{op.name}: an input is a group of {len(x._outputs)} outputs; "
                          f"pick one with group[i]")
        entries.append(x._outputs[0])
    node_name = _name.current().get(name, hint or op.name.lstrip("_"))
    node = Node(op, node_name, attrs, entries, user_attrs(current_attrs(extra_attrs)))
    # an np Symbol in, an np Symbol out (as mx.np.ndarray for arrays)
    kind = NpSymbol if any(type(x) is NpSymbol for x in inputs) else Symbol
    return kind([(node, i) for i in range(node.num_visible())])


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A named placeholder for data or a parameter. `attr`: string attributes (added to
    the current AttrScope's); other attributes as keywords `__name__=value`."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"a variable needs a non-empty string name, got {name!r}")
    var_attrs = user_attrs(current_attrs(attr))
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"var {name!r}: attribute {key}={value!r} is not supported; "
                             f"additional attributes must start and end with double "
                             f"underscores, e.g. __{key}__={value!r}")
        var_attrs[key] = str(value)
    if shape is not None:
        var_attrs["__shape__"] = str(tuple(shape))
    if dtype is not None:
        var_attrs["__dtype__"] = np.dtype(dtype).name
    if lr_mult is not None:
        var_attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        var_attrs["__wd_mult__"] = str(wd_mult)
    if init is not None:
        var_attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    return Symbol([(Node(None, name, var_attrs=var_attrs), 0)])


Variable = var


def Group(symbols):
    """One Symbol with the outputs of several."""
    outs = []
    for s in symbols:
        outs.extend(s._outputs)
    return Symbol(outs)
