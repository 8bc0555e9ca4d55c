"""Tests for the agent loop: ``Agent.run`` / ``run_stream`` driven by scripted fake models.

Every test asserts on what the fake model was sent (``ScriptedTransport.requests`` /
``StubTransport.calls``), on what the run stored (``MemoryContextStore.messages``) and on the
events the run yielded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from tether import (
    Agent,
    AgentStream,
    Allow,
    Deny,
    Error,
    IterationEnd,
    IterationStart,
    MaxIterationsError,
    MemoryContextStore,
    Message,
    ModelStopError,
    ReasoningBlock,
    ReasoningDelta,
    RetryPolicy,
    SessionEndEvent,
    StopReason,
    StreamContractError,
    StreamEvent,
    TextBlock,
    TextDelta,
    Tool,
    ToolCall,
    ToolDispatch,
    ToolInputDelta,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    ToolUseBlock,
    ToolUseStart,
    TransportError,
    Usage,
    tool,
)
from tether.testing import (
    Call,
    Hold,
    Reply,
    ScriptedTransport,
    StubTransport,
    make_text_response,
    make_tool_use_response,
)

SYSTEM = "You are a test agent."
NO_RETRY = RetryPolicy(max_attempts=1)
TIMEOUT = 5.0  # a run that deadlocks fails the test instead of hanging the suite


# --------------------------------------------------------------------------------------------
# Helpers


def make_agent(transport: Any, tools: Iterable[Any] = (), **kwargs: Any) -> Agent:
    return Agent(system=SYSTEM, transport=transport, tools=list(tools), retry=NO_RETRY, **kwargs)


async def run_events(
    agent: Agent, user_message: Any = "hi", context: Any = None
) -> tuple[list[StreamEvent], AgentStream]:
    stream = agent.run_stream(user_message, context)

    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    events = await asyncio.wait_for(drain(), TIMEOUT)
    return events, stream


def of_type(events: Sequence[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def kinds(events: Sequence[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def session_end(events: Sequence[StreamEvent]) -> SessionEndEvent:
    assert events, "the run yielded no events"
    last = events[-1]
    assert isinstance(last, SessionEndEvent), f"last event is {last!r}, not SessionEndEvent"
    assert len(of_type(events, SessionEndEvent)) == 1
    return last


def assert_clean_end(events: Sequence[StreamEvent]) -> SessionEndEvent:
    end = session_end(events)
    assert end.error is None, f"run ended with {end.error!r}"
    assert not of_type(events, Error)
    return end


def assert_error_end(events: Sequence[StreamEvent], exc_type: type) -> BaseException:
    """The run ended with exactly one Error(exc_type) right before a SessionEndEvent."""
    end = session_end(events)
    errors = of_type(events, Error)
    assert len(errors) == 1, kinds(events)
    assert events[-2] is errors[0], kinds(events)
    assert isinstance(errors[0].exception, exc_type), repr(errors[0].exception)
    assert end.error is errors[0].exception
    return errors[0].exception


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Every tool call has a result, in the user message right after the call, in call order;
    every result answers a call of the message just before it; no id is used twice."""
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        uses = message.tool_uses
        if uses:
            assert message.role == "assistant", f"message {i}: tool_use in a {message.role} message"
            ids = [u.id for u in uses]
            assert not seen_ids.intersection(ids), f"message {i}: tool_use id reused: {ids}"
            seen_ids.update(ids)
            assert i + 1 < len(messages), f"message {i}: calls {ids} have no results after them"
            following = messages[i + 1]
            assert following.role == "user", f"message {i + 1} should hold the results of {ids}"
            got = [r.tool_use_id for r in following.tool_results]
            assert got == ids, f"message {i + 1}: results {got} do not answer calls {ids}"
        results = message.tool_results
        if results:
            assert message.role == "user", f"message {i}: tool_result in a {message.role} message"
            assert i > 0, f"message {i}: results with no calls before them"
            previous = [u.id for u in messages[i - 1].tool_uses]
            for r in results:
                assert r.tool_use_id in previous, (
                    f"message {i}: result {r.tool_use_id} answers no call of message {i - 1}"
                )


def result_blocks(message: Message) -> dict[str, ToolResultBlock]:
    return {r.tool_use_id: r for r in message.tool_results}


def make_echo(calls: list[dict[str, Any]] | None = None) -> Tool:
    @tool
    async def echo(text: str) -> str:
        """Echo the text back.

        Args:
            text: what to echo
        """
        if calls is not None:
            calls.append({"text": text})
        return f"echo:{text}"

    return echo


# --------------------------------------------------------------------------------------------
# 1. Basic run


async def test_run_returns_final_text() -> None:
    model = ScriptedTransport([Reply("Hello there.")])
    agent = make_agent(model)
    assert await agent.run("hi") == "Hello there."
    assert model.call_count == 1
    assert model.requests[0].messages == (Message("user", "hi"),)


async def test_run_stream_event_order_for_text_answer() -> None:
    model = ScriptedTransport([Reply("Hello world", chunks=3, usage=Usage(10, 5))])
    events, stream = await run_events(make_agent(model))
    assert kinds(events) == [
        "IterationStart",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "IterationEnd",
        "SessionEndEvent",
    ]
    assert events[0] == IterationStart(1)
    assert "".join(e.delta for e in of_type(events, TextDelta)) == "Hello world"
    end_turn = events[4]
    assert isinstance(end_turn, IterationEnd)
    assert end_turn.iteration == 1
    assert end_turn.stop_reason is StopReason.END_TURN
    assert end_turn.usage == Usage(10, 5)
    end = assert_clean_end(events)
    assert end.stop_reason is StopReason.END_TURN
    assert end.total_usage == Usage(10, 5)
    assert end.iterations == 1
    assert stream.done
    assert stream.stop_reason is StopReason.END_TURN
    assert await stream.get_final_text() == "Hello world"


async def test_run_stream_with_tool_call_event_order_and_usage_sum() -> None:
    u1 = Usage(input_tokens=10, output_tokens=3, cache_read_tokens=1)
    u2 = Usage(input_tokens=20, output_tokens=7, reasoning_tokens=2)
    model = ScriptedTransport(
        [
            Reply("Let me echo.", tool_calls=[Call("echo", {"text": "a"})], usage=u1),
            Reply("Done: echo:a", usage=u2),
        ]
    )
    events, stream = await run_events(make_agent(model, [make_echo()]))
    assert kinds(events) == [
        "IterationStart",
        "TextDelta",
        "ToolUseStart",
        "ToolInputDelta",
        "IterationEnd",
        "ToolDispatch",
        "ToolResult",
        "IterationStart",
        "TextDelta",
        "IterationEnd",
        "SessionEndEvent",
    ]
    starts = of_type(events, IterationStart)
    assert [s.iteration for s in starts] == [1, 2]
    ends = of_type(events, IterationEnd)
    assert [(e.iteration, e.stop_reason, e.usage) for e in ends] == [
        (1, StopReason.TOOL_USE, u1),
        (2, StopReason.END_TURN, u2),
    ]
    assert events[5] == ToolDispatch("call_1", "echo", {"text": "a"})
    assert events[6] == ToolResult("call_1", "echo", False, "echo:a", {"text": "a"})
    end = assert_clean_end(events)
    assert end.stop_reason is StopReason.END_TURN
    assert end.total_usage == u1 + u2
    assert end.total_usage == Usage(30, 10, 1, 0, 2)
    assert end.iterations == 2
    assert stream.usage == u1 + u2
    assert stream.iterations == 2
    assert await stream.get_final_text() == "Done: echo:a"


async def test_iteration_end_keeps_raw_stop_reason_and_model() -> None:
    events_in = [
        TextDelta(0, "ok"),
        IterationEnd(0, StopReason.END_TURN, Usage(1, 1), "stop", "model-x"),
    ]
    model = StubTransport([events_in])
    events, _ = await run_events(make_agent(model))
    (end,) = of_type(events, IterationEnd)
    assert end == IterationEnd(1, StopReason.END_TURN, Usage(1, 1), "stop", "model-x")


async def test_no_context_gives_fresh_store_with_full_history() -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("echo", {"text": "x"})]), Reply("final answer")]
    )
    agent = make_agent(model, [make_echo()])
    _, first = await run_events(agent)
    store = first.context
    assert isinstance(store, MemoryContextStore)
    messages = store.messages
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0] == Message("user", "hi")
    assert messages[1] == Message("assistant", (ToolUseBlock("call_1", "echo", {"text": "x"}),))
    assert messages[2] == Message("user", (ToolResultBlock("call_1", "echo:x"),))
    assert messages[3] == Message("assistant", "final answer")
    assert_history_valid(messages)
    # A second run without a context gets another fresh store, not the first one.
    model2 = ScriptedTransport([Reply("again")])
    _, second = await run_events(agent.copy(transport=model2))
    assert second.context is not store
    assert [m.role for m in second.context.messages] == ["user", "assistant"]
    assert model2.requests[0].messages == (Message("user", "hi"),)


async def test_given_context_is_appended_to() -> None:
    store = MemoryContextStore()
    model = ScriptedTransport([Reply("answer")])
    _, stream = await run_events(make_agent(model), "question", store)
    assert stream.context is store
    assert store.messages == [Message("user", "question"), Message("assistant", "answer")]


async def test_user_message_as_message_or_blocks() -> None:
    model = ScriptedTransport([Reply("a"), Reply("b")])
    agent = make_agent(model)
    await agent.run(Message("user", "as message"))
    await agent.run([TextBlock("as "), TextBlock("blocks")])
    assert model.requests[0].messages == (Message("user", "as message"),)
    assert model.requests[1].messages == (Message("user", (TextBlock("as "), TextBlock("blocks"))),)


# --------------------------------------------------------------------------------------------
# 2. Requests


async def test_request_carries_system_tools_and_history() -> None:
    model = ScriptedTransport(
        [
            Reply("checking", tool_calls=[Call("echo", {"text": "q"})]),
            Reply("the answer"),
        ]
    )

    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Args:
            a: the first number
            b: the second number
        """
        return a + b

    agent = make_agent(model, [make_echo(), add])
    await asyncio.wait_for(agent.run("question"), TIMEOUT)
    assert model.call_count == 2
    for request in model.requests:
        assert request.system == SYSTEM
        assert request.tool_names == ["echo", "add"]
        specs = {t.name: t for t in request.tools}
        assert specs["add"].description == "Add two numbers."
        assert specs["add"].schema == {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "the first number"},
                "b": {"type": "integer", "description": "the second number", "default": 2},
            },
            "required": ["a"],
        }
        assert specs["echo"].schema["required"] == ["text"]
        assert specs["echo"].schema["properties"]["text"]["type"] == "string"
    first, second = model.requests
    assert first.messages == (Message("user", "question"),)
    assert len(second.messages) == 3
    assert second.messages[0] == Message("user", "question")
    assert second.messages[1] == Message(
        "assistant", (TextBlock("checking"), ToolUseBlock("call_1", "echo", {"text": "q"}))
    )
    assert second.last_message == Message("user", (ToolResultBlock("call_1", "echo:q"),))


async def test_each_request_gets_the_full_history_so_far() -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("echo", {"text": "1"})]),
            Reply(tool_calls=[Call("echo", {"text": "2"})]),
            Reply("done"),
        ]
    )
    store = MemoryContextStore()
    await asyncio.wait_for(make_agent(model, [make_echo()]).run("go", store), TIMEOUT)
    assert [len(r.messages) for r in model.requests] == [1, 3, 5]
    stored = store.messages
    for request in model.requests:
        assert list(request.messages) == stored[: len(request.messages)]
    assert model.requests[2].last_message.tool_results[0].content == "echo:2"
    assert_history_valid(stored)


# --------------------------------------------------------------------------------------------
# 3. Concurrency


async def test_calls_of_one_response_run_concurrently_barrier() -> None:
    n = 4
    started = 0
    all_started = asyncio.Event()

    @tool
    async def wait_all(i: int) -> str:
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        await all_started.wait()  # deadlocks (and times out) unless all n run at once
        return f"done {i}"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("wait_all", {"i": i}) for i in range(n)]), Reply("ok")]
    )
    events, _ = await run_events(make_agent(model, [wait_all]))
    assert_clean_end(events)
    assert started == n
    results = model.requests[1].last_message.tool_results
    assert [r.content for r in results] == [f"done {i}" for i in range(n)]
    assert not any(r.is_error for r in results)


async def test_results_in_call_order_events_in_completion_order() -> None:
    n = 3
    # Call i may finish only once the consumer has seen the ToolResult of call i+1, so the
    # calls finish strictly in reverse order (the last call finishes at once).
    gates = [asyncio.Event() for _ in range(n)]
    gates[n - 1].set()

    @tool
    async def step(i: int) -> str:
        await gates[i].wait()
        return f"r{i}"

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("step", {"i": i}, id=f"id{i}") for i in range(n)]),
            Reply("ok"),
        ]
    )
    store = MemoryContextStore()
    stream = make_agent(model, [step]).run_stream("go", store)

    async def drain() -> list[StreamEvent]:
        seen: list[StreamEvent] = []
        async for event in stream:
            seen.append(event)
            if isinstance(event, ToolResult):
                finished = int(event.tool_use_id[2:])
                if finished > 0:
                    gates[finished - 1].set()
        return seen

    events = await asyncio.wait_for(drain(), TIMEOUT)
    assert_clean_end(events)
    dispatches = of_type(events, ToolDispatch)
    assert [d.tool_use_id for d in dispatches] == ["id0", "id1", "id2"]
    results = of_type(events, ToolResult)
    assert [r.tool_use_id for r in results] == ["id2", "id1", "id0"]
    assert [r.content for r in results] == ["r2", "r1", "r0"]
    # every dispatch is announced before the first result in parallel mode
    assert events.index(dispatches[-1]) < events.index(results[0])
    stored = store.messages[2]
    assert [r.tool_use_id for r in stored.tool_results] == ["id0", "id1", "id2"]
    assert [r.content for r in stored.tool_results] == ["r0", "r1", "r2"]
    assert model.requests[1].last_message == stored
    assert_history_valid(store.messages)


async def test_sequential_execution_runs_one_at_a_time_in_order() -> None:
    log: list[str] = []
    in_flight = 0
    max_in_flight = 0

    @tool
    async def work(i: int) -> int:
        nonlocal in_flight, max_in_flight
        in_flight += 1
        max_in_flight = max(max_in_flight, in_flight)
        log.append(f"start {i}")
        await asyncio.sleep(0.01 * (4 - i))  # later calls are quicker
        log.append(f"end {i}")
        in_flight -= 1
        return i

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("work", {"i": i}) for i in range(4)]), Reply("ok")]
    )
    events, stream = await run_events(make_agent(model, [work], execution="sequential"))
    assert_clean_end(events)
    assert max_in_flight == 1
    assert log == [x for i in range(4) for x in (f"start {i}", f"end {i}")]
    # events interleave: dispatch, result, dispatch, result, ...
    tool_events = [e for e in events if isinstance(e, ToolDispatch | ToolResult)]
    assert kinds(tool_events) == ["ToolDispatch", "ToolResult"] * 4
    assert [e.tool_use_id for e in tool_events] == [
        x for i in range(1, 5) for x in (f"call_{i}", f"call_{i}")
    ]
    assert [r.content for r in stream.context.messages[2].tool_results] == ["0", "1", "2", "3"]


async def test_tool_concurrency_bounds_one_tool_only() -> None:
    bounded_now = 0
    bounded_max = 0
    free_started = 0
    free_all = asyncio.Event()

    @tool(concurrency=2)
    async def bounded(i: int) -> int:
        nonlocal bounded_now, bounded_max
        bounded_now += 1
        bounded_max = max(bounded_max, bounded_now)
        await asyncio.sleep(0.02)
        bounded_now -= 1
        return i

    @tool
    async def free(i: int) -> int:
        nonlocal free_started
        free_started += 1
        if free_started == 3:
            free_all.set()
        await free_all.wait()  # all three must be in flight together
        return i

    calls = [Call("bounded", {"i": i}) for i in range(6)] + [
        Call("free", {"i": i}) for i in range(3)
    ]
    model = ScriptedTransport([Reply(tool_calls=calls), Reply("ok")])
    events, stream = await run_events(make_agent(model, [bounded, free]))
    assert_clean_end(events)
    assert bounded_max == 2
    assert free_started == 3
    results = stream.context.messages[2].tool_results
    assert [r.content for r in results] == ["0", "1", "2", "3", "4", "5", "0", "1", "2"]
    assert not any(r.is_error for r in results)


async def test_tool_class_concurrency_one_serialises_that_tool() -> None:
    now = 0
    peak = 0

    async def handler(i: int) -> int:
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.01)
        now -= 1
        return i

    single = Tool("single", handler, concurrency=1)
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("single", {"i": i}) for i in range(4)]), Reply("ok")]
    )
    events, _ = await run_events(make_agent(model, [single]))
    assert_clean_end(events)
    assert peak == 1


# --------------------------------------------------------------------------------------------
# 4. Errors become results and the loop goes on


async def test_tool_exception_becomes_error_result() -> None:
    @tool
    def boom(x: int) -> int:
        raise RuntimeError(f"kaboom {x}")

    model = ScriptedTransport([Reply(tool_calls=[Call("boom", {"x": 7})]), Reply("recovered")])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [boom]), "go", store)
    assert_clean_end(events)
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "kaboom 7" in result.text
    assert "RuntimeError" in result.text
    assert "boom" in result.text
    (event,) = of_type(events, ToolResult)
    assert event.is_error and event.content == result.content
    assert store.messages[-1] == Message("assistant", "recovered")
    assert_history_valid(store.messages)


async def test_format_tool_error_is_used() -> None:
    @tool
    def boom() -> None:
        raise ValueError("bad")

    def fmt(name: str, arguments: Any, exc: BaseException) -> str:
        return f"custom:{name}:{exc}"

    model = ScriptedTransport([Reply(tool_calls=[Call("boom")]), Reply("ok")])
    await asyncio.wait_for(make_agent(model, [boom], format_tool_error=fmt).run("go"), TIMEOUT)
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert result.content == "custom:boom:bad"


async def test_unknown_tool_result_lists_available_tools() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("nope", {"a": 1})]), Reply("fine")])

    @tool
    def zeta() -> str:
        return "z"

    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [zeta, make_echo()]), "go", store)
    assert_clean_end(events)
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "nope" in result.text
    assert "echo" in result.text and "zeta" in result.text
    assert await_text(store) == "fine"
    assert_history_valid(store.messages)


def await_text(store: MemoryContextStore) -> str:
    last = store.messages[-1]
    assert last.role == "assistant"
    return last.text


async def test_invalid_arguments_name_the_field_and_handler_not_called() -> None:
    called: list[Any] = []

    @tool
    def add(a: int, b: int) -> int:
        called.append((a, b))
        return a + b

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("add", {"a": "not a number", "b": 1})]), Reply("ok")]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [add]), "go", store)
    assert_clean_end(events)
    assert called == []
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "'a'" in result.text
    assert "add" in result.text
    assert "again" in result.text.lower()
    assert_history_valid(store.messages)


async def test_missing_required_argument_becomes_error_result() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedTransport([Reply(tool_calls=[Call("add", {"a": 1})]), Reply("ok")])
    await asyncio.wait_for(make_agent(model, [add]).run("go"), TIMEOUT)
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "'b'" in result.text


async def test_unparseable_arguments_never_reach_the_handler() -> None:
    called: list[Any] = []

    async def handler(**kwargs: Any) -> str:
        called.append(kwargs)
        return "ran"

    anything = Tool("anything", handler)  # no validator: {} would be accepted if passed on
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("anything", raw_arguments="not json at all")]),
            Reply("ok"),
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [anything]), "go", store)
    assert_clean_end(events)
    assert called == []
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "JSON" in result.text
    assert "again" in result.text.lower()
    (use,) = store.messages[1].tool_uses
    assert use.parse_error is not None
    assert use.raw_arguments == "not json at all"
    assert dict(use.input) == {}
    (event,) = of_type(events, ToolResult)
    assert event.is_error
    assert_history_valid(store.messages)


async def test_repaired_arguments_reach_handler_and_raw_text_is_kept() -> None:
    seen: list[dict[str, Any]] = []
    raw = '```json\n{"text": "fenced"}\n```'
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", raw_arguments=raw)]), Reply("ok")])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo(seen)]), "go", store)
    assert_clean_end(events)
    assert seen == [{"text": "fenced"}]
    (use,) = store.messages[1].tool_uses
    assert dict(use.input) == {"text": "fenced"}
    assert use.raw_arguments == raw
    assert use.parse_error is None
    (result,) = model.requests[1].last_message.tool_results
    assert not result.is_error
    assert result.content == "echo:fenced"


async def test_plain_json_arguments_keep_no_raw_text() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "x"})]), Reply("ok")])
    store = MemoryContextStore()
    await asyncio.wait_for(make_agent(model, [make_echo()]).run("go", store), TIMEOUT)
    (use,) = store.messages[1].tool_uses
    assert use.raw_arguments is None
    assert use.parse_error is None


async def test_guard_denial_becomes_error_result() -> None:
    seen: list[dict[str, Any]] = []
    checked: list[ToolCall] = []

    def no_secrets(call: ToolCall) -> Allow | Deny:
        checked.append(call)
        if "secret" in call.arguments.get("text", ""):
            return Deny("secrets are not echoed")
        return Allow()

    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("echo", {"text": "a secret"}),
                    Call("echo", {"text": "public"}),
                ]
            ),
            Reply("ok"),
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(
        make_agent(model, [make_echo(seen)], guards=[no_secrets]), "go", store
    )
    assert_clean_end(events)
    assert seen == [{"text": "public"}]
    assert {c.iteration for c in checked} == {1}
    denied, allowed = model.requests[1].last_message.tool_results
    assert denied.is_error
    assert "secrets are not echoed" in denied.text
    assert not allowed.is_error
    assert allowed.content == "echo:public"
    assert_history_valid(store.messages)


async def test_tool_whose_awaited_future_is_cancelled_becomes_error_result() -> None:
    # A tool waiting on a future that something else cancels (an MCP session closing while a
    # request is pending) raises CancelledError although the run itself was not cancelled.
    # That is a tool failure: an error result, the other calls unaffected, the run going on.
    async def dying_server() -> str:
        pending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        pending.cancel()
        return await pending

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("remote"), Call("echo", {"text": "fine"})]),
            Reply("carried on"),
        ]
    )
    store = MemoryContextStore()
    agent = make_agent(model, [Tool("remote", dying_server), make_echo()])
    events, _ = await run_events(agent, "go", store)
    assert_clean_end(events)
    remote, echo = model.requests[1].last_message.tool_results
    assert remote.is_error
    assert "remote" in remote.text
    assert not echo.is_error
    assert echo.content == "echo:fine"
    assert store.messages[-1] == Message("assistant", "carried on")
    assert_history_valid(store.messages)


async def test_errors_in_one_response_do_not_stop_other_calls() -> None:
    @tool
    def boom() -> None:
        raise RuntimeError("x")

    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("boom"),
                    Call("missing"),
                    Call("echo", {"text": "ok"}),
                    Call("echo", raw_arguments="{{{"),
                ]
            ),
            Reply("done"),
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [boom, make_echo()]), "go", store)
    assert_clean_end(events)
    results = model.requests[1].last_message.tool_results
    assert [r.is_error for r in results] == [True, True, False, True]
    assert results[2].content == "echo:ok"
    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 5. Stop reasons


@pytest.mark.parametrize(
    "reason", [StopReason.TOOL_USE, StopReason.END_TURN, StopReason.PAUSE_TURN]
)
async def test_calls_dispatched_for_dispatchable_stop_reasons(reason: StopReason) -> None:
    seen: list[dict[str, Any]] = []
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("echo", {"text": "go"})], stop_reason=reason), Reply("final")]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model, [make_echo(seen)]), "go", store)
    assert_clean_end(events)
    assert seen == [{"text": "go"}]
    assert model.call_count == 2
    (result,) = model.requests[1].last_message.tool_results
    assert result.content == "echo:go"
    assert await stream.get_final_text() == "final"
    assert_history_valid(store.messages)


async def test_max_tokens_with_calls_does_not_run_them_and_loop_continues() -> None:
    seen: list[dict[str, Any]] = []
    model = ScriptedTransport(
        [
            Reply(
                "partial",
                tool_calls=[Call("echo", {"text": "a"}), Call("echo", {"text": "b"})],
                stop_reason=StopReason.MAX_TOKENS,
            ),
            Reply("answer after cut"),
        ]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model, [make_echo(seen)]), "go", store)
    assert_clean_end(events)
    assert seen == []
    assert not of_type(events, ToolDispatch)
    assert model.call_count == 2
    results = model.requests[1].last_message.tool_results
    assert [r.tool_use_id for r in results] == ["call_1", "call_2"]
    for r in results:
        assert r.is_error
        assert "not run" in r.text
        assert "max_tokens" in r.text
    assert await stream.get_final_text() == "answer after cut"
    assert session_end(events).stop_reason is StopReason.END_TURN
    assert_history_valid(store.messages)


async def test_max_tokens_without_calls_ends_with_model_stop_error() -> None:
    model = ScriptedTransport(
        [Reply("cut off mid-sen", stop_reason=StopReason.MAX_TOKENS, usage=Usage(3, 4))]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model), "go", store)
    exc = assert_error_end(events, ModelStopError)
    assert isinstance(exc, ModelStopError)
    assert exc.partial_text == "cut off mid-sen"
    assert exc.stop_reason == "max_tokens"
    end = session_end(events)
    assert end.stop_reason is StopReason.MAX_TOKENS
    assert end.total_usage == Usage(3, 4)
    assert stream.error is exc
    assert model.call_count == 1
    # the cut-off text is kept in the history
    assert store.messages[-1] == Message("assistant", "cut off mid-sen")

    model2 = ScriptedTransport([Reply("again cut", stop_reason=StopReason.MAX_TOKENS)])
    with pytest.raises(ModelStopError) as info:
        await asyncio.wait_for(make_agent(model2).run("go"), TIMEOUT)
    assert info.value.partial_text == "again cut"


async def test_context_window_exceeded_ends_with_model_stop_error() -> None:
    model = ScriptedTransport([Reply("", stop_reason=StopReason.CONTEXT_WINDOW_EXCEEDED)])
    events, _ = await run_events(make_agent(model))
    exc = assert_error_end(events, ModelStopError)
    assert isinstance(exc, ModelStopError)
    assert exc.stop_reason == "context_window_exceeded"
    assert session_end(events).stop_reason is StopReason.CONTEXT_WINDOW_EXCEEDED


async def test_refusal_text_is_returned_and_stored() -> None:
    model = ScriptedTransport([Reply("I can't help with that.", stop_reason=StopReason.REFUSAL)])
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model), "do bad", store)
    end = assert_clean_end(events)
    assert end.stop_reason is StopReason.REFUSAL
    assert await stream.get_final_text() == "I can't help with that."
    assert store.messages == [
        Message("user", "do bad"),
        Message("assistant", "I can't help with that."),
    ]
    model2 = ScriptedTransport([Reply("No.", stop_reason=StopReason.REFUSAL)])
    assert await asyncio.wait_for(make_agent(model2).run("x"), TIMEOUT) == "No."


async def test_pause_turn_without_calls_calls_the_model_again() -> None:
    model = ScriptedTransport(
        [Reply("thinking...", stop_reason=StopReason.PAUSE_TURN), Reply("resumed answer")]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model), "go", store)
    assert_clean_end(events)
    assert model.call_count == 2
    assert model.requests[1].messages == (
        Message("user", "go"),
        Message("assistant", "thinking..."),
    )
    assert await stream.get_final_text() == "resumed answer"
    assert [e.stop_reason for e in of_type(events, IterationEnd)] == [
        StopReason.PAUSE_TURN,
        StopReason.END_TURN,
    ]


async def test_stream_without_iteration_end_is_a_contract_error() -> None:
    model = StubTransport([[TextDelta(0, "partial "), TextDelta(0, "answer")]])
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model), "go", store)
    assert_error_end(events, StreamContractError)
    assert session_end(events).stop_reason is StopReason.ERROR
    assert not of_type(events, IterationEnd)
    assert store.messages == [Message("user", "go"), Message("assistant", "partial answer")]
    with pytest.raises(StreamContractError):
        await stream.get_final_text()

    model2 = StubTransport([[TextDelta(0, "partial")]])
    with pytest.raises(StreamContractError):
        await asyncio.wait_for(make_agent(model2).run("go"), TIMEOUT)


async def test_empty_stream_is_a_contract_error() -> None:
    model = StubTransport([[]])
    events, _ = await run_events(make_agent(model))
    assert_error_end(events, StreamContractError)


async def test_truncated_stream_after_tool_call_keeps_history_valid() -> None:
    seen: list[dict[str, Any]] = []
    model = StubTransport(
        [
            [
                ToolUseStart(0, "t1", "echo"),
                ToolInputDelta(0, "t1", '{"text": "x"}'),
            ]
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo(seen)]), "go", store)
    assert_error_end(events, StreamContractError)
    assert seen == []
    assert_history_valid(store.messages)


async def test_transport_error_mid_stream_ends_run_with_valid_history() -> None:
    model = StubTransport(
        [
            make_tool_use_response("echo", "t1", {"text": "x"}, usage=Usage(5, 5)),
            [TextDelta(0, "half an ans"), TransportError("connection reset")],
        ]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model, [make_echo()]), "go", store)
    exc = assert_error_end(events, TransportError)
    assert "connection reset" in str(exc)
    end = session_end(events)
    assert end.stop_reason is StopReason.ERROR
    assert end.total_usage == Usage(5, 5)
    assert model.call_count == 2
    messages = store.messages
    assert_history_valid(messages)
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[-1] == Message("assistant", "half an ans")
    with pytest.raises(TransportError):
        await stream.get_final_text()


async def test_transport_error_before_first_event_not_retried_without_policy() -> None:
    model = StubTransport([TransportError("down", retryable=False)])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model), "go", store)
    assert_error_end(events, TransportError)
    assert model.call_count == 1
    assert store.messages == [Message("user", "go")]


# --------------------------------------------------------------------------------------------
# 6. last_iteration_message


async def test_last_iteration_message_only_on_final_allowed_iteration() -> None:
    last = Message("user", "This is your last turn: answer now.")
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("echo", {"text": "1"})]),
            Reply(tool_calls=[Call("echo", {"text": "2"})]),
            Reply("final"),
        ]
    )
    store = MemoryContextStore()
    agent = make_agent(model, [make_echo()], max_iterations=3, last_iteration_message=last)
    events, _ = await run_events(agent, "go", store)
    assert_clean_end(events)
    r1, r2, r3 = model.requests
    assert last not in r1.messages
    assert last not in r2.messages
    assert r3.last_message == last
    assert r3.messages.count(last) == 1
    assert list(r3.messages[:-1]) == store.messages[:5]
    assert last not in store.messages
    assert_history_valid(store.messages)


async def test_last_iteration_message_on_first_call_when_max_is_one() -> None:
    last = Message("user", "final turn")
    model = ScriptedTransport([Reply("ok")])
    store = MemoryContextStore()
    await asyncio.wait_for(
        make_agent(model, max_iterations=1, last_iteration_message=last).run("go", store),
        TIMEOUT,
    )
    assert model.requests[0].messages == (Message("user", "go"), last)
    assert store.messages == [Message("user", "go"), Message("assistant", "ok")]


async def test_last_iteration_message_absent_when_run_ends_early() -> None:
    last = Message("user", "final turn")
    model = ScriptedTransport([Reply("quick answer")])
    await asyncio.wait_for(
        make_agent(model, max_iterations=3, last_iteration_message=last).run("go"), TIMEOUT
    )
    assert last not in model.requests[0].messages


# --------------------------------------------------------------------------------------------
# 7. max_iterations


def endless_caller() -> ScriptedTransport:
    return ScriptedTransport([], then=Reply(tool_calls=[Call("echo", {"text": "again"})]))


async def test_over_max_iterations_ends_with_error_and_valid_history() -> None:
    model = endless_caller()
    store = MemoryContextStore()
    events, stream = await run_events(
        make_agent(model, [make_echo()], max_iterations=3), "go", store
    )
    exc = assert_error_end(events, MaxIterationsError)
    assert "3" in str(exc)
    end = session_end(events)
    assert end.stop_reason is StopReason.ERROR
    assert end.iterations == 3
    assert model.call_count == 3
    assert [s.iteration for s in of_type(events, IterationStart)] == [1, 2, 3]
    assert len(of_type(events, ToolResult)) == 3
    assert len(store.messages) == 1 + 3 * 2
    assert_history_valid(store.messages)
    with pytest.raises(MaxIterationsError):
        await stream.get_final_text()


async def test_run_raises_max_iterations_error() -> None:
    model = endless_caller()
    with pytest.raises(MaxIterationsError):
        await asyncio.wait_for(
            make_agent(model, [make_echo()], max_iterations=2).run("go"), TIMEOUT
        )
    assert model.call_count == 2


async def test_on_max_iterations_raise_raises_from_the_stream() -> None:
    model = endless_caller()
    store = MemoryContextStore()
    agent = make_agent(model, [make_echo()], max_iterations=2, on_max_iterations="raise")
    seen: list[StreamEvent] = []
    with pytest.raises(MaxIterationsError):
        async for event in agent.run_stream("go", store):
            seen.append(event)
    assert model.call_count == 2
    assert not of_type(seen, Error)
    assert not of_type(seen, SessionEndEvent)
    assert_history_valid(store.messages)


async def test_answer_on_last_allowed_iteration_is_not_an_error() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "1"})]), Reply("done")])
    events, _ = await run_events(make_agent(model, [make_echo()], max_iterations=2))
    assert_clean_end(events)


def test_invalid_agent_settings_are_rejected() -> None:
    model = ScriptedTransport([])
    with pytest.raises(ValueError, match="max_iterations"):
        make_agent(model, max_iterations=0)
    with pytest.raises(ValueError, match="execution"):
        make_agent(model, execution="threads")
    with pytest.raises(ValueError, match="on_max_iterations"):
        make_agent(model, on_max_iterations="ignore")


# --------------------------------------------------------------------------------------------
# 8. Selector


class RecordingSelector:
    def __init__(self, keep: Iterable[str]) -> None:
        self.keep = set(keep)
        self.calls: list[tuple[list[Message], list[str]]] = []

    async def select(self, messages: Iterable[Message], tools: Iterable[Tool]) -> list[Tool]:
        await asyncio.sleep(0)  # a real await: the loop must await select()
        offered = list(tools)
        self.calls.append((list(messages), [t.name for t in offered]))
        return [t for t in offered if t.name in self.keep]


async def test_selector_runs_before_every_iteration_and_trims_tools() -> None:
    @tool
    def hidden() -> str:
        return "should not run"

    selector = RecordingSelector(["echo"])
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("echo", {"text": "a"})]),
            Reply(tool_calls=[Call("echo", {"text": "b"})]),
            Reply("done"),
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(
        make_agent(model, [make_echo(), hidden], selector=selector), "go", store
    )
    assert_clean_end(events)
    assert len(selector.calls) == 3
    for (history, offered), request in zip(selector.calls, model.requests, strict=True):
        assert offered == ["echo", "hidden"]
        assert tuple(history) == request.messages
        assert request.tool_names == ["echo"]
    assert [len(h) for h, _ in selector.calls] == [1, 3, 5]
    assert selector.calls[2][0] == store.messages[:5]


async def test_unselected_tool_called_gets_unknown_tool_result() -> None:
    ran: list[str] = []

    @tool
    def hidden() -> str:
        ran.append("hidden")
        return "secret"

    selector = RecordingSelector(["echo"])
    model = ScriptedTransport([Reply(tool_calls=[Call("hidden")]), Reply("ok")])
    store = MemoryContextStore()
    events, _ = await run_events(
        make_agent(model, [make_echo(), hidden], selector=selector), "go", store
    )
    assert_clean_end(events)
    assert ran == []
    (result,) = model.requests[1].last_message.tool_results
    assert result.is_error
    assert "hidden" in result.text
    assert "echo" in result.text
    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 9. Tool list re-read every iteration


async def test_tools_appended_by_a_handler_are_offered_next_iteration() -> None:
    @tool
    def late() -> str:
        return "late result"

    agent: Agent

    @tool
    def install() -> str:
        agent.tools.append(late)
        return "installed"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("install")]), Reply(tool_calls=[Call("late")]), Reply("done")]
    )
    agent = make_agent(model, [install])
    store = MemoryContextStore()
    events, _ = await run_events(agent, "go", store)
    assert_clean_end(events)
    assert model.requests[0].tool_names == ["install"]
    assert model.requests[1].tool_names == ["install", "late"]
    (result,) = model.requests[2].last_message.tool_results
    assert not result.is_error
    assert result.content == "late result"


class ChangingSource:
    def __init__(self) -> None:
        self.tools: list[Tool] = []
        self.reads = 0

    def list_tools(self) -> list[Tool]:
        self.reads += 1
        return list(self.tools)


async def test_tool_source_is_reread_every_iteration() -> None:
    source = ChangingSource()
    assert isinstance(source, ToolSource)

    @tool
    def first() -> str:
        source.tools.append(second)
        return "one"

    @tool
    def second() -> str:
        return "two"

    source.tools.append(first)
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("first")]), Reply(tool_calls=[Call("second")]), Reply("done")]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo(), source]), "go", store)
    assert_clean_end(events)
    assert source.reads >= 3
    assert model.requests[0].tool_names == ["echo", "first"]
    assert model.requests[1].tool_names == ["echo", "first", "second"]
    assert model.requests[2].last_message.tool_results[0].content == "two"
    assert_history_valid(store.messages)


async def test_tool_removed_from_source_becomes_unknown() -> None:
    source = ChangingSource()

    @tool
    def once() -> str:
        source.tools.clear()
        return "gone now"

    source.tools.append(once)
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("once")]), Reply(tool_calls=[Call("once")]), Reply("done")]
    )
    events, _ = await run_events(make_agent(model, [source]))
    assert_clean_end(events)
    assert model.requests[1].tool_names == []
    (result,) = model.requests[2].last_message.tool_results
    assert result.is_error
    assert "once" in result.text


# --------------------------------------------------------------------------------------------
# 10. copy() and dispatch_tools()


async def test_copy_replaces_fields_and_shares_transport() -> None:
    model = ScriptedTransport([Reply("from copy")])
    echo = make_echo()
    agent = make_agent(model, [echo], max_iterations=7)
    other = agent.copy(system="other system", max_iterations=2)
    assert other is not agent
    assert other.system == "other system"
    assert other.max_iterations == 2
    assert other.transport is agent.transport
    assert agent.system == SYSTEM
    assert agent.max_iterations == 7
    assert [t.name for t in other.current_tools()] == ["echo"]
    assert await asyncio.wait_for(other.run("hi"), TIMEOUT) == "from copy"
    assert model.requests[0].system == "other system"
    with pytest.raises(ValueError):
        agent.copy(max_iterations=0)


async def test_dispatch_tools_returns_results_in_call_order() -> None:
    n = 3
    done = [asyncio.Event() for _ in range(n)]

    @tool
    async def step(i: int) -> str:
        if i + 1 < n:
            await done[i + 1].wait()
        done[i].set()
        return f"r{i}"

    @tool
    def boom() -> None:
        raise RuntimeError("broken")

    agent = make_agent(ScriptedTransport([]), [step, boom])
    blocks = [
        ToolUseBlock("a", "step", {"i": 0}),
        ToolUseBlock("b", "missing", {}),
        ToolUseBlock("c", "step", {"i": 1}),
        ToolUseBlock("d", "boom", {}),
        ToolUseBlock("e", "step", {"i": 2}),
        ToolUseBlock("f", "step", {}, "{{", "bad json"),
    ]
    results = await asyncio.wait_for(agent.dispatch_tools(blocks, 1), TIMEOUT)
    assert [r.tool_use_id for r in results] == ["a", "b", "c", "d", "e", "f"]
    assert [r.is_error for r in results] == [False, True, False, True, False, True]
    assert [results[i].content for i in (0, 2, 4)] == ["r0", "r1", "r2"]
    assert "missing" in results[1].text
    assert "broken" in results[3].text
    assert "JSON" in results[5].text


async def test_dispatch_tools_sequential_runs_one_at_a_time() -> None:
    log: list[str] = []

    @tool
    async def work(i: int) -> int:
        log.append(f"start {i}")
        await asyncio.sleep(0.01 * (3 - i))
        log.append(f"end {i}")
        return i

    agent = make_agent(ScriptedTransport([]), [work], execution="sequential")
    blocks = [ToolUseBlock(f"w{i}", "work", {"i": i}) for i in range(3)]
    results = await asyncio.wait_for(agent.dispatch_tools(blocks, 1), TIMEOUT)
    assert [r.content for r in results] == ["0", "1", "2"]
    assert log == [x for i in range(3) for x in (f"start {i}", f"end {i}")]


async def test_dispatch_tools_passes_iteration_to_guards() -> None:
    seen: list[int] = []

    def guard(call: ToolCall) -> None:
        seen.append(call.iteration)

    agent = make_agent(ScriptedTransport([]), [make_echo()], guards=[guard])
    (result,) = await agent.dispatch_tools([ToolUseBlock("x", "echo", {"text": "t"})], 4)
    assert seen == [4]
    assert result == ToolResultBlock("x", "echo:t")


# --------------------------------------------------------------------------------------------
# 11. Reasoning


async def test_reasoning_block_with_exact_signature_before_text() -> None:
    signature = "EqQBCkYIBRgCKkB+/=\u00e9\u2603 \n\tsig\x00end=="
    model = ScriptedTransport(
        [
            Reply(
                "The answer.",
                reasoning="Let me think.",
                reasoning_signature=signature,
                chunks=2,
            ),
        ]
    )
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model), "q", store)
    assert_clean_end(events)
    assert await stream.get_final_text() == "The answer."
    assistant = store.messages[1]
    assert assistant.role == "assistant"
    assert len(assistant.content) == 2
    reasoning, text = assistant.content
    assert isinstance(reasoning, ReasoningBlock)
    assert reasoning.text == "Let me think."
    assert reasoning.signature == signature
    assert reasoning.signature.encode("utf-8") == signature.encode("utf-8")
    assert text == TextBlock("The answer.")


async def test_split_signature_is_concatenated_and_replayed() -> None:
    model = StubTransport(
        [
            [
                ReasoningDelta(0, "step one, "),
                ReasoningDelta(0, "step two", signature="abc+/"),
                ReasoningDelta(0, "", signature="def=="),
                ToolUseStart(1, "t1", "echo"),
                ToolInputDelta(1, "t1", '{"text": '),
                ToolInputDelta(1, "t1", '"r"}'),
                IterationEnd(0, StopReason.TOOL_USE),
            ],
            make_text_response("done"),
        ]
    )
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo()]), "q", store)
    assert_clean_end(events)
    expected = Message(
        "assistant",
        (
            ReasoningBlock("step one, step two", "abc+/def=="),
            ToolUseBlock("t1", "echo", {"text": "r"}),
        ),
    )
    assert store.messages[1] == expected
    assert model.calls[1].messages[1] == expected  # replayed to the model unchanged
    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 12. Continuing a conversation


async def test_two_runs_on_one_store_continue_the_conversation() -> None:
    model = ScriptedTransport([Reply("Hi, Ann."), Reply("Your name is Ann.")])
    agent = make_agent(model)
    store = MemoryContextStore()
    assert await asyncio.wait_for(agent.run("I am Ann.", store), TIMEOUT) == "Hi, Ann."
    assert await asyncio.wait_for(agent.run("Who am I?", store), TIMEOUT) == "Your name is Ann."
    assert model.requests[1].messages == (
        Message("user", "I am Ann."),
        Message("assistant", "Hi, Ann."),
        Message("user", "Who am I?"),
    )
    assert store.messages == [
        *model.requests[1].messages,
        Message("assistant", "Your name is Ann."),
    ]


async def test_user_message_none_continues_from_stored_history() -> None:
    store = MemoryContextStore([Message("user", "stored question")])
    model = ScriptedTransport([Reply("stored answer")])
    events, stream = await run_events(make_agent(model), None, store)
    assert_clean_end(events)
    assert model.requests[0].messages == (Message("user", "stored question"),)
    assert store.messages == [
        Message("user", "stored question"),
        Message("assistant", "stored answer"),
    ]
    assert await stream.get_final_text() == "stored answer"


async def test_continue_after_tool_results_with_none() -> None:
    store = MemoryContextStore(
        [
            Message("user", "go"),
            Message("assistant", (ToolUseBlock("old", "echo", {"text": "x"}),)),
            Message("user", (ToolResultBlock("old", "echo:x"),)),
        ]
    )
    model = ScriptedTransport([Reply("picked up")])
    await asyncio.wait_for(make_agent(model, [make_echo()]).run(None, store), TIMEOUT)
    assert len(model.requests[0].messages) == 3
    assert store.messages[-1] == Message("assistant", "picked up")
    assert len(store.messages) == 4
    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 13. Duplicate tool names


def twin_tools() -> list[Tool]:
    async def one(text: str) -> str:
        return "one"

    async def two(text: str) -> str:
        return "two"

    return [Tool("echo", one), Tool("echo", two)]


async def test_duplicate_tool_names_end_run_with_value_error() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "x"})]), Reply("ok")])
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model, twin_tools()), "go", store)
    exc = assert_error_end(events, ValueError)
    assert "echo" in str(exc)
    assert "name" in str(exc)
    assert session_end(events).stop_reason is StopReason.ERROR
    with pytest.raises(ValueError, match="echo"):
        await stream.get_final_text()
    # whatever was stored must still be a valid conversation
    assert_history_valid(store.messages)


async def test_duplicate_tool_names_detected_before_the_model_is_called() -> None:
    # Even when the model would just answer, a tool list with two tools of one name is a
    # configuration error: no model call should be made with ambiguous tool specs.
    model = ScriptedTransport([Reply("plain answer")])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, twin_tools()), "go", store)
    exc = assert_error_end(events, ValueError)
    assert "echo" in str(exc)
    assert model.call_count == 0


# --------------------------------------------------------------------------------------------
# Extra: Hold keeps a run in flight; on_event sees every event


async def test_hold_keeps_the_run_in_flight_until_released() -> None:
    release = asyncio.Event()
    model = ScriptedTransport([Hold(release, Reply("held answer", chunks=2), after_events=1)])
    stream = make_agent(model).run_stream("go")
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event)

    task = asyncio.create_task(consume())
    for _ in range(50):
        await asyncio.sleep(0)
        if len(seen) >= 2:
            break
    assert kinds(seen) == ["IterationStart", "TextDelta"]
    assert not stream.done
    release.set()
    await asyncio.wait_for(task, TIMEOUT)
    assert stream.done
    assert await stream.get_final_text() == "held answer"


async def test_on_event_callback_sees_every_event_in_order() -> None:
    received: list[StreamEvent] = []
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "a"})]), Reply("ok")])
    agent = make_agent(model, [make_echo()], on_event=received.append)
    events, _ = await run_events(agent)
    assert received == events
    assert isinstance(received[-1], SessionEndEvent)


async def test_tool_result_content_json_for_non_text_values() -> None:
    @tool
    def data() -> dict[str, Any]:
        return {"n": 1, "items": ["a", "b"]}

    model = ScriptedTransport([Reply(tool_calls=[Call("data")]), Reply("ok")])
    await asyncio.wait_for(make_agent(model, [data]).run("go"), TIMEOUT)
    (result,) = model.requests[1].last_message.tool_results
    assert not result.is_error
    assert json.loads(result.text) == {"n": 1, "items": ["a", "b"]}


async def test_calls_cut_off_at_max_tokens_twice_in_a_row_end_the_run() -> None:
    """One cut-off turn gets another try; a second in a row ends the run instead of looping."""
    cut = Reply(
        "partial", tool_calls=[Call("echo", {"text": "a"})], stop_reason=StopReason.MAX_TOKENS
    )
    model = ScriptedTransport([cut, cut, Reply("never")])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo([])]), "go", store)
    end = session_end(events)
    assert end.stop_reason is StopReason.MAX_TOKENS
    assert isinstance(end.error, ModelStopError)
    assert model.call_count == 2
    results = of_type(events, ToolResult)
    assert len(results) == 2 and all(r.is_error for r in results)  # both turns' calls answered
    assert_history_valid(store.messages)


async def test_a_reader_that_stops_between_iterations_holds_the_run_there() -> None:
    """A door that drives the run an iteration at a time reads its events up to an iteration's
    last one and stops: nothing of the next iteration runs until it reads on."""
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "a"})]), Reply("done")])
    store = MemoryContextStore()
    events = make_agent(model, [make_echo()]).run_stream("go", store)
    first: list[StreamEvent] = []
    async for event in events:
        first.append(event)
        if isinstance(event, ToolResult):
            break
    await asyncio.sleep(0)
    assert kinds(first)[-2:] == ["ToolDispatch", "ToolResult"]
    assert model.call_count == 1  # the second model call has not begun
    rest = [event async for event in events]
    assert kinds(rest) == ["IterationStart", "TextDelta", "IterationEnd", "SessionEndEvent"]
    assert model.call_count == 2
    assert_history_valid(store.messages)
