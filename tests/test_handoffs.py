"""Handoffs: ``Agent(handoffs=[other])`` offers ``transfer_to_{other.name}``; calling it hands the
rest of the run to ``other`` (its system prompt, transport, tools, handoffs) on the same context,
with a ``Handoff`` event; iteration limits count across the whole run; the stored history says
which agent answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Agent, Handoff, MaxIterationsError, SessionEndEvent, tool
from tether.context import MemoryContextStore
from tether.messages import ToolResultBlock
from tether.testing import Call, Reply, ScriptedTransport


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def desk() -> tuple[Agent, Agent, ScriptedTransport, ScriptedTransport]:
    billing_model = ScriptedTransport(
        [Reply(tool_calls=[Call("refund", {"order": "A1"})]), Reply("Your refund is on its way.")]
    )
    billing = Agent("You handle billing.", billing_model, tools=[refund], name="billing")
    triage_model = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_billing", {})])])
    triage = Agent("You route customers.", triage_model, handoffs=[billing], name="triage")
    return triage, billing, triage_model, billing_model


async def test_the_target_answers_the_rest_of_the_run() -> None:
    triage, _, triage_model, billing_model = desk()
    context = MemoryContextStore()
    events = [e async for e in triage.run_stream("I want my money back.", context)]
    handoffs = [e for e in events if isinstance(e, Handoff)]
    assert handoffs == [Handoff("triage", "billing")]
    end = events[-1]
    assert isinstance(end, SessionEndEvent) and end.error is None
    assert triage_model.call_count == 1 and billing_model.call_count == 2
    first = billing_model.requests[0]
    assert first.system == "You handle billing." and [t.name for t in first.tools] == ["refund"]


async def test_run_returns_the_final_agents_answer_and_history_says_who_answered() -> None:
    triage, _, _, _ = desk()
    context = MemoryContextStore()
    assert await triage.run("Refund A1 please.", context) == "Your refund is on its way."
    history = await context.get_history()
    speakers = [m.name for m in history if m.role == "assistant"]
    assert speakers == ["triage", "billing", "billing"]
    results = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert "billing" in str(results[0].content) and not results[0].is_error


async def test_the_transfer_tool_is_offered_with_no_arguments() -> None:
    triage, _, triage_model, _ = desk()
    await triage.run("hi")
    (spec,) = triage_model.requests[0].tools
    assert spec.name == "transfer_to_billing"
    assert dict(spec.schema).get("properties", {}) == {}
    assert "billing" in spec.description


async def test_iterations_count_across_the_whole_run() -> None:
    """The count is the run's: billing, allowed 3 model calls, gets 2 after triage's one."""
    loop_model = ScriptedTransport([], then=Reply(tool_calls=[Call("refund", {"order": "B"})]))
    billing = Agent(
        "Billing.",
        loop_model,
        tools=[refund],
        name="billing",
        max_iterations=3,
        on_max_iterations="raise",
    )
    first = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_billing", {})])])
    triage = Agent("Route.", first, handoffs=[billing], name="triage", max_iterations=50)
    with pytest.raises(MaxIterationsError):
        await triage.run("go")
    assert first.call_count == 1 and loop_model.call_count == 2


async def test_handoffs_chain_and_a_second_transfer_in_one_reply_is_refused() -> None:
    closer = Agent("Close.", ScriptedTransport([Reply("Closed.")]), name="closer")
    billing = Agent(
        "Billing.",
        ScriptedTransport([Reply(tool_calls=[Call("transfer_to_closer", {})])]),
        handoffs=[closer],
        name="billing",
    )
    support = Agent("Support.", ScriptedTransport([Reply("never")]), name="support")
    both = [Call("transfer_to_billing", {}), Call("transfer_to_support", {})]
    triage = Agent(
        "Route.",
        ScriptedTransport([Reply(tool_calls=both)]),
        handoffs=[billing, support],
        name="triage",
    )
    context = MemoryContextStore()
    events = [e async for e in triage.run_stream("go", context)]
    assert [e for e in events if isinstance(e, Handoff)] == [
        Handoff("triage", "billing"),
        Handoff("billing", "closer"),
    ]
    history = await context.get_history()
    results = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert not results[0].is_error and results[1].is_error  # the second transfer of one reply
    assert history[-1].text == "Closed." and history[-1].name == "closer"


async def test_who_answered_survives_a_store_and_its_json(tmp_path: Path) -> None:
    from tether.jsonforms import message_from_json, message_to_json
    from tether.messages import Message
    from tether.stores import SQLiteStore

    named = Message("assistant", "Hello.", "billing")
    assert message_from_json(message_to_json(named)) == named
    assert message_from_json(message_to_json(Message("assistant", "Hi."))).name is None
    with pytest.raises(TypeError):
        Message("assistant", "x", "")

    triage, _, _, _ = desk()
    async with SQLiteStore(tmp_path / "s.db") as store:
        await triage.run("Refund A1.", await store.open("c1"))
    async with SQLiteStore(tmp_path / "s.db") as store:
        history = await (await store.open("c1")).get_history()
    assert [m.name for m in history if m.role == "assistant"] == ["triage", "billing", "billing"]
    assert history[-1] == Message("assistant", "Your refund is on its way.", "billing")
