"""``tether serve`` through the official AG-UI client (``@ag-ui/client`` 1.0's ``HttpAgent``, in
node, installed by ``scripts/parts.sh``): a chat with reasoning and a tool call, an approval
interrupt answered by resume, a second client attached to a run under way, and a front-end tool
(the page's own, as a CopilotKit action is) called by the model and answered by the client,
and shared state and context (the client's state changed by a tool, its STATE_DELTA applied by
the client's own JSON Patch).
Every event passes the client's own schema and order checks, and after each run the client's
messages, merged by id, are exactly the session's stored ones."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from parts import absent
from served import serving
from tether import Agent, tool
from tether.serve import app, shared_state
from tether.serve.history import agui_messages
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport

HERE = Path(__file__).parent / "agui_client"
CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
MODULES = CACHE / "npm-agui" / "node_modules"
NODE = CACHE / "npm-conformance" / "node_modules" / "node" / "bin" / "node"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def remove(path: str) -> str:
    """Remove a file (asks for approval first)."""
    return f"removed {path}"


@tool
def add_to_cart(item: str) -> str:
    """Put an item in the user's cart (the session's shared state)."""
    state = shared_state()
    assert state is not None
    state.setdefault("cart", []).append(item)
    return f"{item} is in the cart"


def script(gate: asyncio.Event) -> ScriptedTransport:
    return ScriptedTransport(
        [
            Reply("Adding.", reasoning="A sum.", tool_calls=[Call("add", {"a": 2, "b": 3})]),
            Reply("It is 5.", chunks=2),
            Reply("Removing.", tool_calls=[Call("remove", {"path": "x"})]),
            Reply("Removed."),
            Hold(gate, Reply("Held, then done.", chunks=2), after_events=1),
            Reply("Asking you.", tool_calls=[Call("pick_color", {"hint": "warm"})]),
            Reply("You picked red."),
            Reply(tool_calls=[Call("add_to_cart", {"item": "tea"})]),
            Reply("Tea is in your cart."),
        ]
    )


async def test_the_official_client_runs_a_session_with_no_glue(tmp_path: Path) -> None:
    if not (MODULES / "@ag-ui/client/package.json").exists() or not NODE.exists():
        absent("@ag-ui/client (with its node)", "scripts/parts.sh installs it")
    gate = asyncio.Event()
    model = script(gate)
    agent = Agent("s", model, tools=[add, remove, add_to_cart], approval=["remove"])
    async with SQLiteStore(tmp_path / "c.db") as store, serving(app(agent, store)) as base:
        node = await asyncio.create_subprocess_exec(
            str(NODE),
            str(HERE / "session.mjs"),
            str(MODULES),
            base,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert node.stdout is not None and node.stdin is not None
        steps: dict[str, dict[str, Any]] = {}
        stored: dict[str, list[dict[str, Any]]] = {}
        async with asyncio.timeout(60):
            while line := await node.stdout.readline():
                step = json.loads(line)
                steps[step["step"]] = step
                if step["step"] == "attached":
                    gate.set()
                    node.stdin.write(b"go on\n")
                    await node.stdin.drain()
                    continue
                thread = steps["chat"]["threadId"]
                session = await (await store.open(thread)).get_history()
                stored[step["step"]] = agui_messages(session)
            failed = (await node.stderr.read()).decode() if node.stderr else ""
            assert await node.wait() == 0, failed
    chat = steps["chat"]  # each step against the session as the store kept it then
    assert chat["messages"] == stored["chat"]
    assert [m["role"] for m in chat["messages"]] == [
        "user",
        "reasoning",
        "assistant",
        "tool",
        "assistant",
    ]
    assert {"REASONING_MESSAGE_START", "TOOL_CALL_RESULT", "MESSAGES_SNAPSHOT"} <= set(
        chat["types"]
    )
    interrupted = steps["interrupted"]
    assert [i["toolCallId"] for i in interrupted["interrupts"]] == ["call_2"]
    assert interrupted["messages"] == stored["interrupted"]
    resumed = steps["resumed"]
    assert resumed["interrupts"] == [] and resumed["messages"] == stored["resumed"]
    assert resumed["messages"][-1]["content"] == "Removed."
    assert "removed x" in [m["content"] for m in resumed["messages"] if m["role"] == "tool"]
    reattached = steps["reattached"]
    assert reattached["messages"] == stored["reattached"]
    assert reattached["attachedMessages"] == stored["reattached"]
    assert reattached["messages"][-1]["content"] == "Held, then done."
    frontend = steps["frontend"]  # the run ends with the call, left to the front end
    assert frontend["messages"] == stored["frontend"]
    assert frontend["messages"][-1]["toolCalls"][0]["function"]["name"] == "pick_color"
    assert "RUN_FINISHED" in frontend["types"] and "RUN_ERROR" not in frontend["types"]
    answered = steps["frontendAnswered"]  # its result, sent by the client, reached the model
    assert answered["messages"] == stored["frontendAnswered"]
    assert answered["messages"][-1]["content"] == "You picked red."
    assert "red" in [m["content"] for m in answered["messages"] if m["role"] == "tool"]
    offered = [t.name for t in model.requests[5].tools]
    assert "pick_color" in offered and "add" in offered
    state = steps["state"]  # the client's state, patched by the client itself, is the tool's
    assert state["state"] == {"cart": ["milk", "tea"]}
    assert {"STATE_SNAPSHOT", "STATE_DELTA"} <= set(state["types"])
    assert state["messages"] == stored["state"]
    assert "the shop's front page" in (model.requests[7].system or "")
    assert "the shop's front page" not in (model.requests[5].system or "")
