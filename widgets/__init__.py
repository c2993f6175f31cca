"""Interactive widgets for the book: look inside a HybridBlock while it runs.

    from widgets import GraphView, TraceInspector, BenchmarkPlot

- `GraphView(net, x)`: the graph that hybridize() traced, stage by stage (traced, shapes
  inferred, fused, memory planned), drawn from the very objects the executor runs.
- `TraceInspector(net, x)`: what `print` inside hybrid_forward shows, imperative vs
  hybridized, call after call (the prints fire once, at trace time).
- `BenchmarkPlot(make_net, (1, 512))`: time per call, imperative vs hybridized, live.
- `Timeline()`: the profiler's trace, one row per thread: which thread ran which op, when.

They need ipywidgets, matplotlib and graphviz (the `book` extra); `import straightdope`
never imports them. The names load lazily, so `widgets.training` does not pay for
ipywidgets or graphviz.
"""
import importlib

__all__ = ["GraphView", "TraceInspector", "BenchmarkPlot", "Timeline"]

_HOME = {"GraphView": "graph_view", "TraceInspector": "trace_inspector",
         "BenchmarkPlot": "benchmark_plot", "Timeline": "timeline"}


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
