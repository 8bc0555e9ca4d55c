"""``LiveTail``: a reader's merge of a durable run's event log with what its running calls show
(their heartbeat details, ``live``), so that each piece of text is given once, in order.

The model call in flight is known by its number (``turn``) and the log position its events will
land at (``at``), both from the workflow's ``events`` query. Text shown live is remembered; a
retried attempt's text is held back while it repeats what was shown, and given from where it
goes further; when it says something else, ``Retrying`` comes first (the partial reply is
discarded) and then the new attempt's text from its start. When the call's final events land in
the log, only what was not shown yet is given (and a final reply shorter than what was shown is
a discard too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..events import (
    IterationEnd,
    ReasoningDelta,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
)
from ..stores.jsonforms import event_from_dict
from .live import Block, beyond, block_events, covers, grown

__all__ = ["LiveTail"]


def _discard(attempt: int) -> Retrying:
    reason = f"the model call was retried (attempt {attempt}); the partial reply is discarded"
    return Retrying(attempt, 0.0, reason)


def _marked(event: TextDelta | ReasoningDelta) -> bool:
    """Whether ``event`` carries more than text (a reasoning signature, an id), which is
    given even when its text was shown already."""
    if isinstance(event, TextDelta):
        return False
    return bool(event.signature or event.redacted or event.id or event.provider)


@dataclass(slots=True)
class _Reply:
    """The model call in flight: what was shown of it, and what of it landed in the log."""

    turn: int
    at: int
    shown: tuple[Block, ...] = ()
    final: tuple[Block, ...] = ()
    attempt: int = 1


class LiveTail:
    """One reader's state: the reply in flight and the progress given per tool call attempt."""

    __slots__ = ("_given", "_reply")

    def __init__(self) -> None:
        self._reply: _Reply | None = None
        self._given: dict[tuple[str, int], tuple[str, int]] = {}  # (key, attempt): (call, count)

    def expect(self, turn: int | None, at: int | None) -> None:
        """The workflow says model call ``turn`` runs, its events to land at position ``at``."""
        if turn is None or at is None:
            return
        if self._reply is None or self._reply.turn != turn:
            self._reply = _Reply(turn, at)

    def logged(self, position: int, event: StreamEvent) -> list[StreamEvent]:
        """What to give for the log's event at ``position``."""
        reply = self._reply
        if isinstance(event, ToolResult):
            self._forget(event.tool_use_id)
        if reply is None or position < reply.at:
            return [event]
        if isinstance(event, TextDelta | ReasoningDelta):
            return self._landed(reply, event)
        if isinstance(event, ToolUseStart | ToolInputDelta):
            return [event]
        self._reply = None  # the call's reply ended (or the run did)
        if isinstance(event, IterationEnd) and reply.final != reply.shown:
            # the final attempt said less than was shown: the rest is discarded
            return [_discard(reply.attempt + 1), *block_events(reply.final), event]
        return [event]

    def seen(self, details: Mapping[str, Any]) -> list[StreamEvent]:
        """What to give for a running call's heartbeat details."""
        kind = details.get("kind")
        if kind == "reply":
            return self._live_reply(details)
        if kind == "progress":
            return self._live_progress(details)
        return []

    def _landed(self, reply: _Reply, event: TextDelta | ReasoningDelta) -> list[StreamEvent]:
        """A piece of the call's final reply: only what goes beyond what was shown."""
        kind = "text" if isinstance(event, TextDelta) else "reasoning"
        before = reply.final
        reply.final = grown(before, kind, event.index, event.delta)
        if covers(reply.shown, reply.final):  # shown already
            return [replace(event, delta="")] if _marked(event) else []
        if covers(reply.final, reply.shown):  # the part past what was shown is in this piece
            rest = "".join(text for _, _, text in beyond(reply.final, reply.shown))
            reply.shown = reply.final
            return [replace(event, delta=rest)]
        reply.shown = reply.final
        return [_discard(reply.attempt + 1), *block_events(before), event]

    def _live_reply(self, details: Mapping[str, Any]) -> list[StreamEvent]:
        reply = self._reply
        if reply is None or details.get("turn") != reply.turn:
            return []  # not the call the log is at (one that ended, or the next one)
        blocks = tuple((str(k), int(i), str(t)) for k, i, t in details.get("blocks", ()))
        attempt = int(details.get("attempt", 1))
        reply.attempt = max(reply.attempt, attempt)
        if covers(reply.shown, blocks):
            return []
        if covers(blocks, reply.shown):
            events = block_events(beyond(blocks, reply.shown))
            reply.shown = blocks
            return events
        reply.shown = blocks
        return [_discard(attempt), *block_events(blocks)]

    def _live_progress(self, details: Mapping[str, Any]) -> list[StreamEvent]:
        slot = (str(details.get("key")), int(details.get("attempt", 1)))
        given = self._given.get(slot, ("", 0))[1]
        first = int(details.get("first", 0))
        reports = list(details.get("reports", ()))
        self._given[slot] = (str(details.get("call")), first + len(reports))
        return [event_from_dict(r) for r in reports[max(given - first, 0) :]]

    def _forget(self, call: str) -> None:
        """A tool call's result is in: its progress counts are needed no more."""
        for slot in [s for s, (c, _) in self._given.items() if c == call]:
            del self._given[slot]
