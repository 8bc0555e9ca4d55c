"""The report as one self-contained HTML page: a summary, a row per case (failures first to
the eye: red, flaky amber), each case opening onto its runs, their answers, every evaluator's
outcome and the calls the run made. Everything from the run is escaped: answers are model
output, never markup."""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

from .checks import as_plain

if TYPE_CHECKING:
    from .results import CaseResult, Results, RunResult

__all__ = ["report_html"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f23;background:#fff}
h1{font-size:1.3rem;margin:0 0 .3rem} .meta{color:#57606a;margin-bottom:1rem}
.summary{font-size:1.05rem;margin:.5rem 0 1rem} .ok{color:#1a7f37} .bad{color:#cf222e}
.flaky{color:#9a6700} table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa} details{margin:.2rem 0} summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;margin:.3rem 0;
max-height:20rem;overflow:auto}
.run{border-left:3px solid #d0d7de;padding-left:.6rem;margin:.6rem 0}
.run.failed{border-color:#cf222e} .run.passed{border-color:#1a7f37}
label{user-select:none} body.only-failed tr.case.passed{display:none}
body.only-failed tr.detail.passed{display:none}
"""
_SCRIPT = """
document.getElementById('only-failed').addEventListener('change',function(e){
document.body.classList.toggle('only-failed',e.target.checked);});
"""


def report_html(report: Results) -> str:
    """The page for ``report``."""
    passed = sum(case.passed for case in report.cases)
    verdict = "ok" if report.passed else "bad"
    rows = "".join(_case_rows(case, i) for i, case in enumerate(report.cases))
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(report.name)}: evaluation</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(report.name)}</h1>"
        f"<div class=meta>{escape(report.target)} · started {escape(report.started)} · "
        f"{report.seconds:.1f} s · each case {report.repeat}×</div>"
        f"<div class='summary {verdict}' id=summary data-passed={passed} "
        f"data-cases={len(report.cases)}>{passed} of {len(report.cases)} cases passed "
        f"({report.pass_rate:.0%} of runs)</div>"
        "<label><input type=checkbox id=only-failed> only cases that failed</label>"
        "<table id=cases><thead><tr><th>case</th><th>passed</th><th>calls</th><th>tokens</th>"
        f"<th>seconds</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<script>{_SCRIPT}</script></body></html>"
    )


def _case_rows(case: CaseResult, index: int) -> str:
    state = "passed" if case.passed else "flaky" if case.flaky else "failed"
    colour = {"passed": "ok", "flaky": "flaky", "failed": "bad"}[state]
    runs = case.runs
    calls = sum(len(r.trajectory.get("calls", ())) for r in runs) / max(len(runs), 1)
    tokens = sum(
        r.trajectory.get("input_tokens", 0) + r.trajectory.get("output_tokens", 0) for r in runs
    ) / max(len(runs), 1)
    seconds = sum(r.trajectory.get("seconds", 0.0) for r in runs) / max(len(runs), 1)
    detail = "".join(_run_block(run, k) for k, run in enumerate(runs, 1))
    return (
        f"<tr class='case {state}' data-case='{escape(case.name)}'>"
        f"<td>{escape(case.name)}</td><td class={colour}>{case.passes}/{len(runs)}</td>"
        f"<td>{calls:.1f}</td><td>{tokens:.0f}</td><td>{seconds:.2f}</td></tr>"
        f"<tr class='detail {state}'><td colspan=5><details id=case-{index}>"
        f"<summary>inputs, answers and checks</summary>"
        f"<div>inputs</div>{_pre(case.inputs)}"
        + ("" if case.expected is None else f"<div>expected</div>{_pre(case.expected)}")
        + f"{detail}</details></td></tr>"
    )


def _run_block(run: RunResult, number: int) -> str:
    state = "passed" if run.passed else "failed"
    outcomes = "".join(
        f"<tr><td>{escape(name)}</td><td class={'ok' if o.passed else 'bad'}>"
        f"{'pass' if o.passed else 'error' if o.error else 'fail'}</td>"
        f"<td>{'' if o.score is None else f'{o.score:.2f}'}</td><td>{escape(o.reason)}</td></tr>"
        for name, o in run.outcomes.items()
    )
    path = run.trajectory
    calls = "".join(
        f"<li><code>{escape(str(c.get('name')))}</code> {escape(_json(c.get('input')))}"
        f"{' <span class=bad>error</span>' if c.get('is_error') else ''}</li>"
        for c in path.get("calls", ())
    )
    error = "" if run.error is None else f"<div class=bad>{escape(run.error)}</div>"
    cost = path.get("cost")
    priced = "" if cost is None else f" · ${float(cost):.4f}"
    return (
        f"<div class='run {state}'><div>run {number}: <b>{state}</b> · "
        f"{path.get('iterations', 0)} replies · stop {escape(str(path.get('stop_reason')))}"
        f"{priced}</div>{error}"
        f"<div>answer</div>{_pre(run.output)}"
        + (f"<div>calls</div><ol>{calls}</ol>" if calls else "")
        + (
            "<table><thead><tr><th>evaluator</th><th></th><th>score</th><th>reason</th></tr>"
            f"</thead><tbody>{outcomes}</tbody></table>"
            if outcomes
            else ""
        )
        + "</div>"
    )


def _json(value: Any) -> str:
    return json.dumps(as_plain(value), ensure_ascii=False, default=str)


def _pre(value: Any) -> str:
    plain = as_plain(value)
    text = (
        plain
        if isinstance(plain, str)
        else json.dumps(plain, indent=2, ensure_ascii=False, default=str)
    )
    return f"<pre>{escape(text)}</pre>"
