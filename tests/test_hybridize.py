"""hybridize(): trace once with F=symbol, compile with a CachedOp, then run without Python.

Tests about the mechanism run with both executors: the NumPy reference interpreter and the
Numba compiler (skipped with a reason while `straightdope.compiler` does not import, or
while it has no kernel for an op a test needs).
"""
from contextlib import contextmanager

import numpy as np
import pytest

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope import np as snp
from straightdope.base import NotImplementedForSymbol
from straightdope.gluon import HybridBlock, Block, Parameter, nn
from straightdope.ops import OpError

try:
    import straightdope.compiler  # noqa: F401
    NUMBA_ERROR = None
except Exception as err:          # the compiler is optional while it is being built
    NUMBA_ERROR = err


@pytest.fixture(params=["numpy", "numba"])
def executor(request):
    if request.param == "numba" and NUMBA_ERROR is not None:
        pytest.skip(f"straightdope.compiler does not import yet ({NUMBA_ERROR!r}); the "
                    f"numba executor falls back to the NumPy reference until it does")
    return request.param


@contextmanager
def kernels_permitting():
    """Skip (with the compiler's message) when the Numba backend lacks a kernel."""
    try:
        yield
    except Exception as err:
        if "has no Numba kernel" in str(err):
            pytest.skip(f"the Numba compiler cannot run this graph yet: {err}")
        raise


def rtol_for(executor):
    return 1e-6 if executor == "numpy" else 1e-4


def mlp(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dense(6, activation="tanh"), nn.Dense(3))
    return net


class Counting(HybridBlock):
    """Counts how often its Python forward runs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.python_calls = 0
        with self.name_scope():
            self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        self.python_calls += 1
        return F.relu(self.dense(x))


# ----------------------------------------------------------- trace once, run
def test_trace_once_then_run_the_cached_graph(executor):
    net = Counting()
    net.initialize()
    x = nd.random.uniform(shape=(2, 5))
    y_imperative = net(x).asnumpy()
    net(x)
    assert net.python_calls == 2 and net.trace_count == 0 and net._cached_op is None
    net.hybridize(executor=executor)
    assert net.python_calls == 2            # hybridize() only sets flags
    np.testing.assert_allclose(net(x).asnumpy(), y_imperative, rtol=rtol_for(executor))
    assert net.python_calls == 3 and net.trace_count == 1
    for batch in (2, 5, 1, 5):              # new shapes compile again, never re-trace
        assert net(nd.random.uniform(shape=(batch, 5))).shape == (batch, 4)
    assert net.python_calls == 3 and net.trace_count == 1
    assert net._cached_op.compiles == 3 and net._cached_op.calls == 5
    net.hybridize(active=False)             # back to Python every call
    net(x)
    assert net.python_calls == 4


def test_outputs_and_gradients_equal_before_and_after(executor):
    net = mlp()
    net.initialize(mx.init.Xavier())
    x = nd.random.normal(shape=(4, 5))
    head = nd.random.normal(shape=(4, 3))

    def run():
        x.attach_grad()
        with autograd.record():
            y = net(x)
            loss = (y * head).sum()
        loss.backward()
        return (y.asnumpy(), x.grad.asnumpy(),
                {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()})

    y0, dx0, g0 = run()
    net.hybridize(executor=executor)
    y1, dx1, g1 = run()
    tol = dict(rtol=rtol_for(executor), atol=1e-6)
    np.testing.assert_allclose(y1, y0, **tol)
    np.testing.assert_allclose(dx1, dx0, **tol)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], err_msg=k, **tol)


def test_hybridize_before_initialize_and_before_any_shape_is_known(executor):
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(10))
    net.hybridize(executor=executor)
    net.initialize()
    out = net(nd.random.uniform(shape=(32, 28)))
    assert out.shape == (32, 10) and net.trace_count == 1
    assert net[0].weight.shape == (16, 28) and net[1].weight.shape == (10, 16)


def test_symbol_input_builds_a_graph_without_touching_the_cache():
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    net.hybridize()
    out = net(sym.var("data"))
    assert isinstance(out, mx.sym.Symbol) and repr(out) == \
        "<Symbol hybridsequential0_dense1_fwd>"
    assert out.list_arguments() == ["data", "hybridsequential0_dense0_weight",
                                    "hybridsequential0_dense0_bias",
                                    "hybridsequential0_dense1_weight",
                                    "hybridsequential0_dense1_bias"]
    names = [n["name"] for n in __import__("json").loads(out.tojson())["nodes"]]
    assert "hybridsequential0_dense0_fwd" in names
    assert "hybridsequential0_dense0_relu_fwd" in names
    assert net.trace_count == 0 and net._cached_op is None
    arg_shapes, out_shapes, _ = out.infer_shape(data=(7, 3))
    assert out_shapes == [(7, 2)] and arg_shapes[1] == (4, 3)


class NumpyStyle(HybridBlock):
    """MXNet 2.0 style: forward(x) with np ops and self.weight.data()."""

    def __init__(self, units, in_units=-1):
        super().__init__()
        self.weight = Parameter("weight", shape=(in_units, units), allow_deferred_init=True)
        self.bias = Parameter("bias", shape=(units,), allow_deferred_init=True)
        self.seen = []

    def forward(self, x):
        w = self.weight.data()
        self.seen.append(type(w).__name__)
        return snp.tanh(snp.dot(x, w) + self.bias.data())

    def infer_shape(self, x):
        self.weight.shape = (x.shape[-1], self.weight.shape[1])


def test_numpy_style_forward_is_traced_with_parameter_variables(executor):
    net = NumpyStyle(3)
    net.initialize()
    x = snp.random.uniform(size=(4, 5))
    y = net(x)
    assert net.seen[-1] == "NDArray" and net.weight.shape == (5, 3)
    net.hybridize(executor=executor)
    np.testing.assert_allclose(net(x).asnumpy(), y.asnumpy(), rtol=rtol_for(executor))
    assert net.seen[-1] == "Symbol" and net.trace_count == 1


def test_custom_infer_shape_inside_a_hybridized_parent(executor):
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation="relu"), NumpyStyle(2))
    net.initialize()
    net.hybridize(executor=executor)
    x = nd.random.uniform(shape=(3, 4))
    y = net(x)              # dot cannot infer the weight: one Python run learns it
    assert y.shape == (3, 2) and net[1].weight.shape == (6, 2)
    assert net.trace_count == 1
    net.hybridize(active=False)
    np.testing.assert_allclose(net(x).asnumpy(), y.asnumpy(), rtol=rtol_for(executor))


# ------------------------------------------------------------- shapes, calls
def test_static_shape_still_accepts_a_new_input_shape_with_a_new_plan_as_in_mxnet(executor):
    net = Counting(prefix="fixed_")
    net.initialize()
    x5 = nd.random.normal(shape=(5, 3))
    expected = net(x5).asnumpy()
    net.hybridize(static_shape=True, static_alloc=True, executor=executor)
    net(nd.ones((2, 3)))
    net(nd.ones((2, 3)))
    np.testing.assert_allclose(net(x5).asnumpy(), expected, rtol=rtol_for(executor))
    assert net._cached_op.compiles == 2 and net.trace_count == 1


def test_static_shape_without_static_alloc_is_refused_at_hybridize_as_in_mxnet():
    net = Counting(prefix="fixed_")
    with pytest.raises(ValueError, match=r"Counting 'fixed'.*static_shape=True.*"
                                         r"static_alloc=True"):
        net.hybridize(static_shape=True)


def test_a_different_call_structure_is_an_error():
    class Two(HybridBlock):
        def hybrid_forward(self, F, x, y=None):
            return x if y is None else x + y

    net = Two()
    net.hybridize(executor="numpy")
    net(nd.ones((2,)), nd.ones((2,)))
    with pytest.raises(ValueError, match=r"traced for calls with 2 array\(s\) \(array, array\)"
                                         r", but is now called with 1 array\(s\) \(array\)"
                                         r".*hybridize\(\) again"):
        net(nd.ones((2,)))
    net.hybridize(executor="numpy")         # re-trace: now the one-input form is cached
    assert net(nd.ones((2,))).shape == (2,)


def test_multiple_inputs_and_outputs(executor):
    class Pair(HybridBlock):
        def hybrid_forward(self, F, a, b):
            both = F.concat(a, b, dim=1)
            return F.relu(a + b), F.split(both, num_outputs=2, axis=1)

    net = Pair()
    a, b = nd.random.normal(shape=(2, 3)), nd.random.normal(shape=(2, 3))
    s0, (p0, q0) = net(a, b)
    net.hybridize(executor=executor)
    with kernels_permitting():
        s1, (p1, q1) = net(a, b)
    assert net._cached_op.data_names == ["data0", "data1"]
    for got, want in ((s1, s0), (p1, p0), (q1, q0)):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_bad_arguments_and_inputs_are_explained():
    net = Counting()
    with pytest.raises(ValueError, match="unknown executor 'tvm'"):
        net.hybridize(executor="tvm")
    with pytest.raises(TypeError, match="unknown argument.*static_memory"):
        net.hybridize(static_memory=True)
    net.hybridize(inline_limit=2, forward_bulk_size=15)      # MXNet flags: accepted
    net.initialize()
    with pytest.raises(TypeError, match=r"(?s)got ndarray.*nd.array\(x\)"):
        net(np.ones((2, 3)))


def test_hybridizing_a_block_with_hooks_warns():
    net = Counting()
    net.register_forward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match="hooks"):
        net.hybridize()


# ------------------------------------------------------------ a stale cache
def test_the_cache_is_rebuilt_when_it_would_be_stale():
    net = Counting()
    net.initialize()
    x = nd.ones((2, 3))
    net.hybridize(executor="numpy")
    net(x)
    assert net.trace_count == 1
    net.hybridize(executor="numpy")                 # hybridize again: trace again
    net(x)
    assert net.trace_count == 2
    net.dense = nn.Dense(7)                         # replacing a child
    net.dense.initialize()
    assert net._cached_op is None
    assert net(x).shape == (2, 7) and net.trace_count == 3
    net.cast("float64")                             # new dtypes
    assert net(nd.ones((2, 3), dtype="float64")).dtype == np.float64
    assert net.trace_count == 4


def test_replacing_a_grandchild_or_adding_a_layer_invalidates_the_top():
    class Wrapper(HybridBlock):
        def __init__(self):
            super().__init__()
            self.body = nn.HybridSequential()
            self.body.add(nn.Dense(3))

        def hybrid_forward(self, F, x):
            return self.body(x)

    top = Wrapper()
    top.initialize()
    top.hybridize(executor="numpy")
    x = nd.ones((1, 2))
    assert top(x).shape == (1, 3)
    top.body.add(nn.Dense(5))                     # a grandchild appears
    top.body[1].initialize()
    assert top._cached_op is None and top(x).shape == (1, 5)
    top.body[1].act = nn.Activation("relu")       # a great-grandchild appears
    assert top._cached_op is None
    assert (top(x).asnumpy() >= 0).all() and top.trace_count == 3


def test_loading_parameters_keeps_the_cache_unless_shapes_or_dtypes_change(tmp_path):
    fname = str(tmp_path / "p.params")
    saved = nn.HybridSequential()
    saved.add(nn.Dense(3, in_units=4))
    saved.initialize()
    saved.save_parameters(fname)
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    net.initialize()
    net.hybridize(executor="numpy")
    x = nd.ones((2, 4))
    net(x)
    net.load_parameters(fname)             # same shapes: new values, same graph
    assert net._cached_op is not None and net.trace_count == 1
    np.testing.assert_allclose(net(x).asnumpy(), saved(x).asnumpy(), rtol=1e-6)
    saved.cast("float64")
    saved.save_parameters(fname)
    net.load_parameters(fname, cast_dtype=True, dtype_source="saved")
    assert net._cached_op is None          # float64 now: trace again
    assert net(x.astype("float64")).dtype == np.float64 and net.trace_count == 2


# ------------------------------------------------ errors raised while tracing
class Branchy(HybridBlock):
    def __init__(self, body, **kwargs):
        super().__init__(**kwargs)
        self.body = body

    def hybrid_forward(self, F, x):
        return self.body(F, x)


def _if_positive(F, x):
    if x > 0:
        return x
    return -x


@pytest.mark.parametrize("body, what", [
    (_if_positive, "Using it as a Python bool"),
    (lambda F, x: x * float(x.asnumpy().sum()), "Reading its values with .asnumpy()"),
    (lambda F, x: F.reshape(x, shape=(x.shape[0], -1)), "Reading .shape"),
])
def test_trace_errors_name_the_block_and_keep_the_explanation(body, what):
    net = Branchy(body, prefix="branchy_")
    x = nd.ones((1, 1))
    net(x)                                      # fine imperatively
    net.hybridize(executor="numpy")
    with pytest.raises(NotImplementedForSymbol) as err:
        net(x)
    assert isinstance(err.value, TypeError)
    message = str(err.value)
    assert message.startswith("in Branchy 'branchy' (while tracing it with F=symbol): ")
    assert what in message and "Instead:" in message


def test_trace_errors_show_the_path_through_nested_blocks():
    class Outer(HybridBlock):
        def __init__(self):
            super().__init__(prefix="outer_")
            with self.name_scope():
                self.inner = Branchy(_if_positive)

        def hybrid_forward(self, F, x):
            return self.inner(x)

    net = Outer()
    net.hybridize()
    with pytest.raises(TypeError, match=r"^in Outer 'outer' > Branchy 'outer_branchy0' "
                                        r"\(while tracing"):
        net(nd.ones((1,)))
    bad = Branchy(lambda F, x: F.Activation(x, act_type="swish"), prefix="bad_")
    with pytest.raises(OpError, match=r"in Branchy 'bad'.*act_type.*must be one of"):
        bad(sym.var("data"))


# ----------------------------------------------------------- inside autograd
def test_grad_req_add_accumulates_through_the_cached_op(executor):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.collect_params().setattr("grad_req", "add")
    net.hybridize(executor=executor)
    x = nd.random.uniform(shape=(4, 3))
    for _ in range(3):
        with autograd.record():
            y = net(x).sum()
        y.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(),
                               3 * np.tile(x.asnumpy().sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(net.bias.grad().asnumpy(), [12, 12], rtol=1e-6)
    net.collect_params().zero_grad()
    assert net.weight.grad().asnumpy().sum() == 0


def test_none_as_an_argument_stays_none_when_hybridized(executor):
    """loss(pred, label, None), as MXNet allows: hybrid_forward sees None both ways."""
    pred, label = nd.array([[1.0, 2.0], [3.0, 4.0]]), nd.zeros((2, 2))
    weight = nd.array([[2.0], [0.0]])
    want = mx.gluon.loss.L2Loss()(pred, label, None).asnumpy()
    loss = mx.gluon.loss.L2Loss()
    loss.hybridize(executor=executor)
    for _ in range(2):
        np.testing.assert_allclose(loss(pred, label, None).asnumpy(), want)
    assert loss.trace_count == 1
    with pytest.raises(ValueError, match=r"traced for calls with 2 array\(s\) "
                                         r"\(array, array, None\), but is now called "
                                         r"with 3 array\(s\) \(array, array, array\)"):
        loss(pred, label, weight)
    weighted = mx.gluon.loss.L2Loss()
    weighted.hybridize(executor=executor)
    np.testing.assert_allclose(weighted(pred, label, weight).asnumpy(), want * [2.0, 0.0])


def test_mixed_dtypes_in_a_graph_are_explained_not_truncated(executor):
    """uint8 images into a float32 network: a compiled op computes in one dtype, so the
    graph refuses (as MXNet does) instead of silently computing in integers."""
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    net(nd.ones((3, 5)))
    net.hybridize(executor=executor)
    with pytest.raises(OpError, match=r"dense\d+_fwd.*FullyConnected.*different dtypes "
                                      r"\(data: uint8, weight: float32.*astype\('float32'\)"):
        net(nd.array(np.ones((3, 5)), dtype="uint8"))
    assert net(nd.ones((3, 5))).dtype == np.float32        # the float32 call still works
    # index-like inputs (labels, indices) may have their own dtype
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    loss.hybridize(executor=executor)
    labels = nd.array([0, 1, 1], dtype="int32")
    np.testing.assert_allclose(loss(net(nd.ones((3, 5))), labels).asnumpy(),
                               loss(net(nd.ones((3, 5))), labels.astype("float32")).asnumpy())


def test_compiled_gradients_are_handed_to_grad_without_a_copy():
    """backward() lets .grad take over the arrays a compiled backward graph returns (new
    arrays nobody else holds) instead of copying them; .grad stays the same NDArray, its
    values stay right, and no two gradients share memory."""
    net = nn.HybridSequential()
    net.add(nn.Dense(5, activation="relu"), nn.Dense(3))
    net.initialize()
    x = nd.random.uniform(shape=(4, 6))
    net(x)
    reference = {}
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    for name, p in net.collect_params().items():
        reference[name] = p.grad().asnumpy()
    net.hybridize(executor="numba")
    grads = {name: p.grad() for name, p in net.collect_params().items()}
    first = None
    for step in range(2):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        for name, p in net.collect_params().items():
            assert p.grad() is grads[name]
            np.testing.assert_allclose(p.grad().asnumpy(), reference[name], rtol=1e-5,
                                       atol=1e-6)
        buffers = [p.grad()._data for p in net.collect_params().values()]
        for i, a in enumerate(buffers):
            assert not any(np.shares_memory(a, b) for b in buffers[i + 1:])
        if first is None:
            first = buffers
    assert any(a is not b for a, b in zip(first, buffers)), "the arrays were taken over"


def test_hybridized_children_inside_an_imperative_block(executor):
    class Mixed(Block):
        def __init__(self):
            super().__init__()
            self.body = mlp()

        def forward(self, x):
            h = self.body(x)
            return nd.log_softmax(h * 2.0) + nd.relu(x).sum()

    net = Mixed()
    net.initialize()
    x = nd.random.normal(shape=(3, 5))

    def grads():
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
        return loss.asscalar(), [p.grad().asnumpy().copy()
                                 for p in net.collect_params().values()]

    l0, g0 = grads()
    net.hybridize(executor=executor)
    l1, g1 = grads()
    assert net.body._cached_op.calls == 1
    assert l1 == pytest.approx(l0, rel=1e-5)
    for a, b in zip(g1, g0):
        np.testing.assert_allclose(a, b, rtol=rtol_for(executor), atol=1e-6)


def test_shared_parameters_are_one_variable_and_their_gradients_add_up(executor):
    class Twice(HybridBlock):
        def __init__(self):
            super().__init__()
            self.shared = nn.Dense(4, in_units=4, activation="tanh")
            self.tied = nn.Dense(4, in_units=4, params=self.shared.params)   # same weights

        def hybrid_forward(self, F, x):
            return self.tied(self.shared(self.shared(x)))

    net = Twice()
    net.initialize(mx.init.Xavier())
    assert net.tied.weight is net.shared.weight and len(net.collect_params()) == 2
    assert len(net(sym.var("data")).list_arguments()) == 3       # data, weight, bias
    x = nd.random.normal(shape=(3, 4))

    def grads():
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        return [p.grad().asnumpy().copy() for p in net.collect_params().values()]

    before = grads()
    net.hybridize(executor=executor)
    after = grads()
    for a, b in zip(after, before):
        np.testing.assert_allclose(a, b, rtol=rtol_for(executor), atol=1e-6)


def test_batchnorm_running_statistics_through_the_cached_op(executor):
    def build():
        mx.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(4), nn.BatchNorm(momentum=0.5))
        net.initialize()
        return net

    x = nd.random.normal(shape=(6, 3))
    ref = build()
    with autograd.record():
        y0 = ref(x)
    hyb = build()
    hyb.hybridize(executor=executor)
    with kernels_permitting(), autograd.record():
        y1 = hyb(x)
    np.testing.assert_allclose(y1.asnumpy(), y0.asnumpy(), rtol=1e-4, atol=1e-5)
    for a, b in zip(ref[1].collect_params().values(), hyb[1].collect_params().values()):
        np.testing.assert_allclose(b.data().asnumpy(), a.data().asnumpy(), rtol=1e-5,
                                   err_msg=a.name)
    assert not np.allclose(hyb[1].running_mean.data().asnumpy(), 0)    # it did move


def test_compiled_stages_and_counters(executor):
    net = mlp()
    net.initialize()
    assert net.compiled is None
    net.hybridize(executor=executor)
    assert net.compiled is None            # flags only
    net(nd.ones((2, 5)))
    stages = net.compiled
    assert stages and all(isinstance(k, str) for k in stages)
    assert net._cached_op.calls == 1 and net.trace_count == 1


# ---------------------------------------------------------------- training
def _sgd_curve(net, batches, lr, steps):
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    losses = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        with autograd.record():
            out = net(x)
            loss = -nd.pick(nd.log_softmax(out), y).mean()
        loss.backward()
        for p in params:
            p.data()[:] -= lr * p.grad()
        losses.append(loss.asscalar())
    return np.array(losses)


def _synthetic(shape, classes, n_batches, batch=16, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.normal(size=(classes,) + shape)
    batches = []
    for _ in range(n_batches):
        y = rng.randint(0, classes, size=batch)
        x = centers[y] + 0.5 * rng.normal(size=(batch,) + shape)
        batches.append((nd.array(x), nd.array(y)))
    return batches


def _lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, kernel_size=3, activation="relu"), nn.MaxPool2D(2),
            nn.Conv2D(8, kernel_size=3, activation="relu"), nn.MaxPool2D(2),
            nn.Dense(16, activation="relu"), nn.Dense(3))
    return net


@pytest.mark.parametrize("model", ["mlp", "lenet"])
def test_training_gives_the_same_loss_curve(model, executor):
    shape = (5,) if model == "mlp" else (1, 12, 12)
    batches = _synthetic(shape, 3, 4)
    curves = []
    for hybrid in (False, True):
        mx.random.seed(42)
        net = mlp() if model == "mlp" else _lenet()
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize(executor=executor)
        with kernels_permitting():
            curves.append(_sgd_curve(net, batches, lr=0.2, steps=12))
        if hybrid:
            assert net.trace_count == 1
    imperative, hybridized = curves
    assert imperative[-1] < imperative[0] * 0.7             # it learns
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-4 if executor == "numpy" else 1e-3)


def test_a_float16_net_hybridizes_on_the_numpy_executor_and_says_why():
    """Numba has no float16 arithmetic: a float16 graph runs on the NumPy executor
    (same numbers as imperative, gradients too) with a warning naming the dtype and the
    two ways out, instead of failing inside the compiler."""
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    net.cast("float16")
    x = nd.array(np.random.default_rng(0).random((3, 5)), dtype="float16")
    with autograd.record():
        expected = net(x).sum()
    expected.backward()
    expected_grads = [p.grad().asnumpy().copy() for p in net.collect_params().values()]
    net.hybridize(executor="numba")
    with pytest.warns(RuntimeWarning, match=r"float16 values and Numba has no float16 "
                                            r"arithmetic.*net.cast\('float32'\).*"
                                            r"executor='numpy'"):
        with autograd.record():
            got = net(x).sum()
        got.backward()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.asnumpy(), expected.asnumpy())
    for p, g in zip(net.collect_params().values(), expected_grads):
        np.testing.assert_array_equal(p.grad().asnumpy(), g)
    assert net._cached_op.stats()["forward"]["tier"] == "reference"
    net.cast("float32")                                  # cast back: compiled again
    out = net(x.astype("float32"))
    assert out.dtype == np.float32
    assert net._cached_op.stats()["forward"]["tier"] in ("graph", "steps")


def test_an_array_made_inside_a_traced_forward_is_refused_with_what_to_do():
    """Issue 28 (low): it used to land on dot's transpose_a attribute and say so."""
    class Net(HybridBlock):
        def forward(self, x):
            return snp.dot(x, snp.ones((4, 3)))
    with mx.util.np_array(True), mx.util.np_shape(True):
        net = Net()
        x = snp.ones((2, 4))
        assert net(x).shape == (2, 3)                   # imperatively: fine
        net.hybridize()
        with pytest.raises(OpError, match=r"dot: argument 1 is an array of shape "
                                                 r"\(4, 3\), not a Symbol.*get_constant"):
            net(x)
