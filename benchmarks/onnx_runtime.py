"""ONNX Runtime next to straightdope on the forward workloads W1-W3, in one run.

    python -m benchmarks.onnx_runtime            # about a minute
    python -m benchmarks.onnx_runtime --rounds 5

The very networks of benchmarks/workloads.py (same weights) are exported with
straightdope.onnx.export_model and run by ONNX Runtime's CPU engine with one intra-op
and one inter-op thread, like every variant here (BLAS pinned to one thread). Variants
run interleaved, round after round (benchmarks.run.measure); the table gives the median
per call and ONNX Runtime's time as a ratio of the hybridized network's. Before timing,
the outputs are checked equal (rtol 1e-4), so both sides do the same work.
"""
from benchmarks import run as _run  # noqa: F401  (pins BLAS threads before NumPy loads)

import argparse  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from benchmarks import workloads  # noqa: E402
from benchmarks.run import fmt_us, measure  # noqa: E402
from straightdope import nd  # noqa: E402

WORKLOADS = {
    "W1 MLP fwd b=1": (lambda: workloads.forward_mlp(1), (1, 512)),
    "W2 MLP fwd b=64": (lambda: workloads.forward_mlp(64), (64, 512)),
    "W3 LeNet fwd b=64": (lambda: workloads.forward_lenet(64), (64, 1, 28, 28)),
}


def ort_variant(net, shape, folder):
    """A callable running the exported net in ONNX Runtime on the workload's input."""
    import onnxruntime as ort
    from straightdope import onnx as sdonnx
    prefix = str(Path(folder) / "net")
    sym_file, params_file = net.export(prefix)
    path = sdonnx.export_model(sym_file, params_file, [shape], np.float32, prefix + ".onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = net(nd.array(x)).asnumpy()
    theirs = session.run(None, {"data": x})[0]
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)
    feed = {"data": x}
    return lambda: session.run(None, feed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    rows = ["| workload | hybridized us/call | ONNX Runtime us/call | ORT / hybridized |",
            "|---|---:|---:|---:|"]
    with threadpool_limits(1), tempfile.TemporaryDirectory() as folder:
        for name, (make, shape) in WORKLOADS.items():
            variants, nets = make()
            chosen = {"hybridized": variants["hybridized"],
                      "onnxruntime": ort_variant(nets["hybridized"], shape, folder)}
            times = measure(chosen, args.rounds)
            ours, theirs = times["hybridized"], times["onnxruntime"]
            rows.append(f"| {name} | {fmt_us(ours)} | {fmt_us(theirs)} | "
                        f"{theirs / ours:.2f} |")
            print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
