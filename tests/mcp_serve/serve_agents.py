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

from tether import Agent, McpStdio, Middleware, ToolRequest, report_progress, tool
from tether.loop import ToolHandler
from tether.mcp import Elicitation, McpTool, NeedsInput, resumed
from tether.messages import ToolResultBlock
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


# -- a tool that asks the user (``NeedsInput``), served as elicitation -------------------------

WHO = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "your name"},
        "email": {"type": "string", "description": "your e-mail address"},
    },
    "required": ["name", "email"],
}
SURE = {
    "type": "object",
    "properties": {"sure": {"type": "boolean", "description": "yes signs you up"}},
    "required": ["sure"],
}


def _question(message: str, schema: dict[str, object], key: str) -> Elicitation:
    return Elicitation(message, schema, server="sign_up", tool="sign_up", key=key)


@tool
def sign_up(plan: str) -> str:
    """Sign the user up for a plan: it asks who they are, then whether they are sure."""
    answered = resumed()
    if answered is None:
        asks = [_question(f"Who is signing up for {plan}?", WHO, "who")]
        raise NeedsInput(asks, {"plan": plan}, "sign_up asks the user who they are")
    if "who" in answered.answers:
        who = answered.answers["who"]
        if who is None:
            return "nobody signed up: the user declined to say who they are"
        asks = [_question(f"Sign {who['name']} up for {plan}?", SURE, "sure")]
        raise NeedsInput(asks, {**answered.state, "who": dict(who)}, "sign_up asks if sure")
    sure = answered.answers.get("sure")
    who = answered.state["who"]
    if sure is None or not sure.get("sure"):
        return f"{who['name']} did not sign up"
    _mark("signed")
    return f"signed up {who['name']} <{who['email']}> for {answered.state['plan']}"


# -- a tool defined in MCP's terms, whose result holds audio and an embedded resource ---------

WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="  # an empty WAV file
RECORDING = {
    "content": [
        {"type": "text", "text": "a recording:"},
        {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
        {
            "type": "resource",
            "resource": {"uri": "note://1", "mimeType": "text/plain", "text": "the transcript"},
        },
    ]
}
recording = McpTool(
    "recording",
    "A recording, with its transcript.",
    {"type": "object", "properties": {}},
    lambda args: RECORDING,
).as_tool()


def _asker_model(request: Request) -> Reply:
    """The model: "record" calls ``recording``, anything else ``sign_up``; a tool's result is
    the answer."""
    last = request.messages[-1]
    if last.tool_results:
        return Reply(f"The tool said: {last.tool_results[0].text}")
    if last.text == "record":
        return Reply(tool_calls=[Call("recording", {})])
    return Reply(tool_calls=[Call("sign_up", {"plan": "pro"})])


asker = Agent(
    "You sign people up.",
    ScriptedTransport([], then=_asker_model),
    tools=[sign_up, add, recording],
    name="signup",
)


class _Redacting(Middleware):
    """Answers every call of ``recording`` with "redacted" once it ran."""

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        result = await call_next(call)
        return replace(result, content="redacted") if call.block.name == "recording" else result


censored = Agent(
    "You record, redacted.",
    ScriptedTransport([], then=_asker_model),
    tools=[recording],
    middleware=[_Redacting()],
    name="censored",
)
