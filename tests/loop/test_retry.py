"""The loop's retries of a failed model call: announced by ``Retrying`` events, only for
retryable errors and only before a turn's first event, the last error raised when they run out."""

from __future__ import annotations

from typing import Any

import pytest

from agent_runs import end_of, of_type, run_events
from tether import (
    Agent,
    MemoryContextStore,
    Message,
    Retrying,
    RetryPolicy,
    TextDelta,
    ToolResult,
    TransportError,
    tool,
)
from tether.testing import (
    Reply,
    ScriptedTransport,
    StubTransport,
    make_text_response,
    make_tool_use_response,
)

FAST_RETRY_KW: dict[str, Any] = {"initial_delay": 0.001, "max_delay": 0.002, "jitter": 0.0}


async def test_retryable_errors_are_retried_with_events() -> None:
    model = ScriptedTransport(
        [
            TransportError("x", retryable=True),
            TransportError("x", retryable=True),
            Reply("finally"),
        ]
    )
    agent = Agent("sys", model, retry=RetryPolicy(max_attempts=3, **FAST_RETRY_KW))
    events = await run_events(agent, "go")
    retrying = of_type(events, Retrying)
    assert [r.attempt for r in retrying] == [1, 2]
    assert all(r.delay > 0 for r in retrying)
    assert all("TransportError" in r.reason and "x" in r.reason for r in retrying)
    assert end_of(events).error is None
    assert model.call_count == 3
    assert model.requests[0] == model.requests[2]


async def test_non_retryable_error_fails_at_once() -> None:
    boom = TransportError("bad request", retryable=False, status_code=400)
    model = ScriptedTransport([boom, Reply("never")])
    agent = Agent("sys", model, retry=RetryPolicy(max_attempts=5, **FAST_RETRY_KW))
    events = await run_events(agent, "go")
    assert not of_type(events, Retrying)
    assert end_of(events).error is boom
    assert model.call_count == 1
    with pytest.raises(TransportError, match="bad request"):
        await agent.copy(transport=ScriptedTransport([boom])).run("go")


async def test_retry_exhaustion_raises_the_last_error() -> None:
    errors = [TransportError(f"fail {i}", retryable=True) for i in range(3)]
    model = ScriptedTransport([*errors, Reply("never")])
    agent = Agent("sys", model, retry=RetryPolicy(max_attempts=3, **FAST_RETRY_KW))
    with pytest.raises(TransportError) as info:
        await agent.run("go")
    assert info.value is errors[2]
    assert model.call_count == 3


async def test_failure_after_first_event_is_not_retried() -> None:
    mid = TransportError("connection reset", retryable=True)
    transport = StubTransport([[TextDelta(0, "par"), mid], make_text_response("never")])
    agent = Agent("sys", transport, retry=RetryPolicy(max_attempts=5, **FAST_RETRY_KW))
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)
    assert not of_type(events, Retrying)
    assert end_of(events).error is mid
    assert transport.call_count == 1
    assert store.messages == [Message("user", "go"), Message("assistant", "par")]


async def test_retry_then_tool_turn_then_answer_over_stub_transport() -> None:
    @tool
    def echo(text: str) -> str:
        return text

    transport = StubTransport(
        [
            TransportError("overloaded", retryable=True),
            make_tool_use_response("echo", tool_input={"text": "hi"}),
            make_text_response("Done"),
        ]
    )
    agent = Agent("sys", transport, tools=[echo], retry=RetryPolicy(**FAST_RETRY_KW))
    events = await run_events(agent, "go")
    assert len(of_type(events, Retrying)) == 1
    assert of_type(events, ToolResult)[0].content == "hi"
    assert end_of(events).error is None
