"""Every op: forward vs a direct NumPy formula, gradient vs central finite differences,
the same op as a Symbol (eval) and through a JSON round trip."""
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import straightdope as mx
from straightdope import autograd, nd, sym
from straightdope.graph import Graph, annotate
from straightdope.ops import OPS

from op_cases import CASES, as_dtype

RNG_SEED = 7


def call_nd(case, arrays, train=False):
    xs = [nd.array(a, dtype=a.dtype if a.dtype != np.float64 else "float64") for a in arrays]
    with autograd.train_mode() if train else autograd.predict_mode():
        out = getattr(nd, case.op)(*xs, **case.attrs)
    return out if isinstance(out, list) else [out]


def loss_and_grads(case, arrays, heads):
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for i in case.wrt:
        xs[i].attach_grad()
    with autograd.record(train_mode=case.train):
        outs = getattr(nd, case.op)(*xs, **case.attrs)
        outs = outs if isinstance(outs, list) else [outs]
        loss = sum(((o * nd.array(h, dtype="float64")).sum() for o, h in zip(outs, heads)),
                   nd.zeros((), dtype="float64"))
    loss.backward()
    return [xs[i].grad.asnumpy() for i in case.wrt]


def scalar_loss(case, arrays, heads):
    outs = call_nd(case, arrays, train=case.train)
    return sum(float((o.asnumpy().astype(np.float64) * h).sum()) for o, h in zip(outs, heads))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_numpy_formula(case):
    rng = np.random.default_rng(RNG_SEED)
    arrays = case.make(rng)
    outs = call_nd(case, arrays, train=case.train)
    if case.expected is None:
        assert all(np.isfinite(o.asnumpy()).all() for o in outs)
        return
    expected = case.expected(arrays, case.attrs)
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if c.wrt], ids=lambda c: c.id)
def test_gradient_matches_finite_differences(case):
    rng = np.random.default_rng(RNG_SEED)
    arrays = [a.astype(np.float64) for a in case.make(rng)]
    heads = [rng.uniform(-1, 1, o.shape) for o in call_nd(case, arrays, case.train)]
    analytic = loss_and_grads(case, arrays, heads)
    eps = 1e-6
    for i, grad in zip(case.wrt, analytic):
        numeric = np.zeros_like(arrays[i])
        for idx in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (scalar_loss(case, plus, heads) - scalar_loss(case, minus, heads)) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{case.id}: gradient of input {i}")


def build_symbol(case, n_inputs):
    variables = [sym.var(f"x{k}") for k in range(n_inputs)]
    return getattr(sym, case.op)(*variables, **case.attrs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_symbol_eval_matches_imperative(case):
    rng = np.random.default_rng(RNG_SEED)
    arrays = case.make(rng)
    s = build_symbol(case, len(arrays))
    if case.train:   # eval runs in inference mode; compare with the imperative inference path
        imperative = call_nd(case, arrays, train=False)
    else:
        imperative = call_nd(case, arrays)
    feeds = {f"x{k}": nd.array(a, dtype=as_dtype(a, "float64").dtype)
             for k, a in enumerate(arrays)}
    evaluated = s.eval(**feeds)
    assert len(evaluated) == len(imperative)
    for got, want in zip(evaluated, imperative):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_one_dtype_rule(case, dtype):
    """Every output has one dtype whoever asks: `sym.infer_type`, the compiler's
    `graph.annotate` and an imperative call all read the op's registry rule (Op.out_dtype)."""
    arrays = [as_dtype(a, dtype) for a in case.make(np.random.default_rng(0))]
    names = [f"x{k}" for k in range(len(arrays))]
    s = build_symbol(case, len(arrays))
    with autograd.train_mode() if case.train else autograd.predict_mode():
        out = getattr(nd, case.op)(*[nd.array(a, dtype=a.dtype) for a in arrays], **case.attrs)
    imperative = [np.dtype(o.dtype) for o in (out if isinstance(out, list) else [out])]
    dtypes = {n: a.dtype for n, a in zip(names, arrays)}
    _, inferred, _ = s.infer_type_partial(**dtypes)
    graph = annotate(Graph.from_symbol(s, names), {n: a.shape for n, a in zip(names, arrays)},
                     dtypes)
    assert [np.dtype(t) for t in inferred] == imperative, "sym.infer_type vs imperative"
    assert [graph.dtype_of(e) for e in graph.outputs] == imperative, "annotate vs imperative"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_json_round_trip(case):
    s = build_symbol(case, len(case.make(np.random.default_rng(0))))
    text = s.tojson()
    again = sym.load_json(text)
    assert again.tojson() == text
    assert again.list_arguments() == s.list_arguments()
    assert again.list_outputs() == s.list_outputs()


def test_case_ids_are_unique():
    """Tests key results by case id (the edge-value runs): two cases with one id would
    compare one's output with the other's; give the second a `label`."""
    seen = Counter(c.id for c in CASES)
    assert not [i for i, n in seen.items() if n > 1]


def test_every_op_has_a_case():
    """A new op must come with an example call in op_cases.py. Gradient helpers (`_conv_grad_data`,
    ...) are exercised by the gradient tests of the ops they differentiate; control-flow
    ops by tests/test_control_flow.py."""
    covered = {c.op for c in CASES}
    aliases = {n for n, op in OPS.items() if op.name != n}
    gradient_helpers = {n for n in OPS if n.startswith("_") and (
        n.endswith(("_grad", "_grad_data", "_grad_weight")) or n in ("_sum_to_like", "_unreduce", "_cast_like",
                                     "_flatten_leading", "_concat_grad"))}
    # ops that hold a body graph (foreach, while_loop, cond) are built from Python functions,
    # not from one call: tests/test_control_flow.py exercises each of them
    control_flow = {n for n, op in OPS.items() if "subgraphs" in op.attrs}
    missing = set(OPS) - covered - aliases - gradient_helpers - control_flow
    assert not missing, f"ops without an example in tests/op_cases.py: {sorted(missing)}"


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3),
       st.lists(st.booleans(), min_size=3, max_size=3), st.integers(0, 2 ** 16))
def test_broadcast_add_mul_gradients_on_random_shapes(shape, ones, seed):
    """Broadcasting gradients sum over exactly the broadcast axes, whatever the shapes."""
    rng = np.random.default_rng(seed)
    other = tuple(1 if flag else d for d, flag in zip(shape, ones))
    a = nd.array(rng.uniform(-1, 1, shape), dtype="float64")
    b = nd.array(rng.uniform(-1, 1, other), dtype="float64")
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = (a * b + b).sum()
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), np.broadcast_to(b.asnumpy(), shape))
    axes = tuple(i for i, (d, o) in enumerate(zip(shape, other)) if o == 1 and d != 1)
    want = (a.asnumpy() + 1).sum(axis=axes, keepdims=True).reshape(other)
    np.testing.assert_allclose(b.grad.asnumpy(), want, rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(3, 6), st.integers(1, 3),
       st.integers(1, 2), st.integers(0, 1), st.integers(0, 2 ** 16))
def test_convolution_matches_direct_loops(n, c, size, k, stride, pad, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, c, size, size))
    w = rng.uniform(-1, 1, (2, c, k, k))
    b = rng.uniform(-1, 1, (2,))
    from op_cases import _conv_ref
    got = nd.Convolution(nd.array(x, dtype="float64"), nd.array(w, dtype="float64"),
                         nd.array(b, dtype="float64"), kernel=(k, k), num_filter=2,
                         stride=(stride, stride), pad=(pad, pad))
    np.testing.assert_allclose(got.asnumpy(), _conv_ref(x, w, b, stride, pad, 1, 1), rtol=1e-10)
