"""Reports: saved as JSON and read back, compared with a baseline, shown as a table, used as a
test's gate; a damaged report is an error, never a pass."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from agents import weather_agent
from rich.console import Console

from tether.evals import Case, Contains, Dataset, EvalError, Report, ToolCalls, check, evaluate
from tether.evals.gate import failures
from tether.evals.text import comparison_table

DATA = Dataset(
    [
        Case("Weather in Oslo?", name="oslo", evaluators=[ToolCalls(["get_weather"])]),
        Case("What is 2+2?", name="sum", expected="4"),
        Case("What is 2+2?", name="wrong", expected="5", metadata={"tag": "known bad"}),
    ]
)


async def _report() -> Report:
    return await evaluate(weather_agent(), DATA, repeat=2, progress=False)


async def test_a_saved_report_reads_back_the_same(tmp_path: Path) -> None:
    report = await _report()
    path = tmp_path / "report.json"
    report.save(path)
    again = Report.load(path)
    assert again == report
    data = json.loads(path.read_text())
    assert data["format"] == "tether-eval/1"
    assert data["summary"] == {"cases": 3, "passed": 2, "pass_rate": 0.6667, "passed_all": False}
    assert data["cases"][2]["metadata"] == {"tag": "known bad"}
    assert data["cases"][0]["runs"][0]["trajectory"]["calls"][0]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not a report saved as JSON"),
        ('{"cases": []}', "not a tether evaluation report"),
        ('{"format": "tether-eval/1", "name": "x"}', "a damaged report"),
        ('{"format": "tether-eval/1", "name": "x", "cases": [{"name": 1}]}', "a damaged report"),
        (
            '{"format": "tether-eval/1", "name": "x", "cases": [{"name": "a", "inputs": 1, '
            '"expected": null, "runs": [{"passed": true, "output": 1, "error": null, '
            '"outcomes": {"e": {"passed": true, "score": "high"}}, "trajectory": {}}]}]}',
            "a damaged report",
        ),
    ],
)
def test_a_damaged_report_is_an_error(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(text)
    with pytest.raises(EvalError, match=said):
        Report.load(path)
    with pytest.raises(EvalError, match="cannot read the report"):
        Report.load(tmp_path / "none.json")


async def test_a_comparison_says_what_got_better_or_worse() -> None:
    before = await _report()
    flips = itertools.cycle(["4", "5"])

    def after_fn(inputs: str) -> str:
        return next(flips) if "2+2" in inputs else "rain"

    changed = Dataset(
        [
            Case("What is 2+2?", name="sum", expected="4"),
            Case("What is 2+2?", name="wrong", expected="5"),
            Case("new one", name="new", evaluators=[Contains("rain")]),
        ]
    )
    after = await evaluate(after_fn, changed, repeat=2, concurrency=1, progress=False)
    comparison = after.compare(before)
    kinds = {c.name: (c.kind, c.before, c.after) for c in comparison.changes}
    assert kinds == {
        "sum": ("regressed", 1.0, 0.5),
        "wrong": ("improved", 0.0, 0.5),
        "new": ("new", None, 1.0),
        "oslo": ("missing", 1.0, None),
    }
    assert comparison.regressed
    assert comparison.summary() == "pass rate 67% -> 67%: 1 regressed, 1 improved, 1 new, 1 missing"
    assert comparison.to_dict()["regressed"] is True
    assert failures(after, before) == ["sum: passed 100% of runs before, 50% now"]
    with pytest.raises(AssertionError, match="1 case\\(s\\) failed against the baseline"):
        check(after, before)
    assert not after.compare(after).regressed
    console = Console(record=True, width=120)
    console.print(comparison_table(comparison))
    shown = console.export_text()
    assert "regressed" in shown and "improved" in shown and "sum" in shown


async def test_the_gate_without_a_baseline_names_each_failing_case(tmp_path: Path) -> None:
    report = await _report()
    with pytest.raises(AssertionError) as caught:
        check(report)
    assert "wrong: 0/2 runs passed (equals: expected '5', got '4')" in str(caught.value)
    report.save(tmp_path / "base.json")
    check(report, tmp_path / "base.json")  # the same report is no regression


async def test_the_table_shows_every_case_its_pass_rate_and_why_not() -> None:
    report = await _report()
    console = Console(record=True, width=140)
    console.print(report.render())
    shown = console.export_text()
    for name in ("oslo", "sum", "wrong"):
        assert name in shown
    assert "0/2" in shown and "2/2" in shown
    assert "equals: expected '5', got '4'" in shown
    assert "2/3 cases passed; 67% of 6 runs" in shown


async def test_the_page_escapes_everything_the_run_said(tmp_path: Path) -> None:
    def echo(inputs: str) -> str:
        return inputs

    data = Dataset([Case("<script>alert(1)</script>", name="<b>x</b>", expected="&")])
    page = (await evaluate(echo, data, progress=False)).to_html()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert page.count("<script>") == 1  # the page's own
    (await evaluate(echo, data, progress=False)).save(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
