"""Agent loop extensions: cancellation, steering, guardrails, guards, bindings, context budget,
unknown tools, result truncation, retries, usage and the event callback (Prompty §13)."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import (
    Agent,
    Allow,
    CancellationToken,
    CharBudget,
    ContextTrimmed,
    Deny,
    Error,
    GuardrailError,
    IterationEnd,
    IterationStart,
    MemoryContextStore,
    Message,
    Retrying,
    RetryPolicy,
    Rewrite,
    RunCancelled,
    SessionEndEvent,
    Steering,
    SteeringInjected,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    Tool,
    ToolCall,
    ToolNotFoundError,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
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

FAST_RETRY_KW: dict[str, Any] = {"initial_delay": 0.001, "max_delay": 0.002, "jitter": 0.0}


# --------------------------------------------------------------------------------------------
# Helpers


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Every tool call has exactly one result in the next user message; no result lacks its call."""
    for i, message in enumerate(messages):
        uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]
        if uses:
            assert message.role == "assistant", f"message {i}: tool calls in a {message.role} turn"
            assert i + 1 < len(messages), f"message {i}: tool calls {uses} have no results after"
            following = messages[i + 1]
            assert following.role == "user", f"message {i + 1} should hold the tool results"
            answered = [b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)]
            for use_id in uses:
                assert answered.count(use_id) == 1, (
                    f"call {use_id} (message {i}) has {answered.count(use_id)} results"
                )
        if results:
            assert message.role == "user", f"message {i}: tool results in a {message.role} turn"
            assert i > 0, f"message {i}: tool results {results} with no call before them"
            previous = messages[i - 1]
            called = [b.id for b in previous.content if isinstance(b, ToolUseBlock)]
            for result_id in results:
                assert result_id in called, f"message {i}: result {result_id} answers no call"
            assert len(set(results)) == len(results), f"message {i}: duplicate results"


def results_by_id(message: Message) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for b in message.tool_results}


async def run_events(agent: Agent, user: Any, context: Any = None, **kw: Any) -> list[StreamEvent]:
    return [e async for e in agent.run_stream(user, context, **kw)]


def of_type(events: Sequence[StreamEvent], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def end_of(events: Sequence[StreamEvent]) -> SessionEndEvent:
    last = events[-1]
    assert isinstance(last, SessionEndEvent)
    return last


async def finish(task: asyncio.Task[Any]) -> None:
    """Await a cancelled task, expecting CancelledError (never hang the suite)."""
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


# --------------------------------------------------------------------------------------------
# The helper itself


def test_history_checker_rejects_missing_and_orphan_results() -> None:
    call = Message("assistant", [ToolUseBlock("c1", "t", {})])
    answer = Message("user", [ToolResultBlock("c1", "ok")])
    assert_history_valid([Message("user", "q"), call, answer])
    with pytest.raises(AssertionError):
        assert_history_valid([Message("user", "q"), call])
    with pytest.raises(AssertionError):
        assert_history_valid([Message("user", "q"), answer])
    with pytest.raises(AssertionError):
        assert_history_valid([call, Message("user", [*answer.content, *answer.content])])


# --------------------------------------------------------------------------------------------
# 1. Task cancellation mid-tool


async def test_task_cancel_mid_tool_parallel_keeps_sibling_result_and_history_valid() -> None:
    slow_started = asyncio.Event()
    fast_seen = asyncio.Event()

    @tool
    async def fast() -> str:
        return "fast result"

    @tool
    async def slow() -> str:
        slow_started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedTransport([Reply(tool_calls=[Call("fast"), Call("slow")]), Reply("resumed")])
    agent = Agent("sys", model, tools=[fast, slow])
    store = MemoryContextStore()

    async def consume() -> None:
        async for event in agent.run_stream("go", store):
            if isinstance(event, ToolResult) and event.name == "fast":
                fast_seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(slow_started.wait(), 5)
    await asyncio.wait_for(fast_seen.wait(), 5)
    task.cancel()
    await finish(task)

    history = store.messages
    assert_history_valid(history)
    results = results_by_id(history[-1])
    assert results["call_1"].content == "fast result"
    assert not results["call_1"].is_error
    assert results["call_2"].is_error
    assert "interrupted" in results["call_2"].text

    assert await agent.run("continue", store) == "resumed"
    sent = model.requests[1].messages
    interrupted = [r for m in sent for r in m.tool_results if r.tool_use_id == "call_2"]
    assert len(interrupted) == 1
    assert "interrupted" in interrupted[0].text
    assert sent[-1] == Message("user", "continue")
    assert_history_valid(store.messages)


async def test_task_cancel_mid_tool_sequential_marks_running_and_later_calls() -> None:
    slow_started = asyncio.Event()
    ran: list[str] = []

    @tool
    async def fast() -> str:
        ran.append("fast")
        return "fast result"

    @tool
    async def slow() -> str:
        ran.append("slow")
        slow_started.set()
        await asyncio.sleep(60)
        return "never"

    @tool
    async def later() -> str:
        ran.append("later")
        return "later result"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("fast"), Call("slow"), Call("later")]), Reply("resumed")]
    )
    agent = Agent("sys", model, tools=[fast, slow, later], execution="sequential")
    store = MemoryContextStore()
    task = asyncio.create_task(run_events(agent, "go", store))
    await asyncio.wait_for(slow_started.wait(), 5)
    task.cancel()
    await finish(task)

    assert ran == ["fast", "slow"]
    history = store.messages
    assert_history_valid(history)
    results = results_by_id(history[-1])
    assert results["call_1"].content == "fast result"
    assert "interrupted" in results["call_2"].text and results["call_2"].is_error
    assert results["call_3"].is_error
    assert [r.tool_use_id for r in history[-1].tool_results] == ["call_1", "call_2", "call_3"]

    assert await agent.run("continue", store) == "resumed"
    assert model.requests[1].messages[-2] == history[-1]
    assert ran == ["fast", "slow"]


# --------------------------------------------------------------------------------------------
# 2. Cancellation mid-stream, and closing the stream


async def test_task_cancel_mid_stream_stores_partial_text() -> None:
    gate = asyncio.Event()
    two_chunks = asyncio.Event()
    model = ScriptedTransport(
        [
            Hold(gate, then=Reply("Hello brave new world", chunks=4), after_events=2),
            Reply("second answer"),
        ]
    )
    agent = Agent("sys", model)
    store = MemoryContextStore()
    deltas: list[str] = []

    async def consume() -> None:
        async for event in agent.run_stream("go", store):
            if isinstance(event, TextDelta):
                deltas.append(event.delta)
                if len(deltas) == 2:
                    two_chunks.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(two_chunks.wait(), 5)
    task.cancel()
    await finish(task)

    partial = "".join(deltas)
    assert partial and partial != "Hello brave new world"
    assert "Hello brave new world".startswith(partial)
    history = store.messages
    assert history == [Message("user", "go"), Message("assistant", partial)]
    assert_history_valid(history)

    assert await agent.run("again", store) == "second answer"
    assert model.requests[1].messages[:2] == tuple(history)
    assert store.messages[-1] == Message("assistant", "second answer")


async def test_aclose_mid_tool_cancels_the_tool_and_keeps_history_valid() -> None:
    slow_started = asyncio.Event()
    slow_cancelled = asyncio.Event()

    @tool
    async def fast() -> str:
        await slow_started.wait()
        return "fast result"

    @tool
    async def slow() -> str:
        slow_started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            slow_cancelled.set()
            raise
        return "never"

    model = ScriptedTransport([Reply(tool_calls=[Call("fast"), Call("slow")]), Reply("resumed")])
    agent = Agent("sys", model, tools=[fast, slow])
    store = MemoryContextStore()
    stream = agent.run_stream("go", store)
    async for event in stream:
        if isinstance(event, ToolResult):
            assert event.name == "fast"
            break
    await stream.aclose()

    assert slow_cancelled.is_set()
    history = store.messages
    assert_history_valid(history)
    results = results_by_id(history[-1])
    assert results["call_1"].content == "fast result"
    assert "interrupted" in results["call_2"].text
    assert await agent.run("continue", store) == "resumed"
    assert model.call_count == 2


async def test_aclose_right_after_a_tool_calling_turn_keeps_history_valid() -> None:
    """ENGINE BUG: the stored tool call has no result when the stream closes at IterationEnd."""
    handler_calls: list[str] = []

    @tool
    def echo(text: str) -> str:
        handler_calls.append(text)
        return text

    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "hi"})]), Reply("x")])
    agent = Agent("sys", model, tools=[echo])
    store = MemoryContextStore()
    stream = agent.run_stream("go", store)
    async for event in stream:
        if isinstance(event, IterationEnd):
            break
    await stream.aclose()

    assert handler_calls == []
    assert_history_valid(store.messages)


async def test_task_cancel_during_async_on_event_after_tool_turn_keeps_history_valid() -> None:
    """ENGINE BUG: same window as above, reached by a task cancel (DESIGN promises validity)."""
    in_callback = asyncio.Event()

    async def on_event(event: StreamEvent) -> None:
        if isinstance(event, IterationEnd) and event.stop_reason is StopReason.TOOL_USE:
            in_callback.set()
            await asyncio.Event().wait()

    @tool
    def echo(text: str) -> str:
        return text

    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "hi"})]), Reply("x")])
    agent = Agent("sys", model, tools=[echo], on_event=on_event)
    store = MemoryContextStore()
    task = asyncio.create_task(run_events(agent, "go", store))
    await asyncio.wait_for(in_callback.wait(), 5)
    task.cancel()
    await finish(task)

    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 3. CancellationToken


async def test_token_cancelled_before_run_makes_no_model_call() -> None:
    model = ScriptedTransport([Reply("never")])
    agent = Agent("sys", model)
    token = CancellationToken()
    token.cancel()
    events = await run_events(agent, "go", cancel=token)

    assert model.call_count == 0
    end = end_of(events)
    assert end.stop_reason is StopReason.CANCELLED
    assert isinstance(end.error, RunCancelled)
    errors = of_type(events, Error)
    assert len(errors) == 1 and errors[0].exception is end.error
    assert not of_type(events, IterationStart)

    with pytest.raises(RunCancelled):
        await agent.run("go", cancel=token)
    assert model.call_count == 0


async def test_token_cancelled_inside_first_sequential_tool_skips_the_second() -> None:
    token = CancellationToken()
    ran: list[str] = []

    @tool
    def first() -> str:
        ran.append("first")
        token.cancel()
        return "first done"

    @tool
    def second() -> str:
        ran.append("second")
        return "second done"

    model = ScriptedTransport([Reply(tool_calls=[Call("first"), Call("second")]), Reply("no")])
    agent = Agent("sys", model, tools=[first, second], execution="sequential")
    store = MemoryContextStore()
    events = await run_events(agent, "go", store, cancel=token)

    assert ran == ["first"]
    assert model.call_count == 1
    results = {e.tool_use_id: e for e in of_type(events, ToolResult)}
    assert results["call_1"].content == "first done" and not results["call_1"].is_error
    assert results["call_2"].is_error and "cancelled" in str(results["call_2"].content)
    end = end_of(events)
    assert end.stop_reason is StopReason.CANCELLED
    assert isinstance(end.error, RunCancelled)
    assert_history_valid(store.messages)
    stored = results_by_id(store.messages[-1])
    assert stored["call_1"].content == "first done"
    assert "cancelled" in stored["call_2"].text


async def test_token_cancel_during_retry_backoff_ends_promptly() -> None:
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("never")])
    agent = Agent("sys", model, retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3))
    token = CancellationToken()
    events: list[StreamEvent] = []

    async def consume() -> None:
        async for event in agent.run_stream("go", cancel=token):
            events.append(event)
            if isinstance(event, Retrying):
                asyncio.get_running_loop().call_later(0.05, token.cancel)

    await asyncio.wait_for(consume(), 5)  # a backoff that ignored the token would take 10 s

    retrying = of_type(events, Retrying)
    assert len(retrying) == 1 and retrying[0].delay == pytest.approx(10)
    end = end_of(events)
    assert end.stop_reason is StopReason.CANCELLED
    assert isinstance(end.error, RunCancelled)
    assert model.call_count == 1


async def test_token_cancel_from_another_thread_interrupts_backoff() -> None:
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("never")])
    agent = Agent("sys", model, retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3))
    token = CancellationToken()

    def cancel_later() -> None:
        time.sleep(0.05)
        token.cancel()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, Retrying):
            threading.Thread(target=cancel_later, daemon=True).start()

    agent = agent.copy(on_event=on_event)
    with pytest.raises(RunCancelled):  # a backoff that ignored the token would take 10 s
        await asyncio.wait_for(agent.run("go", cancel=token), 5)
    assert token.cancelled
    assert model.call_count == 1


async def test_cancel_whose_interrupts_land_in_separate_loop_steps_still_cancels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token fires every interrupt it handed out; from another thread those fires can reach the
    # loop in separate steps. The failed first attempt must not leave the turn's interrupt armed,
    # or its fire cancels the backoff before the backoff's own interrupt knows (a stray cancel).
    from tether.loop import control

    order = iter(range(100))

    def staggered(loop: asyncio.AbstractEventLoop, fire: Any) -> None:
        def later(steps: int) -> None:
            if steps:
                loop.call_soon(later, steps - 1)
            else:
                fire()

        loop.call_soon_threadsafe(later, 2 * next(order))

    monkeypatch.setattr(control, "fire_soon", staggered)
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("never")])
    token = CancellationToken()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, Retrying):
            asyncio.get_running_loop().call_later(0.02, token.cancel)

    agent = Agent(
        "sys",
        model,
        retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3),
        on_event=on_event,
    )
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(agent.run("go", cancel=token), 5)
    assert model.call_count == 1


async def test_a_callers_cancel_that_comes_with_the_tokens_goes_on() -> None:
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("never")])
    token = CancellationToken()
    tasks: list[asyncio.Task[str]] = []

    def both() -> None:  # in one loop step: the token's cancel and the caller's own
        token.cancel()
        tasks[0].cancel()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, Retrying):
            asyncio.get_running_loop().call_later(0.02, both)

    agent = Agent(
        "sys",
        model,
        retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3),
        on_event=on_event,
    )
    tasks.append(asyncio.ensure_future(agent.run("go", cancel=token)))
    with pytest.raises(asyncio.CancelledError):  # not turned into the token's RunCancelled
        await asyncio.wait_for(tasks[0], 5)
    assert tasks[0].cancelled()


async def test_token_sleep_reports_timeout_and_early_cancel() -> None:
    token = CancellationToken()
    assert await token.sleep(0.001) is False
    threading.Timer(0.02, token.cancel).start()
    assert await asyncio.wait_for(token.sleep(10), 5) is True  # woken early, or wait_for fails
    assert await asyncio.wait_for(token.sleep(10), 0.5) is True  # already cancelled: at once


async def test_token_sleep_waits_on_the_given_clock() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.slept: list[float] = []

        def now(self) -> float:
            return 0.0

        def random(self) -> float:
            return 0.5

        async def sleep(self, seconds: float) -> None:
            self.slept.append(seconds)

    clock = Recorder()
    assert await CancellationToken().sleep(7.5, clock) is False
    assert clock.slept == [7.5]


# --------------------------------------------------------------------------------------------
# 4. Steering


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


# --------------------------------------------------------------------------------------------
# 5. Input and output guardrails


async def test_input_guardrail_sees_the_messages_to_send() -> None:
    seen: list[list[Message]] = []

    def guardrail(messages: Sequence[Message]) -> Allow:
        seen.append(list(messages))
        return Allow()

    model = ScriptedTransport([Reply("fine")])
    store = MemoryContextStore([Message("user", "earlier"), Message("assistant", "noted")])
    agent = Agent("sys", model, input_guardrails=[guardrail])
    assert await agent.run("now", store) == "fine"
    assert seen == [list(model.requests[0].messages)]
    assert [m.text for m in seen[0]] == ["earlier", "noted", "now"]


async def test_input_guardrail_deny_ends_run_before_model_call() -> None:
    model = ScriptedTransport([Reply("never")])
    agent = Agent("sys", model, input_guardrails=[lambda msgs: Deny("no secrets")])
    events = await run_events(agent, "go")
    assert model.call_count == 0
    errors = of_type(events, Error)
    assert len(errors) == 1 and isinstance(errors[0].exception, GuardrailError)
    assert "no secrets" in str(errors[0].exception)
    end = end_of(events)
    assert end.error is errors[0].exception
    assert end.stop_reason is StopReason.ERROR
    with pytest.raises(GuardrailError, match="no secrets"):
        await agent.run("go")


async def test_async_input_guardrail_and_steering_and_trim_are_visible_to_it() -> None:
    seen: list[list[Message]] = []

    async def guardrail(messages: Sequence[Message]) -> Deny | None:
        await asyncio.sleep(0)
        seen.append(list(messages))
        return Deny("blocked") if any(m.text == "bad" for m in messages) else None

    steering = Steering()
    steering.send("bad")
    old = [Message("user", "x" * 500), Message("assistant", "y" * 500)]
    model = ScriptedTransport([Reply("never")])
    agent = Agent(
        "sys", model, input_guardrails=[guardrail], context_policy=CharBudget(max_chars=300)
    )
    with pytest.raises(GuardrailError, match="blocked"):
        await agent.run("go", MemoryContextStore(old), steering=steering)
    assert model.call_count == 0
    assert seen[0][0].text.startswith("[Context summary:")
    assert seen[0][-1].text == "bad"


async def test_output_guardrail_sees_assistant_message_and_deny_is_not_stored() -> None:
    seen: list[Message] = []

    async def guardrail(message: Message) -> Deny | Allow:
        seen.append(message)
        return Deny("leaks a password") if "hunter2" in message.text else Allow()

    @tool
    def echo(text: str) -> str:
        return text

    model = ScriptedTransport(
        [Reply("checking", tool_calls=[Call("echo", {"text": "a"})]), Reply("it is hunter2")]
    )
    agent = Agent("sys", model, tools=[echo], output_guardrails=[guardrail])
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)

    assert [m.role for m in seen] == ["assistant", "assistant"]
    assert seen[0].text == "checking" and seen[0].tool_uses[0].name == "echo"
    assert seen[1].text == "it is hunter2"
    end = end_of(events)
    assert isinstance(end.error, GuardrailError) and "leaks a password" in str(end.error)
    assert all("hunter2" not in m.text for m in store.messages)
    assert store.messages[-1].tool_results  # the last stored turn is the tool result
    assert_history_valid(store.messages)


async def test_output_guardrail_deny_of_tool_call_turn_runs_no_tool() -> None:
    ran: list[str] = []

    @tool
    def danger() -> str:
        ran.append("danger")
        return "boom"

    model = ScriptedTransport([Reply(tool_calls=[Call("danger")])])
    agent = Agent("sys", model, tools=[danger], output_guardrails=[lambda m: Deny("nope")])
    store = MemoryContextStore()
    with pytest.raises(GuardrailError, match="nope"):
        await agent.run("go", store)
    assert ran == []
    assert store.messages == [Message("user", "go")]


# --------------------------------------------------------------------------------------------
# 6. Guards


async def test_agent_guards_then_tool_guards_on_every_call_with_call_fields() -> None:
    log: list[tuple[str, ToolCall]] = []

    def agent_guard(call: ToolCall) -> None:
        log.append(("agent", call))

    def tool_guard(call: ToolCall) -> Allow:
        log.append(("tool", call))
        return Allow()

    @tool(guards=[tool_guard])
    def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 2}), Call("add", {"a": 3, "b": 4})]),
            Reply(tool_calls=[Call("add", {"a": 5, "b": 6}, id="later")]),
            Reply("done"),
        ]
    )
    agent = Agent("sys", model, tools=[add], guards=[agent_guard], execution="sequential")
    events = await run_events(agent, "go")
    assert [e.content for e in of_type(events, ToolResult)] == ["3", "7", "11"]
    assert [(who, c.id) for who, c in log] == [
        ("agent", "call_1"),
        ("tool", "call_1"),
        ("agent", "call_2"),
        ("tool", "call_2"),
        ("agent", "later"),
        ("tool", "later"),
    ]
    first = log[0][1]
    assert first.name == "add"
    assert dict(first.arguments) == {"a": 1, "b": 2}
    assert first.tool is add
    assert first.iteration == 1
    assert log[4][1].iteration == 2
    assert dict(log[4][1].arguments) == {"a": 5, "b": 6}


async def test_guard_deny_reason_reaches_model_and_handler_not_called() -> None:
    ran: list[str] = []

    @tool(guards=[lambda call: Deny("too risky")])
    def rm(path: str) -> str:
        ran.append(path)
        return "deleted"

    model = ScriptedTransport([Reply(tool_calls=[Call("rm", {"path": "/"})]), Reply("ok")])
    agent = Agent("sys", model, tools=[rm])
    events = await run_events(agent, "go")
    assert ran == []
    (result,) = of_type(events, ToolResult)
    assert result.is_error and result.content == "Tool call denied: too risky"
    sent = model.requests[1].last_message.tool_results[0]
    assert sent.content == "Tool call denied: too risky" and sent.is_error
    assert end_of(events).error is None


async def test_agent_guard_deny_stops_chain_before_tool_guard() -> None:
    log: list[str] = []

    def tool_guard(call: ToolCall) -> None:
        log.append("tool")

    @tool(guards=[tool_guard])
    def act() -> str:
        log.append("handler")
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("act")]), Reply("ok")])
    agent = Agent("sys", model, tools=[act], guards=[lambda c: Deny("policy")])
    await agent.run("go")
    assert log == []
    assert model.requests[1].last_message.tool_results[0].content == "Tool call denied: policy"


async def test_guard_rewrite_changes_args_and_async_guard_is_awaited() -> None:
    received: list[int] = []
    tool_guard_saw: list[dict[str, Any]] = []

    async def agent_guard(call: ToolCall) -> Rewrite:
        await asyncio.sleep(0)
        return Rewrite({**call.arguments, "n": call.arguments["n"] * 10})

    async def tool_guard(call: ToolCall) -> None:
        tool_guard_saw.append(dict(call.arguments))

    @tool(guards=[tool_guard])
    def record(n: int) -> str:
        received.append(n)
        return str(n)

    model = ScriptedTransport([Reply(tool_calls=[Call("record", {"n": 4})]), Reply("ok")])
    agent = Agent("sys", model, tools=[record], guards=[agent_guard])
    events = await run_events(agent, "go")
    assert received == [40]
    assert tool_guard_saw == [{"n": 40}]
    assert of_type(events, ToolResult)[0].content == "40"


async def test_guard_that_raises_becomes_error_result() -> None:
    ran: list[str] = []

    def broken(call: ToolCall) -> None:
        raise RuntimeError("guard exploded")

    @tool(guards=[broken])
    def act() -> str:
        ran.append("act")
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("act")]), Reply("recovered")])
    agent = Agent("sys", model, tools=[act])
    store = MemoryContextStore()
    assert await agent.run("go", store) == "recovered"
    assert ran == []
    result = store.messages[2].tool_results[0]
    assert result.is_error and "guard exploded" in result.text


# --------------------------------------------------------------------------------------------
# 7. Bindings


async def test_bindings_hidden_from_schema_and_override_model_value() -> None:
    got: list[tuple[str, int]] = []

    @tool(bindings={"user_id": 7})
    def lookup(query: str, user_id: int) -> str:
        got.append((query, user_id))
        return f"{query}:{user_id}"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("lookup", {"query": "q", "user_id": 99})]), Reply("ok")]
    )
    agent = Agent("sys", model, tools=[lookup])
    events = await run_events(agent, "go")
    (spec,) = model.requests[0].tools
    assert "user_id" not in spec.schema["properties"]
    assert "query" in spec.schema["properties"]
    assert "user_id" not in spec.schema.get("required", [])
    assert got == [("q", 7)]
    assert of_type(events, ToolResult)[0].content == "q:7"


async def test_tool_bind_returns_a_bound_copy() -> None:
    got: list[int] = []

    @tool
    def lookup(query: str, user_id: int) -> str:
        got.append(user_id)
        return "ok"

    bound = lookup.bind(user_id=7)
    assert "user_id" in lookup.schema["properties"]  # the original is unchanged
    assert "user_id" not in bound.schema["properties"]
    assert "user_id" not in bound.schema.get("required", [])
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("lookup", {"query": "q", "user_id": 99})]), Reply("ok")]
    )
    await Agent("sys", model, tools=[bound]).run("go")
    assert got == [7]
    assert "user_id" not in model.requests[0].tools[0].schema["properties"]


# --------------------------------------------------------------------------------------------
# 8. Context budget


def _long_history() -> list[Message]:
    return [
        Message("system", "You are terse."),
        Message("user", "first question " + "a" * 300),
        Message("assistant", [TextBlock("let me look"), ToolUseBlock("old_1", "search", {})]),
        Message("user", [ToolResultBlock("old_1", "r" * 300)]),
        Message("assistant", "first answer " + "b" * 300),
        Message("user", "second question " + "c" * 300),
        Message("assistant", "second answer " + "d" * 300),
    ]


async def test_char_budget_trims_request_but_store_keeps_everything() -> None:
    original = _long_history()
    store = MemoryContextStore(original)
    model = ScriptedTransport([Reply("short answer")])
    agent = Agent("sys", model, context_policy=CharBudget(max_chars=800))
    events = await run_events(agent, "latest question", store)

    sent = model.requests[0].messages
    full = [*original, Message("user", "latest question")]
    assert len(sent) < len(full)
    assert sent[0] == original[0]
    summary = sent[1]
    assert summary.role == "user" and summary.text.startswith("[Context summary:")
    assert "first question" in summary.text
    assert "search" in summary.text  # the dropped tool call is named
    kept = list(sent[2:])
    assert kept == full[len(full) - len(kept) :]
    assert kept[-1] == Message("user", "latest question")
    assert len(kept) >= 2
    assert_history_valid(sent)
    assert not any(isinstance(b, ToolResultBlock) for b in kept[0].content)

    (trimmed,) = of_type(events, ContextTrimmed)
    assert trimmed.remaining == len(sent)
    assert store.messages == [*full, Message("assistant", "short answer")]


async def test_context_trimmed_removed_counts_the_dropped_messages() -> None:
    """ENGINE BUG: ``removed`` is one short when a summary message is inserted."""
    original = _long_history()
    store = MemoryContextStore(original)
    model = ScriptedTransport([Reply("short answer")])
    agent = Agent("sys", model, context_policy=CharBudget(max_chars=800))
    events = await run_events(agent, "latest question", store)
    sent = model.requests[0].messages
    full = [*original, Message("user", "latest question")]
    dropped = len(full) - (len(sent) - 1)  # everything not sent, the summary aside
    (trimmed,) = of_type(events, ContextTrimmed)
    assert trimmed.removed == dropped


async def test_no_context_trimmed_event_when_under_budget() -> None:
    model = ScriptedTransport([Reply("ok")])
    agent = Agent("sys", model, context_policy=CharBudget(max_chars=100_000))
    events = await run_events(agent, "go")
    assert not of_type(events, ContextTrimmed)
    assert model.requests[0].messages == (Message("user", "go"),)


def test_char_budget_under_budget_changes_nothing() -> None:
    messages = [Message("user", "hi"), Message("assistant", "hello")]
    assert CharBudget(max_chars=1000).apply(messages) is None


def test_char_budget_keeps_system_and_at_least_two() -> None:
    messages = [
        Message("system", "s1"),
        Message("system", "s2"),
        *[Message("user" if i % 2 == 0 else "assistant", f"m{i} " + "x" * 500) for i in range(6)],
    ]
    for summarize in (True, False):
        trim = CharBudget(max_chars=10, summarize=summarize).apply(messages)
        assert trim is not None
        assert trim.removed == 4
        out = trim.messages
        assert list(out[:2]) == messages[:2]
        rest = list(out[2:])
        if summarize:
            assert rest[0].text.startswith("[Context summary:")
            rest = rest[1:]
        assert rest == messages[-2:]


def test_char_budget_unsummarised_never_starts_with_assistant_or_orphan_result() -> None:
    messages = [
        Message("user", "q " + "x" * 500),
        Message("assistant", [ToolUseBlock("c1", "search", {"q": "y" * 500})]),
        Message("user", [ToolResultBlock("c1", "found")]),
        Message("assistant", "answer"),
        Message("user", "thanks"),
        Message("assistant", "welcome"),
    ]
    trim = CharBudget(max_chars=150, summarize=False).apply(messages)
    assert trim is not None
    out = list(trim.messages)
    assert trim.removed == len(messages) - len(out)
    assert out
    assert out[0].role == "user"
    assert not out[0].tool_results
    assert out == messages[len(messages) - len(out) :]
    assert_history_valid(out)

    summed = CharBudget(max_chars=150).apply(messages)
    assert summed is not None
    summarized = list(summed.messages)
    assert summarized[0].text.startswith("[Context summary:")
    assert "Called tools: search" in summarized[0].text
    assert not summarized[1].tool_results
    assert_history_valid(summarized)


def test_char_budget_rejects_non_positive_budget() -> None:
    with pytest.raises(ValueError):
        CharBudget(max_chars=0)


# --------------------------------------------------------------------------------------------
# 9. Unknown tools


async def test_unknown_tool_default_is_an_error_result_and_run_goes_on() -> None:
    @tool
    def known() -> str:
        return "k"

    model = ScriptedTransport([Reply(tool_calls=[Call("ghost")]), Reply("sorry")])
    agent = Agent("sys", model, tools=[known])
    store = MemoryContextStore()
    assert await agent.run("go", store) == "sorry"
    result = model.requests[1].last_message.tool_results[0]
    assert result.is_error
    assert "ghost" in result.text and "known" in result.text
    assert_history_valid(store.messages)


async def test_unknown_tool_raise_stores_result_then_raises() -> None:
    @tool
    def known() -> str:
        return "k"

    model = ScriptedTransport([Reply(tool_calls=[Call("known"), Call("ghost")]), Reply("no")])
    agent = Agent("sys", model, tools=[known], unknown_tool="raise")
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)
    errors = of_type(events, Error)
    assert len(errors) == 1 and isinstance(errors[0].exception, ToolNotFoundError)
    assert "ghost" in str(errors[0].exception)
    assert end_of(events).error is errors[0].exception
    assert model.call_count == 1
    assert_history_valid(store.messages)
    results = results_by_id(store.messages[-1])
    assert results["call_1"].content == "k"
    assert results["call_2"].is_error

    with pytest.raises(ToolNotFoundError):
        await agent.copy(transport=ScriptedTransport([Reply(tool_calls=[Call("ghost")])])).run("go")


async def test_duplicate_tool_names_never_leave_an_unanswered_call() -> None:
    """ENGINE BUG: the duplicate-name check runs after the tool-calling turn is stored."""

    def handler() -> str:
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("same")]), Reply("ok")])
    agent = Agent("sys", model, tools=[Tool("same", handler), Tool("same", handler)])
    store = MemoryContextStore()
    with pytest.raises(ValueError, match="same"):
        await agent.run("go", store)
    assert_history_valid(store.messages)


# --------------------------------------------------------------------------------------------
# 10. Result truncation for the model


async def test_max_tool_result_chars_truncates_only_the_model_copy() -> None:
    big = "".join(chr(ord("a") + i % 26) for i in range(500))

    @tool
    def dump() -> str:
        return big

    model = ScriptedTransport([Reply(tool_calls=[Call("dump")]), Reply("ok"), Reply("ok2")])
    agent = Agent("sys", model, tools=[dump], max_tool_result_chars=50)
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)

    assert of_type(events, ToolResult)[0].content == big
    assert store.messages[2].tool_results[0].content == big

    def check_truncated(text: str) -> None:
        assert text.startswith(big[:50])
        assert big[:51] not in text
        assert "[truncated" in text
        assert len(text) <= 50 + 60

    check_truncated(model.requests[1].messages[2].tool_results[0].text)
    assert await agent.run("again", store) == "ok2"
    check_truncated(model.requests[2].messages[2].tool_results[0].text)
    assert store.messages[2].tool_results[0].content == big


async def test_short_results_are_sent_unchanged() -> None:
    @tool
    def small() -> str:
        return "tiny"

    model = ScriptedTransport([Reply(tool_calls=[Call("small")]), Reply("ok")])
    await Agent("sys", model, tools=[small], max_tool_result_chars=50).run("go")
    assert model.requests[1].last_message.tool_results[0].content == "tiny"


def test_max_tool_result_chars_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Agent("sys", ScriptedTransport([]), max_tool_result_chars=0)


# --------------------------------------------------------------------------------------------
# 11. Retry


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


def test_retry_policy_honours_retry_after_and_its_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, jitter=0.0, max_retry_after=30.0)
    assert policy.delay(1) == pytest.approx(1.0)
    assert policy.delay(3) == pytest.approx(4.0)
    assert policy.delay(1, TransportError("x", retry_after=5.0)) == pytest.approx(5.0)
    # A smaller retry_after does not shorten the backoff.
    assert policy.delay(3, TransportError("x", retry_after=0.5)) == pytest.approx(4.0)
    # A huge retry_after is capped.
    assert policy.delay(1, TransportError("x", retry_after=1000.0)) == pytest.approx(30.0)
    assert RetryPolicy(initial_delay=1, max_delay=3, jitter=0).delay(10) == pytest.approx(3.0)


def test_retry_policy_should_retry_counts_the_first_try() -> None:
    policy = RetryPolicy(max_attempts=3)
    retryable = TransportError("x", retryable=True)
    assert policy.should_retry(retryable, 1)
    assert policy.should_retry(retryable, 2)
    assert not policy.should_retry(retryable, 3)
    assert not policy.should_retry(TransportError("x"), 1)
    assert policy.should_retry(ConnectionError("reset"), 1)
    assert not policy.should_retry(ValueError("bug"), 1)


@fuzz(200)
@given(
    attempt=st.integers(1, 12),
    initial=st.floats(0.001, 10.0),
    multiplier=st.floats(1.0, 4.0),
    max_delay=st.floats(0.001, 120.0),
    jitter=st.floats(0.0, 1.0),
    retry_after=st.one_of(st.none(), st.floats(0.001, 500.0)),
    cap=st.floats(0.001, 100.0),
)
def test_retry_delay_within_jitter_bounds(
    attempt: int,
    initial: float,
    multiplier: float,
    max_delay: float,
    jitter: float,
    retry_after: float | None,
    cap: float,
) -> None:
    policy = RetryPolicy(
        initial_delay=initial,
        multiplier=multiplier,
        max_delay=max_delay,
        jitter=jitter,
        max_retry_after=cap,
    )
    base = min(initial * multiplier ** (attempt - 1), max_delay)
    low, high = base * (1 - jitter), base
    exc = None if retry_after is None else TransportError("x", retry_after=retry_after)
    delay = policy.delay(attempt, exc)
    if retry_after is not None:
        floor = min(retry_after, cap)
        low, high = max(low, floor), max(high, floor)
    tol = 1e-9 * max(1.0, high)
    assert low - tol <= delay <= high + tol
    assert math.isfinite(delay)


# --------------------------------------------------------------------------------------------
# 12. Usage


async def test_usage_per_iteration_and_totals() -> None:
    @tool
    def noop() -> str:
        return "ok"

    u1 = Usage(10, 5, cache_read_tokens=2)
    u2 = Usage(20, 7, reasoning_tokens=3, cache_write_tokens=1)
    model = ScriptedTransport([Reply(tool_calls=[Call("noop")], usage=u1), Reply("a", usage=u2)])
    stream = Agent("sys", model, tools=[noop]).run_stream("go")
    events = [e async for e in stream]
    assert [e.usage for e in of_type(events, IterationEnd)] == [u1, u2]
    total = Usage(30, 12, cache_read_tokens=2, cache_write_tokens=1, reasoning_tokens=3)
    assert end_of(events).total_usage == total
    assert stream.usage == total
    assert end_of(events).iterations == 2


def test_usage_addition() -> None:
    a = Usage(1, 2, 3, 4, 5)
    b = Usage(10, 20, 30, 40, 50)
    assert a + b == Usage(11, 22, 33, 44, 55)
    assert (a + b).total_tokens == 33
    assert a + Usage() == a
    with pytest.raises(TypeError):
        _ = a + 1  # type: ignore[operator]


# --------------------------------------------------------------------------------------------
# 13. on_event


async def test_sync_on_event_sees_exactly_the_yielded_events() -> None:
    seen: list[StreamEvent] = []

    @tool
    def noop() -> str:
        return "ok"

    model = ScriptedTransport([Reply("t", tool_calls=[Call("noop")]), Reply("done", chunks=3)])
    agent = Agent("sys", model, tools=[noop], on_event=seen.append)
    events = await run_events(agent, "go")
    assert len(events) > 5
    assert len(seen) == len(events)
    assert all(a is b for a, b in zip(seen, events, strict=True))


async def test_async_on_event_is_awaited_before_the_event_is_yielded() -> None:
    handled: list[StreamEvent] = []

    async def on_event(event: StreamEvent) -> None:
        await asyncio.sleep(0)
        handled.append(event)

    agent = Agent("sys", ScriptedTransport([Reply("hi")]), on_event=on_event)
    async for event in agent.run_stream("go"):
        assert handled and handled[-1] is event
    assert isinstance(handled[-1], SessionEndEvent)


async def test_failing_on_event_is_logged_and_run_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def on_event(event: StreamEvent) -> None:
        raise RuntimeError("callback broke")

    agent = Agent("sys", ScriptedTransport([Reply("still fine")]), on_event=on_event)
    with caplog.at_level(logging.ERROR, logger="tether.agent"):
        assert await agent.run("go") == "still fine"
    records = [r for r in caplog.records if r.name == "tether.agent"]
    assert records
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in records)
    assert any("SessionEndEvent" in r.getMessage() for r in records)


async def test_failing_async_on_event_is_logged_and_run_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def on_event(event: StreamEvent) -> None:
        raise RuntimeError("async callback broke")

    agent = Agent("sys", ScriptedTransport([Reply("ok")]), on_event=on_event)
    with caplog.at_level(logging.ERROR, logger="tether.agent"):
        assert await agent.run("go") == "ok"
    assert any(r.name == "tether.agent" for r in caplog.records)
