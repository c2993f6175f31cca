"""Ops written in Python (`mx.operator.CustomOp`, `CustomOpProp`, `register`), run by the
registry op `Custom`: imperatively, under autograd, in a bound Symbol, hybridized, and
MXNet's older `NumpyOp`/`NDArrayOp`. Each result is compared with NumPy."""
import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.base import MXNetError


class _Softplus(mx.operator.CustomOp):
    """log(1 + exp(beta x)) / beta. `ran` lists the methods this instance ran: imperative
    autograd runs backward on the instance that ran forward, as MXNet does (a compiled
    graph makes one for its backward with create_operator)."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

        self.ran = []

    def forward(self, is_train, req, in_data, out_data, aux):
        self.ran.append("forward")
        e = nd.exp(self.beta * in_data[0])
        self.assign(out_data[0], req[0], nd.log(1 + e) / self.beta)
        aux[0][:] += 1                          # counts the calls, in place

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.ran.append("backward")
        e = nd.exp(self.beta * in_data[0])
        self.assign(in_grad[0], req[0], out_grad[0] * e / (1 + e))
        _LAST[:] = [self]


_LAST = []     # the instance that ran the last backward


@mx.operator.register("test_softplus")
class _SoftplusProp(mx.operator.CustomOpProp):
    def __init__(self, beta="1"):
        super().__init__(need_top_grad=True)
        self.beta = float(beta)

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return ["calls"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return _Softplus(self.beta)


def _softplus(x, beta):
    return np.log1p(np.exp(beta * x)) / beta


def test_imperative_forward_backward_and_aux():
    x_np = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    x, calls = nd.array(x_np), nd.zeros((1,))
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, calls, op_type="test_softplus", beta=2)
    y.backward(nd.ones_like(y) * 3)
    np.testing.assert_allclose(y.asnumpy(), _softplus(x_np, 2.0), rtol=1e-5)
    e = np.exp(2 * x_np)
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * e / (1 + e), rtol=1e-5)
    assert calls.asnumpy().tolist() == [1.0]
    assert _LAST[0].ran == ["forward", "backward"]
    # arrays by the names the prop lists
    y2 = nd.Custom(data=x, calls=calls, op_type="test_softplus", beta="2")
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy())


def test_bound_symbol_and_hybridized_block():
    x_np = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    data = sym.var("data")
    s = sym.Custom(data=data, op_type="test_softplus", beta="0.5", name="sp")
    assert s.list_outputs() == ["sp_output"]
    assert s.list_arguments() == ["data"] and s.list_auxiliary_states() == ["sp_calls"]
    assert s.infer_shape(data=(3, 4))[1] == [(3, 4)]
    assert s.tojson().count('"beta": "0.5"') == 1
    grad = nd.zeros((3, 4))
    exe = s.bind(mx.cpu(), args={"data": nd.array(x_np)}, args_grad={"data": grad},
                 aux_states={"sp_calls": nd.zeros((1,))})
    exe.forward(is_train=True)
    exe.backward(nd.ones((3, 4)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), _softplus(x_np, 0.5), rtol=1e-5)
    e = np.exp(0.5 * x_np)
    np.testing.assert_allclose(grad.asnumpy(), e / (1 + e), rtol=1e-5)
    assert exe.aux_dict["sp_calls"].asnumpy().tolist() == [1.0]     # updated in place

    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, calls):
            return F.Custom(x * 2, calls, op_type="test_softplus") + 1

    net = Net()
    net.hybridize()
    x = nd.array(x_np)
    x.attach_grad()
    with autograd.record():
        out = net(x, nd.zeros((1,)))
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), _softplus(2 * x_np, 1.0) + 1, rtol=1e-5)
    e = np.exp(2 * x_np)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * e / (1 + e), rtol=1e-5)


def test_errors_in_the_python_code_are_mxnet_errors_naming_the_op():
    class Broken(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ZeroDivisionError("deliberately")

    @mx.operator.register("test_broken")
    class BrokenProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Broken()

    with pytest.raises(MXNetError, match="test_broken.*forward raised ZeroDivisionError"):
        nd.Custom(nd.ones((2,)), op_type="test_broken").wait_to_read()
    with pytest.raises(MXNetError, match="no custom op registered as op_type='nowhere'"):
        nd.Custom(nd.ones((2,)), op_type="nowhere")


def test_numpy_op_and_ndarray_op():
    class Double(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = 2 * in_data[0]

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * out_grad[0]

    class Cube(mx.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 3

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 3 * in_data[0] ** 2 * out_grad[0]

    with pytest.warns(UserWarning, match="deprecated"):
        double, cube = Double(), Cube()
    s = cube(double.get_symbol(sym.var("x")))
    x_np = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    grad = nd.zeros((3,))
    exe = s.bind(mx.cpu(), args={"x": nd.array(x_np)}, args_grad={"x": grad})
    exe.forward(is_train=True)
    exe.backward(nd.ones((3,)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), (2 * x_np) ** 3, rtol=1e-6)
    np.testing.assert_allclose(grad.asnumpy(), 3 * (2 * x_np) ** 2 * 2, rtol=1e-6)
