"""``check``: a report as a test's assertion (pytest shows the message), the same rule
``tether eval`` exits by."""

from __future__ import annotations

from pathlib import Path

from .report import Report

__all__ = ["check", "failures"]


def failures(report: Report, baseline: Report | str | Path | None = None) -> list[str]:
    """Why ``report`` fails the gate: without a baseline, each case that did not pass every
    run; with one, each case whose pass rate fell below the baseline's. Empty: it passes."""
    if baseline is None:
        return [
            f"{case.name}: {case.passes}/{len(case.runs)} runs passed" + _first_reason(case)
            for case in report.cases
            if not case.passed
        ]
    comparison = report.compare(baseline)
    return [
        f"{change.name}: passed {change.before:.0%} of runs before, {change.after:.0%} now"
        for change in comparison.of("regressed")
    ]


def check(report: Report, baseline: Report | str | Path | None = None) -> None:
    """Raise ``AssertionError`` listing every case that fails the gate (see ``failures``)."""
    found = failures(report, baseline)
    if found:
        against = "" if baseline is None else " against the baseline"
        raise AssertionError(
            f"{report.name}: {len(found)} case(s) failed{against}:\n  " + "\n  ".join(found)
        )


def _first_reason(case: object) -> str:
    for run in getattr(case, "runs", ()):
        if run.passed:
            continue
        for name, outcome in run.outcomes.items():
            if not outcome.passed:
                return f" ({name}: {outcome.reason})" if outcome.reason else f" ({name})"
        if run.error:
            return f" ({run.error})"
    return ""
