"""``Limits(repeated_calls=N)``: a call the model already made since the user's last message, with
the same name, the same arguments (as canonical JSON) and the same result, is a repeat. Each
repeat is told to the model in a steering message (the call still runs, its result is still
returned); the N-th repeat ends the run with ``StopReason.REPEATED_CALLS`` and
``LimitExceeded("repeated_calls", N, N)``, every stored call answered. The count is read from the
stored history, so a resumed run counts on where the paused one stopped."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agent_runs import assert_history_valid, end_of, of_type, run_events
from tether import (
    Agent,
    LimitExceeded,
    Limits,
    MemoryContextStore,
    RunPaused,
    SessionEndEvent,
    Steering,
    SteeringInjected,
    tool,
)
from tether.loop.approval import RECORD
from tether.loop.history_view import visible
from tether.messages import Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock
from tether.stores.jsonforms import (
    event_from_dict,
    event_to_dict,
    exception_from_dict,
    exception_to_dict,
    message_from_json,
    message_to_json,
)
from tether.testing import Call, Reply, ScriptedTransport
from tether.types import StopReason

ran: list[dict[str, Any]] = []


@tool
def look(path: str, lines: int = 10) -> str:
    """Read a file."""
    ran.append({"path": path, "lines": lines})
    return f"{path}: the same {lines} lines"


@tool
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


_ticks = itertools.count()


@tool
def poll() -> str:
    """Poll a job: its progress changes on every call."""
    return f"{next(_ticks)}% done"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def looks(*inputs: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[Call("look", dict(i)) for i in inputs])


def agent(*replies: Reply, repeats: int | None = 2, **kwargs: Any) -> Agent:
    limits = None if repeats is None else Limits(repeated_calls=repeats)
    model = ScriptedTransport(list(replies))
    return Agent("sys", model, tools=[look, delete, poll], limits=limits, **kwargs)


def notices(events: list[Any]) -> list[str]:
    return [m.text for e in of_type(events, SteeringInjected) for m in e.messages]


A = {"path": "a.txt"}


def sent_as(stored: list[Message]) -> list[Message]:
    """A stored history as a provider is sent it: records left out, a reply's results (which a
    resume stores in more than one message) in one user message."""
    merged: list[Message] = []
    for message in visible(stored):
        if merged and message.role == "user" == merged[-1].role:
            merged.append(Message("user", (*merged.pop().content, *message.content)))
        else:
            merged.append(message)
    return merged


def test_repeated_calls_must_be_a_count_of_at_least_one() -> None:
    for wrong in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="repeated_calls"):
            Limits(repeated_calls=wrong)  # type: ignore[arg-type]
    assert Limits().repeated_calls is None


async def test_a_repeat_is_told_and_the_nth_repeat_stops_the_run() -> None:
    bot = agent(looks(A), looks(A), looks(A), Reply("never asked"))
    context = MemoryContextStore()
    events = await run_events(bot, "go", context)
    told = notices(events)
    assert len(told) == 1  # the first repeat is told; the second ends the run
    assert "look" in told[0] and '"path": "a.txt"' in told[0] and "not changed" in told[0]
    assert len(ran) == 3  # every repeated call still ran
    model = bot.transport
    assert isinstance(model, ScriptedTransport) and model.call_count == 3
    sent = model.requests[2].messages[-1]
    assert sent.text == told[0]  # the model read it before its reply, and only its text
    assert all(type(b) is TextBlock for b in sent.content)
    end = end_of(events)
    assert end.stop_reason is StopReason.REPEATED_CALLS
    assert isinstance(end.error, LimitExceeded)
    assert (end.error.limit, end.error.value, end.error.maximum) == ("repeated_calls", 2, 2)
    assert_history_valid(context.messages)
    assert context.messages[-1].tool_results  # the last call's result is stored


async def test_run_raises_limit_exceeded_for_repeated_calls() -> None:
    bot = agent(looks(A), looks(A), repeats=1)
    context = MemoryContextStore()
    with pytest.raises(LimitExceeded) as info:
        await bot.run("go", context)
    assert info.value.limit == "repeated_calls"
    assert "repeated_calls" in str(info.value) and "2 > 2" not in str(info.value)
    assert_history_valid(context.messages)


async def test_the_same_call_with_a_new_result_is_no_repeat() -> None:
    poll_ = Reply(tool_calls=[Call("poll")])
    events = await run_events(agent(poll_, poll_, poll_, Reply("done"), repeats=1), "go")
    assert notices(events) == []
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_other_arguments_are_no_repeat() -> None:
    replies = [
        looks({"path": "a.txt"}),
        looks({"path": "b.txt"}),
        looks({"path": "a.txt", "lines": 5}),
    ]
    events = await run_events(agent(*replies, Reply("done"), repeats=1), "go")
    assert notices(events) == []
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_the_order_of_the_arguments_does_not_matter() -> None:
    first, second = {"path": "a.txt", "lines": 3}, {"lines": 3, "path": "a.txt"}
    assert list(first) != list(second)
    events = await run_events(agent(looks(first), looks(second), Reply("done")), "go")
    assert len(notices(events)) == 1
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_arguments_equal_in_python_but_not_in_json_are_no_repeat() -> None:
    @tool
    def flag(value: int | bool) -> str:
        """Set a flag."""
        return "set"

    one, true = (
        Reply(tool_calls=[Call("flag", {"value": 1})]),
        Reply(tool_calls=[Call("flag", {"value": True})]),
    )
    model = ScriptedTransport([one, true, Reply("done")])
    bot = Agent("sys", model, tools=[flag], limits=Limits(repeated_calls=1))
    assert {"value": 1} == {"value": True}  # but 1 and true are other JSON
    events = await run_events(bot, "go")
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_the_same_call_twice_in_one_reply_is_a_repeat() -> None:
    events = await run_events(agent(looks(A, A, {"path": "b.txt"}), Reply("done")), "go")
    told = notices(events)
    assert len(told) == 1 and "a.txt" in told[0] and "b.txt" not in told[0]
    assert end_of(events).stop_reason is StopReason.END_TURN
    context = MemoryContextStore()
    events = await run_events(agent(looks(A, A, A), Reply("never")), "go", context)
    assert end_of(events).stop_reason is StopReason.REPEATED_CALLS
    assert len(context.messages[-1].tool_results) == 3  # all three answered, in one message
    assert_history_valid(context.messages)


async def test_without_the_limit_repeats_are_neither_told_nor_stopped() -> None:
    bot = agent(looks(A), looks(A), looks(A), Reply("done"), repeats=None)
    events = await run_events(bot, "go")
    assert notices(events) == []
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_a_new_user_message_starts_the_count_afresh() -> None:
    context = MemoryContextStore()
    await agent(looks(A), Reply("first"), repeats=1).run("one", context)
    events = await run_events(agent(looks(A), Reply("second"), repeats=1), "two", context)
    assert notices(events) == []  # the earlier run's call is not this run's
    steering = Steering()

    @tool
    def steered(path: str) -> str:
        """Read a file, and have the user say something meanwhile."""
        steering.send("look again, please")
        return "same"

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("steered", A)]),
            Reply(tool_calls=[Call("steered", A)]),
            Reply("ok"),
        ]
    )
    bot = Agent("sys", model, tools=[steered], limits=Limits(repeated_calls=1))
    events = await run_events(bot, "go", steering=steering)
    assert end_of(events).stop_reason is StopReason.END_TURN  # asked again: no repeat


async def test_a_typed_answer_sent_back_for_repair_starts_the_count_again() -> None:
    """The repair is a message to the model as from the user: a call made again after it is
    not counted against the one before, here as in a run resumed after it."""
    bot = agent(looks(A), Reply("not a number"), looks(A), Reply("3"), repeats=1, output_type=int)
    assert await bot.run("How many lines?") == 3


async def test_a_resumed_run_counts_on_from_its_stored_history() -> None:
    """The pause comes after a repeat was found and before it was told: the resumed run reads
    both from the stored history, tells it, and the next repeat is the second (N=2)."""
    context = MemoryContextStore()
    first = agent(
        looks(A),
        Reply(tool_calls=[Call("look", A), Call("delete", {"path": "b.txt"}, id="d1")]),
        approval={"delete"},
    )
    with pytest.raises(RunPaused):
        await first.run("go", context)
    assert len(ran) == 2
    second = agent(looks(A), Reply("never"), approval={"delete"})
    events = [e async for e in second.resume_stream(context, approve=["d1"])]
    told = notices(events)
    assert len(told) == 1 and "a.txt" in told[0]
    end = end_of(events)
    assert end.stop_reason is StopReason.REPEATED_CALLS
    assert_history_valid(sent_as(context.messages))
    model = second.transport
    assert isinstance(model, ScriptedTransport) and model.call_count == 1


async def test_a_run_that_goes_on_without_a_message_counts_what_its_history_holds() -> None:
    """As a durable run continued in a new workflow does: the stored history ends with the
    results of a repeat not told yet; the run tells it, and the next repeat is the second."""
    same = {"path": "a.txt"}
    result = "a.txt: the same 10 lines"
    context = MemoryContextStore(
        [
            Message("user", "go"),
            Message("assistant", (ToolUseBlock("c1", "look", same),)),
            Message("user", (ToolResultBlock("c1", result),)),
            Message("assistant", (ToolUseBlock("c2", "look", same),)),
            Message("user", (ToolResultBlock("c2", result),)),
        ]
    )
    bot = agent(looks(A), Reply("never"))
    events = await run_events(bot, None, context)
    assert len(notices(events)) == 1
    assert end_of(events).stop_reason is StopReason.REPEATED_CALLS
    assert_history_valid(sent_as(context.messages))


async def test_a_resumed_run_does_not_tell_a_repeat_twice() -> None:
    context = MemoryContextStore()
    first = agent(
        looks(A),
        looks(A),
        Reply(tool_calls=[Call("delete", {"path": "b.txt"}, id="d1")]),
        repeats=3,
        approval={"delete"},
    )
    with pytest.raises(RunPaused):
        await first.run("go", context)
    second = agent(Reply("done"), repeats=3, approval={"delete"})
    events = [e async for e in second.resume_stream(context, approve=["d1"])]
    assert notices(events) == []  # told before the pause already
    assert end_of(events).stop_reason is StopReason.END_TURN


async def test_a_sub_agents_repeats_are_its_own() -> None:
    """A sub-run counts its repeats under its own limits: the caller's ``repeated_calls`` does
    not reach into it, and its stop is the call's error result the caller reads."""
    sub_model = ScriptedTransport([looks(A), looks(A), Reply("never")])
    sub = Agent("sub", sub_model, tools=[look], limits=Limits(repeated_calls=1))
    asker = sub.as_tool(name="reader", description="Reads files.")
    boss_model = ScriptedTransport(
        [Reply(tool_calls=[Call("reader", {"input": "read a.txt"})]), Reply("it looped")]
    )
    boss = Agent("boss", boss_model, tools=[asker], limits=Limits(repeated_calls=1))
    events = await run_events(boss, "go")
    assert end_of(events).stop_reason is StopReason.END_TURN
    result = boss_model.requests[1].messages[-1].tool_results[0]
    assert result.is_error and "repeated_calls" in result.text


def test_the_stop_and_the_notice_round_trip_through_json() -> None:
    error = LimitExceeded("repeated_calls", 2, 2)
    back = exception_from_dict(exception_to_dict(error))
    assert isinstance(back, LimitExceeded)
    assert (back.limit, back.value, back.maximum, str(back)) == (
        "repeated_calls",
        2,
        2,
        str(error),
    )
    end = SessionEndEvent(StopReason.REPEATED_CALLS)
    assert event_from_dict(event_to_dict(end)) == end


async def test_the_stored_notice_round_trips_and_its_record_is_hidden_from_the_model() -> None:
    context = MemoryContextStore()
    await agent(looks(A), looks(A), Reply("done")).run("go", context)
    stored = [m for m in context.messages if m.role == "user" and m.text.startswith("You")]
    assert len(stored) == 1
    notice = stored[0]
    assert isinstance(notice.content[0], TextBlock)
    record = notice.content[-1]
    assert isinstance(record, ReasoningBlock) and record.provider == RECORD
    assert message_from_json(message_to_json(notice)) == notice
    # a later run on the same history sends the notice's text, never its record
    model = ScriptedTransport([Reply("ok")])
    await Agent("sys", model, tools=[look]).run("again", context)
    sent = [m for m in model.requests[0].messages if m.text == notice.text]
    assert sent and all(type(b) is TextBlock for b in sent[0].content)
