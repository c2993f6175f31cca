"""The checks of the book's exercises, chapter by chapter (widgets/exercises.py runs them).

Each rule gets the student's answers and returns Points with an (en, zh) sentence each.
Rules import the library lazily: importing widgets.exercises stays cheap.
"""
from __future__ import annotations

import numpy as np

from .exercises import choice, exercise, number, observed, point, ratio_above_one


def _np(x):
    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


# ======================================================== Part 3: hybridize
# ---------------------------------------------------------------- 20 imperative vs symbolic
@exercise("20.1", hint=("Compiling once costs c + n·r for n inputs, compiling per input n·(c + r).",
                        "编译一次处理 n 个输入的代价是 c + n·r，每个输入都重新编译是 n·(c + r)。"))
def _(once, every, pays_off_at):
    once, every = number(once), number(every)
    return [
        point(every > once,
              (f"compiling per input ({every * 1e3:.2f} ms) costs more than once ({once * 1e3:.2f} ms)",
               f"每个输入都编译（{every * 1e3:.2f} ms）比只编译一次（{once * 1e3:.2f} ms）更慢"),
              ("`every` should be the slower loop: did you swap `once` and `every`?",
               "`every` 应该是更慢的那个循环：是不是把 `once` 和 `every` 写反了？")),
        point(int(pays_off_at) == 2,
              ("compiling once is ahead from the second input on",
               "从第二个输入起，只编译一次就占优"),
              ("compare c + n·r with n·(c + r): for which n is the first smaller?",
               "比较 c + n·r 与 n·(c + r)：n 为多少时前者更小？")),
    ]


@exercise("20.2", hint=("Evaluate `s` on three (2, 2) arrays. On two Symbols, `*` and `+` are MXNet's "
                        "elemwise ops: both inputs have one shape.",
                        "在三个 (2, 2) 数组上求值 `s`。两个符号之间的 `*` 和 `+` 是 MXNet 的逐元素算子："
                        "两个输入形状相同。"))
def _(s, shapes, partial):
    from straightdope import nd
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=(2, 2)).astype("float32") for _ in range(3))
    (value,) = s.eval(a=nd.array(a), b=nd.array(b), c=nd.array(c))
    want = 1 / (1 + np.exp(-(a * b + c)))
    complete = ([(2, 2)] * 3, [(2, 2)], [])

    def as_lists(answer):
        return [[tuple(x) for x in part] for part in answer] if answer is not None else None
    return [
        point(np.allclose(_np(value), want, atol=1e-5),
              ("`s` computes sigmoid(a * b + c)", "`s` 计算的是 sigmoid(a * b + c)"),
              ("`s` does not compute sigmoid(a * b + c) on random inputs",
               "`s` 在随机输入上算出的不是 sigmoid(a * b + c)")),
        point(None not in shapes and as_lists(shapes) == [list(p) for p in complete],
              ("infer_shape completes every shape from a's: all (2, 2)",
               "infer_shape 从 a 的形状推断出了所有形状：都是 (2, 2)"),
              (f"infer_shape(a=(2, 2)) returns every shape as (2, 2) (elemwise * and +), "
               f"not {shapes!r}",
               f"infer_shape(a=(2, 2)) 应当把所有形状都推断为 (2, 2)（逐元素的 * 和 +），"
               f"而不是 {shapes!r}")),
        point(as_lists(partial) == [list(p) for p in complete],
              ("infer_shape_partial knows as much", "infer_shape_partial 知道的一样多"),
              (f"infer_shape_partial(a=(2, 2)) should know every shape too, not {partial!r}",
               f"infer_shape_partial(a=(2, 2)) 也应当知道所有形状，而不是 {partial!r}")),
    ]


@exercise("20.3", hint=("Follow the lives of the values: which buffer is free when H is computed?",
                        "跟踪每个值的生命周期：计算 H 时哪个缓冲区是空闲的？"),
          choices={"why": {
              "a": ("H takes a buffer freed by E and F; the input A needs none",
                    "H 使用 E 和 F 释放的缓冲区；输入 A 不需要缓冲区"),
              "b": ("every op node gets a buffer of its own", "每个算子节点都有自己的缓冲区"),
              "c": ("reusing A copies it into a new buffer", "复用 A 会把它复制到一个新缓冲区")}})
def _(n_buffers, why):
    return [
        point(int(n_buffers) == 2, ("still 2 buffers", "仍然是 2 个缓冲区"),
              (f"plan_buffers finds 2 buffers, not {n_buffers}: run it on graph_h",
               f"plan_buffers 得到的是 2 个缓冲区，不是 {n_buffers}：请在 graph_h 上运行它")),
        choice(why, "a", ("a freed buffer is reused", "复用了被释放的缓冲区"),
               ("the plan reuses dead buffers and does not allocate inputs",
                "内存规划复用不再需要的缓冲区，且不为输入分配内存")),
    ]


@exercise("20.4", hint=("Count how often each version reads and writes the whole array.",
                        "数一数每个版本读写整个数组多少次。"))
def _(speedup4, passes_imperative, passes_fused):
    return [
        ratio_above_one("speedup4", speedup4),
        point(int(passes_imperative) == 4,
              ("the imperative chain makes 4 passes over memory", "命令式的链条遍历内存 4 次"),
              ("each of the 4 NumPy ops is one pass over the array",
               "4 个 NumPy 操作各遍历一次数组")),
        point(int(passes_fused) == 1, ("the fused loop makes 1 pass", "融合后的循环只遍历 1 次"),
              ("the fused loop reads and writes each element once", "融合循环对每个元素只读写一次")),
    ]


# ---------------------------------------------------------------- 21 HybridBlock
@exercise("21.1", hint=("The Python of hybrid_forward runs when the block is traced, not on every call.",
                        "hybrid_forward 中的 Python 代码在追踪时运行，而不是每次调用都运行。"))
def _(prints, net):
    op = net._cached_op
    return [
        point(int(prints) == 1, ("printed once: at the trace", "只打印一次：在追踪时"),
              (f"`print` runs only while tracing, so once, not {prints} times",
               f"`print` 只在追踪时运行，所以是一次，而不是 {prints} 次")),
        point(net.trace_count == 1, ("the network traced once", "网络只追踪了一次"),
              (f"`net.trace_count` is {net.trace_count}: call hybridize() once, then the three batches",
               f"`net.trace_count` 是 {net.trace_count}：只调用一次 hybridize()，再用三个批量调用")),
        point(op is not None and op.compiles >= 3 > net.trace_count,
              ("three shapes, three plans, one trace", "三种形状，三个计划，一次追踪"),
              ("call the hybridized net on batch sizes 1, 2 and 3: each new shape makes a plan",
               "用批量大小 1、2、3 调用混合化后的网络：每种新形状生成一个计划")),
    ]


@exercise("21.2", hint=("hybridize() on a plain Block cannot trace its forward; what does it do to the children?",
                        "对普通 Block 调用 hybridize() 无法追踪它的 forward；它对子块做了什么？"),
          choices={"why": {
              "a": ("it hybridizes each HybridBlock child on its own", "它分别混合化每个 HybridBlock 子块"),
              "b": ("it compiles the container and children as one graph", "它把容器和子块编译成一张图"),
              "c": ("it does nothing at all", "它什么也不做")}})
def _(total_prints, pair, why):
    compiled = [getattr(child, "_cached_op", None) is not None for child in pair]
    return [
        point(int(total_prints) == 2, ("each child printed once: 2 in all", "每个子块打印一次：共 2 次"),
              (f"each child prints on its first call only: 2, not {total_prints}",
               f"每个子块只在第一次调用时打印：共 2 次，不是 {total_prints}")),
        point(len(compiled) == 2 and all(compiled), ("both children are compiled", "两个子块都已编译"),
              ("`pair` should hold two children, each hybridized and called",
               "`pair` 应有两个子块，且都已混合化并被调用过")),
        choice(why, "a", ("a plain Block passes hybridize() down", "普通 Block 把 hybridize() 传给子块"),
               ("the prints fired once per child: what was compiled?", "每个子块打印了一次：到底编译了什么？")),
    ]


@exercise("21.3", hint=("Look at the names list_arguments() returns besides 'data'.",
                        "看看 list_arguments() 除了 'data' 还返回了哪些名字。"),
          choices={"where": {
              "a": ("they are arguments of the graph, given values when it runs",
                    "它们是计算图的参数，运行时才提供值"),
              "b": ("initialize() stored them in the graph", "initialize() 把它们存进了计算图"),
              "c": ("the graph draws random values for them", "计算图为它们生成随机值")}})
def _(arguments, where):
    names = list(arguments)
    params = [n for n in names if n != "data"]
    return [
        point("data" in names and params and all(n.endswith(("weight", "bias")) for n in params),
              (f"the graph takes data and the {len(params)} parameters as arguments",
               f"计算图以 data 和 {len(params)} 个参数为参数"),
              (f"list_arguments() of get_net() on a variable lists data, the weights and the biases; got {names}",
               f"get_net() 作用在变量上后，list_arguments() 列出 data、权重和偏置；得到的是 {names}")),
        choice(where, "a", ("parameters are placeholders, filled in per call", "参数是占位符，每次调用时填入"),
               ("the graph was built without initialising anything", "构建计算图时没有初始化任何东西")),
    ]


@exercise("21.4", hint=("Define `forward(self, x)` (not hybrid_forward) and use npx.relu.",
                        "定义 `forward(self, x)`（不是 hybrid_forward），并使用 npx.relu。"))
def _(block_class):
    from straightdope import nd
    net = block_class()
    net.initialize()
    x = nd.random_normal(shape=(4, 3))
    before = _np(net(x))
    net.hybridize()
    after = _np(net(x))
    style = "forward" in vars(block_class) and "hybrid_forward" not in vars(block_class)
    return [
        point(style, ("2.0 style: forward(self, x)", "2.0 风格：forward(self, x)"),
              ("the class should define forward(self, x) and no hybrid_forward",
               "这个类应该定义 forward(self, x)，而不是 hybrid_forward")),
        point(before.shape == (4, 2), ("output shape (batch, 2)", "输出形状为 (批量, 2)"),
              (f"Dense(10) then Dense(2) give (4, 2) for 4 rows, not {before.shape}",
               f"Dense(10) 接 Dense(2) 对 4 行输入应得到 (4, 2)，而不是 {before.shape}")),
        point(np.allclose(before, after, atol=1e-5) and net.trace_count == 1,
              ("imperative and hybridized outputs agree", "命令式与混合化的输出一致"),
              ("hybridized outputs differ from imperative ones (or no trace happened)",
               "混合化的输出与命令式不同（或者没有发生追踪）")),
    ]


# ---------------------------------------------------------------- 22 benchmarks
@exercise("22.1", hint=("Which share of a call is the per-op Python overhead at batch 128?",
                        "批量为 128 时，每个算子的 Python 开销在一次调用中占多少比例？"),
          choices={"why": {
              "a": ("the arithmetic (BLAS) takes most of the time in both modes", "两种模式下算术（BLAS）都占了大部分时间"),
              "b": ("hybridizing stops working for large batches", "批量大时混合化不再起作用"),
              "c": ("the compile time grows with the batch", "编译时间随批量增大")}})
def _(ratio_1, ratio_128, why):
    r1, r128 = number(ratio_1), number(ratio_128)
    return [
        observed(r128 < 1.5 * max(r1, 1.0),
              (f"no more gain at batch 128 ({r128:.2f}x) than at batch 1 ({r1:.2f}x)",
               f"批量 128 时（{r128:.2f}x）的收益不比批量 1 时（{r1:.2f}x）多"),
              (f"ratio_128 ({r128:.2f}) should not be well above ratio_1 ({r1:.2f}): time both modes on x128",
               f"ratio_128（{r128:.2f}）不应远大于 ratio_1（{r1:.2f}）：请在 x128 上测量两种模式")),
        choice(why, "a", ("the fixed overhead is a small share of a big call", "固定开销只占大调用的一小部分"),
               ("what does the batch-size sweep show?", "批量大小扫描显示了什么？")),
    ]


@exercise("22.2", hint=("A narrow layer is mostly overhead; a wide one mostly matrix products.",
                        "窄的层主要是开销；宽的层主要是矩阵乘法。"))
def _(speedups, largest):
    s = {int(w): number(v) for w, v in dict(speedups).items()}
    best = max(s, key=s.get) if s else None
    return [
        point(set(s) == {16, 256, 1024}, ("speed-ups for widths 16, 256, 1024", "宽度 16、256、1024 的加速比"),
              (f"`speedups` should map each width 16, 256, 1024 to its speed-up; got keys {sorted(s)}",
               f"`speedups` 应把宽度 16、256、1024 映射到各自的加速比；得到的键是 {sorted(s)}")),
        observed(s.get(16, 0) > 0.8 * s.get(1024, np.inf), ("width 16 gains more than width 1024 (or as much, within noise)",
                                                      "宽度 16 的收益大于宽度 1024（或在噪声范围内相当）"),
              ("the narrowest net should gain more than the widest: rerun with more repeats",
               "最窄的网络收益应大于最宽的：请增加重复次数再测一次")),
        point(int(largest) == best, (f"largest speed-up at width {best}", f"宽度 {best} 的加速比最大"),
              (f"your own numbers say width {best}, not {largest}", f"你自己的数据表明是宽度 {best}，不是 {largest}")),
    ]


@exercise("22.3", hint=("Both executors run the same graph; one of them compiles it.",
                        "两个执行器运行同一张图；其中一个会编译它。"),
          choices={"gain_from": {
              "a": ("compiling: fused loops, planned buffers, one call into machine code",
                    "编译：融合循环、规划好的缓冲区、一次调用机器码"),
              "b": ("the graph alone, without compiling", "仅仅是计算图本身，无需编译"),
              "c": ("more BLAS threads", "更多的 BLAS 线程")}})
def _(numpy_speedup, numba_speedup, gain_from):
    n_np, n_nb = number(numpy_speedup), number(numba_speedup)
    return [
        observed(n_nb > 0.8 * n_np, (f"compiled {n_nb:.2f}x vs the NumPy executor's {n_np:.2f}x",
                                  f"编译执行器 {n_nb:.2f}x 对 NumPy 执行器 {n_np:.2f}x"),
              ("numba_speedup should be the larger: did you swap them?", "numba_speedup 应该更大：是不是写反了？")),
        choice(gain_from, "a", ("most of the gain comes from compiling", "大部分收益来自编译"),
               ("the NumPy executor runs the same graph and keeps little of the gain",
                "NumPy 执行器运行同一张图，却几乎没有保留收益")),
    ]


@exercise("22.4", hint=("Where is the time BLAS time, and can tiny products use many cores?",
                        "哪里的时间主要是 BLAS 的时间？很小的矩阵乘法能用上多个核吗？"),
          choices={"changes": {
              "a": ("only the large-batch end: BLAS splits big products between cores",
                    "只有大批量的一端：BLAS 把大的矩阵乘法分给多个核"),
              "b": ("only batch 1: threads remove Python overhead", "只有批量 1：线程消除了 Python 开销"),
              "c": ("the speed-up of every batch doubles", "每个批量的加速比都翻倍")}})
def _(changes):
    return [choice(changes, "a", ("threads help where BLAS works", "线程只在 BLAS 干活的地方有帮助"),
                   ("threads cannot remove per-op Python overhead", "线程无法消除每个算子的 Python 开销"))]


# ---------------------------------------------------------------- 23 under the hood
@exercise("23.1", hint=("Elementwise ops fuse into the loop that is already there.",
                        "逐元素算子会融合进已有的循环。"))
def _(steps_before, steps_after, planned_before, planned_after):
    return [
        point(int(steps_after) == int(steps_before), ("the number of fused steps stays the same", "融合步数不变"),
              ("sigmoid and + are elementwise: they join an existing fused step",
               "sigmoid 和 + 是逐元素的：它们并入已有的融合步骤")),
        point(int(planned_after) == int(planned_before), ("the planned bytes stay the same", "规划的字节数不变"),
              ("fused values live in registers: they need no buffer", "融合的值存在寄存器中：不需要缓冲区")),
    ]


@exercise("23.2", hint=("Is the batch size a constant in the generated source or an argument?",
                        "批量大小在生成的源代码里是常量还是参数？"))
def _(regenerated, cache):
    return [
        point(not regenerated, ("the same source: nothing compiles", "源代码相同：不需要编译"),
              ("shapes are arguments of the generated function, so its text does not change",
               "形状是生成函数的参数，所以源代码文本不变")),
        point(str(cache) == "memory", ("found in memory", "在内存中找到"),
              (f"timings['cache'] after the batch-8 call reads 'memory', not {cache!r}",
               f"批量 8 调用之后 timings['cache'] 是 'memory'，而不是 {cache!r}")),
    ]


@exercise("23.3", hint=("Look inside the loop of the fused step for max(..., 0.0).",
                        "在融合步骤的循环里找 max(..., 0.0)。"),
          choices={"stored": {
              "a": ("in local variables (registers); only the last value is written to memory",
                    "在局部变量（寄存器）中；只有最后的值写回内存"),
              "b": ("each in an array of its own", "每个值都在自己的数组中"),
              "c": ("in the arena, reused buffer by buffer", "在内存池中，逐个复用缓冲区")}})
def _(relu_line, stored):
    line = str(relu_line)
    return [
        point("max(" in line and "0.0" in line, ("that line is the relu", "这一行就是 relu"),
              ("the relu is the line with max(..., 0.0)", "relu 是含有 max(..., 0.0) 的那一行")),
        choice(stored, "a", ("intermediate values stay in registers", "中间值留在寄存器中"),
               ("the fused loop writes back only its last value", "融合循环只写回最后一个值")),
    ]


@exercise("23.4", hint=("d/da = b·exp(a), d/db = exp(a): which values does the backward need?",
                        "d/da = b·exp(a)，d/db = exp(a)：反向传播需要哪些值？"),
          choices={"why": {
              "a": ("keeping exp(a) costs memory but saves computing it again",
                    "保存 exp(a) 占用内存，但省去了再次计算"),
              "b": ("the backward graph cannot call exp", "反向图无法调用 exp"),
              "c": ("saved values cost nothing", "保存的值没有任何代价")}})
def _(saved, why):
    names = list(saved)
    return [
        point(len(names) == 2, (f"{len(names)} saved values: exp(a) and exp(a) * b", f"保存了 {len(names)} 个值：exp(a) 与 exp(a) * b"),
              (f"`saved` should be d2.saved_names (2 values), got {names}",
               f"`saved` 应该是 d2.saved_names（2 个值），得到的是 {names}")),
        choice(why, "a", ("saving beats recomputing here", "这里保存胜过重新计算"),
               ("the backward needs exp(a) twice", "反向传播两次需要 exp(a)")),
    ]


# ======================================================== Part 1: the basics
# ---------------------------------------------------------------- 00 how to use
@exercise("00.1", hint=("sigmoid squashes every entry into (0, 1); x - shift = 0 gives 0.5.",
                        "sigmoid 把每个元素压到 (0, 1) 之间；x - shift = 0 时得到 0.5。"))
def _(values):
    v = _np(values).ravel()
    want = 1 / (1 + np.exp(-(np.arange(-3, 4) - 1.0)))
    return [
        point(v.shape == want.shape and np.allclose(v, want, atol=1e-4),
              ("sigmoid(x - 1) for x = -3 ... 3", "x = -3 ... 3 时的 sigmoid(x - 1)"),
              ("`values` should be nd.sigmoid(nd.arange(-3, 4) - 1.0): 7 numbers in (0, 1)",
               "`values` 应为 nd.sigmoid(nd.arange(-3, 4) - 1.0)：(0, 1) 之间的 7 个数")),
        point(v.size == 7 and abs(v[4] - 0.5) < 1e-4, ("x = shift gives 0.5", "x = shift 时为 0.5"),
              ("at x = shift (the fifth entry) sigmoid gives exactly 0.5",
               "在 x = shift（第五个元素）处 sigmoid 恰好为 0.5")),
    ]


@exercise("00.2", hint=("Time both networks with the same x, many calls each; compare per-call times.",
                        "用同一个 x 对两个网络各计时多次；比较每次调用的时间。"))
def _(imperative_us, hybridized_us, faster):
    imp, hyb = number(imperative_us), number(hybridized_us)
    measured = "hybridized" if hyb < imp else "imperative"
    return [
        point(imp > 0 and hyb > 0, ("two positive timings", "两个正的计时"),
              ("timings are positive numbers (microseconds per call)", "计时应为正数（每次调用的微秒数）")),
        point(str(faster) == measured,
              (f"the {measured} network was faster here ({imp / hyb:.2f}x)",
               f"这里 {'混合化' if measured == 'hybridized' else '命令式'}网络更快（{imp / hyb:.2f}x）"),
              (f"your own timings say '{measured}' ({imp:.1f} us vs {hyb:.1f} us)",
               f"你自己的计时表明是 '{measured}'（{imp:.1f} us 对 {hyb:.1f} us）")),
    ]


@exercise("00.3", hint=("inspect.getsourcefile(nn.Dense), then search the file for 'FullyConnected('.",
                        "用 inspect.getsourcefile(nn.Dense)，再在文件中搜索 'FullyConnected('。"))
def _(path, line):
    import inspect
    from pathlib import Path
    from straightdope.gluon import nn
    source = Path(inspect.getsourcefile(nn.Dense))
    return [
        point(Path(path).resolve() == source.resolve(), (f"{source.name} defines Dense", f"{source.name} 定义了 Dense"),
              (f"{path} is not the file that defines Dense", f"{path} 不是定义 Dense 的文件")),
        point("FullyConnected(" in str(line) and str(line).strip() in source.read_text(),
              ("that line calls FullyConnected", "这一行调用了 FullyConnected"),
              ("`line` should be a line of that file calling F.FullyConnected(...)",
               "`line` 应是该文件中调用 F.FullyConnected(...) 的一行")),
    ]


# ---------------------------------------------------------------- 01 ndarray
@exercise("01.1", hint=("Each size-1 axis is stretched to the other's length.",
                        "每个长度为 1 的轴被拉伸到另一个数组的长度。"))
def _(result):
    r = _np(result)
    want = (np.arange(3).reshape(3, 1) < np.arange(4).reshape(1, 4)).astype("float32")
    return [
        point(r.shape == (3, 4), ("(3, 1) and (1, 4) broadcast to (3, 4)", "(3, 1) 与 (1, 4) 广播为 (3, 4)"),
              (f"the comparison of (3, 1) and (1, 4) gives (3, 4), not {r.shape}",
               f"(3, 1) 与 (1, 4) 比较得到 (3, 4)，而不是 {r.shape}")),
        point(r.shape == (3, 4) and np.array_equal(r, want) and r.dtype == np.float32,
              ("0/1 float32 values, elementwise", "逐元素的 0/1 float32 值"),
              ("`result` should be col < row for col = arange(3) as (3, 1), row = arange(4) as (1, 4)",
               "`result` 应为 col < row，其中 col = arange(3) 形状 (3, 1)，row = arange(4) 形状 (1, 4)")),
    ]


@exercise("01.2", hint=("Without padding a k x k kernel removes k - 1 pixels per axis.",
                        "没有填充时，k x k 的卷积核在每个轴上去掉 k - 1 个像素。"))
def _(weight_shape, out_shape):
    return [
        point(tuple(weight_shape) == (6, 1, 3, 3), ("weight (6, 1, 3, 3)", "权重 (6, 1, 3, 3)"),
              (f"the weight is (num_filter, channels, 3, 3), not {tuple(weight_shape)}",
               f"权重形状是 (num_filter, 通道数, 3, 3)，而不是 {tuple(weight_shape)}")),
        point(tuple(out_shape) == (1, 6, 26, 26), ("output (1, 6, 26, 26)", "输出 (1, 6, 26, 26)"),
              (f"28 - 3 + 1 = 26 per axis, 6 filters: not {tuple(out_shape)}",
               f"每个轴 28 - 3 + 1 = 26，6 个滤波器：不是 {tuple(out_shape)}")),
    ]


@exercise("01.3", hint=("Read the row of `softsign` in elemwise.py: its forward and its scalar_expr.",
                        "读 elemwise.py 中 `softsign` 那一行：它的前向和 scalar_expr。"))
def _(formula, scalar_expr):
    from straightdope import ops
    xs = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    got = np.array([float(formula(v)) for v in xs])
    return [
        point(np.allclose(got, xs / (1 + np.abs(xs))), ("x / (1 + |x|)", "x / (1 + |x|)"),
              ("`formula(x)` does not compute softsign on -3, -1, 0, 0.5, 2",
               "`formula(x)` 在 -3、-1、0、0.5、2 上算出的不是 softsign")),
        point(str(scalar_expr) == ops.OPS["softsign"].scalar_expr,
              ("the scalar_expr of the registry", "注册表中的 scalar_expr"),
              ("`scalar_expr` should be mx.ops.OPS['softsign'].scalar_expr", "`scalar_expr` 应为 mx.ops.OPS['softsign'].scalar_expr")),
    ]


@exercise("01.4", hint=("Compare id(Y) before and after; try `small += big`.",
                        "比较前后的 id(Y)；试试 `small += big`。"))
def _(plus_keeps_object, grow_in_place):
    return [
        point(plus_keeps_object is False, ("Y = Y + X makes a new array", "Y = Y + X 创建了新数组"),
              ("`Y = Y + X` always makes a new array: id(Y) changes", "`Y = Y + X` 总是创建新数组：id(Y) 会变")),
        point(grow_in_place is False, ("+= cannot grow an array", "+= 不能让数组变大"),
              ("`small += big` fails when the sum is larger than `small`", "和比 `small` 大时，`small += big` 会失败")),
    ]


# ---------------------------------------------------------------- 02 autograd
@exercise("02.1", hint=("The gradient rule multiplies the incoming gradient og by something.",
                        "梯度规则把传入的梯度 og 乘以某个量。"),
          choices={"rule": {"a": ("og * F.cos(x)", "og * F.cos(x)"), "b": ("og * F.sin(x)", "og * F.sin(x)"),
                            "c": ("F.cos(og)", "F.cos(og)")}})
def _(x, grad, rule):
    return [
        point(np.allclose(_np(grad), np.cos(_np(x)), atol=1e-5), ("x.grad equals cos(x)", "x.grad 等于 cos(x)"),
              ("`grad` should be x.grad after y = sin(x) was recorded and y.backward()",
               "`grad` 应为记录 y = sin(x) 并调用 y.backward() 之后的 x.grad")),
        choice(rule, "a", ("og * cos(x): the chain rule", "og * cos(x)：链式法则"),
               ("look at mx.ops.OPS['sin'].gradient", "看看 mx.ops.OPS['sin'].gradient")),
    ]


@exercise("02.2", hint=("In the else branch c = (k a)^2: differentiate that.",
                        "在 else 分支中 c = (k a)^2：对它求导。"))
def _(still_true, ratio):
    return [
        point(still_true is False, ("dc/da = c/a no longer holds there", "那里 dc/da = c/a 不再成立"),
              ("c is quadratic in a in the else branch", "在 else 分支中 c 是 a 的二次函数")),
        point(abs(number(ratio) - 2) < 1e-3, ("dc/da = 2c/a", "dc/da = 2c/a"),
              (f"(dc/da) / (c/a) should be 2 for a negative a, not {number(ratio):.3f}",
               f"a 为负时 (dc/da) / (c/a) 应为 2，而不是 {number(ratio):.3f}")),
    ]


@exercise("02.3", hint=("backward() frees what it recorded; see retain_graph.",
                        "backward() 会释放记录的内容；看看 retain_graph。"),
          choices={"fix": {"a": ("pass retain_graph=True to the first backward()", "第一次 backward() 时传入 retain_graph=True"),
                           "b": ("call x.attach_grad() again in between", "在两次之间再调用一次 x.attach_grad()"),
                           "c": ("set grad_req='null'", "设置 grad_req='null'")}})
def _(error, fix):
    name = error.__name__ if isinstance(error, type) else type(error).__name__
    return [
        point(name == "ValueError", ("the second backward() raises ValueError", "第二次 backward() 抛出 ValueError"),
              (f"the second call raises ValueError, not {name}", f"第二次调用抛出的是 ValueError，而不是 {name}")),
        choice(fix, "a", ("retain_graph keeps the graph", "retain_graph 会保留计算图"),
               ("the graph was freed: keep it", "计算图已被释放：需要保留它")),
    ]


@exercise("02.4", hint=("Count inputs and ops of the printed graph; which ops have a scalar_expr?",
                        "数一数打印出的图中的输入和算子；哪些算子有 scalar_expr？"))
def _(n_nodes, fusable):
    ops_ = list(fusable)
    return [
        point(int(n_nodes) == 6, ("6 nodes: 2 inputs, tanh and 3 ops", "6 个节点：2 个输入、tanh 和 3 个算子"),
              (f"len(graph.nodes) is 6, not {n_nodes}", f"len(graph.nodes) 是 6，不是 {n_nodes}")),
        point(len(ops_) == 4, ("all 4 ops have a scalar_expr: one loop", "4 个算子都有 scalar_expr：一个循环"),
              (f"`fusable` should list the 4 ops that have a scalar_expr, got {ops_}",
               f"`fusable` 应列出有 scalar_expr 的 4 个算子，得到的是 {ops_}")),
    ]


# ---------------------------------------------------------------- 03 linear regression
@exercise("03.1", hint=("Each weight's gradient involves its own feature; hidden units do not.",
                        "每个权重的梯度都含有它自己的特征；隐藏单元则不然。"),
          choices={"why": {
              "a": ("in a hidden layer, units that start equal get equal gradients and stay equal",
                    "在隐藏层中，初始相同的单元得到相同的梯度，并一直相同"),
              "b": ("zero weights make every gradient zero", "零权重使所有梯度为零"),
              "c": ("zero weights make the loss non-convex", "零权重使损失函数不再是凸的")}})
def _(w, true_w, why):
    err = np.abs(_np(w).ravel() - _np(true_w).ravel()).max()
    return [
        point(err < 0.05, (f"trained from zeros, w is off by {err:.4f}", f"从零开始训练，w 的误差为 {err:.4f}"),
              (f"w is off by {err:.3f}: train it from zeros as the chapter trains w",
               f"w 的误差为 {err:.3f}：请像本章那样从零开始训练 w")),
        choice(why, "a", ("symmetry is the problem of hidden layers", "对称性是隐藏层的问题"),
               ("the gradients are not zero: they differ per feature", "梯度不为零：每个特征的梯度不同")),
    ]


@exercise("03.2", hint=("Compare the loss after 2 epochs for each rate.",
                        "比较每个学习率训练 2 轮之后的损失。"))
def _(final_loss, slowest):
    f = {float(k): number(v) for k, v in dict(final_loss).items()}
    return [
        point(set(f) == {0.001, 0.1, 1.0}, ("losses for rates 0.001, 0.1, 1.0", "学习率 0.001、0.1、1.0 的损失"),
              (f"`final_loss` should map 0.001, 0.1 and 1.0 to the loss, got {sorted(f)}",
               f"`final_loss` 应把 0.001、0.1 和 1.0 映射到损失，得到的是 {sorted(f)}")),
        point(f.get(0.001, 0) > 10 * f.get(0.1, np.inf), ("lr 0.001 is far behind after 2 epochs", "学习率 0.001 在 2 轮后远远落后"),
              ("with lr 0.001 the loss should still be far above lr 0.1's", "学习率 0.001 的损失应远高于 0.1 的")),
        point(float(slowest) == max(f, key=f.get) if f else False, ("the slowest rate, by your numbers", "按你的数据，最慢的学习率"),
              ("`slowest` should be the rate with the largest final loss", "`slowest` 应是最终损失最大的学习率")),
    ]


@exercise("03.3", hint=("Huber's gradient per example is capped at 1; where are the residuals large?",
                        "Huber 损失每个样本的梯度上限为 1；残差在什么时候大？"),
          choices={"why": {
              "a": ("while residuals are large Huber's capped gradient takes smaller steps",
                    "残差大时，Huber 被截断的梯度步子更小"),
              "b": ("Huber is not convex", "Huber 损失不是凸的"),
              "c": ("Huber ignores small residuals", "Huber 忽略小的残差")}})
def _(huber_error, l2_error, why):
    h, l2 = number(huber_error), number(l2_error)
    return [
        point(h > l2, (f"Huber is {h / l2:.0f}x further off after 3 epochs", f"3 轮后 Huber 的误差是 L2 的 {h / l2:.0f} 倍"),
              ("after 3 epochs Huber's weight error should be the larger one: did you swap them?",
               "3 轮后 Huber 的权重误差应该更大：是不是写反了？")),
        choice(why, "a", ("capped gradients slow the start", "截断的梯度拖慢了开始阶段"),
               ("the residuals start large: what does Huber do with them?", "残差一开始很大：Huber 怎样处理它们？")),
    ]


@exercise("03.4", hint=("trainer.step(batch_size) divides the summed gradient by batch_size.",
                        "trainer.step(batch_size) 把梯度之和除以 batch_size。"))
def _(learning_rate, batch_size, divided, undivided):
    lr = number(learning_rate)
    return [
        point(abs(lr * int(batch_size) - 0.03) < 1e-9, (f"0.03 / {batch_size} = {lr:g}", f"0.03 / {batch_size} = {lr:g}"),
              (f"with step(1) the rate is 0.03 / batch_size, not {lr:g}", f"使用 step(1) 时学习率为 0.03 / batch_size，而不是 {lr:g}")),
        point(np.allclose(_np(divided), _np(undivided), atol=1e-6), ("the two updates agree", "两次更新结果相同"),
              ("one step each should give the same weights", "各走一步应得到相同的权重")),
    ]


# ======================================================== Part 2: Gluon
def _shape(x):
    return tuple(int(n) for n in x)


def _error_name(error):
    return error.__name__ if isinstance(error, type) else type(error).__name__


# ---------------------------------------------------------------- 10 layers and Dense
@exercise("10.1", hint=("Print layer.params and layer.bias for Dense(4, use_bias=False).",
                        "打印 Dense(4, use_bias=False) 的 layer.params 和 layer.bias。"))
def _(names, has_bias):
    names = list(names)
    return [
        point(len(names) == 1 and names[0].endswith("weight"), ("only the weight", "只有权重"),
              (f"`names` should list the parameters: only a weight, got {names}",
               f"`names` 应列出参数：只有一个权重，得到的是 {names}")),
        point(has_bias is False, ("no bias parameter at all", "完全没有偏置参数"),
              ("`has_bias` is `layer.bias is not None`: is there a bias?", "`has_bias` 即 `layer.bias is not None`：有偏置吗？")),
    ]


@exercise("10.2", hint=("The weight is 0.5 everywhere, the bias keeps its own initializer (zeros).",
                        "权重处处为 0.5，偏置保留它自己的初始化器（零）。"))
def _(output, by_hand):
    out = _np(output)
    return [
        point(out.shape == (2, 5) and np.allclose(out, 1.5), ("a (2, 5) array of 1.5", "一个全为 1.5 的 (2, 5) 数组"),
              (f"`output` should be the layer's output on np.ones((2, 3)), got shape {out.shape}",
               f"`output` 应为该层在 np.ones((2, 3)) 上的输出，得到的形状是 {out.shape}")),
        point(abs(number(by_hand) - 1.5) < 1e-6, ("3 x 1 x 0.5 + 0 = 1.5", "3 x 1 x 0.5 + 0 = 1.5"),
              (f"by hand: three inputs of 1 times 0.5, plus a zero bias; not {by_hand}",
               f"手算：三个 1 乘以 0.5，再加零偏置；不是 {by_hand}")),
    ]


@exercise("10.3", hint=("flatten=True flattens everything after the batch axis; False acts on the last axis.",
                        "flatten=True 展平批量轴之后的所有轴；False 只作用在最后一个轴上。"))
def _(shapes, for_sentences):
    got = {bool(k): (_shape(v[0]), _shape(v[1])) for k, v in dict(shapes).items()}
    return [
        point(got.get(True) == ((2, 5), (5, 72)), ("flatten=True: output (2, 5), weight (5, 72)", "flatten=True：输出 (2, 5)，权重 (5, 72)"),
              (f"with flatten=True: (2, 3*4*6) in, so output (2, 5) and weight (5, 72); got {got.get(True)}",
               f"flatten=True 时输入为 (2, 3*4*6)，输出 (2, 5)、权重 (5, 72)；得到的是 {got.get(True)}")),
        point(got.get(False) == ((2, 3, 4, 5), (5, 6)), ("flatten=False: output (2, 3, 4, 5), weight (5, 6)", "flatten=False：输出 (2, 3, 4, 5)，权重 (5, 6)"),
              (f"with flatten=False the layer acts on the last axis (6); got {got.get(False)}",
               f"flatten=False 时该层作用在最后一个轴（6）上；得到的是 {got.get(False)}")),
        point(for_sentences is False, ("flatten=False for word vectors", "词向量用 flatten=False"),
              ("the same weights should apply to every word, for any number of words",
               "同一组权重应作用于每个词，且适用于任意词数")),
    ]


@exercise("10.4", hint=("Catch the warnings of the second initialize(); look for force_reinit.",
                        "捕获第二次 initialize() 的警告；找找 force_reinit。"))
def _(warnings, changed, how):
    return [
        point(int(warnings) >= 1, ("the second call warns", "第二次调用会发出警告"),
              ("catch the warnings of the second initialize(): there is one per parameter",
               "捕获第二次 initialize() 的警告：每个参数一条")),
        point(changed is False, ("and changes nothing", "并且什么也不改变"),
              ("the weights stay as they were after the second call", "第二次调用后权重保持不变")),
        point("force_reinit" in str(how), ("force_reinit=True starts over", "force_reinit=True 重新开始"),
              ("`how` names the argument of initialize() that re-draws the weights",
               "`how` 是 initialize() 中重新抽取权重的参数名")),
    ]


# ---------------------------------------------------------------- 11 Sequential
@exercise("11.1", hint=("Compare print(net) before and after the first batch.",
                        "比较第一个批量之前和之后的 print(net)。"))
def _(before, after):
    return [
        point("-1" in str(before), ("before: input sizes unknown (-1)", "之前：输入大小未知（-1）"),
              ("`before` should be str(net) before the first forward pass", "`before` 应为第一次前向传播之前的 str(net)")),
        point("-1" not in str(after) and str(after) != str(before), ("after: every size inferred", "之后：所有大小都已推断"),
              ("`after` should be str(net) after the first forward pass", "`after` 应为第一次前向传播之后的 str(net)")),
    ]


@exercise("11.2", hint=("One Dense object is one set of parameters, however often it is used.",
                        "一个 Dense 对象就是一组参数，不论使用多少次。"),
          choices={"means": {"a": ("the two uses share, and update, the same weights", "两次使用共享并更新同一组权重"),
                             "b": ("the second use gets a copy of the weights", "第二次使用得到权重的副本"),
                             "c": ("the second use is not trained", "第二次使用不参与训练")}})
def _(n_params, means):
    return [
        point(int(n_params) == 2, ("2 parameters: one weight, one bias", "2 个参数：一个权重，一个偏置"),
              (f"collect_params() lists each Parameter once: 2, not {n_params}", f"collect_params() 每个参数只列一次：2 个，不是 {n_params}")),
        choice(means, "a", ("shared weights", "共享权重"), ("it is one object, not two", "它是一个对象，不是两个")),
    ]


@exercise("11.3", hint=("Dropout is active only while autograd records (training mode).",
                        "Dropout 只在 autograd 记录时（训练模式）起作用。"))
def _(net, x, same_predicting, same_recording):
    from straightdope import autograd
    predicting = np.abs(_np(net(x)) - _np(net(x))).max() == 0
    with autograd.record():
        recording = np.abs(_np(net(x)) - _np(net(x))).max() == 0
    return [
        point(not recording and predicting, ("the net has a working Dropout", "网络中的 Dropout 在起作用"),
              ("`net` should contain nn.Dropout(0.5) and be called on `x`", "`net` 应包含 nn.Dropout(0.5)，并在 `x` 上调用")),
        point(same_predicting is True, ("outside record(): the same output every call", "record() 之外：每次输出相同"),
              ("outside autograd.record() Dropout is the identity", "autograd.record() 之外 Dropout 是恒等映射")),
        point(same_recording is False, ("inside record(): a new mask every call", "record() 之内：每次一个新的掩码"),
              ("while recording, each call draws a new random mask", "记录时每次调用都会抽取新的随机掩码")),
    ]


@exercise("11.4", hint=("net[0:2] ends with the second layer, which has 25 units.",
                        "net[0:2] 以第二层结束，它有 25 个单元。"))
def _(shape):
    return [point(_shape(shape) == (7, 25), ("(7, 25): 7 examples, 25 features", "(7, 25)：7 个样本，25 个特征"),
                  (f"the second layer has 25 units: (7, 25), not {_shape(shape)}", f"第二层有 25 个单元：(7, 25)，不是 {_shape(shape)}"))]


# ---------------------------------------------------------------- 12 custom blocks
@exercise("12.1", hint=("Each MLP registered as an attribute brings its 6 parameters.",
                        "每个作为属性注册的 MLP 都带来它的 6 个参数。"))
def _(block, x, numbers):
    params = block.collect_params()
    total = sum(p.data().size for p in params.values())
    return [
        point(_shape(block(x).shape)[1:] == (4,), ("outputs concatenated: 2 + 2 = 4 columns", "输出拼接：2 + 2 = 4 列"),
              ("concatenate the two MLPs' outputs along axis 1", "沿轴 1 拼接两个 MLP 的输出")),
        point(len(params) == 12, ("12 parameter arrays", "12 个参数数组"),
              (f"two MLPs have 12 parameter arrays, found {len(params)}: are both attributes?",
               f"两个 MLP 有 12 个参数数组，找到 {len(params)} 个：两个都是属性吗？")),
        point(int(numbers) == total, (f"{total} numbers in all", f"共 {total} 个数"),
              (f"the parameters hold {total} numbers, not {numbers}", f"参数共有 {total} 个数，不是 {numbers}")),
    ]


@exercise("12.2", hint=("collect_params() lists each Parameter once, however often forward uses it.",
                        "collect_params() 每个参数只列一次，不论 forward 使用多少次。"))
def _(n_weights, shape):
    return [
        point(int(n_weights) == 1, ("one weight matrix", "一个权重矩阵"),
              (f"self.dense is one layer: 1 weight, not {n_weights}", f"self.dense 是一层：1 个权重，不是 {n_weights}")),
        point(_shape(shape) == (8, 8), ("(8, 8): output size equals input size", "(8, 8)：输出大小等于输入大小"),
              (f"its output is fed back in, so the weight is square (8, 8), not {_shape(shape)}",
               f"它的输出又被送回输入，所以权重是方阵 (8, 8)，不是 {_shape(shape)}")),
    ]


@exercise("12.3", hint=("Try it inside try/except and count collect_params() before and after.",
                        "放在 try/except 中试一试，并数一数之前和之后的 collect_params()。"))
def _(error, before, after):
    return [
        point(_error_name(error) == "TypeError", ("__setattr__ refuses with a TypeError", "__setattr__ 以 TypeError 拒绝"),
              (f"the assignment raises TypeError, not {_error_name(error)}", f"赋值抛出的是 TypeError，不是 {_error_name(error)}")),
        point(int(before) == int(after), ("collect_params() is unchanged", "collect_params() 不变"),
              ("the refused assignment changes nothing", "被拒绝的赋值什么也不改变")),
    ]


@exercise("12.4", hint=("Call self.register_child(layer) for each layer of the list.",
                        "对列表中的每一层调用 self.register_child(layer)。"))
def _(block_class):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params = block_class().collect_params()
    return [
        point(len(params) == 4, ("4 parameters found", "找到 4 个参数"),
              (f"collect_params() finds {len(params)} parameters, not the 4 of two Dense layers",
               f"collect_params() 找到 {len(params)} 个参数，而不是两个 Dense 层的 4 个")),
        point(not caught, ("no warning", "没有警告"),
              ("collect_params() still warns: register each layer of the list", "collect_params() 仍有警告：请注册列表中的每一层")),
    ]


# ---------------------------------------------------------------- 13 parameters
@exercise("13.1", hint=("With relu a bias entry's gradient counts the examples where that output is active.",
                        "有 relu 时，偏置每个元素的梯度等于该输出被激活的样本数。"))
def _(bias_grad, batch_size):
    g, n = _np(bias_grad), int(batch_size)
    return [
        point(np.allclose(g, np.round(g)) and g.min() >= 0 and g.max() <= n,
              ("each entry counts active examples (0 to batch size)", "每个元素是激活样本数（0 到批量大小）"),
              (f"the bias gradient should hold counts between 0 and {n}, got {g}", f"偏置梯度应为 0 到 {n} 之间的计数，得到的是 {g}")),
        point(not np.all(g == n), ("it changed: not the batch size everywhere", "它变了：不再处处等于批量大小"),
              ("without relu every entry is the batch size: did you apply npx.relu?", "没有 relu 时每个元素都等于批量大小：用了 npx.relu 吗？")),
    ]


@exercise("13.2", hint=("d/ds of sum (s x - 3x)^2 at s = 2 for x = 1, 2, 3; then s - lr * gradient.",
                        "在 s = 2、x = 1, 2, 3 时求 sum (s x - 3x)^2 对 s 的导数；再算 s - lr * 梯度。"))
def _(gradient, after):
    return [
        point(abs(number(gradient) + 28) < 1e-3, ("gradient -28: SGD raises s", "梯度为 -28：SGD 使 s 增大"),
              (f"2 * sum (s - 3) x^2 = -28 at s = 2, not {number(gradient):g}", f"s = 2 时 2 * sum (s - 3) x^2 = -28，不是 {number(gradient):g}")),
        point(abs(number(after) - 2.28) < 1e-4, ("s moves from 2 to 2.28, towards 3", "s 从 2 变为 2.28，朝 3 靠近"),
              (f"one step with lr 0.01: 2 + 0.01 * 28 = 2.28, not {number(after):g}", f"学习率 0.01 走一步：2 + 0.01 * 28 = 2.28，不是 {number(after):g}")),
    ]


@exercise("13.3", hint=("A shape with -1 in it is incomplete: who needs the full shape first?",
                        "含 -1 的形状是不完整的：谁最先需要完整的形状？"),
          choices={"where": {"a": ("at initialize(): the weight must be created whole", "在 initialize() 时：权重必须被完整创建"),
                             "b": ("at the first forward pass", "在第一次前向传播时"),
                             "c": ("when the layer is constructed", "在构造该层时")}})
def _(error, where):
    return [
        point(_error_name(error) == "ValueError", ("a ValueError", "一个 ValueError"),
              (f"it raises ValueError, not {_error_name(error)}", f"抛出的是 ValueError，不是 {_error_name(error)}")),
        choice(where, "a", ("it fails at initialize()", "它在 initialize() 时失败"),
               ("the error comes before any data is seen", "错误在看到任何数据之前就发生了")),
    ]


@exercise("13.4", hint=("infer_shape succeeds; the shapes meet in np.dot.",
                        "infer_shape 成功了；形状在 np.dot 中相遇。"))
def _(error, weight_shape):
    return [
        point(_error_name(error) == "OpError", ("an OpError from the dot op", "来自 dot 算子的 OpError"),
              (f"the forward's np.dot raises mx.ops.OpError, not {_error_name(error)}",
               f"forward 中的 np.dot 抛出 mx.ops.OpError，不是 {_error_name(error)}")),
        point(_shape(weight_shape) == (6, 3), ("the weight got the wrong shape (6, 3)", "权重得到了错误的形状 (6, 3)"),
              (f"infer_shape made the weight (5 + 1, 3) = (6, 3), not {_shape(weight_shape)}",
               f"infer_shape 把权重设成 (5 + 1, 3) = (6, 3)，不是 {_shape(weight_shape)}")),
    ]


# ---------------------------------------------------------------- 14 LeNet
@exercise("14.1", hint=("padding=1 keeps a 3x3 convolution's size; only the pools halve it.",
                        "padding=1 让 3x3 卷积保持大小不变；只有池化层把它减半。"))
def _(pool2_shape, dense1_weight):
    return [
        point(_shape(pool2_shape)[1:] == (16, 7, 7), ("28 -> 28 -> 14 -> 14 -> 7", "28 -> 28 -> 14 -> 14 -> 7"),
              (f"after the second pool the maps are (16, 7, 7), got {_shape(pool2_shape)[1:]}",
               f"第二个池化层之后特征图为 (16, 7, 7)，得到的是 {_shape(pool2_shape)[1:]}")),
        point(_shape(dense1_weight) == (120, 784), ("dense1 weight (120, 16 x 7 x 7)", "dense1 权重 (120, 16 x 7 x 7)"),
              (f"dense1 sees 16 * 7 * 7 = 784 inputs: (120, 784), not {_shape(dense1_weight)}",
               f"dense1 的输入为 16 * 7 * 7 = 784：(120, 784)，不是 {_shape(dense1_weight)}")),
    ]


@exercise("14.2", hint=("The parameter table: which layer's weight is (120, 400)?",
                        "看参数表：哪一层的权重是 (120, 400)？"))
def _(layer, full, smaller):
    return [
        point(str(layer) == "dense1", ("dense1 holds most of them", "dense1 占了大部分"),
              (f"the layer with the (120, 400) weight is dense1, not {layer!r}", f"权重为 (120, 400) 的层是 dense1，不是 {layer!r}")),
        point(int(smaller) < int(full), (f"{int(full):,} -> {int(smaller):,} parameters", f"{int(full):,} -> {int(smaller):,} 个参数"),
              ("your variant should have fewer parameters than LeNet", "你的变体的参数应比 LeNet 少")),
    ]


@exercise("14.3", hint=("Does taking a maximum or a mean need weights?", "取最大值或平均值需要权重吗？"))
def _(max_count, avg_count):
    return [point(int(max_count) == int(avg_count), ("the same count: pooling has no parameters", "数量相同：池化层没有参数"),
                  (f"{max_count} vs {avg_count}: pooling layers have no parameters", f"{max_count} 对 {avg_count}：池化层没有参数"))]


@exercise("14.4", hint=("hybridize() can trace a HybridBlock made of HybridBlocks.",
                        "hybridize() 能追踪由 HybridBlock 组成的 HybridBlock。"),
          choices={"compiles": {"a": ("the HybridSequential: the whole chain is one graph", "HybridSequential：整条链是一张图"),
                                "b": ("the custom LeNet: it is a Block", "自定义的 LeNet：它是一个 Block"),
                                "c": ("both, as one graph each", "两者都可以，各成一张图")}})
def _(net, compiles):
    from straightdope import gluon
    return [
        point(isinstance(net, gluon.nn.HybridSequential) and getattr(net, "_cached_op", None) is not None,
              ("your HybridSequential LeNet runs one compiled graph", "你的 HybridSequential LeNet 运行一张编译后的图"),
              ("`net` should be the HybridSequential LeNet, hybridized and called once",
               "`net` 应为 HybridSequential 版的 LeNet，已混合化并调用过一次")),
        choice(compiles, "a", ("a Block's forward is Python that cannot be traced", "Block 的 forward 是无法追踪的 Python 代码"),
               ("which of the two is a HybridBlock?", "两者中哪个是 HybridBlock？")),
    ]


# ---------------------------------------------------------------- 15 model zoo
@exercise("15.1", hint=("infer_shape gives every parameter's shape without allocating it.",
                        "infer_shape 不分配内存就给出每个参数的形状。"))
def _(counts, largest_stage):
    c = {k: int(v) for k, v in dict(counts).items()}
    ok = set(c) == {"resnet18_v1", "resnet34_v1", "resnet50_v1"}
    return [
        point(ok and c["resnet18_v1"] < c["resnet34_v1"] < c["resnet50_v1"],
              ("18 < 34 < 50 in parameters", "参数量 18 < 34 < 50"),
              (f"`counts` should map the three names to their counts, growing with depth; got {c}",
               f"`counts` 应把三个名字映射到参数量，且随深度增加；得到的是 {c}")),
        point(str(largest_stage) == "stage4", ("stage4 (2048 channels) holds the most", "stage4（2048 个通道）最多"),
              (f"the last stage holds over half, not {largest_stage!r}", f"最后一个阶段占一半以上，不是 {largest_stage!r}")),
    ]


@exercise("15.2", hint=("x + residual needs two arrays of one shape.", "x + residual 需要两个形状相同的数组。"),
          choices={"why": {"a": ("the shortcut must match the output's channels and size", "捷径必须匹配输出的通道数和大小"),
                           "b": ("it adds a nonlinearity", "它增加了非线性"),
                           "c": ("it saves memory", "它节省内存")}})
def _(out_shape, why):
    return [
        point(_shape(out_shape) == (1, 256, 4, 4), ("(1, 64, 8, 8) -> (1, 256, 4, 4)", "(1, 64, 8, 8) -> (1, 256, 4, 4)"),
              (f"256 channels, stride 2 halves 8 to 4: (1, 256, 4, 4), not {_shape(out_shape)}",
               f"256 个通道，步幅 2 把 8 减半为 4：(1, 256, 4, 4)，不是 {_shape(out_shape)}")),
        choice(why, "a", ("downsample makes the shapes match", "downsample 使形状匹配"),
               ("what would x + residual do with different shapes?", "形状不同时 x + residual 会怎样？")),
    ]


@exercise("15.3", hint=("Large convolutions take the same NumPy time in both modes.",
                        "大的卷积在两种模式下耗费相同的 NumPy 时间。"),
          choices={"why": {"a": ("the convolutions' arithmetic dominates; only per-op overhead is saved",
                                 "卷积的计算占主导；只省下了每个算子的开销"),
                           "b": ("the NumPy executor compiles the graph", "NumPy 执行器会编译计算图"),
                           "c": ("hybridizing always makes ResNet much faster", "混合化总能让 ResNet 快很多")}})
def _(imperative, hybridized, faster, why):
    imp, hyb = number(imperative), number(hybridized)
    measured = "hybridized" if hyb < imp else "imperative"
    return [
        point(imp > 0 and hyb > 0 and str(faster) == measured,
              (f"by your timings the {measured} run was faster ({imp / hyb:.2f}x)",
               f"按你的计时，{'混合化' if measured == 'hybridized' else '命令式'}更快（{imp / hyb:.2f}x）"),
              (f"your own timings say '{measured}' ({imp:.3f} s vs {hyb:.3f} s)",
               f"你自己的计时表明是 '{measured}'（{imp:.3f} s 对 {hyb:.3f} s）")),
        choice(why, "a", ("the arithmetic is the same in both modes", "两种模式的计算量相同"),
               ("where does ResNet-18 spend its time?", "ResNet-18 把时间花在哪里？")),
    ]


@exercise("15.4", hint=("One channel: the first convolution takes in_channels from the first batch.",
                        "一个通道：第一个卷积从第一个批量得到 in_channels。"))
def _(input_shape, first_weight):
    return [
        point(_shape(input_shape)[1:] == (1, 28, 28), ("(batch, 1, 28, 28)", "(批量, 1, 28, 28)"),
              (f"the images have one channel: (batch, 1, 28, 28), not {_shape(input_shape)}",
               f"图像只有一个通道：(批量, 1, 28, 28)，不是 {_shape(input_shape)}")),
        point(_shape(first_weight) == (64, 1, 3, 3), ("first weight (64, 1, 3, 3)", "第一个权重 (64, 1, 3, 3)"),
              (f"the first convolution's weight is (64, 1, 3, 3), not {_shape(first_weight)}",
               f"第一个卷积的权重是 (64, 1, 3, 3)，不是 {_shape(first_weight)}")),
    ]


# ---------------------------------------------------------------- 16 save and load
@exercise("16.1", hint=("A parameter's key is its attribute path: hidden.0.weight, ...",
                        "参数的键是它的属性路径：hidden.0.weight, ……"))
def _(error, expected):
    keys = list(expected)
    return [
        point(_error_name(error) == "ValueError", ("loading raises ValueError", "加载时抛出 ValueError"),
              (f"load_parameters raises ValueError, not {_error_name(error)}", f"load_parameters 抛出的是 ValueError，不是 {_error_name(error)}")),
        point({"h1.weight", "h1.bias", "h2.weight", "h2.bias"} <= set(keys) and not any(k.startswith("hidden") for k in keys),
              ("the new net expects h1.*, h2.* keys", "新网络期望 h1.*、h2.* 这些键"),
              (f"`expected` should be the new network's keys (h1.weight, ...), got {keys}",
               f"`expected` 应为新网络的键（h1.weight 等），得到的是 {keys}")),
    ]


@exercise("16.2", hint=("Compare the parameters of the trained and the loaded layer.",
                        "比较训练过的层与加载的层的参数。"))
def _(trained, loaded, diff):
    a = [_np(p.data()) for p in trained.collect_params().values()]
    b = [_np(p.data()) for p in loaded.collect_params().values()]
    same = len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y, atol=1e-6) for x, y in zip(a, b))
    return [
        point(same and trained is not loaded, ("the loaded layer holds the trained values", "加载的层保存着训练后的值"),
              ("`loaded` should be a fresh layer that loaded the trained layer's file", "`loaded` 应为加载了训练后文件的新层")),
        point(number(diff) < 1e-5, ("one more step keeps them together", "再走一步后两者仍然一致"),
              (f"after one more step each, outputs differ by {number(diff):.2e}", f"各走一步之后输出相差 {number(diff):.2e}")),
    ]


@exercise("16.3", hint=("Every node of the JSON has an op; parameters are 'null' nodes with attributes.",
                        "JSON 中每个节点都有 op；参数是带属性的 'null' 节点。"))
def _(ops, shape_key):
    found = set(ops)
    return [
        point(found == {"FullyConnected", "Activation"}, ("FullyConnected and Activation nodes", "FullyConnected 与 Activation 节点"),
              (f"the ops of the MLP's graph (besides 'null') are FullyConnected and Activation, got {sorted(found)}",
               f"该 MLP 图中的算子（'null' 之外）是 FullyConnected 和 Activation，得到的是 {sorted(found)}")),
        point(str(shape_key) == "__shape__", ("shapes are the __shape__ attribute", "形状记录在 __shape__ 属性中"),
              ("look at the attrs of a parameter's 'null' node", "看看参数的 'null' 节点的 attrs")),
    ]


@exercise("16.4", hint=("Which parameters did load_parameters set already?", "load_parameters 已经设置了哪些参数？"),
          choices={"why": {"a": ("initialize() fills only what the file lacked and keeps the loaded values",
                                 "initialize() 只填补文件中缺少的参数，保留加载的值"),
                           "b": ("initialize() re-draws every parameter", "initialize() 重新抽取所有参数"),
                           "c": ("the warning means the file was damaged", "警告说明文件损坏了")}})
def _(n_warnings, why):
    return [
        point(int(n_warnings) >= 1, ("it warns for the loaded parameters", "它对已加载的参数发出警告"),
              ("catch the warnings of bigger.initialize(): one per loaded parameter", "捕获 bigger.initialize() 的警告：每个已加载的参数一条")),
        choice(why, "a", ("loaded values are kept", "加载的值被保留"), ("were the loaded values overwritten?", "加载的值被覆盖了吗？")),
    ]


# ---------------------------------------------------------------- 17 summary and plot
@exercise("17.1", hint=("Dropout multiplies by a random mask: does that need weights?",
                        "Dropout 乘以一个随机掩码：这需要权重吗？"))
def _(dropout_params, total):
    return [
        point(int(dropout_params) == 0, ("Dropout has no parameters", "Dropout 没有参数"),
              (f"Dropout has 0 parameters, not {dropout_params}", f"Dropout 有 0 个参数，不是 {dropout_params}")),
        point(int(total) == 40, ("40 = 4 x 8 weights + 8 biases", "40 = 4 x 8 个权重 + 8 个偏置"),
              (f"Dense(8) on 4 features has 4 * 8 + 8 = 40 parameters, not {total}",
               f"4 个特征上的 Dense(8) 有 4 * 8 + 8 = 40 个参数，不是 {total}")),
    ]


@exercise("17.2", hint=("Compare the edge labels for batch 1 and batch 32.", "比较批量 1 与批量 32 的边标签。"),
          choices={"why": {"a": ("the batch size is the same on every edge and the graph works for any batch",
                                 "批量大小在每条边上都相同，且计算图适用于任何批量"),
                           "b": ("plot_network cannot infer the batch size", "plot_network 无法推断批量大小"),
                           "c": ("the batch size is stored in the weights", "批量大小存储在权重中")}})
def _(labels_32, why):
    labels = [str(x) for x in labels_32]
    return [
        point(labels and not any("32" in x.split("x") for x in labels), ("no batch axis on the edges", "边上没有批量轴"),
              (f"`labels_32` should be the edge labels for batch 32, without the batch: got {labels}",
               f"`labels_32` 应为批量 32 时的边标签，不含批量：得到的是 {labels}")),
        choice(why, "a", ("the first axis would add nothing", "第一个轴不会提供任何信息"), ("does any weight depend on the batch?", "有哪个权重依赖于批量吗？")),
    ]


@exercise("17.3", hint=("Look at the Param # column of the summary.", "看 summary 的 Param # 列。"))
def _(layer, weight_shape):
    return [
        point(str(layer) == "dense1", ("dense1", "dense1"), (f"the largest layer is dense1, not {layer!r}", f"最大的层是 dense1，不是 {layer!r}")),
        point(_shape(weight_shape) == (120, 400), ("its weight (120, 400)", "它的权重 (120, 400)"),
              (f"dense1's weight connects 400 features to 120 units: (120, 400), not {_shape(weight_shape)}",
               f"dense1 的权重把 400 个特征连到 120 个单元：(120, 400)，不是 {_shape(weight_shape)}")),
    ]


@exercise("17.4", hint=("A Symbol has no values; what does .item() need?", "Symbol 没有值；.item() 需要什么？"),
          choices={"why": {"a": ("a Symbol has no values, and .item() needs a number", "Symbol 没有值，而 .item() 需要一个数"),
                           "b": ("Blocks cannot be drawn at all", "Block 根本无法绘制"),
                           "c": ("sum() is not defined for Symbols", "Symbol 没有定义 sum()")}})
def _(error, why):
    return [
        point(_error_name(error) == "NotImplementedForSymbol", ("NotImplementedForSymbol", "NotImplementedForSymbol"),
              (f"calling it on a Symbol raises NotImplementedForSymbol, not {_error_name(error)}",
               f"在 Symbol 上调用会抛出 NotImplementedForSymbol，不是 {_error_name(error)}")),
        choice(why, "a", ("control flow on values needs values", "依赖值的控制流需要值"), ("what does x.sum() return for a Symbol?", "对 Symbol 来说 x.sum() 返回什么？")),
    ]


# ---------------------------------------------------------------- 18 builder's guide
@exercise("18.1", hint=("A value used twice gets the sum of the gradients through each use.",
                        "被使用两次的值得到两次使用的梯度之和。"))
def _(summed, tied):
    s, t_ = _np(summed), _np(tied)
    return [point(s.shape == t_.shape and np.abs(t_).max() > 0 and np.allclose(s, t_, atol=1e-5),
                  ("the two unshared gradients add up to the tied one", "两个未共享的梯度之和等于共享的梯度"),
                  ("`summed` (first + second weight gradients) should equal shared.weight.grad()",
                   "`summed`（两个权重梯度之和）应等于 shared.weight.grad()"))]


@exercise("18.2", hint=("_init_weight(self, name, arr) fills arr in place: arr[:] = ...",
                        "_init_weight(self, name, arr) 原地填充 arr：arr[:] = ……"))
def _(initializer):
    from straightdope import nd
    from straightdope.gluon import nn
    square = nn.Dense(8, in_units=8)
    square.initialize(initializer() if isinstance(initializer, type) else initializer)
    v = nd.random.normal(shape=(3, 8))
    return [point(np.allclose(_np(square(v)), _np(v), atol=1e-6),
                  ("Dense(8, in_units=8) passes its input through", "Dense(8, in_units=8) 原样输出输入"),
                  ("with your initializer Dense(8, in_units=8) does not return its input",
                   "使用你的初始化器时 Dense(8, in_units=8) 没有原样返回输入"))]


@exercise("18.3", hint=("x = x + 1 makes a new array (and a new node); x += 1 writes into the caller's.",
                        "x = x + 1 创建新数组（和新节点）；x += 1 会写入调用者的数组。"))
def _(block_class):
    from straightdope import nd
    outs, inputs = [], []
    for hybridize in (False, True):
        block = block_class()
        block.initialize()
        if hybridize:
            block.hybridize()
        data = nd.ones((3,))
        outs.append(_np(block(data)))
        inputs.append(_np(data))
    return [
        point(np.allclose(outs[0], outs[1]), ("both modes give the same output", "两种模式输出相同"),
              (f"outputs differ: imperative {outs[0]}, hybridized {outs[1]}", f"输出不同：命令式 {outs[0]}，混合化 {outs[1]}")),
        point(all(np.allclose(i, 1) for i in inputs), ("the input is left as it was", "输入保持不变"),
              (f"the input changed: {inputs}", f"输入被改变了：{inputs}")),
    ]


# ======================================================== Part 4: deploying and beyond
# ---------------------------------------------------------------- 24 export and import
@exercise("24.1", hint=("List the keys of the .params file (np.load) that start with aux:.",
                        "列出 .params 文件（np.load）中以 aux: 开头的键。"),
          choices={"why": {"a": ("they follow a moving average of batch statistics, not gradients, yet belong to the model",
                                 "它们随批量统计量的滑动平均更新，而不是梯度，但属于模型的一部分"),
                           "b": ("they are gradients saved for later", "它们是为以后保存的梯度"),
                           "c": ("they are copies of the weights", "它们是权重的副本")}})
def _(aux_keys, why):
    keys = [str(k) for k in aux_keys]
    return [
        point(len(keys) == 2 and all(k.startswith("aux:") for k in keys)
              and any("running_mean" in k for k in keys) and any("running_var" in k for k in keys),
              ("aux: running_mean and running_var", "aux:running_mean 与 running_var"),
              (f"`aux_keys` should be the 2 keys starting with aux: (running mean and variance), got {keys}",
               f"`aux_keys` 应为以 aux: 开头的 2 个键（滑动均值与方差），得到的是 {keys}")),
        choice(why, "a", ("auxiliary states: saved, never trained by gradients", "辅助状态：会被保存，但不通过梯度训练"),
               ("does a gradient ever reach them?", "梯度会到达它们吗？")),
    ]


@exercise("24.2", hint=("Read the OpError: which shapes does the last FullyConnected want?",
                        "读 OpError：最后一个 FullyConnected 需要什么形状？"))
def _(error, weight_shape, bias_shape):
    return [
        point(_error_name(error) == "OpError", ("the first call raises an OpError", "第一次调用抛出 OpError"),
              (f"the call fails with mx.ops.OpError, not {_error_name(error)}", f"调用失败时抛出的是 mx.ops.OpError，不是 {_error_name(error)}")),
        point(_shape(weight_shape) == (3, 128) and _shape(bias_shape) == (3,),
              ("a (3, 128) weight and a (3,) bias", "(3, 128) 的权重和 (3,) 的偏置"),
              ("a third output unit needs its own row of weights and its own bias", "第三个输出单元需要自己的一行权重和自己的偏置")),
    ]


@exercise("24.3", hint=("Without a parameter file the graph has no values; initialize() draws new ones.",
                        "没有参数文件时计算图没有值；initialize() 会抽取新值。"),
          choices={"why": {"a": ("to train the architecture from scratch with only its JSON file",
                                 "只凭 JSON 文件就能从头训练这个架构"),
                           "b": ("to get the trained outputs faster", "更快地得到训练好的输出"),
                           "c": ("to check the parameter file", "检查参数文件")}})
def _(error, same, why):
    return [
        point(_error_name(error) == "RuntimeError", ("it asks for initialize()", "它要求调用 initialize()"),
              (f"calling it before initialize() raises RuntimeError, not {_error_name(error)}",
               f"在 initialize() 之前调用会抛出 RuntimeError，不是 {_error_name(error)}")),
        point(same is False, ("fresh random weights: other outputs", "新的随机权重：输出不同"),
              ("after initialize() the outputs differ from the trained model's", "initialize() 之后输出与训练好的模型不同")),
        choice(why, "a", ("an architecture without its Python class", "没有 Python 类的架构"), ("what does the JSON alone give you?", "只有 JSON 能给你什么？")),
    ]


@exercise("24.4", hint=("Export after each epoch with epoch=N; load each file and compare outputs.",
                        "每轮之后用 epoch=N 导出；加载每个文件并比较输出。"))
def _(y1, y2, y3):
    a, b, c = _np(y1), _np(y2), _np(y3)
    return [point(a.shape == b.shape == c.shape and not np.allclose(b, a) and not np.allclose(b, c),
                  ("epoch 2 differs from epochs 1 and 3", "第 2 轮与第 1、3 轮都不同"),
                  ("`y2` should be the outputs of the epoch-2 file, differing from `y1` and `y3`",
                   "`y2` 应为第 2 轮文件的输出，并与 `y1`、`y3` 不同"))]


# ---------------------------------------------------------------- 25 pitfalls
@exercise("25.1", hint=("F.where(x < -1, -1, x) picks elementwise: a graph op, no Python branch.",
                        "F.where(x < -1, -1, x) 逐元素选择：是图算子，没有 Python 分支。"))
def _(block_class, loop_fails):
    from straightdope import nd
    xc = nd.array([[-3.0, -0.5, 0.5, 3.0]])
    imperative = _np(block_class()(xc))
    net = block_class()
    net.hybridize()
    hybrid = _np(net(xc))
    return [
        point(np.allclose(hybrid, [[-1.0, -0.5, 0.5, 3.0]]) and np.allclose(imperative, hybrid),
              ("hybridized, it clips only below -1", "混合化后只截断小于 -1 的值"),
              (f"on [-3, -0.5, 0.5, 3] the block should give [-1, -0.5, 0.5, 3] in both modes, got {hybrid.ravel()}",
               f"在 [-3, -0.5, 0.5, 3] 上该块两种模式都应得到 [-1, -0.5, 0.5, 3]，得到的是 {hybrid.ravel()}")),
        point(loop_fails is True, ("the Python-if version fails when hybridized", "使用 Python if 的版本在混合化后失败"),
              ("a Symbol has no elements to loop over: the loop version fails under hybridize()",
               "Symbol 没有可遍历的元素：循环版本在 hybridize() 下失败")),
    ]


@exercise("25.2", hint=("An input of the graph gets its value on every call.", "计算图的输入在每次调用时获得新值。"))
def _(values, trace_count):
    v = [number(x) for x in values]
    return [
        point(len(v) >= 2 and len(set(v)) == len(v), ("a new number on every call", "每次调用都加上新的数"),
              (f"`values` should be the outputs of several calls, all different: got {v}", f"`values` 应为多次调用的输出，且互不相同：得到的是 {v}")),
        point(int(trace_count) == 1, ("traced once", "只追踪一次"),
              (f"same shapes every call, so one trace, not {trace_count}", f"每次调用形状相同，所以只追踪一次，不是 {trace_count}")),
    ]


@exercise("25.3", hint=("F.where computes both arrays before it picks.", "F.where 在选择之前会计算两个数组。"),
          choices={"cost": {"a": ("the head runs on every call, even when its output is thrown away",
                                  "每次调用都会运行 head，即使它的输出被丢弃"),
                            "b": ("nothing: F.where skips the head", "没有代价：F.where 会跳过 head"),
                            "c": ("the network traces on every call", "网络每次调用都要追踪")}})
def _(net, cost):
    from straightdope import nd
    zeros_out = float(np.abs(_np(net(nd.zeros((8, 20))))).sum())
    some_out = float(np.abs(_np(net(nd.random.normal(shape=(8, 20))))).sum())
    return [
        point(zeros_out == 0 and some_out > 0 and net._cached_op is not None,
              ("hybridized: zeros for an all-zero input, the head's output otherwise",
               "混合化后：全零输入得到零，否则得到 head 的输出"),
              ("`net` should be your hybridized EarlyExit with F.where (called once)",
               "`net` 应为使用 F.where、已混合化（调用过一次）的 EarlyExit")),
        choice(cost, "a", ("F.where pays for both branches", "F.where 要为两个分支付出代价"), ("is the head skipped?", "head 被跳过了吗？")),
    ]


@exercise("25.4", hint=("static_alloc saves a fixed cost per call; compare it with the call's time.",
                        "static_alloc 每次调用节省固定的开销；把它与调用时间比较。"),
          choices={"why": {"a": ("it saves a fixed per-call cost, a tiny share of a batch-256 call",
                                 "它节省的是每次调用的固定开销，只占批量 256 调用的很小一部分"),
                           "b": ("static_alloc is switched off for large batches", "批量大时 static_alloc 被关闭"),
                           "c": ("large batches need no memory", "大批量不需要内存")}})
def _(plain_1, static_1, plain_256, static_256, matters, why):
    share_1 = (number(plain_1) - number(static_1)) / number(plain_1)
    share_256 = (number(plain_256) - number(static_256)) / number(plain_256)
    return [
        observed(share_256 < max(share_1, 0) + 0.1,
              (f"the saving's share of a call: {share_1:.1%} at batch 1, {share_256:.1%} at batch 256",
               f"节省占一次调用的比例：批量 1 时 {share_1:.1%}，批量 256 时 {share_256:.1%}"),
              (f"at batch 256 the saving is {share_256:.1%} of a call, more than at batch 1 ({share_1:.1%}): time again with more calls",
               f"批量 256 时节省占 {share_256:.1%}，比批量 1 时（{share_1:.1%}）还多：请多调用几次再计时")),
        point(str(matters) == "less", ("it matters less", "影响更小"), ("compare the saved share at both batch sizes", "比较两种批量下节省的比例")),
        choice(why, "a", ("a fixed saving drowns in the matrix products", "固定的节省淹没在矩阵乘法中"), ("what does static_alloc save?", "static_alloc 节省了什么？")),
    ]


# ---------------------------------------------------------------- 26 deploying
@exercise("26.1", hint=("A file exported with a fixed shape declares the batch size exactly.",
                        "以固定形状导出的文件精确地声明了批量大小。"),
          choices={"why": {"a": ("a deployed model sees many batch sizes, so the batch dim should be symbolic",
                                 "部署的模型会遇到各种批量大小，所以批量维度应是符号化的"),
                           "b": ("dynamic=True makes the model more accurate", "dynamic=True 让模型更准确"),
                           "c": ("fixed shapes cannot be exported", "固定形状无法导出")}})
def _(refused, why):
    return [
        point(refused is True, ("ONNX Runtime refuses a batch of 2", "ONNX Runtime 拒绝批量为 2 的输入"),
              ("the fixed file expects batch 1: a batch of 2 is refused", "固定形状的文件期望批量为 1：批量 2 会被拒绝")),
        choice(why, "a", ("a symbolic batch dimension fits every batch", "符号化的批量维度适合任何批量"), ("how many images does a deployed model get at once?", "部署的模型一次会收到多少张图像？")),
    ]


@exercise("26.2", hint=("Count node.op_type over model.graph.node; Gemm multiplies 2-D matrices.",
                        "统计 model.graph.node 中的 node.op_type；Gemm 只做二维矩阵乘法。"),
          choices={"why": {"a": ("Gemm takes 2-D input; FullyConnected first flattens all dims after the batch",
                                 "Gemm 只接受二维输入；FullyConnected 先把批量之后的所有维度展平"),
                           "b": ("Flatten speeds up Gemm", "Flatten 让 Gemm 更快"),
                           "c": ("every Dense layer needs one", "每个 Dense 层都需要一个")}})
def _(counts, why):
    c = dict(counts)
    return [
        point(c.get("Conv") == 2 and c.get("MaxPool") == 2 and c.get("Gemm") == 3,
              ("2 Conv, 2 MaxPool, 3 Gemm", "2 个 Conv、2 个 MaxPool、3 个 Gemm"),
              (f"`counts` should count the op types of the ONNX graph: got {c}", f"`counts` 应统计 ONNX 图中的算子类型：得到的是 {c}")),
        point(c.get("Flatten") == 1, ("one Flatten, before the first Gemm", "一个 Flatten，在第一个 Gemm 之前"),
              (f"only the first Dense gets 4-D data: 1 Flatten, not {c.get('Flatten')}", f"只有第一个 Dense 收到四维数据：1 个 Flatten，不是 {c.get('Flatten')}")),
        choice(why, "a", ("Flatten makes the 2-D matrix Gemm needs", "Flatten 生成 Gemm 所需的二维矩阵"), ("what shape does Gemm accept?", "Gemm 接受什么形状？")),
    ]


@exercise("26.3", hint=("Compare medians of several runs of each.", "比较两者多次运行的中位数。"))
def _(ours_s, ort_s, faster):
    ours, ort_ = number(ours_s), number(ort_s)
    measured = "onnxruntime" if ort_ < ours else "ours"
    return [point(ours > 0 and ort_ > 0 and str(faster) == measured,
                  (f"by your timings '{measured}' is faster ({max(ours, ort_) / min(ours, ort_):.2f}x)",
                   f"按你的计时 '{measured}' 更快（{max(ours, ort_) / min(ours, ort_):.2f}x）"),
                  (f"your own medians say '{measured}' ({ours * 1e3:.2f} ms vs {ort_ * 1e3:.2f} ms)",
                   f"你自己的中位数表明是 '{measured}'（{ours * 1e3:.2f} ms 对 {ort_ * 1e3:.2f} ms）"))]


# ---------------------------------------------------------------- 27 async
@exercise("27.1", hint=("Without waiting the clock stops after queueing; the work still has to be done.",
                        "不等待时，时钟在排队之后就停了；但工作仍需完成。"))
def _(timed):
    t = {int(n): (number(a), number(b)) for n, (a, b) in dict(timed).items()}
    ok = {10, 160} <= set(t)
    return [
        point(ok and t[160][1] > t[160][0], ("waiting measures more than queueing", "等待测得的时间多于排队时间"),
              ("`timed` maps n to (without waiting, with waiting); with waiting should be longer",
               "`timed` 把 n 映射到 (不等待, 等待)；等待的应更长")),
        point(ok and t[160][1] - t[160][0] > t[10][1] - t[10][0],
              ("the error grows with n", "误差随 n 增大"),
              ("the missing time (with - without) should grow with n", "缺失的时间（等待 - 不等待）应随 n 增大")),
    ]


@exercise("27.2", hint=("Each job has its own handle; who reads the failed one?", "每个任务都有自己的句柄；谁会读取失败的那个？"),
          choices={"when": {"a": ("only when the failed array is read (or at waitall())", "只有读取失败的数组时（或在 waitall() 时）"),
                            "b": ("immediately, when the job is pushed", "立即，在任务被推入时"),
                            "c": ("never", "永远不会")}})
def _(raised, when):
    return [
        point(raised is False, ("reading the last good result raises nothing", "读取最后一个正确结果不会抛出异常"),
              ("the error stays in the failed job's handle", "错误保存在失败任务的句柄中")),
        choice(when, "a", ("the traceback points where you waited", "回溯指向你等待的地方"), ("which line reads the failed job?", "哪一行读取了失败的任务？")),
    ]


@exercise("27.3", hint=("What does each tool trace with: placeholders, or values that carry a shape?",
                        "每个工具用什么来追踪：占位符，还是带形状的值？"),
          choices={"mxnet1": {"a": ("Symbols: placeholders without shape or values", "Symbol：没有形状也没有值的占位符"),
                              "b": ("real arrays under deferred compute", "延迟计算下的真实数组"),
                              "c": ("fake tensors with guards", "带守卫的假张量")},
                   "decides": {"a": ("whether the tracing value carries a shape", "追踪用的值是否带有形状"),
                               "b": ("whether the graph is compiled", "计算图是否被编译"),
                               "c": ("the batch size", "批量大小")}})
def _(mxnet1, decides):
    return [
        choice(mxnet1, "a", ("MXNet 1.x traces with Symbols", "MXNet 1.x 用 Symbol 追踪"), ("what is F when hybrid_forward is traced?", "追踪 hybrid_forward 时 F 是什么？")),
        choice(decides, "a", ("a shape on the tracing value makes x.shape work", "追踪值带有形状，x.shape 才能用"), ("compare MXNet 1.x with 2.0", "比较 MXNet 1.x 与 2.0")),
    ]


# ---------------------------------------------------------------- 30 training LeNet
@exercise("30.1", hint=("Compare the cumulative totals epoch by epoch.", "逐轮比较累计总时间。"),
          choices={"cold": {"a": ("every run in this kernel finds the compiled code: a cold compile needs a new process and an empty cache",
                                  "这个内核中的每次运行都能找到编译好的代码：冷编译需要新进程和空缓存"),
                            "b": ("cold compiles are too fast to measure", "冷编译快得无法测量"),
                            "c": ("the cold prediction is always right", "冷预测总是对的")}})
def _(total_imp, total_hyb, overtakes, cold):
    a, b = [number(x) for x in total_imp], [number(x) for x in total_hyb]
    first = next((e for e, (x, y) in enumerate(zip(a, b), 1) if y < x), 0)
    return [
        point(len(a) == len(b) > 0 and all(np.diff(a) > 0) and all(np.diff(b) > 0),
              ("cumulative totals, growing epoch by epoch", "累计总时间，逐轮增加"),
              ("`total_imp` and `total_hyb` are cumulative sums of epoch times", "`total_imp` 与 `total_hyb` 是每轮时间的累计和")),
        point(int(overtakes) == first, (f"the hybridized run is ahead from epoch {first}" if first else "not ahead within these epochs",
                                        f"混合化从第 {first} 轮起领先" if first else "这几轮内没有领先"),
              (f"your totals say epoch {first} (0: not within these epochs), not {overtakes}",
               f"你的总时间表明是第 {first} 轮（0 表示这几轮内没有），不是 {overtakes}")),
        choice(cold, "a", ("a cold compile happens once per cache", "每个缓存只发生一次冷编译"), ("where is the compiled code after the first run?", "第一次运行之后编译好的代码在哪里？")),
    ]


@exercise("30.2", hint=("Four times as many steps, each paying the fixed overhead.", "步数变为四倍，每步都要付固定开销。"),
          choices={"why": {"a": ("each step pays a fixed cost (Python, one dispatch per op) on top of its arithmetic; hybridizing removed most of it",
                                 "每一步在计算之外还要付固定开销（Python、每个算子一次分派）；混合化去掉了其中的大部分"),
                           "b": ("smaller batches need less arithmetic per epoch", "批量越小，每轮的计算量越少"),
                           "c": ("the hybridized network compiles again for every batch", "混合化网络每个批量都要重新编译")}})
def _(imp16, hyb16, imp64, hyb64, why):
    i16, h16, i64, h64 = (number(v) for v in (imp16, hyb16, imp64, hyb64))
    return [
        point(min(i16, h16, i64, h64) > 0, ("four epoch times", "四个每轮时间"),
              ("the four answers are seconds per epoch, positive numbers", "四个答案是每轮的秒数，应为正数")),
        observed(i16 > i64, (f"an imperative epoch gets slower: {i64:.2f} s -> {i16:.2f} s", f"命令式一轮变慢：{i64:.2f} s -> {i16:.2f} s"),
                 (f"here the imperative epoch did not get slower ({i64:.2f} s -> {i16:.2f} s): the arithmetic hid the overhead",
                  f"这里命令式一轮没有变慢（{i64:.2f} s -> {i16:.2f} s）：计算掩盖了开销")),
        observed(i16 / h16 > 0.8 * (i64 / h64), (f"the speed-up {i64 / h64:.2f}x -> {i16 / h16:.2f}x does not shrink",
                                                 f"加速比 {i64 / h64:.2f}x -> {i16 / h16:.2f}x 没有变小"),
                 (f"the speed-up fell from {i64 / h64:.2f}x to {i16 / h16:.2f}x: time more batches",
                  f"加速比从 {i64 / h64:.2f}x 降到 {i16 / h16:.2f}x：请多计时一些批量")),
        choice(why, "a", ("a fixed cost per step, paid four times as often", "每步的固定开销，付了四倍的次数"),
               ("what does a step cost besides its arithmetic?", "一步除了计算之外还花费什么？")),
    ]


@exercise("30.3", hint=("A new batch shape makes a new plan; is the code compiled again?", "新的批量形状生成新计划；代码会重新编译吗？"))
def _(new_plans, cache):
    return [
        point(int(new_plans) == 1, ("one new plan, for the last batch's shape", "为最后一个批量的形状生成一个新计划"),
              (f"one new shape, one new plan: not {new_plans}", f"一个新形状，一个新计划：不是 {new_plans}")),
        # "compiling": the plan ran on the reference tier while the tiered executor got its
        # code ready in the background (a busy machine); a fresh compilation reads "miss".
        point(str(cache) in ("memory", "disk", "compiling"),
              (f"no new compilation (cache: {cache})", f"没有新的编译（cache：{cache}）"),
              (f"the plan reuses the compiled code (cache 'memory'), not {cache!r}", f"该计划复用编译好的代码（cache 为 'memory'），不是 {cache!r}")),
    ]


@exercise("30.4", hint=("Train the classic variant as the chapter trains LeNet; print its fused graph.",
                        "像本章训练 LeNet 那样训练经典变体；打印它的融合图。"))
def _(test_acc, fused):
    acc = [number(a) for a in test_acc]
    return [
        point(acc and acc[-1] > 0.3, (f"it trains: test accuracy {acc[-1]:.3f}", f"它能训练：测试准确率 {acc[-1]:.3f}"),
              (f"the test accuracy {acc} stays near chance (0.1)", f"测试准确率 {acc} 接近随机猜测（0.1）")),
        point("+Activation" in str(fused), ("the activation (tanh) is fused with the bias addition",
                                            "激活函数（tanh）与偏置加法融合在一起"),
              ("`fused` should be str(classic.compiled['fused'])", "`fused` 应为 str(classic.compiled['fused'])")),
    ]


# ---------------------------------------------------------------- 31 recurrent networks
@exercise("31.1", hint=("The output concatenates both directions.", "输出拼接了两个方向。"))
def _(shape):
    return [point(_shape(shape) == (2, 8, 64), ("(2, 8, 64): 2 x 32 features", "(2, 8, 64)：2 x 32 个特征"),
                  (f"both directions of 32 units: (2, 8, 64), not {_shape(shape)}", f"两个方向各 32 个单元：(2, 8, 64)，不是 {_shape(shape)}"))]


@exercise("31.2", hint=("The body returns the running total as output and as new state.",
                        "循环体把累计和既作为输出也作为新状态返回。"))
def _(block_class):
    from straightdope import nd
    data = np.random.default_rng(0).random((6, 3)).astype("float32")
    net = block_class()
    imperative = _np(net(nd.array(data)))
    net.hybridize(executor="numpy")
    hybridized = _np(net(nd.array(data)))
    want = np.cumsum(data, axis=0)
    return [
        point(np.allclose(imperative, want, atol=1e-5), ("imperative: np.cumsum", "命令式：np.cumsum"),
              ("imperatively the block does not compute np.cumsum(x, axis=0)", "命令式下该块算出的不是 np.cumsum(x, axis=0)")),
        point(np.allclose(hybridized, want, atol=1e-5), ("hybridized: np.cumsum", "混合化：np.cumsum"),
              ("hybridized the block does not compute np.cumsum(x, axis=0)", "混合化后该块算出的不是 np.cumsum(x, axis=0)")),
    ]


@exercise("31.3", hint=("The scores are divided by the temperature before the softmax.", "得分在 softmax 之前除以温度。"),
          choices={"low": {"a": ("below 1 it sharpens the distribution: the likeliest characters repeat",
                                 "小于 1 时分布更尖锐：最可能的字符不断重复"),
                           "b": ("below 1 it flattens the distribution", "小于 1 时分布更平坦"),
                           "c": ("it only changes the speed of sampling", "它只改变采样速度")}})
def _(samples, low):
    s = {float(k): str(v) for k, v in dict(samples).items()}
    return [
        point({0.1, 2.0} <= set(s) and len(set(s[0.1])) <= len(set(s[2.0])),
              ("temperature 2 uses at least as many distinct characters as 0.1", "温度 2 用到的不同字符不少于温度 0.1"),
              ("`samples` maps temperatures 0.1, 1, 2 to generated text; the hotter one should vary more",
               "`samples` 把温度 0.1、1、2 映射到生成的文本；温度越高变化应越多")),
        choice(low, "a", ("a low temperature sharpens", "低温使分布更尖锐"), ("what does dividing scores by 0.1 do to the softmax?", "把得分除以 0.1 对 softmax 有什么影响？")),
    ]
