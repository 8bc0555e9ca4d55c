"""What an evaluator is given and what it gives back, and how any evaluator is asked.

An evaluator is a callable taking an ``EvalContext``, or an object with ``.evaluate(ctx)``; sync
or async. It returns a bool (passed or not), a number (a score from 0 to 1, passed at the
evaluator's ``threshold``, 0.5 unless it has one), or a ``Verdict`` (with a reason). An
evaluator that raises fails its case with the error as the reason: it never stops the others.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .trajectory import Trajectory

__all__ = ["EvalContext", "Evaluator", "Graded", "Verdict", "evaluator_name", "grade"]

DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class EvalContext:
    """One run of one case: its ``inputs``, ``expected`` and ``metadata``, the ``output`` (None
    if the run failed; ``error`` then says why), the run's ``trajectory``, and the evaluated
    agent's ``model`` (its transport; None for a function)."""

    name: str
    inputs: Any
    expected: Any
    metadata: Mapping[str, Any]
    output: Any
    trajectory: Trajectory
    error: str | None = None
    model: Any = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """An evaluator's answer with its reason: ``passed``, and a ``score`` from 0 to 1 if it
    grades rather than checks."""

    passed: bool
    score: float | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Graded:
    """How one evaluator judged one run, as a report keeps it."""

    passed: bool
    score: float | None = None
    reason: str = ""
    error: bool = False  # the evaluator itself failed (raised), not the run


@runtime_checkable
class Evaluator(Protocol):
    """An evaluator as an object (a plain callable taking the context works too)."""

    def evaluate(self, ctx: EvalContext) -> Any:
        """A bool, a score from 0 to 1, or a ``Verdict`` (may be awaitable)."""
        ...


def evaluator_name(evaluator: Any) -> str:
    """The name a report shows for ``evaluator``: its ``name``, else its function's or class's."""
    named = getattr(evaluator, "name", None)
    if isinstance(named, str) and named:
        return named
    if inspect.isfunction(evaluator) or inspect.ismethod(evaluator):
        return evaluator.__name__
    return type(evaluator).__name__


async def grade(evaluator: Any, ctx: EvalContext) -> Graded:
    """Ask ``evaluator`` about ``ctx``; what it returns, or the error it raised, as an outcome."""
    method = getattr(evaluator, "evaluate", None)
    call = method if callable(method) else evaluator
    try:
        answer = call(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:  # an evaluator's bug fails its check, never the whole evaluation
        return Graded(False, None, f"the evaluator raised {type(exc).__name__}: {exc}", True)
    return _outcome(answer, getattr(evaluator, "threshold", DEFAULT_THRESHOLD))


def _outcome(answer: Any, threshold: float) -> Graded:
    if isinstance(answer, Verdict):
        return Graded(bool(answer.passed), _score(answer.score), answer.reason)
    if isinstance(answer, bool):
        return Graded(answer)
    if isinstance(answer, (int, float)):
        score = _score(answer)
        if score is None:
            return Graded(False, None, f"the score {answer!r} is not a number from 0 to 1", True)
        return Graded(score >= threshold, score, f"score {score:g}, passes at {threshold:g}")
    return Graded(
        False,
        None,
        f"an evaluator returns a bool, a score or a Verdict, not {type(answer).__name__}",
        True,
    )


def _score(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None
