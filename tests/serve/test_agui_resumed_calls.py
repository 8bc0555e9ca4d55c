"""Every run's events make sense to a client that sees only that run: a call a resume runs (or
denies) is started, given its arguments and ended in that run before its TOOL_CALL_RESULT."""

from __future__ import annotations

import json
from pathlib import Path

from served import ask, client, decide, run, serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _calls_make_sense(events: list[dict[str, object]]) -> None:
    """Each TOOL_CALL_RESULT follows its call's START and END, in this run; ARGS between."""
    started: set[object] = set()
    ended: set[object] = set()
    for event in events:
        call = event.get("toolCallId")
        if event["type"] == "TOOL_CALL_START":
            started.add(call)
        elif event["type"] == "TOOL_CALL_ARGS":
            assert call in started and call not in ended, event
        elif event["type"] == "TOOL_CALL_END":
            assert call in started, event
            ended.add(call)
        elif event["type"] == "TOOL_CALL_RESULT":
            assert call in ended, f"{call} has a result but was not started in this run"


async def test_a_resumed_call_is_started_in_the_run_that_runs_it(tmp_path: Path) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 1}), Call("add", {"a": 2, "b": 2})]),
            Reply("Done."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(agent, store)) as base,
        client(base) as http,
    ):
        paused = await run(http, ask("add things"))
        _calls_make_sense(paused)
        thread = paused[0]["threadId"]
        approved = await run(http, decide(thread, "call_1", True))
        _calls_make_sense(approved)
        start = next(e for e in approved if e["type"] == "TOOL_CALL_START")
        assert (start["toolCallId"], start["toolCallName"]) == ("call_1", "add")
        args = "".join(str(e["delta"]) for e in approved if e["type"] == "TOOL_CALL_ARGS")
        assert json.loads(args) == {"a": 1, "b": 1}
        denied = await run(http, decide(thread, "call_2", False, "no"))
        _calls_make_sense(denied)
        assert any(e["type"] == "TOOL_CALL_START" for e in denied)
