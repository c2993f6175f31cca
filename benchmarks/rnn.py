"""W5: a 2-layer LSTM (hidden 256, input 64, sequence 35, batch 32), side by side.

    python -m benchmarks.rnn            # the table and the compile times (a few minutes)
    python -m benchmarks.rnn --quick    # fewer rounds, no compile-time processes

Variants: plain NumPy (hand-written forward and backpropagation through time),
`rnn.LSTM` imperative, and the hybridized `rnn.LSTM` (one `foreach` node per layer:
the body compiled once, run per step). A hybridized *unrolled* network (two
LSTMCells unrolled: one copy of the cell per step in the graph) is only compiled at
a few steps: its compile time grows with the length, which is the point. A training step is
forward, backward and an SGD update of every parameter. Compile times are measured
in fresh processes with an empty graph cache, at sequence lengths 35 and 500.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from .run import fmt_us, measure  # noqa: E402

T, N, C, H, LAYERS = 35, 32, 64, 256, 2


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_forward(x, params, keep=False):
    """2-layer LSTM over x (T, N, C), zero initial states; gates i, f, g, o (MXNet's)."""
    caches = []
    for layer in range(LAYERS):
        wi, wh, bi, bh = params[layer]
        n = x.shape[1]
        h, c = np.zeros((n, H), x.dtype), np.zeros((n, H), x.dtype)
        xw = (x.reshape(-1, x.shape[2]) @ wi.T + bi + bh).reshape(x.shape[0], n, 4 * H)
        outs, cache = np.empty((x.shape[0], n, H), x.dtype), []
        for t in range(x.shape[0]):
            gates = xw[t] + h @ wh.T
            i, f, g, o = (_sigmoid(gates[:, :H]), _sigmoid(gates[:, H:2 * H]),
                          np.tanh(gates[:, 2 * H:3 * H]), _sigmoid(gates[:, 3 * H:]))
            c_prev, h_prev = c, h
            c = f * c + i * g
            tc = np.tanh(c)
            h = o * tc
            outs[t] = h
            if keep:
                cache.append((i, f, g, o, c_prev, h_prev, tc))
        caches.append((x, cache))
        x = outs
    return x, caches


def numpy_train_step(x, target, params, lr=0.01):
    """Forward, backpropagation through time (loss: 0.5 * sum((out - target)^2)), SGD."""
    out, caches = numpy_forward(x, params, keep=True)
    d_out = out - target
    for layer in reversed(range(LAYERS)):
        wi, wh, bi, bh = params[layer]
        inputs, cache = caches[layer]
        g_wi, g_wh, g_b = np.zeros_like(wi), np.zeros_like(wh), np.zeros_like(bi)
        d_in = np.empty_like(inputs)
        dh_next, dc_next = np.zeros((x.shape[1], H), x.dtype), np.zeros((x.shape[1], H), x.dtype)
        for t in reversed(range(inputs.shape[0])):
            i, f, g, o, c_prev, h_prev, tc = cache[t]
            dh = d_out[t] + dh_next
            do = dh * tc
            dc = dh * o * (1 - tc * tc) + dc_next
            di, df, dg = dc * g, dc * c_prev, dc * i
            dgates = np.concatenate([di * i * (1 - i), df * f * (1 - f), dg * (1 - g * g),
                                     do * o * (1 - o)], axis=1)
            g_wi += dgates.T @ inputs[t]
            g_wh += dgates.T @ h_prev
            g_b += dgates.sum(0)
            d_in[t] = dgates @ wi
            dh_next, dc_next = dgates @ wh, dc * f
        for p, gp in ((wi, g_wi), (wh, g_wh), (bi, g_b), (bh, g_b)):
            p -= lr * gp
        d_out = d_in
    return out


def build(seq=T):
    """(layer, unrolled net, x, target) with equal parameters."""
    import straightdope as mx
    from straightdope import gluon, nd
    from straightdope.gluon import rnn

    class Unrolled(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.cells = rnn.HybridSequentialRNNCell()
                with self.cells.name_scope():
                    self.cells.add(rnn.LSTMCell(H, input_size=C))
                    self.cells.add(rnn.LSTMCell(H, input_size=H))

        def hybrid_forward(self, F, x):
            out, _ = self.cells.unroll(seq, x, layout="TNC", merge_outputs=True)
            return out

    mx.random.seed(0)
    layer = rnn.LSTM(H, num_layers=LAYERS, input_size=C)
    layer.initialize(mx.init.Uniform(0.1))
    unrolled = Unrolled()
    unrolled.initialize()
    for k, cell in enumerate(unrolled.cells):
        for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
            getattr(cell, name).set_data(getattr(layer, f"l{k}_{name}").data().copy())
    rng = np.random.RandomState(0)
    x = nd.array(rng.uniform(-1, 1, (seq, N, C)).astype(np.float32))
    target = nd.array(rng.uniform(-1, 1, (seq, N, H)).astype(np.float32))
    return layer, unrolled, x, target


def train_step(net, x, target, lr=0.01):
    """One SGD step of `net` on an L2 loss, as a function of no arguments."""
    from straightdope import autograd, gluon
    loss_fn = gluon.loss.L2Loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})

    def step():
        with autograd.record():
            loss = loss_fn(net(x), target)
        loss.backward()
        trainer.step(N)
    return step


def variants():
    layer, unrolled, x, target = build()
    imperative, _, _, _ = build()
    layer.hybridize(static_alloc=True, static_shape=True, compile="sync")
    params = [[getattr(layer, f"l{k}_{n}").data().asnumpy().copy()
               for n in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]
              for k in range(LAYERS)]
    x_np, t_np = x.asnumpy(), target.asnumpy()
    # the three gluon variants compute the same numbers as NumPy: check before timing
    ref, _ = numpy_forward(x_np, params)
    for net in (imperative, layer):
        np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=2e-3, atol=2e-4)

    def step_of(net):
        return train_step(net, x, target)

    forward = {"numpy": lambda: numpy_forward(x_np, params),
               "imperative": lambda: imperative(x).wait_to_read(),
               "hybridized loop": lambda: layer(x).wait_to_read()}
    train = {"numpy": lambda: numpy_train_step(x_np, t_np, params),
             "imperative": step_of(imperative), "hybridized loop": step_of(layer)}
    # The unrolled network is not timed at 35 steps: Numba needs many minutes to compile
    # its graph (see the compile times); its size is counted from a trace.
    from straightdope import sym
    traced, _ = unrolled.cells.unroll(T, sym.var("data"), layout="TNC", merge_outputs=True)
    graph_ops = {"unrolled": sum(1 for n in traced.walk() if n.op is not None),
                 "loop": _ops(layer)}
    return forward, train, graph_ops


def _ops(net):
    _, out = net._cached_graph
    return sum(1 for n in out.walk() if n.op is not None)


FIRST_CALL = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, ".")
from benchmarks.rnn import build
from straightdope import autograd, gluon
from straightdope.cached_op import CachedOp
seq, kind = int(sys.argv[1]), sys.argv[2]
spent = []                  # CPU seconds of each CachedOp compile (all in this process)
plain = CachedOp._compile
def timed(self, *args, **kwargs):
    start = time.process_time()
    plan = plain(self, *args, **kwargs)
    spent.append(time.process_time() - start)
    return plan
CachedOp._compile = timed
layer, unrolled, x, target = build(seq)
net = layer if kind == "loop" else unrolled
net.hybridize(compile="sync")
loss_fn = gluon.loss.L2Loss()
net(x).wait_to_read()
forward = sum(spent)
with autograd.record():
    loss = loss_fn(net(x), target)
loss.backward()
training = sum(spent) - forward
print(json.dumps({"forward": forward, "training": training}))
"""


def first_call_seconds(seq, kind):
    """CPU seconds spent compiling (CachedOp plans: shapes, passes, Numba) for the first
    forward call, then for the first training call (forward + backward graphs), in a
    fresh process with an empty graph cache. CPU time, not wall-clock: other jobs on a
    busy machine then change it little."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STRAIGHTDOPE_CACHE_DIR=tmp)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        done = subprocess.run([sys.executable, "-c", FIRST_CALL, str(seq), kind], env=env,
                              cwd=root, check=True, capture_output=True, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1])


def training_macs() -> int:
    """Multiply-adds of the matrix products of one training step, the same in every
    variant: forward x W_i2h^T and h W_h2h^T per layer and step; the backward's weight
    gradients of both, the gradient of each layer's input (not the data's) and of h."""
    rows = 4 * H
    forward = T * N * rows * (C + H) + (LAYERS - 1) * T * N * rows * (H + H)
    backward = 2 * forward - T * N * rows * C        # no gradient for the data
    return forward + backward


def blas_kernels() -> str:
    """Which OpenBLAS kernels run the products: Numba's np.dot calls SciPy's OpenBLAS.
    OPENBLAS_CORETYPE, when set, overrides OpenBLAS's own choice of kernels for the CPU."""
    from threadpoolctl import threadpool_info
    import scipy.linalg  # noqa: F401  (loads SciPy's OpenBLAS, the one Numba calls)
    found = [f"{i['prefix']} {i['version']}: {i['architecture']} kernels"
             for i in threadpool_info() if i["internal_api"] == "openblas"]
    chosen = os.environ.get("OPENBLAS_CORETYPE")
    return "; ".join(found) + (f" (OPENBLAS_CORETYPE={chosen} set in the environment)"
                               if chosen else " (OpenBLAS's own choice)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, help="interleaved timing rounds (7; --quick 3)")
    parser.add_argument("--wall", action="store_true",
                        help="wall-clock time (default: this process's CPU time, which "
                             "other jobs on a busy machine disturb less)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    clock = time.perf_counter if args.wall else time.process_time
    with threadpool_limits(1):
        forward, train, graph_ops = variants()
        results = {"W5 LSTM fwd": measure(forward, rounds, target=0.2, clock=clock),
                   "W5 LSTM train": measure(train, rounds, target=0.2, clock=clock)}
    kind = "wall-clock" if args.wall else "CPU"
    print(f"| workload | variant | median {kind} us/call | x NumPy time | x imperative time |")
    print("|---|---|---:|---:|---:|")
    for workload, times in results.items():
        for name, t in times.items():
            print(f"| {workload} | {name} | {fmt_us(t)} | {t / times['numpy']:.2f} | "
                  f"{t / times['imperative']:.2f} |")
    print(f"\nops in the traced forward graph: {graph_ops}")
    print(f"BLAS: {blas_kernels()}")
    print(f"matrix products of a training step: {training_macs() / 1e9:.2f} G multiply-adds")
    if args.quick:
        return
    print("\n| sequence length | variant | compile forward (CPU s) | compile training (CPU s) |")
    print("|---:|---|---:|---:|")
    seconds = {}
    for seq, kind in ((35, "loop"), (500, "loop"), (2, "unrolled"), (5, "unrolled")):
        t = seconds[seq, kind] = first_call_seconds(seq, kind)
        print(f"| {seq} | {kind} | {t['forward']:.2f} | {t['training']:.2f} |")
    short, long = seconds[35, "loop"], seconds[500, "loop"]
    print(f"\nloop compile time at 500 steps / at 35 steps (target <= 1.2): forward "
          f"{long['forward'] / short['forward']:.2f}, training "
          f"{long['training'] / short['training']:.2f}")


if __name__ == "__main__":
    main()
