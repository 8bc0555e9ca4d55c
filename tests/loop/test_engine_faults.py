"""Faults found by probing the engine, each pinned by a test that failed before its fix: tool
results with no text form, repeated cancellation during cleanup, a stalled stream under a
cancellation token, timeouts, interrupts escaping parallel tools, duplicate call ids, abandoned
streams, and ``Agent.dispatch_tools``. The faults of tools themselves are pinned in
tests/tools/test_tool_faults.py, those of interrupts in tests/base/test_interrupt.py."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agent_runs import agent_of, one_call_then
from tether import (
    Agent,
    CancellationToken,
    MemoryContextStore,
    Message,
    RunCancelled,
    StopReason,
    StreamEvent,
    TextDelta,
    Tool,
    ToolDispatch,
    ToolResult,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from tether.testing import Call, Reply, ScriptedTransport, StubTransport, make_text_response


def assert_every_call_answered_once(history: Sequence[Message]) -> None:
    """Each tool call is followed by exactly one result, before the next assistant message."""
    open_calls: list[str] = []
    for message in history:
        if message.role == "assistant":
            assert not open_calls, f"calls {open_calls} have no result before {message!r}"
            open_calls = [b.id for b in message.tool_uses]
            assert len(set(open_calls)) == len(open_calls), f"repeated ids in {message!r}"
        for result in message.tool_results:
            assert result.tool_use_id in open_calls, f"result for unknown or answered call {result}"
            open_calls.remove(result.tool_use_id)
    assert not open_calls, f"calls {open_calls} were never answered"


# -- a tool result with no text form is an error result for that call, not the end of the run -----


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


@pytest.mark.parametrize(
    "make",
    [lambda: 10**5000, Unprintable, lambda: _deep_list(100_000), lambda: [Unprintable()], _cycle],
    ids=["huge-int", "raising-str", "deep-list", "list-of-raising-str", "cycle"],
)
async def test_a_result_with_no_text_form_does_not_end_the_run(make: Any) -> None:
    t = Tool("t", make, schema={"type": "object", "properties": {}})
    store = MemoryContextStore()
    answer = await agent_of(one_call_then("recovered"), [t]).run("go", store)
    assert answer == "recovered"
    (result,) = store.messages[2].tool_results
    if result.is_error:
        assert "cannot be turned into text" in result.text
    else:  # a cycle has a text form through repr: that is fine, it is not lost either
        assert "self" in result.text
    assert_every_call_answered_once(store.messages)


async def test_an_exception_whose_str_raises_still_reaches_the_model() -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise RuntimeError("nope")

    def fails() -> str:
        raise Weird

    store = MemoryContextStore()
    t = Tool("t", fails, schema={"type": "object", "properties": {}})
    assert await agent_of(one_call_then("ok"), [t]).run("go", store) == "ok"
    (result,) = store.messages[2].tool_results
    assert result.is_error and "Weird" in result.text


# -- cleanup survives repeated cancellation ------------------------------------------------------


class SlowStore(MemoryContextStore):
    """A store whose appends suspend (as a database's do) once ``slow`` is set."""

    __slots__ = ("append_started", "release", "slow")

    def __init__(self) -> None:
        super().__init__()
        self.slow = False
        self.append_started = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, message: Message) -> None:
        if self.slow:
            self.append_started.set()
            await self.release.wait()
        await super().append(message)


@pytest.mark.timeout(10)
async def test_a_second_cancel_during_cleanup_leaves_no_call_unanswered() -> None:
    started = asyncio.Event()

    async def forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    tools = [Tool(n, forever, schema={"type": "object", "properties": {}}) for n in ("a", "b")]
    model = ScriptedTransport([Reply(tool_calls=[Call("a"), Call("b")]), Reply("never")])
    store = SlowStore()
    task = asyncio.create_task(agent_of(model, tools).run("go", store))
    await started.wait()
    store.slow = True
    task.cancel()  # the first cancel: cleanup starts storing interrupted results
    await store.append_started.wait()
    for _ in range(3):  # more cancels while that append is suspended
        task.cancel()
        await asyncio.sleep(0)
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_every_call_answered_once(store.messages)
    assert [r.tool_use_id for r in store.messages[-1].tool_results] == ["call_1", "call_2"]


# -- the cancellation token stops a stalled stream at once ----------------------------------------


class StallingModel:
    """Says a few words, then waits forever without ending the turn (a stalled provider)."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.stalled = threading.Event()  # for a thread that cancels once the stream stalls

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        try:
            yield TextDelta(0, "Hello wor")
            self.stalled.set()
            await asyncio.Event().wait()
        finally:
            self.closed.set()


@pytest.mark.timeout(10)
@pytest.mark.parametrize("from_thread", [False, True])
async def test_token_interrupts_a_stalled_stream(from_thread: bool) -> None:
    model = StallingModel()
    token = CancellationToken()
    store = MemoryContextStore()
    events: list[StreamEvent] = []

    def cancel_when_stalled() -> None:
        model.stalled.wait(5)
        token.cancel()

    async for event in agent_of(model).run_stream("go", store, cancel=token):
        events.append(event)
        if isinstance(event, TextDelta):
            if from_thread:
                threading.Thread(target=cancel_when_stalled, daemon=True).start()
            else:
                token.cancel()
    end = events[-1]
    assert end.stop_reason is StopReason.CANCELLED  # type: ignore[union-attr]
    assert isinstance(end.error, RunCancelled)  # type: ignore[union-attr]
    assert model.closed.is_set()  # the provider's stream was closed, not left hanging
    assert store.messages[-1] == Message("assistant", "Hello wor")  # what was said is kept
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the interrupt did not leak


async def test_a_token_cancelled_between_events_spares_the_consumer_and_stops_the_turn() -> None:
    """Cancelled while the consumer holds an event (busy on its own await): that await is not
    cut short, and the turn stops before its next event."""
    token = CancellationToken()
    model = StubTransport([make_text_response("abc", chunks=3)])
    seen: list[StreamEvent] = []
    slept = False
    async for event in agent_of(model).run_stream("go", cancel=token):
        seen.append(event)
        if isinstance(event, TextDelta) and event.delta == "a":
            token.cancel()
            await asyncio.sleep(0.01)  # the consumer's own await must not be cancelled
            slept = True
    assert slept
    assert [e.delta for e in seen if isinstance(e, TextDelta)] == ["a"]
    assert seen[-1].stop_reason is StopReason.CANCELLED  # type: ignore[union-attr]


# -- tool timeouts --------------------------------------------------------------------------------


async def test_the_default_tool_timeout_ends_a_call_that_never_returns() -> None:
    async def stuck() -> str:
        await asyncio.Event().wait()
        return "never"

    t = Tool("t", stuck, schema={"type": "object", "properties": {}})
    store = MemoryContextStore()
    agent = agent_of(one_call_then("went on"), [t], tool_timeout=0.05)
    assert await agent.run("go", store) == "went on"
    (result,) = store.messages[2].tool_results
    assert result.is_error and "timed out after 0.05 s" in result.text
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_the_default_timeout_holds_even_if_the_tool_swallows_cancellation() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "I ignored that"
        return "never"

    t = Tool("t", stubborn, schema={"type": "object", "properties": {}})
    store = MemoryContextStore()
    assert await agent_of(one_call_then("ok"), [t], tool_timeout=0.05).run("go", store) == "ok"
    (result,) = store.messages[2].tool_results
    assert result.is_error and "timed out" in result.text


def test_the_agent_has_a_default_tool_timeout() -> None:
    assert agent_of(StubTransport([])).tool_timeout == 300.0
    with pytest.raises(ValueError, match="tool_timeout"):
        agent_of(StubTransport([]), tool_timeout=0)


async def test_a_tool_timeout_is_kept_for_a_sync_tool_without_thread() -> None:
    release = threading.Event()

    def blocking() -> str:
        release.wait(10)
        return "late"

    t = Tool("t", blocking, schema={"type": "object", "properties": {}}, timeout=0.05)
    store = MemoryContextStore()
    try:
        assert await agent_of(one_call_then("ok"), [t]).run("go", store) == "ok"
    finally:
        release.set()
    (result,) = store.messages[2].tool_results
    assert result.is_error and "timed out after 0.05 s" in result.text


# -- KeyboardInterrupt / SystemExit in one of several parallel tools ------------------------------


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
async def test_an_interrupt_in_a_parallel_tool_is_raised_in_the_runs_task(
    exc_type: type[BaseException],
) -> None:
    sibling_cancelled = asyncio.Event()

    async def slow() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            sibling_cancelled.set()
            raise
        return "never"

    async def interrupt() -> str:
        await asyncio.sleep(0)
        raise exc_type

    empty = {"type": "object", "properties": {}}
    tools = [Tool("slow", slow, schema=empty), Tool("boom", interrupt, schema=empty)]
    model = ScriptedTransport([Reply(tool_calls=[Call("slow"), Call("boom")]), Reply("never")])
    store = MemoryContextStore()
    with pytest.raises(exc_type):
        await agent_of(model, tools).run("go", store)
    assert sibling_cancelled.is_set()
    assert_every_call_answered_once(store.messages)
    await asyncio.sleep(0)  # the event loop is still running


# -- duplicate call ids ---------------------------------------------------------------------------


async def test_repeated_or_empty_call_ids_are_made_unique_in_history_and_results() -> None:
    echo = Tool(
        "echo",
        lambda text: text,
        schema={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("echo", {"text": "a"}, id="same"),
                    Call("echo", {"text": "b"}, id="same"),
                    Call("echo", {"text": "c"}, id=""),
                ]
            ),
            Reply("done"),
        ]
    )
    store = MemoryContextStore()
    events = [e async for e in agent_of(model, [echo]).run_stream("go", store)]
    ids = [b.id for b in store.messages[1].tool_uses]
    assert len(set(ids)) == 3 and all(ids)
    assert ids[0] == "same"
    results = {r.tool_use_id: r.text for r in store.messages[2].tool_results}
    assert results == dict(zip(ids, ["a", "b", "c"], strict=True))
    assert [e.tool_use_id for e in events if isinstance(e, ToolResult)] == ids
    assert_every_call_answered_once(model.requests[1].messages)


# -- leaving run_stream early without aclose ------------------------------------------------------


async def _abandon_during_tool(store: MemoryContextStore) -> None:
    release = asyncio.Event()

    async def slow() -> str:
        await release.wait()
        return "finished"

    t = Tool("slow", slow, schema={"type": "object", "properties": {}})
    model = ScriptedTransport([Reply(tool_calls=[Call("slow")]), Reply("never")])
    stream = agent_of(model, [t]).run_stream("go", store)
    async for event in stream:
        if isinstance(event, ToolDispatch):
            break  # no aclose(): the stream is just dropped


async def test_a_new_run_answers_calls_an_abandoned_stream_left_open() -> None:
    store = MemoryContextStore()
    await _abandon_during_tool(store)
    model = ScriptedTransport([Reply("fine")])
    assert await agent_of(model).run("again", store) == "fine"
    assert_every_call_answered_once(model.requests[0].messages)
    for _ in range(3):  # the dropped stream's own cleanup runs later; it must not answer twice
        gc.collect()
        await asyncio.sleep(0)
    assert_every_call_answered_once(store.messages)


async def test_an_abandoned_stream_cleans_up_when_collected() -> None:
    store = MemoryContextStore()
    await _abandon_during_tool(store)
    for _ in range(3):
        gc.collect()
        await asyncio.sleep(0)
    assert_every_call_answered_once(store.messages)


# -- Agent.dispatch_tools takes the loop's path ---------------------------------------------------


async def test_dispatch_tools_handles_unknown_tools_and_keeps_order() -> None:
    gate = asyncio.Event()

    async def first() -> str:
        await gate.wait()
        return "one"

    async def second() -> str:
        gate.set()
        return "two"

    empty = {"type": "object", "properties": {}}
    agent = agent_of(
        StubTransport([]),
        [Tool("first", first, schema=empty), Tool("second", second, schema=empty)],
    )
    blocks = [
        ToolUseBlock("1", "first", {}),
        ToolUseBlock("2", "nope", {}),
        ToolUseBlock("3", "second", {}),
    ]
    results = await asyncio.wait_for(agent.dispatch_tools(blocks, 1), 5)
    assert [r.tool_use_id for r in results] == ["1", "2", "3"]
    assert results[0] == ToolResultBlock("1", "one") and results[2] == ToolResultBlock("3", "two")
    assert results[1].is_error and "Unknown tool 'nope'" in results[1].text


async def test_a_guard_or_middleware_whose_await_was_cancelled_fails_only_that_call() -> None:
    """Something a guard awaited was cancelled (a UI prompt closed): an error result for the
    call, not a cancelled run."""
    from tether import Allow, Middleware, Tool, ToolRequest

    async def prompt_closed() -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter.cancel()
        await waiter

    async def guard(call: Any) -> Allow:
        await prompt_closed()
        return Allow()

    class Closing(Middleware):
        async def wrap_tool_call(self, call: ToolRequest, call_next: Any) -> ToolResultBlock:
            await prompt_closed()
            return await call_next(call)

    async def echo(text: str) -> str:
        return text

    for extra in ({"guards": [guard]}, {"middleware": [Closing()]}):
        model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "x"})]), Reply("ok")])
        agent = Agent("s", model, tools=[Tool("echo", echo)], **extra)  # type: ignore[arg-type]
        assert await agent.run("go") == "ok"
        (result,) = model.requests[1].last_message.tool_results
        assert result.is_error and "cancelled" in result.text
