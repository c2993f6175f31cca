"""The workloads of benchmarks/ in torch and jax, next to the hybridized network.

    python -m benchmarks.peers                  # every workload (10-30 minutes)
    python -m benchmarks.peers --only W1 W2     # workloads whose name starts so
    python -m benchmarks.peers --no-compile     # without torch.compile (its compiles are long)

torch and jax are not dependencies of straightdope: without them this prints which are
missing and how to install them in a scratch venv (`INSTALL`). Each peer is built from
the hybridized net's initial weights and checked to compute its numbers before it is
timed (`check`: the outputs of a forward pass; every trainable parameter's update after
one training step).

One thread everywhere: BLAS pinned through the environment before NumPy loads and with
threadpoolctl (benchmarks.run), `torch.set_num_threads(1)` and
`set_num_interop_threads(1)`, and for XLA (jax) `XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1` set before jax loads. The second table shows each variant's
CPU time over wall-clock time: above 1 only if more than one thread worked (below 1 when
other jobs took turns on the core).
Variants run interleaved, round after round; the tables give the median per call in CPU
time of this process (all its threads: a peer that used more threads would pay for them;
`--wall` for wall-clock), since on a shared machine other jobs inflate wall-clock time.
"""
from benchmarks import run as _run  # noqa: F401  (pins BLAS threads before NumPy loads)

import os  # noqa: E402

os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""),
                                    "--xla_cpu_multi_thread_eigen=false",
                                    "intra_op_parallelism_threads=1"]).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.run import fmt_us  # noqa: E402

PEER_MODULES = {"torch": "torch", "jax": "jax"}

INSTALL = """\
torch and jax are not dependencies of straightdope. To compare with them, install them in
a scratch venv outside the repository, with the repository's own requirements:

    python3.11 -m venv /tmp/peers-venv
    /tmp/peers-venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    /tmp/peers-venv/bin/pip install "jax[cpu]" numpy "numba>=0.68.1,<0.69" scipy threadpoolctl
    PYTHONPATH=$PWD /tmp/peers-venv/bin/python -m benchmarks.peers

(the first pip line takes PyTorch's CPU build; plain `pip install torch` on Linux takes a
CUDA build of several GB.)"""

# A peer computes our numbers when each value is within RTOL of ours, or within ATOL of
# the largest magnitude of that array (float32 in a different order of summation).
RTOL, ATOL = 2e-3, 2e-3
CLASSES = {"mlp": 2, "lenet": 10, "resnet": 10}
OURS_COMPILED = "ours: compiled graph alone"


def find_peers():
    """{peer: its module, or None when it cannot be imported}."""
    found = {}
    for name, module in PEER_MODULES.items():
        try:
            found[name] = importlib.import_module(module)
        except ImportError:
            found[name] = None
    torch = found.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:         # only allowed before torch's first parallel work
            pass
    return found


def missing_report(found):
    """What to tell when some peers are missing ('' when none is)."""
    missing = [name for name, module in found.items() if module is None]
    if not missing:
        return ""
    return f"not installed: {', '.join(missing)}\n{INSTALL}"


# ------------------------------------------------------------------ our side
@dataclass
class Case:
    """One workload: its inputs, the hybridized net's initial weights (collect_params
    order), its timed call and what a peer must reproduce (`expected`: the forward output,
    or the update of each trainable parameter after one step)."""
    name: str
    kind: str                    # "mlp", "lenet", "resnet", "lstm"
    train: bool
    x: np.ndarray
    y: np.ndarray                # labels (int64), or the LSTM's targets
    weights: list
    trainable: list
    ours: Callable
    expected: object
    lr: float
    products: list = field(default_factory=list)   # (m, n, k, ta, tb, count)
    exact: object = None         # `expected` computed in float64 (training), see `check`
    parts: dict = field(default_factory=dict)       # pieces of our call, timed alongside


def _leaf_products(net, x, train):
    """The matrix products of the net's Dense and Conv2D layers as our compiler runs them
    (Dense: X W^T; Conv2D: W by the im2col columns), found by running it once with hooks;
    for a training step also the weight gradient and, but for the first layer, the data
    gradient."""
    from straightdope import nd
    from straightdope.gluon import nn
    seen, handles, stack = [], [], [net]
    while stack:
        block = stack.pop()
        if isinstance(block, (nn.Dense, nn.Conv2D)):
            handles.append(block.register_forward_hook(
                lambda b, i, o: seen.append((b, i[0].shape, o.shape))))
        stack.extend(block._children.values())
    net(nd.array(x))
    for h in handles:
        h.detach()
    out = []
    for index, (block, xin, yout) in enumerate(seen):
        w = block.weight.shape
        if len(w) == 2:                                   # Dense: (batch, k) -> (batch, n)
            m, n, k = xin[0], w[0], int(np.prod(xin[1:]))
            out.append((m, n, k, 0, 1, 1))
            if train:
                out.append((n, k, m, 1, 0, 1))            # dW = dY^T X
                if index:
                    out.append((m, k, n, 0, 0, 1))        # dX = dY W
        else:                                             # Conv2D: (Cout, CKK) by (CKK, P)
            m, k, p = w[0], int(np.prod(w[1:])), yout[0] * yout[2] * yout[3]
            out.append((m, p, k, 0, 0, 1))
            if train:
                out.append((m, k, p, 0, 1, 1))            # dW = dY cols^T
                if index:
                    out.append((k, p, m, 1, 0, 1))        # dcols = W^T dY
    return out


def _lstm_products(train):
    from . import rnn
    T, N, C, H = rnn.T, rnn.N, rnn.C, rnn.H
    out = []
    for layer, cin in enumerate((C, H)):
        out += [(T * N, 4 * H, cin, 0, 1, 1), (N, 4 * H, H, 0, 1, T)]   # x W_i2h^T; h W_h2h^T
        if train:
            out += [(4 * H, cin, T * N, 1, 0, 1), (4 * H, H, T * N, 1, 0, 1),  # dW_i2h, dW_h2h
                    (N, H, 4 * H, 0, 0, T)]                                  # dh per step
            if layer:
                out.append((T * N, cin, 4 * H, 0, 0, 1))                     # d input
    return out


def _snapshot(params):
    return [p.data().asnumpy().copy() for p in params]


def _case(name):
    """Build the hybridized side of a workload (compiled before it returns)."""
    from straightdope import nd
    from . import resnet, rnn, workloads
    kind = {"W1": "mlp", "W2": "mlp", "W3": "lenet", "W4": "mlp", "R1": "resnet",
            "W5": "lstm"}[name[:2]]
    train = "train" in name
    rng = np.random.default_rng(0)
    if kind == "lstm":
        net, _, xn, target = rnn.build()
        net.hybridize(static_alloc=True, static_shape=True, compile="sync")
        x, y, lr = xn.asnumpy(), target.asnumpy(), 0.01
        products = _lstm_products(train)
    else:
        factory = {"mlp": workloads.mlp, "lenet": workloads.lenet,
                   "resnet": resnet.resnet18}[kind]
        if kind == "resnet":
            x, labels = resnet._inputs()
        else:
            batch = 1 if name.startswith("W1") else 64
            shape = (batch, 512) if kind == "mlp" else (batch, 1, 28, 28)
            x = rng.standard_normal(shape).astype(np.float32)
            labels = rng.integers(0, CLASSES[kind], batch)
        y, lr = labels.astype(np.int64), workloads.LR
        ref = workloads._net(factory, x)
        products = _leaf_products(ref, x, train)
        net = workloads._hybrid(factory, x, ref)
        xn = nd.array(x)
    params = list(net.collect_params().values())
    weights = _snapshot(params)
    trainable = [p.grad_req != "null" for p in params]
    parts = {}
    if not train:
        expected = net(xn).asnumpy()
        ours = lambda: net(xn).wait_to_read()          # noqa: E731
        # the compiled graph alone, without the Python of gluon and CachedOp around it
        parts[OURS_COMPILED] = workloads._compiled_run(net, x)
    else:
        if kind == "lstm":
            ours = rnn.train_step(net, xn, nd.array(y), lr)
            ours()
        else:            # _gluon_step makes one step (its warm-up) before it returns
            ours = workloads._gluon_step(net, xn, nd.array(y.astype(np.float32)), True)
        after = _snapshot(params)
        expected = [a - b for a, b, t in zip(after, weights, trainable) if t]
    exact = _update_in_float64(factory, x, y, weights, trainable) \
        if train and kind != "lstm" else None
    return Case(name, kind, train, x, y, weights, trainable, ours, expected, lr, products,
                parts=parts, exact=exact)


def _update_in_float64(factory, x, y, weights, trainable):
    """The same first training step, imperatively in float64 from the same weights: the
    update a float32 peer must be close to when float32 rounding has put a ReLU input on
    the other side of zero than ours (see `check`)."""
    from straightdope import nd
    from . import workloads
    net = workloads._net(factory, x)
    net.cast("float64")
    params = list(net.collect_params().values())
    for p, w in zip(params, weights):
        p.set_data(nd.array(w, dtype="float64"))
    x64, y64 = nd.array(x, dtype="float64"), nd.array(y, dtype="float64")
    workloads._gluon_step(net, x64, y64, False)       # makes its one step
    return [p.data().asnumpy() - w for p, w, t in zip(params, weights, trainable) if t]


def check(case, peer, result):
    """Raise AssertionError (naming the workload, the peer and the value) unless a peer's
    `result` equals the hybridized net's numbers: the forward output, or the list of the
    trainable parameters' updates after one step, within RTOL / ATOL (plus, for an
    update, twice the float32 spacing of the largest weight it changed).

    An update may instead equal the same step computed in float64 (`case.exact`): a ReLU
    input within float32 rounding of zero is positive on one side and not on the other,
    and that one element moves a convolution's gradient by ~1e-2 of its size (LeNet's
    training step against torch eager, on an AMD EPYC: one such element in 124k), while
    both sides compute the same function."""
    if case.train:
        result = list(result)
        if len(result) != len(case.expected):
            raise AssertionError(f"{case.name}: {peer} updated {len(result)} parameters, "
                                 f"the hybridized net {len(case.expected)}")
        # an update read off float32 weights is known to their spacing only
        weights = [w for w, keep in zip(case.weights, case.trainable) if keep]
        exact = case.exact or [None] * len(result)
        pairs = [(f"update of trainable parameter {i}", got, want,
                  2 * float(np.spacing(np.abs(w).max())), want64)
                 for i, (got, want, w, want64) in enumerate(zip(result, case.expected,
                                                                 weights, exact))]
    else:
        pairs = [("output", result, case.expected, 0.0, None)]
    for what, got, want, spacing, want64 in pairs:
        got = np.asarray(got)
        if want64 is not None and got.shape == want.shape and _close(got, want64, spacing):
            continue
        if got.shape != want.shape:
            raise AssertionError(f"{case.name}: {peer}'s {what} has shape {got.shape}, the "
                                 f"hybridized net's {want.shape}")
        scale = float(np.abs(want).max()) or 1.0
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * scale + spacing,
                                   err_msg=f"{case.name}: {peer}'s {what} differs from the "
                                           f"hybridized net's")


def _close(got, want, spacing):
    scale = float(np.abs(want).max()) or 1.0
    return bool(np.allclose(got, want, rtol=RTOL, atol=ATOL * scale + spacing))


# ------------------------------------------------------------------ torch
def _torch_model(torch, kind):
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 2))
    if kind == "lenet":
        return nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10))
    if kind == "lstm":
        class LSTM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(64, 256, num_layers=2)     # gates i, f, g, o, as ours

            def forward(self, x):
                return self.lstm(x)[0]
        return LSTM()

    def bn(c):      # gluon's momentum 0.9 keeps 0.9 of the old statistics, torch's 0.1 of new
        return nn.BatchNorm2d(c, eps=1e-5, momentum=0.1)

    class Block(nn.Module):                 # BasicBlockV1: body first, then the shortcut
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), bn(cout),
                                      nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                      bn(cout))
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))
                         if stride != 1 or cin != cout else None)

        def forward(self, x):
            res = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + res)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), bn(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def _torch_tensors(model):
    """The model's parameters and BatchNorm statistics in gluon's collect_params order."""
    out = []
    for m in model.modules():
        if next(m.children(), None) is None:
            out += list(m.parameters(recurse=False))
            if hasattr(m, "running_mean"):
                out += [m.running_mean, m.running_var]
    return out


def _torch_objective(torch, case):
    F = torch.nn.functional
    if case.kind == "lstm":      # gluon L2Loss (batch axis 0 of TNC: the steps), step(N)
        return lambda out, y: 0.5 * ((out - y) ** 2).mean(dim=(1, 2)).sum() / out.shape[1]
    return F.cross_entropy       # SoftmaxCrossEntropyLoss summed, step(batch): the mean


def torch_variants(torch, case, compile_too=True):
    """{name: factory() -> (timed call, its first result)} of the torch peers."""
    def model():
        m = _torch_model(torch, case.kind)
        tensors = _torch_tensors(m)
        if [tuple(t.shape) for t in tensors] != [w.shape for w in case.weights]:
            raise ValueError(f"{case.name}: the torch model's tensors do not match the "
                             f"hybridized net's parameters in order and shape")
        with torch.no_grad():
            for t, w in zip(tensors, case.weights):
                t.copy_(torch.from_numpy(w))
        return m.train(case.train)

    x = torch.from_numpy(case.x)
    y = torch.from_numpy(case.y)

    def forward(prepare):
        def make():
            m = prepare(model())

            def call():
                with torch.inference_mode():     # torch's fastest way to infer
                    return m(x)
            return call, call().numpy()
        return make

    def training(prepare):
        def make():
            m = model()
            run = prepare(m)
            params = [t for t, keep in zip(_torch_tensors(m), case.trainable) if keep]
            opt = torch.optim.SGD(params, lr=case.lr)
            objective = _torch_objective(torch, case)

            def step():
                opt.zero_grad()
                loss = objective(run(x), y)
                loss.backward()
                opt.step()
                return loss
            before = [p.detach().clone() for p in params]
            step()
            return step, [(p.detach() - b).numpy() for p, b in zip(params, before)]
        return make

    if not case.train:
        out = {"torch eager": forward(lambda m: m),
               "torch jit.trace+freeze":
                   forward(lambda m: torch.jit.freeze(torch.jit.trace(m, x)))}
        if compile_too:
            out["torch.compile"] = forward(torch.compile)
        return out
    out = {"torch eager": training(lambda m: m)}
    if compile_too:
        out["torch.compile"] = training(torch.compile)
    return out


# ------------------------------------------------------------------ jax
def _jax_apply(jax, kind, params, x, train):
    """The workload's net as a function of the list of parameters (gluon's order).
    Returns (output, batch statistics of each BatchNorm when training)."""
    jnp, lax = jax.numpy, jax.lax
    it = iter(params)
    stats = []

    def dense(h, relu=True):
        w, b = next(it), next(it)
        h = h.reshape(h.shape[0], -1) @ w.T + b
        return jnp.maximum(h, 0) if relu else h

    def conv(h, stride=1, pad=0, bias=False):
        w = next(it)
        h = lax.conv_general_dilated(h, w, (stride, stride), [(pad, pad)] * 2,
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return h + next(it)[None, :, None, None] if bias else h

    def maxpool(h, k, s, p=0):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, k, k), (1, 1, s, s),
                                 ((0, 0), (0, 0), (p, p), (p, p)))

    def bn(h):
        gamma, beta, mean, var = next(it), next(it), next(it), next(it)
        if train:
            mean, var = h.mean(axis=(0, 2, 3)), h.var(axis=(0, 2, 3))
            stats.extend([mean, var])
        scale = gamma * lax.rsqrt(var + 1e-5)
        return (h - mean[None, :, None, None]) * scale[None, :, None, None] + \
            beta[None, :, None, None]

    relu = lambda h: jnp.maximum(h, 0)      # noqa: E731
    if kind == "mlp":
        return dense(dense(dense(x), True), False), stats
    if kind == "lenet":
        h = maxpool(relu(conv(x, bias=True)), 2, 2)
        h = maxpool(relu(conv(h, bias=True)), 2, 2)
        return dense(dense(dense(h)), False), stats
    if kind == "lstm":
        sigmoid = jax.nn.sigmoid
        for _ in range(2):
            wi, wh, bi, bh = next(it), next(it), next(it), next(it)
            xw = x @ wi.T + bi + bh

            def cell(carry, xt, wh=wh):
                h, c = carry
                i, f, g, o = jnp.split(xt + h @ wh.T, 4, axis=1)
                c = sigmoid(f) * c + sigmoid(i) * jnp.tanh(g)
                h = sigmoid(o) * jnp.tanh(c)
                return (h, c), h
            zeros = jnp.zeros((x.shape[1], wh.shape[1]), x.dtype)
            _, x = lax.scan(cell, (zeros, zeros), xw)
        return x, stats
    h = maxpool(relu(bn(conv(x, 2, 3))), 3, 2, 1)
    for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
        for block_in, block_stride in ((cin, stride), (cout, 1)):
            body = bn(conv(relu(bn(conv(h, block_stride, 1))), 1, 1))
            if block_stride != 1 or block_in != cout:
                h = bn(conv(h, block_stride))
            h = relu(body + h)
    return dense(h.mean(axis=(2, 3)), False), stats


def jax_variants(jax, case, compile_too=True):
    """{"jax.jit": factory() -> (timed call, its first result)}."""
    jnp = jax.numpy
    kind, lr = case.kind, case.lr
    x, y = jnp.asarray(case.x), jnp.asarray(case.y)

    def make_forward():
        f = jax.jit(lambda params, x: _jax_apply(jax, kind, params, x, False)[0])
        params = [jnp.asarray(w) for w in case.weights]

        def call():
            return f(params, x).block_until_ready()
        return call, np.asarray(call())

    def objective(out, y):
        if kind == "lstm":
            return 0.5 * ((out - y) ** 2).mean(axis=(1, 2)).sum() / out.shape[1]
        logp = jax.nn.log_softmax(out)
        return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()

    keep = case.trainable

    def merge(trained, frozen):
        a, b = iter(trained), iter(frozen)
        return [next(a) if k else next(b) for k in keep]

    def loss_of(trained, frozen, x, y):
        out, stats = _jax_apply(jax, kind, merge(trained, frozen), x, True)
        return objective(out, y), stats

    def step(trained, frozen, x, y):
        (loss, stats), grads = jax.value_and_grad(loss_of, has_aux=True)(trained, frozen,
                                                                        x, y)
        trained = [p - lr * g for p, g in zip(trained, grads)]
        # BatchNorm's running statistics, as gluon keeps them (momentum 0.9)
        frozen = [0.9 * old + 0.1 * new for old, new in zip(frozen, stats)]
        return trained, frozen, loss

    def make_training():
        jitted = jax.jit(step, donate_argnums=(0, 1))
        trained = [jnp.asarray(w) for w, k in zip(case.weights, keep) if k]
        frozen = [jnp.asarray(w) for w, k in zip(case.weights, keep) if not k]
        before = [np.asarray(w) for w, k in zip(case.weights, keep) if k]
        state = [trained, frozen]

        def call():
            state[0], state[1], loss = jitted(state[0], state[1], x, y)
            return loss.block_until_ready()
        call()
        return call, [np.asarray(p) - b for p, b in zip(state[0], before)]

    return {"jax.jit": make_training if case.train else make_forward}


# ------------------------------------------------------------------ timing
def settle(limit=1.0, window=0.02):
    """Wait (at most `limit` seconds) until no other thread of this process is busy.
    XLA's threads keep spinning for a while after a jax.jit call; without this, the CPU
    time of this process charged their spinning to the variant timed next (ResNet-18's
    hybridized forward read CPU / wall 1.11 right after jax.jit, 0.99-1.03 otherwise)."""
    end = time.perf_counter() + limit
    while time.perf_counter() < end:
        start = time.process_time()
        time.sleep(window)
        if time.process_time() - start < 0.1 * window:
            return True
    return False


def measure(variants, rounds, wall=False, target=0.05):
    """Median seconds per call of each variant over interleaved rounds (CPU time of this
    process, or wall-clock), and each one's CPU / wall-clock ratio; each variant's turn
    starts once the threads of the last one have gone quiet (`settle`)."""
    counts = {}
    for name, f in variants.items():
        start = time.perf_counter()
        f()
        counts[name] = max(1, int(target / max(time.perf_counter() - start, 1e-7)))
    wall_s = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    names = list(variants)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            f, n = variants[name], counts[name]
            settle()
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                f()
            cpu[name].append((time.process_time() - c0) / n)
            wall_s[name].append((time.perf_counter() - w0) / n)
    med = {name: float(np.median((wall_s if wall else cpu)[name])) for name in names}
    threads = {name: sum(cpu[name]) / sum(wall_s[name]) for name in names}
    return med, threads


def product_seconds(products, rounds=5):
    """Seconds of the products alone: each distinct (m, n, k, ta, tb) timed by our
    compiler's `blas.matmul` in a compiled loop (median per product), times its count."""
    from numba import njit
    from straightdope.compiler.kernels import blas

    @njit(nogil=True)
    def repeat(count, a, b, c, m, k, n, ta, tb):
        for _ in range(count):
            blas.matmul(a, 0, b, 0, c, 0, m, k, n, ta, tb)

    total, rng = 0.0, np.random.default_rng(0)
    for m, n, k, ta, tb, count in products:
        a = rng.standard_normal(m * k).astype(np.float32)
        b = rng.standard_normal(k * n).astype(np.float32)
        c = np.empty(m * n, np.float32)
        repeat(1, a, b, c, m, k, n, ta, tb)
        start = time.thread_time()
        repeat(3, a, b, c, m, k, n, ta, tb)
        calls = max(1, int(0.01 / max((time.thread_time() - start) / 3, 1e-8)))
        samples = []
        for _ in range(rounds):
            start = time.thread_time()
            repeat(calls, a, b, c, m, k, n, ta, tb)
            samples.append((time.thread_time() - start) / calls)
        total += count * float(np.median(samples))
    return total


def flops(products):
    return sum(2 * m * n * k * count for m, n, k, _, _, count in products)


def kernels_report(found):
    """Which BLAS and kernels the libraries loaded, and the OpenBLAS variables."""
    import scipy.linalg  # noqa: F401  (loads SciPy's OpenBLAS: Numba's np.dot calls it)
    from threadpoolctl import threadpool_info
    lines = [f"{i['internal_api']} {i.get('version') or ''} "
             f"{i.get('architecture') or ''} threads={i['num_threads']} "
             f"({os.path.basename(i['filepath'])})".replace("  ", " ")
             for i in threadpool_info()]
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        lines.append(f"{var}={os.environ.get(var, '(unset)')}")
    torch, jax = found.get("torch"), found.get("jax")
    if torch is not None:
        config = torch.__config__.show()
        blas = re.findall(r"Intel\(R\) [^\n]*Math Kernel Library Version [\d.]+|BLAS_INFO=\w+",
                          config)
        lines.append(f"torch {torch.__version__}: CPU capability "
                     f"{torch.backends.cpu.get_cpu_capability()}, oneDNN "
                     f"{'on' if torch.backends.mkldnn.is_available() else 'off'}, "
                     f"threads {torch.get_num_threads()}/{torch.get_num_interop_threads()}; "
                     + "; ".join(blas))
    if jax is not None:
        lines.append(f"jax {jax.__version__} on {jax.devices()[0].platform}, "
                     f"XLA_FLAGS={os.environ.get('XLA_FLAGS')}")
    return lines


# ------------------------------------------------------------------ the run
WORKLOAD_NAMES = ["W1 MLP fwd b=1", "W2 MLP fwd b=64", "W3 LeNet fwd b=64",
                  "W3 LeNet train b=64", "W4 MLP train b=64", "R18 ResNet-18 fwd b=8",
                  "R18 ResNet-18 train b=8", "W5 LSTM fwd", "W5 LSTM train"]


def peer_factories(found, case, compile_too=True):
    out = {}
    if found.get("torch") is not None:
        out.update(torch_variants(found["torch"], case, compile_too))
    if found.get("jax") is not None:
        out.update(jax_variants(found["jax"], case))
    return out


def run_workload(case, factories, rounds, wall=False):
    """Check each peer, then time the hybridized net and the peers that passed side by
    side. Returns (medians, CPU/wall ratios, {peer: why it was skipped})."""
    variants, skipped = {"hybridized": case.ours, **case.parts}, {}
    for name, make in factories.items():
        try:
            call, first = make()
        except Exception as error:     # torch.compile offline, an op a peer lacks, ...
            skipped[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:150]}"
            continue
        check(case, name, first)
        variants[name] = call
    times, threads = measure(variants, rounds, wall)
    return times, threads, skipped


def print_tables(rows, detail, gflop_rows, found, wall):
    clock = "wall-clock" if wall else "CPU"
    print(f"\nmedian {clock} us per call, one thread")
    print("\n| workload | hybridized us | best peer us | peer | hybridized / best peer |")
    print("|---|---:|---:|---|---:|")
    print("\n".join(rows))
    print("\n| workload | variant | median us/call | x hybridized time | CPU / wall |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(detail))
    if gflop_rows:
        square = product_seconds([(1024, 1024, 1024, 0, 0, 1)], rounds=3)
        print(f"\nmatrix products (float32, one thread): a large square product "
              f"1024^3 as our compiler calls it runs at {2 * 1024 ** 3 / square / 1e9:.0f} "
              f"GFLOP/s on this core")
        print("\n| workload | products MFLOP | products alone us | their GFLOP/s | share of "
              "the hybridized call | hybridized call GFLOP/s | best peer GFLOP/s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(gflop_rows))
    print("\nkernels: " + "\n         ".join(kernels_report(found)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="workload name prefixes")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--wall", action="store_true", help="wall-clock, not CPU time")
    parser.add_argument("--no-gflops", action="store_true",
                        help="skip timing the matrix products alone")
    args = parser.parse_args(argv)
    found = find_peers()
    report = missing_report(found)
    if report:
        print(report, flush=True)
    if not any(found.values()):
        return {}
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
    results, rows, detail, gflop_rows = {}, [], [], []
    try:
        for name in WORKLOAD_NAMES:
            if args.only and not any(name.startswith(p) for p in args.only):
                continue
            case = _case(name)
            times, threads, skipped = run_workload(case, peer_factories(
                found, case, not args.no_compile), args.rounds, args.wall)
            results[name] = times
            ours = times["hybridized"]
            peers = {k: v for k, v in times.items()
                     if k != "hybridized" and k not in case.parts} or {"no peer": ours}
            best = min(peers, key=peers.get)
            rows.append(f"| {name} | {fmt_us(ours)} | {fmt_us(peers[best])} | {best} | "
                        f"{ours / peers[best]:.2f} |")
            for k, v in times.items():
                detail.append(f"| {name} | {k} | {fmt_us(v)} | {v / ours:.2f} | "
                              f"{threads[k]:.2f} |")
            for k, why in skipped.items():
                detail.append(f"| {name} | {k} | skipped: {why} | | |")
            print(rows[-1], flush=True)
            if case.products and not args.no_gflops:
                seconds, work = product_seconds(case.products), flops(case.products)
                gflop_rows.append(
                    f"| {name} | {work / 1e6:,.1f} | {fmt_us(seconds)} | "
                    f"{work / seconds / 1e9:.0f} | {seconds / ours:.0%} | "
                    f"{work / ours / 1e9:.0f} | {work / peers[best] / 1e9:.0f} |")
    finally:            # what was measured is printed even if a later check fails
        print_tables(rows, detail, gflop_rows, found, args.wall)
    return results


if __name__ == "__main__":
    main()
