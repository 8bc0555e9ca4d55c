"""Input and output guardrails: what they see (steering and trimming included) and what a
denial ends: no model call, no stored denied answer, no tool run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from agent_runs import assert_history_valid, end_of, of_type, run_events
from tether import (
    Agent,
    Allow,
    CharBudget,
    Deny,
    Error,
    GuardrailError,
    MemoryContextStore,
    Message,
    Steering,
    StopReason,
    tool,
)
from tether.testing import Call, Reply, ScriptedTransport


async def test_input_guardrail_sees_the_messages_to_send() -> None:
    seen: list[list[Message]] = []

    def guardrail(messages: Sequence[Message]) -> Allow:
        seen.append(list(messages))
        return Allow()

    model = ScriptedTransport([Reply("fine")])
    store = MemoryContextStore([Message("user", "earlier"), Message("assistant", "noted")])
    agent = Agent("sys", model, input_guardrails=[guardrail])
    assert await agent.run("now", store) == "fine"
    assert seen == [list(model.requests[0].messages)]
    assert [m.text for m in seen[0]] == ["earlier", "noted", "now"]


async def test_input_guardrail_deny_ends_run_before_model_call() -> None:
    model = ScriptedTransport([Reply("never")])
    agent = Agent("sys", model, input_guardrails=[lambda msgs: Deny("no secrets")])
    events = await run_events(agent, "go")
    assert model.call_count == 0
    errors = of_type(events, Error)
    assert len(errors) == 1 and isinstance(errors[0].exception, GuardrailError)
    assert "no secrets" in str(errors[0].exception)
    end = end_of(events)
    assert end.error is errors[0].exception
    assert end.stop_reason is StopReason.ERROR
    with pytest.raises(GuardrailError, match="no secrets"):
        await agent.run("go")


async def test_async_input_guardrail_and_steering_and_trim_are_visible_to_it() -> None:
    seen: list[list[Message]] = []

    async def guardrail(messages: Sequence[Message]) -> Deny | None:
        await asyncio.sleep(0)
        seen.append(list(messages))
        return Deny("blocked") if any(m.text == "bad" for m in messages) else None

    steering = Steering()
    steering.send("bad")
    old = [Message("user", "x" * 500), Message("assistant", "y" * 500)]
    model = ScriptedTransport([Reply("never")])
    agent = Agent(
        "sys", model, input_guardrails=[guardrail], context_policy=CharBudget(max_chars=300)
    )
    with pytest.raises(GuardrailError, match="blocked"):
        await agent.run("go", MemoryContextStore(old), steering=steering)
    assert model.call_count == 0
    assert seen[0][0].text.startswith("[Context summary:")
    assert seen[0][-1].text == "bad"


async def test_output_guardrail_sees_assistant_message_and_deny_is_not_stored() -> None:
    seen: list[Message] = []

    async def guardrail(message: Message) -> Deny | Allow:
        seen.append(message)
        return Deny("leaks a password") if "hunter2" in message.text else Allow()

    @tool
    def echo(text: str) -> str:
        return text

    model = ScriptedTransport(
        [Reply("checking", tool_calls=[Call("echo", {"text": "a"})]), Reply("it is hunter2")]
    )
    agent = Agent("sys", model, tools=[echo], output_guardrails=[guardrail])
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)

    assert [m.role for m in seen] == ["assistant", "assistant"]
    assert seen[0].text == "checking" and seen[0].tool_uses[0].name == "echo"
    assert seen[1].text == "it is hunter2"
    end = end_of(events)
    assert isinstance(end.error, GuardrailError) and "leaks a password" in str(end.error)
    assert all("hunter2" not in m.text for m in store.messages)
    assert store.messages[-1].tool_results  # the last stored turn is the tool result
    assert_history_valid(store.messages)


async def test_output_guardrail_deny_of_tool_call_turn_runs_no_tool() -> None:
    ran: list[str] = []

    @tool
    def danger() -> str:
        ran.append("danger")
        return "boom"

    model = ScriptedTransport([Reply(tool_calls=[Call("danger")])])
    agent = Agent("sys", model, tools=[danger], output_guardrails=[lambda m: Deny("nope")])
    store = MemoryContextStore()
    with pytest.raises(GuardrailError, match="nope"):
        await agent.run("go", store)
    assert ran == []
    assert store.messages == [Message("user", "go")]
