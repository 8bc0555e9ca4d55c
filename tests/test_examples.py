"""The numbered examples in ``examples/`` run as their first lines say and print what a reader
should see; the README lists them in order. Each runs as a user runs it: its own process, from
the repository root. The durable one runs against a real Temporal server in
``tests/durable/test_example_durable.py``."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import parts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NUMBERED = sorted(p.name for p in EXAMPLES.glob("[0-9][0-9]_*.py"))
TESTED_ELSEWHERE = {"08_durable_run.py": "tests/durable/test_example_durable.py"}


def _run(name: str, timeout: float = 120, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, f"examples/{name}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no warning a reader would see
    return done.stdout


def _docstring(name: str) -> str:
    doc = ast.get_docstring(ast.parse((EXAMPLES / name).read_text()))
    assert doc, f"examples/{name} has no docstring"
    return doc


# -- the set ---------------------------------------------------------------------------------


def test_the_examples_are_numbered_in_order_with_nothing_missing() -> None:
    assert [int(name[:2]) for name in NUMBERED] == list(range(1, len(NUMBERED) + 1))
    assert len(NUMBERED) >= 9


@pytest.mark.parametrize("name", NUMBERED)
def test_each_example_says_what_it_shows_and_how_to_run_it(name: str) -> None:
    doc = _docstring(name)
    summary = doc.split("\n\n", 1)[0]
    assert 1 <= len(summary.splitlines()) <= 3, summary
    commands = [line.strip() for line in doc.splitlines() if line.startswith("    .venv/bin/")]
    assert any(f"examples/{name}" in command for command in commands), doc


@pytest.mark.parametrize("name", NUMBERED)
def test_each_example_uses_the_public_api_only(name: str) -> None:
    """No internal module: the names come from ``tether`` and its public modules, as the docs
    use them (the ``tether`` package docstring lists them)."""
    import tether

    public = set(re.findall(r"``(tether(?:\.\w+)?)``", tether.__doc__ or "")) | {"tether"}
    tree = ast.parse((EXAMPLES / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tether"):
            assert node.module in public, f"examples/{name} imports {node.module}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith("tether.") or alias.name in public, alias.name


def test_the_readme_lists_every_example_in_order() -> None:
    readme = (ROOT / "README.md").read_text()
    listed = re.findall(r"^\d+\. `(\d\d_\w+\.py)`", readme, re.M)
    assert listed == NUMBERED


def test_every_example_has_its_test() -> None:
    here = Path(__file__).read_text()
    for name in NUMBERED:
        where = TESTED_ELSEWHERE.get(name)
        text = (ROOT / where).read_text() if where else here
        assert f'"{name}"' in text or f"examples/{name}" in text, name


# -- the local model -------------------------------------------------------------------------


@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_01_first_agent_calls_its_tool_on_the_local_model() -> None:
    """A real model's run: it ended, the stock tool was called for apples, and the answer gives
    the tool's result (37, which the model cannot know otherwise)."""
    from tether.local import LocalModelUnavailable, check_platform

    try:
        check_platform()
    except LocalModelUnavailable as exc:
        parts.absent("the local model", str(exc))
    lines = _run("01_first_agent.py", timeout=900).splitlines()
    calls = [line for line in lines if line.startswith("-> stock(")]
    assert calls and "apple" in calls[0].lower(), lines
    assert "<- 37" in lines
    assert "37" in lines[-1] and not lines[-1].startswith(("->", "<-")), lines


@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_10_evaluate_on_the_local_model(tmp_path: Path) -> None:
    """The evaluation example on the real model: every case ran once to its end and every
    evaluator gave its outcome (the figures may vary; the report's shape may not), and the
    command line reads the saved report back as its baseline."""
    from tether.evals import Report
    from tether.local import LocalModelUnavailable, check_platform

    try:
        check_platform()
    except LocalModelUnavailable as exc:
        parts.absent("the local model", str(exc))
    saved = tmp_path / "report.json"
    out = _run("10_evaluate.py", 900, str(saved))
    assert f"saved {saved}" in out
    report = Report.load(saved)
    assert [case.name for case in report.cases] == ["apples", "pears", "plums"]
    wanted = {
        "apples": ["within", "tool_calls", "contains"],
        "pears": ["within", "tool_calls", "regex"],
        "plums": ["within", "tool_calls", "judge"],
    }
    for case in report.cases:
        (run,) = case.runs
        assert list(run.outcomes) == wanted[case.name]
        assert not any(outcome.error for outcome in run.outcomes.values()), run.outcomes
        assert run.error is None, run.error
        assert run.trajectory["stop_reason"] == "end_turn"
        assert run.trajectory["iterations"] >= 1 and run.trajectory["input_tokens"] > 0
        assert isinstance(run.output, str) and run.output
    judged = report.case("plums").runs[0].outcomes["judge"]
    assert judged.score is not None and judged.reason
    assert "cases passed" in out


# -- scripted models -------------------------------------------------------------------------


def test_02_tools_and_typed_output() -> None:
    out = _run("02_tools_and_typed_output.py").splitlines()
    assert out[0] == "Quote(item='pears', quantity=12, total_eur=7.8)"
    assert out[1] == "12 pears cost 7.80 EUR"
    assert out[2].startswith("model calls: 3")
    assert "- total_eur: Input should be a valid number, unable to parse string as a number" in out


def test_03_chat_resumed() -> None:
    out = _run("03_chat_resumed.py").splitlines()
    assert "agent: Nice to meet you. (1 message in my view)" in out
    assert "agent: You are Ann. (3 messages in my view)" in out  # the stored history was sent
    assert out[-1] == "stored: chat-1, 4 messages"


def test_04_approvals() -> None:
    out = _run("04_approvals.py").splitlines()
    assert out == [
        "waiting: del-1 delete_file({'path': 'old.log'})",
        "waiting: del-2 delete_file({'path': 'report.pdf'})",
        "deleted old.log; Tool call denied: keep the report",
    ]


def test_05_agents_together() -> None:
    out = _run("05_agents_together.py").splitlines()
    assert out == [
        "  [researcher] iteration 1",
        "  [researcher] Oslo has 717,710 people.",
        "writer: Oslo is home to about 718,000 people.",
        "  handoff: triage -> billing",
        "answer: Refunded order A1.",
        "written by: ['triage', 'billing', 'billing']",
    ]


def test_06_mcp_server() -> None:
    if not _has_module("mcp_server_time"):
        parts.absent("mcp-server-time")
    out = _run("06_mcp_server.py").splitlines()
    assert out[0] == "<- get_current_time: Asia/Tokyo"
    assert out[1] == "offered: get_current_time, convert_time"
    assert re.fullmatch(r"In Tokyo it is \w+day, \d\d:\d\d\.", out[2]), out


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_07_serve_answers_a_real_request(tmp_path: Path) -> None:
    """``tether serve --agent examples/07_serve.py:agent`` as the docstring says, on a free
    port: one run over ``POST /agui`` calls the tool and streams the answer, and is stored."""
    command = [sys.executable, "-m", "tether.cli", "serve", "--agent", "examples/07_serve.py:agent"]
    command += ["--port", "0", "--store", str(tmp_path / "chats.db")]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        port = re.search(r"127\.0\.0\.1:(\d+)/ ", first)
        assert port, first
        base = f"http://127.0.0.1:{port.group(1)}"
        question = {"messages": [{"id": "u1", "role": "user", "content": "one two three four"}]}
        with httpx.Client(base_url=base, timeout=30) as http:
            assert http.get("/api/agent").json()["agent"] == "word-counter"
            with http.stream("POST", "/agui", json=question) as answer:
                assert answer.status_code == 200
                events = [
                    json.loads(line[6:])
                    for line in answer.iter_lines()
                    if line.startswith("data: ")
                ]
            sessions = http.get("/api/sessions").json()
        kinds = [e["type"] for e in events]
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED", kinds
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"] == "4"
        text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "Your message has 4 words."
        assert [s["messages"] for s in sessions] == [4]
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 0, process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_09_prompty() -> None:
    out = _run("09_prompty.py").splitlines()
    assert out == [
        "order-status: Answers a customer's question about an order, looking the order up first.",
        "Hi Ann, order A-1042 was shipped on Monday, arriving Thursday.",
        "  system: Greet the customer by name: Ann.",
        "  user: Where is my order A-1042?",
    ]
