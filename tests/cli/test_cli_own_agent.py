"""``--agent MODULE:ATTR`` (or ``FILE.py:ATTR``) on ``tether run`` and ``tether chat``: your own
agent, loaded as ``tether serve`` and ``tether worker`` load one, run from a real ``tether``
process. The options that shape a run apply to it; those that make the CLI's own agent (model,
system prompt, tools) are refused with a line saying why; no option is silently ignored.

The agent file is written by each test; its model is scripted, and ``$TETHER_MODEL`` points at a
closed port, so a run that fell back to the CLI's own agent would fail instead of answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tether.cli import main

CLOSED = "http://127.0.0.1:9/v1"  # the CLI's own agent would fail here, not answer
AGENT_SOURCE = textwrap.dedent(
    '''
    from tether import Agent, Usage, tool
    from tether.testing import Call, Reply, ScriptedTransport


    @tool
    def shout(text: str) -> str:
        """Upper-case some text."""
        return text.upper()


    def answer(request):
        """Shouts the user's words with the tool, then answers with what it gave back."""
        results = request.messages[-1].tool_results
        if results:
            return Reply(f"MY AGENT SAYS {results[0].content}", usage=Usage(5, 2))
        shouted = Call("shout", {"text": request.messages[-1].text})
        return Reply(tool_calls=[shouted], usage=Usage(3, 1))


    agent = Agent("You shout.", ScriptedTransport([], then=answer), tools=[shout])
    asking = agent.copy(approval={"shout"})  # its own approval: tether run cannot ask


    def give_up(request):
        return Reply("Error: nothing found.", tool_calls=[Call("shout", {"text": "x"})])


    erring = Agent("s", ScriptedTransport([], then=give_up), tools=[shout], max_iterations=1)
    NOT_AN_AGENT = 42
    '''
)


@pytest.fixture(autouse=True)
def _no_model_of_the_clis_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_MODEL", CLOSED)


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    path = tmp_path / f"my_agent_{uuid.uuid4().hex[:8]}.py"
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


def test_run_runs_your_own_agent(agent_file: Path) -> None:
    done = tether("run", "--agent", f"{agent_file}:agent", "hi there", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == '→ shout(text="hi there")'
    assert lines[1] == "← shout: HI THERE"
    assert lines[2] == "MY AGENT SAYS HI THERE"
    assert lines[3].startswith("2 iterations · 8 tokens in, 3 out · ")
    assert done.stderr == ""


def test_run_your_own_agent_by_module_name_with_json(agent_file: Path) -> None:
    spec = f"{agent_file.stem}:agent"  # importable from the current directory
    done = tether("run", "--agent", spec, "--json", "quiet", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    text = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert text == "MY AGENT SAYS QUIET" and events[-1]["type"] == "session_end"


def test_chat_with_your_own_agent(agent_file: Path, tmp_path: Path) -> None:
    done = tether(
        "chat",
        "--agent",
        f"{agent_file}:agent",
        "--store",
        str(tmp_path / "chats.db"),
        "--session",
        "mine",
        cwd=agent_file.parent,
        stdin="first words\n/tools\nsecond words\n",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"tether chat · agent {agent_file}:agent · 1 tool · ")
    assert "MY AGENT SAYS FIRST WORDS" in out and "MY AGENT SAYS SECOND WORDS" in out
    assert "shout  Upper-case some text." in out  # /tools lists the agent's tools, no demo ones
    assert "calculate" not in out
    assert done.stderr == ""


def test_the_options_that_shape_a_run_apply_to_your_agent(agent_file: Path) -> None:
    trace = agent_file.parent / "run.jsonl"
    spec = f"{agent_file}:agent"
    done = tether("run", "--agent", spec, "--trace", str(trace), "hi", cwd=agent_file.parent)
    assert done.returncode == 0, done.stderr
    names = [json.loads(line)["name"] for line in trace.read_text().splitlines()]
    assert "execute_tool shout" in names and any(n.startswith("invoke_agent") for n in names)
    # one model call allowed: the agent asks for its tool, and the run stops there
    cut = tether("run", "--agent", spec, "--max-iterations", "1", "hi", cwd=agent_file.parent)
    assert cut.returncode == 1
    assert "max_iterations=1" in cut.stderr.splitlines()[-1]


def test_approve_applies_to_your_agent_in_chat(agent_file: Path, tmp_path: Path) -> None:
    done = tether(
        "chat",
        "--agent",
        f"{agent_file}:agent",
        "--approve",
        "shout",
        "--store",
        str(tmp_path / "chats.db"),
        cwd=agent_file.parent,
        stdin="wake up\ny\n",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[2:]  # after the greeting
    assert lines == [
        '> shout(text="wake up") waits for your approval',
        'run it? [y/N, or say why not] → shout(text="wake up")',
        "← shout: WAKE UP",
        "MY AGENT SAYS WAKE UP",
        lines[4],  # the one summary: the whole turn, after the answer
        "> ",
    ]
    assert lines[4].startswith("2 iterations · 8 tokens in, 3 out · ")


def test_run_says_when_your_agent_waits_for_an_approval_it_cannot_ask_for(
    agent_file: Path,
) -> None:
    done = tether("run", "--agent", f"{agent_file}:asking", "hi", cwd=agent_file.parent)
    assert done.returncode == 1
    assert done.stdout == ""  # no summary of a turn that is not over
    assert done.stderr.splitlines() == [
        'tether: error: shout(text="hi") waits for approval, which tether run cannot give: '
        f"chat with the agent instead (tether chat --agent {agent_file}:asking)"
    ]


def test_tether_error_lines_are_told_apart_from_the_models_own_error_text(
    agent_file: Path,
) -> None:
    done = tether("run", "--agent", f"{agent_file}:erring", "hi", cwd=agent_file.parent)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "Error: nothing found."  # the model's words, as said
    (line,) = done.stderr.splitlines()
    assert line.startswith("tether: error: the agent reached max_iterations=1")


@pytest.mark.parametrize(
    ("option", "command"),
    [
        (["--model", "openai:gpt-4.1"], "run"),
        (["--system", "Be brief."], "run"),
        (["--temperature", "0.5"], "run"),
        (["--max-tokens", "100"], "chat"),
        (["--no-stream"], "chat"),
        (["--tools", "x.py:y"], "run"),
        (["--no-demo-tools"], "chat"),
        (["--root", "."], "run"),
    ],
)
def test_options_that_make_the_clis_own_agent_are_refused(
    agent_file: Path, option: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--agent", f"{agent_file}:agent", *option]
    assert main([*argv, "hello"] if command == "run" else argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"tether: error: {option[0]} does not apply with --agent {agent_file}:agent: "
    )
    assert "brings its own model, system prompt and tools" in line


def test_a_refusal_from_a_real_process_runs_nothing(agent_file: Path) -> None:
    done = tether(
        "run", "--agent", f"{agent_file}:agent", "--model", "openai:gpt-4.1", "hi",
        cwd=agent_file.parent,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("tether: error: --model does not apply with --agent ")


DURABLE = ["run", "--durable", "--agent", "{file}:agent", "--task-queue", "q"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--agent", "{file}:NOT_AN_AGENT", "hi"], "a int, not an Agent"),
        (["chat", "--agent", "{file}:nothing"], "has no attribute 'nothing'"),
        (["run", "--agent", "missing_file.py:agent", "hi"], "no such file"),
        (["run", "--agent", "{file}:agent", "--agent", "{file}:agent", "hi"], "one --agent"),
        (["run", "--task-queue", "q", "hi"], "--task-queue applies only with --durable"),
        (["run", "--address", "h:1", "hi"], "--address applies only with --durable"),
        (["run", "--id", "r1", "hi"], "--id applies only with --durable"),
        (["run", "x.prompty", "--agent", "{file}:agent"], "--agent does not apply to a .prompty"),
        (
            [*DURABLE, "--trace", "t", "hi"],
            "--trace does not apply to a durable run",
        ),
        (
            [*DURABLE, "--model", "m", "hi"],
            "--model does not apply with --agent",
        ),
        (["serve", "--agent", "{file}:agent", "--tools", "x.py:y"], "--tools does not apply"),
    ],
)
def test_bad_agent_command_lines_are_usage_errors(
    agent_file: Path, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.format(file=agent_file) for a in argv]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("tether: error: ") and says in line, line
