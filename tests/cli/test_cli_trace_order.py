"""``tether trace FILE`` shows a span's children in the order they started, as the HTML page does:
a recorded run of three model calls and two tool calls reads top to bottom as it happened."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from tether import tool
from tether.cli.app import build_agent, run_turn
from tether.cli.render import RichRenderer
from tether.testing import Call, Reply, ScriptedTransport


@tool
def look_up(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


@tool
def convert(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


def record(trace: Path) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("look_up", {"city": "Oslo"})]),
            Reply(tool_calls=[Call("convert", {"celsius": 20})]),
            Reply("Sunny, 68 °F."),
        ]
    )
    agent = build_agent(model, [look_up, convert], system="s", trace=trace)
    quiet = Console(file=io.StringIO())
    asyncio.run(run_turn(agent, "Weather in Oslo, in Fahrenheit?", RichRenderer(quiet)))


def test_children_are_shown_in_the_order_they_started(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    record(trace)
    shown = subprocess.run(
        [sys.executable, "-m", "tether.cli", "trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert shown[0].startswith("invoke_agent ")
    children = [line.split("  ")[0].lstrip("├└─ ") for line in shown[1:6]]
    assert children == [
        "chat ScriptedTransport",
        "execute_tool look_up",
        "chat ScriptedTransport",
        "execute_tool convert",
        "chat ScriptedTransport",
    ]
    assert shown[6].startswith("3 model call(s), 2 tool call(s)")
