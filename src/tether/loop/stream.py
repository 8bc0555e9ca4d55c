"""``AgentStream``: the async iterator a run hands back, plus its final answer and totals.

An ``Agent`` builds one over its run (the run's state gives the answer, the error, the totals);
axio code builds one from any async iterator of events (``AgentStream(events)``), and then the
stream reads those from the events as they pass.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast

from ..context import ContextStore
from ..errors import RunPaused, StreamError
from ..events import Error, IterationEnd, SessionEndEvent, StreamEvent, TextDelta
from ..types import ZERO_USAGE, StopReason, Usage
from .config import EventCallback
from .state import RunState

__all__ = ["AgentStream", "EventCallback"]

log = logging.getLogger("tether.agent")


async def observed(
    events: AsyncGenerator[StreamEvent, None],
    callback: EventCallback,
    state: RunState | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Pass every event to ``callback`` before yielding it; a failing callback is only logged.

    A run whose reader stops early (closed or cancelled) cannot yield its ``SessionEndEvent``:
    given the run's ``state``, the callback is still told the run ended (``ended_early``).
    """
    ended = False
    try:
        async for event in events:
            await _tell(callback, event)
            if type(event) is SessionEndEvent:
                ended = True
            yield event
    finally:
        await events.aclose()
        if not ended and state is not None:
            await _tell(callback, ended_early(state))


async def _tell(callback: EventCallback, event: StreamEvent) -> None:
    try:
        result = callback(event)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("event callback failed on %s", type(event).__name__)


def ended_early(state: RunState) -> SessionEndEvent:
    """The ``SessionEndEvent`` of a run that ended without yielding one (its reader closed or
    cancelled it), recorded on its state: made once, so every reader gets the same event."""
    if state.end is None:
        stop = state.stop_reason or StopReason.CANCELLED
        state.end = SessionEndEvent(stop, state.usage, state.error, state.iterations)
        state.stop_reason = stop
        state.done = True
    return state.end


@dataclass(slots=True)
class _Seen:
    """What a stream built from events alone has carried so far (an ``Agent``'s stream reads
    its ``RunState`` instead)."""

    reply: list[str] = field(default_factory=list)  # text of the model reply under way
    final_text: str = ""  # text of the last finished model reply
    stop_reason: StopReason | None = None
    usage: Usage = ZERO_USAGE
    error: BaseException | None = None  # the first ``Error`` event's exception
    iterations: int = 0
    done: bool = False
    end: SessionEndEvent | None = None

    def see(self, event: object) -> None:
        if isinstance(event, TextDelta):
            self.reply.append(event.delta)
        elif isinstance(event, IterationEnd):
            self.final_text = "".join(self.reply)
            self.reply.clear()
            self.usage = self.usage + event.usage
            self.iterations = max(self.iterations, event.iteration)
        elif isinstance(event, Error):
            if self.error is None:
                self.error = event.exception
        elif isinstance(event, SessionEndEvent):
            self.end = event
            self.stop_reason = event.stop_reason
            self.usage = event.total_usage
            self.iterations = event.iterations or self.iterations

    def failure(self) -> StreamError | None:
        """The ``StreamError`` to raise for the ``Error`` these events carried, if any."""
        if self.error is None:
            return None
        failure = StreamError(f"the stream carried an error: {self.error!r}")
        failure.__cause__ = self.error
        return failure

    def answer(self) -> str:
        """The last model turn's text (text after the last ``IterationEnd``, when there is some,
        is a turn the stream did not close)."""
        return "".join(self.reply) if self.reply else self.final_text


async def _tracked(
    source: AsyncIterable[StreamEvent], seen: _Seen
) -> AsyncGenerator[StreamEvent, None]:
    """``source``'s events, each noted in ``seen`` before it is passed on."""
    try:
        async for event in source:
            seen.see(event)
            yield event
    finally:
        seen.done = True
        await _close(source)


async def _close(source: object) -> None:
    """Close ``source`` if it can be closed (async generators and iterators with ``aclose``)."""
    close = getattr(source, "aclose", None)
    if close is not None:
        await close()


class AgentStream:
    """The events of one run, in order; ``await get_final_text()`` runs it to the end.

    ``AgentStream(events)`` reads any async iterator of events on its own (as axio's does):
    ``get_final_text()`` and ``get_session_end()`` then raise ``StreamError`` when the events
    carried an ``Error``. The stream an ``Agent`` returns raises the run's own error instead
    (as ``run`` does) and reports a run that was stopped early by its ``SessionEndEvent``.
    """

    __slots__ = ("_events", "_source", "_state")

    def __init__(
        self,
        events: AsyncGenerator[StreamEvent, None] | AsyncIterable[StreamEvent],
        state: RunState | None = None,
    ) -> None:
        self._source: AsyncIterable[StreamEvent] | None = None
        if state is not None:  # an Agent's run: its state says how it went
            self._events = cast("AsyncGenerator[StreamEvent, None]", events)
            self._state: RunState | _Seen = state
            return
        if not isinstance(events, AsyncIterable):
            raise TypeError(
                f"AgentStream takes an async iterator of events, not {type(events).__name__}"
            )
        seen = _Seen()
        self._events = _tracked(events, seen)
        self._state = seen
        self._source = events

    def __aiter__(self) -> AsyncGenerator[StreamEvent, None]:
        return self._events

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def get_final_text(self) -> str:
        """Consume the rest of the run; return the final answer or raise the error that ended it
        (``StreamError`` from it, for a stream made from events alone; ``RunPaused`` for a run
        that paused for approval)."""
        state = self._state
        if isinstance(state, _Seen):
            await self._read_events(state)
            return state.answer()
        async for _ in self._events:
            pass
        if state.error is not None:
            raise state.error
        if state.stop_reason is StopReason.PAUSED and state.end is not None:
            raise RunPaused(state.end.pending)
        return state.final_text

    async def get_output(self) -> Any:
        """Consume the rest of the run; return a typed run's validated value (None for a run
        that was not typed) or raise the error that ended it."""
        await self.get_final_text()
        state = self._state
        return None if isinstance(state, _Seen) else state.output

    async def get_session_end(self) -> SessionEndEvent:
        """Consume the rest of the run; return its ``SessionEndEvent`` (the error, if any, is on
        it rather than raised). A stream made from events alone raises ``StreamError`` when
        they carried an ``Error``, or ended without a ``SessionEndEvent``."""
        state = self._state
        if isinstance(state, _Seen):
            await self._read_events(state)
            if state.end is None:
                raise StreamError("the stream ended without a SessionEndEvent")
            return state.end
        async for _ in self._events:
            pass
        return ended_early(state)  # the run's own end, or one for a run closed or cancelled

    async def _read_events(self, seen: _Seen) -> None:
        """Read the events to their end, or to an ``Error``: then close the stream and raise
        the ``StreamError`` for it."""
        if seen.error is None:
            async for _ in self._events:
                if seen.error is not None:
                    break
        failure = seen.failure()
        if failure is not None:
            await self.aclose()
            raise failure

    async def aclose(self) -> None:
        """Stop the run; the context is left valid (interrupted calls get error results) and the
        run has ended (``cancelled``, unless it had ended by itself). A stream made from events
        closes the iterator it was given (if it has ``aclose``)."""
        await self._events.aclose()
        state = self._state
        if isinstance(state, _Seen):  # also when iteration never began (no ``finally`` ran)
            state.done = True
            if self._source is not None:
                await _close(self._source)
        else:
            ended_early(state)

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def context(self) -> ContextStore:
        """The store this run appends to (a stream made from events alone has none)."""
        state = self._state
        if isinstance(state, _Seen):
            raise AttributeError("an AgentStream made from events alone has no context store")
        return state.context

    @property
    def usage(self) -> Usage:
        """Tokens used so far, summed over iterations."""
        return self._state.usage

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the run ended (None while it runs)."""
        return self._state.stop_reason

    @property
    def error(self) -> BaseException | None:
        """The error that ended the run, if any."""
        return self._state.error

    @property
    def iterations(self) -> int:
        """Model calls made so far."""
        return self._state.iterations

    @property
    def done(self) -> bool:
        """True once the run has ended."""
        return self._state.done
