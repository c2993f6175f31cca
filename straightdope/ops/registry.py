"""The op registry: the single source of truth for every operator.

Each op is declared once, here in `ops/`, with
  * its tensor inputs and typed attributes (with defaults and validation),
  * shape inference          (used by `sym.infer_shape`, deferred init and the compiler),
  * a NumPy forward          (what `nd.relu(x)` runs, and the reference executor),
  * a gradient written with `F` ops, so the *same* rule builds imperative
    gradients (`F` is `nd`) and the compiled backward graph (`F` is `sym`),
  * its dtype rule (`dtype_rule`, `infer_dtype`, `index_inputs`: `Op.out_dtype`),
  * where a compiled graph runs it (`placement`, one of PLACEMENTS) and, for an
    elementwise op, its scalar expression, which the compiler fuses into loops.

The compiler's passes read these facts here; none keeps its own list of op names.

`straightdope.nd`, `straightdope.sym` and `straightdope.np` are *generated* from
this table (see `ndarray/register.py` and `symbol/register.py`). That is why
`F.relu(x)` works whichever `F` a HybridBlock is handed.
"""
from __future__ import annotations

import ast
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..base import MXNetError

OPS: dict[str, "Op"] = {}


class OpError(MXNetError, ValueError):
    """A bad call of an operator: wrong attribute, wrong shapes, unknown op.

    An MXNetError, as MXNet raises for these, and a ValueError (bad argument values)."""


class OpIndexError(OpError, IndexError):
    """An index out of an array's bounds: also an IndexError, as MXNet's error mapping
    makes its `IndexError: ...` messages (gather_nd)."""


# ---------------------------------------------------------------- attributes
# MXNet stores attributes as strings in its JSON ("num_hidden": "256",
# "kernel": "(3, 3)"). Each attribute type parses either a Python value or such
# a string, validates it, and prints it back the way MXNet writes it.

@dataclass(frozen=True)
class Attr:
    kind: str                      # int, float, bool, shape, floats, str, int_or_none,
                                   # shape_or_none, subgraphs
    default: Any = None
    choices: tuple = ()
    required: bool = False
    minimum: int | None = None     # ints and each entry of a shape (num_hidden >= 1, pad >= 0)

    def parse(self, op_name: str, attr_name: str, value: Any) -> Any:
        def bad(why: str):
            raise OpError(f"{op_name}: attribute '{attr_name}' {why}, got {value!r}")

        if self.kind == "subgraphs":
            if not isinstance(value, (tuple, list)) or not all(   # Symbol, NpSymbol
                    any(t.__name__ == "Symbol" for t in type(g).__mro__) for g in value):
                bad("must be a tuple of Symbols (the graphs the op runs)")
            return tuple(value)
        if self.kind == "str" and self.choices and isinstance(value, type):
            value = getattr(value, "__name__", value)   # a dtype given as np.float64
        if self.kind == "str" and str(value) in self.choices:
            return str(value)
        if value is None or (isinstance(value, str) and value == "None"):
            if self.kind.endswith("_or_none") or self.default is None and not self.required:
                return None
            bad("must not be None")
        kind = self.kind.replace("_or_none", "")
        if isinstance(value, numbers.Integral) and not isinstance(value, (int, bool)):
            value = int(value)          # np.int64(3), e.g. from x.shape[0] or np.prod
        if kind == "float" and isinstance(value, str) and value.strip().lower().lstrip(
                "+-") in NON_FINITE:
            return float(value)           # how MXNet (and Python) write inf, -inf, nan
        if isinstance(value, str) and kind != "str":
            try:
                value = ast.literal_eval(value)   # literals only: never evaluates code
            except (ValueError, SyntaxError):
                if kind == "bool" and value.lower() in ("true", "false"):
                    value = value.lower() == "true"
                else:
                    bad({"int": "must be an integer", "float": "must be a number",
                         "bool": "must be True or False",
                         "shape": "must be a tuple of integers",
                         "floats": "must be a tuple of numbers"}[kind])
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    bad("must be an integer")
            if self.minimum is not None and value < self.minimum:
                bad(f"must be at least {self.minimum}")
            return int(value)
        if kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                bad("must be a number")
            return float(value)
        if kind == "bool":
            if isinstance(value, (bool, int)) and value in (0, 1):
                return bool(value)
            bad("must be True or False")
        if kind == "shape":
            if isinstance(value, int) and not isinstance(value, bool):
                value = (value,)
            if not isinstance(value, (tuple, list)) or not all(
                    isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
                bad("must be a tuple of integers")
            if self.minimum is not None and any(v < self.minimum for v in value):
                bad(f"must have entries of at least {self.minimum}")
            return tuple(int(v) for v in value)
        if kind == "floats":                    # MXNet's Tuple<float>: anchor scales
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                value = (value,)
            if not isinstance(value, (tuple, list)) or not all(
                    isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
                bad("must be a tuple of numbers")
            return tuple(float(v) for v in value)
        if kind == "str":
            value = str(value)
            if self.choices and value not in self.choices:
                bad(f"must be one of {list(self.choices)}")
            return value
        raise AssertionError(kind)

    @staticmethod
    def unparse(value: Any) -> str:
        return str(value)


NON_FINITE = ("inf", "infinity", "nan")
OPEN_ATTR = Attr("str", required=True)     # an undeclared attribute (Op.open_attrs)


def Int(default=None, required=False, minimum=None):
    return Attr("int", default, required=required, minimum=minimum)


def Float(default=None):
    return Attr("float", default)


def Bool(default=False):
    return Attr("bool", default)


def Shape(default=None, required=False, minimum=None):
    return Attr("shape", default, required=required, minimum=minimum)


def Floats(default=None, required=False):
    return Attr("floats", default, required=required)


def Choice(*choices, default=None, required=False):
    return Attr("str", None if required else (default if default is not None else choices[0]),
                choices=tuple(choices), required=required)


def OptInt(default=None):
    return Attr("int_or_none", default)


def OptShape(default=None):
    return Attr("shape_or_none", default)


def OptFloat(default=None):
    return Attr("float_or_none", default)


def Subgraphs():
    """The graphs a control-flow op runs (a loop's body, a branch): Symbols, not text.
    MXNet's JSON keeps them in the node's "subgraphs" list, not among its "attrs"."""
    return Attr("subgraphs", ())


# ----------------------------------------------------------------------- ops

@dataclass
class Op:
    """One operator. See the module docstring for what each field is for."""
    name: str
    inputs: tuple[str, ...] = ("data",)
    attrs: dict[str, Attr] = field(default_factory=dict)
    forward: Callable = None               # forward(attrs, *arrays, is_train=False) -> array | tuple
    infer_shape: Callable = None           # infer_shape(attrs, in_shapes) -> (in_shapes, out_shapes)
    infer_shape_partial: Callable | None = None  # the same from partly known shapes (see
                                           # `unify`); also sees the outputs, so it can fill
                                           # inputs from them. Default: infer_shape.partial
    gradient: Callable | None = None       # gradient(F, attrs, inputs, outputs, out_grads) -> [grad|None]
    num_outputs: int | Callable = 1        # -1: as many as the 'num_outputs' attribute says;
                                           # or a function of the attributes
    num_visible_outputs: int | Callable | None = None  # extra outputs are internal (a mask)
    aux_inputs: tuple[str, ...] | Callable = ()  # inputs that are auxiliary states (BatchNorm's
                                           # running stats); or a function of the attributes
                                           # (Custom: its prop's list_auxiliary_states)
    aux_writeback: dict[int, int] = field(default_factory=dict)  # output index -> aux input index
    variadic: bool = False                 # takes any number of inputs (concat, add_n)
    open_attrs: bool = False               # also takes attributes it does not declare, kept
                                           # as strings (Custom hands them to the user's
                                           # CustomOpProp); a variadic one takes its arrays
                                           # by keyword too, named by `optional_inputs`
    optional_inputs: Callable | None = None  # attrs -> names actually used (FullyConnected no_bias)
    scalar_expr: str | None = None         # elementwise: e.g. "max({0}, 0.0)"; fused by the compiler
    elementwise: bool = False              # output[i] depends only on input[i] (after broadcasting)
    needs_train_flag: bool = False         # Dropout, BatchNorm behave differently when training
    hidden_on_demand: bool = False         # forward(..., keep_hidden=False) may skip its
                                           # hidden outputs (None): the loops' saved values,
                                           # which only a backward pass reads
    is_random: bool = False
    checks_values: bool = False            # its forward refuses bad values (CTC's lengths)
                                           # with an OpError (engine.py runs it at the call)
    output_names: tuple[str, ...] = ("output",)
    complete_attrs: Callable | None = None  # (attrs, output shapes) -> attrs completed with
                                           # what a graph's shape inference learned (a
                                           # creation op's unknown dims, shape=(2, -1))
    doc: str = ""
    placement: str | None = None           # where a compiled graph runs it: one of PLACEMENTS
                                           # (None: "fused" if it has a scalar_expr)
    kernel_ndim: int | None = None         # its kernel covers data (first input) of this many
                                           # dims only; other data runs on the host
    host_when: Callable | None = None      # (attrs, input shapes) -> True for what its kernel
                                           # does not cover (softmax's use_length): the
                                           # host runs it then
    key_attrs: tuple[str, ...] = ()        # attributes a graph's node label shows
    unnamed_inputs: bool = False           # MXNet 1.9 leaves its inputs unnamed (no
                                           # FListInputNames): see monitor_input_names
    onnx: str | None = None                # the ONNX operator that computes it from the same
                                           # inputs, without attributes (onnx/ exports it so,
                                           # and imports a one-input one back)
    dtype_rule: str = "data"               # which dtype the outputs have (see `out_dtype`):
                                           # "data": its data inputs' (index inputs aside);
                                           # "strict": the same, and imperative calls refuse
                                           # mixed data dtypes too (layers with parameters);
                                           # "attr": its `dtype` attribute's (Cast, one_hot)
    infer_dtype: Callable | None = None    # (attrs, input dtypes) -> output dtype (a list: one
                                           # per output), for any other rule (argmax, norm)
    index_inputs: tuple | None = None      # inputs that do not decide the dtype; None: those
                                           # named in INDEX_INPUTS

    def __post_init__(self):
        if self.num_visible_outputs is None:
            self.num_visible_outputs = self.num_outputs
        if self.infer_shape_partial is None:      # e.g. same_shape carries its partial form
            self.infer_shape_partial = getattr(self.infer_shape, "partial", None)
        self._input_set = frozenset(self.inputs)
        if self.placement is None and self.scalar_expr is not None:
            self.placement = "fused"
        if self.placement not in PLACEMENTS:
            raise ValueError(f"op {self.name}: declare where compiled graphs run it, "
                             f"placement= one of {PLACEMENTS} (see PLACEMENTS), got "
                             f"{self.placement!r}")
        if self.dtype_rule not in DTYPE_RULES:
            raise ValueError(f"{self.name}: dtype_rule must be one of {DTYPE_RULES}")
        self.index_inputs = frozenset(self.inputs) & INDEX_INPUTS \
            if self.index_inputs is None else frozenset(self.index_inputs)
        self.strict_dtype = self.dtype_rule == "strict"    # read on imperative mode's hot path
        self._attr_cache: dict = {}     # parsed attributes by call spelling (parsing is slow)

    def placement_for(self, attrs: dict, shapes) -> str:
        """Where a compiled graph runs this op for these attributes and input shapes: its
        placement, or "host" where its kernel does not cover them (`kernel_ndim`,
        `host_when`)."""
        if self.kernel_ndim is not None and (not shapes or len(shapes[0]) != self.kernel_ndim):
            return "host"
        if self.host_when is not None and self.host_when(attrs, shapes):
            return "host"
        return self.placement

    def aux_names(self, attrs: dict) -> tuple:
        """The names of its inputs that are auxiliary states, for these attributes."""
        return tuple(self.aux_inputs(attrs)) if callable(self.aux_inputs) else self.aux_inputs

    def spec(self, attr_name: str) -> Attr:
        """The declaration of one of its attributes (an undeclared one of an op with
        `open_attrs`: a string without a default)."""
        return self.attrs.get(attr_name, OPEN_ATTR)

    def output_count(self, attrs: dict) -> int:
        if callable(self.num_outputs):
            return self.num_outputs(attrs)
        return attrs["num_outputs"] if self.num_outputs == -1 else self.num_outputs

    def visible_count(self, attrs: dict) -> int:
        if callable(self.num_visible_outputs):
            return self.num_visible_outputs(attrs)
        return self.output_count(attrs) if self.num_outputs == -1 else self.num_visible_outputs

    def backward(self, F, attrs, inputs, outputs, out_grads, is_train=False) -> list:
        """Gradients of the inputs, built with F ops (None where there is none)."""
        if self.gradient is None:
            raise OpError(f"{self.name} has no gradient: it cannot sit between a loss and a "
                          f"parameter that needs one (wrap its input in BlockGrad/stop_gradient)")
        if self.needs_train_flag:
            return self.gradient(F, attrs, inputs, outputs, out_grads, is_train=is_train)
        return self.gradient(F, attrs, inputs, outputs, out_grads)

    def input_names(self, attrs: dict, n_given: int | None = None) -> tuple[str, ...]:
        if self.variadic:
            if self.optional_inputs is not None:
                return tuple(self.optional_inputs(attrs))
            return tuple(f"arg{i}" for i in range(n_given or 0))
        if self.optional_inputs is not None:
            return tuple(self.optional_inputs(attrs))
        return self.inputs

    def monitor_input_names(self, attrs: dict, count: int) -> list:
        """The names MXNet's monitor gives this op's inputs: input0, input1, ... where it
        has none (`unnamed_inputs`) or they do not match the count."""
        names = () if self.unnamed_inputs else self.input_names(attrs, count)
        return list(names) if len(names) == count else [f"input{i}" for i in range(count)]

    def parse_attrs(self, given: dict) -> dict:
        """Validate user/JSON attributes and fill defaults; unknown names are an error."""
        unknown = set(given) - set(self.attrs)
        if unknown and not self.open_attrs:
            raise OpError(f"{self.name}: unknown attribute(s) {sorted(unknown)}; "
                          f"it takes {sorted(self.attrs) or 'no attributes'}")
        out = {}
        for key, spec in self.attrs.items():
            if key in given:
                out[key] = spec.parse(self.name, key, given[key])
            elif spec.required:
                raise OpError(f"{self.name}: attribute '{key}' is required")
            else:
                out[key] = spec.default
        for key in sorted(unknown):
            out[key] = str(given[key])
        return out

    def cached_attrs(self, given: dict) -> dict:
        """parse_attrs, memoised: the same call spelling gives the same (read-only) dict."""
        try:
            key = tuple(sorted(given.items()))
            return self._attr_cache[key]
        except KeyError:
            parsed = self.parse_attrs(given)
            if len(self._attr_cache) > 1024:
                self._attr_cache.clear()
            self._attr_cache[key] = parsed
            return parsed
        except TypeError:               # an unhashable value (a list): parse every time
            return self.parse_attrs(given)

    def run(self, attrs: dict, arrays, is_train: bool = False) -> tuple:
        """Run the NumPy forward and always return a tuple of outputs."""
        if self.needs_train_flag:
            result = self.forward(attrs, *arrays, is_train=is_train)
        else:
            result = self.forward(attrs, *arrays)
        return result if isinstance(result, tuple) else (result,)

    def out_dtype(self, attrs: dict, dtypes: list, where: str | None = None):
        """The dtype this op's outputs have, given its inputs' (None: not known yet): the
        one rule `sym.infer_type`, the compiler (`graph.annotate`) and the threaded engine
        use. `where`: check that the data inputs agree, naming `where` if they do not."""
        if self.infer_dtype is not None:
            # (not `None in dtypes`: NumPy finds np.dtype("float64") == None true)
            known = all(d is not None for d in dtypes)
            return self.infer_dtype(attrs, dtypes) if known else None
        if self.dtype_rule == "attr" or not dtypes:
            return attrs.get("dtype", "float32")
        found = self.data_dtype(attrs, dtypes, where)
        return found if found is not None or where is None else dtypes[0]

    def data_dtype(self, attrs: dict, dtypes: list, where: str | None = None):
        """The dtype of its data inputs, the one it computes in (None: none known yet).
        Index inputs (labels, indices, a condition) do not decide it."""
        names = self.input_names(attrs, len(dtypes))
        found = None
        for name, dt in zip(names, dtypes):
            if dt is None or name in self.index_inputs:
                continue
            if found is None:
                found = dt
            elif where is not None and dt != found:
                raise mixed_dtypes(where, names, dtypes)
        return found

    def shapes(self, attrs: dict, in_shapes: list) -> tuple[list, list]:
        """Shape inference with a clear error that names the op and the shapes."""
        try:
            in_shapes, out_shapes = self.infer_shape(attrs, list(in_shapes))
        except OpError as err:
            if str(err).startswith(self.name + ":"):
                raise
            raise OpError(f"{self.name}: {err}") from None
        except (ValueError, IndexError, TypeError, ZeroDivisionError) as err:
            names = self.input_names(attrs, len(in_shapes))
            described = ", ".join(f"{n}={s}" for n, s in zip(names, in_shapes))
            raise OpError(f"{self.name}: cannot infer shapes from inputs {described}: {err}") from None
        for shape in list(in_shapes) + list(out_shapes):
            if shape is not None and any(d is not None and d < 0 for d in shape):
                raise OpError(f"{self.name}: its attributes {attrs} give the shape {shape}, "
                              f"with a negative size: check them (e.g. num_hidden, "
                              f"num_filter must be positive)")
        return in_shapes, out_shapes

    def partial_shapes(self, attrs: dict, in_shapes: list, out_shapes: list) -> tuple[list, list]:
        """`infer_shape_partial` with the same clear errors as `shapes`."""
        try:
            return self.infer_shape_partial(attrs, list(in_shapes), list(out_shapes))
        except OpError as err:
            if str(err).startswith(self.name + ":"):
                raise
            raise OpError(f"{self.name}: {err}") from None


# ---------------------------------------------------------------- placement
# Where a compiled graph (compiler/) runs an op. Each op declares one; the compiler's
# passes read it, and tests/test_compiler_ops.py checks each op case's plan against it.
PLACEMENTS = (
    "fused",     # elementwise: one element is its `scalar_expr` (a few built-in forms in
                 # codegen.scalar_expr); chains of them become one loop (fuse.py)
    "kernel",    # one call of a Numba kernel; its emitter is in compiler/kernels/ (EMITTERS)
    "view",      # only reinterprets its input's buffer: no code (memory.py)
    "lowered",   # rewritten into other ops before fusion (compiler/lower.py REWRITES)
    "host",      # its NumPy forward runs between compiled segments (compiler/loops.py)
    "loop",      # a loop node: its body compiled once, run once per step (loops.py)
)


# ------------------------------------------------------------------- dtypes
DTYPE_RULES = ("data", "strict", "attr")
# Inputs that hold labels, positions, a condition or only a shape: they do not decide an
# op's dtype (an op may name others: Embedding's indices, `index_inputs`).
INDEX_INPUTS = frozenset({"condition", "index", "indices", "label", "like", "shape_like"})


def mixed_dtypes(where: str, names, dtypes) -> OpError:
    """The one error for data inputs of different dtypes, imperative or hybridized."""
    listed = ", ".join(f"{n}: {np.dtype(dt).name}" for n, dt in zip(names, dtypes))
    return OpError(f"{where}: its inputs have different dtypes ({listed}). Each op computes "
                   f"in one dtype, imperatively as when hybridized: convert the data first, "
                   f"e.g. x.astype('float32') (transforms.ToTensor() does it for images), or "
                   f"cast the network with net.cast(dtype).")


# ------------------------------------------------------------- partial shapes
# While a graph is being inferred, a shape may be partly known: None for a whole
# unknown shape, None for an unknown dimension inside a tuple, (None, 10).

def is_complete(shape) -> bool:
    return shape is not None and None not in shape


def unify(*shapes):
    """The one shape that agrees with all of `shapes` (each partly known), filling each
    one's unknown dims from the others; an OpError if two known dims differ."""
    out = None
    for shape in shapes:
        if shape is None:
            continue
        if out is None:
            out = tuple(shape)
            continue
        if len(shape) != len(out):
            raise OpError(f"shapes {show_shape(out)} and {show_shape(shape)} must be the same")
        merged = []
        for a, b in zip(out, shape):
            if a is not None and b is not None and a != b:
                raise OpError(f"shapes {show_shape(out)} and {show_shape(shape)} must be the same")
            merged.append(a if b is None else b)
        out = tuple(merged)
    return out


def show_shape(shape):
    """A partly known shape as MXNet prints it: 0 for an unknown dim."""
    return tuple(0 if d is None else d for d in shape)


def axis_in(op_name: str, axis: int, shape, extra: int = 0) -> int:
    """`axis` of an array of `shape` as a non-negative index, or an OpError naming the op
    and the shape. Refused, never wrapped around, as in MXNet and NumPy: axis=5 of a 2-D
    array is a mistake, not axis 1. (`extra`=1: an axis of the result, one longer.)"""
    ndim = len(shape) + extra
    if not -ndim <= axis < ndim:
        raise OpError(f"{op_name}: axis {axis} is out of range for data of shape "
                      f"{tuple(shape)} (axes {-ndim}..{ndim - 1})")
    return axis + ndim if axis < 0 else axis


def refuse_empty_gather(op_name: str, data, axis: int, count: int) -> None:
    """An op that reads `count` elements by index along `axis` of `data` (a shape) has
    nothing to read when that axis is empty: refused here, at shape inference, so that
    no compiled loop clips an index into [0, -1] and reads outside the array."""
    if data[axis] == 0 and count > 0:
        raise OpError(f"{op_name}: cannot read {count} value(s) by index from axis {axis} of "
                      f"data of shape {tuple(data)}, which is empty (size 0)")


def like_input(k: int):
    """infer_shape of an op whose one output has the shape of input k: most gradient ops,
    whose output is the gradient of their input k (conv's data gradient: of the data)."""
    def infer_shape(attrs, in_shapes):
        return in_shapes, [in_shapes[k]]
    infer_shape.__name__ = f"like_input_{k}"
    return infer_shape


def register(name: str, **fields) -> Op:
    """Declare an op. Called once per op in the `ops/*.py` family files."""
    if name in OPS:
        raise KeyError(f"op {name!r} registered twice")
    op = Op(name=name, **fields)
    OPS[name] = op
    return op


def alias(new: str, existing: str) -> None:
    """A second name for an op (MXNet has several: broadcast_plus = broadcast_add)."""
    OPS[new] = OPS[existing]


def get_op(name: str) -> Op:
    """Look an op up by name: the only way names from files reach code."""
    try:
        return OPS[name]
    except KeyError:
        raise OpError(f"unknown operator {name!r}: straightdope has no op of that name "
                      f"(see straightdope.ops.list_ops())") from None


def scipy_special():
    """scipy.special, imported on first use: importing it costs ~0.2 s of CPU, which
    every `import straightdope` would pay although few programs call erf or a CTC loss."""
    from scipy import special
    return special


def list_ops() -> list[str]:
    return sorted(OPS)


def bind_call(op: Op, args: tuple, kwargs: dict, is_tensor: Callable) -> tuple[list, dict, str | None]:
    """Sort a Python call `op(*args, **kwargs)` into (tensor inputs, attributes, name).

    Shared by `nd` and `sym`, so both accept exactly the same spellings: tensors
    positionally or by input name (`data=x`), attributes by keyword or, after the
    tensors, positionally in the order the op declares them, as MXNet's generated
    functions do (`nd.clip(x, 0, 1)`, `nd.slice(x, (0,), (2,))`).
    """
    name = None
    tensor_kwargs = None
    if not op.variadic:
        args, kwargs = _positional_attributes(op, args, kwargs, is_tensor)
    if kwargs:
        kwargs = dict(kwargs)
        name = kwargs.pop("name", None)
        kwargs.pop("out", None)
        kwargs.pop("ctx", None)
        if not op._input_set.isdisjoint(kwargs):
            tensor_kwargs = {k: kwargs.pop(k) for k in op.inputs if k in kwargs}
        if op.open_attrs and op.variadic:
            tensor_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if is_tensor(kwargs[k])}
        if not op.attrs.keys() >= kwargs.keys() and not op.open_attrs:
            if not op.attrs:
                # MXNet parses attributes with the op's parameter struct (its attr_parser),
                # which refuses unknown names; an op without parameters has none, and MXNet
                # keeps and ignores whatever it is given (`broadcast_maximum(a, b, axis=1)`)
                kwargs = {}
            else:
                unknown = sorted(set(kwargs) - set(op.attrs))
                raise OpError(f"{op.name}: unknown argument(s) {unknown}; arrays: "
                              f"{list(op.inputs)}, attributes: {list(op.attrs)}")
    attrs = op.cached_attrs(kwargs) if kwargs else op.cached_attrs({})
    if op.variadic and op.open_attrs:
        return _keyword_arrays(op, args, tensor_kwargs or {}, attrs), attrs, name
    if op.variadic:
        if tensor_kwargs:
            raise OpError(f"{op.name} takes its arrays positionally, got keywords "
                          f"{sorted(tensor_kwargs)}")
        inputs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        for k, x in enumerate(inputs):
            if not is_tensor(x):
                raise OpError(f"{op.name}: argument {k} must be an array, got {type(x).__name__}")
        return inputs, attrs, name
    names = op.input_names(attrs)
    inputs = list(args)
    if len(inputs) > len(names):       # e.g. a None bias while no_bias=True
        if any(x is not None for x in inputs[len(names):]):
            raise OpError(f"{op.name} takes {len(names)} array argument(s) {list(names)} "
                          f"with these attributes, got {len(inputs)}")
        inputs = inputs[:len(names)]
    if len(inputs) < len(names):
        inputs += [None] * (len(names) - len(inputs))
    if tensor_kwargs:
        for k, input_name in enumerate(names):
            if input_name in tensor_kwargs:
                if k < len(args) and args[k] is not None:
                    raise OpError(f"{op.name}: '{input_name}' given twice")
                inputs[k] = tensor_kwargs.pop(input_name)
        for input_name, value in tensor_kwargs.items():
            if value is not None:   # e.g. bias given while no_bias=True
                raise OpError(f"{op.name}: '{input_name}' is not used with these attributes")
    for input_name, x in zip(names, inputs):
        if x is not None and not is_tensor(x):
            raise OpError(f"{op.name}: '{input_name}' must be an array, got {type(x).__name__} "
                          f"({x!r:.60})")
    return inputs, attrs, name


def _keyword_arrays(op: Op, args: tuple, given: dict, attrs: dict) -> list:
    """The arrays of a variadic op taking them by name too (Custom's `data=x, aux=a`):
    positional ones first, then each name of `op.input_names` in order; None for one not
    given (nd refuses it, sym makes a variable for it)."""
    names = op.input_names(attrs)
    if len(args) > len(names) or given.keys() - set(names[len(args):]):
        raise OpError(f"{op.name} takes the arrays {list(names)} with these attributes, got "
                      f"{len(args)} positionally and {sorted(given)} by name")
    return list(args) + [given.get(n) for n in names[len(args):]]


def _positional_attributes(op: Op, args: tuple, kwargs: dict, is_tensor: Callable):
    """Split `args` into the leading tensors (or None for a left-out optional input) and
    the attributes after them, which go into kwargs under the op's attribute names."""
    count = leading_tensors(op, args, is_tensor)
    if count == len(args):
        return args, kwargs
    extra = args[count:]
    attr_names = list(op.attrs)
    if len(extra) > len(attr_names):
        raise OpError(f"{op.name} takes {len(op.inputs)} array argument(s) {list(op.inputs)} "
                      f"and then at most {len(attr_names)} attribute(s) {attr_names}, got "
                      f"{len(extra)} more argument(s) {list(extra)!r:.80}")
    kwargs = dict(kwargs)
    for attr_name, value in zip(attr_names, extra):
        if attr_name in kwargs:
            raise OpError(f"{op.name}: attribute '{attr_name}' given twice (positionally "
                          f"and by keyword)")
        kwargs[attr_name] = value
    return args[:count], kwargs


def leading_tensors(op: Op, args: tuple, is_tensor: Callable) -> int:
    """How many of `args` are array inputs (tensors, or None for an optional one)."""
    count, limit = 0, len(op.inputs)
    for x in args:
        if count == limit or not (x is None or is_tensor(x)):
            break
        count += 1
    return count
