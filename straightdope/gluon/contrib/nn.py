"""MXNet 1.x's `gluon.contrib.nn` containers, which MXNet 2.0 moved to `gluon.nn` (the same
classes, re-exported)."""
from ..nn import Concurrent, HybridConcurrent, Identity

__all__ = ["Concurrent", "HybridConcurrent", "Identity"]
