"""``Steering``: messages sent while a run works (from any thread) join it at the top of its
next iteration; nothing pending changes nothing."""

from __future__ import annotations

import asyncio

import pytest

from agent_runs import assert_history_valid, of_type, run_events
from tether import (
    Agent,
    IterationStart,
    MemoryContextStore,
    Message,
    Steering,
    SteeringInjected,
    TextBlock,
    tool,
)
from tether.testing import Call, Reply, ScriptedTransport


async def test_steering_sent_during_a_tool_is_injected_next_iteration() -> None:
    steering = Steering()

    @tool
    def work() -> str:
        steering.send("actually, focus on errors")
        return "worked"

    model = ScriptedTransport([Reply(tool_calls=[Call("work")]), Reply("ok")])
    agent = Agent("sys", model, tools=[work])
    store = MemoryContextStore()
    events = await run_events(agent, "go", store, steering=steering)

    injected = of_type(events, SteeringInjected)
    assert len(injected) == 1
    steer = Message("user", "actually, focus on errors")
    assert injected[0].messages == (steer,)
    # Injected at the top of iteration 2, before its IterationStart.
    starts = {e.iteration: i for i, e in enumerate(events) if isinstance(e, IterationStart)}
    assert starts[1] < events.index(injected[0]) < starts[2]
    second = model.requests[1].messages
    assert second[-1] == steer
    assert second[-2].tool_results[0].content == "worked"
    assert store.messages[-2] == steer
    assert store.messages[-1] == Message("assistant", "ok")
    assert not steering.has_pending
    assert_history_valid(store.messages)


async def test_steering_with_nothing_pending_changes_nothing() -> None:
    plain_model = ScriptedTransport([Reply("a")])
    steered_model = ScriptedTransport([Reply("a")])
    plain = await run_events(Agent("sys", plain_model), "go")
    steered = await run_events(Agent("sys", steered_model), "go", steering=Steering())
    assert not of_type(steered, SteeringInjected)
    assert [type(e) for e in plain] == [type(e) for e in steered]
    assert plain_model.requests == steered_model.requests


async def test_steering_send_from_another_thread() -> None:
    steering = Steering()

    @tool
    async def work() -> str:
        await asyncio.to_thread(steering.send, "from a thread")
        await asyncio.to_thread(steering.send, Message("user", [TextBlock("second")]))
        return "worked"

    model = ScriptedTransport([Reply(tool_calls=[Call("work")]), Reply("ok")])
    agent = Agent("sys", model, tools=[work])
    events = await run_events(agent, "go", steering=steering)
    injected = of_type(events, SteeringInjected)
    assert [m.text for m in injected[0].messages] == ["from a thread", "second"]
    assert [m.text for m in model.requests[1].messages[-2:]] == ["from a thread", "second"]


def test_steering_rejects_non_user_messages() -> None:
    with pytest.raises(ValueError):
        Steering().send(Message("assistant", "no"))
