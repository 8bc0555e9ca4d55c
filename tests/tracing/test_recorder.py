"""``Recorder`` writes every run as JSON lines without OpenTelemetry; ``tether trace`` reads
them back as a tree and as a page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded import record

from tether.cli import main
from tether.cli.trace_file import load_trace, summarize, walk


async def test_a_run_is_recorded_as_spans_under_one_root(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await record(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["v"] for line in lines} == {1}
    assert len({line["trace"] for line in lines}) == 1
    (run,) = [line for line in lines if line["kind"] == "run"]
    assert run["name"] == "invoke_agent forecaster" and run["parent"] is None
    assert lines.index(run) == len(lines) - 1  # children end before their parent
    others = [line for line in lines if line is not run]
    assert {line["parent"] for line in others} == {run["span"]}
    assert sorted(line["name"] for line in others) == [
        "chat ScriptedTransport",
        "chat ScriptedTransport",
        "execute_tool failing",
        "execute_tool weather",
        "execute_tool weather",
    ]
    (broken,) = [line for line in lines if line["name"] == "execute_tool failing"]
    assert broken["status"] == "error" and broken["error"] == "tool_error"
    arguments = {
        line["attributes"]["gen_ai.tool.call.arguments"]
        for line in others
        if line["name"] == "execute_tool weather"
    }
    assert arguments == {'{"city": "Oslo"}', '{"city": "Lima"}'}
    assert "abcd1234efgh" not in path.read_text()  # redacted from the captured prompt
    roots, skipped = load_trace(path)
    assert skipped == 0 and len(roots) == 1 and len(list(walk(roots))) == 6
    summary = summarize(roots)
    assert summary.tokens == {"ScriptedTransport": [320, 40]}  # no model name: the span's


async def test_content_can_be_left_out(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await record(path, capture_content=False)
    text = path.read_text()
    assert "Oslo" not in text and "weather" in text


async def test_tether_trace_prints_the_tree_and_writes_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.jsonl"
    await record(path)
    with path.open("a") as f:
        f.write('not json\n{"v": 99}\n')
    assert main(["trace", str(path), "--price", "ScriptedTransport=3:15"]) == 0
    out, err = capsys.readouterr()
    assert "invoke_agent forecaster" in out and "execute_tool weather" in out
    assert "2 model call(s), 3 tool call(s), 1 error(s)" in out
    assert "$0.0016" in out  # 320 in at $3 and 40 out at $15 per million
    assert "2 line(s) were not spans" in err
    html = tmp_path / "trace.html"
    assert main(["trace", str(path), "--html", str(html)]) == 0
    page = html.read_text()
    assert page.count('<details class="row') == 6
    assert "http" not in page.replace("http://www.w3.org", "")  # nothing fetched from anywhere


def test_a_bad_price_or_a_missing_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(tmp_path / "none.jsonl")]) == 1
    assert "cannot read the trace" in capsys.readouterr().err
    assert main(["trace", str(tmp_path / "x"), "--price", "gpt=cheap"]) == 2
    assert "MODEL=IN:OUT" in capsys.readouterr().err
