"""Turns with a scripted model: JSON lines, the rich rendering, errors and exit codes, Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tether import Message, TextBlock, ToolResultBlock, ToolUseBlock, tool
from tether.cli.app import build_agent, command_run, describe_error, interruptible, run_turn
from tether.cli.chat import ChatSession
from tether.cli.demo.tools import demo_tools
from tether.cli.render import JsonRenderer, RichRenderer, TurnOutcome, format_call
from tether.errors import AuthenticationError, ConnectionFailedError, MaxIterationsError
from tether.events import ToolDispatch, ToolResult
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.types import Usage


def two_zone_script() -> ScriptedTransport:
    return ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("current_time", {"timezone": "Asia/Tokyo"}),
                    Call("current_time", {"timezone": "Europe/Paris"}),
                ],
                usage=Usage(120, 30),
            ),
            Reply("It is **late** in Tokyo and morning in Paris.", chunks=4, usage=Usage(200, 12)),
        ]
    )


def plain_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=80)


def output(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


async def test_json_lines_end_with_session_end() -> None:
    model = two_zone_script()
    agent = build_agent(model, demo_tools(Path()), system="s")
    buffer = io.StringIO()
    outcome = await run_turn(agent, "time in Tokyo and Paris?", JsonRenderer(buffer))
    events = [json.loads(line) for line in buffer.getvalue().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "session_end"
    assert kinds.count("tool_dispatch") == 2 and kinds.count("tool_result") == 2
    assert events[-1]["stop_reason"] == "end_turn"
    assert events[-1]["total_usage"]["input_tokens"] == 320
    results = [e for e in events if e["type"] == "tool_result"]
    assert "Asia/Tokyo" in results[0]["content"] and "Europe/Paris" in results[1]["content"]
    assert outcome.text == "It is **late** in Tokyo and morning in Paris."
    assert outcome.iterations == 2 and outcome.error is None


async def test_rich_plain_output_of_a_turn() -> None:
    console = plain_console()
    agent = build_agent(two_zone_script(), demo_tools(Path()), system="s")
    await run_turn(agent, "time?", RichRenderer(console))
    lines = output(console).splitlines()
    assert lines[0] == '→ current_time(timezone="Asia/Tokyo")'
    assert lines[1] == '→ current_time(timezone="Europe/Paris")'
    assert lines[2].startswith("← current_time: ") and lines[2].endswith("in Asia/Tokyo")
    assert lines[3].startswith("← current_time: ") and lines[3].endswith("in Europe/Paris")
    assert lines[4] == "It is **late** in Tokyo and morning in Paris."  # plain text off a terminal
    assert lines[5].startswith("2 iterations · 320 tokens in, 42 out · ")
    assert len(lines) == 6


def test_renderer_tool_call_and_result_lines() -> None:
    console = plain_console()
    renderer = RichRenderer(console, summary=False)
    renderer.begin()
    renderer.event(ToolDispatch("c1", "calculate", {"expression": "2 ** 10"}))
    renderer.event(ToolResult("c1", "calculate", False, "2 ** 10 = 1024\nsecond line"))
    renderer.event(
        ToolResult(
            "c2",
            "read_file",
            True,
            "Error: Tool 'read_file' failed: OutsideDirectoryError: '../x' is outside the allowed"
            " directory '/r'",
        )
    )
    renderer.end(TurnOutcome("", Usage(), 1, 0.1))
    assert output(console).splitlines() == [
        '→ calculate(expression="2 ** 10")',
        "← calculate: 2 ** 10 = 1024 … (+1 lines)",
        "← read_file: OutsideDirectoryError: '../x' is outside the allowed directory '/r'",
    ]


def test_renderer_errors_are_red_on_a_terminal() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=120)
    renderer = RichRenderer(console, summary=False)
    renderer.event(ToolDispatch("c1", "read_file", {"path": "../x"}))
    renderer.event(ToolResult("c1", "read_file", True, "Error: nope"))
    text = output(console)
    assert '\x1b[2m→ read_file(path="../x")' in text  # dim
    assert "\x1b[31m← read_file: nope" in text  # red


def test_markdown_on_a_terminal() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=60)
    agent = build_agent(
        ScriptedTransport([Reply("# Title\n\n- **bold** item", chunks=5)]), [], system="s"
    )
    asyncio.run(run_turn(agent, "hi", RichRenderer(console)))
    text = output(console)
    assert "**bold**" not in text and "# Title" not in text  # rendered, not raw
    assert "bold" in text and "Title" in text


def test_long_arguments_are_cut() -> None:
    line = format_call("read_file", {"path": "a" * 500})
    assert len(line) < 140 and line.endswith("…)")


def opts(**overrides: object) -> argparse.Namespace:
    return argparse.Namespace(**{"json": False, "verbose": False, **overrides})


@pytest.mark.parametrize("as_json", [False, True])
def test_command_run_exit_codes(as_json: bool) -> None:
    out, err = plain_console(), plain_console()
    agent = build_agent(ScriptedTransport([Reply("fine")]), [], system="s")
    assert command_run(opts(json=as_json), agent, out, err, "hi") == 0
    failing = ScriptedTransport([ConnectionFailedError("connection refused by 127.0.0.1:9")])
    agent = build_agent(failing, [], system="s")
    agent = agent.copy(retry=agent.retry.__class__(max_attempts=1))
    out, err = plain_console(), plain_console()
    assert command_run(opts(json=as_json), agent, out, err, "hi") == 1
    assert output(err).splitlines() == ["tether: error: connection refused by 127.0.0.1:9"]
    if as_json:
        last = json.loads(output(out).splitlines()[-1])
        assert last["type"] == "session_end" and last["stop_reason"] == "error"


def test_command_run_max_iterations_is_a_failure() -> None:
    looping = ScriptedTransport([], then=Reply(tool_calls=[Call("calculate", {"expression": "1"})]))
    agent = build_agent(looping, demo_tools(Path()), system="s", max_iterations=2)
    out, err = plain_console(), plain_console()
    assert command_run(opts(), agent, out, err, "loop") == 1
    assert output(err).startswith("tether: error: the agent reached max_iterations=2")


def test_verbose_shows_the_traceback() -> None:
    failing = ScriptedTransport([RuntimeError("kaboom")])
    agent = build_agent(failing, [], system="s")
    agent = agent.copy(retry=agent.retry.__class__(max_attempts=1))
    out, err = plain_console(), plain_console()
    assert command_run(opts(verbose=True), agent, out, err, "hi") == 1
    text = output(err)
    assert "Traceback (most recent call last)" in text
    assert text.strip().splitlines()[-1] == "tether: error: RuntimeError: kaboom"


def test_describe_error() -> None:
    assert "check the API key" in describe_error(AuthenticationError("401 unauthorized"))
    assert describe_error(MaxIterationsError("too many")) == "too many"
    assert describe_error(KeyError("x")) == "KeyError: 'x'"


# -- cancelling a turn (Ctrl-C) ------------------------------------------------------------------


async def _wait_for(predicate: object) -> None:
    assert callable(predicate)
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


posix_only = pytest.mark.skipif(
    sys.platform == "win32", reason="the event loop takes signal handlers on POSIX only"
)


@posix_only
async def test_sigint_cancels_a_turn_and_the_chat_goes_on() -> None:
    gate = asyncio.Event()  # never set: the first model call hangs until cancelled
    model = ScriptedTransport(
        [
            Hold(gate, Reply("never shown")),
            lambda request: Reply(f"seen {len(request.messages)} messages", usage=Usage(7, 3)),
        ]
    )
    console = plain_console()
    session = ChatSession(build_agent(model, [], system="s"), RichRenderer(console))
    turn = asyncio.create_task(session.turn("first question"))
    await _wait_for(lambda: model.call_count == 1)
    os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
    outcome = await asyncio.wait_for(turn, 5)
    assert outcome.cancelled
    assert output(console).splitlines()[-1].startswith("cancelled · ")

    outcome = await session.turn("second question")
    assert not outcome.cancelled and outcome.error is None
    assert outcome.text == "seen 2 messages"  # the first question is still in the history
    assert session.turns == 2
    assert "session: 2 turns · 7 tokens in, 3 out" in session.usage_text()


@posix_only
async def test_cancel_during_a_tool_call_leaves_the_history_valid() -> None:
    started = asyncio.Event()

    @tool
    async def slow(seconds: float) -> str:
        """Wait a while."""
        started.set()
        await asyncio.sleep(seconds)
        return "done"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("slow", {"seconds": 60}, id="call_slow")]), Reply("ok")]
    )
    session = ChatSession(build_agent(model, [slow], system="s"), JsonRenderer(io.StringIO()))
    turn = asyncio.create_task(session.turn("go"))
    await asyncio.wait_for(started.wait(), 5)
    os.kill(os.getpid(), signal.SIGINT)
    assert (await asyncio.wait_for(turn, 5)).cancelled

    history = await session.context.get_history()
    calls = [b for m in history for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert [c.id for c in calls] == [r.tool_use_id for r in results] == ["call_slow"]
    assert (await session.turn("again")).text == "ok"


async def test_interruptible_returns_the_result() -> None:
    async def work() -> int:
        return 5

    assert await interruptible(work()) == 5


def test_chat_commands() -> None:
    model = ScriptedTransport([Reply("hello")])
    session = ChatSession(
        build_agent(model, demo_tools(Path()), system="s"), JsonRenderer(io.StringIO())
    )

    def command(line: str) -> tuple[bool, str]:
        return asyncio.run(session.command(line))

    go_on, text = command("/tools")
    assert go_on and text.splitlines()[0].startswith("current_time ")
    assert len(text.splitlines()) == 5
    assert command("/help")[1].startswith("/reset")
    assert "unknown command /nope" in command("/nope")[1]
    assert command("/quit") == (False, "")
    asyncio.run(session.turn("hi"))
    assert session.turns == 1 and asyncio.run(session.context.get_history())
    assert command("/reset") == (True, "the conversation was cleared")
    assert session.turns == 0 and asyncio.run(session.context.get_history()) == []
    assert session.usage_text() == "session: 0 turns · 0 tokens in, 0 out"


def test_history_is_kept_between_chat_turns() -> None:
    model = ScriptedTransport([Reply("one"), Reply("two")])
    session = ChatSession(build_agent(model, [], system="s"), JsonRenderer(io.StringIO()))

    async def both() -> None:
        await session.turn("a")
        await session.turn("b")

    asyncio.run(both())
    assert list(model.requests[1].messages) == [
        Message("user", (TextBlock("a"),)),
        Message("assistant", (TextBlock("one"),)),
        Message("user", (TextBlock("b"),)),
    ]


def test_import_tether_does_not_load_rich() -> None:
    import subprocess

    code = "import sys, tether, tether.testing; print('rich' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == "False"


def test_chats_are_kept_and_resumed_from_the_session_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.cli import main
    from tether.cli.args import build_parser
    from tether.cli.chat import command_chat

    store = tmp_path / "chats.db"

    def chat(lines: list[str], replies: list[str], *extra: str) -> ScriptedTransport:
        feed = iter(lines)

        def fake_input(prompt: str = "") -> str:
            try:
                return next(feed)
            except StopIteration:
                raise EOFError from None

        monkeypatch.setattr("builtins.input", fake_input)
        model = ScriptedTransport([Reply(r) for r in replies])
        opts = build_parser().parse_args(["chat", "--json", "--store", str(store), *extra])
        quiet = Console(file=io.StringIO())
        assert command_chat(opts, build_agent(model, [], system="s"), quiet, quiet) == 0
        return model

    chat(["I am Ann."], ["Hello Ann."], "--session", "ann")
    resumed = chat(["Who am I?"], ["You are Ann."], "--session", "ann")
    assert [m.text for m in resumed.requests[0].messages] == [
        "I am Ann.",
        "Hello Ann.",
        "Who am I?",
    ]
    chat(["hi"], ["hey"])  # no --session: a new one, kept too

    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert main(["sessions", "--store", str(store), "--json"]) == 0
    listed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(listed) == 2
    ann = next(s for s in listed if s["session_id"] == "ann")
    assert ann["messages"] == 4 and ann["updated"] >= ann["created"]


def test_sessions_of_a_store_that_does_not_exist_yet(tmp_path: Path, capsys: Any) -> None:
    from tether.cli import main

    assert main(["sessions", "--store", str(tmp_path / "none.db")]) == 0
    assert "no sessions" in capsys.readouterr().out


def test_the_summary_says_how_much_of_the_prompt_came_from_the_cache() -> None:
    from tether.cli.render import tokens_text
    from tether.types import Usage

    assert tokens_text(Usage(812, 41)) == "812 tokens in, 41 out"
    assert tokens_text(Usage(8120, 41, cache_read_tokens=6400)) == (
        "8,120 tokens in (6,400 cached), 41 out"
    )
