"""topk of a few among many (ops/sorting.py) partitions each row instead of sorting it: the
result must be the full stable sort's first k, ties (lower position first ascending, higher
first descending) and NaN (the largest) included."""
import numpy as np
import pytest

import straightdope as mx


def reference(x, axis, k, is_ascend):
    """MXNet's topk indices by a full stable sort, in NumPy."""
    order = np.argsort(x, axis=axis, kind="stable")
    if not is_ascend:
        order = np.flip(order, axis=axis)
    return np.take(order, np.arange(k), axis=axis)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("is_ascend", [True, False])
def test_topk_of_few_among_many_equals_the_full_sort(seed, is_ascend):
    rng = np.random.default_rng(seed)
    dtype = [np.float32, np.float64, np.int32][seed % 3]
    high = [3, 50, 10 ** 6][seed % 3]           # 3: many ties at the k-th value
    x = rng.integers(0, high, size=(3, 2, 2000)).astype(dtype)
    if dtype != np.int32 and seed % 2:
        x[rng.random(x.shape) < 0.3] = np.nan
    axis = [2, 0][seed % 2] if seed < 4 else None
    data = np.moveaxis(x, 2, 0).copy() if axis == 0 else x
    k = int(rng.integers(1, 40))
    got = mx.nd.topk(mx.nd.array(data, dtype=dtype), axis=axis, k=k, is_ascend=is_ascend,
                     ret_typ="indices", dtype="int64").asnumpy()
    flat = data.reshape(-1) if axis is None else data
    expected = reference(flat, 0 if axis is None else axis, k, is_ascend)
    np.testing.assert_array_equal(got, expected)
    values = mx.nd.topk(mx.nd.array(data, dtype=dtype), axis=axis, k=k, is_ascend=is_ascend,
                        ret_typ="value").asnumpy()
    along = 0 if axis is None else axis
    np.testing.assert_array_equal(values, np.take_along_axis(flat, expected, axis=along))
