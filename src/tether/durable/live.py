"""What a running model or tool call shows before it finishes: its activity's heartbeat details.

A model activity keeps the text and reasoning its attempt has streamed so far (``LiveReply``), a
tool activity the progress its call reported (``LiveProgress``); ``Pulse`` heartbeats either's
``details()`` at most every ``FLUSH`` seconds, and ``DurableRun.events()`` reads them from the
workflow's pending activities (``DescribeWorkflowExecution``) beside the event log.

Why heartbeat details, and not signals to the workflow or a store: a heartbeat is no event of the
workflow's history, so a call streaming for minutes adds nothing to it (a signal per batch would
add four events, wake the workflow on every batch, count toward Temporal's signals per run, make
runs continue as new sooner, and be replayed after every worker restart); the workflow's code
never sees them, so a replay has nothing to emit again; and they work without a store. Temporal
keeps the last details of each pending activity (across its retries, until an attempt sends its
own), so each heartbeat carries everything the attempt has shown (up to ``LIVE_CHARS``
characters of text; the newest reports, at most ``PROGRESS_KEPT`` and ``PROGRESS_BYTES`` of
JSON, each message cut past ``REPORT_CHARS``: a heartbeat stays far below Temporal's 2 MB
payload limit, past which the activity would be killed), tagged with the model call's number
and the attempt, so a reader that missed some heartbeats misses nothing and can tell a retry.
The worker must not hold heartbeats back longer than ``FLUSH`` (``TemporalAgent.serving`` sets
its heartbeat throttle so).

Details, as JSON: a model call's ``{"kind": "reply", "turn", "attempt", "blocks": [[kind,
index, text], ...]}`` (kind ``text`` or ``reasoning``; consecutive pieces of one block merged),
a tool call's ``{"kind": "progress", "key", "call", "attempt", "first", "reports": [...]}``
(``ToolProgress`` events in ``stores.jsonforms`` form, ``first`` the number of the first kept),
with ``"held"``: the handle of the work the call started elsewhere, once it has one (``held.py``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeAlias

from ..events import ReasoningDelta, StreamEvent, TextDelta, ToolProgress
from ..stores.jsonforms import event_to_dict

__all__ = [
    "FLUSH",
    "LIVE_CHARS",
    "PROGRESS_BYTES",
    "PROGRESS_KEPT",
    "REPORT_CHARS",
    "Block",
    "LiveProgress",
    "LiveReply",
    "beyond",
    "block_events",
    "covers",
    "grown",
]

FLUSH = 0.05  # seconds between heartbeats of a call while it has something new to show
LIVE_CHARS = 65_536  # text a model call shows live; the rest comes with its result
PROGRESS_KEPT = 256  # progress reports a tool call's details keep (the newest)
PROGRESS_BYTES = 256 * 1024  # and the most JSON they may take together
REPORT_CHARS = 4_096  # characters of one report's message shown live (the rest is cut)
_CUT = "…"

Block: TypeAlias = tuple[str, int, str]
"""One block of a reply so far: kind (``text`` or ``reasoning``), its index, its text."""


class LiveReply:
    """The text and reasoning one attempt of model call ``turn`` has streamed so far."""

    __slots__ = ("_blocks", "_size", "attempt", "turn")

    def __init__(self, turn: int, attempt: int) -> None:
        self.turn = turn
        self.attempt = attempt
        self._blocks: list[tuple[str, int, list[str]]] = []
        self._size = 0

    def add(self, event: StreamEvent) -> None:
        """Keep ``event``'s text if it is a text or reasoning delta (until ``LIVE_CHARS``)."""
        if isinstance(event, TextDelta):
            kind = "text"
        elif isinstance(event, ReasoningDelta):
            kind = "reasoning"
        else:
            return
        if not event.delta or self._size >= LIVE_CHARS:
            return
        self._size += len(event.delta)
        last = self._blocks[-1] if self._blocks else None
        if last is not None and last[0] == kind and last[1] == event.index:
            last[2].append(event.delta)
        else:
            self._blocks.append((kind, event.index, [event.delta]))

    def details(self) -> dict[str, Any]:
        """What a heartbeat carries: everything this attempt has streamed so far."""
        blocks = [[kind, index, "".join(parts)] for kind, index, parts in self._blocks]
        return {"kind": "reply", "turn": self.turn, "attempt": self.attempt, "blocks": blocks}


class LiveProgress:
    """The progress one attempt of a tool call has reported so far (the newest kept)."""

    __slots__ = ("_bytes", "_count", "_reports", "attempt", "call", "held", "key")

    def __init__(self, key: str, call: str, attempt: int) -> None:
        self.held: dict[str, Any] | None = None  # the handle of work started elsewhere
        self.key = key
        self.call = call
        self.attempt = attempt
        self._reports: deque[tuple[dict[str, Any], int]] = deque()  # each with its JSON size
        self._bytes = 0
        self._count = 0

    def add(self, event: ToolProgress) -> None:
        """Keep ``event`` (its message cut past ``REPORT_CHARS``), dropping the oldest reports
        past ``PROGRESS_KEPT`` or ``PROGRESS_BYTES``."""
        message = event.message
        if message is not None and len(message) > REPORT_CHARS:
            event = replace(event, message=message[:REPORT_CHARS] + _CUT)
        report = event_to_dict(event)
        size = len(json.dumps(report).encode())
        self._reports.append((report, size))
        self._bytes += size
        self._count += 1
        while len(self._reports) > PROGRESS_KEPT or self._bytes > PROGRESS_BYTES:
            self._bytes -= self._reports.popleft()[1]

    def details(self) -> dict[str, Any]:
        """What a heartbeat carries: the kept reports and the number of the first (and the
        handle of the work the call started elsewhere, once it has one)."""
        details = {
            "kind": "progress",
            "key": self.key,
            "call": self.call,
            "attempt": self.attempt,
            "first": self._count - len(self._reports),
            "reports": [report for report, _ in self._reports],
        }
        return details if self.held is None else {**details, "held": self.held}


# -- replies as blocks: what a reader compares ------------------------------------------------


def grown(blocks: tuple[Block, ...], kind: str, index: int, text: str) -> tuple[Block, ...]:
    """``blocks`` with ``text`` added to block ``index`` of ``kind`` (merged into the last
    block when it is that one)."""
    if blocks and blocks[-1][0] == kind and blocks[-1][1] == index:
        return (*blocks[:-1], (kind, index, blocks[-1][2] + text))
    return (*blocks, (kind, index, text))


def covers(longer: Sequence[Block], shorter: Sequence[Block]) -> bool:
    """Whether ``shorter`` is how ``longer`` began (every block the same, the last one's text
    a prefix of its counterpart's)."""
    if len(shorter) > len(longer):
        return False
    if not shorter:
        return True
    last = len(shorter) - 1
    if any(longer[i] != shorter[i] for i in range(last)):
        return False
    kind, index, text = longer[last]
    begun_kind, begun_index, begun = shorter[last]
    return kind == begun_kind and index == begun_index and text.startswith(begun)


def beyond(longer: Sequence[Block], shorter: Sequence[Block]) -> list[Block]:
    """What ``longer`` has after ``shorter``, which it ``covers``."""
    if not shorter:
        return list(longer)
    last = len(shorter) - 1
    kind, index, text = longer[last]
    rest = text[len(shorter[last][2]) :]
    return [*([(kind, index, rest)] if rest else []), *longer[last + 1 :]]


def block_events(blocks: Sequence[Block]) -> list[StreamEvent]:
    """``blocks`` as the deltas that show them."""
    return [
        TextDelta(index, text) if kind == "text" else ReasoningDelta(index, text)
        for kind, index, text in blocks
        if text
    ]
