"""A trace sink that cannot write never fails the run: the failure is reported once, later
spans are dropped, the answer stands. Tested on a real full filesystem (a child process under
``RLIMIT_FSIZE``), an unwritable path, and a ``write`` that writes a few bytes at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from recorded import SPANS, record

from tether import Agent, Tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import Recorder, TraceWriteWarning

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

LIMIT = 3000  # bytes the child may write to any file: room for a few spans, not all

# The child: a run with many tool calls (one span line each), under a file size limit that the
# trace crosses mid-run. SIGXFSZ is ignored, so a write past the limit fails with EFBIG, as on
# a full disk.
CHILD = """
import asyncio, json, resource, signal, sys, warnings
from tether import Agent, Tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import Recorder

def echo(text: str) -> str:
    return text

calls = [Call("echo", {"text": f"call {i} " + "x" * 200}) for i in range(30)]
model = ScriptedTransport([Reply(tool_calls=calls), Reply("the answer")])
agent = Agent(
    "sys", model, tools=[Tool("echo", echo, "Echo the text.")], middleware=[Recorder(sys.argv[1])]
)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    answer = asyncio.run(agent.run("go"))
reported = [(type(w.message).__name__, str(w.message)) for w in seen]
print(json.dumps({"answer": answer, "warnings": reported}))
"""


@posix_only
def test_a_full_disk_loses_spans_not_the_run(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(LIMIT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no traceback, not even an ignored one in a finalizer
    result = json.loads(proc.stdout)
    assert result["answer"] == "the answer"
    assert len(result["warnings"]) == 1  # once, however many spans were dropped
    kind, message = result["warnings"][0]
    assert kind == "TraceWriteWarning" and str(path) in message
    data = path.read_bytes()
    assert 0 < len(data) <= LIMIT
    assert data.endswith(b"\n")  # only whole lines: the one that did not fit is not left in
    assert all(json.loads(line)["v"] == 1 for line in data.splitlines())


def echo(text: str) -> str:
    return text


async def test_an_unwritable_trace_path_loses_spans_not_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    recorder = Recorder(blocker / "trace.jsonl")
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("echo", {"text": "a"})]), Reply("done"), Reply("again")]
    )
    agent = Agent("sys", model, tools=[Tool("echo", echo)], middleware=[recorder])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert await agent.run("go") == "done"
        assert await agent.run("again") == "again"  # a later run: nothing reported again
    assert [type(w.message) for w in seen] == [TraceWriteWarning]
    assert isinstance(recorder.failure, OSError)
    assert str(blocker / "trace.jsonl") in str(seen[0].message)


async def test_the_failure_goes_to_on_failure_instead_of_a_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    failures: list[BaseException] = []
    recorder = Recorder(blocker / "trace.jsonl", on_failure=failures.append)
    agent = Agent("sys", ScriptedTransport([Reply("done")]), middleware=[recorder])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would fail the run here
        assert await agent.run("go") == "done"
    assert len(failures) == 1 and failures[0] is recorder.failure


async def test_a_lone_surrogate_in_content_is_written_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    model = ScriptedTransport([Reply("half a pair: \ud800")])
    agent = Agent("sys", model, middleware=[Recorder(path)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert await agent.run("go") == "half a pair: \ud800"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(json.loads(line)["v"] == 1 for line in lines)


async def test_short_writes_are_continued_until_the_line_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.write
    sizes: list[int] = []

    def short(fd: int, data: bytes | memoryview) -> int:
        written = real(fd, bytes(data[:7]))
        sizes.append(written)
        return written

    monkeypatch.setattr(os, "write", short)
    path = tmp_path / "trace.jsonl"
    await record(path)
    monkeypatch.undo()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == SPANS and all(json.loads(line)["v"] == 1 for line in lines)
    assert len(sizes) > SPANS  # the lines did go out 7 bytes at a time
