"""Kernel paths the small op cases do not reach: convolution over several batches of
images (chunked im2col), the 2x2 max-pool fast path next to the general one, the
generic 6-d reduction, strided slices with negative steps, Dropout with shared axes."""
import numpy as np
import pytest

from straightdope import sym
from straightdope.compiler import NumbaBackend
from straightdope.compiler.kernels import conv
from straightdope.graph import Graph, annotate, run_reference


def check(symbol, shapes, rtol=1e-5, atol=1e-5, is_train=False, seed=0, compare=True):
    rng = np.random.default_rng(seed)
    graph = annotate(Graph.from_symbol(symbol, []), shapes)
    inputs = [rng.standard_normal(n.shapes[0]).astype(np.float32) for n in graph.nodes
              if n.is_var]
    ex = NumbaBackend().compile(graph, is_train=is_train)
    got = ex.run(inputs)
    for a, b in zip(got, run_reference(graph, inputs, is_train)):
        assert a.shape == b.shape and a.dtype == b.dtype
        if compare:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return ex, got


def test_convolution_over_several_chunks_of_images():
    x, w = sym.var("x"), sym.var("w")
    # K*P = 18 * 100 * 100 elements per image: CHUNK holds fewer than the 12 images
    n = 12
    assert conv.CHUNK // (18 * 100 * 100) < n
    y = sym.Convolution(x, w, kernel=(3, 3), num_filter=2, pad=(1, 1), no_bias=True)
    check(sym.Group([y, sym.sum(y * y)]), {"x": (n, 2, 100, 100), "w": (2, 2, 3, 3)},
          rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("attrs", [dict(kernel=(2, 2), stride=(2, 2)),
                                   dict(kernel=(2, 2), stride=(1, 1)),
                                   dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1)),
                                   dict(kernel=(2, 2), stride=(2, 2),
                                        pooling_convention="full")])
def test_max_pool_fast_and_general_paths(attrs):
    x = sym.var("x")
    y = sym.Pooling(x, pool_type="max", **attrs)
    check(y, {"x": (2, 3, 7, 6)})


def test_generic_six_dim_reduction_and_negative_step_slices():
    x = sym.var("x")
    outs = [sym.sum(x, axis=(0, 2, 4)), sym.max(x, axis=(1, 3)),
            sym.slice(x, begin=(None, None, 3), end=(None, None, 0), step=(1, -1, -2)),
            sym.transpose(x, axes=(4, 2, 0, 3, 1))]
    check(sym.Group(outs), {"x": (2, 3, 4, 2, 3)})


def test_dropout_shares_its_mask_along_axes():
    x = sym.var("x")
    ex, (y,) = check(sym.Dropout(x, p=0.5, axes=(1,)), {"x": (4, 6, 5)}, is_train=True,
                     compare=False)                  # random: checked below
    kept = y != 0
    assert (kept == kept[:, :1, :]).all()          # one mask value along axis 1
    assert 0 < kept.mean() < 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_through_numpys_gemm_and_through_np_dot_agree_with_numpy(dtype, monkeypatch):
    """blas.matmul calls NumPy's own cblas gemm when it found it, np.dot when its slot
    holds 0 (a NumPy without that BLAS); both give NumPy's products, for every transpose
    and for operands at offsets inside larger buffers."""
    from straightdope.compiler.kernels import blas
    rng = np.random.default_rng(1)
    slot = blas.GEMM_SLOTS[np.dtype(dtype).name]
    blas_info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    if blas_info.get("name") == "scipy-openblas" and "USE64BITINT" in str(blas_info):
        assert slot.value != 0                  # NumPy's wheels: their BLAS is found
    for found in (slot.value, 0):
        monkeypatch.setattr(slot, "value", found)
        for m, k, n, ta, tb in [(5, 7, 3, 0, 0), (5, 7, 3, 0, 1), (5, 7, 3, 1, 0),
                                (5, 7, 3, 1, 1), (64, 33, 17, 0, 1), (1, 9, 1, 1, 0),
                                (4, 0, 3, 0, 0)]:
            a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
            b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
            a_buf, b_buf = np.concatenate([[9.0], a.ravel()]).astype(dtype), b.ravel()
            c_buf = np.full(m * n + 3, np.nan, dtype)
            blas.matmul(a_buf, 1, b_buf, 0, c_buf, 2, m, k, n, ta, tb)
            want = (a.T if ta else a) @ (b.T if tb else b)
            np.testing.assert_allclose(c_buf[2:2 + m * n].reshape(m, n), want,
                                       rtol=1e-5, atol=1e-5)
            assert np.isnan(c_buf[:2]).all() and np.isnan(c_buf[2 + m * n:]).all()
