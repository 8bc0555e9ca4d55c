"""A report beside a baseline: each case's pass rate before and after, and which got worse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .results import CaseResult, Results

__all__ = ["Change", "Comparison", "compare"]

Kind = Literal["regressed", "improved", "same", "new", "missing"]


@dataclass(frozen=True, slots=True)
class Change:
    """One case, before (the baseline) and after: pass rates (None where the case is absent)
    and the mean of its evaluators' scores (None where none gave one)."""

    name: str
    kind: Kind
    before: float | None
    after: float | None
    score_before: float | None = None
    score_after: float | None = None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every case of either report, in the new report's order, then those only the baseline has."""

    changes: tuple[Change, ...]
    before: float
    after: float

    def of(self, kind: Kind) -> tuple[Change, ...]:
        """The changes of one ``kind``."""
        return tuple(change for change in self.changes if change.kind == kind)

    @property
    def regressed(self) -> bool:
        """Some case passes less often than in the baseline."""
        return any(change.kind == "regressed" for change in self.changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {
            "pass_rate": {"before": self.before, "after": self.after},
            "regressed": self.regressed,
            "changes": [
                {
                    "name": c.name,
                    "kind": c.kind,
                    "before": c.before,
                    "after": c.after,
                    "score_before": c.score_before,
                    "score_after": c.score_after,
                }
                for c in self.changes
            ],
        }

    def summary(self) -> str:
        """One line: how many cases got worse, better, stayed, came or went."""
        counts = {
            kind: len(self.of(kind)) for kind in ("regressed", "improved", "same", "new", "missing")
        }
        told = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
        return f"pass rate {self.before:.0%} -> {self.after:.0%}: {told}"


def compare(report: Results, baseline: Results) -> Comparison:
    """``report`` against ``baseline``, case by case (by name)."""
    old = {case.name: case for case in baseline.cases}
    changes = [_change(case, old.get(case.name)) for case in report.cases]
    names = {case.name for case in report.cases}
    changes += [
        Change(case.name, "missing", case.pass_rate, None, _score(case), None)
        for case in baseline.cases
        if case.name not in names
    ]
    return Comparison(tuple(changes), baseline.pass_rate, report.pass_rate)


def _change(case: CaseResult, before: CaseResult | None) -> Change:
    if before is None:
        return Change(case.name, "new", None, case.pass_rate, None, _score(case))
    was, now = before.pass_rate, case.pass_rate
    kind: Kind = "regressed" if now < was else "improved" if now > was else "same"
    return Change(case.name, kind, was, now, _score(before), _score(case))


def _score(case: CaseResult) -> float | None:
    scores = [
        outcome.score
        for run in case.runs
        for outcome in run.outcomes.values()
        if outcome.score is not None
    ]
    return sum(scores) / len(scores) if scores else None
