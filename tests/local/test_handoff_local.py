"""Handoffs on the real local model: a triage agent that can only route hands a billing question to
the billing agent (``transfer_to_billing``), which goes on with its own tool; the stored history
says who wrote each reply. (At temperature 0 the small model tends to repeat its call after the
result, told or not: ``Limits(repeated_calls=2)`` ends such a run with its own stop reason, so the
run ends with an answer or that stop, never by running out of iterations.)"""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    Handoff,
    Limits,
    MemoryContextStore,
    SessionEndEvent,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from tether.local import LocalModel
from tether.types import StopReason

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 160}


@tool
def refund(order: str) -> str:
    """Refund the order with this id."""
    return f"Done: order {order} is refunded (25 EUR back to the card). Now tell the customer."


async def test_triage_hands_a_refund_to_billing_which_answers(local_model: LocalModel) -> None:
    transport = local_model.chat_transport(**OPTIONS)
    billing = Agent(
        "You are the billing agent. Refund orders with the refund tool, then confirm briefly.",
        transport,
        tools=[refund],
        name="billing",
    )
    triage = Agent(
        "You are the triage agent. You cannot help with money yourself: for refunds or billing, "
        "transfer the customer to the billing agent with its tool at once.",
        transport,
        handoffs=[billing],
        name="triage",
        limits=Limits(repeated_calls=2),  # the run's limits: billing goes on under them
        max_iterations=8,  # a bound for a model that varies its arguments instead
    )
    context = MemoryContextStore()
    try:
        events = [e async for e in triage.run_stream("Please refund my order A17.", context)]
    finally:
        await transport.aclose()

    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason in (StopReason.END_TURN, StopReason.REPEATED_CALLS), end
    assert [e for e in events if isinstance(e, Handoff)] == [Handoff("triage", "billing")]
    refunds = [e for e in events if isinstance(e, ToolResult) and e.name == "refund"]
    assert refunds and not refunds[0].is_error, "billing never used its tool"
    assert refunds[0].input == {"order": "A17"}
    history = await context.get_history()
    speakers = [m.name for m in history if m.role == "assistant"]
    assert speakers[0] == "triage" and set(speakers[1:]) == {"billing"}, speakers
    asked = {b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)}
    answered = {b.tool_use_id for m in history for b in m.content if isinstance(b, ToolResultBlock)}
    assert asked == answered
