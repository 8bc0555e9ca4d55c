"""``FallbackTransport``: one model call tried on several transports in order, each behind a
``CircuitBreaker``, so a rate-limited, unreachable or too-small model hands the call to the next.

Only failures before a stream's first event move on: once a model has begun answering, its
failure is the caller's (a second model's text never follows the first's). Waiting is left to the
agent's ``RetryPolicy``: when no transport can answer, the error says when one can again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, replace

from ..base.clock import SYSTEM_CLOCK, Clock
from ..errors import ContextWindowExceededError, TransportError
from ..events import IterationEnd, StreamEvent
from ..messages import Message
from ..types import ToolSpec
from .base import ClosableTransport, CompletionTransport, NamesModel, NamesProvider
from .retry import is_retryable

__all__ = ["CircuitBreaker", "FallbackTransport", "TransportHealth"]

log = logging.getLogger("tether.fallback")


@dataclass(frozen=True, slots=True)
class TransportHealth:
    """What a ``FallbackTransport`` knows of one inner transport: retryable failures in a row,
    when its circuit opened (None: closed), whether its half-open trial call is under way, and
    until when a server's Retry-After holds it back (clock times)."""

    failures: int = 0
    opened_at: float | None = None
    trial: bool = False
    blocked_until: float | None = None


_CLOSED = TransportHealth()


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """After ``failures`` retryable failures in a row a transport's circuit opens and it is
    skipped; ``reset`` seconds later one trial call goes through (half-open): its success closes
    the circuit, its failure opens it for another ``reset``. Any success resets the count.

    Pure rules over ``TransportHealth``: ``FallbackTransport`` keeps the state and the clock.
    """

    failures: int = 3
    reset: float = 30.0

    def __post_init__(self) -> None:
        if self.failures < 1:
            raise ValueError("failures must be >= 1")
        if not self.reset > 0:
            raise ValueError("reset must be > 0 seconds")

    def admit(self, health: TransportHealth, now: float) -> TransportHealth | None:
        """The state with a call let through at ``now`` (``trial`` set when it is the half-open
        trial), or None when the transport is held back."""
        if health.blocked_until is not None and now < health.blocked_until:
            return None
        if health.opened_at is None:
            return health
        if health.trial or now < health.opened_at + self.reset:
            return None
        return replace(health, trial=True)

    def failed(
        self, health: TransportHealth, now: float, trial: bool, retry_after: float | None
    ) -> TransportHealth:
        """The state after a retryable failure (of the trial call when ``trial``); a server's
        ``retry_after`` (seconds) holds the transport back until then."""
        count = health.failures + 1
        blocked = health.blocked_until if retry_after is None else now + retry_after
        if trial:
            return TransportHealth(count, now, False, blocked)
        opened = health.opened_at
        if opened is None and count >= self.failures:
            opened = now
        return TransportHealth(count, opened, health.trial, blocked)

    def succeeded(self, health: TransportHealth) -> TransportHealth:
        """The state after an answer: the circuit closed, the count at zero (a Retry-After the
        server gave still holds)."""
        if health.blocked_until is None:
            return _CLOSED
        return replace(_CLOSED, blocked_until=health.blocked_until)

    def released(self, health: TransportHealth, trial: bool) -> TransportHealth:
        """The state after a call that says nothing of the transport's health (cancelled, or a
        failure that is the request's own): a trial it was is over without a verdict."""
        return replace(health, trial=False) if trial else health

    def ready_at(self, health: TransportHealth) -> float | None:
        """The clock time from which a call may be let through again (at or before now: it may
        already); None when a trial call under way will decide it."""
        if health.trial:
            return None
        times = [health.blocked_until or float("-inf")]
        if health.opened_at is not None:
            times.append(health.opened_at + self.reset)
        return max(times)


@dataclass(frozen=True, slots=True)
class _Miss:
    """One transport that did not answer this call: skipped (``error`` None) or failed."""

    index: int
    error: Exception | None


def _falls_back(exc: BaseException) -> bool:
    """Whether a failure before the first event moves the call to the next transport."""
    return isinstance(exc, ContextWindowExceededError) or is_retryable(exc)


def _name(transport: object, field: str) -> str | None:
    """The transport's ``model`` or ``provider`` when it names one."""
    protocol = NamesModel if field == "model" else NamesProvider
    value = getattr(transport, field) if isinstance(transport, protocol) else None
    return value if isinstance(value, str) and value else None


def _named(event: StreamEvent, model: str | None) -> StreamEvent:
    """The event, an ``IterationEnd`` without a model naming the one that answered."""
    if type(event) is IterationEnd and event.model is None and model is not None:
        return replace(event, model=model)
    return event


def _label(transport: object) -> str:
    """How messages name a transport: its model, else its class."""
    return _name(transport, "model") or type(transport).__name__


async def _close(stream: AsyncIterator[StreamEvent] | None) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


class FallbackTransport:
    """A ``CompletionTransport`` that tries ``transports`` in order, each behind ``breaker``.

    A retryable failure (429, connection, overload) or ``ContextWindowExceededError`` before the
    first event moves on to the next; a non-retryable one, or any failure after the first event,
    propagates. A failure's ``retry_after`` holds that transport back until then, by ``clock``.
    When none can answer it raises a retryable ``TransportError`` whose ``retry_after`` is the
    wait until one can (when known) and whose ``__cause__`` is the last failure. The state is
    changed without awaiting in between, so many runs may share one instance.
    """

    def __init__(
        self,
        transports: Sequence[CompletionTransport],
        *,
        breaker: CircuitBreaker | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not transports:
            raise ValueError("FallbackTransport needs at least one transport")
        self.transports: tuple[CompletionTransport, ...] = tuple(transports)
        self.breaker = breaker or CircuitBreaker()
        self.clock = clock
        self._health = [_CLOSED] * len(self.transports)
        # read once: a protocol check per call would cost more than the rest of the call
        self._models = tuple(_name(t, "model") for t in self.transports)
        self._providers = tuple(_name(t, "provider") for t in self.transports)
        self._answered = 0
        self._last_failure: BaseException | None = None

    @property
    def health(self) -> tuple[TransportHealth, ...]:
        """Each inner transport's state, in order."""
        return tuple(self._health)

    @property
    def model(self) -> str | None:
        """The model of the transport that answered last (the primary before any answered)."""
        return self._models[self._answered]

    @property
    def provider(self) -> str | None:
        """The provider of the transport that answered last (the primary before any answered)."""
        return self._providers[self._answered]

    def __repr__(self) -> str:
        inner = ", ".join(repr(t) for t in self.transports)
        return f"FallbackTransport([{inner}], breaker={self.breaker!r})"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        # One loop opens and relays: this generator is the whole cost of a fallback whose
        # primary is healthy, so the first event takes the same path as the rest.
        misses: list[_Miss] = []
        index = -1
        while True:
            index, trial = self._next(index, misses)
            model = self._models[index]
            events: AsyncIterator[StreamEvent] | None = None
            started = ended = False
            try:  # a transport's ``stream`` may itself raise
                events = self.transports[index].stream(messages, tools, system)
                async for event in events:
                    if not started:
                        started, self._answered = True, index
                    if type(event) is IterationEnd:
                        ended = True
                        yield _named(event, model)
                    else:
                        yield event
            except Exception as exc:
                await _close(events)
                if started:  # once a model has begun answering, its failure is the caller's
                    self._failed(index, trial, exc)
                    raise
                self._missed(index, trial, exc, misses)
                continue
            except BaseException:  # cancelled, or closed by the consumer
                await _close(events)
                self._ended(index, trial, ended)
                raise
            if self._health[index] is not _CLOSED:  # an empty stream the engine reports too
                self._ended(index, trial, ended)
            return

    def _next(self, after: int, misses: list[_Miss]) -> tuple[int, bool]:
        """The next transport after ``after`` that may be called, and whether its call is the
        half-open trial; those held back are added to ``misses``. Raises when none is left."""
        if after < 0 and self._health[0] is _CLOSED:  # the common case, at no cost
            return 0, False
        for index in range(after + 1, len(self.transports)):
            trial = self._admit(index)
            if trial is not None:
                return index, trial
            misses.append(_Miss(index, None))
        raise self._exhausted(misses)

    def _missed(self, index: int, trial: bool, exc: Exception, misses: list[_Miss]) -> None:
        """Record a failure before the first event; re-raise it unless it moves the call on."""
        self._failed(index, trial, exc)
        if not _falls_back(exc):
            raise exc
        log.info(
            "model call to %s failed, trying the next: %s", _label(self.transports[index]), exc
        )
        misses.append(_Miss(index, exc))

    def _admit(self, index: int) -> bool | None:
        """Let a call through to transport ``index``: whether it is the half-open trial, None if
        the transport is held back."""
        health = self._health[index]
        if health is _CLOSED:  # the healthy common case: no clock read, nothing to change
            return False
        admitted = self.breaker.admit(health, self.clock.now())
        if admitted is None:
            return None
        self._health[index] = admitted
        return admitted.trial

    def _ended(self, index: int, trial: bool, answered: bool) -> None:
        """Record a call to transport ``index`` that ended without failing: answered (its
        ``IterationEnd`` came) or cut short (no verdict on its health)."""
        health = self._health[index]
        if health is _CLOSED:
            return
        if answered:
            self._health[index] = self.breaker.succeeded(health)
        else:
            self._health[index] = self.breaker.released(health, trial)

    def _failed(self, index: int, trial: bool, exc: Exception) -> None:
        """Record a failed call to transport ``index``; only retryable failures count against it
        (not the request's own, such as a bad or too-long one)."""
        health = self._health[index]
        if not is_retryable(exc):
            self._health[index] = self.breaker.released(health, trial)
            return
        self._last_failure = exc
        now = self.clock.now()
        after = self._health[index] = self.breaker.failed(health, now, trial, _retry_after(exc))
        if health.opened_at is None and after.opened_at is not None:
            label, count = _label(self.transports[index]), after.failures
            log.warning("%s failed %d times in a row: skipping it for now", label, count)

    def _exhausted(self, misses: Sequence[_Miss]) -> TransportError:
        """The error when no transport answered: retryable when one may later, ``retry_after``
        the wait until the soonest (None when one may be tried now or it cannot be told)."""
        now = self.clock.now()
        ready: list[float | None] = [
            self.breaker.ready_at(self._health[m.index])
            for m in misses
            if not isinstance(m.error, ContextWindowExceededError)
        ]
        known = [t for t in ready if t is not None]
        soonest = min(known) if known and len(known) == len(ready) else None
        wait = soonest - now if soonest is not None and soonest > now else None
        error = TransportError(
            "no transport could answer: " + "; ".join(self._describe(m) for m in misses),
            retryable=bool(ready),
            retry_after=wait,
        )
        failures = [m.error for m in misses if m.error is not None]
        error.__cause__ = failures[-1] if failures else self._last_failure
        return error

    def _describe(self, miss: _Miss) -> str:
        what = "held back" if miss.error is None else f"{type(miss.error).__name__}: {miss.error}"
        return f"{_label(self.transports[miss.index])}: {what}"

    async def aclose(self) -> None:
        """Close every inner transport that holds connections, each even if another's close
        fails (the failures are raised after, grouped when more than one)."""
        failures: list[Exception] = []
        closed: set[int] = set()
        for transport in self.transports:
            if id(transport) in closed or not isinstance(transport, ClosableTransport):
                continue
            closed.add(id(transport))
            try:
                await transport.aclose()
            except Exception as exc:
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise ExceptionGroup("closing the fallback's transports failed", failures)


def _retry_after(exc: BaseException) -> float | None:
    """A failure's ``retry_after`` in seconds, when it gives a positive one."""
    wait = getattr(exc, "retry_after", None)
    if isinstance(wait, int | float) and wait > 0:
        return float(wait)
    return None
