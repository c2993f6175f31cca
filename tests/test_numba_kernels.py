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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nt_products_computed_swapped_agree_with_numpy_inside_and_outside_the_rule(dtype):
    """blas.matmul computes some NT products (FullyConnected's x @ w.T) as (w @ x.T).T
    through a scratch array and a transpose: the products agree with NumPy's,
    whether the rule picks that form or not, forced either way, for operands and
    results at offsets inside larger buffers, and odd shapes."""
    from straightdope.compiler.kernels import blas
    rng = np.random.default_rng(2)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for m, k, n in [(64, 512, 256), (8, 256, 192), (16, 257, 200), (64, 256, 128),
                    (63, 256, 256), (8, 512, 128), (4, 300, 300), (5, 7, 3), (13, 17, 29),
                    (2, 9, 3), (1, 9, 5)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((n, k)).astype(dtype)
        a_buf = np.concatenate([[9.0, 9.0, 9.0], a.ravel()]).astype(dtype)
        b_buf = np.concatenate([[9.0], b.ravel()]).astype(dtype)
        for call in (lambda c: blas.matmul(a_buf, 3, b_buf, 1, c, 2, m, k, n, 0, 1),
                     lambda c: blas.matmul_with(a_buf, 3, b_buf, 1, c, 2, m, k, n, 0, 1, True),
                     lambda c: blas.matmul_with(a_buf, 3, b_buf, 1, c, 2, m, k, n, 0, 1, False)):
            c_buf = np.full(m * n + 5, np.nan, dtype)
            call(c_buf)
            np.testing.assert_allclose(c_buf[2:2 + m * n].reshape(m, n), a @ b.T, **tol)
            assert np.isnan(c_buf[:2]).all() and np.isnan(c_buf[2 + m * n:]).all()


def test_the_rule_swaps_float32_nt_products_of_a_batch_of_8_to_64_against_a_wide_result(
        monkeypatch):
    """swapped_is_faster: the region where the swapped form measured clearly faster
    (benchmarks/gemm.py) on OpenBLAS's AVX-512 kernels, nothing else; W2/W4's first layer
    (batch 64, 512 -> 256) is in. On its other kernels (AVX2) nothing is swapped."""
    from straightdope.compiler.kernels import blas
    from straightdope.compiler.kernels.blas import swapped_is_faster
    monkeypatch.setattr(blas.SWAP_SLOT, "value", 1)      # the compiled code reads the slot
    inside = [(64, 256, 512), (8, 192, 256), (16, 1024, 256), (32, 256, 1024),
              (56, 224, 300), (64, 4096, 4096)]
    outside = [(1, 256, 512),             # batch 1: np.dot, bit-identical to NumPy's gemv
               (4, 1024, 512),            # m below 8
               (63, 256, 512),            # m not a multiple of 8
               (128, 512, 512),           # m above 64
               (64, 128, 256),            # W2/W4's second layer: C not 4 times wider than tall
               (8, 128, 512),             # n below 192
               (64, 2, 128),              # the last layer
               (64, 256, 128)]            # k below 256
    for m, n, k in inside:
        assert swapped_is_faster(m, n, k, 4), (m, n, k)
        assert not swapped_is_faster(m, n, k, 8), (m, n, k)      # float64: never
    for m, n, k in outside:
        assert not swapped_is_faster(m, n, k, 4), (m, n, k)
    blas.SWAP_SLOT.value = 0                             # AVX2 kernels: never
    assert not any(swapped_is_faster(m, n, k, 4) for m, n, k in inside)


def test_the_swap_follows_the_kernels_openblas_runs():
    """The slot says whether the kernels NumPy's OpenBLAS chose at load are AVX-512 ones
    (the environment's OPENBLAS_CORETYPE, if any, chose them: tests never set it)."""
    from straightdope.compiler.kernels import blas
    core = blas._openblas_core()
    if not core:
        pytest.skip("NumPy's BLAS does not name its kernels")
    assert blas.SWAP_SLOT.value == (core in blas.SWAP_CORES)
