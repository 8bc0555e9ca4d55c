"""axio code runs unchanged: its ``StopReason`` spellings and its ``axio.testing`` helpers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import tether
from tether import (
    Agent,
    AgentStream,
    CheckGuard,
    Deny,
    Error,
    IterationEnd,
    MemoryContextStore,
    PermissionGuard,
    Rewrite,
    SessionEndEvent,
    StopReason,
    StreamContractError,
    StreamError,
    StreamEvent,
    TetherError,
    TextDelta,
    Tool,
    ToolCall,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
    Usage,
)
from tether.stores.jsonforms import event_from_dict, event_to_dict
from tether.testing import (
    Call,
    Reply,
    ScriptedTransport,
    StubTransport,
    assert_stream_contract,
    collect,
    make_echo_tool,
    make_ephemeral_context,
    make_stub_transport,
    make_text_response,
    make_tool_use_response,
)
from tether.tools import guards

AXIO_NAMES = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE_TURN,
    "context_window_exceeded": StopReason.CONTEXT_WINDOW_EXCEEDED,
    "cancelled": StopReason.CANCELLED,
    "error": StopReason.ERROR,
    "unknown": StopReason.UNKNOWN,
    "paused": StopReason.PAUSED,
    "repeated_calls": StopReason.REPEATED_CALLS,
}

# --------------------------------------------------------------------------------------------
# StopReason: axio's lowercase names are aliases of the members


@pytest.mark.parametrize(("name", "member"), AXIO_NAMES.items())
def test_lowercase_name_is_the_member_itself(name: str, member: StopReason) -> None:
    alias = getattr(StopReason, name)
    assert alias is member
    assert alias == name == alias.value
    assert StopReason[name] is member
    assert StopReason(name) is member


def test_iteration_lists_each_member_once() -> None:
    members = list(StopReason)
    assert members == list(AXIO_NAMES.values())
    assert len(StopReason) == len(AXIO_NAMES)
    assert [m.name for m in members] == [n.upper() for n in AXIO_NAMES]


@pytest.mark.parametrize("name", AXIO_NAMES)
def test_codec_round_trips_an_alias(name: str) -> None:
    reason = getattr(StopReason, name)
    for event in (IterationEnd(1, reason, Usage(1, 2)), SessionEndEvent(reason, Usage(3, 4))):
        data = event_to_dict(event)
        assert data["stop_reason"] == name
        assert json.loads(json.dumps(data)) == data
        back = event_from_dict(data)
        assert back == event
        assert back.stop_reason is AXIO_NAMES[name]


# --------------------------------------------------------------------------------------------
# axio's testing helpers


async def test_make_echo_tool_echoes_msg_as_json() -> None:
    echo = make_echo_tool()
    assert echo.name == "echo"
    assert echo.schema["required"] == ["msg"]
    assert json.loads(await echo.handler(msg="hello")) == {"msg": "hello"}
    assert make_echo_tool() is not echo


async def test_make_stub_transport_says_hello_world_every_time() -> None:
    transport = make_stub_transport()
    expected = [
        TextDelta(0, "Hello"),
        TextDelta(0, " world"),
        IterationEnd(1, StopReason.end_turn, Usage(10, 5)),
    ]
    for _ in range(2):
        events = await collect(transport.stream([], [], ""))
        assert events == expected
        assert_stream_contract(events)
    assert transport.call_count == 2
    assert transport._call_count == 2  # axio's tests read the stub's private counter


async def test_make_ephemeral_context_is_fresh_and_empty() -> None:
    first, second = make_ephemeral_context(), make_ephemeral_context()
    assert isinstance(first, MemoryContextStore)
    assert first is not second
    assert await first.get_history() == []


# --------------------------------------------------------------------------------------------
# axio-style code, end to end on tether's engine


async def test_axio_style_tool_round_trip() -> None:
    transport = StubTransport(
        [
            make_tool_use_response("echo", "c1", {"msg": "ping"}, 1, Usage(4, 2)),
            make_text_response("pong", 2, Usage(6, 3)),
        ]
    )
    agent = Agent(system="s", transport=transport, tools=[make_echo_tool()])
    events: list[StreamEvent] = [e async for e in agent.run_stream("go", make_ephemeral_context())]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.name, r.is_error, json.loads(str(r.content))) for r in results] == [
        ("echo", False, {"msg": "ping"})
    ]
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason is StopReason.end_turn
    assert end.total_usage == Usage(10, 5)


async def test_stub_answer_repeats_for_a_second_run() -> None:
    agent = Agent(system="", transport=make_stub_transport())
    context = make_ephemeral_context()
    assert await agent.run("one", context) == "Hello world"
    assert await agent.run("two", context) == "Hello world"


# --------------------------------------------------------------------------------------------
# The engine's axio names: get_session_end, ToolResult.input, check()-style guards


async def test_get_session_end_runs_to_the_end_and_returns_the_end_event() -> None:
    agent = Agent(system="s", transport=make_stub_transport())
    stream = agent.run_stream("hi", make_ephemeral_context())
    end = await stream.get_session_end()
    assert end == SessionEndEvent(StopReason.end_turn, Usage(10, 5), None, 1)
    assert await stream.get_session_end() is end  # asking again gives the same event


async def test_get_session_end_carries_a_failure_instead_of_raising() -> None:
    transport = StubTransport(
        [make_text_response("cut", 1, Usage(1, 1), stop_reason=StopReason.max_tokens)]
    )
    end = await Agent(system="s", transport=transport).run_stream("hi").get_session_end()
    assert end.stop_reason is StopReason.max_tokens
    assert end.error is not None


async def test_tool_result_events_carry_the_calls_input() -> None:
    transport = StubTransport([make_tool_use_response(), make_text_response()])
    agent = Agent(system="s", transport=transport, tools=[make_echo_tool()])
    events = [e async for e in agent.run_stream("go")]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.input == {"msg": "hi"}
    assert event_from_dict(event_to_dict(result)) == result


class AxioStyleGuard:
    """An axio permission guard: ``check`` returns the arguments to use and raises to deny."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, object]]] = []

    async def check(self, tool: Tool, **kwargs: object) -> dict[str, object]:
        self.seen.append((tool.name, dict(kwargs)))
        if kwargs.get("msg") == "forbidden":
            raise PermissionError("not that one")
        return {**kwargs, "msg": str(kwargs["msg"]).upper()}


async def test_check_style_guards_rewrite_and_deny() -> None:
    guard = AxioStyleGuard()
    turn: list[StreamEvent] = [
        ToolUseStart(0, "c1", "echo"),
        ToolInputDelta(0, "c1", json.dumps({"msg": "ping"})),
        ToolUseStart(1, "c2", "echo"),
        ToolInputDelta(1, "c2", json.dumps({"msg": "forbidden"})),
        IterationEnd(1, StopReason.tool_use, Usage(1, 1)),
    ]
    transport = StubTransport([turn, make_text_response("done")])
    store = MemoryContextStore()
    agent = Agent(system="s", transport=transport, tools=[make_echo_tool()], guards=[guard])
    assert await agent.run("go", store) == "done"
    results = {r.tool_use_id: r for r in store.messages[2].tool_results}
    assert json.loads(results["c1"].text) == {"msg": "PING"}  # rewritten by the guard
    assert results["c2"].is_error and "not that one" in results["c2"].text  # denied
    assert guard.seen == [("echo", {"msg": "ping"}), ("echo", {"msg": "forbidden"})]


# --------------------------------------------------------------------------------------------
# AgentStream made from any async iterator of events, as axio builds it


async def events_of(*events: StreamEvent) -> AsyncIterator[StreamEvent]:
    for event in events:
        yield event


def one_answer(text: str = "Hello world") -> list[StreamEvent]:
    return [
        TextDelta(0, text[:5]),
        TextDelta(0, text[5:]),
        IterationEnd(1, StopReason.end_turn, Usage(3, 2)),
        SessionEndEvent(StopReason.end_turn, Usage(3, 2), None, 1),
    ]


async def test_a_stream_of_events_iterates_them_in_order() -> None:
    events = one_answer()
    stream = AgentStream(events_of(*events))
    assert [e async for e in stream] == events
    assert stream.done and stream.stop_reason is StopReason.end_turn
    assert stream.usage == Usage(3, 2) and stream.iterations == 1
    assert await stream.get_final_text() == "Hello world"  # read while they passed


async def test_a_stream_of_events_gives_its_answer_and_its_end() -> None:
    assert await AgentStream(events_of(*one_answer())).get_final_text() == "Hello world"
    end = await AgentStream(events_of(*one_answer())).get_session_end()
    assert end == SessionEndEvent(StopReason.end_turn, Usage(3, 2), None, 1)


async def test_a_stream_of_events_answers_with_its_last_model_turn() -> None:
    events: list[StreamEvent] = [
        TextDelta(0, "Let me look."),
        ToolUseStart(1, "c1", "echo"),
        IterationEnd(1, StopReason.tool_use, Usage(1, 1)),
        ToolResult("c1", "echo", content="x"),
        TextDelta(0, "It is x."),
        IterationEnd(2, StopReason.end_turn, Usage(2, 2)),
        SessionEndEvent(StopReason.end_turn, Usage(3, 3), None, 2),
    ]
    assert await AgentStream(events_of(*events)).get_final_text() == "It is x."
    # text with no turn boundary at all (a hand-made stream) is the answer as it is
    bare = AgentStream(events_of(TextDelta(0, "a"), TextDelta(0, "b")))
    assert await bare.get_final_text() == "ab"


async def test_an_error_event_is_a_stream_error_from_both_getters() -> None:
    cause = RuntimeError("the model went away")
    closed: list[bool] = []

    async def failing() -> AsyncIterator[StreamEvent]:
        try:
            yield TextDelta(0, "half")
            yield Error(cause)
            yield SessionEndEvent(StopReason.error, Usage(), cause, 1)
            yield TextDelta(0, "never read")
        finally:
            closed.append(True)

    stream = AgentStream(failing())
    with pytest.raises(StreamError, match="the model went away") as caught:
        await stream.get_final_text()
    assert caught.value.__cause__ is cause
    assert isinstance(caught.value, TetherError)
    assert closed == [True]  # the iterator was closed at the error
    with pytest.raises(StreamError):
        await stream.get_final_text()  # asking again gives the same answer
    with pytest.raises(StreamError) as again:
        await AgentStream(failing()).get_session_end()
    assert again.value.__cause__ is cause


async def test_a_stream_without_its_end_event_has_no_session_end() -> None:
    stream = AgentStream(events_of(TextDelta(0, "cut")))
    with pytest.raises(StreamError, match="without a SessionEndEvent"):
        await stream.get_session_end()
    assert await stream.get_final_text() == "cut"


async def test_aclose_closes_the_iterator_given_even_before_reading() -> None:
    closed: list[str] = []

    async def source() -> AsyncIterator[StreamEvent]:
        try:
            yield TextDelta(0, "one")
            yield TextDelta(0, "two")
        finally:
            closed.append("closed")

    started = AgentStream(source())
    assert await started.__anext__() == TextDelta(0, "one")
    await started.aclose()
    assert closed == ["closed"] and started.done
    assert [e async for e in started] == []

    class Iterator:
        """An async iterator that is not a generator, with its own ``aclose``."""

        def __init__(self) -> None:
            self.closed = False

        def __aiter__(self) -> Iterator:
            return self

        async def __anext__(self) -> StreamEvent:
            raise StopAsyncIteration

        async def aclose(self) -> None:
            self.closed = True

    plain = Iterator()
    async with AgentStream(plain):
        pass
    assert plain.closed


async def test_a_stream_of_events_has_no_context_store() -> None:
    stream = AgentStream(events_of())
    with pytest.raises(AttributeError, match="no context store"):
        _ = stream.context


def test_a_stream_needs_an_async_iterator() -> None:
    with pytest.raises(TypeError, match="async iterator of events, not list"):
        AgentStream(one_answer())  # type: ignore[arg-type]


async def test_an_agents_own_stream_can_be_read_again_as_events() -> None:
    agent = Agent(system="s", transport=make_stub_transport())
    wrapped = AgentStream(agent.run_stream("hi"))
    assert await wrapped.get_final_text() == "Hello world"
    failing = Agent(system="s", transport=StubTransport([[TextDelta(0, "no end")]]))
    with pytest.raises(StreamError) as caught:
        await AgentStream(failing.run_stream("hi")).get_final_text()
    assert isinstance(caught.value.__cause__, StreamContractError)


# --------------------------------------------------------------------------------------------
# ToolResult as axio constructs it


def test_tool_result_content_and_input_have_defaults() -> None:
    first = ToolResult("c1", "echo")
    assert (first.is_error, first.content, first.input) == (False, "", {})
    second = ToolResult(tool_use_id="c2", name="echo", is_error=True)
    assert second.input == {} and second.input is not first.input  # a fresh dict each time
    for event in (first, second, ToolResult("c3", "echo", False, "out", {"msg": "hi"})):
        data = event_to_dict(event)
        assert event_from_dict(json.loads(json.dumps(data))) == event


# --------------------------------------------------------------------------------------------
# PermissionGuard: the base class axio guards subclass


class Upper(PermissionGuard):
    """Rewrites ``msg`` to upper case; denies ``forbidden``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, object]]] = []

    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        self.seen.append((tool.name, dict(kwargs)))
        if kwargs.get("msg") == "forbidden":
            raise PermissionError("not that one")
        return {**kwargs, "msg": str(kwargs["msg"]).upper()}


class AllowAll(PermissionGuard):
    async def check(self, tool: Tool, **kwargs: Any) -> dict[str, Any]:
        return kwargs


def test_permission_guard_is_importable_beside_tethers_guards() -> None:
    assert tether.PermissionGuard is guards.PermissionGuard is PermissionGuard
    assert isinstance(Upper(), CheckGuard)
    with pytest.raises(TypeError, match="abstract"):
        PermissionGuard()  # type: ignore[abstract]


async def guarded_run(guard: PermissionGuard, *msgs: str) -> tuple[MemoryContextStore, str]:
    """One real Agent run on a scripted model: one echo call per ``msg``, then an answer."""
    calls = [Call("echo", {"msg": m}, id=f"c{i}") for i, m in enumerate(msgs, start=1)]
    transport = ScriptedTransport([Reply(tool_calls=calls), Reply("done")])
    echo = make_echo_tool()
    guarded = Tool(echo.name, echo.handler, echo.description, schema=echo.schema, guards=[guard])
    store = MemoryContextStore()
    answer = await Agent(system="s", transport=transport, tools=[guarded]).run("go", store)
    return store, answer


async def test_a_permission_guard_allows_a_call() -> None:
    store, answer = await guarded_run(AllowAll(), "ping")
    assert answer == "done"
    (result,) = store.messages[2].tool_results
    assert not result.is_error and json.loads(result.text) == {"msg": "ping"}


async def test_a_permission_guard_replaces_the_arguments() -> None:
    guard = Upper()
    store, _ = await guarded_run(guard, "ping")
    (result,) = store.messages[2].tool_results
    assert json.loads(result.text) == {"msg": "PING"}
    assert guard.seen == [("echo", {"msg": "ping"})]


async def test_a_permission_guard_denial_is_an_error_result_for_the_model() -> None:
    store, answer = await guarded_run(Upper(), "forbidden", "fine")
    assert answer == "done"  # nothing crashed; the run went on
    denied, allowed = store.messages[2].tool_results
    assert denied.is_error and denied.text == "Tool call denied: not that one"
    assert not allowed.is_error and json.loads(allowed.text) == {"msg": "FINE"}


async def test_a_permission_guard_called_as_a_tether_guard_decides() -> None:
    tool = make_echo_tool()
    guard = Upper()
    assert await guard(ToolCall("c1", "echo", {"msg": "a"}, tool, 1)) == Rewrite({"msg": "A"})
    assert await guard(ToolCall("c2", "echo", {"msg": "forbidden"}, tool, 1)) == Deny(
        "not that one"
    )
    assert await AllowAll()(ToolCall("c3", "echo", {"msg": "a"}, tool, 1)) is None
