"""ONNX export and import: run a hybridized model in ONNX Runtime (C++, Java, C#, mobile,
a web page) and bring ONNX models back as a SymbolBlock.

    net.hybridize(); net(x); sym_file, params_file = net.export('lenet')
    from straightdope import onnx as sdonnx
    sdonnx.export_model(sym_file, params_file, [(1, 1, 28, 28)], np.float32, 'lenet.onnx',
                        dynamic=True, dynamic_input_shapes=[(None, 1, 28, 28)])
    net2 = sdonnx.import_model('lenet.onnx')            # a SymbolBlock, ready to call

`export_model` has the signature and meaning of MXNet 1.9's `mx.onnx.export_model`.
The `onnx` package is imported only when one of these functions runs
(`pip install straightdope[onnx]`); `import straightdope` never needs it.
"""
from __future__ import annotations

import os

import numpy as np

from .export import OPSET, TRANSLATORS, OnnxExportError
from .folding import FOLDS
from .importer import IMPORTERS, OnnxImportError, _require_onnx, import_model, import_to_gluon

__all__ = ["export_model", "import_model", "import_to_gluon", "export_coverage",
           "import_coverage", "OnnxExportError", "OnnxImportError", "OPSET"]


def _load_params(params) -> dict:
    """Parameter values by variable name, from a file, a dict or [arg_params, aux_params].
    Keys written by export() ('arg:NAME', 'aux:NAME') lose their prefix, as in MXNet."""
    if isinstance(params, (str, os.PathLike)):
        from ..serialization import load_arrays
        params = load_arrays(params)
    elif isinstance(params, (list, tuple)) and len(params) == 2 \
            and all(isinstance(p, dict) for p in params):
        params = {**params[0], **params[1]}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a file name, a dict of arrays or [arg_params, "
                        f"aux_params], got {type(params).__name__}")
    out = {}
    for key, value in params.items():
        name = key.split(":", 1)[1] if key.startswith(("arg:", "aux:")) else key
        out[name] = np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value)
    return out


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path="model.onnx", verbose=False, dynamic=False,
                 dynamic_input_shapes=None, input_type=None, input_shape=None):
    """Write an ONNX model of `sym` with the values `params`; returns onnx_file_path.

    sym: a Symbol or a '-symbol.json' file; params: a '.params' file, a dict
    {name: array} or [arg_params, aux_params]. in_shapes: one shape per data input
    (the graph's variables that are not parameters, in graph order); in_types: one dtype
    or one per input. dynamic=True lets dims vary at run time: all dims of every input
    when dynamic_input_shapes is None, else the dims given as None there, e.g.
    [(None, 1, 28, 28)] for a variable batch size. The model passes onnx.checker.
    (input_type/input_shape are MXNet's older names for in_types/in_shapes.)
    """
    _require_onnx()
    import onnx
    from ..symbol import Symbol, load as load_symbol

    in_types = input_type if input_type is not None else in_types
    in_shapes = input_shape if input_shape is not None else in_shapes
    if isinstance(sym, (str, os.PathLike)):
        sym = load_symbol(sym)
    if not isinstance(sym, Symbol):
        raise TypeError(f"sym must be a Symbol or a symbol file name, got {type(sym).__name__}")
    values = _load_params(params)
    data_names = [n for n in sym.list_inputs() if n not in values]
    if in_shapes is None or len(in_shapes) != len(data_names):
        raise ValueError(f"in_shapes needs one shape per data input {data_names}, got "
                         f"{in_shapes!r}")
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if len(in_types) != len(in_shapes):
        raise ValueError(f"in_types needs one dtype per input {data_names}, got {in_types!r}")
    shapes = {n: tuple(int(d) for d in s) for n, s in zip(data_names, in_shapes)}
    dtypes = {n: np.dtype(t) for n, t in zip(data_names, in_types)}
    dynamic_dims = {}
    if dynamic:
        given = dynamic_input_shapes or [(None,) * len(s) for s in in_shapes]
        if len(given) != len(in_shapes):
            raise ValueError("dynamic_input_shapes needs one entry per input, like in_shapes")
        for name, dyn, shape in zip(data_names, given, in_shapes):
            if len(dyn) != len(shape):
                raise ValueError(f"input '{name}': dynamic shape {tuple(dyn)} and shape "
                                 f"{tuple(shape)} differ in length")
            dynamic_dims[name] = {a for a, d in enumerate(dyn) if d is None}
    elif dynamic_input_shapes is not None:
        raise ValueError("dynamic_input_shapes is given but dynamic=False; pass dynamic=True")
    from .export import graph_to_onnx
    model = graph_to_onnx(sym, values, shapes, dtypes, dynamic_dims)
    if verbose:
        print(onnx.helper.printable_graph(model.graph))
    onnx.checker.check_model(model, full_check=True)
    from ..serialization import atomic_write
    atomic_write(onnx_file_path, lambda f: f.write(model.SerializeToString()))
    return onnx_file_path


def export_coverage() -> list[str]:
    """The straightdope ops that export_model translates."""
    return sorted(TRANSLATORS)


def import_coverage() -> list[str]:
    """The ONNX op types that import_model reads."""
    return sorted(set(IMPORTERS) | set(FOLDS))
