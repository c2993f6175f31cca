"""`AttrScope`: attributes every Symbol made inside a `with` block gets (MXNet's
`mx.attribute.AttrScope`, also `mx.AttrScope`).

    with mx.AttrScope(ctx_group='dev1', __mood__='calm'):
        w = mx.sym.var('w')            # w.attr('ctx_group') == 'dev1'

Attributes are strings. An attribute given to the Symbol itself (`attr={...}`) wins over the
scope's; inner scopes add to outer ones. The current scope is per thread, as in MXNet.
"""
import collections
import threading
import warnings


class _Current(threading.local):
    value = None


class _ClassProperty(type):
    """Makes `AttrScope.current` readable and assignable on the class (MXNet's old API)."""

    @property
    def current(cls):
        warnings.warn("AttrScope.current has been deprecated. It is advised to use the "
                      "`with` statement with AttrScope.", DeprecationWarning, stacklevel=2)
        return cls._get_current()

    @current.setter
    def current(cls, scope):
        warnings.warn("AttrScope.current has been deprecated. It is advised to use the "
                      "`with` statement with AttrScope.", DeprecationWarning, stacklevel=2)
        cls._current.value = scope


class AttrScope(metaclass=_ClassProperty):
    """Attributes (string values) for every Symbol created in the scope."""
    _current = _Current()
    # how many control-flow subgraphs (sym.contrib foreach/while_loop/cond) got each name,
    # as MXNet counts them (see unique_subgraph_name)
    _subgraph_names = collections.defaultdict(int)

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute '{key}' must be a string, got "
                                 f"{value!r} ({type(value).__name__}); write it as a string")
        self._old_scope = None
        self._attr = kwargs

    @classmethod
    def _get_current(cls):
        if cls._current.value is None:
            cls._current.value = AttrScope()
        return cls._current.value

    def get(self, attr):
        """The scope's attributes updated with `attr` (the ones given to the Symbol)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old_scope = AttrScope._get_current()
        self._attr = {**self._old_scope._attr, **self._attr}
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old_scope


def current_attrs(attr=None):
    """The attributes a new Symbol gets: the current scope's, updated with `attr`."""
    return AttrScope._get_current().get(attr)


def unique_subgraph_name(name):
    """MXNet's name for a control-flow subgraph built now: `name` numbered by how many got
    it before (`cond_then0`, `cond_then1`...), prefixed `outer$` inside another subgraph.
    The subgraph's nodes are made inside `AttrScope(__subgraph_name__=...)` with it."""
    outer = AttrScope._get_current()._attr.get("__subgraph_name__", "")
    if outer:
        name = f"{outer}${name}"
    AttrScope._subgraph_names[name] += 1
    return f"{name}{AttrScope._subgraph_names[name] - 1}"
