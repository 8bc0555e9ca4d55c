"""The ``CancellationToken``: cancelled before a run, inside a tool, during a retry's backoff
(from this loop or another thread), with the caller's own cancel, and its interruptible sleep."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agent_runs import assert_history_valid, end_of, of_type, results_by_id, run_events
from tether import (
    Agent,
    CancellationToken,
    Error,
    IterationStart,
    MemoryContextStore,
    Retrying,
    RetryPolicy,
    RunCancelled,
    StopReason,
    StreamEvent,
    ToolResult,
    TransportError,
    tool,
)
from tether.base.clock import SystemClock
from tether.testing import Call, Reply, ScriptedTransport


class SignallingClock(SystemClock):
    """The real clock, calling ``on_wait`` as each wait begins: a test cancels while the backoff
    waits, not after a delay it guessed would be long enough."""

    def __init__(self, on_wait: Callable[[], object]) -> None:
        self.on_wait = on_wait

    async def sleep(self, seconds: float) -> None:
        self.on_wait()
        await super().sleep(seconds)


def soon(callback: Callable[[], object]) -> Callable[[], object]:
    """``callback`` on this loop's next step (by then the backoff's wait has begun)."""
    return lambda: asyncio.get_running_loop().call_soon(callback)


def in_a_thread(callback: Callable[[], object]) -> Callable[[], object]:
    """``callback`` in a new thread, started now."""
    return lambda: threading.Thread(target=callback, daemon=True).start()


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
    token = CancellationToken()
    retry = RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3)
    agent = Agent("sys", model, retry=retry, clock=SignallingClock(soon(token.cancel)))
    events: list[StreamEvent] = []

    async def consume() -> None:
        async for event in agent.run_stream("go", cancel=token):
            events.append(event)

    await asyncio.wait_for(consume(), 5)  # a backoff that ignored the token would take 10 s

    retrying = of_type(events, Retrying)
    assert len(retrying) == 1 and retrying[0].delay == pytest.approx(10)
    end = end_of(events)
    assert end.stop_reason is StopReason.CANCELLED
    assert isinstance(end.error, RunCancelled)
    assert model.call_count == 1


async def test_token_cancel_from_another_thread_interrupts_backoff() -> None:
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("never")])
    token = CancellationToken()
    retry = RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3)
    agent = Agent("sys", model, retry=retry, clock=SignallingClock(in_a_thread(token.cancel)))
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
    agent = Agent(
        "sys",
        model,
        retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3),
        clock=SignallingClock(soon(token.cancel)),
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

    agent = Agent(
        "sys",
        model,
        retry=RetryPolicy(initial_delay=10, jitter=0.0, max_attempts=3),
        clock=SignallingClock(soon(both)),
    )
    tasks.append(asyncio.ensure_future(agent.run("go", cancel=token)))
    with pytest.raises(asyncio.CancelledError):  # not turned into the token's RunCancelled
        await asyncio.wait_for(tasks[0], 5)
    assert tasks[0].cancelled()


async def test_token_sleep_reports_timeout_and_early_cancel() -> None:
    token = CancellationToken()
    assert await token.sleep(0.001) is False
    clock = SignallingClock(in_a_thread(token.cancel))  # a thread cancels it as it sleeps
    assert await asyncio.wait_for(token.sleep(10, clock), 5) is True  # woken early, or fails
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
