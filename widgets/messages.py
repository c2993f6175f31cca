"""The words the widgets show, in English and Chinese: one table for every widget.

    from widgets.messages import t, set_language
    t("trace.heading")                    # in the reader's language
    t("bench.axis_time", unit="ms")       # with str.format fields

The language is, in this order: the one given to `set_language()`, else
`straightdope.config.language()`: $STRAIGHTDOPE_LANG (the Chinese book build sets `zh`),
else `zh` when the kernel runs in book/zh/ (a Chinese chapter opened in JupyterLab), else
`en`. So a chapter's code cells are the same in both editions.

`use_fonts()` (matplotlib) and `graphviz_font()` name fonts that also have the Chinese glyphs
(Noto Sans CJK, Debian's fonts-noto-cjk, which `make sysdeps` installs).
"""
from __future__ import annotations

from straightdope import config

#: Fonts for the Chinese glyphs, in order of preference (matplotlib >= 3.6 and Graphviz
#: via fontconfig fall back along a list of families, glyph by glyph).
CJK_FONTS = ["Noto Sans CJK SC", "Noto Sans CJK JP", "WenQuanYi Micro Hei", "Source Han Sans SC"]

_chosen: str | None = None

MESSAGES: dict[str, dict[str, str]] = {
    # ---- TraceInspector
    "trace.heading": {"en": "What hybrid_forward prints, and when",
                      "zh": "hybrid_forward 打印了什么，在什么时候"},
    "trace.call_button": {"en": "Call once more", "zh": "再调用一次"},
    "trace.call_tooltip": {"en": "call the block again in the current mode",
                           "zh": "在当前模式下再调用一次这个块"},
    "trace.hybridize": {"en": "Hybridize", "zh": "混合化"},
    "trace.unhybridize": {"en": "Un-hybridize", "zh": "取消混合化"},
    "trace.reset": {"en": "Reset", "zh": "重置"},
    "trace.reset_tooltip": {"en": "un-hybridize, forget the calls, start over",
                            "zh": "取消混合化，清空调用记录，从头开始"},
    "trace.json_title": {"en": "The traced Symbol as JSON (what hybridize() recorded)",
                         "zh": "追踪得到的 Symbol 的 JSON（hybridize() 记录下的内容）"},
    "trace.imperative_title": {"en": "Imperative: net(x) runs the Python",
                               "zh": "命令式：net(x) 运行 Python 代码"},
    "trace.hybridized_title": {"en": "Hybridized: net.hybridize()",
                               "zh": "混合化：net.hybridize()"},
    "trace.ran_python": {"en": "Python ran, F = ndarray", "zh": "运行了 Python，F = ndarray"},
    "trace.trace_failed": {"en": "tracing failed: Python ran on Symbols, F = symbol",
                           "zh": "追踪失败：Python 在 Symbol 上运行，F = symbol"},
    "trace.traced": {"en": "traced: Python ran once, F = symbol",
                     "zh": "追踪：Python 只运行了一次，F = symbol"},
    "trace.cached": {"en": "cached graph ran, no Python",
                     "zh": "运行缓存的计算图，没有运行 Python"},
    "trace.call": {"en": "call {index}", "zh": "第 {index} 次调用"},
    "trace.tier": {"en": "tier: {tier}", "zh": "层级：{tier}"},
    "trace.tier_pending": {"en": ", the graph's own code is compiling in the background",
                           "zh": "，图自己的代码正在后台编译"},
    "trace.tier_switched": {"en": "switched from the {before} tier to the {after} tier",
                            "zh": "从 {before} 层级切换到 {after} 层级"},
    "trace.nothing_printed": {"en": "(nothing printed)", "zh": "（没有打印任何内容）"},
    "trace.returned": {"en": "returned {result}", "zh": "返回 {result}"},
    "trace.current_mode": {"en": " &larr; current mode", "zh": " &larr; 当前模式"},
    "trace.no_calls": {"en": "no calls in this mode yet", "zh": "这个模式下还没有调用"},
    "trace.earlier_call": {"en": "... {n} earlier call", "zh": "…… 之前的 {n} 次调用"},
    "trace.earlier_calls": {"en": "... {n} earlier calls", "zh": "…… 之前的 {n} 次调用"},
    "trace.counter": {"en": "<b>{calls}</b> calls ({imperative} imperative, {hybridized} "
                            "hybridized) &middot; <b>{traces}</b> trace{plural}",
                      "zh": "共 <b>{calls}</b> 次调用（命令式 {imperative} 次，混合化 "
                            "{hybridized} 次）&middot; 追踪 <b>{traces}</b> 次"},
    "trace.failed": {"en": "{n} failed", "zh": "{n} 次失败"},
    "trace.not_traced": {"en": "Not traced yet: hybridize() and call the block.",
                         "zh": "还没有追踪：先调用 hybridize()，再调用这个块。"},
    # ---- Timeline
    "timeline.heading": {"en": "Which thread ran what, and when",
                         "zh": "哪个线程在什么时候运行了什么"},
    "timeline.empty": {"en": "No events: run ops with mx.profiler.set_state('run') first.",
                       "zh": "没有事件：先用 mx.profiler.set_state('run') 开始记录，再运行算子。"},
    "timeline.front_end": {"en": "front end", "zh": "前端"},
    "timeline.bar_title": {"en": "{name} on {thread}: starts at {start:.3f} ms, "
                                 "takes {dur:.3f} ms",
                           "zh": "{name}，在 {thread} 上：{start:.3f} ms 开始，"
                                 "用时 {dur:.3f} ms"},
    "timeline.no_scope": {"en": "(no scope)", "zh": "（无作用域）"},
    "timeline.waiting": {"en": "front end waiting", "zh": "前端在等待"},
    "timeline.by_scope": {"en": "scope", "zh": "作用域"},
    "timeline.by_op": {"en": "op", "zh": "算子"},
    "timeline.colour": {"en": "colour by", "zh": "着色依据"},
    "timeline.span": {"en": "from first to last event", "zh": "从第一个到最后一个事件"},
    "timeline.thread_row": {"en": "{ops} ops, busy {busy:.2f} ms",
                            "zh": "{ops} 个算子，忙碌 {busy:.2f} ms"},
    "timeline.waited": {"en": "front end waited", "zh": "前端等待了"},
    "timeline.overlap": {"en": "two or more workers busy at once",
                         "zh": "两个及以上工作线程同时忙碌"},
    # ---- GraphView
    "graph.heading": {"en": "The graph hybridize() traced",
                      "zh": "hybridize() 追踪得到的计算图"},
    "graph.stage.traced": {"en": "traced", "zh": "追踪"},
    "graph.stage.shapes": {"en": "shapes inferred", "zh": "形状推断"},
    "graph.stage.fused": {"en": "fused", "zh": "算子融合"},
    "graph.stage.memory": {"en": "memory planned", "zh": "内存规划"},
    "graph.stage.source": {"en": "generated code", "zh": "生成的代码"},
    "graph.stage_tooltip": {"en": "show the '{stage}' stage", "zh": "显示“{stage}”阶段"},
    "graph.hide_params": {"en": "hide parameters", "zh": "隐藏参数"},
    "graph.node": {"en": "node", "zh": "节点"},
    "graph.open_body": {"en": "open its body", "zh": "打开循环体"},
    "graph.back": {"en": "back to the whole graph", "zh": "回到整张图"},
    "graph.body_title": {"en": "the body of '{name}': compiled once, run per step",
                         "zh": "“{name}”的循环体：编译一次，每步运行"},
    "graph.stage_title": {"en": "stage: {stage}", "zh": "阶段：{stage}"},
    "graph.cannot_draw": {"en": "Could not draw this stage: ", "zh": "无法绘制这个阶段："},
    "graph.pick_node": {"en": "Pick a node to see its details.",
                        "zh": "选择一个节点查看详细信息。"},
    "graph.generated_code": {"en": "generated code for it:", "zh": "为它生成的代码："},
    "graph.row.role": {"en": "role", "zh": "角色"},
    "graph.row.value": {"en": "value", "zh": "值"},
    "graph.row.in": {"en": "in", "zh": "输入"},
    "graph.row.out": {"en": "out", "zh": "输出"},
    "graph.row.parameters": {"en": "parameters", "zh": "参数个数"},
    "graph.row.step": {"en": "step", "zh": "步骤"},
    "graph.row.fused_group": {"en": "fused group", "zh": "融合组"},
    "graph.row.stored": {"en": "stored", "zh": "存放位置"},
    "graph.role.data": {"en": "input data", "zh": "输入数据"},
    "graph.role.param": {"en": "parameter", "zh": "参数"},
    "graph.role.aux": {"en": "auxiliary state", "zh": "辅助状态"},
    "graph.place.input": {"en": "the caller's array (an input)", "zh": "调用者的数组（输入）"},
    "graph.place.output": {"en": "a fresh array each call (an output: the caller may keep it)",
                           "zh": "每次调用新建的数组（输出：调用者可以保留它）"},
    "graph.place.register": {"en": "no memory: a local variable inside its fused loop",
                             "zh": "不占内存：融合循环中的局部变量"},
    "graph.place.arena": {"en": "arena buffer {buffer}", "zh": "内存池缓冲区 {buffer}"},
    "graph.place.reused": {"en": ", reused: also holds {others}",
                           "zh": "，被复用：还存放 {others}"},
    "graph.place.view": {"en": ", a view of {value}", "zh": "，是 {value} 的视图"},
    # ---- BenchmarkPlot
    "bench.heading": {"en": "Imperative vs hybridized: time per call",
                      "zh": "命令式与混合化：每次调用的耗时"},
    "bench.imperative": {"en": "imperative", "zh": "命令式"},
    "bench.hybridized": {"en": "hybridized", "zh": "混合化"},
    "bench.batch_size": {"en": "batch size", "zh": "批量大小"},
    "bench.width": {"en": "layer width", "zh": "层宽度"},
    "bench.config_width": {"en": "width", "zh": "宽度"},
    "bench.repeats": {"en": "calls per mode", "zh": "每种模式调用次数"},
    "bench.backward": {"en": "forward + backward", "zh": "前向 + 反向"},
    "bench.forward": {"en": "forward", "zh": "前向"},
    "bench.run": {"en": "Run", "zh": "运行"},
    "bench.stop": {"en": "Stop", "zh": "停止"},
    "bench.progress": {"en": "progress", "zh": "进度"},
    "bench.press_run": {"en": "Press Run (or call run()) to measure.",
                        "zh": "点击“运行”（或调用 run()）开始测量。"},
    "bench.axis_call": {"en": "call", "zh": "调用次序"},
    "bench.axis_time": {"en": "time per call ({unit})", "zh": "每次调用耗时（{unit}）"},
    "bench.axis_median": {"en": "median, 10-90% of calls ({unit})",
                          "zh": "中位数，10%-90% 的调用（{unit}）"},
    "bench.reference_tier": {"en": "hybridized, NumPy reference tier (compiling)",
                             "zh": "混合化，NumPy 参考层级（编译中）"},
    "bench.vm_tier": {"en": "hybridized, VM tier (compiling)",
                      "zh": "混合化，VM 层级（编译中）"},
    "bench.reference_tier_name": {"en": "NumPy reference tier", "zh": "NumPy 参考层级"},
    "bench.vm_tier_name": {"en": "VM tier (precompiled)", "zh": "VM 层级（预编译）"},
    "bench.switch": {"en": "switch to the compiled code", "zh": "切换到编译后的代码"},
    "bench.faster": {"en": "{x:.1f}x faster", "zh": "快 {x:.1f} 倍"},
    "bench.slower": {"en": "{x:.1f}x slower", "zh": "慢 {x:.1f} 倍"},
    "bench.speedup": {"en": "speedup <b>{x:.2f}x</b>", "zh": "加速比 <b>{x:.2f}x</b>"},
    "bench.first_call": {"en": "first hybridized call (trace + compile) <b>{time}</b>",
                         "zh": "第一次混合化调用（追踪 + 编译）<b>{time}</b>"},
    "bench.switched": {"en": "{before} until the compiled code was ready: "
                             "<b>switched at hybridized call {call}</b> (to the {tier} tier)",
                       "zh": "编译完成前运行{before}：<b>在第 {call} 次混合化调用时"
                             "切换</b>（到 {tier} 层级）"},
    "bench.still_early": {"en": "still on the {before}: the compiled code is being built",
                          "zh": "仍在{before}上：编译后的代码正在生成"},
    "bench.stopped": {"en": "stopped", "zh": "已停止"},
    "bench.band": {"en": "{mode}: median, 10-90% band", "zh": "{mode}：中位数，10%-90% 区间"},
    "bench.slow_call": {"en": "▲ {n} slow call off the scale (up to {time})",
                        "zh": "▲ {n} 次慢调用超出坐标范围（最长 {time}）"},
    "bench.slow_calls": {"en": "▲ {n} slow calls off the scale (up to {time})",
                         "zh": "▲ {n} 次慢调用超出坐标范围（最长 {time}）"},
    "bench.compile_title": {"en": "first hybridized call (trace + compile): {time}, "
                                  "kept out of the medians",
                            "zh": "第一次混合化调用（追踪 + 编译）：{time}，不计入中位数"},
    # ---- training (widgets/training.py)
    "train.loss": {"en": "loss", "zh": "损失"},
    "train.epoch": {"en": "epoch", "zh": "轮"},
    "train.train_loss": {"en": "train loss", "zh": "训练损失"},
    "train.train_metric": {"en": "train {metric}", "zh": "训练{metric}"},
    "train.test_metric": {"en": "test {metric}", "zh": "测试{metric}"},
    "train.accuracy": {"en": "accuracy", "zh": "准确率"},
    "train.epoch_line": {"en": "epoch {e}/{epochs}: loss {loss:.4f}, train acc {train:.3f}, "
                               "test acc {test:.3f}, {seconds:.2f} s",
                         "zh": "第 {e}/{epochs} 轮：损失 {loss:.4f}，训练准确率 {train:.3f}，"
                               "测试准确率 {test:.3f}，{seconds:.2f} 秒"},
    # ---- exercise checks (widgets/exercises.py)
    "ex.not_answered": {"en": "Exercise {ex}: not answered yet (set {names}).",
                        "zh": "练习 {ex}：还没有作答（请给出 {names}）。"},
    "ex.all_right": {"en": "Exercise {ex}: all right ({right}/{total}).",
                     "zh": "练习 {ex}：全部正确（{right}/{total}）。"},
    "ex.some_wrong": {"en": "Exercise {ex}: {right} of {total} right.",
                      "zh": "练习 {ex}：{total} 项中对了 {right} 项。"},
    "ex.hint": {"en": "Hint: {hint}", "zh": "提示：{hint}"},
    "ex.not_graded": {"en": "not graded: timings depend on the machine and its load",
                      "zh": "不计分：计时取决于机器及其负载"},
    "ex.choose": {"en": "  `{name}` is one letter:", "zh": "  `{name}` 是一个字母："},
}


def set_language(name: str | None) -> str:
    """Make the widgets speak `name` ('en' or 'zh'); None goes back to the automatic
    choice. Returns the language now in use."""
    global _chosen
    _chosen = None if name is None else config.language(name)
    return language()


def language() -> str:
    return _chosen or config.language()


def t(key: str, **fields) -> str:
    """The message `key` in the current language, its {fields} filled in."""
    try:
        entry = MESSAGES[key]
    except KeyError:
        raise KeyError(f"widgets.messages: no message {key!r}; add it to MESSAGES "
                       f"in widgets/messages.py in every language") from None
    text = entry[language()]
    return text.format(**fields) if fields else text


def use_fonts() -> list:
    """In Chinese, let matplotlib fall back to an installed CJK font for the glyphs DejaVu
    Sans lacks: font.family becomes ['sans-serif', <CJK fonts>] (matplotlib >= 3.6 falls
    back along font.family, glyph by glyph; Latin text keeps DejaVu Sans). Called by the
    widgets before they draw; English leaves matplotlib untouched. book/zh/matplotlibrc
    does the same for the chapters' own figures. Returns font.family."""
    import matplotlib
    if language() != "en":
        installed = register_cjk_fonts()
        family = [f for f in matplotlib.rcParams["font.family"] if f not in CJK_FONTS]
        matplotlib.rcParams["font.family"] = family + installed
    return list(matplotlib.rcParams["font.family"])


def register_cjk_fonts(save: bool = False) -> list:
    """The CJK fonts of CJK_FONTS that matplotlib can use, after adding those installed
    since it cached its font list (on a fresh machine the cache predates `make sysdeps`).
    `save=True` writes the list back to matplotlib's cache, for every later process."""
    import matplotlib
    from matplotlib import font_manager
    manager = font_manager.fontManager
    if not {f.name for f in manager.ttflist} & set(CJK_FONTS):
        for path in font_manager.findSystemFonts():
            name = path.rsplit("/", 1)[-1].lower()
            if name.startswith(("notosanscjk", "wqy-microhei", "sourcehansans")):
                manager.addfont(path)
        if save:
            cache = f"{matplotlib.get_cachedir()}/fontlist-v{manager.__version__}.json"
            font_manager.json_dump(manager, cache)
    known = {f.name for f in manager.ttflist}
    return [f for f in CJK_FONTS if f in known]


def graphviz_font(default: str = "Helvetica") -> str:
    """A Graphviz fontname for the current language (a fontconfig family list)."""
    return default if language() == "en" else ",".join([default, *CJK_FONTS[:1]])


if __name__ == "__main__":
    # python -m widgets.messages: tell matplotlib's font cache about the CJK fonts (make
    # book, slides and test run it; needed once after `apt-get install fonts-noto-cjk`).
    fonts = register_cjk_fonts(save=True)
    print(f"matplotlib CJK fonts: {', '.join(fonts) or 'none (apt-get install fonts-noto-cjk)'}")
