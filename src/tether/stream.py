"""``AgentStream``: the async iterator a run hands back, plus its final answer and totals."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator
from types import TracebackType

from .config import EventCallback
from .context import ContextStore
from .events import SessionEndEvent, StreamEvent
from .loop import RunState
from .types import StopReason, Usage

__all__ = ["AgentStream", "EventCallback"]

log = logging.getLogger("tether.agent")


async def observed(
    events: AsyncGenerator[StreamEvent, None], callback: EventCallback
) -> AsyncGenerator[StreamEvent, None]:
    """Pass every event to ``callback`` before yielding it; a failing callback is only logged."""
    try:
        async for event in events:
            try:
                result = callback(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("event callback failed on %s", type(event).__name__)
            yield event
    finally:
        await events.aclose()


class AgentStream:
    """The events of one run, in order; ``await get_final_text()`` runs it to the end."""

    __slots__ = ("_events", "_state")

    def __init__(self, events: AsyncGenerator[StreamEvent, None], state: RunState) -> None:
        self._events = events
        self._state = state

    def __aiter__(self) -> AsyncGenerator[StreamEvent, None]:
        return self._events

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def get_final_text(self) -> str:
        """Consume the rest of the run; return the final answer or raise the error that ended it."""
        async for _ in self._events:
            pass
        if self._state.error is not None:
            raise self._state.error
        return self._state.final_text

    async def get_session_end(self) -> SessionEndEvent:
        """Consume the rest of the run; return its ``SessionEndEvent`` (the error, if any, is on
        it rather than raised)."""
        async for _ in self._events:
            pass
        end = self._state.end
        if end is None:  # closed or cancelled before the run could end by itself
            state = self._state
            stop = state.stop_reason or StopReason.CANCELLED
            end = SessionEndEvent(stop, state.usage, state.error, state.iterations)
        return end

    async def aclose(self) -> None:
        """Stop the run; the context is left valid (interrupted calls get error results)."""
        await self._events.aclose()

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
        """The store this run appends to."""
        return self._state.context

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
