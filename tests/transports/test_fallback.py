"""FallbackTransport and CircuitBreaker: which transport answers, when one is held back, what the
agent sees when none can answer, and that the state holds under cancellation and many runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from tether import (
    Agent,
    IterationEnd,
    Message,
    Retrying,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ContextWindowExceededError,
    OverloadedError,
    RateLimitError,
    TransportError,
)
from tether.testing import Hold, Reply, ScriptedTransport, Step
from tether.transports import CircuitBreaker, CompletionTransport, FallbackTransport, RetryPolicy
from tether.transports.base import ClosableTransport, NamesModel
from tether.transports.fallback import TransportHealth

SYSTEM = "You are a test agent."
ONCE = RetryPolicy(max_attempts=1)  # no engine retry: what answers is the fallback's doing


class FakeClock:
    """A clock that never waits: ``sleep`` records the seconds asked for and moves time on."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    def random(self) -> float:
        return 0.5

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds


class Named(ScriptedTransport):
    """A scripted model that names itself (``model``/``provider``), as real transports do."""

    def __init__(self, model: str, steps: Sequence[Step], *, then: Step | None = None) -> None:
        super().__init__(steps, then=then)
        self.model = model
        self.provider = f"{model}-inc"


def down(retry_after: float | None = None) -> ConnectionFailedError:
    return ConnectionFailedError("connection refused", retryable=True, retry_after=retry_after)


def limited(retry_after: float | None = None) -> RateLimitError:
    return RateLimitError("429 too many requests", retryable=True, retry_after=retry_after)


def fallback(
    *transports: CompletionTransport, clock: FakeClock, **breaker: Any
) -> FallbackTransport:
    return FallbackTransport(list(transports), breaker=CircuitBreaker(**breaker), clock=clock)


def agent_on(transport: CompletionTransport, clock: FakeClock, retry: RetryPolicy = ONCE) -> Agent:
    return Agent(SYSTEM, transport, retry=retry, clock=clock)


async def run_events(agent: Agent, prompt: str = "hi") -> list[StreamEvent]:
    return [event async for event in agent.run_stream(prompt)]


async def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


async def until(condition: Callable[[], bool]) -> None:
    """Let other tasks run until ``condition`` holds (a bounded number of turns)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def ends(events: Sequence[object]) -> list[IterationEnd]:
    return [e for e in events if isinstance(e, IterationEnd)]


# --- which transport answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        limited(),
        down(),
        ContextWindowExceededError("prompt is too long"),
        OverloadedError("overloaded", retryable=True),
        ConnectionResetError("reset by peer"),
    ],
    ids=["rate-limit", "connection", "context-window", "overloaded", "os-error"],
)
async def test_a_failure_before_the_first_event_moves_on(failure: BaseException) -> None:
    clock = FakeClock()
    a, b = Named("a", [failure]), Named("b", [Reply("from b")])
    agent = agent_on(fallback(a, b, clock=clock), clock)

    events = await run_events(agent)

    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "from b"
    assert [e.model for e in ends(events)] == ["b"]
    assert (a.call_count, b.call_count) == (1, 1)
    assert clock.sleeps == []  # moved on at once: no wait, no engine retry


async def test_the_request_reaches_each_transport_unchanged() -> None:
    clock = FakeClock()
    a, b = Named("a", [limited()]), Named("b", [Reply("ok")])
    assert await agent_on(fallback(a, b, clock=clock), clock).run("what is 2+2?") == "ok"
    assert a.requests[0].messages == b.requests[0].messages
    assert b.requests[0].last_message.text == "what is 2+2?"
    assert b.requests[0].system == SYSTEM


class TextThenFails:
    """Says some text, then fails (retryably) in the middle of its stream."""

    model = "breaks"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        yield TextDelta(0, "half an ans")
        raise self.error


async def test_a_failure_after_the_first_event_propagates_as_is() -> None:
    clock = FakeClock()
    error = down()
    b = Named("b", [Reply("from b")])
    agent = agent_on(fallback(TextThenFails(error), b, clock=clock), clock)

    with pytest.raises(ConnectionFailedError) as raised:
        await agent.run("hi")

    assert raised.value is error
    assert b.call_count == 0  # never a second model's text after the first's


async def test_a_failure_after_the_first_event_counts_against_the_transport() -> None:
    clock = FakeClock()
    transport = fallback(TextThenFails(down()), Named("b", []), clock=clock)
    with pytest.raises(ConnectionFailedError):
        await collect(transport.stream([], [], SYSTEM))
    assert transport.health[0].failures == 1


@pytest.mark.parametrize(
    "failure",
    [BadRequestError("bad request"), AuthenticationError("bad key"), ValueError("a bug")],
    ids=["bad-request", "auth", "not-a-transport-error"],
)
async def test_a_non_retryable_failure_propagates_without_fallback(failure: Exception) -> None:
    clock = FakeClock()
    a, b = Named("a", [failure]), Named("b", [Reply("from b")])
    transport = fallback(a, b, clock=clock)

    with pytest.raises(type(failure)) as raised:
        await agent_on(transport, clock).run("hi")

    assert raised.value is failure
    assert b.call_count == 0
    assert transport.health[0] == TransportHealth()  # the request's fault, not the transport's


# --- Retry-After -------------------------------------------------------------------------------


async def test_retry_after_holds_the_transport_back_until_the_clock_passes_it() -> None:
    clock = FakeClock()
    a = Named("a", [limited(retry_after=10)], then=Reply("from a"))
    b = Named("b", [], then=Reply("from b"))
    agent = agent_on(fallback(a, b, clock=clock, failures=100), clock)

    assert await agent.run("1") == "from b"
    clock.time += 9.9
    assert await agent.run("2") == "from b"
    assert a.call_count == 1  # skipped, not called
    clock.time += 0.1
    assert await agent.run("3") == "from a"
    assert (a.call_count, b.call_count) == (2, 2)
    assert clock.sleeps == []  # held back, never slept on


# --- the circuit -------------------------------------------------------------------------------


async def test_the_circuit_opens_after_failures_in_a_row_and_skips_the_transport(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    a = Named("a", [down(), down()], then=Reply("from a"))
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=2, reset=30.0)
    agent = agent_on(transport, clock)

    assert await agent.run("1") == "from b"
    assert transport.health[0] == TransportHealth(failures=1)
    assert await agent.run("2") == "from b"
    assert transport.health[0] == TransportHealth(failures=2, opened_at=1000.0)
    clock.time += 29.0
    assert await agent.run("3") == "from b"
    assert a.call_count == 2  # open: skipped
    opened = [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.getMessage() for r in opened] == ["a failed 2 times in a row: skipping it for now"]


async def test_a_half_open_trial_that_succeeds_closes_the_circuit() -> None:
    clock = FakeClock()
    a = Named("a", [down(), down()], then=Reply("from a"))
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=2, reset=30.0)
    agent = agent_on(transport, clock)
    for prompt in ("1", "2"):
        await agent.run(prompt)

    clock.time += 30.0
    assert await agent.run("trial") == "from a"
    assert transport.health[0] == TransportHealth()
    assert await agent.run("after") == "from a"
    assert a.call_count == 4


async def test_a_half_open_trial_that_fails_opens_the_circuit_again() -> None:
    clock = FakeClock()
    a = Named("a", [down(), down(), down()], then=Reply("from a"))
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=2, reset=30.0)
    agent = agent_on(transport, clock)
    for prompt in ("1", "2"):
        await agent.run(prompt)

    clock.time += 30.0
    assert await agent.run("trial") == "from b"
    assert a.call_count == 3
    assert transport.health[0] == TransportHealth(failures=3, opened_at=1030.0)
    clock.time += 29.0
    assert await agent.run("still open") == "from b"
    assert a.call_count == 3
    clock.time += 1.0
    assert await agent.run("next trial") == "from a"


async def test_a_success_resets_the_count() -> None:
    clock = FakeClock()
    a = Named("a", [down(), Reply("from a"), down()], then=Reply("from a"))
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=2)
    agent = agent_on(transport, clock)

    assert [await agent.run(p) for p in "123"] == ["from b", "from a", "from b"]
    assert transport.health[0] == TransportHealth(failures=1)  # not two in a row: still closed
    assert await agent.run("4") == "from a"


async def test_a_context_window_failure_does_not_count_against_the_transport() -> None:
    clock = FakeClock()
    too_long = ContextWindowExceededError("prompt is too long")
    a = Named("a", [too_long, too_long], then=Reply("from a"))
    transport = fallback(a, Named("b", [], then=Reply("from b")), clock=clock, failures=2)
    agent = agent_on(transport, clock)
    assert [await agent.run(p) for p in "123"] == ["from b", "from b", "from a"]
    assert transport.health[0] == TransportHealth()


async def test_half_open_lets_one_trial_through_while_others_move_on() -> None:
    clock = FakeClock()
    release = asyncio.Event()
    a = Named("a", [down()], then=Hold(release, Reply("from a")))
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=1, reset=5.0)
    agent = agent_on(transport, clock)
    assert await agent.run("opens") == "from b"
    clock.time += 5.0

    trial = asyncio.create_task(agent.run("trial"))
    await until(lambda: a.call_count == 2)
    others = [await agent.run(f"meanwhile {n}") for n in range(3)]
    assert others == ["from b"] * 3
    assert a.call_count == 2  # only the trial reached it
    release.set()
    assert await trial == "from a"
    assert transport.health[0] == TransportHealth()


# --- when none can answer ----------------------------------------------------------------------


async def test_all_down_raises_a_retryable_error_with_the_soonest_wait_and_the_cause() -> None:
    clock = FakeClock()
    last = limited(retry_after=8)
    transport = fallback(
        Named("a", [limited(retry_after=5)]), Named("b", [last]), clock=clock, failures=100
    )

    with pytest.raises(TransportError) as raised:
        await collect(transport.stream([], [], SYSTEM))

    error = raised.value
    assert type(error) is TransportError
    assert error.retryable is True
    assert error.retry_after == 5.0
    assert error.__cause__ is last
    assert "a: RateLimitError" in str(error) and "b: RateLimitError" in str(error)


async def test_the_agents_retry_waits_for_the_soonest_and_then_succeeds() -> None:
    clock = FakeClock()
    a = Named("a", [limited(retry_after=5)], then=Reply("a is back"))
    b = Named("b", [limited(retry_after=8)])
    agent = agent_on(fallback(a, b, clock=clock), clock, retry=RetryPolicy(max_attempts=2))

    events = await run_events(agent)

    retrying = [e for e in events if isinstance(e, Retrying)]
    assert len(retrying) == 1
    assert clock.sleeps == [5.0]  # the policy's own backoff (0.875s) loses to retry_after
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "a is back"
    assert [e.model for e in ends(events)] == ["a"]


async def test_with_every_circuit_open_the_wait_is_until_the_first_half_opens() -> None:
    clock = FakeClock()
    a = Named("a", [down()])
    b = Named("b", [down()])
    transport = fallback(a, b, clock=clock, failures=1, reset=30.0)
    with pytest.raises(TransportError):
        await collect(transport.stream([], [], SYSTEM))
    clock.time += 10.0

    with pytest.raises(TransportError) as raised:
        await collect(transport.stream([], [], SYSTEM))

    assert (a.call_count, b.call_count) == (1, 1)  # both skipped
    assert raised.value.retryable is True
    assert raised.value.retry_after == 20.0
    assert isinstance(raised.value.__cause__, ConnectionFailedError)  # remembered from before
    assert "a: held back" in str(raised.value)


async def test_a_transport_that_may_be_tried_now_leaves_the_wait_to_the_policy() -> None:
    clock = FakeClock()
    transport = fallback(
        Named("a", [limited(retry_after=5)]), Named("b", [down()]), clock=clock, failures=3
    )
    with pytest.raises(TransportError) as raised:
        await collect(transport.stream([], [], SYSTEM))
    assert raised.value.retryable is True
    assert raised.value.retry_after is None  # b's circuit is closed: backoff, not a known wait


async def test_when_every_model_is_too_small_retrying_cannot_help() -> None:
    clock = FakeClock()
    transport = fallback(
        Named("a", [ContextWindowExceededError("too long for a")]),
        Named("b", [ContextWindowExceededError("too long for b")]),
        clock=clock,
    )
    with pytest.raises(TransportError) as raised:
        await collect(transport.stream([], [], SYSTEM))
    assert raised.value.retryable is False
    assert isinstance(raised.value.__cause__, ContextWindowExceededError)


# --- names -------------------------------------------------------------------------------------


class Says:
    """Answers with an ``IterationEnd`` that already names a model."""

    model = "configured-name"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        yield TextDelta(0, "hi")
        yield IterationEnd(0, StopReason.END_TURN, model="served-snapshot-2025")


async def test_iteration_end_keeps_a_model_the_inner_stream_named() -> None:
    clock = FakeClock()
    events = await run_events(agent_on(fallback(Named("a", [down()]), Says(), clock=clock), clock))
    assert [e.model for e in ends(events)] == ["served-snapshot-2025"]


async def test_the_transport_is_named_after_the_primary_then_the_last_that_answered() -> None:
    clock = FakeClock()
    a = Named("a", [down()], then=Reply("from a"))
    transport = fallback(a, Named("b", [Reply("from b")]), clock=clock)
    assert isinstance(transport, CompletionTransport)
    assert isinstance(transport, NamesModel)
    assert (transport.model, transport.provider) == ("a", "a-inc")

    await agent_on(transport, clock).run("hi")

    assert (transport.model, transport.provider) == ("b", "b-inc")


async def test_a_transport_without_a_name_leaves_the_model_unset() -> None:
    clock = FakeClock()
    events = await run_events(
        agent_on(fallback(ScriptedTransport([Reply("x")]), clock=clock), clock)
    )
    assert [e.model for e in ends(events)] == [None]


# --- closing -----------------------------------------------------------------------------------


class Closable(ScriptedTransport):
    def __init__(self, fails: bool = False) -> None:
        super().__init__([])
        self.fails = fails
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1
        if self.fails:
            raise OSError("close failed")


async def test_aclose_closes_every_inner_transport_even_when_one_fails() -> None:
    first, broken, last = Closable(), Closable(fails=True), Closable()
    transport = FallbackTransport([first, broken, ScriptedTransport([]), last, first])
    assert isinstance(transport, ClosableTransport)

    with pytest.raises(OSError, match="close failed"):
        await transport.aclose()

    assert (first.closed, broken.closed, last.closed) == (1, 1, 1)  # each once


async def test_aclose_groups_several_failures() -> None:
    transport = FallbackTransport([Closable(fails=True), Closable(fails=True)])
    with pytest.raises(ExceptionGroup) as raised:
        await transport.aclose()
    assert len(raised.value.exceptions) == 2


# --- cancellation ------------------------------------------------------------------------------


class Stalls:
    """A stream (not a generator: nothing closes it but ``aclose``) that yields ``before``
    events, then waits forever."""

    def __init__(self, before: int) -> None:
        self.before = before
        self.closed = False
        self.waiting = asyncio.Event()

    def __aiter__(self) -> Stalls:
        return self

    async def __anext__(self) -> StreamEvent:
        if self.before:
            self.before -= 1
            return TextDelta(0, "partial ")
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        self.closed = True


class Stalling:
    """Refuses its first ``refuse`` calls (raising from ``stream`` itself), then stalls."""

    model = "stalling"

    def __init__(self, before: int, refuse: int = 0) -> None:
        self.streams = [Stalls(before) for _ in range(2)]
        self.calls = 0
        self.refuse = refuse

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        if self.refuse:
            self.refuse -= 1
            raise down()
        self.calls += 1
        return self.streams[self.calls - 1]


@pytest.mark.parametrize("before", [1, 0], ids=["mid-stream", "before-the-first-event"])
async def test_cancelling_the_run_closes_the_inner_stream(before: int) -> None:
    clock = FakeClock()
    inner = Stalling(before)
    transport = fallback(inner, Named("b", [Reply("from b")]), clock=clock)
    task = asyncio.create_task(agent_on(transport, clock).run("hi"))
    await inner.streams[0].waiting.wait()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert inner.streams[0].closed
    assert transport.health[0] == TransportHealth()  # cancelled: no verdict on its health


async def test_closing_the_stream_after_the_first_event_closes_the_inner_stream() -> None:
    inner = Stalling(2)
    stream = FallbackTransport([inner]).stream([], [], SYSTEM)
    assert isinstance(stream, AsyncGenerator)
    assert await anext(stream) == TextDelta(0, "partial ")
    await stream.aclose()
    assert inner.streams[0].closed


async def test_a_trial_cut_short_lets_the_next_call_try_again() -> None:
    clock = FakeClock()
    inner = Stalling(1, refuse=1)
    transport = fallback(inner, Named("b", [], then=Reply("b")), clock=clock, failures=1)
    assert await agent_on(transport, clock).run("opens the circuit") == "b"
    clock.time += 60.0
    stream = transport.stream([], [], SYSTEM)
    assert isinstance(stream, AsyncGenerator)
    await anext(stream)
    assert transport.health[0].trial
    await stream.aclose()
    assert transport.health[0] == TransportHealth(failures=1, opened_at=1000.0)
    second = transport.stream([], [], SYSTEM)  # half-open still: the next call is a trial
    assert isinstance(second, AsyncGenerator)
    await anext(second)
    assert transport.health[0].trial
    await second.aclose()


# --- many runs at once -------------------------------------------------------------------------


class Gated:
    """Fails every call, but only once ``gate`` opens, so calls overlap."""

    model = "gated"

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.calls = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        self.calls += 1
        await self.gate.wait()
        raise down()
        yield  # an async generator that never yields


async def test_many_concurrent_runs_keep_the_counts_right() -> None:
    clock = FakeClock()
    gate = asyncio.Event()
    a = Gated(gate)
    b = Named("b", [], then=Reply("from b"))
    transport = fallback(a, b, clock=clock, failures=5, reset=30.0)
    agent = agent_on(transport, clock)
    runs = [asyncio.create_task(agent.run(f"run {n}")) for n in range(20)]
    await until(lambda: a.calls == 20)

    gate.set()
    answers = await asyncio.gather(*runs)

    assert answers == ["from b"] * 20
    assert transport.health[0] == TransportHealth(failures=20, opened_at=1000.0)
    assert await agent.run("after") == "from b"
    assert (a.calls, b.call_count) == (20, 21)


# --- the rules on their own --------------------------------------------------------------------


def test_the_breaker_rules_without_a_transport() -> None:
    breaker = CircuitBreaker(failures=2, reset=10.0)
    health = TransportHealth()
    assert breaker.admit(health, 0.0) == health
    health = breaker.failed(health, 1.0, False, None)
    health = breaker.failed(health, 2.0, False, 3.0)
    assert health == TransportHealth(failures=2, opened_at=2.0, blocked_until=5.0)
    assert breaker.admit(health, 11.9) is None
    assert breaker.ready_at(health) == 12.0
    trial = breaker.admit(health, 12.0)
    assert trial is not None and trial.trial
    assert breaker.admit(trial, 12.0) is None  # one trial at a time
    assert breaker.ready_at(trial) is None
    assert breaker.succeeded(trial) == TransportHealth(blocked_until=5.0)


@pytest.mark.parametrize("bad", [{"failures": 0}, {"reset": 0.0}, {"reset": -1.0}])
def test_a_breaker_rejects_settings_that_cannot_work(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(**bad)


def test_a_fallback_needs_a_transport() -> None:
    with pytest.raises(ValueError, match="at least one"):
        FallbackTransport([])
