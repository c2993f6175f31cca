"""`mx.runtime.Features()`: which optional parts this build has, by MXNet's feature names.

MXNet asks its compiled library; straightdope has no native library, so the answers
come from what is true here: NumPy's detected CPU features, the BLAS NumPy uses,
and the features straightdope never has (CUDA, MKLDNN, kvstore, ...).

    >>> import straightdope as mx
    >>> mx.runtime.Features().is_enabled('CUDA')
    False
"""
import collections

import numpy as np

# MXNet 1.9's feature names (libinfo.h), in its order.
MXNET_FEATURES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature(collections.namedtuple("Feature", ["name", "enabled"])):
    """One feature: its `name` and whether it is `enabled`."""

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _cpu_flags():
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:      # older NumPy
        return {}
    return __cpu_features__


def feature_list():
    """Every feature, enabled or not, as a list of `Feature`."""
    cpu = _cpu_flags()
    enabled = {
        "CPU_SSE": cpu.get("SSE", False), "CPU_SSE2": cpu.get("SSE2", False),
        "CPU_SSE3": cpu.get("SSE3", False), "CPU_SSE4_1": cpu.get("SSE41", False),
        "CPU_SSE4_2": cpu.get("SSE42", False), "CPU_AVX": cpu.get("AVX", False),
        "CPU_AVX2": cpu.get("AVX2", False), "SSE": cpu.get("SSE", False),
        "F16C": cpu.get("F16C", False), "CXX14": True, "SIGNAL_HANDLER": False,
        # NumPy and SciPy bring their own OpenBLAS and LAPACK
        "BLAS_OPEN": "openblas" in str(np.show_config(mode="dicts")).lower(),
        "LAPACK": True,
    }
    return [Feature(name, bool(enabled.get(name, False))) for name in MXNET_FEATURES]


class Features(collections.OrderedDict):
    """Name -> Feature for every feature; one shared instance, as in MXNet."""
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super().__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):
        pass                       # filled once, in __new__

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """True if the feature is on; an unknown name is a RuntimeError that lists them."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"unknown feature {feature_name!r}; the features are "
                               f"{list(self)}")
        return self[name].enabled
