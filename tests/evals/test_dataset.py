"""Datasets: in Python, and read from YAML and JSON files with every mistake named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.evals import Case, Contains, Dataset, Equals, EvalError, Judge, Regex, ToolCalls, Within
from tether.evals.dataset import MAX_DATASET_BYTES

YAML = """
name: weather
evaluators:
  - contains: sunny
cases:
  - name: oslo
    inputs: Weather in Oslo?
    expected: sunny
    metadata: {tag: smoke}
    evaluators:
      - tool_calls: [get_weather]
      - within: {iterations: 3, limit: false}
  - inputs: What is 2+2?
    evaluators:
      - regex: '\\b4\\b'
      - equals: "4"
      - tool_calls: {calls: [], order: exact}
      - judge: {rubric: The answer is four., threshold: 0.7}
      - python: tests_evals_helpers:always
"""


@pytest.fixture(autouse=True)
def _helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tests_evals_helpers.py").write_text("def always(ctx):\n    return True\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_yaml_dataset_reads_cases_and_named_evaluators(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(YAML)
    data = Dataset.load(path)
    assert data.name == "weather"
    assert data.names == ("oslo", "case 2")
    assert data.evaluators == (Contains("sunny"),)
    oslo, sums = data.cases
    assert (oslo.inputs, oslo.expected, oslo.metadata) == (
        "Weather in Oslo?",
        "sunny",
        {"tag": "smoke"},
    )
    assert oslo.evaluators == (ToolCalls(["get_weather"]), Within(iterations=3, limit=False))
    regex, equals, calls, judge, custom = sums.evaluators
    assert regex == Regex(r"\b4\b") and equals == Equals("4")
    assert calls == ToolCalls([], order="exact")
    assert isinstance(judge, Judge) and judge.threshold == 0.7 and judge.model is None
    assert callable(custom) and custom.__name__ == "always"


def test_a_json_dataset_is_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": [{"inputs": "hi", "expected": "hello"}]}))
    data = Dataset.load(path)
    assert data.name == "cases" and data.cases == (Case("hi", "hello"),)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("cases: []", "'cases' must be a non-empty list"),
        ("- inputs: a", "expected a mapping with 'cases'"),
        ("cases: [{expected: a}]", "case 1: has no 'inputs'"),
        ("cases: [{inputs: a, expect: b}]", "case 1: unknown key(s) expect"),
        ("cases: [{inputs: a}]\nevaluator: [equals]", "unknown key(s) evaluator"),
        ("cases: [{inputs: a, evaluators: [{contain: x}]}]", "unknown evaluator 'contain'"),
        ("cases: [{inputs: a, evaluators: [regex]}]", "evaluator 'regex' needs a value"),
        ("cases: [{inputs: a, evaluators: [{regex: '('}]}]", "evaluator regex:"),
        ("cases: [{inputs: a, evaluators: {equals: a}}]", "'evaluators' must be a list"),
        ("cases: [{inputs: a, evaluators: [{tool_calls: {calls: [], order: all}}]}]", "order"),
        ("cases: [{inputs: a, evaluators: [{within: {turns: 3}}]}]", "turns"),
        ("cases: [{inputs: a, evaluators: [{python: nowhere_at_all:x}]}]", "nowhere_at_all"),
        ("cases: [{inputs: a, evaluators: [{judge: {rubric: ' '}}]}]", "needs a rubric"),
        ("cases: [{inputs: a, name: x}, {inputs: b, name: x}]", "two cases are named 'x'"),
        ("cases: [{inputs: a, metadata: [1]}]", "'metadata' must be a mapping"),
        ("cases: [{inputs: a", "not YAML"),
    ],
)
def test_a_wrong_file_is_an_error_naming_the_file_and_place(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(EvalError) as caught:
        Dataset.load(path)
    assert said in str(caught.value)
    assert str(path) in str(caught.value)


def test_files_that_are_not_datasets(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="cannot read the dataset"):
        Dataset.load(tmp_path / "missing.yaml")
    odd = tmp_path / "cases.txt"
    odd.write_text("cases: []")
    with pytest.raises(EvalError, match=r"\.yaml, \.yml or \.json"):
        Dataset.load(odd)
    binary = tmp_path / "cases.json"
    binary.write_bytes(b"\xff\xfe{")
    with pytest.raises(EvalError, match="not UTF-8"):
        Dataset.load(binary)
    broken = tmp_path / "broken.json"
    broken.write_text('{"cases": [')
    with pytest.raises(EvalError, match="not JSON"):
        Dataset.load(broken)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(MAX_DATASET_BYTES + 1)
    with pytest.raises(EvalError, match="over the"):
        Dataset.load(huge)


def test_a_dataset_in_python_checks_its_cases() -> None:
    with pytest.raises(EvalError, match="no cases"):
        Dataset([])
    with pytest.raises(EvalError, match="is not a Case"):
        Dataset(["hi"])  # type: ignore[list-item]
    data = Dataset([Case("a"), Case("b", name="second"), Case("c")])
    assert data.names == ("case 1", "second", "case 3")


def test_evaluators_refuse_bad_options_where_written() -> None:
    with pytest.raises(ValueError, match="an expected call"):
        ToolCalls([42])
    with pytest.raises(ValueError, match="name and input"):
        ToolCalls([{"name": "a", "args": {}}])
    with pytest.raises(ValueError, match="threshold"):
        Judge("be right", threshold=2)
