"""What an evaluation found, as data: every case, every run of it, every evaluator's outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .grading import Graded

__all__ = ["CaseResult", "Results", "RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run of one case: whether it ``passed`` (every evaluator passed, and the run ended
    without an error unless an evaluator expected one), its answer (or ``error``), each
    evaluator's outcome, and what the run did (``trajectory``: calls, iterations, tokens, cost,
    seconds, stop, in plain data)."""

    passed: bool
    output: Any
    error: str | None
    outcomes: Mapping[str, Graded]
    trajectory: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case and its runs (more than one with ``repeat``)."""

    name: str
    inputs: Any
    expected: Any
    metadata: Mapping[str, Any]
    runs: tuple[RunResult, ...]

    @property
    def passes(self) -> int:
        """How many of its runs passed."""
        return sum(run.passed for run in self.runs)

    @property
    def pass_rate(self) -> float:
        """The share of its runs that passed, from 0 to 1."""
        return self.passes / len(self.runs) if self.runs else 0.0

    @property
    def passed(self) -> bool:
        """Every run passed."""
        return bool(self.runs) and self.passes == len(self.runs)

    @property
    def flaky(self) -> bool:
        """Some runs passed and some did not."""
        return 0 < self.passes < len(self.runs)


@dataclass(frozen=True, slots=True)
class Results:
    """What an evaluation found: ``cases`` in the dataset's order, how many times each ran
    (``repeat``), when it started and how long it took (``Report`` adds its forms)."""

    name: str
    cases: tuple[CaseResult, ...]
    repeat: int = 1
    started: str = ""
    seconds: float = 0.0
    target: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every run of every case passed."""
        return all(case.passed for case in self.cases)

    @property
    def pass_rate(self) -> float:
        """The share of all runs that passed."""
        runs = sum(len(case.runs) for case in self.cases)
        return sum(case.passes for case in self.cases) / runs if runs else 0.0

    def case(self, name: str) -> CaseResult:
        """The case named ``name`` (``KeyError`` if there is none)."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)
