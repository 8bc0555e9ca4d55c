"""``tether eval`` as a user runs it, in a real process: the table on stdout, the report as
JSON and HTML, exit 0 when every case passes, 1 on a failed case or a regression against the
baseline, 2 for a dataset or agent that cannot be used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = textwrap.dedent(
    """
    import os
    from tether import Agent, tool
    from tether.testing import Call, Reply, ScriptedTransport

    @tool
    def get_weather(city: str) -> str:
        "The weather in a city."
        return "sunny" if os.environ.get("WEATHER") != "broken" else "no data"

    def model(request):
        last = request.messages[-1]
        if last.tool_results:
            return Reply(f"It is {last.tool_results[0].content}.")
        return Reply(tool_calls=[Call("get_weather", {"city": last.text.split()[-1]})])

    agent = Agent(system="", transport=ScriptedTransport([], then=model), tools=[get_weather])

    def shout(inputs):
        return inputs.upper()
    """
)
CASES = textwrap.dedent(
    """
    cases:
      - name: oslo
        inputs: Weather in Oslo
        evaluators:
          - contains: sunny
          - tool_calls: [{name: get_weather, input: {city: Oslo}}]
      - name: rome
        inputs: Weather in Rome
        evaluators: [{regex: 'sunny\\.$'}]
    """
)


def _eval(where: Path, *args: str, weather: str = "ok") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WEATHER": weather, "COLUMNS": "160"}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "eval", *args],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_a_passing_evaluation_exits_0_and_writes_its_report(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    done = _eval(
        tmp_path,
        "cases.yaml",
        "--agent",
        "myagent:agent",
        "--repeat",
        "2",
        "--json",
        "report.json",
        "--html",
        "report.html",
    )
    assert done.returncode == 0, done.stderr
    assert "oslo" in done.stdout and "2/2" in done.stdout
    assert "2/2 cases passed" in done.stdout
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["repeat"] == 2 and saved["summary"]["passed_all"] is True
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    assert done.stderr == ""  # no bar: stderr is not a terminal


def test_a_failed_case_or_a_regression_exits_1(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    assert (
        _eval(tmp_path, "cases.yaml", "--agent", "myagent:agent", "--json", "base.json").returncode
        == 0
    )
    broken = _eval(
        tmp_path,
        "cases.yaml",
        "--agent",
        "myagent:agent",
        "--baseline",
        "base.json",
        weather="broken",
    )
    assert broken.returncode == 1
    assert "oslo: passed 100% of runs before, 0% now" in broken.stderr
    assert "regressed" in broken.stdout
    failing = _eval(tmp_path, "cases.yaml", "--agent", "myagent:agent", weather="broken")
    assert failing.returncode == 1
    assert "oslo: 0/1 runs passed (contains: missing 'sunny'" in failing.stderr


def test_a_function_is_evaluated_too(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(AGENT)
    (tmp_path / "cases.json").write_text('{"cases": [{"inputs": "hi", "expected": "HI"}]}')
    done = _eval(tmp_path, "cases.json", "--agent", "myagent:shout")
    assert done.returncode == 0, done.stderr


def test_what_cannot_be_used_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(AGENT + "\nnumber = 3\n")
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "bad.yaml").write_text("cases: [{input: x}]")
    for args, said in (
        (["bad.yaml", "--agent", "myagent:agent"], "unknown key(s) input"),
        (["none.yaml", "--agent", "myagent:agent"], "cannot read the dataset"),
        (["cases.yaml", "--agent", "myagent:number"], "not an Agent or a function"),
        (["cases.yaml", "--agent", "nomodule:agent"], "no module named 'nomodule'"),
        (["cases.yaml", "--agent", "myagent:agent", "--baseline", "cases.yaml"], "not a report"),
        (["cases.yaml", "--agent", "myagent:agent", "--repeat", "0"], "at least 1"),
        (["cases.yaml"], "--agent"),
    ):
        done = _eval(tmp_path, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert said in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_on_a_terminal_a_progress_bar_is_drawn_on_stderr(tmp_path: Path) -> None:
    import pty

    (tmp_path / "myagent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    main, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tether.cli", "eval", "cases.yaml", "--agent", "myagent:agent",
             "--repeat", "3"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=terminal, text=True, timeout=120,
            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"}, check=False,
        )  # fmt: skip
        os.close(terminal)
        drawn = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(main)
    assert done.returncode == 0, drawn
    text = drawn.decode(errors="replace")
    assert "6/6" in text and "0 failed" in text  # runs done / all, drawn before it is cleared
    no_bar = _eval(tmp_path, "cases.yaml", "--agent", "myagent:agent", "--no-progress")
    assert no_bar.stderr == ""
