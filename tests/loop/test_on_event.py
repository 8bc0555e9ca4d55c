"""The ``on_event`` callback: it sees exactly the yielded events, an async one is awaited
first, and one that fails is logged while the run goes on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent_runs import run_events
from tether import Agent, SessionEndEvent, StreamEvent, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_sync_on_event_sees_exactly_the_yielded_events() -> None:
    seen: list[StreamEvent] = []

    @tool
    def noop() -> str:
        return "ok"

    model = ScriptedTransport([Reply("t", tool_calls=[Call("noop")]), Reply("done", chunks=3)])
    agent = Agent("sys", model, tools=[noop], on_event=seen.append)
    events = await run_events(agent, "go")
    assert len(events) > 5
    assert len(seen) == len(events)
    assert all(a is b for a, b in zip(seen, events, strict=True))


async def test_async_on_event_is_awaited_before_the_event_is_yielded() -> None:
    handled: list[StreamEvent] = []

    async def on_event(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        handled.append(event)

    agent = Agent("sys", ScriptedTransport([Reply("hi")]), on_event=on_event)
    async for event in agent.run_stream("go"):
        assert handled and handled[-1] is event
    assert isinstance(handled[-1], SessionEndEvent)


async def test_failing_on_event_is_logged_and_run_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def on_event(event: StreamEvent) -> None:
        raise RuntimeError("callback broke")

    agent = Agent("sys", ScriptedTransport([Reply("still fine")]), on_event=on_event)
    with caplog.at_level(logging.ERROR, logger="tether.agent"):
        assert await agent.run("go") == "still fine"
    records = [r for r in caplog.records if r.name == "tether.agent"]
    assert records
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in records)
    assert any("SessionEndEvent" in r.getMessage() for r in records)


async def test_failing_async_on_event_is_logged_and_run_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def on_event(event: StreamEvent) -> None:
        raise RuntimeError("async callback broke")

    agent = Agent("sys", ScriptedTransport([Reply("ok")]), on_event=on_event)
    with caplog.at_level(logging.ERROR, logger="tether.agent"):
        assert await agent.run("go") == "ok"
    assert any(r.name == "tether.agent" for r in caplog.records)
