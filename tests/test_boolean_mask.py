"""contrib.boolean_mask: an output whose shape depends on the index's values, imperative
and in a hybridized block, where the backward graph is compiled once the forward has run
(its output gradient's shape is not known before)."""
import numpy as np
import pytest

from straightdope import autograd, gluon, nd


class _Masked(gluon.HybridBlock):
    def hybrid_forward(self, F, data, index):
        return F.contrib.boolean_mask(data, index) * 2


@pytest.mark.parametrize("hybridize", [False, True])
def test_boolean_mask_forward_and_gradient(hybridize):
    block = _Masked()
    if hybridize:
        block.hybridize()
    data = nd.array(np.arange(12.0).reshape(4, 3))
    data.attach_grad()
    for index in ([0, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]):   # three output lengths
        with autograd.record():
            out = block(data, nd.array(index))
        out.backward(nd.ones(out.shape) * 3)
        kept = np.flatnonzero(index)
        assert out.shape == (len(kept), 3)
        np.testing.assert_array_equal(out.asnumpy(), 2 * np.arange(12.0).reshape(4, 3)[kept])
        want = np.zeros((4, 3))
        want[kept] = 6.0
        np.testing.assert_array_equal(data.grad.asnumpy(), want)


def test_boolean_mask_refuses_an_index_of_the_wrong_length():
    with pytest.raises(ValueError, match="boolean_mask: index must be 1-D with one entry per "
                                         "slice of data along axis 0 \\(4\\)"):
        nd.contrib.boolean_mask(nd.ones((4, 3)), nd.array([1, 0]))
