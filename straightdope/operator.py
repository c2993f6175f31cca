"""`mx.operator`: what the op registry holds, asked MXNet's way.

`get_all_registered_operators()` lists every op name (aliases included);
`get_operator_arguments('Activation')` gives its arguments as MXNet describes them:
`OperatorArguments(narg=2, names=['data', 'act_type'], types=['NDArray-or-Symbol',
"{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"])`.

Ops written in Python, as MXNet's: subclass `CustomOp` (forward, backward: they write
into the arrays they are handed, with `self.assign`) and `CustomOpProp` (inputs, outputs,
shapes, dtypes; `create_operator` makes the CustomOp), register the prop with
`@mx.operator.register("name")`, call it with `nd.Custom(x, op_type="name")` or
`sym.Custom(...)`. The registry op `Custom` (straightdope/ops/custom.py) runs them.
MXNet's older `PythonOp`/`NumpyOp`/`NDArrayOp` (deprecated there too) are Custom ops here.
"""
import collections
import itertools
import warnings

import numpy as np

from .ops import OPS, OpError
from .ops import custom as _custom

OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])

_KIND_NAMES = {"int": "int", "float": "float", "bool": "boolean", "shape": "Shape(tuple)",
               "str": "string", "int_or_none": "int or None",
               "shape_or_none": "Shape or None", "float_or_none": "float or None"}


def get_all_registered_operators():
    """Every op name the registry knows, as a list of strings."""
    return sorted(OPS)


def _type_text(attr):
    if attr.choices:
        kind = "{" + ", ".join(repr(c) for c in sorted(attr.choices)) + "}"
    else:
        kind = _KIND_NAMES.get(attr.kind, attr.kind)
    if attr.required:
        return f"{kind}, required"
    default = attr.default
    if attr.kind == "bool":
        default = int(bool(default))
    elif attr.choices or default is None:
        default = repr(str(default))
    return f"{kind}, optional, default={default}"


def get_operator_arguments(op_name):
    """The arrays and attributes op `op_name` takes: names and MXNet's type strings."""
    if op_name not in OPS:
        raise OpError(f"get_operator_arguments: no op named {op_name!r}; "
                      f"get_all_registered_operators() lists them")
    op = OPS[op_name]
    names, types = [], []
    for name in op.inputs:
        names.append(name)
        types.append("NDArray-or-Symbol[]" if op.variadic else "NDArray-or-Symbol")
    for name, attr in op.attrs.items():
        if attr.kind == "subgraphs":
            continue
        names.append(name)
        types.append(_type_text(attr))
    return OperatorArguments(len(names), names, types)


# ------------------------------------------------------------- ops in Python
class CustomOp:
    """An op's computation, written in Python (MXNet's `mx.operator.CustomOp`)."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute `out_data` (NDArrays to write into, `self.assign(out_data[i], req[i],
        value)`) from `in_data`; `aux`: auxiliary states, updated in place."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Write the gradients of the inputs into `in_grad` from `out_grad`."""

    def assign(self, dst, req, src):
        """Put `src` into `dst` as `req` says: 'null' (nothing), 'write'/'inplace', 'add'."""
        if req == "null":
            return
        key = () if isinstance(dst, _np_ndarray_class()) else slice(None)
        if req in ("write", "inplace"):
            dst[key] = src
        elif req == "add":
            dst[key] += src
        else:
            raise ValueError(f"CustomOp.assign: req must be 'null', 'write', 'inplace' or "
                             f"'add', got {req!r}")


class CustomOpProp:
    """What a Python op looks like (MXNet's `mx.operator.CustomOpProp`): its inputs,
    outputs, their shapes and dtypes, and `create_operator`, which makes its CustomOp.
    need_top_grad: whether backward needs the outputs' gradients (False: a loss)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(input shapes, output shapes[, auxiliary shapes]) from the inputs' shapes."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(input dtypes, output dtypes[, auxiliary dtypes]) from the inputs' dtypes."""
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """Dense storage only ('default')."""
        for i, stype in enumerate(in_stype):
            if stype != "default":
                raise OpError(f"CustomOpProp: input {i} has storage type {stype!r}; "
                              f"straightdope has dense arrays only ('default')")
        return in_stype, ["default"] * len(self.list_outputs()), \
            ["default"] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(x) for x in lists)

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The values backward reads (MXNet frees the others early; here backward is
        handed all of them)."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp that computes, for inputs of these shapes and dtypes."""
        return CustomOp()


def register(reg_name):
    """`@register("name")` on a CustomOpProp subclass: `nd.Custom(..., op_type="name")`
    runs it. Registering a name again replaces the op."""
    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"mx.operator.register({reg_name!r}) takes a CustomOpProp "
                            f"subclass, got {prop_cls!r}")
        _custom.PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


def _np_ndarray_class():
    from .numpy.multiarray import ndarray
    return ndarray


def _wrap(array):
    """A NumPy array as the NDArray (mx.np.ndarray under np semantics) the user's code
    gets: the same memory, so what it writes lands in the op's output."""
    from . import util
    from .ndarray import NDArray
    return (_np_ndarray_class() if util.is_np_array() else NDArray)(array)


def _pause(train_mode=False):
    from . import autograd
    return autograd.pause(train_mode=train_mode)


_custom.FRONT.update(wrap=_wrap, pause=_pause)


# --------------------------------------------- MXNet's older, deprecated Python ops
class PythonOp:
    """MXNet's first Python ops (deprecated there in favour of CustomOp): `get_symbol`
    (or calling the object) makes a node of the graph that runs this object's forward
    and backward. Here each one is a Custom op registered under a name of its own."""
    _counter = itertools.count()

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp")

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The op applied to Symbols `args`: a Symbol."""
        from . import symbol
        if self.info_ is None:
            self.info_ = f"_{type(self).__name__}{next(PythonOp._counter)}"
            register(self.info_)(_legacy_prop(self))
        return symbol.Custom(*args, op_type=self.info_, **kwargs)

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A PythonOp whose forward and backward get NumPy arrays (and write into them)."""
    _arrays = "numpy"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp")


class NDArrayOp(PythonOp):
    """A PythonOp whose forward and backward get NDArrays (and write into them)."""
    _arrays = "ndarray"

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp")

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps


def _legacy_prop(python_op):
    """The CustomOpProp (and CustomOp) that run a PythonOp object."""
    def arrays(xs):
        return [x.asnumpy() for x in xs] if getattr(python_op, "_arrays", "") == "numpy" \
            else list(xs)

    def write_back(targets, values):
        for target, value in zip(targets, values):
            if value is not target:
                target[:] = value

    class LegacyOp(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            outs = arrays(out_data)
            python_op.forward(in_data=arrays(in_data), out_data=outs)
            write_back(out_data, outs)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            grads = arrays(in_grad)
            python_op.backward(out_grad=arrays(out_grad), in_data=arrays(in_data),
                               out_data=arrays(out_data), in_grad=grads)
            write_back(in_grad, grads)

    class LegacyProp(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=python_op.need_top_grad())

        def list_arguments(self):
            return python_op.list_arguments()

        def list_outputs(self):
            return python_op.list_outputs()

        def infer_shape(self, in_shape):
            ins, outs = python_op.infer_shape(in_shape)[:2]
            return ins, outs, []

        def infer_type(self, in_type):
            return in_type, [np.float32] * len(self.list_outputs()), []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return LegacyOp()
    return LegacyProp
