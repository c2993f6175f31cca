"""Automatic names for graph nodes: `fullyconnected0`, or `dense0_fwd` under a prefix.

Gluon blocks open `Prefix('dense0_')` while they trace, so the nodes of the
graph carry the name of the layer that made them.
"""
import threading
import warnings

_local = threading.local()


class _ClassWithCurrent(type):
    @property
    def current(cls):
        """MXNet 1.x's deprecated `NameManager.current`: this thread's manager."""
        warnings.warn("NameManager.current has been deprecated. It is advised to use the "
                      "`with` statement with NameManager.", DeprecationWarning, stacklevel=2)
        return current()

    @current.setter
    def current(cls, manager):
        _local.manager = manager


class NameManager(metaclass=_ClassWithCurrent):
    """Hands out `hint` + a per-hint counter for nodes that were not named."""

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        if name:
            return name
        hint = hint.lower()
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = current()
        _local.manager = self
        return self

    def __exit__(self, *exc):
        _local.manager = self._old


class Prefix(NameManager):
    """Names every node `prefix + name` (explicit names too)."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    manager = getattr(_local, "manager", None)
    if manager is None:
        manager = _local.manager = NameManager()
    return manager
