"""What ``tether run`` and ``tether chat`` show while a turn waits for the model: the phases of a
model that starts on first use (a ``ReportsProgress`` transport, as the local model is), then
"waiting for the first token" once that takes over a second. Off a terminal these are plain
``tether: ...`` lines on stderr, one per phase; on a terminal one spinner line with the elapsed
seconds, cleared before the answer. Never on stdout: ``--json`` stays JSON lines.

Each test runs a real ``tether`` process (on a pseudo-terminal for the spinner) with ``--agent``:
an agent file whose transport starts slowly as the local model does, then answers as scripted.
tests/cli/test_cli_phases_local.py does the same with the real local model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from test_cli_local_model import Terminal

CLOSED = "http://127.0.0.1:9/v1"  # the CLI's own agent would fail here, not answer
AGENT_SOURCE = textwrap.dedent(
    '''
    import asyncio
    import os

    from tether import Agent, Usage
    from tether.testing import Reply, ScriptedTransport
    from tether.transports import Phase

    LOADING = Phase("loading_model", "loading the model")
    LOAD = float(os.environ.get("TEST_LOAD_SECONDS", "0.5"))
    FIRST = float(os.environ.get("TEST_FIRST_TOKEN_SECONDS", "1.6"))


    class Starting:
        """Starts as the local model does (a phase, reported while it lasts) on the first call,
        then is slow to its first token on every call; answers as scripted."""

        def __init__(self):
            self.inner = ScriptedTransport([], then=Reply("The answer.", usage=Usage(3, 2)))
            self.listeners = []
            self.started = False

        def on_phase(self, listener):
            self.listeners.append(listener)
            return lambda: self.listeners.remove(listener)

        def tell(self, phase):
            for listener in list(self.listeners):
                listener(phase)

        async def stream(self, messages, tools, system):
            if not self.started:
                self.started = True
                self.tell(LOADING)
                await asyncio.sleep(LOAD)
                self.tell(LOADING.over())
            await asyncio.sleep(FIRST)
            async for event in self.inner.stream(messages, tools, system):
                yield event


    class Slow:
        """Any model that is slow to its first token (no phases of its own)."""

        def __init__(self):
            self.inner = ScriptedTransport([], then=Reply("Slowly.", usage=Usage(3, 2)))

        async def stream(self, messages, tools, system):
            await asyncio.sleep(FIRST)
            async for event in self.inner.stream(messages, tools, system):
                yield event


    starting = Agent("Be brief.", Starting())
    slow = Agent("Be brief.", Slow())
    fast = Agent("Be brief.", ScriptedTransport([], then=Reply("Quick.")))
    '''
)
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CLEAR = "\r\x1b[K"


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    path = tmp_path / f"starting_{uuid.uuid4().hex[:8]}.py"
    path.write_text(AGENT_SOURCE)
    return path


def tether(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TETHER_MODEL": CLOSED, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def test_run_says_each_phase_on_stderr_and_keeps_stdout_the_answer(agent_file: Path) -> None:
    done = tether("run", "--agent", f"{agent_file}:starting", "hi", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "tether: loading the model…",
        "tether: waiting for the first token…",
    ]
    lines = done.stdout.splitlines()
    assert lines[0] == "The answer."
    assert lines[1].startswith("1 iteration · 3 tokens in, 2 out · ")
    assert len(lines) == 2


def test_json_lines_stay_json_while_the_phases_go_to_stderr(agent_file: Path) -> None:
    spec = f"{agent_file}:starting"
    done = tether("run", "--agent", spec, "--json", "hi", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    assert events[-1]["type"] == "session_end" and events[-1]["error"] is None
    assert done.stderr.splitlines() == [
        "tether: loading the model…",
        "tether: waiting for the first token…",
    ]


def test_a_quick_model_adds_no_lines(agent_file: Path) -> None:
    done = tether("run", "--agent", f"{agent_file}:fast", "hi", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[0] == "Quick."


def test_chat_says_the_wait_once_per_turn(agent_file: Path, tmp_path: Path) -> None:
    done = tether(
        "chat",
        "--agent",
        f"{agent_file}:starting",
        "--store",
        str(tmp_path / "chats.db"),
        cwd=agent_file.parent,
        stdin="first\nsecond\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "tether: loading the model…",  # the first turn starts the model
        "tether: waiting for the first token…",
        "tether: waiting for the first token…",  # the second does not: it only waits
    ]
    assert done.stdout.count("The answer.") == 2
    assert "tether:" not in done.stdout


def spinner_lines(raw: str) -> list[str]:
    """What the spinner drew: each text between a clear and the next carriage return."""
    return re.findall(rf"\r\x1b\[K([{SPINNER}] [^\r\n\x1b]*)", raw)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_terminal_gets_a_spinner_with_the_phase_and_the_seconds(agent_file: Path) -> None:
    argv = [sys.executable, "-m", "tether.cli", "run", "--agent", f"{agent_file}:starting", "hi"]
    term = Terminal(argv, agent_file.parent)
    try:
        assert term.wait() == 0, term.text
    finally:
        term.close()
    raw = term.raw.decode()
    drawn = spinner_lines(raw)
    assert any(re.fullmatch(rf"[{SPINNER}] loading the model · 0 s", d) for d in drawn), drawn
    assert any(re.fullmatch(rf"[{SPINNER}] waiting for the first token · 1 s", d) for d in drawn)
    last = max(raw.rfind(d) for d in drawn)
    cleared = raw.find(CLEAR, last)
    answer = raw.find("The answer.")
    assert last < cleared < answer, repr(raw)  # the line is gone before the answer is written
    assert not spinner_lines(raw[answer:])
    assert "tether:" not in term.text  # no plain lines on a terminal


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_terminal_shows_the_wait_for_any_slow_model(agent_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "chats.db")
    argv = [sys.executable, "-m", "tether.cli", "chat", "--agent", f"{agent_file}:slow"]
    term = Terminal([*argv, "--store", store], agent_file.parent)
    try:
        term.expect(r"> ")
        term.send("hello\r")
        term.expect(r"Slowly\.")
        term.expect(r"> ")
        term.send("\x04")
        assert term.wait() == 0, term.text
    finally:
        term.close()
    drawn = spinner_lines(term.raw.decode())
    waits = [
        d for d in drawn if re.fullmatch(rf"[{SPINNER}] waiting for the first token · \d+ s", d)
    ]
    assert waits, drawn
    assert not any("loading" in d for d in drawn)  # this model reports no phases
