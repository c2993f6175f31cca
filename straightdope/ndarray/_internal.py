"""`nd._internal`: the ops whose names start with an underscore, under the module name
MXNet code reaches them by (`mx.nd._internal._slice_assign(x, v, begin, end, out=x)`).
They are the same generated functions as `nd._slice_assign`: nd/__init__.py puts them
here (as sym._internal holds sym's)."""


def __getattr__(name):
    raise AttributeError(f"module {__name__!r} has no attribute {name!r} (it holds the "
                         f"registry's ops whose names start with '_')")
