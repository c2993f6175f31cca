"""The exercises check themselves (widgets/exercises.py): every check fails a wrong answer,
says what is wrong in both languages, and sits in the chapters where it belongs.

That each folded solution passes its check is shown where the chapters run
(test_book_part*.py, the book build): a solution's code ends with `assert check(...)`."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.assignments import CHECK_TAG, split_check  # noqa: E402
from scripts.solutions import HEADINGS, SUMMARY, exercise_numbers  # noqa: E402
from widgets.exercises import CHECKS, check, evaluate  # noqa: E402
from widgets.messages import set_language  # noqa: E402

BOOK = REPO / "book"


def _wrong_letter(key, name):
    """A letter the reader sees that is not the right option."""
    exercise = CHECKS[key]
    return next(letter for letter in exercise.shown(name) if exercise.as_written(name, letter) != "a")


def _loud_net(batches):
    """A hybridized net whose forward prints, called on `batches` batch sizes."""
    from straightdope import gluon, nd

    class Loud(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.d1, self.out = gluon.nn.Dense(10), gluon.nn.Dense(2)

        def hybrid_forward(self, F, x):
            return self.out(F.relu(self.d1(x)))

    net = Loud()
    net.initialize()
    net.hybridize()
    for batch in batches:
        net(nd.random_normal(shape=(batch, 3)))
    return net


def _old_style_class():
    from straightdope import gluon

    class OldStyle(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.d1, self.out = gluon.nn.Dense(10), gluon.nn.Dense(2)

        def hybrid_forward(self, F, x):
            return self.out(F.relu(self.d1(x)))
    return OldStyle


def _wrong_symbol():
    from straightdope import symbol as sym
    a, b, c = sym.var('a'), sym.var('b'), sym.var('c')
    return sym.sigmoid(a + b * c)          # not sigmoid(a * b + c)


def _pair(hybridized):
    from straightdope import gluon, nd
    pair = gluon.nn.Sequential()
    pair.add(gluon.nn.Dense(2), gluon.nn.Dense(2))
    pair.initialize()
    if hybridized:
        pair.hybridize()
    pair(nd.ones((1, 3)))
    return pair


def _ones13():
    from straightdope import nd
    return nd.ones((1, 3))


def _hidden_list_class():
    from straightdope import gluon

    class HiddenList(gluon.nn.Block):      # layers in a list, never registered
        def __init__(self):
            super().__init__()
            self.layers = [gluon.nn.Dense(5), gluon.nn.Dense(2)]
    return HiddenList


def _trained_and_untouched():
    """A layer trained one step and a fresh layer that did not load it."""
    from straightdope import autograd, gluon, nd
    trained, fresh = gluon.nn.Dense(2, in_units=3), gluon.nn.Dense(2, in_units=3)
    trained.initialize()
    fresh.initialize()
    x = nd.ones((4, 3))
    with autograd.record():
        loss = (trained(x) ** 2).mean()
    loss.backward()
    gluon.Trainer(trained.collect_params(), "sgd", {"learning_rate": 0.1}).step(1)
    return dict(trained=trained, loaded=fresh, diff=(fresh(x) - trained(x)).abs().max().asscalar())


def _zeros_initializer():
    from straightdope import initializer
    return initializer.Zero


def _add_one_in_place():
    from straightdope import gluon

    class AddOneInPlace(gluon.HybridBlock):    # the chapter's: += changes the caller's input
        def hybrid_forward(self, F, x):
            x += 1
            return x * 2
    return AddOneInPlace


def _biased_dense():
    """A hybridized Dense(3) that does not give zeros for an all-zero input."""
    from straightdope import gluon, nd
    net = gluon.nn.Dense(3, bias_initializer="ones")
    net.initialize()
    net.hybridize()
    net(nd.ones((8, 20)))
    return net


def _clip_everything():
    from straightdope import gluon

    class Clip(gluon.HybridBlock):         # clips both sides, not only below -1
        def hybrid_forward(self, F, x):
            return F.clip(x, -1, 1)
    return Clip


def _running_max():
    from straightdope import gluon

    class RunningMax(gluon.HybridBlock):   # a scan, but not a sum
        def hybrid_forward(self, F, x):
            def body(x_t, best):
                best = F.maximum(best, x_t)
                return best, best
            start = F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1))
            out, _ = F.contrib.foreach(body, x, start.reshape((-3, -2)))
            return out
    return RunningMax


# A wrong answer to every check: a slip a student could make (a swapped pair, a number off,
# the wrong option, an object that does something else). Functions build them lazily.
WRONG = {
    "00.1": lambda: dict(values=np.maximum(np.arange(-3, 4) - 1.0, 0)),        # relu, not sigmoid
    "00.2": lambda: dict(imperative_us=120.0, hybridized_us=40.0, faster="imperative"),
    "00.3": lambda: dict(path=__file__, line="return F.relu(x)"),
    "01.1": lambda: dict(result=np.zeros((1, 4), dtype="float32")),
    "01.2": lambda: dict(weight_shape=(6, 3, 3), out_shape=(1, 6, 28, 28)),
    "01.3": lambda: dict(formula=lambda x: x / (1 + x * x), scalar_expr="tanh({0})"),
    "01.4": lambda: dict(plus_keeps_object=True, grow_in_place=True),
    "02.1": lambda: dict(x=np.arange(0, 3, 0.5), grad=np.sin(np.arange(0, 3, 0.5)),
                         rule=_wrong_letter("02.1", "rule")),
    "02.2": lambda: dict(still_true=True, ratio=1.0),
    "02.3": lambda: dict(error=RuntimeError, fix=_wrong_letter("02.3", "fix")),
    "02.4": lambda: dict(n_nodes=4, fusable=["tanh"]),
    "03.1": lambda: dict(w=np.zeros((2, 1)), true_w=np.array([2, -3.4]), why=_wrong_letter("03.1", "why")),
    "03.2": lambda: dict(final_loss={0.001: 1e-4, 0.1: 1e-4, 1.0: 1e-4}, slowest=1.0),
    "03.3": lambda: dict(huber_error=0.001, l2_error=0.05, why=_wrong_letter("03.3", "why")),
    "03.4": lambda: dict(learning_rate=0.03, batch_size=10, divided=np.ones((1, 2)),
                         undivided=np.ones((1, 2)) * 10),
    "10.1": lambda: dict(names=["dense0_weight", "dense0_bias"], has_bias=True),
    "10.2": lambda: dict(output=np.full((2, 5), 2.0), by_hand=2.0),
    "10.3": lambda: dict(shapes={True: ((2, 3, 4, 5), (5, 6)), False: ((2, 5), (5, 72))},
                         for_sentences=True),
    "10.4": lambda: dict(warnings=0, changed=True, how="initialize() again"),
    "11.1": lambda: dict(before="Dense(3 -> 5)", after="Dense(3 -> 5)"),
    "11.2": lambda: dict(n_params=4, means=_wrong_letter("11.2", "means")),
    "11.3": lambda: dict(net=_pair(hybridized=False), x=_ones13(),
                         same_predicting=False, same_recording=True),
    "11.4": lambda: dict(shape=(7, 2)),
    "12.1": lambda: dict(block=_pair(hybridized=False), x=_ones13(), numbers=444),
    "12.2": lambda: dict(n_weights=2, shape=(8, 5)),
    "12.3": lambda: dict(error=AttributeError("no"), before=6, after=4),
    "12.4": lambda: dict(block_class=_hidden_list_class()),
    "13.1": lambda: dict(bias_grad=np.full(3, 4.0), batch_size=4),
    "13.2": lambda: dict(gradient=28.0, after=1.72),
    "13.3": lambda: dict(error=TypeError("no"), where=_wrong_letter("13.3", "where")),
    "13.4": lambda: dict(error=ValueError("no"), weight_shape=(5, 3)),
    "14.1": lambda: dict(pool2_shape=(1, 16, 5, 5), dense1_weight=(120, 400)),
    "14.2": lambda: dict(layer="conv2", full=60000, smaller=70000),
    "14.3": lambda: dict(max_count=60000, avg_count=59000),
    "14.4": lambda: dict(net=_pair(hybridized=True), compiles=_wrong_letter("14.4", "compiles")),
    "15.1": lambda: dict(counts={"resnet18_v1": 3, "resnet34_v1": 2, "resnet50_v1": 1}, largest_stage="stage1"),
    "15.2": lambda: dict(out_shape=(1, 64, 8, 8), why=_wrong_letter("15.2", "why")),
    "15.3": lambda: dict(imperative=1.0, hybridized=0.1, faster="imperative", why=_wrong_letter("15.3", "why")),
    "15.4": lambda: dict(input_shape=(2, 3, 28, 28), first_weight=(64, 3, 3, 3)),
    "16.1": lambda: dict(error=KeyError("x"), expected=["hidden.0.weight", "hidden.0.bias"]),
    "16.2": lambda: _trained_and_untouched(),
    "16.3": lambda: dict(ops={"FullyConnected", "relu", "null"}, shape_key="shape"),
    "16.4": lambda: dict(n_warnings=0, why=_wrong_letter("16.4", "why")),
    "17.1": lambda: dict(dropout_params=2, total=48),
    "17.2": lambda: dict(labels_32=["32x512", "32x256"], why=_wrong_letter("17.2", "why")),
    "17.3": lambda: dict(layer="conv1", weight_shape=(6, 1, 3, 3)),
    "17.4": lambda: dict(error=AttributeError("no"), why=_wrong_letter("17.4", "why")),
    "18.1": lambda: dict(summed=np.ones((8, 8)), tied=2 * np.ones((8, 8))),
    "18.2": lambda: dict(initializer=_zeros_initializer()),
    "18.3": lambda: dict(block_class=_add_one_in_place()),
    "24.1": lambda: dict(aux_keys=["arg:dense0_weight", "arg:dense0_bias"], why=_wrong_letter("24.1", "why")),
    "24.2": lambda: dict(error=KeyError("no"), weight_shape=(2, 128), bias_shape=(2,)),
    "24.3": lambda: dict(error=ValueError("no"), same=True, why=_wrong_letter("24.3", "why")),
    "24.4": lambda: dict(y1=np.ones((4, 2)), y2=np.ones((4, 2)), y3=np.zeros((4, 2))),
    "25.1": lambda: dict(block_class=_clip_everything(), loop_fails=False),
    "25.2": lambda: dict(values=[0.5, 0.5, 0.5], trace_count=3),
    "25.3": lambda: dict(net=_biased_dense(), cost=_wrong_letter("25.3", "cost")),
    "25.4": lambda: dict(plain_1=100e-6, static_1=99e-6, plain_256=1e-3, static_256=0.5e-3,
                         matters="more", why=_wrong_letter("25.4", "why")),
    "26.1": lambda: dict(refused=False, why=_wrong_letter("26.1", "why")),
    "26.2": lambda: dict(counts={"Conv": 2, "MaxPool": 2, "Gemm": 3, "Flatten": 3}, why=_wrong_letter("26.2", "why")),
    "26.3": lambda: dict(ours_s=0.002, ort_s=0.001, faster="ours"),
    "27.1": lambda: dict(timed={10: (0.01, 0.001), 40: (0.04, 0.004), 160: (0.16, 0.016)}),
    "27.2": lambda: dict(raised=True, when=_wrong_letter("27.2", "when")),
    "27.3": lambda: dict(mxnet1=_wrong_letter("27.3", "mxnet1"), decides=_wrong_letter("27.3", "decides")),
    "30.1": lambda: dict(total_imp=[1.0, 2.0, 3.0], total_hyb=[1.5, 1.9, 2.3], overtakes=1,
                         cold=_wrong_letter("30.1", "cold")),
    "30.2": lambda: dict(imp16=1.0, hyb16=1.0, imp64=2.0, hyb64=0.5, why=_wrong_letter("30.2", "why")),
    "30.3": lambda: dict(new_plans=2, cache="compiled"),
    "30.4": lambda: dict(test_acc=[0.1, 0.11], fused="relu"),
    "31.1": lambda: dict(shape=(2, 8, 32)),
    "31.2": lambda: dict(block_class=_running_max()),
    "31.3": lambda: dict(samples={0.1: "abcdefgh", 1.0: "abcd", 2.0: "aaaa"}, low=_wrong_letter("31.3", "low")),
    "20.1": lambda: dict(once=0.5, every=0.1, pays_off_at=100),
    "20.2": lambda: dict(s=_wrong_symbol(), shapes=(None, None, None),   # broadcasting's
                         partial=([(2, 2), (), ()], [()], [])),
    "20.3": lambda: dict(n_buffers=5, why=_wrong_letter("20.3", "why")),
    "20.4": lambda: dict(speedup4=0.8, passes_imperative=1, passes_fused=4),
    "21.1": lambda: dict(prints=3, net=_loud_net([1])),
    "21.2": lambda: dict(total_prints=6, pair=_pair(hybridized=False), why=_wrong_letter("21.2", "why")),
    "21.3": lambda: dict(arguments=["data"], where=_wrong_letter("21.3", "where")),
    "21.4": lambda: dict(block_class=_old_style_class()),
    "22.1": lambda: dict(ratio_1=1.2, ratio_128=3.0, why=_wrong_letter("22.1", "why")),
    "22.2": lambda: dict(speedups={16: 1.1, 256: 1.5, 1024: 3.0}, largest=16),
    "22.3": lambda: dict(numpy_speedup=2.0, numba_speedup=1.0, gain_from=_wrong_letter("22.3", "gain_from")),
    "22.4": lambda: dict(changes=_wrong_letter("22.4", "changes")),
    "23.1": lambda: dict(steps_before=4, steps_after=6, planned_before=1000, planned_after=1400),
    "23.2": lambda: dict(regenerated=True, cache="miss"),
    "23.3": lambda: dict(relu_line="t3 = np.float32(t2 * 0.5)", stored=_wrong_letter("23.3", "stored")),
    "23.4": lambda: dict(saved=["_saved0"], why=_wrong_letter("23.4", "why")),
}


@pytest.mark.parametrize("key", sorted(CHECKS))
def test_a_wrong_answer_fails_the_check_and_says_what_is_wrong(key):
    assert key in WRONG, f"tests/test_exercises.py: add a wrong answer for check {key!r} to WRONG"
    answers = WRONG[key]()
    result = evaluate(key, **answers)
    assert not result, f"check {key!r} passed the wrong answer {answers}"
    assert not result.missing and result.points
    wrong = [p for p in result.points if not p.ok]
    assert wrong, f"check {key!r}: no point marked wrong"
    assert any("could not use the answer" not in p.text[0] for p in wrong), (
        f"check {key!r} failed only because it could not use the answer: {wrong}")
    for language in ("en", "zh"):
        set_language(language)
        try:
            text = result.text()
        finally:
            set_language(None)
        assert "✗" in text and ("Hint:" in text if language == "en" else "提示：" in text), text
        if language == "zh":
            assert re.search(r"[\u4e00-\u9fff]", text), f"check {key!r} has no Chinese feedback"


@pytest.mark.parametrize("key", sorted(CHECKS))
def test_an_unanswered_exercise_is_not_right_and_names_what_to_set(key, capsys):
    exercise = CHECKS[key]
    result = check(key, **{name: None for name in exercise.answers})
    assert not result and result.missing == exercise.answers
    printed = capsys.readouterr().out
    assert all(name in printed for name in exercise.answers)
    for name in exercise.choices:      # the options print with the hint
        assert all(f"{letter}) " in printed for letter in exercise.shown(name))


def test_right_answers_pass_and_partly_right_answers_score_part():
    assert evaluate("20.4", speedup4=3.0, passes_imperative=4, passes_fused=1)
    partly = evaluate("20.4", speedup4=3.0, passes_imperative=4, passes_fused=4)
    assert not partly and partly.score == (2, 3)
    assert evaluate("23.2", regenerated=False, cache="memory")
    net = _loud_net([1, 2, 3])
    assert evaluate("21.1", prints=1, net=net)


def test_a_timing_relation_that_does_not_show_is_reported_but_not_graded():
    """CI measured an imperative LeNet epoch at 0.65 s with batches of 16 and 0.69 s with 64:
    the arithmetic hid the per-step overhead. Such a run still passes on its reasoning, and
    the disagreeing relation prints with `~`; a wrong reason still fails."""
    why = CHECKS["30.2"].shown("why")
    right = next(letter for letter, text in why.items() if text == CHECKS["30.2"].choices["why"]["a"])
    measured = dict(imp16=0.65, hyb16=0.20, imp64=0.69, hyb64=0.20)
    result = evaluate("30.2", **measured, why=right)
    assert result and result.score == (2, 2)
    observed = [p for p in result.points if not p.graded]
    assert [p.ok for p in observed] == [False, True]
    assert "~ here the imperative epoch did not get slower (0.69 s -> 0.65 s)" in result.text()
    assert "not graded" in result.text()
    assert not evaluate("30.2", **measured, why=_wrong_letter("30.2", "why"))
    assert not evaluate("30.2", imp16=-1.0, hyb16=0.2, imp64=0.69, hyb64=0.2, why=right)


def test_choices_are_shuffled_per_question_and_read_back():
    letters = set()
    for exercise in CHECKS.values():
        for name in exercise.choices:
            shown = exercise.shown(name)
            assert sorted(shown.values()) == sorted(exercise.choices[name].values())
            right = [l for l in shown if exercise.as_written(name, l) == "a"]
            assert len(right) == 1 and shown[right[0]] == exercise.choices[name]["a"]
            letters.add(right[0])
    assert len(letters) > 1, "the right option should not always have the same letter"


def test_bad_calls_are_refused_clearly():
    with pytest.raises(KeyError, match="no exercise '99.1'"):
        check("99.1", x=1)
    with pytest.raises(TypeError, match="no answer named colour.*takes prints, net"):
        check("21.1", colour=1)
    # An answer of the wrong kind is feedback, not a crash.
    result = evaluate("20.4", speedup4="fast", passes_imperative=4, passes_fused=1)
    assert not result and "could not use the answer" in result.text()


# ------------------------------------------------------------ the checks in the chapters
def _chapters():
    """(path, language) of every chapter, English and Chinese, that has exercise checks."""
    found = []
    for path in sorted(BOOK.glob("[0-9]*.ipynb")) + sorted(BOOK.glob("zh/[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(CHECK_TAG in c.metadata.get("tags", []) for c in nb.cells):
            found.append(pytest.param(path, "zh" if path.parent.name == "zh" else "en",
                                      id=path.relative_to(BOOK).with_suffix("").as_posix()))
    return found


CALL = re.compile(r'check\("(\d+\.\d+)",(.*?)\)\s*$', re.S)


@pytest.mark.parametrize("path, language", _chapters())
def test_every_exercise_of_a_checked_chapter_has_its_check_and_its_solution_passes_it(path, language):
    nb = nbformat.read(path, as_version=4)
    chapter = path.stem[:2]
    numbers = exercise_numbers(nb, language)
    # The check cells, after the exercises and before the solutions: all answers None.
    solutions_at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                        and c.source.startswith(HEADINGS[language][1]))
    asked = {}
    for i, cell in enumerate(nb.cells):
        if CHECK_TAG in cell.metadata.get("tags", []):
            assert i < solutions_at, f"{path.name}: check cell {i} after the solutions"
            key, args = CALL.search(cell.source).groups()
            asked[key] = re.findall(r"(\w+)=None", args)
    assert sorted(asked) == [f"{chapter}.{n}" for n in numbers], (
        f"{path.name}: exercises {numbers} but check cells for {sorted(asked)}")
    for key, names in asked.items():
        assert tuple(names) == CHECKS[key].answers, (path.name, key, names)
    # Each solution's code ends with `assert check("CC.N", <every answer>)`.
    summary = re.compile(SUMMARY.pattern.replace("Solution", HEADINGS[language][2]))
    codes, current = {}, None
    for cell in nb.cells[solutions_at:]:
        match = summary.match(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = int(match.group(1))
        elif cell.cell_type == "code":
            codes.setdefault(current, []).append(cell.source)
    for n in numbers:
        _, answers = split_check("\n\n".join(codes.get(n, [])), path.stem, n)
        assert tuple(answers) == CHECKS[f"{chapter}.{n}"].answers, (path.name, n, answers)


def test_every_check_belongs_to_an_exercise_of_the_book():
    keys = set()
    for path in BOOK.glob("[0-9]*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        keys |= {f"{path.stem[:2]}.{n}" for n in exercise_numbers(nb)}
    assert set(CHECKS) <= keys, f"checks without an exercise: {sorted(set(CHECKS) - keys)}"
    assert np.all([len(CHECKS[k].hint) == 2 for k in CHECKS])
