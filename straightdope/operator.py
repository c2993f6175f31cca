"""`mx.operator`: what the op registry holds, asked MXNet's way.

`get_all_registered_operators()` lists every op name (aliases included);
`get_operator_arguments('Activation')` gives its arguments as MXNet describes them:
`OperatorArguments(narg=2, names=['data', 'act_type'], types=['NDArray-or-Symbol',
"{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"])`.
MXNet's `CustomOp`/`CustomOpProp` (Python-defined ops) are not here: write an
`autograd.Function`, or register an op in `straightdope/ops/`.
"""
import collections

from .ops import OPS, OpError

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
