"""``tether trace`` on hostile input: a bad line is left out (and counted) while the valid spans
are still shown; what is not a regular file is refused at once, in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.cli import main, trace_file
from tether.cli.trace_file import load_trace, walk

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and devices are POSIX")


def span(name: str, span_id: str, parent: str | None = None, start: float = 1.0) -> str:
    record = {
        "v": 1,
        "trace": "t",
        "span": span_id,
        "parent": parent,
        "kind": "tool" if parent else "run",
        "name": name,
        "start": start,
        "end": start + 1,
        "attributes": {},
    }
    return json.dumps(record) + "\n"


def a_trace(path: Path, *bad: str) -> Path:
    path.write_text(
        span("invoke_agent good", "r") + "".join(bad) + span("execute_tool ok", "c", "r")
    )
    return path


def test_a_deeply_nested_line_is_left_out_and_the_rest_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = '{"v": 1, "attributes": ' + "[" * 200_000 + "]" * 200_000 + "}\n"
    trace = a_trace(tmp_path / "t.jsonl", deep)
    assert main(["trace", str(trace)]) == 0
    out, err = capsys.readouterr()
    assert "invoke_agent good" in out and "execute_tool ok" in out
    assert err.splitlines() == ["note: 1 line(s) were not spans and were left out"]


def test_a_line_over_the_cap_is_left_out_and_the_rest_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace_file, "MAX_LINE_BYTES", 1000)
    trace = a_trace(tmp_path / "t.jsonl", '{"v": 1, "name": "' + "x" * 5000 + '"}\n')
    roots, skipped = load_trace(trace)
    assert [s.name for _, s in walk(roots)] == ["invoke_agent good", "execute_tool ok"]
    assert skipped == 1


def test_spans_that_are_each_others_parents_are_still_shown(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(span("a", "a", "b", 1.0) + span("b", "b", "a", 2.0))
    roots, _ = load_trace(trace)
    assert sorted(s.name for _, s in walk(roots)) == ["a", "b"]


def _limited_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def tether_trace(target: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "trace", target],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
        preexec_fn=_limited_memory,  # a reader that does not stop must not take the machine
    )


@posix_only
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    proc = tether_trace(str(fifo), tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"tether: error: cannot read the trace: {fifo} is not a regular file"
    ]


@posix_only
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused(tmp_path: Path) -> None:
    proc = tether_trace("/dev/zero", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "tether: error: cannot read the trace: /dev/zero is not a regular file"
    ]
