"""A report of an evaluation: every case, every run of it, every evaluator's outcome; saved as
JSON (which a later report compares with: ``Report.load``), shown in a terminal or as HTML."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checks import as_plain
from .compare import Comparison, compare
from .errors import EvalError
from .grading import Graded
from .html import report_html
from .results import CaseResult, Results, RunResult

__all__ = ["FORMAT", "Report", "report_from_dict", "report_to_dict"]

FORMAT = "tether-eval/1"
MAX_REPORT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Report(Results):
    """The result of ``evaluate``: ``cases`` in the dataset's order, how many times each ran
    (``repeat``), when it started and how long it took; saved as JSON, shown as a table or a
    page, compared with a baseline."""

    def compare(self, baseline: Results | str | Path) -> Comparison:
        """What got better or worse than ``baseline`` (a report, or a saved one's path)."""
        return compare(self, baseline if isinstance(baseline, Results) else Report.load(baseline))

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as JSON: what ``Report.load`` reads back, and a baseline for later."""
        return json.dumps(report_to_dict(self), indent=indent, ensure_ascii=False, default=str)

    def to_html(self) -> str:
        """The report as one self-contained HTML page."""
        return report_html(self)

    def render(self) -> Any:
        """The report as a ``rich`` renderable (what ``tether eval`` prints)."""
        from .text import report_table  # noqa: PLC0415 - rich, only for terminals

        return report_table(self)

    def save(self, path: str | Path) -> None:
        """Write ``to_json()`` to ``path`` (``.html``: ``to_html()``)."""
        target = Path(path)
        text = self.to_html() if target.suffix.lower() in (".html", ".htm") else self.to_json()
        target.write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """A report saved with ``to_json`` (``EvalError`` for a file that is not one)."""
        path = Path(path)
        try:
            if path.stat().st_size > MAX_REPORT_BYTES:
                raise EvalError(f"{path}: larger than a report may be ({MAX_REPORT_BYTES} bytes)")
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise EvalError(f"{path}: cannot read the report ({exc.strerror or exc})") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvalError(f"{path}: not a report saved as JSON ({exc})") from exc
        return report_from_dict(data, str(path))


def report_to_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON data (``FORMAT``)."""
    return {
        "format": FORMAT,
        "name": report.name,
        "target": report.target,
        "started": report.started,
        "seconds": report.seconds,
        "repeat": report.repeat,
        "summary": {
            "cases": len(report.cases),
            "passed": sum(case.passed for case in report.cases),
            "pass_rate": round(report.pass_rate, 4),
            "passed_all": report.passed,
        },
        **({"extra": dict(report.extra)} if report.extra else {}),
        "cases": [_case_to_dict(case) for case in report.cases],
    }


def _case_to_dict(case: CaseResult) -> dict[str, Any]:
    return {
        "name": case.name,
        "inputs": as_plain(case.inputs),
        "expected": as_plain(case.expected),
        "metadata": dict(case.metadata),
        "passes": case.passes,
        "pass_rate": round(case.pass_rate, 4),
        "runs": [
            {
                "passed": run.passed,
                "output": as_plain(run.output),
                "error": run.error,
                "outcomes": {
                    name: {
                        "passed": o.passed,
                        "score": o.score,
                        "reason": o.reason,
                        "error": o.error,
                    }
                    for name, o in run.outcomes.items()
                },
                "trajectory": dict(run.trajectory),
            }
            for run in case.runs
        ],
    }


def report_from_dict(data: Any, where: str) -> Report:
    """A report read back from ``report_to_dict``'s form; ``EvalError`` naming ``where``."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise EvalError(f"{where}: not a tether evaluation report (no format {FORMAT!r})")
    try:
        cases = tuple(_case_from_dict(case) for case in data["cases"])
        return Report(
            str(data["name"]),
            cases,
            int(data.get("repeat", 1)),
            str(data.get("started", "")),
            float(data.get("seconds", 0.0)),
            str(data.get("target", "")),
            dict(data.get("extra", {})),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EvalError(f"{where}: a damaged report ({type(exc).__name__}: {exc})") from exc


def _case_from_dict(data: Mapping[str, Any]) -> CaseResult:
    runs = tuple(
        RunResult(
            bool(run["passed"]),
            run["output"],
            run["error"],
            {name: _outcome_from_dict(o) for name, o in run["outcomes"].items()},
            dict(run["trajectory"]),
        )
        for run in data["runs"]
    )
    return CaseResult(
        str(data["name"]), data["inputs"], data["expected"], dict(data.get("metadata") or {}), runs
    )


def _outcome_from_dict(data: Mapping[str, Any]) -> Graded:
    score = data.get("score")
    return Graded(
        bool(data["passed"]),
        None if score is None else float(score),
        str(data.get("reason", "")),
        bool(data.get("error", False)),
    )
