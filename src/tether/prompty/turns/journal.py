"""The durability port and the one event log of a turn.

Every event is numbered once, stamped by the clock and written through the ``DurabilityPort``;
a checkpoint is written in the same atomic write as its ``checkpoint_created`` event (and the
events whose state it holds). Only written events reach the ``on_event`` sink, so UIs and
journals see the same order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from .ports import TurnClock
from .records import TurnCheckpoint, TurnEvent

__all__ = [
    "DurabilityPort",
    "EventLog",
    "EventSink",
    "JournalFailed",
    "MemoryJournal",
]

log = logging.getLogger("tether.prompty")

EventSink: TypeAlias = Callable[[TurnEvent], None]
"""Called with each written event, in order; its failures are logged, never raised."""

CheckpointFactory: TypeAlias = Callable[[int], TurnCheckpoint]
"""Builds a checkpoint whose state ends at the given sequence."""


class DurabilityPort(Protocol):
    """Atomic persistence of semantic events and checkpoints."""

    async def write(self, events: Sequence[TurnEvent], checkpoint: TurnCheckpoint | None) -> None:
        """Persist ``events`` (and ``checkpoint``) all together or not at all; raise on failure."""
        ...


class MemoryJournal:
    """A ``DurabilityPort`` in memory: the events and checkpoints written, in order."""

    __slots__ = ("checkpoints", "events")

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []
        self.checkpoints: list[TurnCheckpoint] = []

    async def write(self, events: Sequence[TurnEvent], checkpoint: TurnCheckpoint | None) -> None:
        self.events.extend(events)
        if checkpoint is not None:
            self.checkpoints.append(checkpoint)

    @property
    def tail(self) -> int:
        """The last written sequence (0 when empty): where a continuing turn numbers from."""
        return self.events[-1].sequence if self.events else 0


class JournalFailed(BaseException):
    """The durability port refused a write. A ``BaseException`` so that no step of the loop
    turns it into a model-visible tool error: the engine catches it and returns the unwritten
    events and checkpoint as recovery state."""

    def __init__(
        self,
        cause: BaseException,
        events: Sequence[TurnEvent],
        checkpoint: TurnCheckpoint | None,
    ) -> None:
        super().__init__(f"the turn's journal write failed: {cause!r}")
        self.cause = cause
        self.events = tuple(events)
        self.checkpoint = checkpoint


class EventLog:
    """Numbers, stamps and writes one turn's events; keeps those written."""

    __slots__ = (
        "_clock",
        "_journal",
        "_next",
        "_sink",
        "events",
        "failed",
        "session_id",
        "turn_id",
    )

    def __init__(
        self,
        session_id: str,
        turn_id: str,
        journal: DurabilityPort,
        clock: TurnClock,
        sink: EventSink | None = None,
        after: int = 0,
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self._journal = journal
        self._clock = clock
        self._sink = sink
        self._next = after + 1
        self.events: list[TurnEvent] = []
        self.failed: JournalFailed | None = None  # once a write fails, nothing more is written

    async def emit(
        self, kind: str, iteration: int, payload: Mapping[str, Any] | None = None
    ) -> TurnEvent:
        """Write one event."""
        event = self._event(self._next, kind, iteration, payload or {})
        await self._write([event], None)
        return event

    async def emit_checkpointed(
        self,
        items: Sequence[tuple[str, Mapping[str, Any]]],
        iteration: int,
        checkpoint: CheckpointFactory,
    ) -> TurnCheckpoint:
        """Write ``items`` and a checkpoint of the state they end at, with its
        ``checkpoint_created`` event, in one atomic write."""
        events = [
            self._event(self._next + i, kind, iteration, payload)
            for i, (kind, payload) in enumerate(items)
        ]
        state = checkpoint(self._next + len(events) - 1)
        created = {
            "checkpointId": state.id,
            "boundary": state.boundary,
            "lastSequence": state.last_sequence,
        }
        events.append(
            self._event(self._next + len(events), "checkpoint_created", iteration, created)
        )
        await self._write(events, state)
        return state

    def _event(
        self, sequence: int, kind: str, iteration: int, payload: Mapping[str, Any]
    ) -> TurnEvent:
        return TurnEvent(
            sequence, kind, self.session_id, self.turn_id, iteration, self._clock.now(), payload
        )

    async def _write(self, events: list[TurnEvent], checkpoint: TurnCheckpoint | None) -> None:
        if self.failed is not None:
            raise JournalFailed(self.failed.cause, events, checkpoint)
        try:
            await self._journal.write(events, checkpoint)
        except Exception as exc:
            self.failed = JournalFailed(exc, events, checkpoint)
            raise self.failed from exc
        self._next = events[-1].sequence + 1
        self.events.extend(events)
        if self._sink is not None:
            for event in events:
                try:
                    self._sink(event)
                except Exception:
                    log.exception("a turn event sink failed on %r", event.kind)
