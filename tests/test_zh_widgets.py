"""The widgets speak the reader's language (widgets/messages.py), and Chinese text is drawn
with a real font, not tofu boxes, in matplotlib figures and Graphviz drawings.

The language comes from `set_language()`, else STRAIGHTDOPE_LANG, else the kernel's
working directory (book/zh/ -> Chinese); English output stays what it was.
"""
from __future__ import annotations

import io
import string
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from straightdope import config, nd
from straightdope.gluon import nn

from widgets import messages
from widgets.messages import MESSAGES, set_language, t

from test_widgets import Hybridize_net, make_net, mlp_symbol

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def chinese():
    set_language("zh")
    yield
    set_language(None)


@pytest.fixture
def english():
    set_language("en")
    yield
    set_language(None)


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_message_has_every_language_with_the_same_fields():
    assert len(MESSAGES) > 50
    for key, entry in MESSAGES.items():
        assert set(entry) == set(config.LANGUAGES), key
        assert fields(entry["en"]) >= fields(entry["zh"]) - {"plural"}, key
        assert fields(entry["zh"]) <= fields(entry["en"]), key


def test_language_from_argument_environment_and_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("STRAIGHTDOPE_LANG", raising=False)
    assert config.language(cwd=tmp_path) == "en"
    assert config.language(cwd=tmp_path / "book" / "zh") == "zh"
    assert config.language(cwd=tmp_path / "other" / "zh") == "en"
    monkeypatch.setenv("STRAIGHTDOPE_LANG", "zh")
    assert config.language(cwd=tmp_path) == "zh"
    assert config.language("en", cwd=tmp_path / "book" / "zh") == "en"
    monkeypatch.setenv("STRAIGHTDOPE_LANG", "fr")
    with pytest.raises(ValueError, match="unknown language 'fr'.*STRAIGHTDOPE_LANG"):
        config.language()
    monkeypatch.setenv("STRAIGHTDOPE_LANG", "en")
    assert set_language("zh") == "zh" and t("bench.run") == "运行"
    assert set_language(None) == "en" and t("bench.run") == "Run"
    with pytest.raises(KeyError, match="no message 'nope'"):
        t("nope")


def test_trace_inspector_in_english_and_in_chinese(english):
    from widgets import TraceInspector
    inspector = TraceInspector(make_net(), nd.random.normal(shape=(1, 3)))
    assert inspector.call_button.description == "Call once more"
    assert inspector.mode_button.description == "Un-hybridize"
    assert "Imperative: net(x) runs the Python" in inspector.imperative_html.value
    assert "traced: Python ran once, F = symbol" in inspector.hybridized_html.value
    assert "<b>2</b> calls (1 imperative, 1 hybridized) &middot; <b>1</b> trace<" in \
        inspector.counter_html.value

    set_language("zh")
    inspector = TraceInspector(make_net(), nd.random.normal(shape=(1, 3)))
    assert inspector.call_button.description == "再调用一次"
    assert inspector.mode_button.description == "取消混合化"
    assert inspector.reset_button.description == "重置"
    assert "命令式：net(x) 运行 Python 代码" in inspector.imperative_html.value
    assert "追踪：Python 只运行了一次，F = symbol" in inspector.hybridized_html.value
    assert "第 2 次调用" in inspector.hybridized_html.value
    assert "共 <b>2</b> 次调用（命令式 1 次，混合化 1 次）" in inspector.counter_html.value
    # What the block printed is the block's, not translated.
    assert "F: &lt;module &#x27;straightdope.symbol&#x27;" in inspector.hybridized_html.value
    inspector.mode_button.click()
    assert inspector.mode_button.description == "混合化"


def svg_texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_graph_view_in_chinese_draws_its_title_with_a_cjk_font(chinese):
    from widgets import GraphView
    view = GraphView(mlp_symbol(), (1, 3), executor="numpy")
    assert view.stage_buttons.options[:2] == (("追踪", "traced"), ("形状推断", "shapes"))
    assert view.hide_params.description == "隐藏参数"
    assert "阶段：形状推断" in svg_texts(view.svg)
    assert "Noto Sans CJK SC" in view.dot
    assert "输入: data" in view.details_html.value and "参数个数" in view.details_html.value
    view.stage_buttons.value = "traced"
    assert "阶段：追踪" in svg_texts(view.svg)


def test_graph_view_in_english_is_unchanged(english):
    from widgets import GraphView
    view = GraphView(mlp_symbol(), (1, 3), executor="numpy")
    assert view.stage_buttons.options[1] == ("shapes inferred", "shapes")
    assert 'graph [fontname="Helvetica", fontsize=15];' in view.dot
    assert "stage: shapes inferred" in svg_texts(view.svg)


def test_benchmark_plot_in_chinese(chinese):
    from widgets import BenchmarkPlot
    bench = BenchmarkPlot(Hybridize_net, (1, 3), width=10, repeats=4)
    assert bench.run_button.description == "运行"
    assert bench.batch_slider.description == "批量大小"
    bench.run()
    assert "加速比" in bench.status_html.value and "speedup" not in bench.status_html.value
    left, right = bench.figure.axes
    assert left.get_xlabel() == "调用次序" and left.get_ylabel().startswith("每次调用耗时")
    assert [tick.get_text() for tick in right.get_xticklabels()] == ["命令式", "混合化"]
    labels = left.get_legend_handles_labels()[1]
    assert labels[:2] == ["命令式：中位数，10%-90% 区间", "混合化：中位数，10%-90% 区间"], labels
    bench.close()


def test_training_plot_and_epoch_line_in_both_languages(monkeypatch):
    import IPython.display
    from widgets import training

    class Handle:
        def __init__(self, obj):
            self.shown = [obj]

        def update(self, obj):
            self.shown.append(obj)

    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id: Handle(obj))
    history = {"train_loss": [1.4], "train_acc": [0.6], "test_acc": [0.8],
               "epoch_time_s": [1.25]}
    try:
        set_language("en")
        assert training._epoch_line(history, 10) == (
            "epoch  1/10: loss 1.4000, train acc 0.600, test acc 0.800, 1.25 s")
        set_language("zh")
        assert training._epoch_line(history, 10) == (
            "第  1/10 轮：损失 1.4000，训练准确率 0.600，测试准确率 0.800，1.25 秒")
        plot = training.LivePlot(epochs=1)
        plot.update(history)
        assert plot.ax_loss.get_xlabel() == "轮" and plot.ax_loss.get_ylabel() == "损失"
        assert [line.get_label() for line in plot.ax_acc.get_lines()] == [
            "训练准确率", "测试准确率"]
    finally:
        set_language(None)


# ----------------------------------------------------------------- fonts: no tofu
def render_text(text: str) -> np.ndarray:
    """`text` drawn by matplotlib (Agg) alone on a small figure, as grey pixels; raises if
    matplotlib reports a glyph missing from every font it tried."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(2, 0.6), dpi=60)
    FigureCanvasAgg(fig)
    fig.text(0.05, 0.2, text, fontsize=20)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*missing from font")
        fig.savefig(buf, format="rgba")
    return np.frombuffer(buf.getvalue(), dtype=np.uint8).reshape(36, 120, 4)[..., 0]


def test_chinese_figures_use_a_font_that_has_the_glyphs(chinese):
    """Tofu is the same empty box for every missing character: two different Chinese
    strings would draw the same pixels, and matplotlib warns 'Glyph ... missing from
    font(s)'. With a CJK font in the fallback list, neither happens."""
    families = messages.use_fonts()
    assert families[0] == "sans-serif" and "Noto Sans CJK SC" in families
    from matplotlib import font_manager
    path = font_manager.findfont(font_manager.FontProperties(family="Noto Sans CJK SC"),
                                 fallback_to_default=False)
    assert "CJK" in path, f"no Noto Sans CJK font installed (make sysdeps): {path}"
    a, b = render_text("命令式编程"), render_text("符号式编程")
    assert (a < 128).sum() > 50                           # something dark was drawn
    assert not np.array_equal(a[:, :45], b[:, :45])        # different first characters
    assert np.array_equal(a[:, 75:], b[:, 75:]) or (a[:, 75:] != b[:, 75:]).mean() < 0.02


def test_chinese_chapters_figures_use_the_cjk_font_through_their_matplotlibrc():
    """book/zh/matplotlibrc (read by matplotlib in a kernel running in book/zh/) gives the
    chapters' own figures the same fallback fonts as the widgets."""
    import matplotlib
    from pathlib import Path
    rc = matplotlib.rc_params_from_file(
        Path(__file__).resolve().parent.parent / "book" / "zh" / "matplotlibrc",
        use_default_template=False)
    family = rc["font.family"]
    assert family[0] == "sans-serif" and family[1:] == messages.CJK_FONTS[:len(family) - 1]
    messages.register_cjk_fonts()
    with matplotlib.rc_context({"font.family": family}):
        render_text("训练损失")            # raises if a glyph is missing


def test_missing_glyphs_are_caught_by_this_check():
    """The check above can fail: with only DejaVu Sans, Chinese is tofu and matplotlib
    says so."""
    import matplotlib
    with matplotlib.rc_context({"font.family": ["sans-serif"]}):
        with pytest.raises(UserWarning, match="missing from font"):
            render_text("命令式编程")


def test_english_figures_are_left_alone(english):
    import matplotlib
    before = list(matplotlib.rcParams["font.family"])
    assert messages.use_fonts() == before
    assert messages.graphviz_font() == "Helvetica"


def covered_characters(families: list[str]) -> set[int]:
    """The code points the fonts that fontconfig picks for `families` can draw."""
    import subprocess

    from fontTools.ttLib import TTCollection, TTFont
    covered = set()
    for family in families:
        path = subprocess.run(["fc-match", "-f", "%{file}", family], capture_output=True,
                              text=True, check=True).stdout
        fonts = (TTCollection(path).fonts if path.endswith(".ttc")
                 else [TTFont(path, lazy=True)])
        for font in fonts[:1]:
            covered |= set(font.getBestCmap())
    return covered


def test_graphviz_font_draws_every_chinese_message(chinese):
    """Graphviz (and the browser showing its SVG) draw text with the fonts fontconfig
    finds for the fontname: together they must have a glyph for every character of every
    Chinese message. Without a CJK font, fc-match answers DejaVu: no CJK glyph at all."""
    import graphviz
    families = messages.graphviz_font().split(",")
    covered = covered_characters(families)
    text = "".join(entry["zh"] for entry in MESSAGES.values())
    missing = sorted({c for c in text if ord(c) not in covered and not c.isspace()})
    assert not missing, f"no glyph in {families} for {missing[:20]} (make sysdeps)"
    english_only = covered_characters(["DejaVu Sans"])
    assert ord("算") not in english_only          # the check can fail
    svg = graphviz.Source(f'digraph {{ graph [fontname="{messages.graphviz_font()}", '
                          f'label="阶段：追踪"]; a; }}').pipe(format="svg", encoding="utf-8")
    title = [e for e in ET.fromstring(svg).iter(f"{SVG}text") if e.text == "阶段：追踪"]
    assert title and "Noto Sans CJK SC" in title[0].get("font-family"), svg
