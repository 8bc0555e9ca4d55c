"""``Limits(repeated_calls=N)`` on the real local model: a tool that always returns the same thing,
and a small model that tends to call it again after its result. The run ends within a bounded
number of iterations, told of its repeat once: with an answer, or stopped with
``StopReason.REPEATED_CALLS`` and a history in which every call has its result."""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    LimitExceeded,
    Limits,
    MemoryContextStore,
    SessionEndEvent,
    SteeringInjected,
    ToolResult,
    tool,
)
from tether.local import LocalModel
from tether.messages import ToolResultBlock, ToolUseBlock
from tether.types import StopReason

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 160}


@tool
def stock(item: str) -> str:
    """How many of an item the warehouse holds."""
    return "The warehouse holds 12 of that item."


async def test_a_model_that_repeats_its_call_is_told_then_stopped(local_model: LocalModel) -> None:
    transport = local_model.chat_transport(**OPTIONS)
    agent = Agent(
        "You answer stock questions. Check the stock with the stock tool.",
        transport,
        tools=[stock],
        limits=Limits(repeated_calls=2),
        max_iterations=12,  # never reached: the second repeat ends the run before it
    )
    context = MemoryContextStore()
    try:
        events = [e async for e in agent.run_stream("How many chairs do we have?", context)]
    finally:
        await transport.aclose()

    end = events[-1]
    assert isinstance(end, SessionEndEvent), end
    calls = [e for e in events if isinstance(e, ToolResult) and e.name == "stock"]
    assert calls, "the model never used its tool"
    told = [e for e in events if isinstance(e, SteeringInjected)]
    # every call after the first repeats it (same arguments, same result) or the run answered
    assert len(calls) <= 3 and end.iterations <= 4, (len(calls), end.iterations)
    if end.stop_reason is StopReason.REPEATED_CALLS:
        assert isinstance(end.error, LimitExceeded) and end.error.limit == "repeated_calls"
        assert len(told) == 1 and "stock" in told[0].messages[0].text
    else:
        assert end.stop_reason is StopReason.END_TURN, end
        assert end.error is None
    history = await context.get_history()
    asked = {b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)}
    answered = {b.tool_use_id for m in history for b in m.content if isinstance(b, ToolResultBlock)}
    assert asked == answered
