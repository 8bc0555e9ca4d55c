"""``tether run --trace FILE`` where FILE cannot be written: the answer is shown, the exit code is
the run's, and the failure is one ``warning:`` line on stderr (no traceback, no Python warning)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from rich.console import Console

from tether.cli.app import build_agent, command_run
from tether.cli.demo.tools import demo_tools
from tether.testing import Call, Reply, ScriptedTransport


def console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=200)


def text(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def test_an_unwritable_trace_is_one_warning_line_and_the_run_stands(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    trace = blocker / "run.jsonl"
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("calculate", {"expression": "6*7"})]), Reply("It is 42.")]
    )
    agent = build_agent(model, demo_tools(tmp_path), system="s", trace=trace)
    out, err = console(), console()
    opts = argparse.Namespace(json=False, verbose=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert command_run(opts, agent, out, err, "six times seven?") == 0
    assert seen == []  # the CLI says it itself, once
    assert "It is 42." in text(out)
    (line,) = text(err).splitlines()
    assert line.startswith(f"warning: the trace was not written to {trace}: ")
    assert line.endswith("the run went on without it")


# The CLI in a child process under a file size limit the trace crosses mid-run, as on a full
# disk (SIGXFSZ ignored: writes fail with EFBIG). The model is scripted.
CHILD = """
import resource, signal, sys
import tether.cli
from tether.testing import Call, Reply, ScriptedTransport

calls = [Call("calculate", {"expression": f"{i} * 1000"}) for i in range(40)]
script = ScriptedTransport([Reply(tool_calls=calls), Reply("All computed.")])
tether.cli.make_transport = lambda opts: script
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, resource.RLIM_INFINITY))
sys.exit(tether.cli.main(["run", "--trace", sys.argv[1], "go"]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_tether_run_on_a_full_disk_keeps_the_answer(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "All computed." in proc.stdout
    (line,) = proc.stderr.splitlines()  # one line: no traceback, nothing from a finalizer
    assert line.startswith(f"warning: the trace was not written to {trace}: File too large")
    assert all(json.loads(span)["v"] == 1 for span in trace.read_text().splitlines())
