"""Stop reaches a running tool: a served run stopped while a 30 s tool runs ends at once, the
tool is cancelled, and the stored history says the call was interrupted (not the tool's value,
which it never produced)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from served import ask, client, events_of, serving
from tether import Agent, tool
from tether.messages import ToolResultBlock
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

began = asyncio.Event()
stopped: list[str] = []


@tool
async def survey(area: str) -> str:
    """Survey an area (takes a long time)."""
    began.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        stopped.append(area)
        raise
    return f"{area}: all surveyed"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


async def test_stop_during_a_tool_call_cancels_it_and_stores_it_as_interrupted(
    store: SQLiteStore,
) -> None:
    began.clear()
    model = ScriptedTransport([Reply(tool_calls=[Call("survey", {"area": "north"}, id="s1")])])
    agent = Agent("s", model, tools=[survey])
    body = ask("survey the north")
    async with (
        serving(app(agent, store)) as base,
        client(base) as http,
        http.stream("POST", "/agui", json=body) as response,
    ):
        stream = events_of(response)
        thread = (await anext(stream))["threadId"]
        await asyncio.wait_for(began.wait(), 10)
        assert (await http.post(f"/api/sessions/{thread}/cancel")).status_code == 202
        rest = await asyncio.wait_for(_rest(stream), 10)  # the tool alone takes 30 s
    assert rest[-1]["outcome"] == {"type": "cancelled"}
    assert stopped == ["north"]
    (result,) = [e for e in rest if e["type"] == "TOOL_CALL_RESULT"]
    assert "interrupted" in result["content"]
    history = await (await store.open(thread)).get_history()
    (stored,) = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert stored.is_error and "interrupted" in str(stored.content)
    assert "all surveyed" not in str(history)


async def _rest(stream: AsyncIterator[dict[str, object]]) -> list[dict[str, object]]:
    return [e async for e in stream]
