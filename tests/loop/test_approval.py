"""Approval that outlives the process: ``Agent(approval=...)`` names the calls that wait for a
person. A run whose reply asks for one stores the reply, runs its other calls and ends PAUSED with
the held calls unanswered in the store; ``agent.resume(context, approve=, deny=)`` decides them
from the stored session (any process), once each, with the stored arguments, and the run goes on
through the one loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from rendezvous import Together
from tether import Agent, SessionEndEvent, ToolDispatch, ToolResult, tool
from tether.context import MemoryContextStore
from tether.errors import ConflictError, RunPaused
from tether.events import IterationStart, PendingCall
from tether.loop.approval import RECORD, decision_message, pending
from tether.loop.middleware import Middleware, RunHandler, RunRequest, ToolHandler, ToolRequest
from tether.messages import Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock
from tether.stores import SQLiteStore
from tether.stores.jsonforms import (
    event_from_dict,
    event_to_dict,
    exception_from_dict,
    exception_to_dict,
    message_from_json,
    message_to_json,
)
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.types import StopReason, Usage

ran: list[tuple[str, dict[str, Any]]] = []


@tool
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(("delete", {"path": path}))
    return f"deleted {path}"


@tool
def pay(amount: int) -> str:
    """Pay someone."""
    ran.append(("pay", {"amount": amount}))
    return f"paid {amount}"


@tool
def look(path: str) -> str:
    """Read a file."""
    ran.append(("look", {"path": path}))
    return f"contents of {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def paused_reply() -> Reply:
    """One reply: a call that needs approval, one that does not."""
    return Reply(
        "Let me.",
        tool_calls=[
            Call("delete", {"path": "a.txt"}, id="d1"),
            Call("look", {"path": "b.txt"}, id="l1"),
        ],
    )


def make(*replies: Reply | Hold, **fields: Any) -> tuple[Agent, ScriptedTransport]:
    model = ScriptedTransport(list(replies))
    fields.setdefault("approval", {"delete"})
    return Agent("You help.", model, tools=[delete, pay, look], **fields), model


async def paused_session(**fields: Any) -> tuple[Agent, ScriptedTransport, MemoryContextStore]:
    bot, model = make(paused_reply(), Reply("All done."), **fields)
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await bot.run("clean up", context)
    return bot, model, context


def valid_for_a_model(messages: tuple[Message, ...] | list[Message]) -> None:
    """What a provider accepts: every call answered right after it (results may span several
    user messages), no result without its call, no empty message, no tether record."""
    for i, message in enumerate(messages):
        assert message.content, i
        for block in message.content:
            assert not (type(block) is ReasoningBlock and block.provider == RECORD), i
        asked = [b.id for b in message.tool_uses]
        if not asked:
            continue
        answered: list[str] = []
        for later in messages[i + 1 :]:
            if later.role != "user" or not later.tool_results:
                break
            answered.extend(r.tool_use_id for r in later.tool_results)
        assert sorted(answered) == sorted(asked), (i, asked, answered)


def results_of(history: list[Message]) -> dict[str, ToolResultBlock]:
    return {r.tool_use_id: r for m in history for r in m.tool_results}


# -- configuration --------------------------------------------------------------------------------


def test_approval_takes_tool_names_or_a_predicate() -> None:
    model = ScriptedTransport([])
    Agent("", model, approval={"delete"})
    Agent("", model, approval=["delete", "pay"])
    Agent("", model, approval=lambda name, input: name == "pay")
    with pytest.raises(TypeError, match="approval"):
        Agent("", model, approval="delete")  # a string is not a set of names
    with pytest.raises(TypeError, match="approval"):
        Agent("", model, approval=3)  # type: ignore[arg-type]


def test_approval_cannot_start_tools_early() -> None:
    with pytest.raises(ValueError, match="start_tools_early"):
        Agent("", ScriptedTransport([]), approval={"delete"}, start_tools_early=True)


# -- pausing --------------------------------------------------------------------------------------


async def test_a_held_call_pauses_the_run_after_the_other_calls_ran() -> None:
    bot, model = make(paused_reply(), Reply("never sent"))
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as info:
        await bot.run("clean up", context)
    assert info.value.pending == (PendingCall("d1", "delete", {"path": "a.txt"}),)
    assert "delete" in str(info.value) and "d1" in str(info.value)
    assert ran == [("look", {"path": "b.txt"})]  # the other call ran, the held one did not
    assert model.call_count == 1
    history = await context.get_history()
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert [b.id for b in history[1].tool_uses] == ["d1", "l1"]  # the model's message, all calls
    assert set(results_of(history)) == {"l1"}  # the held call stays unanswered
    assert pending(history) == info.value.pending


async def test_the_stream_ends_paused_with_the_pending_calls() -> None:
    bot, _ = make(paused_reply())
    stream = bot.run_stream("clean up")
    events = [event async for event in stream]
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason is StopReason.PAUSED and end.error is None
    assert end.pending == (PendingCall("d1", "delete", {"path": "a.txt"}),)
    assert end.iterations == 1
    assert [e.tool_use_id for e in events if isinstance(e, ToolDispatch)] == ["l1"]
    assert stream.stop_reason is StopReason.PAUSED
    with pytest.raises(RunPaused):
        await stream.get_final_text()
    assert (await stream.get_session_end()).pending == end.pending


async def test_a_predicate_decides_per_call_from_name_and_input() -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []

    def big_payments(name: str, input: Mapping[str, Any]) -> bool:
        seen.append((name, dict(input)))
        return name == "pay" and input["amount"] > 100

    reply = Reply(
        tool_calls=[Call("pay", {"amount": 5}, id="p1"), Call("pay", {"amount": 500}, id="p2")]
    )
    bot, _ = make(reply, approval=big_payments)
    with pytest.raises(RunPaused) as info:
        await bot.run("pay them")
    assert [p.id for p in info.value.pending] == ["p2"]
    assert ran == [("pay", {"amount": 5})]
    assert seen == [("pay", {"amount": 5}), ("pay", {"amount": 500})]


async def test_when_every_call_is_held_nothing_runs() -> None:
    reply = Reply(
        tool_calls=[Call("delete", {"path": "x"}, id="d1"), Call("delete", {"path": "y"}, id="d2")]
    )
    bot, _ = make(reply)
    context = MemoryContextStore()
    with pytest.raises(RunPaused) as info:
        await bot.run("clean up", context)
    assert [p.id for p in info.value.pending] == ["d1", "d2"]
    assert ran == []
    assert [m.role for m in await context.get_history()] == ["user", "assistant"]


async def test_calls_that_need_no_approval_run_as_usual() -> None:
    bot, model = make(Reply(tool_calls=[Call("look", {"path": "a"})]), Reply("fine"))
    context = MemoryContextStore()
    assert await bot.run("look", context) == "fine"
    assert model.call_count == 2
    history = await context.get_history()
    assert all(type(b) is not ReasoningBlock for m in history for b in m.content)


async def test_a_typed_run_pauses_instead_of_reading_an_answer() -> None:
    class Done(BaseModel):
        ok: bool

    bot, _ = make(paused_reply(), Reply('{"ok": true}'), output_type=Done)
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await bot.run("clean up", context)
    assert await bot.resume(context, approve=["d1"]) == Done(ok=True)


# -- while paused ---------------------------------------------------------------------------------


async def test_reopening_a_paused_session_never_interrupts_its_pending_calls() -> None:
    _, _, context = await paused_session()
    before = await context.get_history()
    plain = ScriptedTransport([Reply("never sent")])
    for agent in (Agent("", plain), Agent("", plain, approval={"delete"})):
        with pytest.raises(RunPaused) as info:
            await agent.run("anything new?", context)
        assert [p.id for p in info.value.pending] == ["d1"]
    assert plain.call_count == 0  # while paused, nothing is sent
    assert await context.get_history() == before  # nor stored: not the message, not a result


async def test_a_call_an_interrupted_run_left_open_is_answered_but_a_pending_one_is_not() -> None:
    # The process died while the other call ran: its result never reached the store.
    bot, model = make(Reply("After."))
    _, _, source = await paused_session()
    marked = (await source.get_history())[1]  # the reply, stored before its calls ran
    assert [b.id for b in marked.tool_uses] == ["d1", "l1"]
    context = MemoryContextStore([Message("user", "clean up"), marked])
    ran.clear()
    with pytest.raises(RunPaused) as info:
        await bot.run(None, context)
    assert [p.id for p in info.value.pending] == ["d1"]
    history = await context.get_history()
    assert results_of(history)["l1"].is_error and "interrupted" in results_of(history)["l1"].text
    assert "d1" not in results_of(history)
    assert await bot.resume(context, approve=["d1"]) == "After."
    assert ran == [("delete", {"path": "a.txt"})]
    valid_for_a_model(model.requests[0].messages)


# -- resuming -------------------------------------------------------------------------------------


async def test_an_approved_call_runs_with_the_stored_arguments_and_the_run_goes_on() -> None:
    bot, model, context = await paused_session()
    ran.clear()
    assert await bot.resume(context, approve=["d1"]) == "All done."
    assert ran == [("delete", {"path": "a.txt"})]
    history = await context.get_history()
    assert results_of(history)["d1"] == ToolResultBlock("d1", "deleted a.txt")
    assert model.call_count == 2
    sent = model.requests[1].messages
    valid_for_a_model(sent)
    assert [m.role for m in sent] == ["user", "assistant", "user", "user"]
    assert history[-1] == Message("assistant", "All done.")
    assert pending(history) == ()


async def test_a_denied_call_gets_the_reason_as_its_result_and_never_runs() -> None:
    bot, model, context = await paused_session()
    ran.clear()
    assert await bot.resume(context, deny={"d1": "not that file"}) == "All done."
    assert ran == []
    result = results_of(await context.get_history())["d1"]
    assert result.text == "Tool call denied: not that file" and result.is_error
    valid_for_a_model(model.requests[1].messages)


async def test_a_call_left_undecided_stays_pending_and_the_run_pauses_again_at_once() -> None:
    reply = Reply(
        tool_calls=[
            Call("delete", {"path": "x"}, id="d1"),
            Call("delete", {"path": "y"}, id="d2"),
            Call("delete", {"path": "z"}, id="d3"),
        ]
    )
    bot, model = make(reply, Reply("Both done."))
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await bot.run("clean up", context)
    with pytest.raises(RunPaused) as info:
        await bot.resume(context, approve=["d2"])
    assert [p.id for p in info.value.pending] == ["d1", "d3"]
    assert ran == [("delete", {"path": "y"})]
    assert model.call_count == 1  # paused again before any model call
    assert [p.id for p in pending(await context.get_history())] == ["d1", "d3"]
    assert await bot.resume(context, approve={"d3"}, deny={"d1": "keep x"}) == "Both done."
    assert ran == [("delete", {"path": "y"}), ("delete", {"path": "z"})]
    valid_for_a_model(model.requests[1].messages)


async def test_resume_streams_the_decided_calls_then_the_run() -> None:
    bot, _, context = await paused_session()
    stream = bot.resume_stream(context, approve=["d1"])
    events = [event async for event in stream]
    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["ToolDispatch", "ToolResult"]
    assert isinstance(events[1], ToolResult) and events[1].content == "deleted a.txt"
    assert isinstance(events[2], IterationStart)
    assert isinstance(events[-1], SessionEndEvent) and events[-1].stop_reason is StopReason.END_TURN
    assert events[-1].pending == ()
    assert await stream.get_final_text() == "All done."


async def test_middleware_wraps_a_resume_and_its_approved_calls() -> None:
    class Seen(Middleware):
        def __init__(self) -> None:
            self.tools: list[tuple[str, int]] = []
            self.events: list[str] = []

        async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> Any:
            self.tools.append((call.id, call.iteration))
            return await call_next(call)

        async def wrap_run(self, run: RunRequest, call_next: RunHandler) -> Any:
            async for event in call_next(run):
                self.events.append(type(event).__name__)
                yield event

    seen = Seen()
    bot, _, context = await paused_session(middleware=[seen])
    assert seen.tools == [("l1", 1)]
    seen.events.clear()
    assert await bot.resume(context, approve=["d1"]) == "All done."
    assert seen.tools[1:] == [("d1", 0)]  # before the resumed run's first iteration
    assert seen.events[:3] == ["ToolDispatch", "ToolResult", "IterationStart"]
    assert seen.events[-1] == "SessionEndEvent"


async def test_a_denial_shows_as_the_calls_result_event() -> None:
    bot, _, context = await paused_session()
    events = [e async for e in bot.resume_stream(context, deny={"d1": "no"})]
    denied = [e for e in events if isinstance(e, ToolResult)]
    assert [(e.tool_use_id, e.is_error, e.content) for e in denied] == [
        ("d1", True, "Tool call denied: no")
    ]


async def test_a_later_run_sends_no_record_of_the_pause() -> None:
    bot, model = make(
        Reply(tool_calls=[Call("delete", {"path": "x"}, id="d1")]), Reply("Done."), Reply("Hi.")
    )
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await bot.run("clean up", context)
    await bot.resume(context, approve=["d1"])
    assert await bot.run("thanks", context) == "Hi."
    valid_for_a_model(model.requests[2].messages)
    assert [m.role for m in model.requests[2].messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


# -- decisions that cannot be taken ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("approve", "deny", "words"),
    [
        (["nope"], {}, "nope"),  # an unknown id
        (["l1"], {}, "l1"),  # a call that never waited (it ran)
        (["d1"], {"d1": "no"}, "both"),  # approved and denied at once
        (["d1", "d1"], {}, "twice"),
    ],
)
async def test_only_pending_calls_can_be_decided(
    approve: list[str], deny: dict[str, str], words: str
) -> None:
    bot, model, context = await paused_session()
    before = await context.get_history()
    ran.clear()
    with pytest.raises(ValueError, match=words):
        await bot.resume(context, approve=approve, deny=deny)
    assert await context.get_history() == before  # nothing changed
    assert ran == [] and model.call_count == 1


async def test_a_call_is_decided_once() -> None:
    bot, model, context = await paused_session()
    await bot.resume(context, approve=["d1"])
    after = await context.get_history()
    ran.clear()
    for approve, deny in ((["d1"], {}), ([], {"d1": "changed my mind"})):
        with pytest.raises(ValueError, match="d1"):
            await bot.resume(context, approve=approve, deny=deny)
    assert ran == [] and await context.get_history() == after and model.call_count == 2


async def test_decisions_must_be_ids() -> None:
    bot, _, context = await paused_session()
    with pytest.raises(TypeError, match="approve"):
        await bot.resume(context, approve="d1")
    with pytest.raises(TypeError, match="deny"):
        await bot.resume(context, deny=["d1"])  # type: ignore[arg-type]


async def test_resume_of_a_session_with_nothing_pending_is_an_error() -> None:
    bot, _ = make(Reply("Hi."))
    context = MemoryContextStore()
    await bot.run("hello", context)
    with pytest.raises(ValueError, match="d1"):
        await bot.resume(context, approve=["d1"])


# -- the store alone knows ------------------------------------------------------------------------


async def test_pending_is_read_from_the_stored_messages_alone() -> None:
    _, _, context = await paused_session()
    history = await context.get_history()
    copied = [message_from_json(message_to_json(m)) for m in history]  # as any store keeps them
    assert copied == history
    assert pending(copied) == (PendingCall("d1", "delete", {"path": "a.txt"}),)
    fresh, model = make(Reply("Resumed elsewhere."))  # another process: another agent object
    assert await fresh.resume(MemoryContextStore(copied), approve=["d1"]) == "Resumed elsewhere."
    valid_for_a_model(model.requests[0].messages)


async def test_the_caller_cannot_change_the_stored_arguments() -> None:
    _, _, context = await paused_session()
    history = await context.get_history()
    # Whatever an approval says, the call that runs is the one stored with the model's reply.
    fresh, _ = make(Reply("ok"), approval=lambda name, input: False)
    ran.clear()
    await fresh.resume(MemoryContextStore(history), approve=["d1"])
    assert ran == [("delete", {"path": "a.txt"})]


def test_pending_calls_and_paused_runs_round_trip_as_json() -> None:
    call = PendingCall("d1", "delete", {"path": "a.txt"})
    end = SessionEndEvent(StopReason.PAUSED, iterations=1, pending=(call,))
    data = json.loads(json.dumps(event_to_dict(end)))
    assert data["stop_reason"] == "paused"
    assert event_from_dict(data) == end
    assert event_from_dict({**data, "pending": []}) == SessionEndEvent(
        StopReason.PAUSED, iterations=1
    )
    old = {k: v for k, v in data.items() if k != "pending"}  # written before the field existed
    assert event_from_dict(old).pending == ()
    error = exception_from_dict(json.loads(json.dumps(exception_to_dict(RunPaused((call,))))))
    assert isinstance(error, RunPaused) and error.pending == (call,)


def test_the_runs_own_end_event_is_the_class_built_in_one_step() -> None:
    from dataclasses import fields

    from tether.events import session_end

    call = PendingCall("d1", "delete")
    error = ValueError("x")
    made = session_end(StopReason.PAUSED, Usage(1, 2), error, 3, (call,))
    assert made == SessionEndEvent(StopReason.PAUSED, Usage(1, 2), error, 3, (call,))
    assert made.error is error
    assert [f.name for f in fields(SessionEndEvent)] == [
        "stop_reason",
        "total_usage",
        "error",
        "iterations",
        "pending",
    ]  # session_end sets each of these


def test_run_paused_pickles_with_its_calls() -> None:
    import pickle

    error = RunPaused((PendingCall("d1", "delete", {"path": "a.txt"}),))
    back = pickle.loads(pickle.dumps(error))
    assert back.pending == error.pending and str(back) == str(error)


# -- failures around a pause ----------------------------------------------------------------------


async def test_a_run_cancelled_while_the_other_calls_run_keeps_the_held_call_pending() -> None:
    gate = asyncio.Event()

    @tool
    async def slow(path: str) -> str:
        """Wait."""
        gate.set()
        await asyncio.sleep(30)
        return "late"

    reply = Reply(
        tool_calls=[Call("delete", {"path": "a"}, id="d1"), Call("slow", {"path": "b"}, id="s1")]
    )
    model = ScriptedTransport([reply, Reply("After.")])
    bot = Agent("", model, tools=[delete, slow], approval={"delete"})
    context = MemoryContextStore()
    task = asyncio.ensure_future(bot.run("go", context))
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    history = await context.get_history()
    assert "interrupted" in results_of(history)["s1"].text
    assert [p.id for p in pending(history)] == ["d1"]
    assert await bot.resume(context, approve=["d1"]) == "After."
    valid_for_a_model(model.requests[1].messages)


async def test_a_resume_cancelled_while_the_approved_call_runs_answers_it_interrupted() -> None:
    gate = asyncio.Event()

    @tool
    async def slow_delete(path: str) -> str:
        """Delete slowly."""
        gate.set()
        await asyncio.sleep(30)
        return "late"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("slow_delete", {"path": "a"}, id="d1")]), Reply("Over.")]
    )
    bot = Agent("", model, tools=[slow_delete], approval={"slow_delete"})
    context = MemoryContextStore()
    with pytest.raises(RunPaused):
        await bot.run("go", context)
    task = asyncio.ensure_future(bot.resume(context, approve=["d1"]))
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    history = await context.get_history()
    assert "interrupted" in results_of(history)["d1"].text  # decided: it never runs again
    assert pending(history) == ()
    with pytest.raises(ValueError, match="d1"):
        await bot.resume(context, approve=["d1"])
    assert await bot.run(None, context) == "Over."
    valid_for_a_model(model.requests[1].messages)


async def test_a_call_approved_by_a_resume_that_died_never_runs_again() -> None:
    _, _, context = await paused_session()
    history = await context.get_history()
    call = history[1].tool_uses[0]
    # The resume stored its decision, then its process died before the call's result landed.
    crashed = MemoryContextStore([*history, decision_message([call], [])])
    assert pending(await crashed.get_history()) == ()
    fresh, model = make(Reply("Carry on."))
    ran.clear()
    with pytest.raises(ValueError, match="already approved"):
        await fresh.resume(crashed, approve=["d1"])
    assert await fresh.run(None, crashed) == "Carry on."  # the next run answers it
    assert ran == []
    assert "interrupted" in results_of(await crashed.get_history())["d1"].text
    valid_for_a_model(model.requests[0].messages)


# -- two resumes at once ------------------------------------------------------------------------


async def test_two_resumes_at_once_on_sqlite_run_an_approved_call_once(tmp_path: Any) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        bot, _ = make(paused_reply())
        first = await store.open("chat")
        with pytest.raises(RunPaused):
            await bot.run("clean up", first)
        ran.clear()
        ready = asyncio.Barrier(2)
        contexts = [Together(await store.open("chat"), ready) for _ in range(2)]
        outcomes = await asyncio.gather(
            *(make(Reply("Done."))[0].resume(c, approve=["d1"]) for c in contexts),  # type: ignore[arg-type]
            return_exceptions=True,
        )
        assert sorted(type(o).__name__ for o in outcomes) == ["ConflictError", "str"]
        assert ran == [("delete", {"path": "a.txt"})]
        history = await (await store.open("chat")).get_history()
        assert pending(history) == ()
        assert [r.tool_use_id for m in history for r in m.tool_results].count("d1") == 1
        assert history[-1] == Message("assistant", "Done.")
        assert any(isinstance(o, ConflictError) for o in outcomes)


async def test_the_pause_survives_the_store_being_opened_again(tmp_path: Any) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        bot, _ = make(paused_reply())
        with pytest.raises(RunPaused):
            await bot.run("clean up", await store.open("chat"))
    async with SQLiteStore(tmp_path / "s.db") as store:  # as another process would
        context = await store.open("chat")
        assert [p.id for p in pending(await context.get_history())] == ["d1"]
        fresh, model = make(Reply("Done."))
        ran.clear()
        assert await fresh.resume(context, approve=["d1"]) == "Done."
        assert ran == [("delete", {"path": "a.txt"})]
        valid_for_a_model(model.requests[0].messages)


def test_two_resumes_never_store_the_same_decision() -> None:
    # A store may take an identical append at a stale position for its own retry (Redis does):
    # each resume's decision record carries a token of its own, so the second one conflicts.
    call = ToolUseBlock("d1", "delete", {"path": "a"})
    denial = ToolResultBlock("d2", "Tool call denied: no", True)
    assert decision_message([call], [denial]) != decision_message([call], [denial])
    assert decision_message([], [denial]) != decision_message([], [denial])


def test_records_are_tether_reasoning_no_wire_format_sends() -> None:
    from tether.transports.codecs.anthropic import AnthropicCodec
    from tether.transports.codecs.openai_chat import OpenAIChatCodec
    from tether.transports.codecs.openai_responses import OpenAIResponsesCodec
    from tether.transports.options import ModelOptions

    history = asyncio.run(_paused_history())
    marked = history[1]
    assert any(type(b) is ReasoningBlock and b.provider == RECORD for b in marked.content)
    for codec in (AnthropicCodec(), OpenAIChatCodec(), OpenAIResponsesCodec()):
        body = json.dumps(codec.encode("m", [marked], [], "", ModelOptions(), True))
        assert RECORD not in body and "d1" in body


async def _paused_history() -> list[Message]:
    _, _, context = await paused_session()
    return await context.get_history()


def test_text_blocks_of_the_paused_reply_are_kept() -> None:
    history = asyncio.run(_paused_history())
    assert history[1].content[0] == TextBlock("Let me.")
