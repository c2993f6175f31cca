"""Look at a network's graph: ``plot_network`` draws it, ``print_summary`` tabulates it.

Both read the same IR the compiler runs (``straightdope.graph.Graph``), so what you see is
the graph that ``hybridize()`` executes::

    x = mx.sym.var('data')
    y = net(x)                                   # a hybridizable net, called on a Symbol
    mx.viz.plot_network(y, shape={'data': (1, 784)})      # a graphviz.Digraph
    mx.viz.print_summary(y, shape={'data': (1, 784)})

``graphviz`` (the Python package, plus the ``dot`` program to render) is imported only
inside ``plot_network``: the library itself does not need it.
"""
from __future__ import annotations

import warnings

import numpy as np

from .graph import Graph, annotate

__all__ = ['plot_network', 'print_summary']

# Variables with these name endings are parameters/states (drawn only if hide_weights=False).
_PARAM_SUFFIXES = ('weight', 'bias', 'gamma', 'beta', 'running_mean', 'running_var',
                   'moving_mean', 'moving_var')

# One fill colour per op family, like MXNet's plots (a Brewer "Set3" palette).
_COLORS = {
    'FullyConnected': '#fb8072', 'Convolution': '#fb8072', 'Deconvolution': '#fb8072',
    'Activation': '#ffffb3', 'LeakyReLU': '#ffffb3', 'relu': '#ffffb3', 'sigmoid': '#ffffb3',
    'tanh': '#ffffb3', 'softrelu': '#ffffb3',
    'BatchNorm': '#bebada', 'LayerNorm': '#bebada',
    'Pooling': '#80b1d3',
    'Concat': '#fdb462', 'concat': '#fdb462', 'Flatten': '#fdb462', 'flatten': '#fdb462',
    'reshape': '#fdb462', 'Reshape': '#fdb462',
    'SoftmaxOutput': '#b3de69', 'softmax': '#b3de69', 'log_softmax': '#b3de69',
}
_DEFAULT_COLOR = '#fccde5'
_DATA_COLOR = '#8dd3c7'


def _build_graph(symbol, shape, dtype):
    """The IR of `symbol`, annotated with shapes/dtypes when `shape` is given."""
    if not hasattr(symbol, 'list_inputs'):
        raise TypeError(f"plot_network/print_summary take a Symbol, got "
                        f"{type(symbol).__name__}. For a HybridBlock `net`, draw "
                        f"net(mx.sym.var('data')).")
    shape = dict(shape or {})
    names = symbol.list_inputs()
    unknown = sorted(set(shape) - set(names))
    if unknown:
        raise ValueError(f"shape names {unknown} are not inputs of this symbol; its inputs "
                         f"are {names}")
    data = [n for n in names if n in shape or not n.endswith(_PARAM_SUFFIXES)]
    graph = Graph.from_symbol(symbol, data_names=data)
    if shape:
        graph = annotate(graph, {k: tuple(v) for k, v in shape.items()},
                         {k: np.dtype(v) for k, v in (dtype or {}).items()})
    return graph


def _warn_repeated_names(symbol):
    """Two variables of one name (two layers both named 'fc') are two nodes here, but one
    node in a file saved from the graph (inputs are found by name): say so, as MXNet does."""
    if not hasattr(symbol, 'walk'):
        return
    names = [node.name for node in symbol.walk() if node.is_var]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this "
                      "may result in cyclic graph. Repeated names: " + ','.join(repeated),
                      stacklevel=3)


def _shape_label(shape):
    # Like MXNet: the batch axis is the same on every data edge, so leave it out.
    dims = shape[1:] if len(shape) > 1 else shape
    return 'x'.join(str(d) for d in dims)


def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None,
                 node_attrs={}, hide_weights=True):   # noqa: B006 (MXNet's signature)
    """Draw the graph of `symbol` as a ``graphviz.Digraph`` (data at the bottom).

    Parameters
    ----------
    symbol : Symbol            the network's output, e.g. ``net(mx.sym.var('data'))``
    title : str                the Digraph's name (also the file name of ``.render()``)
    save_format : str          the format ``.render()`` writes ('pdf', 'svg', 'png', ...)
    shape : {input name: shape}, optional   label every edge with the shape flowing along it
    dtype : {input name: dtype}, optional
    node_attrs : dict          Graphviz node attributes, e.g. ``{'shape': 'oval'}``
    hide_weights : bool        leave out parameter variables (weights, biases, BN states)

    In a notebook the returned Digraph displays itself; ``.pipe('svg')`` gives the picture's
    bytes and ``.render()`` writes a file.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError("plot_network needs the graphviz Python package and Graphviz's "
                          "`dot` program: pip install graphviz; apt-get install graphviz") \
            from None
    _warn_repeated_names(symbol)
    graph = _build_graph(symbol, shape, dtype)
    node_attr = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3', 'height': '0.8034',
                 'style': 'filled', 'fontname': 'Helvetica', 'fontsize': '11'}
    node_attr.update(node_attrs)
    dot = Digraph(name=title, format=save_format, node_attr=node_attr,
                  edge_attr={'fontname': 'Helvetica', 'fontsize': '9'})
    hidden = {n.id for n in graph.nodes
              if hide_weights and n.kind in ('param', 'aux')}
    outputs = {src for src, _ in graph.outputs}
    for node in graph.nodes:
        if node.id in hidden:
            continue
        if node.is_var:
            color = _DATA_COLOR if node.kind == 'data' else '#eeeeee'
            dot.node(f"n{node.id}", label=node.name, fillcolor=color, shape='oval',
                     fixedsize='false', tooltip=node.name)
        else:
            color = _COLORS.get(node.op.name, _DEFAULT_COLOR)
            # 'FullyConnected 128' -> op name over its key attributes, to fit the box.
            # (A backslash-n in DOT source is Graphviz's own line break.)
            label = node.label.replace(' ', '\\n', 1)
            extra = {'penwidth': '2.5'} if node.id in outputs else {}
            dot.node(f"n{node.id}", label=label, fillcolor=color, tooltip=node.name, **extra)
    for node in graph.nodes:
        if node.id in hidden:
            continue
        for src, index in node.inputs:
            if src in hidden:
                continue
            attrs = {'dir': 'back', 'arrowtail': 'open'}
            value_shape = graph.shape_of((src, index))
            if value_shape is not None:
                is_param = graph.nodes[src].kind in ('param', 'aux')
                attrs['label'] = ('x'.join(map(str, value_shape)) if is_param
                                  else _shape_label(value_shape))
            # Edges point from an op to its input, drawn backwards: the data flows upwards.
            dot.edge(f"n{node.id}", f"n{src}", **attrs)
    return dot


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Print a table of the layers: name (op), output shape, parameter count, inputs.

    ``shape`` ({input name: shape}) is needed for output shapes and parameter counts.
    Returns the total number of parameters (printed last), or None without shapes.
    """
    graph = _build_graph(symbol, shape, None)
    stops = [int(line_length * p) for p in positions]
    header = ['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer']

    def row(fields):
        line = ''
        for text, stop in zip(fields, stops):
            line = (line + str(text))[:stop].ljust(stop)
        print(line.rstrip())

    print('_' * line_length)
    row(header)
    print('=' * line_length)
    known = graph.nodes[0].shapes is not None
    total = 0
    shown = [n for n in graph.nodes if not n.is_var or n.kind == 'data']
    for k, node in enumerate(shown):
        kind = 'null' if node.is_var else node.op.name
        out = node.shapes[0] if node.shapes else None
        out_text = 'x'.join(map(str, out[1:] if len(out) > 1 else out)) if out else ''
        params = graph.num_params(node) if not node.is_var else 0
        total += params
        params = params if known else ''
        previous = [graph.nodes[s].name for s, _ in node.inputs
                    if graph.nodes[s].kind not in ('param', 'aux')]
        row([f"{node.name}({kind})", out_text, params, previous[0] if previous else ''])
        for name in previous[1:]:
            row(['', '', '', name])
        print(('=' if k == len(shown) - 1 else '_') * line_length)
    if not known:
        print("Total params: unknown (give shape={'data': ...} to count them)")
        print('_' * line_length)
        return None
    print(f"Total params: {total}")
    print('_' * line_length)
    return total
