"""Exercises that check themselves: `check("21.1", prints=1)` says what is right, what is
wrong, and gives a hint.

    from widgets.exercises import check
    check("21.1", prints=None)          # not answered yet: prints the hint (and any choices)
    assert check("21.1", prints=1)      # a Solution's last line: truthy only if all is right

Every exercise of the book is one `Exercise` in CHECKS (key "chapter.number"). Its rule
takes the student's answers as keyword arguments and returns `Point`s, each right or wrong
with its own sentence. Answers are values the student computed, a function or a block they
wrote, or a letter for "explain why" questions (the choices print with the hint).

Timings are graded for consistency (the `faster` you name is the one your numbers show) and
by relations that hold by construction (waiting for the work takes longer than queueing it),
never by their values. A relation that the machine and its load can turn around (the narrow
net gains more, the saving is a smaller share of a big call) is an `observed` point: printed,
with `~` when this run's numbers disagree, but not graded. The reasoning behind it is graded,
as a choice.

In a chapter (both editions, the same code): after the `## Exercises` list, one code cell
per exercise, tagged `exercise-check` (slides skip it), calls `check("CC.N", a=None, ...)`
with a comment saying what each answer is; run as is, it prints the hint and any choices.
The code of Solution N ends with `assert check("CC.N", a=..., ...)`, so running the book
shows that every solution passes. tests/test_exercises.py holds a wrong answer per check.

The words come in English and Chinese: the frame from widgets/messages.py, each exercise's
sentences from its (en, zh) pairs here, both in `messages.language()`. The same checks grade
the nbgrader release (`make assignments`, scripts/assignments.py).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable

from .messages import language, t


@dataclass
class Point:
    """One thing the check looked at: `ok`, the (en, zh) sentence that says so, and whether
    it counts (`graded`; an observed timing relation does not)."""
    ok: bool
    text: tuple[str, str]
    graded: bool = True

    def line(self) -> str:
        if self.graded or self.ok:
            return f"{'✓' if self.ok else '✗'} {_pick(self.text)}"
        return f"~ {_pick(self.text)} ({t('ex.not_graded')})"


@dataclass
class Exercise:
    """One exercise's check: the answers it takes, a hint, its rule, any multiple choices."""
    key: str
    answers: tuple[str, ...]
    hint: tuple[str, str]
    rule: Callable[..., list]
    choices: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)

    # The rules name the choices as written ("a" is right, say); the reader sees them in an
    # order of their own per question, so that the right letter is not always the same.
    def _turn(self, name: str) -> int:
        return zlib.crc32(f"{self.key}.{name}".encode()) % len(self.choices[name])

    def shown(self, name: str) -> dict[str, tuple[str, str]]:
        """The options of choice `name` as the reader sees them: letter -> text."""
        written = list(self.choices[name].values())
        turn = self._turn(name)
        return {chr(97 + i): written[(i + turn) % len(written)] for i in range(len(written))}

    def as_written(self, name: str, letter) -> str:
        """The letter the rule uses for the option the reader called `letter`."""
        i = ord(str(letter).strip().lower()[:1] or "?") - 97
        if not 0 <= i < len(self.choices[name]):
            return "?"
        return chr(97 + (i + self._turn(name)) % len(self.choices[name]))


@dataclass
class Result:
    """What `check()` found (it has printed it already): truthy when every point is right."""
    key: str
    points: list = field(default_factory=list)
    missing: tuple = ()

    @property
    def graded(self) -> list:
        return [p for p in self.points if p.graded]

    def __bool__(self) -> bool:
        return not self.missing and bool(self.graded) and all(p.ok for p in self.graded)

    @property
    def score(self) -> tuple[int, int]:
        return sum(p.ok for p in self.graded), len(self.graded)

    def text(self) -> str:
        exercise = CHECKS[self.key]
        if self.missing:
            lines = [t("ex.not_answered", ex=self.key, names=", ".join(self.missing))]
        else:
            right, total = self.score
            lines = [t("ex.all_right" if self else "ex.some_wrong", ex=self.key,
                       right=right, total=total)]
            lines += ["  " + p.line() for p in self.points]
        if not self:
            lines.append(t("ex.hint", hint=_pick(exercise.hint)))
            for name in exercise.choices:
                lines.append(t("ex.choose", name=name))
                lines += [f"    {letter}) {_pick(text)}"
                          for letter, text in exercise.shown(name).items()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def _ipython_display_(self):
        pass    # check() printed the feedback; a bare check(...) cell shows nothing more


CHECKS: dict[str, Exercise] = {}


def exercise(key, hint, choices=None):
    """Register the decorated rule as the check of exercise `key`; its parameters name the
    answers it takes."""
    def register(rule):
        names = rule.__code__.co_varnames[:rule.__code__.co_argcount]
        CHECKS[key] = Exercise(key, tuple(names), hint, rule, choices or {})
        return rule
    return register


def check(key: str, **answers) -> Result:
    """Check the answers to exercise `key`, print what is right, what is wrong and a hint,
    and return the Result (truthy when all is right). An answer left None is not answered."""
    result = evaluate(key, **answers)
    print(result.text())
    return result


def evaluate(key: str, **answers) -> Result:
    """check() without printing."""
    try:
        exercise_ = CHECKS[key]
    except KeyError:
        raise KeyError(f"widgets.exercises: no exercise {key!r}; the checks are "
                       f"{', '.join(sorted(CHECKS, key=_order))}") from None
    unknown = set(answers) - set(exercise_.answers)
    if unknown:
        raise TypeError(f"check({key!r}): no answer named {', '.join(sorted(unknown))}; "
                        f"this exercise takes {', '.join(exercise_.answers)}")
    missing = tuple(n for n in exercise_.answers if answers.get(n) is None)
    if missing:
        return Result(key, missing=missing)
    answers.update({name: exercise_.as_written(name, answers[name]) for name in exercise_.choices})
    try:
        points = list(exercise_.rule(**answers))
    except Exception as err:  # a wrong kind of answer is feedback, not a crash
        points = [Point(False, (f"the check could not use the answer: {type(err).__name__}: {err}",
                                f"检查无法使用这个答案：{type(err).__name__}: {err}"))]
    return Result(key, points)


def _pick(text: tuple[str, str]) -> str:
    return text[1] if language() == "zh" else text[0]


def _order(key: str):
    chapter, number = key.split(".")
    return int(chapter), int(number)


# ---------------------------------------------------------------- helpers for the rules
def point(ok, right: tuple[str, str], wrong: tuple[str, str]) -> Point:
    """A Point saying `right` when `ok`, else `wrong`."""
    return Point(bool(ok), right if ok else wrong)


def observed(ok, right: tuple[str, str], wrong: tuple[str, str]) -> Point:
    """A relation a timing should show, reported but not graded (see the module docstring)."""
    return Point(bool(ok), right if ok else wrong, graded=False)


def choice(answer, correct: str, right: tuple[str, str], wrong: tuple[str, str]) -> Point:
    """A multiple-choice answer against the `correct` letter (both as the rule wrote them)."""
    return point(str(answer).strip().lower() == correct, right, wrong)


def number(value) -> float:
    """`value` as a float (a NumPy or NDArray scalar too); refuses what is not a number."""
    if hasattr(value, "asnumpy"):
        value = value.asnumpy()
    if isinstance(value, (bool, str)) or value is None:
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def ratio_above_one(name: str, value) -> Point:
    x = number(value)
    return point(x > 1, (f"`{name}` = {x:.2f} > 1", f"`{name}` = {x:.2f} > 1"),
                 (f"`{name}` = {x:.2f} should be above 1: is it a ratio slow / fast?",
                  f"`{name}` = {x:.2f} 应该大于 1：它是“慢 / 快”的比值吗？"))


from . import _exercise_checks  # noqa: E402,F401  (registers the chapters' checks)
