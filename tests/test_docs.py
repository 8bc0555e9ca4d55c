"""The README quickstart and the examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], **kw: object) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
        **kw,  # type: ignore[arg-type]
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_readme_quickstart_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    lines = code.group(1).strip().splitlines()
    assert len(lines) <= 15
    assert _run(["-c", code.group(1)]).strip() == "2 + 3 = 5"


def test_readme_tracing_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Tracing", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)])
    assert "invoke_agent weather" in out
    assert out.count("execute_tool forecast") == 2 and out.count("chat ScriptedTransport") == 2


def test_readme_middleware_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Middleware", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).split()
    assert out == ["model", "call", "1", "model", "call", "2", "Not", "today."]


def test_readme_typed_output_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Typed output", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    assert _run(["-c", code.group(1)]).split() == ["Oslo", "717710", "2"]


def test_readme_as_tool_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Agents as tools", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out[0].startswith("[researcher]") and out[-1] == "About 718,000. 120"


def test_readme_handoffs_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Handoffs", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ["Refunded A1.", "['triage', 'billing', 'billing']"]


def test_readme_limits_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Limits", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    assert _run(["-c", code.group(1)]).split() == ["total_tokens", "1600", "1500"]


def test_readme_approval_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Approval", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ["[('d1', 'delete', {'path': 'old.txt'})]", "Deleted old.txt; a.txt stays."]


def test_readme_fallback_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Fallback models", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ["Hello from the spare.", "Hello from the spare.", "1 2"]


def test_readme_long_conversations_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Long conversations", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == [
        "summarised 5 messages, kept 2",
        "What the book is about.",
        "Summary of the conversation so far:",
        "11 messages stored; 1 summary",
    ]


def test_readme_session_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Sessions", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ['-> get_weather({"city": "Paris"})', "22 degrees in Paris. 0"]


def test_readme_prompty_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Prompty", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ['get_weather {"city": "Paris"}', "['22 degr', 'ees in ', 'Paris.'] 5"]


def test_readme_skill_agent_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## SkillAgent", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert [line.split(" :: ")[1] for line in out[:4]] == [
        "ValidationErrorObservation",
        "CallSkillAction",
        "SkillObservation",
        "FinalAnswerAction",
    ]
    assert "error_type: json_syntax" in out[0] and out[4] == "Alice lives in Taipei."


def test_readme_durable_example_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Durable runs", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    out = _run(["-c", code.group(1)]).splitlines()
    assert out == ["Paid.", "paid 5 to ann (key pay-ann:1:call_1)"]


def test_quickstart_example_runs() -> None:
    out = _run([str(ROOT / "examples" / "quickstart.py")])
    assert "-> convert_km({'km': 42.195})" in out
    assert "<- weekday: Sunday" in out
    assert out.strip().endswith("A marathon is 26.219 miles, and 2026-11-22 is a Sunday.")
