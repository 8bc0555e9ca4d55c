"""Text from outside never drives the terminal: escape sequences and bidi overrides in model
output, tool calls and results, errors, span names and session names are shown as visible
escapes; ``--json`` stays exact; names are never read as Rich markup."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from tether import Tool
from tether.cli import main
from tether.cli.app import build_agent, report_error, run_turn
from tether.cli.args import build_parser
from tether.cli.chat import command_chat
from tether.cli.render import JsonRenderer, RichRenderer
from tether.cli.terminal import safe
from tether.errors import ServerError
from tether.events import Retrying, ToolDispatch, ToolResult
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

# Clear screen, a window title, an OSC 8 link, a right-to-left override, a C1 CSI, a bare CR.
EVIL = (
    "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ "
    "\u202egnp.exe \x9b31m red\rover"
)
FORBIDDEN = ("\x1b[2J", "\x1b]", "\x07", "\u202e", "\x9b", "\r")


def assert_inert(shown: str, *, live: bool = False) -> None:
    """No sequence of ``EVIL`` in ``shown`` (a live display moves the cursor with its own CR)."""
    for sequence in FORBIDDEN[:-1] if live else FORBIDDEN:
        assert sequence not in shown, f"{sequence!r} reached the terminal"
    assert "click" in shown  # the text itself is still shown


def console(terminal: bool) -> Console:
    if terminal:
        return Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=200)
    return Console(file=io.StringIO(), force_terminal=False, width=200)


def text(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def test_safe_keeps_newlines_and_tabs_and_shows_the_rest() -> None:
    assert safe("a\tb\nc") == "a\tb\nc"
    assert safe("x\x1b[2Jy\u202ez\x9b") == "x\\x1b[2Jy\\u202ez\\x9b"
    assert safe("line\r\n") == "line\n"


@pytest.mark.parametrize("terminal", [False, True])
def test_model_output_cannot_drive_the_terminal(terminal: bool) -> None:
    out = console(terminal)
    agent = build_agent(ScriptedTransport([Reply(EVIL, chunks=7)]), [], system="s")
    asyncio.run(run_turn(agent, "hi", RichRenderer(out)))
    assert_inert(text(out), live=terminal)


@pytest.mark.parametrize("terminal", [False, True])
def test_tool_lines_retries_and_errors_cannot_drive_the_terminal(terminal: bool) -> None:
    out = console(terminal)
    renderer = RichRenderer(out, summary=False)
    renderer.begin()
    renderer.event(ToolDispatch("c1", f"tool{EVIL}", {"path": EVIL}))
    renderer.event(ToolResult("c1", "read_file", False, EVIL))
    renderer.event(ToolResult("c2", "read_file", True, f"Error: {EVIL}"))
    renderer.event(Retrying(1, 0.5, EVIL))
    assert_inert(text(out))
    err = console(terminal)
    report_error(err, ServerError(EVIL), verbose=False)
    assert_inert(text(err))


def test_json_output_stays_exact() -> None:
    buffer = io.StringIO()
    agent = build_agent(ScriptedTransport([Reply(EVIL, chunks=3)]), [], system="s")
    asyncio.run(run_turn(agent, "hi", JsonRenderer(buffer)))
    events = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert "".join(e["delta"] for e in events if e["type"] == "text_delta") == EVIL


def test_trace_tree_shows_span_names_and_errors_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {
        "v": 1,
        "trace": "t",
        "span": "s",
        "parent": None,
        "kind": "model",
        "name": f"chat {EVIL}",
        "start": 1,
        "end": 2,
        "attributes": {"gen_ai.usage.input_tokens": 1, "gen_ai.response.model": EVIL},
        "error": EVIL,
    }
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(record) + "\n")
    assert main(["trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert "\\x1b]0;pwned" in out  # shown, as a visible escape


@pytest.mark.parametrize("name", ["[/]", "[bold]loud[/bold]", "[link=http://x]y"])
def test_session_names_are_not_markup(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chats.db"

    async def make() -> None:
        async with SQLiteStore(path) as store:
            await store.open(name)

    asyncio.run(make())
    assert main(["sessions", "--store", str(path)]) == 0
    out, err = capsys.readouterr()
    assert name in out and err == ""


def test_chat_greeting_and_tool_list_are_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lookup() -> str:
        return ""

    lines = iter(["/tools"])

    def fake_input(prompt: str = "") -> str:
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    tools = [Tool("lookup", lookup, description=f"Looks up. {EVIL}")]
    agent = build_agent(ScriptedTransport([]), tools, system="s")
    opts = build_parser().parse_args(
        ["chat", "--store", str(tmp_path / "c.db"), "--model", f"m{EVIL}"]
    )
    out, err = console(True), console(True)
    assert command_chat(opts, agent, out, err) == 0
    shown = text(out)
    assert "Looks up." in shown and "m\\x1b[2J" in shown
    for sequence in FORBIDDEN:
        assert sequence not in shown


def test_verbose_http_log_lines_are_inert(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from tether.cli.app import configure_logging

    root = logging.getLogger("tether")
    before, level = list(root.handlers), root.level
    try:
        configure_logging(True)
        logging.getLogger("tether.http").debug("response body: %s", EVIL)
    finally:
        for handler in root.handlers[len(before) :]:
            root.removeHandler(handler)
        root.setLevel(level)
    assert_inert(capsys.readouterr().err)
