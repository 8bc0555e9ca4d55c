"""``run_notes()``: what a run keeps for its tools between their calls (a remote agent's
conversation): the same mapping for every call of one run, a fresh one for another run, none
outside a run."""

from __future__ import annotations

import asyncio
from typing import Any

from tether import Agent, Tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.notes import run_notes


async def counting() -> str:
    """Counts its calls in the run's notes."""
    notes = run_notes()
    if notes is None:
        return "no notes"
    notes["count"] = notes.get("count", 0) + 1
    return f"call {notes['count']}"


def agent() -> Agent:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("count", {})]),
            Reply(tool_calls=[Call("count", {}), Call("count", {})]),
            Reply("done"),
        ]
    )
    tool = Tool("count", counting, "Count.", reports_progress=True)
    return Agent("s", model, tools=[tool], execution="sequential")


async def results(a: Agent) -> list[Any]:
    stream = a.run_stream("go")
    return [e.content for e in [e async for e in stream] if type(e).__name__ == "ToolResult"]


async def test_one_run_shares_its_notes_across_calls_and_iterations() -> None:
    assert await results(agent()) == ["call 1", "call 2", "call 3"]


async def test_each_run_has_its_own_notes() -> None:
    a, b = agent(), agent()
    first, second = await asyncio.gather(results(a), results(b))
    assert first == second == ["call 1", "call 2", "call 3"]


def test_no_notes_outside_a_run() -> None:
    assert asyncio.run(counting()) == "no notes"
