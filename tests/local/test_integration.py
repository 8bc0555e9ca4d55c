"""The agent loop against a real model, over each of the three wire formats the server speaks.

The model is small (1.5B) and may call a tool more than once or call the other one too; the
assertions hold for any honest tool-using run: a tool really ran with valid arguments, the run
ended with a text answer, and usage was counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tether import (
    Agent,
    MemoryContextStore,
    SessionEndEvent,
    StopReason,
    StreamEvent,
    TextDelta,
    Tool,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
)
from tether.local import LocalModel
from tether.transports.http import HttpTransport

# Each case takes seconds on two idle cores; the generous timeout is for a machine shared with
# other busy processes, where a CPU model slows down many times over.
pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

SYSTEM = "You are a helpful assistant. Use the tools when they help, then answer briefly."
OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 160}

FORMATS: dict[str, Callable[..., HttpTransport]] = {
    "chat": LocalModel.chat_transport,
    "anthropic": LocalModel.anthropic_transport,
    "responses": LocalModel.responses_transport,
}


class Calls:
    """Two tools that record how they were called."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[Tool]:
        def add(a: int, b: int) -> int:
            """Add two integers and return the sum."""
            self.seen.append(("add", {"a": a, "b": b}))
            return a + b

        def get_time(timezone: str) -> str:
            """The current time in an IANA timezone, such as Europe/Paris."""
            self.seen.append(("get_time", {"timezone": timezone}))
            return f"12:34 in {timezone}"

        from tether import tool

        return [tool(add), tool(get_time)]


def _transport(local: LocalModel, fmt: str, **options: Any) -> HttpTransport:
    return FORMATS[fmt](local, **{**OPTIONS, **options})


async def _run(agent: Agent, prompt: str, context: MemoryContextStore) -> list[StreamEvent]:
    stream = agent.run_stream(prompt, context)
    return [event async for event in stream]


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("fmt", list(FORMATS))
async def test_tool_round_trip(local_model: LocalModel, fmt: str, streaming: bool) -> None:
    calls = Calls()
    transport = _transport(local_model, fmt, stream=streaming)
    agent = Agent(system=SYSTEM, transport=transport, tools=list(calls.tools()), max_iterations=4)
    context = MemoryContextStore()
    try:
        events = await _run(agent, "Use the add tool to add 17 and 25.", context)
    finally:
        await transport.aclose()

    end = events[-1]
    assert isinstance(end, SessionEndEvent), end
    assert end.error is None, end.error
    assert end.stop_reason is StopReason.END_TURN
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results, "the model called no tool"
    assert all(not r.is_error for r in results), results
    assert ("add", {"a": 17, "b": 25}) in calls.seen, calls.seen
    assert len(calls.seen) == len(results)
    history = context.messages
    assert history[-1].role == "assistant"
    assert history[-1].text.strip(), "the run did not end with a text answer"
    assert not history[-1].tool_uses
    assert end.total_usage.input_tokens > 0
    assert end.total_usage.output_tokens > 0


def _every_call_has_a_result(context: MemoryContextStore) -> None:
    uses = [b.id for m in context.messages for b in m.content if isinstance(b, ToolUseBlock)]
    done = {
        b.tool_use_id for m in context.messages for b in m.content if isinstance(b, ToolResultBlock)
    }
    assert set(uses) <= done, (uses, done)


async def test_cancelled_mid_stream_leaves_a_valid_context(local_model: LocalModel) -> None:
    calls = Calls()
    transport = _transport(local_model, "chat", max_tokens=400)
    agent = Agent(system=SYSTEM, transport=transport, tools=list(calls.tools()), max_iterations=4)
    context = MemoryContextStore()
    answering = asyncio.Event()
    seen: list[StreamEvent] = []

    async def consume() -> None:
        prompt = "Use the add tool to add 17 and 25, then write a long poem about the result."
        async for event in agent.run_stream(prompt, context):
            seen.append(event)
            if isinstance(event, TextDelta) and any(isinstance(e, ToolResult) for e in seen):
                answering.set()

    task = asyncio.create_task(consume())
    try:
        waiter = asyncio.create_task(answering.wait())
        await asyncio.wait([task, waiter], timeout=90, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        assert answering.is_set(), f"no answer text after a tool result; events: {seen}"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not any(isinstance(e, SessionEndEvent) for e in seen)  # it was cut short
        _every_call_has_a_result(context)

        # The same conversation goes on: the server accepts the history and the model answers.
        events = await _run(agent, "Now use the add tool to add 2 and 3.", context)
        end = events[-1]
        assert isinstance(end, SessionEndEvent)
        assert end.error is None, end.error
        assert ("add", {"a": 2, "b": 3}) in calls.seen, calls.seen
        assert context.messages[-1].role == "assistant"
        assert context.messages[-1].text.strip()
        _every_call_has_a_result(context)
    finally:
        task.cancel()
        await transport.aclose()
