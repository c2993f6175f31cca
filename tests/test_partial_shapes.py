"""Shape inference from partly known shapes through slice, slice_axis, broadcast_to and
reshape, as MXNet's rules give it (its test_slice_partial_infer, test_reshape): what an
unknown dim makes unknown, and what a known output tells an unknown input dim."""
import numpy as np
import pytest

from straightdope import nd, sym
from straightdope.base import MXNetError


def _partial_out(s, **shapes):
    return s.infer_shape_partial(**shapes)[1][0]


def test_slice_of_an_unknown_dim_is_unknown_unless_the_axis_stays_whole():
    data = sym.var("data", shape=(0, 20))
    assert _partial_out(sym.slice(data, begin=(None, 3), end=(5, 10))) == (0, 7)
    assert _partial_out(sym.slice(data, begin=(None, None), end=(None, 10),
                                  step=(None, 2))) == (0, 5)
    assert _partial_out(sym.slice_axis(sym.var("x", shape=(10, 0)), axis=0, begin=0,
                                       end=5)) == (5, 0)
    # a whole axis is the same dim: a later op's known shape fills the data's
    y = sym.slice(data, begin=(None, 3), end=(None, 10)) + sym.ones((4, 7))
    args, _, _ = y.infer_shape()
    assert args[0] == (4, 20)


def test_broadcast_to_knows_its_output_from_the_target():
    x = sym.var("x", shape=(0, 3, 1))
    assert _partial_out(sym.broadcast_to(x, shape=(2, 0, 5))) == (2, 3, 5)
    args, outs, _ = (sym.broadcast_to(sym.var("y", shape=(1, 0)), shape=(4, 0))
                     + sym.ones((4, 6))).infer_shape()
    assert args[0] == (1, 6) and outs[0] == (4, 6)
    with pytest.raises(ValueError, match="broadcast_to: cannot broadcast"):
        sym.broadcast_to(sym.var("z", shape=(0, 3)), shape=(2, 4)).infer_shape_partial()


@pytest.mark.parametrize("src, code, reverse", [
    ((2, 3, 5, 5), (0, -1), False), ((2, 3, 5, 4), (-1, 0, 0), False),
    ((2, 3, 5, 5), (0, -1), True), ((2, 3, 5, 6), (-3, -3), True),
    ((64, 1, 2, 3), (-4, 16, -1, -2), False)])
def test_reshape_fills_the_one_unknown_data_dim_from_a_known_output(src, code, reverse):
    want = nd.ones(src).reshape(code, reverse=reverse).shape
    for k in range(len(src)):
        held = tuple(0 if j == k else d for j, d in enumerate(src))
        y = sym.elemwise_add(sym.var("data").reshape(code, reverse=reverse), sym.ones(want))
        args, outs, _ = y.infer_shape(data=held)
        assert args[0] == src and outs[0] == want


def test_reshape_reverse_split_and_the_old_target_shape():
    # -4 splits into the next two numbers, read from the right with reverse=True (MXNet)
    assert nd.ones((64,)).reshape((16, 4, -4), reverse=True).shape == (16, 4)
    assert nd.ones((1, 2, 3, 64)).reshape((-2, -1, 16, -4), reverse=True).shape == \
        (1, 2, 3, 4, 16)
    # the deprecated target_shape: its one 0 is inferred; keep_highest keeps dim 0
    x = np.arange(150.0).reshape(2, 3, 5, 5)
    y = nd.Reshape(nd.array(x), target_shape=(2, 0))
    np.testing.assert_array_equal(y.asnumpy(), x.reshape(2, 75))
    assert nd.Reshape(nd.array(x), target_shape=(7, 0, 5), keep_highest=True).shape == \
        (2, 15, 5)
    s = sym.load_json(sym.Reshape(sym.var("data"), target_shape=(2, 0)).tojson())
    assert s.infer_shape(data=(2, 3, 5, 5))[1][0] == (2, 75)


@pytest.mark.parametrize("hybrid_tier", ["bind", "eval"])
def test_a_creation_ops_unknown_dims_come_from_the_graph(hybrid_tier):
    """sym.ones(shape=(2, -1)): -1 is a dim the other ops decide (MXNet's
    test_transpose_infer_shape_back/_mixed), both ways through transpose."""
    b = sym.ones(shape=(2, -1)) + sym.transpose(sym.ones(shape=(3, -1)))
    assert b.infer_shape()[1] == [(2, 3)]
    x = np.arange(6.0).reshape(3, 2)
    c = sym.zeros(shape=(-1, -1)) + sym.var("x")
    if hybrid_tier == "bind":
        out = c.bind(None, args={"x": nd.array(x)}).forward()[0]
    else:
        out = c.eval(x=nd.array(x))[0]
    np.testing.assert_array_equal(out.asnumpy(), x)
    y = b.bind(None, args={}).forward()[0]
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match="_zeros: shape \\(2, -1\\) has dims \\(-1\\) that "
                                         "nothing in the graph decides"):
        sym.zeros(shape=(2, -1)).eval()
    with pytest.raises(MXNetError, match="bind: the arguments' shapes do not decide"):
        sym.zeros(shape=(2, -1)).bind(None, args={})
