"""axio code runs unchanged: its ``StopReason`` spellings and its ``axio.testing`` helpers."""

from __future__ import annotations

import json

import pytest

from tether import (
    Agent,
    IterationEnd,
    MemoryContextStore,
    SessionEndEvent,
    StopReason,
    StreamEvent,
    TextDelta,
    Tool,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
    Usage,
)
from tether.codec import event_from_dict, event_to_dict
from tether.testing import (
    StubTransport,
    assert_stream_contract,
    collect,
    make_echo_tool,
    make_ephemeral_context,
    make_stub_transport,
    make_text_response,
    make_tool_use_response,
)

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
