"""Handoffs: ``Agent(handoffs=[other])`` offers ``transfer_to_{other.name}``; calling it hands the
rest of the run to ``other`` (its system prompt, transport, tools, handoffs) on the same context,
with a ``Handoff`` event; iteration limits count across the whole run; the stored history says
which agent answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from tether import Agent, Handoff, MaxIterationsError, SessionEndEvent, tool
from tether.context import MemoryContextStore
from tether.errors import RunPaused
from tether.messages import ToolResultBlock
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import Recorder


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
    from tether.messages import Message
    from tether.stores import SQLiteStore
    from tether.stores.jsonforms import message_from_json, message_to_json

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


async def test_a_typed_run_asks_the_target_for_the_output_in_its_own_prompt() -> None:
    """The typed answer is asked of whoever answers: after the handoff the target's own system
    prompt carries the instruction (not the first agent's prompt, not nothing)."""
    billing_model = ScriptedTransport([Reply('{"refunded": true}')])
    billing = Agent("You handle billing.", billing_model, name="billing")
    triage_model = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_billing", {})])])
    triage = Agent("You route customers.", triage_model, handoffs=[billing], name="triage")

    class Outcome(BaseModel):
        refunded: bool

    assert await triage.run("Refund please.", output=Outcome) == Outcome(refunded=True)
    asked_first, asked_then = triage_model.requests[0].system, billing_model.requests[0].system
    assert asked_first.startswith("You route customers.") and "JSON Schema" in asked_first
    assert asked_then.startswith("You handle billing.") and "JSON Schema" in asked_then
    assert "refunded" in asked_then


async def test_traces_name_the_agent_that_answers_after_a_handoff(tmp_path: Path) -> None:
    """The run span records the handoff (an event, and the agent that ended the run); each chat
    span after it names the agent that made the call."""
    triage, _, _, _ = desk()
    path = tmp_path / "trace.jsonl"
    traced = triage.copy(middleware=[Recorder(path)])
    assert await traced.run("Refund A1 please.") == "Your refund is on its way."
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    (run,) = [s for s in spans if s["kind"] == "run"]
    assert run["name"] == "invoke_agent triage"
    assert run["attributes"]["tether.agent.final"] == "billing"
    (event,) = run["events"]
    assert event["name"] == "tether.handoff"
    assert event["attributes"] == {"tether.handoff.from": "triage", "tether.handoff.to": "billing"}
    chats = sorted((s for s in spans if s["kind"] == "model"), key=lambda s: s["start"])
    named = [s["attributes"].get("gen_ai.agent.name") for s in chats]
    assert named == ["triage", "billing", "billing"]


def approving_desk() -> tuple[Agent, Agent, ScriptedTransport]:
    """Triage hands off to billing, whose refunds wait for a person."""
    billing_model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("refund", {"order": "A1"}, id="r1")]),
            Reply("Refunded, as approved."),
        ]
    )
    billing = Agent(
        "You handle billing.", billing_model, tools=[refund], name="billing", approval={"refund"}
    )
    triage_model = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_billing", {})])])
    triage = Agent("You route customers.", triage_model, handoffs=[billing], name="triage")
    return triage, billing, billing_model


async def test_a_resume_goes_on_as_the_agent_that_paused() -> None:
    """The refund was billing's call: resuming through triage runs it with billing's tools and
    billing answers (triage has no refund tool; running it there would be an unknown tool)."""
    triage, _, billing_model = approving_desk()
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await triage.run("Refund A1 please.", context)
    assert await triage.resume(context, approve=["r1"]) == "Refunded, as approved."
    history = await context.get_history()
    (result,) = [r for m in history for r in m.tool_results if r.tool_use_id == "r1"]
    assert "refunded A1" in str(result.content) and not result.is_error
    assert billing_model.requests[-1].system == "You handle billing."
    assert [m.name for m in history if m.role == "assistant"][-1] == "billing"


async def test_a_resume_by_an_agent_that_cannot_reach_the_one_that_paused_is_refused() -> None:
    triage, _, _ = approving_desk()
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await triage.run("Refund A1 please.", context)
    stored = len(await context.get_history())
    stranger = Agent("You chat.", ScriptedTransport([]), tools=[refund], name="stranger")
    with pytest.raises(ValueError, match="'billing', which 'stranger' does not hand off to"):
        await stranger.resume(context, approve=["r1"])
    assert len(await context.get_history()) == stored  # nothing stored: resume with billing
