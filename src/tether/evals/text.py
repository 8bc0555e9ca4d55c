"""The report as a terminal shows it: a table of cases with pass rates, what failed and why,
and a summary line; a comparison with its baseline the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from .compare import Comparison
    from .results import CaseResult, Results

__all__ = ["comparison_table", "report_table"]

_REASON = 120  # characters of a failure's reason shown


def report_table(report: Results) -> Any:
    """A table of the report's cases and a summary line."""
    table = Table(title=f"{report.name} ({report.target})", title_justify="left")
    for column in ("case", "passed", "why not", "calls", "tokens", "seconds"):
        table.add_column(column, overflow="fold")
    for case in report.cases:
        table.add_row(
            case.name,
            _rate(case),
            _why(case),
            _mean(case, lambda t: len(t["calls"])),
            _mean(case, lambda t: t["input_tokens"] + t["output_tokens"]),
            _mean(case, lambda t: t["seconds"], "{:.2f}"),
        )
    passed = sum(case.passed for case in report.cases)
    flaky = sum(case.flaky for case in report.cases)
    line = Text(
        f"{passed}/{len(report.cases)} cases passed"
        + (f", {flaky} flaky" if flaky else "")
        + f"; {report.pass_rate:.0%} of {sum(len(c.runs) for c in report.cases)} runs"
        + f" in {report.seconds:.1f} s",
        style="green" if report.passed else "red",
    )
    return Group(table, line)


def comparison_table(comparison: Comparison) -> Any:
    """The cases whose pass rate changed (or came or went), and a summary line."""
    table = Table(title="against the baseline", title_justify="left")
    for column in ("case", "change", "before", "after"):
        table.add_column(column)
    styles = {"regressed": "red", "improved": "green", "new": "cyan", "missing": "yellow"}
    for change in comparison.changes:
        if change.kind == "same":
            continue
        table.add_row(
            change.name,
            Text(change.kind, style=styles[change.kind]),
            "" if change.before is None else f"{change.before:.0%}",
            "" if change.after is None else f"{change.after:.0%}",
        )
    style = "red" if comparison.regressed else "green"
    return Group(table, Text(comparison.summary(), style=style))


def _rate(case: CaseResult) -> Text:
    style = "green" if case.passed else "yellow" if case.flaky else "red"
    return Text(f"{case.passes}/{len(case.runs)}", style=style)


def _why(case: CaseResult) -> str:
    for run in case.runs:
        if run.passed:
            continue
        if run.error is not None and not any(not o.passed for o in run.outcomes.values()):
            return _cut(run.error)
        for name, outcome in run.outcomes.items():
            if not outcome.passed:
                return _cut(f"{name}: {outcome.reason}" if outcome.reason else name)
        return _cut(run.error or "")
    return ""


def _mean(case: CaseResult, value: Any, form: str = "{:.0f}") -> str:
    values = [value(run.trajectory) for run in case.runs]
    return form.format(sum(values) / len(values)) if values else ""


def _cut(text: str) -> str:
    return text if len(text) <= _REASON else text[: _REASON - 3] + "..."
