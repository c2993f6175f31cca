"""The VM tier: a graph written as a program for `kernels/vm.py`, which needs no compiler.

A new graph's whole-graph function takes Numba and LLVM a second or more to compile:
longer than a thousand calls of a small net. MXNet never compiles a graph; it calls
precompiled kernels in turn. This tier does the same: `write_program` turns the
compiler's plan (the fused steps and the memory plan: `backend.PIPELINE`) into a
flat list of instructions for one function compiled once per machine
(`kernels.vm.run_program`), in milliseconds. `tiers.TieredExecutable` runs it from the
first call while the compile process builds the whole-graph function, then switches.

What it runs: float32 graphs of matrix products, reductions, views and fused
elementwise loops over at most two loop levels, from the ops in `SCALAR_OPS`. For any
other graph `VMExecutable` raises `NotForTheVM` naming what it lacks (a convolution, a
loop, float64), and the tiers run something else.

    hybridize(executor="vm")        # the VM alone (VMBackend)
"""
from __future__ import annotations

import math
import time
from operator import is_not

import numpy as np

from . import cache
from .kernels import vm as K
from .kernels.reduce import OPCODES as REDUCE_OPCODES, collapse

READY = False          # the VM is loaded in this process (`prepare`)


# op name -> node -> how one element is computed, [(opcode, operand positions, constant)]
# (a position indexes the op's inputs, -1 is the previous step's result), or None when
# the VM has no rule for these attributes.
def _unary(opcode):
    return lambda node: [(opcode, (0,), None)]


def _with_constant(opcode):
    return lambda node: [(opcode, (0,), float(node.attrs["scalar"]))]


def _binary(opcode):
    return lambda node: [(opcode, (0, 1), None)]


def _activation(node):
    act = node.attrs["act_type"]
    return {"relu": [(K.MAX_C, (0,), 0.0)], "sigmoid": [(K.SIGMOID, (0,), None)],
            "tanh": [(K.TANH, (0,), None)]}.get(act)


def _unreduce(node):
    if not node.attrs["mean"]:
        return [(K.MOVE, (0,), None)]
    return None                   # a mean's count: left to the compiled tiers


SCALAR_OPS = {
    "negative": _unary(K.NEG), "abs": _unary(K.ABS), "sign": _unary(K.SIGN),
    "exp": _unary(K.EXP), "log": _unary(K.LOG), "sqrt": _unary(K.SQRT),
    "square": _unary(K.SQUARE), "sigmoid": _unary(K.SIGMOID), "tanh": _unary(K.TANH),
    "relu": lambda node: [(K.MAX_C, (0,), 0.0)], "Activation": _activation,
    "_copy": _unary(K.MOVE), "BlockGrad": _unary(K.MOVE), "broadcast_to": _unary(K.MOVE),
    "broadcast_like": _unary(K.MOVE), "_identity_with_attr_like_rhs": _unary(K.MOVE),
    "_unreduce": _unreduce,
    "_zeros": lambda node: [(K.FILL, (), 0.0)], "_ones": lambda node: [(K.FILL, (), 1.0)],
    "_full": lambda node: [(K.FILL, (), float(node.attrs["value"]))],
    "_plus_scalar": _with_constant(K.ADD_C), "_minus_scalar": _with_constant(K.SUB_C),
    "_rminus_scalar": _with_constant(K.RSUB_C), "_mul_scalar": _with_constant(K.MUL_C),
    "_div_scalar": _with_constant(K.DIV_C), "_rdiv_scalar": _with_constant(K.RDIV_C),
    "_maximum_scalar": _with_constant(K.MAX_C), "_minimum_scalar": _with_constant(K.MIN_C),
    "add_n": lambda node: [(K.ADD, (0, 1), None)] + [(K.ADD, (-1, k), None)
                                                     for k in range(2, len(node.inputs))],
}
for _name, _code in (("add", K.ADD), ("sub", K.SUB), ("mul", K.MUL), ("div", K.DIV)):
    SCALAR_OPS[f"broadcast_{_name}"] = SCALAR_OPS[f"elemwise_{_name}"] = _binary(_code)
for _name, _code in (("maximum", K.MAX), ("minimum", K.MIN), ("greater", K.GT),
                     ("greater_equal", K.GE), ("lesser", K.LT), ("lesser_equal", K.LE),
                     ("equal", K.EQ), ("not_equal", K.NE)):
    SCALAR_OPS[f"broadcast_{_name}"] = SCALAR_OPS[f"_{_name}"] = _binary(_code)
for _name, _code in (("greater", K.GT_C), ("greater_equal", K.GE_C), ("lesser", K.LT_C),
                     ("lesser_equal", K.LE_C), ("equal", K.EQ_C), ("not_equal", K.NE_C)):
    SCALAR_OPS[f"_{_name}_scalar"] = _with_constant(_code)


class NotForTheVM(Exception):
    """This graph needs something the VM does not have (the message says what)."""


class Program:
    """A graph as instructions: `code`, `consts`, and where each value lives.

    Buffers: 0 is the arena, 1..n the graph's inputs, n + 1 the block that holds the
    outputs (both allocated per call)."""

    def __init__(self, graph, plan):
        self.graph, self.plan = graph, plan
        self.code, self.consts = [], []
        self.inputs = [n.id for n in graph.nodes if n.is_var]
        self.arena_buffer, self.output_buffer = 0, len(self.inputs) + 1
        self.arena_size = int(plan.arena_sizes.get("float32", 0))
        self.output_size = 0
        self.where = {}                          # value -> (buffer, offset)
        self.output_offsets = {}                 # output root -> offset in the block
        for k, node_id in enumerate(self.inputs):
            self.where[(node_id, 0)] = (k + 1, 0)

    def shape(self, entry) -> tuple:
        return tuple(self.graph.shape_of(tuple(entry)))

    def place(self, entry):
        """Where a value written by the current step goes: the arena or the output block."""
        entry = tuple(entry)
        root = self.plan.root[entry]
        kind = self.plan.storage[root]
        if kind == "arena":
            self.where[entry] = (self.arena_buffer, self.plan.offset(root))
        elif kind == "output":
            if root not in self.output_offsets:
                self.output_offsets[root] = self.output_size
                self.output_size += math.prod(self.shape(root))
            self.where[entry] = (self.output_buffer, self.output_offsets[root])
        else:
            raise NotForTheVM(f"a value stored as {kind!r}")
        return self.where[entry]

    def at(self, entry):
        return self.where[tuple(entry)]


# ops with a kernel of their own that the VM runs (`_kernel`); FullyConnected and the
# like are lowered to these (lower.py)
KERNEL_OPS = ("dot", "sum", "mean", "max", "min", "_sum_to_like")


def _no_instruction(name) -> bool:
    """Is `name` an op with a kernel of its own that stays one after lowering, and that
    the VM has no instruction for (a convolution, pooling, BatchNorm, ...)?"""
    from .kernels import EMITTERS
    from .lower import REWRITES
    return name in EMITTERS and name not in KERNEL_OPS and (
        name not in REWRITES or name == "Convolution")   # lowered to itself + a bias add


def why_not(graph) -> str | None:
    """Why the VM cannot run this (annotated) graph, or None when it can (so far as the
    traced graph tells: `write_program` finds the rest)."""
    for node in graph.nodes:
        if any(np.dtype(d) != np.float32 for d in node.dtypes):
            return f"{node.op.name if node.op else node.name}: dtype {node.dtypes} (float32 only)"
        if node.op is not None and _no_instruction(node.op.name):
            return f"op {node.op.name}"
    return None


def write_program(fused, plan) -> Program:
    """The program of a planned graph (the compiler's `fused` and `memory` stages);
    raises NotForTheVM naming what it cannot run."""
    graph = fused.graph
    reason = why_not(graph)
    if reason is not None:
        raise NotForTheVM(reason)
    prog = Program(graph, plan)
    for step in fused.steps:
        if step.kind == "view":
            _view(prog, graph.nodes[step.nodes[0]])
        elif step.kind == "kernel":
            _kernel(prog, step, graph.nodes[step.nodes[0]])
        elif step.outputs:
            _loop(prog, step)
    for e in graph.outputs:
        if graph.nodes[e[0]].is_var:
            continue
        buffer, _ = prog.at(e)
        if buffer != prog.output_buffer:
            raise NotForTheVM("an output that is not in the output block")
    return prog


def _view(prog, node):
    src = prog.at(node.inputs[0])
    entry = (node.id, 0)
    if prog.plan.storage.get(prog.plan.root[entry]) == "output":     # copied: an output
        dst = prog.place(entry)
        prog.code += [K.COPY, *src, *dst, math.prod(prog.shape(entry))]
    else:
        prog.where[entry] = src


def _kernel(prog, step, node):
    name = node.op.name
    for e in step.outputs:
        prog.place(e)
    if name == "dot":
        a_shape, b_shape = prog.shape(node.inputs[0]), prog.shape(node.inputs[1])
        ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
        if len(a_shape) > 2 and ta or len(b_shape) > 2 and tb:
            raise NotForTheVM("dot with an N-d transpose")
        ta, tb = ta and len(a_shape) == 2, tb and len(b_shape) == 2
        a_dims = a_shape[::-1] if ta else a_shape
        b_dims = b_shape[::-1] if tb else b_shape
        m, k, n = math.prod(a_dims[:-1]), (a_dims[-1] if a_dims else 1), math.prod(b_dims[1:])
        prog.code += [K.GEMM, *prog.at(node.inputs[0]), *prog.at(node.inputs[1]),
                      *prog.at((node.id, 0)), m, k, n, int(ta), int(tb)]
    elif name in ("sum", "mean", "max", "min", "_sum_to_like"):
        from ..ops.reduce import norm_axes
        shape = prog.shape(node.inputs[0])
        if name == "_sum_to_like":      # the gradient of broadcasting: sum to `like`'s shape
            like = prog.shape(node.inputs[1])
            extra = len(shape) - len(like)
            axes = set(range(extra)) | {i + extra for i, d in enumerate(like)
                                        if d == 1 and shape[i + extra] != 1}
        else:
            axes = set(norm_axes(node.attrs["axis"], len(shape), node.attrs["exclude"]))
        runs = collapse(list(range(len(shape))), shape, [a in axes for a in range(len(shape))])
        sizes = [math.prod(shape[d] for d in dims) for _, dims in runs]
        pattern = "".join("R" if r else "K" for r, _ in runs)
        krk = {"": (1, 1, 1), "K": (sizes[0], 1, 1) if sizes else (1, 1, 1),
               "R": (1, sizes[0], 1) if sizes else (1, 1, 1),
               "KR": (*sizes[:2], 1), "RK": (1, *sizes[:2]), "KRK": tuple(sizes)}.get(pattern)
        if krk is None:
            raise NotForTheVM(f"{name} over axes {sorted(axes)} of {shape}")
        prog.code += [K.REDUCE, *prog.at(node.inputs[0]), *prog.at((node.id, 0)), *krk,
                      REDUCE_OPCODES[name]]
    else:
        raise NotForTheVM(f"op {name}")


def _loop(prog, step):
    """A fused step as one LOOP instruction: its domain as (outer, inner), each
    operand's strides over it, the ops as register maths."""
    graph = prog.graph
    domain = tuple(graph.nodes[step.nodes[0]].shapes[0])
    operands = [tuple(e) for e in step.inputs]
    spans = {}
    for e in operands:            # per operand and axis: spans it (True) or broadcast
        s = prog.shape(e)
        lead = len(domain) - len(s)
        spans[e] = [a >= lead and s[a - lead] == domain[a] for a in range(len(domain))]
    groups = []                   # neighbouring axes every operand treats alike merge
    for a in (a for a in range(len(domain)) if domain[a] != 1):
        if groups and all(spans[e][groups[-1][-1]] == spans[e][a] for e in operands):
            groups[-1].append(a)
        else:
            groups.append([a])
    if len(groups) > 2:
        raise NotForTheVM(f"a loop over {len(groups)} levels of broadcasting")
    sizes = [math.prod(domain[a] for a in g) for g in groups]
    while len(groups) < 2:        # (outer, inner): a missing level has length 1
        groups.insert(0, [])
        sizes.insert(0, 1)
    outer, inner = sizes
    ops, registers = [], {}
    code = [K.LOOP, outer, inner, len(operands), 0, len(step.outputs)]
    for i, e in enumerate(operands):
        spans_inner = bool(groups[1]) and spans[e][groups[1][0]]
        spans_outer = bool(groups[0]) and spans[e][groups[0][0]]
        s_inner = 1 if spans_inner else 0
        s_outer = (inner if spans_inner else 1) if spans_outer else 0
        code += [*prog.at(e), s_outer, s_inner]
        registers[e] = i
    count = len(operands)
    for node_id in step.nodes:
        node = graph.nodes[node_id]
        rule = SCALAR_OPS.get(node.op.name)
        maths = rule(node) if rule is not None else None
        if maths is None:
            raise NotForTheVM(f"op {node.op.name} {node.attrs} in a fused loop")
        last = None
        for opcode, positions, constant in maths:
            args = [last if p == -1 else registers[tuple(node.inputs[p])] for p in positions]
            args += [0] * (2 - len(args))
            c = 0
            if constant is not None:
                c = len(prog.consts)
                prog.consts.append(constant)
            ops += [opcode, count, args[0], args[1], c]
            last, count = count, count + 1
        registers[(node_id, 0)] = last
    code[4] = len(ops) // 5
    code += ops
    for e in step.outputs:
        code += [registers[tuple(e)], *prog.place(e)]
    prog.code += code


class VMExecutable:
    """Runs one graph's program: `run(arrays) -> arrays` as every executable. The
    outputs are fresh arrays (views of one block allocated per call)."""
    tier = "vm"
    fresh_outputs = True

    def __init__(self, graph, is_train=False):
        """`graph`: annotated for its input shapes. Runs the compiler's passes up to the
        memory plan (`backend.PIPELINE`: no source is generated) and writes the program."""
        from .backend import PIPELINE
        from .loops import runs_on_host
        host = sorted({n.op.name for n in graph.nodes if runs_on_host(graph, n)})
        if host:
            raise NotForTheVM(f"ops that run on the host or as loops: {host}")
        reason = why_not(graph)          # before the passes: a convnet's first call
        if reason is not None:           # then plans its graphs once, not twice
            raise NotForTheVM(reason)
        start = time.perf_counter()
        self.graph, self.is_train = graph, is_train
        self.stages = {}
        for stage, _, run in PIPELINE:
            if stage == "source":
                break
            self.stages[stage] = run(self, self.stages)
        prog = self.program = write_program(self.stages["fused"], self.stages["memory"])
        self.timings = {"tier": "vm", "program": time.perf_counter() - start}
        self.code = np.array(prog.code, np.int64)
        self.consts = np.array(prog.consts or [0.0], np.float64)
        n = len(prog.inputs)
        self.sizes = np.array([prog.arena_size]
                              + [math.prod(prog.shape((i, 0))) for i in prog.inputs]
                              + [prog.output_size], np.int64)
        # the inputs of the last call and their addresses, replaced as one tuple (never
        # changed in place: another thread may be reading them)
        self._last = (np.zeros(n + 2, np.int64), [None] * n)
        self._returns, seen = [], set()
        for e in prog.graph.outputs:                # (the lowered graph's value ids)
            node = prog.graph.nodes[e[0]]
            if node.is_var:
                self._returns.append(("input", prog.inputs.index(node.id), None))
            else:            # a value returned twice is copied: outputs share no memory
                kind = "copy" if prog.at(e) in seen else "block"
                seen.add(prog.at(e))
                start = prog.at(e)[1]
                self._returns.append((kind, slice(start, start + math.prod(prog.shape(e))),
                                      prog.shape(e)))
        # the usual case, every output a view of the block: run() makes them in one line
        self._views = [(where, shape) for kind, where, shape in self._returns] \
            if all(kind == "block" for kind, _, _ in self._returns) else None
        # the most usual, one output that is the whole block: its shape (one reshape)
        self._whole = self._views[0][1] if self._views is not None and \
            len(self._views) == 1 and math.prod(self._views[0][1]) == prog.output_size \
            else None

    def run(self, inputs: list) -> list:
        addresses, seen = self._last
        if any(map(is_not, inputs, seen)):       # new arrays: new addresses
            addresses, read = self._addresses(inputs)   # (`read` lives until the run)
        block = K.run_program(self.code, self.consts, addresses, self.sizes)
        if self._whole is not None:
            return [block.reshape(self._whole)]
        if self._views is not None:
            return [block[where].reshape(shape) for where, shape in self._views]
        out = []
        for kind, where, shape in self._returns:
            if kind == "input":
                out.append(inputs[where].copy())
            else:
                value = block[where].reshape(shape)
                out.append(value.copy() if kind == "copy" else value)
        return out

    def _addresses(self, inputs):
        """The addresses of new input arrays (kept for the next call when they can be
        read in place), and the arrays read: a float32 contiguous copy of any other."""
        addresses, seen = self._last
        addresses, seen, kept = addresses.copy(), list(seen), list(inputs)
        in_place = True
        for k, x in enumerate(inputs):
            if x is not seen[k]:
                if x.dtype != np.float32 or not x.flags.c_contiguous:
                    x = kept[k] = np.ascontiguousarray(x, np.float32)
                    in_place = False             # a copy lives for this call only
                addresses[k + 1], seen[k] = K.address(x.reshape(-1)), x
        if in_place:
            self._last = (addresses, seen)
        return addresses, kept


class VMBackend:
    """`hybridize(executor="vm")`: every graph the VM can run on the VM (compiled here
    first if it is not in the cache yet), any other on the reference tier. What a
    tiered hybridize runs before the graph's own code is ready, on its own."""
    name = "vm"

    def compile(self, graph, is_train: bool = False, static_alloc: bool = False,
                static_shape: bool = False):
        from ..graph import AnyShape
        from ..graph.interpret import ReferenceExecutable
        if not prepare():
            compile_all()

        def make(shaped):
            try:
                return VMExecutable(shaped, is_train)
            except NotForTheVM:
                return ReferenceExecutable(shaped, is_train)
        return AnyShape(graph, make, static_shape)


def can_load() -> bool:
    """Is the VM compiled in this machine's cache (so loading it takes milliseconds)?"""
    return all(cache.is_cached(fn, args) for fn, args in signatures())


def signatures():
    """The VM's functions with the argument types `VMExecutable.run` passes."""
    ints = np.zeros(1, np.int64)
    yield K.run_program, [ints, np.zeros(1, np.float64), ints, ints]
    yield K.address, [np.zeros(1, np.float32)]


def compile_all():
    """Compile (or load) the VM's functions into Numba's cache."""
    for fn, args in signatures():
        fn.compile(tuple(_typeof(a) for a in args))


def prepare() -> bool:
    """Load the VM into this process if the setup step compiled it (True then)."""
    global READY
    if READY:
        return True
    from . import backend, loops  # noqa: F401  (what the first call runs, imported now)
    from .numba_internals import fast_load
    cache.preload_blas()          # before the VM's first np.dot: see there
    for fn, args in signatures():
        sig = tuple(_typeof(a) for a in args)
        if not fast_load(fn, sig):
            return False
    # an empty program: the dispatcher's first call picks its overload (~0.1 ms), here
    # rather than in the first hybridized call
    K.run_program(np.zeros(0, np.int64), np.zeros(1), np.zeros(2, np.int64),
                  np.zeros(2, np.int64))
    READY = True
    return True


def _typeof(value):
    from numba import typeof
    return typeof(value)

