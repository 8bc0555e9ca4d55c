"""A run's stream keeps axio's promise that a run ends with one ``SessionEndEvent`` also when
its reader stops early: closed (``aclose``, leaving ``async with`` or ``async for``) or cancelled
at any point, the ``on_event`` observer is told the run ended (stop reason ``cancelled``), the
stream records that same event, and the history stays valid. And a transport that reports a
failure as an ``Error`` event ends the run with it instead of having its reply kept."""

from __future__ import annotations

import asyncio
import random

import pytest

from tether import (
    Agent,
    AgentStream,
    Error,
    IterationEnd,
    MemoryContextStore,
    SessionEndEvent,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    Usage,
    tool,
)
from tether.testing import Call, Reply, ScriptedTransport, StubTransport


@tool
async def slow(n: int) -> str:
    """Wait a little, then answer."""
    await asyncio.sleep(0.01 * n)
    return f"slept {n}"


def tool_run(seen: list[StreamEvent], *, observer_async: bool = False) -> Agent:
    """An agent whose model calls ``slow`` twice at once, then once more, then answers."""
    transport = ScriptedTransport(
        [
            Reply("Let me wait.", tool_calls=[Call("slow", {"n": 1}), Call("slow", {"n": 2})]),
            Reply(tool_calls=[Call("slow", {"n": 1})]),
            Reply("Done waiting."),
        ]
    )

    async def tell(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    return Agent("s", transport, tools=[slow], on_event=tell if observer_async else seen.append)


def check_history(store: MemoryContextStore) -> None:
    """Every stored call has exactly one result, in the message after it."""
    messages = store.messages
    for i, message in enumerate(messages):
        calls = [b.id for b in message.tool_uses]
        if calls:
            assert i + 1 < len(messages), "a stored call has no results after it"
            assert [r.tool_use_id for r in messages[i + 1].tool_results] == calls


def check_one_end(seen: list[StreamEvent], stream: AgentStream, stop: StopReason) -> None:
    ends = [e for e in seen if isinstance(e, SessionEndEvent)]
    assert len(ends) == 1 and seen[-1] is ends[0]
    assert ends[0].stop_reason is stop
    assert stream.done and stream.stop_reason is stop


async def test_aclose_mid_reply_tells_the_observer_the_run_ended() -> None:
    seen: list[StreamEvent] = []
    store = MemoryContextStore()
    stream = tool_run(seen).run_stream("go", store)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    check_one_end(seen, stream, StopReason.CANCELLED)
    end = await stream.get_session_end()
    assert end is seen[-1]  # the stream records the very event the observer got
    assert end.iterations == 1 and end.error is None
    assert [e async for e in stream] == []  # nothing after the end
    await stream.aclose()  # closing again tells nobody anything twice
    assert [e for e in seen if isinstance(e, SessionEndEvent)] == [end]
    check_history(store)


async def test_leaving_async_with_mid_tool_call_ends_the_run_for_an_async_observer() -> None:
    seen: list[StreamEvent] = []
    store = MemoryContextStore()
    async with tool_run(seen, observer_async=True).run_stream("go", store) as stream:
        async for event in stream:
            if isinstance(event, ToolDispatch):
                break
    check_one_end(seen, stream, StopReason.CANCELLED)
    check_history(store)
    results = store.messages[-1].tool_results
    assert results and all(r.is_error and "interrupted" in r.text for r in results)


async def test_a_stream_closed_before_its_first_event_ended_without_running() -> None:
    seen: list[StreamEvent] = []
    store = MemoryContextStore()
    stream = tool_run(seen).run_stream("go", store)
    await stream.aclose()
    assert stream.done and stream.stop_reason is StopReason.CANCELLED
    end = await stream.get_session_end()
    assert end.stop_reason is StopReason.CANCELLED and end.iterations == 0
    assert seen == [] and store.messages == []  # the run never began: nothing to tell or keep


async def test_a_run_that_ended_is_not_ended_again_by_aclose() -> None:
    seen: list[StreamEvent] = []
    stream = tool_run(seen).run_stream("go")
    assert await stream.get_final_text() == "Done waiting."
    await stream.aclose()
    check_one_end(seen, stream, StopReason.END_TURN)


async def test_closed_after_every_event_the_run_ends_once() -> None:
    """Close the stream after its k-th event, for every k: one end for the observer, last,
    and a valid history each time."""
    seen: list[StreamEvent] = []
    total = len([e async for e in tool_run(seen).run_stream("go")])
    assert total > 15
    for k in range(1, total):
        seen = []
        store = MemoryContextStore()
        stream = tool_run(seen).run_stream("go", store)
        read = 0
        async for _ in stream:
            read += 1
            if read == k:
                break
        await stream.aclose()
        stop = StopReason.END_TURN if k == total else StopReason.CANCELLED
        check_one_end(seen, stream, stop)
        assert await stream.get_session_end() is seen[-1]
        check_history(store)


@pytest.mark.parametrize("seed", range(25))
async def test_a_reader_cancelled_at_a_random_moment_ends_the_run_once(seed: int) -> None:
    seen: list[StreamEvent] = []
    store = MemoryContextStore()
    stream = tool_run(seen, observer_async=seed % 2 == 1).run_stream("go", store)

    async def read() -> None:
        async for _ in stream:
            pass

    task = asyncio.create_task(read())
    await asyncio.sleep(random.Random(seed).uniform(0, 0.04))
    if task.cancel():
        with pytest.raises(asyncio.CancelledError):
            await task
    if stream.stop_reason is StopReason.END_TURN:  # the run won the race
        check_one_end(seen, stream, StopReason.END_TURN)
    else:
        check_one_end(seen, stream, StopReason.CANCELLED)
    assert await stream.get_session_end() is seen[-1]
    check_history(store)


# --------------------------------------------------------------------------------------------
# A transport that reports its failure as an Error event


def failing_mid_reply(exc: BaseException) -> StubTransport:
    return StubTransport(
        [[TextDelta(0, "partial"), Error(exc), IterationEnd(1, StopReason.end_turn, Usage(1, 1))]]
    )


async def test_an_error_event_from_the_transport_ends_the_run_with_it() -> None:
    boom = RuntimeError("boom")
    store = MemoryContextStore()
    events = [e async for e in Agent("s", failing_mid_reply(boom)).run_stream("go", store)]
    errors = [e for e in events if isinstance(e, Error)]
    assert [e.exception for e in errors] == [boom]  # once, as the run's own end
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason is StopReason.ERROR and end.error is boom
    check_history(store)


async def test_an_error_event_from_the_transport_is_raised_by_the_reads() -> None:
    boom = RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        await Agent("s", failing_mid_reply(boom)).run_stream("go").get_final_text()
    with pytest.raises(RuntimeError, match="boom"):
        await Agent("s", failing_mid_reply(boom)).run("go")
    end = await Agent("s", failing_mid_reply(boom)).run_stream("go").get_session_end()
    assert end.error is boom
    # read as axio reads a stream of events, the same run raises StreamError from it
    stream = AgentStream(Agent("s", failing_mid_reply(boom)).run_stream("go"))
    with pytest.raises(StreamError) as caught:
        await stream.get_final_text()
    assert caught.value.__cause__ is boom
    stream = AgentStream(Agent("s", failing_mid_reply(boom)).run_stream("go"))
    with pytest.raises(StreamError):
        await stream.get_session_end()
