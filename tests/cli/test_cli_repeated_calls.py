"""``--max-repeated-calls N``: the CLI's own agent, your own ``--agent`` (its other limits kept) and
a ``.prompty`` file end a turn at the N-th repeated tool call (the same tool, arguments and
result), with exit code 1 and a line that says so; a durable run refuses it (its agent runs in
the worker), and a count below 1 is a usage error. The model is scripted; the commands run
through ``main`` as the console script calls it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tether.cli import main
from tether.cli.own_agent import with_repeats
from tether.loop import Limits
from tether.prompty import registry
from tether.testing import Call, Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(60)

TOOLS = """\
from tether import tool

@tool
def stock(item: str) -> str:
    \"\"\"How many of an item the warehouse holds.\"\"\"
    return "12 in stock"
"""

AGENT = textwrap.dedent(
    """
    from tether import Agent, Limits
    from tether.testing import Call, Reply, ScriptedTransport
    from tools import stock


    def again(request):
        return Reply(tool_calls=[Call("stock", {"item": "chairs"})])


    agent = Agent("s", ScriptedTransport([], then=again), tools=[stock],
                  limits=Limits(tool_calls=50), max_iterations=6)
    """
)

PROMPTY = """\
---
name: stock
model:
  id: scripted
  provider: openai
  connection: {kind: reference, name: cli-repeats}
tools:
  - name: stock
    kind: function
    description: How many of an item the warehouse holds
    parameters:
      - {name: item, kind: string, required: true}
---
user:
How many chairs?
"""

STOPPED = (
    "tether: error: the run reached its repeated_calls limit (2): the model kept calling a tool "
    "again with the same arguments and result"
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "stock.prompty").write_text(PROMPTY)
    (tmp_path / "handlers.py").write_text("def stock(args):\n    return '12 in stock'\n")
    return tmp_path


def repeating(monkeypatch: pytest.MonkeyPatch) -> ScriptedTransport:
    same = Reply(tool_calls=[Call("stock", {"item": "chairs"})])
    model = ScriptedTransport([same, same, same, Reply("12 chairs.")])
    monkeypatch.setattr("tether.cli.make_transport", lambda opts, **_: model)
    return model


def stderr_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


def test_run_ends_at_the_nth_repeat(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = repeating(monkeypatch)
    argv = ["run", "--no-demo-tools", "--tools", "tools.py:stock", "How many chairs?"]
    assert main([*argv[:1], "--max-repeated-calls", "2", *argv[1:]]) == 1
    assert stderr_line(capsys) == STOPPED
    assert model.call_count == 3  # told once after the first repeat, stopped at the second
    assert "result has not changed" in model.requests[2].messages[-1].text
    model = repeating(monkeypatch)
    assert main(argv) == 0  # without the flag nothing is counted: the model answers
    assert capsys.readouterr().out.splitlines()[-2] == "12 chairs."
    assert model.call_count == 4


def test_chat_takes_it_too(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repeating(monkeypatch)
    store = str(folder / "chats.db")
    argv = ["chat", "--max-repeated-calls", "2", "--no-demo-tools", "--tools", "tools.py:stock"]
    monkeypatch.setattr("sys.stdin", _Lines("How many chairs?\n"))
    main([*argv, "--store", store])
    assert "repeated_calls limit (2)" in capsys.readouterr().err


def test_your_own_agent_takes_it_and_keeps_its_other_limits(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--agent", "my_agent.py:agent", "How many chairs?"]) == 1
    assert "max_iterations=6" in stderr_line(capsys)  # without the flag it loops to the end
    assert main(["run", "--agent", "my_agent.py:agent", "--max-repeated-calls", "2", "go"]) == 1
    assert stderr_line(capsys) == STOPPED
    both = with_repeats(Limits(tool_calls=50), 2)
    assert (both.tool_calls, both.repeated_calls) == (50, 2)
    assert with_repeats(None, 3) == Limits(repeated_calls=3)


def test_a_prompty_file_takes_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    same = Reply(tool_calls=[Call("stock", {"item": "chairs"})])
    model = ScriptedTransport([same, same, same, Reply("12 chairs.")])
    registry.register_connection("cli-repeats", model)
    try:
        argv = ["run", "stock.prompty", "--tools", "handlers.py:stock"]
        assert main([*argv, "--max-repeated-calls", "2"]) == 1
        assert "repeated_calls limit (2)" in stderr_line(capsys)
        assert model.call_count == 3
    finally:
        registry.clear_connections()


def test_a_durable_run_and_a_count_below_one_are_refused(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    durable = ["run", "--durable", "--agent", "my_agent.py:agent", "--task-queue", "q"]
    assert main([*durable, "--max-repeated-calls", "2", "hi"]) == 2
    assert stderr_line(capsys).startswith(
        "tether: error: --max-repeated-calls does not apply to a durable run"
    )
    assert main(["run", "--max-repeated-calls", "0", "hi"]) == 2
    assert "--max-repeated-calls" in capsys.readouterr().err


class _Lines:
    """A stdin that is not a terminal and holds ``text``."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)

    def readline(self) -> str:
        return self.lines.pop(0) if self.lines else ""

    def isatty(self) -> bool:
        return False

    def __iter__(self) -> Any:
        return iter(self.lines)
