"""A tool call that waits for the user's input (``NeedsInput``: an MCP server asked, and nothing
in the process could answer) pauses the run as an approval does: the reply's other calls run,
their results and an input record are stored in one append, the run ends PAUSED with the call's
questions in ``pending``; ``resume(context, answers=)`` checks the answers against what was
asked, stores them in one conflict-checked append and runs the call again with them. Unit tests
on a scripted model; tests/mcp/test_elicitation_pause.py does it with a real server."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from rendezvous import Together
from tether import Agent, SessionEndEvent, ToolDispatch, ToolResult, tool
from tether.context import MemoryContextStore
from tether.errors import ConflictError, RunPaused
from tether.loop.approval import RECORD, pending
from tether.messages import Message, ReasoningBlock, ToolResultBlock, ToolUseBlock
from tether.stores import SQLiteStore
from tether.stores.jsonforms import exception_from_dict, exception_to_dict
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.needs_input import NeedsInput, resumed
from tether.types import Elicitation, StopReason

SEAT = {
    "type": "object",
    "properties": {
        "seat": {"type": "string", "enum": ["window", "aisle"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "meal": {"type": "boolean", "default": True},
    },
    "required": ["seat", "count"],
}
ran: list[tuple[str, Any]] = []
asks_again: list[bool] = []


def question(key: str = "q0", day: str = "monday") -> Elicitation:
    return Elicitation(f"Seats for {day}?", SEAT, "travel", "book", {"day": day}, key=key)


@tool
def book(day: str) -> str:
    """Book seats; asks the user how (unless resumed with their answers)."""
    answered = resumed()
    if answered is None or asks_again:
        if asks_again:
            asks_again.pop()
        ran.append(("asked", day))
        raise NeedsInput([question(day=day)], {"request_state": f"state-{day}"}, "no answerer")
    ran.append(("book", (day, dict(answered.answers), dict(answered.state))))
    answer = answered.answers["q0"]
    if answer is None:
        return f"not booked {day}: declined"
    return f"booked {day}: {answer['count']} {answer['seat']} meal={answer['meal']}"


@tool
def look(path: str) -> str:
    """Read a file."""
    ran.append(("look", path))
    return f"contents of {path}"


@tool
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(("delete", path))
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()
    asks_again.clear()


def asking_reply() -> Reply:
    return Reply(
        "Let me.",
        tool_calls=[Call("book", {"day": "monday"}, id="b1"), Call("look", {"path": "x"}, id="l1")],
    )


def make(*replies: Reply, **fields: Any) -> tuple[Agent, ScriptedTransport]:
    model = ScriptedTransport(list(replies))
    return Agent("You help.", model, tools=[book, look, delete], **fields), model


async def paused(**fields: Any) -> tuple[MemoryContextStore, RunPaused]:
    bot, _ = make(asking_reply(), **fields)
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as caught:
        await bot.run("book me in", context)
    return context, caught.value


def results_of(history: list[Message]) -> dict[str, ToolResultBlock]:
    return {r.tool_use_id: r for m in history for r in m.tool_results}


def no_records(messages: list[Message] | tuple[Message, ...]) -> None:
    for message in messages:
        assert message.content
        for block in message.content:
            assert not (type(block) is ReasoningBlock and block.provider == RECORD)


# -- pausing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("execution", ["sequential", "parallel"])
async def test_a_call_that_needs_input_pauses_the_run_after_the_other_calls(execution: str) -> None:
    context, paused_by = await paused(execution=execution)
    assert ran == [("asked", "monday"), ("look", "x")]
    (call,) = paused_by.pending
    assert (call.id, call.name, dict(call.input)) == ("b1", "book", {"day": "monday"})
    assert call.asks == (question(),)
    history = await context.get_history()
    assert "b1" not in results_of(history)  # the call is open: no result stored
    assert results_of(history)["l1"].text == "contents of x"
    assert pending(history) == paused_by.pending  # read back from the stored messages alone
    assert "wait" in str(paused_by) and "input" in str(paused_by)


async def test_the_stream_ends_paused_and_the_asking_call_has_no_result_event() -> None:
    bot, _ = make(asking_reply())
    stream = bot.run_stream("book me in")
    events = [event async for event in stream]
    dispatched = [e.tool_use_id for e in events if isinstance(e, ToolDispatch)]
    finished = [e.tool_use_id for e in events if isinstance(e, ToolResult)]
    assert dispatched == ["b1", "l1"] and finished == ["l1"]
    end = events[-1]
    assert isinstance(end, SessionEndEvent) and end.stop_reason is StopReason.PAUSED
    assert [(p.id, p.asks) for p in end.pending] == [("b1", (question(),))]


async def test_the_pause_round_trips_through_json() -> None:
    _, paused_by = await paused()
    back = exception_from_dict(exception_to_dict(paused_by))
    assert isinstance(back, RunPaused) and back.pending == paused_by.pending


async def test_without_a_run_to_pause_the_call_is_an_error_result() -> None:
    bot, _ = make()
    (result,) = await bot.dispatch_tools([ToolUseBlock("b1", "book", {"day": "monday"})], 1)
    assert result.is_error and "no answerer" in result.text


# -- resuming -------------------------------------------------------------------------------------


async def test_answers_run_the_call_again_with_the_state_and_the_model_reads_the_result() -> None:
    context, _ = await paused()
    ran.clear()
    bot, model = make(Reply("Booked."))
    answer = await bot.resume(context, answers={"b1": {"q0": {"seat": "window", "count": 2}}})
    assert answer == "Booked."
    given = {"q0": {"seat": "window", "count": 2, "meal": True}}  # the schema's default filled in
    assert ran == [("book", ("monday", given, {"request_state": "state-monday"}))]
    sent = model.requests[0].messages
    no_records(sent)
    assert results_of(list(sent))["b1"].text == "booked monday: 2 window meal=True"
    assert pending(await context.get_history()) == ()


async def test_a_declined_question_reaches_the_call_as_none() -> None:
    context, _ = await paused()
    bot, _ = make(Reply("Fine."))
    assert await bot.resume(context, answers={"b1": {"q0": None}}) == "Fine."
    assert results_of(await context.get_history())["b1"].text == "not booked monday: declined"


async def test_resume_streams_the_answered_call_then_the_run() -> None:
    context, _ = await paused()
    bot, _ = make(Reply("Booked."))
    events = [
        e
        async for e in bot.resume_stream(
            context, answers={"b1": {"q0": {"seat": "aisle", "count": 1}}}
        )
    ]
    assert isinstance(events[0], ToolDispatch) and events[0].tool_use_id == "b1"
    assert (
        isinstance(events[1], ToolResult)
        and events[1].content == "booked monday: 1 aisle meal=True"
    )
    assert isinstance(events[-1], SessionEndEvent) and events[-1].stop_reason is StopReason.END_TURN


async def test_a_call_asked_again_pauses_again_and_a_second_resume_finishes_it() -> None:
    context, _ = await paused()
    asks_again.append(True)
    bot, _ = make(Reply("Booked."))
    with pytest.raises(RunPaused) as again:
        await bot.resume(context, answers={"b1": {"q0": {"seat": "window", "count": 2}}})
    assert [p.id for p in again.value.pending] == ["b1"]
    assert [p.id for p in pending(await context.get_history())] == ["b1"]
    assert await bot.resume(context, answers={"b1": {"q0": {"seat": "aisle", "count": 3}}}) == (
        "Booked."
    )
    assert results_of(await context.get_history())["b1"].text == "booked monday: 3 aisle meal=True"


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ({"zz": {"q0": None}}, "no tool call 'zz' waits for input"),
        ({"b1": {}}, "answers for tool call 'b1' leave out q0"),
        ({"b1": {"q0": None, "q9": None}}, "tool call 'b1' was not asked q9"),
        ({"b1": {"q0": {"seat": "window", "count": 12}}}, "12 is greater than the maximum of 9"),
        ({"b1": {"q0": {"seat": "window", "count": 1, "pet": "cat"}}}, "did not ask for: pet"),
        ({"b1": "window"}, "answers maps tool call ids to"),
    ],
)
async def test_answers_that_do_not_fit_are_refused_and_nothing_is_stored(
    answers: Mapping[str, Any], said: str
) -> None:
    context, _ = await paused()
    before = await context.get_history()
    bot, _ = make(Reply("Booked."))
    with pytest.raises((ValueError, TypeError), match=said):
        await bot.resume(context, answers=answers)
    assert await context.get_history() == before


async def test_a_call_waiting_for_input_is_not_approved_and_an_approval_is_not_answered() -> None:
    model = ScriptedTransport(
        [
            Reply(
                "Both.",
                tool_calls=[
                    Call("delete", {"path": "a"}, id="d1"),
                    Call("book", {"day": "friday"}, id="b1"),
                ],
            ),
            Reply("Done."),
        ]
    )
    bot = Agent("You help.", model, tools=[book, delete], approval={"delete"})
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as caught:
        await bot.run("go", context)
    assert [(p.id, bool(p.asks)) for p in caught.value.pending] == [("d1", False), ("b1", True)]
    with pytest.raises(ValueError, match="waits for input"):
        await bot.resume(context, approve=["b1"])
    with pytest.raises(ValueError, match="no tool call 'd1' waits for input"):
        await bot.resume(context, answers={"d1": {"q0": None}})
    ran.clear()
    answer = {"b1": {"q0": {"seat": "aisle", "count": 1}}}
    assert await bot.resume(context, approve=["d1"], answers=answer) == "Done."
    assert [r[0] for r in ran] == ["delete", "book"]


async def test_a_call_answered_by_a_resume_that_died_is_answered_interrupted() -> None:
    context, _ = await paused()

    @tool
    def book(day: str) -> str:
        """Dies while running."""
        raise KeyboardInterrupt

    dying = Agent("You help.", ScriptedTransport([]), tools=[book, look])
    with pytest.raises(KeyboardInterrupt):
        await dying.resume(context, answers={"b1": {"q0": None}})
    ran.clear()
    fresh, model = make(Reply("Sorry."))
    assert await fresh.run("again?", context) == "Sorry."
    assert ran == []  # never run again: it may have run
    assert "interrupted" in results_of(await context.get_history())["b1"].text
    no_records(model.requests[0].messages)


async def test_two_resumes_at_once_on_sqlite_run_the_call_once(tmp_path: Any) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        bot, _ = make(asking_reply())
        with pytest.raises(RunPaused):
            await bot.run("book me in", await store.open("chat"))
        ran.clear()
        ready = asyncio.Barrier(2)
        contexts = [Together(await store.open("chat"), ready) for _ in range(2)]
        answer = {"b1": {"q0": {"seat": "window", "count": 1}}}
        outcomes = await asyncio.gather(
            *(make(Reply("Done."))[0].resume(c, answers=answer) for c in contexts),  # type: ignore[arg-type]
            return_exceptions=True,
        )
        assert sorted(type(o).__name__ for o in outcomes) == ["ConflictError", "str"]
        assert any(isinstance(o, ConflictError) for o in outcomes)
        assert [r[0] for r in ran] == ["book"]
        history = await (await store.open("chat")).get_history()
        assert [r.tool_use_id for m in history for r in m.tool_results].count("b1") == 1


async def test_the_pause_survives_the_store_being_opened_again(tmp_path: Any) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        bot, _ = make(asking_reply())
        with pytest.raises(RunPaused):
            await bot.run("book me in", await store.open("chat"))
    async with SQLiteStore(tmp_path / "s.db") as store:  # as another process would
        context = await store.open("chat")
        (call,) = pending(await context.get_history())
        assert call.asks == (question(),)
        fresh, model = make(Reply("Done."))
        ran.clear()
        assert await fresh.resume(context, answers={"b1": {"q0": None}}) == "Done."
        assert ran[0][0] == "book"
        no_records(model.requests[0].messages)
