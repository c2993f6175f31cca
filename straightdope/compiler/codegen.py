"""Pass 4: code generation. The whole graph becomes ONE Python function for Numba.

What the generated function looks like (print `executable.stages['source']`):

    @njit(cache=True, ...)
    def run_graph(x0, x1, x2, A_float32, meta):
        s0 = meta[0]                  # shapes and buffer offsets are *runtime* values,
        o5 = meta[5]                  # so one compiled function serves every batch size
        z = np.int64(0)
        v0 = k_util.flat(x0)          # every value is a flat 1-D array plus an offset
        # step 0: dot((s0, s1), (s2, s1))
        k_blas.matmul(v0, z, v1, z, A_float32, o5, s0, s1, s2, 0, 1)    # BLAS, into the arena
        # step 1: fused broadcast_add+Activation over (s0, s2)
        u1_0 = np.uint64(o5)
        for j0 in range(m1_0):        # bias add + relu: one loop, in place, no temporaries
            for j1 in range(m1_1):
                k = np.uint64(j0*m1_1 + j1)
                a1_0 = A_float32[u1_0 + k]
                a1_1 = v2[np.uint64(j1)]
                t6 = np.float32((a1_0 + a1_1))
                t7 = np.float32(max(t6, 0.0))
                A_float32[u1_0 + k] = t7
        ...
        return (k_util.shaped(v9, (s0, s8)), )

Rules that keep it safe, fast, and fast to compile:
* identifiers are made here (`x0`, `v7`, `s3`, ...); node names never reach the text;
* attribute values enter only through `lit()`, which accepts plain numbers only;
* elementwise chains are explicit scalar loops (array expressions compile far slower);
  their indices are unsigned, so Numba adds no negative-index check and LLVM vectorizes;
* everything else calls a precompiled kernel from `compiler/kernels/` (cache=True), with
  sizes typed `np.int64(...)` so that one compiled kernel serves every call, and only
  small flags (`Flag`: an op code, a transpose) as literals, each a compiled variant;
* the text depends on shapes only through structure (which axes broadcast, which
  buffers are shared), never through sizes.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .dtypes import NUMBA_DTYPES as _NUMBA_DTYPES
from .emitting import CodegenError, Flag  # noqa: F401  (the kernels' emitters use them)
from .fuse import Fused
from .memory import MemoryPlan

_SAFE_COMMENT = re.compile(r"[^A-Za-z0-9_+,.:()*\- ]")


def _disk_cache() -> bool:
    """Whether generated functions are cached on disk (numba_internals.DISK_CACHE: not
    with an untested Numba). Imported when code is generated: importing this module
    must not import Numba (tiers.can_be_tiered reads it in a first call)."""
    from .numba_internals import DISK_CACHE
    return DISK_CACHE


def lit(value) -> str:
    """A numeric literal for the generated source. Only real numbers get through."""
    if type(value) is bool or isinstance(value, np.bool_):
        return "1" if value else "0"
    if type(value) is int or isinstance(value, np.integer):
        return str(int(value))
    if type(value) is float or isinstance(value, np.floating):
        v = float(value)
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "(-np.inf)"
        text = repr(v)
        assert re.fullmatch(r"-?[0-9.e+\-]+", text), text
        return f"({text})" if v < 0 else text
    raise CodegenError(f"only numbers can be written into generated code, got "
                       f"{type(value).__name__}")


def dtype_name(dt) -> str:
    name = np.dtype(dt).name
    if name not in _NUMBA_DTYPES:
        raise CodegenError(f"dtype {name} is not supported by the Numba executor (it has no "
                           f"{name} arithmetic); run this graph with hybridize(executor="
                           f"'numpy') or cast to float32")
    return name


_INT = re.compile(r"\(?-?[0-9]+\)?")
_FLOAT = re.compile(r"\(?-?[0-9.]+(e[+\-]?[0-9]+)?\)?|np\.nan|np\.inf|\(-np\.inf\)")


def typed(arg) -> str:
    """A call argument with its literals typed: Numba compiles a callee again for every
    distinct *literal* argument (3 is `Literal[int](3)`), so a kernel called with
    `kh=3` here and `kh=5` there would be compiled twice, and never found in its
    cache. `np.int64(3)` is a plain int64: one compiled kernel serves every call."""
    return _typed(arg)[0]


def _typed(arg) -> tuple[str, tuple]:
    """(`typed(arg)`, the argument's kind in `KernelCall.args`)."""
    if isinstance(arg, Flag):
        return str(int(arg)), ("flag", int(arg))
    text = str(arg).strip()
    if _INT.fullmatch(text):
        return f"np.int64({text})", ("int",)
    if _FLOAT.fullmatch(text):
        return f"np.float64({text})", ("float",)
    if text.startswith("(") and text.endswith(")") and "," in text:
        parts, depth, cur = [], 0, ""
        for ch in text[1:-1]:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += (ch == "(") - (ch == ")")
            cur += ch
        if cur.strip():
            parts.append(cur)
        inner = ", ".join(typed(p) for p in parts)
        return (f"({inner},)" if len(parts) == 1 else f"({inner})"), ("tuple", len(parts))
    return text, ("int",)         # a name read from meta (s0, o5, z) or a product of them


def prod(dims) -> str:
    dims = [d for d in dims if d != "1"]
    return "*".join(dims) if dims else "1"


@dataclass
class Ref:
    """Where a value lives in the generated code: a flat array, an offset and its dims."""
    arr: str
    off: str
    dims: list
    shape: tuple
    dtype: np.dtype

    @property
    def n(self) -> str:
        return prod(self.dims)

    @property
    def args(self) -> "ArrayArgs":
        # `z` is np.int64(0): a literal 0 would make Numba compile a kernel variant
        return ArrayArgs(self.arr, 'z' if self.off == '0' else self.off)


class ArrayArgs(str):
    """A value's two call arguments, `array, offset`, as text that knows its array."""

    def __new__(cls, arr: str, off: str):
        text = super().__new__(cls, f"{arr}, {off}")
        text.arr = arr
        return text


@dataclass(frozen=True)
class KernelCall:
    """One kernel call of a generated function, in order. `args` gives each argument's
    kind: ("input", k) is input k as passed; ("array", dtype) a 1-d array; ("flag", n)
    the literal n (`Flag`); ("int",), ("float",) a number; ("tuple", n) n sizes."""
    module: str
    func: str
    args: tuple


class Generated(str):
    """The source of `run_graph` (a str: print it, search it, compile it) with what the
    code generator knows about it, as data, so that nothing reads the text back:

    * `calls`: every kernel call, in order (`KernelCall`; the `k_util` helpers too);
    * `arenas`: the dtypes of the arenas run_graph takes after its inputs, in order;
    * `meta`: the runtime integers it reads (`meta`);
    * `loops`: the steps tier's distinct loops, (source, sorted argument dtypes);
    * `steps`: step id -> the lines of the source that step wrote (none for a view)."""

    def __new__(cls, source: str, **record):
        text = super().__new__(cls, source)
        for key in ("calls", "arenas", "meta", "loops", "steps"):
            setattr(text, key, record.pop(key))
        assert not record, record
        return text

    def __reduce__(self):                # copied or pickled: the text and its record
        return _generated, (str(self), dict(vars(self)))


def _generated(source: str, record: dict) -> Generated:
    return Generated(source, **record)


class CodeGen:
    """Builds the source of one graph function. Kernel emitters (compiler/kernels)
    call `ref`, `line`, `rt`, `lit` and `kernel` on it."""

    def __init__(self, fused: Fused, plan: MemoryPlan, is_train: bool, loops_apart=False):
        self.fused, self.plan, self.graph, self.is_train = fused, plan, fused.graph, is_train
        # loops_apart: each fused loop becomes a function of its own (see `Loops`), and
        # run_graph is plain Python that calls them and the kernels (the "steps" tier)
        self.loops = Loops() if loops_apart else None
        self.meta: list[int] = []
        self.meta_lines: list[str] = []
        self.lines: list[str] = []
        self.depth = 1
        self.refs: dict = {}
        self.dims: dict = {}
        self.offsets: dict = {}
        self.output_arrays: dict = {}
        self.modules: set = set()
        self.calls: list[KernelCall] = []
        self.steps: dict = {}
        self.arrays: dict = {}          # array name -> its kind in KernelCall.args
        self.arenas = sorted({dtype_name(d) for d in plan.arena_sizes}
                             | {dtype_name(n.dtypes[k]) for n in self.graph.op_nodes
                                for k in range(n.num_outputs)})
        self.lit = lit
        self.arrays.update({f"A_{d}": ("array", d) for d in self.arenas})

    # ------------------------------------------------------------ helpers
    def line(self, text: str = ""):
        self.lines.append("    " * self.depth + text)

    def comment(self, text: str):
        self.line("# " + _SAFE_COMMENT.sub("?", text))

    def rt(self, value, prefix: str = "r") -> str:
        """A runtime integer (a shape, an offset, a resolved index) read from `meta`."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise CodegenError(f"runtime values must be integers, got {value!r}")
        name = f"{prefix}{len(self.meta)}"
        self.meta_lines.append(f"{name} = meta[{len(self.meta)}]")
        self.meta.append(int(value))
        return name

    def kernel(self, module: str, func: str) -> str:
        if not re.fullmatch(r"[a-z_]+", module) or not re.fullmatch(r"[a-z0-9_]+", func):
            raise CodegenError(f"bad kernel name {module}.{func}")
        self.modules.add(module)
        return f"k_{module}.{func}"

    def call(self, module: str, func: str, *args, target: str | None = None,
             dtype=None):
        """Write a kernel call; with `target`, as `target = call(...)`, the 1-d array
        of `dtype` it returns (util.flat, util.empty)."""
        text = self.call_text(module, func, *args)
        if target is None:
            self.line(text)
        else:
            self.arrays[target] = ("array", np.dtype(dtype).name)
            self.line(f"{target} = {text}")

    def call_text(self, module: str, func: str, *args) -> str:
        """The text of a kernel call, recorded in `calls` with its arguments' kinds."""
        texts, kinds = [], []
        for a in args:
            if isinstance(a, ArrayArgs):
                texts.append(a)
                kinds += [self.arrays[a.arr], ("int",)]
            elif isinstance(a, str) and a in self.arrays:
                texts.append(a)
                kinds.append(self.arrays[a])
            else:
                text, kind = _typed(a)
                texts.append(text)
                kinds.append(kind)
        self.calls.append(KernelCall(module, func, tuple(kinds)))
        return f"{self.kernel(module, func)}({', '.join(texts)})"

    def arena(self, dt) -> str:
        return f"A_{dtype_name(dt)}"

    def value_dims(self, entry) -> list:
        """Symbolic dims of a value: borrowed from an input of the same shape, else new."""
        entry = tuple(entry)
        if entry in self.dims:
            return self.dims[entry]
        node = self.graph.nodes[entry[0]]
        shape = tuple(node.shapes[entry[1]])
        dims = None
        from .kernels import DIMS
        rule = DIMS.get(node.op.name) if node.op is not None else None
        if rule is not None:
            dims = rule(self, node, entry[1])
            assert dims is None or len(dims) == len(shape)
        for e in ([] if dims is not None else node.inputs):
            if tuple(self.graph.shape_of(e)) == shape and tuple(e) in self.dims:
                dims = self.dims[tuple(e)]
                break
        if dims is None:
            dims = [self.rt(d, "s") for d in shape]
        self.dims[entry] = dims
        return dims

    def ref(self, entry) -> Ref:
        entry = tuple(entry)
        if entry not in self.refs:
            raise AssertionError(f"value {entry} used before it was defined")
        return self.refs[entry]

    def out(self, node, k: int = 0) -> Ref:
        return self.ref((node.id, k))

    def shape(self, entry) -> tuple:
        return tuple(self.graph.shape_of(entry))

    # ------------------------------------------------------------ values
    def _define(self, entry):
        """Create the Ref of a value written by the current step (fresh output or arena)."""
        entry = tuple(entry)
        node = self.graph.nodes[entry[0]]
        dt = np.dtype(node.dtypes[entry[1]])
        dims = self.value_dims(entry)
        root = self.plan.root[entry]
        where = self.plan.storage[root]
        name = f"v{entry[0]}" + (f"_{entry[1]}" if node.num_outputs > 1 else "")
        if where == "output":
            # a fresh array per call; a value computed into an output's array (see
            # memory._forward_into_outputs) allocates it, the output then reuses it
            if root not in self.output_arrays:
                rnode = self.graph.nodes[root[0]]
                rname = f"v{root[0]}" + (f"_{root[1]}" if rnode.num_outputs > 1 else "")
                self.call("util", "empty", prod(dims), self.arena(dt), target=rname,
                          dtype=dt)
                self.output_arrays[root] = rname
            ref = Ref(self.output_arrays[root], "0", dims, tuple(node.shapes[entry[1]]), dt)
        elif where == "arena":
            # one offset variable per *buffer*: a loop writing in place then reads and
            # writes the very same address expression, which LLVM can vectorize
            buf = self.plan.buffer_of[root]
            if buf not in self.offsets:
                self.offsets[buf] = self.rt(self.plan.offset(root), "o")
            ref = Ref(self.arena(dt), self.offsets[buf], dims, tuple(node.shapes[entry[1]]), dt)
        else:
            raise AssertionError(where)
        self.refs[entry] = ref
        return ref

    # ------------------------------------------------------------ steps
    def generate(self) -> tuple[str, list]:
        g = self.graph
        params = []
        for k, node in enumerate(n for n in g.nodes if n.is_var):
            params.append(f"x{k}")
            dt = np.dtype(node.dtypes[0])
            dtype_name(dt)
            self.dims[(node.id, 0)] = [self.rt(d, "s") for d in node.shapes[0]]
            self.refs[(node.id, 0)] = Ref(f"v{node.id}", "0", self.dims[(node.id, 0)],
                                          tuple(node.shapes[0]), dt)
            self.arrays[f"x{k}"] = ("input", k)
            self.call("util", "flat", f"x{k}", target=f"v{node.id}", dtype=dt)
        for step in self.fused.steps:
            start = len(self.lines)
            self.emit_step(step)
            if len(self.lines) > start:
                self.steps[step.id] = "\n".join(self.lines[start:])
        self.emit_return()
        return self.assemble(params), list(self.meta)

    def emit_step(self, step):
        g = self.graph
        if step.kind == "view":
            node = g.nodes[step.nodes[0]]
            src = self.ref(node.inputs[0])
            entry = (node.id, 0)
            dims = self.value_dims(entry)
            if self.plan.storage.get(self.plan.root[entry]) == "output":
                self.comment(f"step {step.id}: {node.op.name} (a view, copied: it is an output)")
                dst = self._define(entry)
                self.call("util", "copy", src.args, dst.args, src.n)
            else:
                self.refs[entry] = Ref(src.arr, src.off, dims, tuple(node.shapes[0]),
                                       np.dtype(node.dtypes[0]))
            return
        if step.kind == "fused":
            if step.outputs:
                self.emit_fused(step)
            return
        node = g.nodes[step.nodes[0]]
        from .kernels import EMITTERS
        emitter = EMITTERS.get(node.op.name)
        if emitter is None:
            raise CodegenError(f"op {node.op.name} has no Numba kernel")
        # shapes as their symbolic dims: the text must not change with the batch size
        shapes = ", ".join("(" + ", ".join(self.ref(e).dims) + ")" for e in node.inputs)
        self.comment(f"step {step.id}: {node.op.name}{'(' + shapes + ')'}")
        for e in step.outputs:
            self._define(e)
        emitter(self, node)

    def emit_fused(self, step):
        """One loop nest for a fused step, in four phases: its iteration domain, the
        nest of loops, the body (load each operand once, compute, store), and, in the
        steps tier, moving the loop into a function of its own."""
        g = self.graph
        exts = list(step.inputs)
        dom, status, dom_dims = self._loop_domain(step, exts)
        for e in step.outputs:
            self.dims.setdefault(tuple(e), list(dom_dims))
        ops = "+".join(g.nodes[n].op.name for n in step.nodes)
        self.comment(f"step {step.id}: fused {ops} over ({', '.join(dom_dims)})")
        outs = [self._define(e) for e in step.outputs]
        start = len(self.lines)
        groups, sizes, bases = self._loop_nest(step, dom, dom_dims, exts, status, outs)
        self._loop_body(step, exts, status, outs, groups, sizes, bases)
        self.depth -= len(groups)
        if self.loops is not None:
            self._move_loop_apart(start, exts, outs)

    def _loop_domain(self, step, exts):
        """The output shape the loop runs over; per operand and axis whether it spans
        the axis ("f", full) or is broadcast along it ("b"); and the domain's symbolic
        dims, each borrowed from an operand that spans that axis."""
        dom = tuple(self.graph.nodes[step.nodes[0]].shapes[0])
        status = {}
        for e in exts:
            s = self.shape(e)
            lead = len(dom) - len(s)
            status[e] = ["f" if a >= lead and s[a - lead] == dom[a] else "b"
                         for a in range(len(dom))]
        dom_dims = []
        for a in range(len(dom)):
            lead = [len(dom) - len(self.shape(e)) for e in exts]
            src = next((self.ref(e).dims[a - ld] for e, ld in zip(exts, lead)
                        if status[e][a] == "f" and a >= ld), None)
            dom_dims.append(src if src is not None else self.rt(dom[a], "s"))
        return dom, status, dom_dims

    def _loop_nest(self, step, dom, dom_dims, exts, status, outs):
        """The `for` lines: axes of length 1 dropped, neighbours that every operand
        treats alike merged into one loop. Returns (axis groups, loop sizes, the
        unsigned base offset of each operand)."""
        axes = [a for a in range(len(dom)) if dom[a] != 1]
        groups: list = []
        for a in axes:
            if groups and all(status[e][groups[-1][-1]] == status[e][a] for e in exts):
                groups[-1].append(a)
            else:
                groups.append([a])
        sizes = []
        for L, grp in enumerate(groups):
            name = f"m{step.id}_{L}"
            self.line(f"{name} = {prod([dom_dims[a] for a in grp])}")
            sizes.append(name)
        bases = {}
        for ref in [self.ref(e) for e in exts] + outs:
            if ref.off != "0" and ref.off not in bases:
                bases[ref.off] = f"u{step.id}_{len(bases)}"
                self.line(f"{bases[ref.off]} = np.uint64({ref.off})")
        for L in range(len(groups)):
            self.line(f"for j{L} in range({sizes[L]}):")
            self.depth += 1
        return groups, sizes, bases

    def _loop_body(self, step, exts, status, outs, groups, sizes, bases):
        """Load each operand once (a broadcast one at its own index), one local per
        op, store the values read after the loop."""
        def index(full):
            terms = []
            for L in range(len(groups)):
                if not full[L]:
                    continue
                later = [sizes[M] for M in range(L + 1, len(groups)) if full[M]]
                terms.append(f"j{L}*" + "*".join(later) if later else f"j{L}")
            return " + ".join(terms) or "0"

        # Indices are unsigned (np.uint64): Numba then skips its negative-index
        # wrap-around, and LLVM can vectorize `arena[offset + k]`.
        self.line(f"k = np.uint64({index([True] * len(groups))})")
        names = {}
        for i, e in enumerate(exts):
            full = [status[e][grp[0]] == "f" for grp in groups]
            idx = "k" if all(full) else f"np.uint64({index(full)})"
            names[e] = f"a{step.id}_{i}"
            self.line(f"{names[e]} = {self._at(self.ref(e), idx, bases)}")
        for n in step.nodes:
            node = self.graph.nodes[n]
            expr = self.scalar_expr(node, [names.get(tuple(e)) for e in node.inputs])
            cast = _NUMBA_DTYPES[dtype_name(node.dtypes[0])]
            self.line(f"t{n} = {cast}({expr})")
            names[(n, 0)] = f"t{n}"
        for e, ref in zip(step.outputs, outs):
            self.line(f"{self._at(ref, 'k', bases)} = {names[tuple(e)]}")

    def _move_loop_apart(self, start, exts, outs):
        """Steps tier: the lines of the loop become a function of its own (one per
        distinct text, see `Loops`), called here as `L[n](...)`."""
        dtypes = {r.arr: r.dtype for r in [self.ref(e) for e in exts] + outs}
        loop, args = self.loops.add(self.lines[start:], self.depth, dtypes)
        del self.lines[start:]
        self.line(f"L[{loop}]({', '.join(args)})")

    @staticmethod
    def _at(ref, index, bases):
        return f"{ref.arr}[{index}]" if ref.off == "0" else f"{ref.arr}[{bases[ref.off]} + {index}]"

    def scalar_expr(self, node, operands) -> str:
        """One element of an elementwise op, with operand names and numeric attributes."""
        name = node.op.name
        if name == "add_n":
            return "(" + " + ".join(operands) + ")"
        if name in ("broadcast_to", "broadcast_like", "Cast", "_cast_like"):
            return operands[0]
        if name == "_unreduce":
            if not node.attrs["mean"]:
                return operands[0]
            data = self.shape(node.inputs[1])
            from ..ops.reduce import norm_axes
            axes = norm_axes(node.attrs["axis"], len(data), node.attrs["exclude"])
            count = int(np.prod([data[a] for a in axes])) if axes else 1
            return f"({operands[0]} / {self.rt(count, 'r')})"
        if name in ("_zeros", "_ones"):
            return "0" if name == "_zeros" else "1"
        if name == "_full":
            return lit(node.attrs["value"])
        template = node.op.scalar_expr
        template = template(node.attrs) if callable(template) else template

        def sub(match):
            key = match.group(1)
            if key.isdigit():
                operand = operands[int(key)]
                if operand is None:
                    raise AssertionError(f"{name}: operand {key} was not loaded")
                return operand
            if key not in node.attrs:
                raise CodegenError(f"{name}: unknown attribute {key!r} in its scalar_expr")
            return lit(node.attrs[key])
        expr = re.sub(r"\{([A-Za-z_0-9]+)\}", sub, template)
        if np.dtype(node.dtypes[0]) == np.float32:
            # float32 literals (else Numba computes in float64) and exp/tanh that vectorize
            from .kernels.fmath import float32_expr
            expr = float32_expr(expr, self.kernel)
        return expr

    def emit_return(self):
        outs, seen = [], set()
        for e in self.graph.outputs:
            e = tuple(e)
            if e in seen or self.graph.nodes[e[0]].is_var:
                continue
            seen.add(e)
            ref = self.ref(e)
            if len(ref.dims) >= 2:
                outs.append(self.call_text("util", "shaped", ref.arr,
                                           "(" + ", ".join(ref.dims) + ")"))
            else:
                outs.append(ref.arr)
        self.line("return (" + "".join(o + ", " for o in outs) + ")")

    def assemble(self, params) -> str:
        if self.loops is not None:
            return self.assemble_steps(params)
        g = self.graph
        arenas = [f"A_{d}" for d in self.arenas]
        types = ", ".join(f"x{k}: {np.dtype(n.dtypes[0]).name}[{len(n.shapes[0])}-d]"
                          for k, n in enumerate(n for n in g.nodes if n.is_var))
        imports = ", ".join(f"{m} as k_{m}" for m in sorted(self.modules | {"util"}))
        head = [
            '"""Generated by straightdope.compiler: one function for a whole graph.',
            "",
            "Do not edit: rebuilt when the graph, the compiler or a library version changes.",
            '"""',
            "import math  # noqa: F401  (used by some scalar expressions)",
            "",
            "import numpy as np",
            "from numba import njit",
            "",
            f"from straightdope.compiler.kernels import {imports}",
            "",
            "",
            f'@njit(cache={_disk_cache()}, nogil=True, boundscheck=False, error_model="numpy")',
            f"def run_graph({', '.join(params + arenas + ['meta'])}):",
            f"    # inputs: {types or 'none'}",
            f"    # {len(g.op_nodes)} ops in {len(self.fused.steps)} steps; arenas: "
            + (", ".join(arenas) or "none"),
        ]
        used = set(re.findall(r"\b[sor][0-9]+\b", "\n".join(self.lines)))
        body = ["    " + m for m in self.meta_lines if m.split(" ")[0] in used]
        body += ["    z = np.int64(0)"] + self.lines
        return "\n".join(head + body) + "\n"


    def assemble_steps(self, params) -> str:
        """run_graph as plain Python: it calls the precompiled kernels, the loops `L` and
        NumPy for the small helpers (`util.in_python`)."""
        arenas = [f"A_{d}" for d in self.arenas]
        imports = ", ".join(f"{m} as k_{m}" for m in sorted(self.modules - {"util"}))
        head = [
            '"""Generated by straightdope.compiler: the steps of a graph, called from Python."""',
            "import numpy as np",
            "",
            *([f"from straightdope.compiler.kernels import {imports}"] if imports else []),
            "from straightdope.compiler.kernels.util import in_python as k_util",
            "",
            "",
            f"def run_graph({', '.join(params + arenas + ['meta', 'L'])}):",
            f"    # {len(self.graph.op_nodes)} ops in {len(self.fused.steps)} steps, "
            f"{len(self.loops.sources)} distinct loops",
        ]
        used = set(re.findall(r"\b[sor][0-9]+\b", "\n".join(self.lines)))
        body = ["    " + m for m in self.meta_lines if m.split(" ")[0] in used]
        body += ["    z = np.int64(0)"] + self.lines
        return "\n".join(head + body) + "\n"


# names in a loop body: what it gets from outside (arrays, integers read from meta) and
# what it makes itself (sizes, bases, loaded operands, temporaries)
_ARRAY = re.compile(r"A_[a-z0-9]+|v[0-9]+(_[0-9]+)?")
_INTEGER = re.compile(r"[sor][0-9]+")
_LOCAL = re.compile(r"([muat])[0-9]+(_[0-9]+)?")


class Loops:
    """The distinct fused loops of one graph, each written as a function of its own.

    A loop's text is made canonical (its arrays become p0, p1, ..., the integers it
    reads n0, n1, ..., its locals numbered in order), so the ten `bias add + relu`
    loops of a network are one function, compiled once, called ten times; and since
    the text is a cache key, once per machine."""

    def __init__(self):
        self.sources: list[str] = []
        self.signatures: list[set] = []      # per loop: the argument types it is called with
        self.index: dict = {}

    def add(self, lines: list, depth: int, dtypes: dict) -> tuple[int, list]:
        """(loop number, the outside names to call it with) for a loop body; `dtypes`
        gives the dtype of each array name."""
        arrays, integers, local = [], [], {}
        counts: dict = {}

        def rename(match):
            name = match.group(0)
            if _ARRAY.fullmatch(name):
                if name not in arrays:
                    arrays.append(name)
                return f"p{arrays.index(name)}"
            if _INTEGER.fullmatch(name):
                if name not in integers:
                    integers.append(name)
                return f"n{integers.index(name)}"
            found = _LOCAL.fullmatch(name)
            if found:
                if name not in local:
                    kind = found.group(1)
                    local[name] = f"{kind}{counts.get(kind, 0)}"
                    counts[kind] = counts.get(kind, 0) + 1
                return local[name]
            return name
        cut = len("    " * depth)
        body = [re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", rename, ln[cut:]) for ln in lines]
        params = [f"p{i}" for i in range(len(arrays))] + [f"n{i}" for i in range(len(integers))]
        source = "\n".join([
            '"""Generated by straightdope.compiler: one fused elementwise loop."""',
            "import math  # noqa: F401  (used by some scalar expressions)",
            "",
            "import numpy as np",
            "from numba import njit",
            "",
            "from straightdope.compiler.kernels import fmath as k_fmath  # noqa: F401",
            "",
            "",
            f'@njit(cache={_disk_cache()}, nogil=True, boundscheck=False, error_model="numpy")',
            f"def loop({', '.join(params)}):"] + ["    " + ln for ln in body]) + "\n"
        if source not in self.index:
            self.index[source] = len(self.sources)
            self.sources.append(source)
            self.signatures.append(set())
        loop = self.index[source]
        self.signatures[loop].add(tuple(np.dtype(dtypes[a]).name for a in arrays)
                                  + ("int",) * len(integers))
        return loop, arrays + integers


def generate(fused: Fused, plan: MemoryPlan, is_train: bool = False,
             loops_apart: bool = False) -> Generated:
    """The source of `run_graph` for one planned graph, with its record (`Generated`).
    The loops are inside run_graph unless `loops_apart`."""
    cg = CodeGen(fused, plan, is_train, loops_apart)
    source, meta = cg.generate()
    loops = list(zip(cg.loops.sources, map(sorted, cg.loops.signatures))) if loops_apart \
        else []
    return Generated(source, calls=tuple(cg.calls), arenas=tuple(cg.arenas), meta=meta,
                     loops=loops, steps=cg.steps)
