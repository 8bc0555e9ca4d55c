"""Agents the MCP-server tests serve (``tether mcp-serve --agent <this file>:agent``), on a
scripted model: "add A B" makes it call ``add``, "wait" makes it call ``wait_long``, anything else
is echoed; "delete" calls ``delete_file``, which waits for approval. ``count_to`` reports its
progress. ``wait_long`` leaves marker files in ``$TETHER_TEST_MARKERS`` (started, cancelled,
finished) so a test can see what a cancelled request did to the run. ``proxy`` serves the tools
of a real MCP server of its own (``mcp-server-time``), which ``tether mcp-serve`` starts."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace
from pathlib import Path

from tether import Agent, McpStdio, report_progress, tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request


def _mark(name: str) -> None:
    folder = os.environ.get("TETHER_TEST_MARKERS")
    if folder:
        (Path(folder) / name).write_text(name)


@tool(idempotent=True)
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@tool
def broken(reason: str) -> str:
    """Always fails, saying why."""
    raise RuntimeError(f"broken on purpose: {reason}")


@tool
async def wait_long(seconds: float = 60.0) -> str:
    """Wait a long time (the tests cancel it)."""
    _mark("started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _mark("cancelled")
        raise
    _mark("finished")
    return "waited"


@tool
def delete_file(path: str) -> str:
    """Delete a file (it waits for a person's approval)."""
    _mark("deleted")
    return f"deleted {path}"


async def _count_to(n: int) -> str:
    """Count to n, reporting each step as progress."""
    for i in range(1, n + 1):
        report_progress(i, n, f"step {i}")
        await asyncio.sleep(0)
    return f"counted to {n}"


count_to = replace(tool(_count_to, name="count_to"), reports_progress=True)


def model(request: Request) -> Reply:
    """The scripted model: a tool's result is the answer; "add A B" and "wait" call tools."""
    last = request.messages[-1]
    if last.tool_results:
        return Reply(f"The tool said: {last.tool_results[0].text}")
    words = last.text.split()
    if len(words) == 3 and words[0] == "add":
        return Reply(tool_calls=[Call("add", {"a": int(words[1]), "b": int(words[2])})])
    if words == ["wait"]:
        return Reply(tool_calls=[Call("wait_long", {"seconds": 60})])
    if words == ["delete"]:
        return Reply(tool_calls=[Call("delete_file", {"path": "notes.txt"})])
    return Reply(f"You said: {last.text}")


agent = Agent(
    "You add numbers.\nMore of the prompt, never shown.",
    ScriptedTransport([], then=model),
    tools=[add, broken, wait_long, delete_file, count_to],
    approval={"delete_file"},
    name="adder",
)

TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"
proxy = Agent(
    "You tell the time.",
    ScriptedTransport([], then=model),
    tools=[McpStdio(str(TIME_SERVER), name="time")],
    name="clock",
)
