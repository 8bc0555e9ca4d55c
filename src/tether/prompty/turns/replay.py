"""Replay records (§14.7 ``ReplayJournalRecord``): the normalized journal of the spec's reference
harness, projected from the turn engine's semantic events, and their verification.

A record keeps only deterministic orchestration fields (no timestamps, payloads or durations):
``session:<type>:<session>:<turn>[:<status>]`` for the session lifecycle and its checkpoints,
``turn:<type>:<iteration>[:<fields>]`` for the turn's steps, and one
``summary:<session>:<status>:turns=<n>:checkpoints=<n>`` per session at the end.

The harness journal checkpoints once per model response; the engine's finer checkpoints (after
each tool result and each committed round) are durability records it does not carry, so only
model-response checkpoints are projected. A retry is another attempt of the same iteration, so
only an invocation's first attempt is an ``llm_start``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .records import TurnEvent

__all__ = [
    "ReplayJournalRecord",
    "ReplayMismatch",
    "ReplayVerificationResult",
    "replay_journal",
    "replay_records",
    "verify_replay",
]

_STATUS = {
    "turn_committed": "success",
    "turn_failed": "error",
    "turn_cancelled": "cancelled",
    "turn_reconciliation_required": "reconciliation_required",
}


@dataclass(frozen=True, slots=True)
class ReplayJournalRecord:
    """One normalized record: ``kind`` session, turn or summary, and its ordered fields."""

    kind: Literal["session", "turn", "summary"]
    fields: tuple[str, ...]

    @property
    def text(self) -> str:
        """The record's string form, e.g. ``turn:llm_start:0``."""
        return ":".join((self.kind, *self.fields))

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return {"kind": self.kind, "record": self.text}


def _flag(value: Any) -> str:
    return "true" if value else "false"


def _turn(event: TurnEvent, name: str, *fields: Any) -> ReplayJournalRecord:
    return ReplayJournalRecord("turn", (name, str(event.iteration), *map(str, fields)))


def _session(event: TurnEvent, name: str, *fields: str) -> ReplayJournalRecord:
    return ReplayJournalRecord("session", (name, event.session_id, event.turn_id, *fields))


def _tool_outcome(event: TurnEvent, name: str) -> ReplayJournalRecord:
    p = event.payload
    kind = p.get("errorKind")
    extra = () if p.get("success") or kind is None else (kind,)
    return _turn(event, name, p.get("toolName", ""), _flag(p.get("success")), *extra)


def _started(event: TurnEvent) -> list[ReplayJournalRecord]:
    return [_session(event, "session_start"), _turn(event, "turn_start")]


def _llm_start(event: TurnEvent) -> list[ReplayJournalRecord]:
    return [_turn(event, "llm_start")] if event.payload.get("attempt", 1) == 1 else []


def _checkpoint(event: TurnEvent) -> list[ReplayJournalRecord]:
    if event.payload.get("boundary") != "model_response":
        return []
    return [_session(event, "checkpoint_created")]


def _end(event: TurnEvent) -> list[ReplayJournalRecord]:
    status = _STATUS[event.kind]
    records = []
    if event.kind == "turn_failed":
        records.append(_turn(event, "error", event.payload.get("errorKind", "")))
    records.append(_turn(event, "turn_end", status))
    records.append(_session(event, "session_end", status))
    return records


_PROJECTIONS: dict[str, Callable[[TurnEvent], list[ReplayJournalRecord]]] = {
    "turn_started": _started,
    "model_invocation_started": _llm_start,
    "model_invocation_completed": lambda e: [_turn(e, "llm_complete")],
    "checkpoint_created": _checkpoint,
    "permission_requested": lambda e: [
        _turn(e, "permission_requested", e.payload.get("permissionId", ""))
    ],
    "permission_resolved": lambda e: [
        _turn(e, "permission_completed", _flag(e.payload.get("approved")))
    ],
    "tool_execution_started": lambda e: [
        _turn(e, "tool_execution_start", e.payload.get("toolName", ""))
    ],
    "tool_execution_completed": lambda e: [_tool_outcome(e, "tool_execution_complete")],
    "tool_result_committed": lambda e: [_tool_outcome(e, "tool_result")],
    "conversation_updated": lambda e: [_turn(e, "messages_updated")],
    **dict.fromkeys(_STATUS, _end),
}


class _Session:
    __slots__ = ("checkpoints", "status", "turns")

    def __init__(self) -> None:
        self.turns = 0
        self.checkpoints = 0
        self.status = ""


def replay_journal(events: Iterable[TurnEvent]) -> list[ReplayJournalRecord]:
    """The normalized records of ``events`` (one or more turns, in journal order), then one
    summary per session in order of first appearance."""
    records: list[ReplayJournalRecord] = []
    sessions: dict[str, _Session] = {}
    for event in events:
        projected = _PROJECTIONS.get(event.kind)
        if projected is None:
            continue
        session = sessions.setdefault(event.session_id, _Session())
        for record in projected(event):
            records.append(record)
            _count(session, record)
    for name, session in sessions.items():
        counts = (f"turns={session.turns}", f"checkpoints={session.checkpoints}")
        records.append(ReplayJournalRecord("summary", (name, session.status, *counts)))
    return records


def _count(session: _Session, record: ReplayJournalRecord) -> None:
    if record.kind != "session":
        return
    name = record.fields[0]
    if name == "session_start":
        session.turns += 1
    elif name == "checkpoint_created":
        session.checkpoints += 1
    elif name == "session_end":
        session.status = record.fields[-1]


def replay_records(events: Iterable[TurnEvent]) -> list[str]:
    """The records of ``events`` as strings, e.g. ``turn:llm_start:0``."""
    return [r.text for r in replay_journal(events)]


@dataclass(frozen=True, slots=True)
class ReplayMismatch:
    """Where two record sequences differ (None: that side has no record there)."""

    index: int
    expected: str | None
    actual: str | None


@dataclass(frozen=True, slots=True)
class ReplayVerificationResult:
    """Whether a replay's records match the expected ones, and where they do not."""

    status: Literal["passed", "failed"]
    expected_count: int
    actual_count: int
    mismatches: tuple[ReplayMismatch, ...] = ()


def verify_replay(
    expected: Sequence[str | ReplayJournalRecord], actual: Sequence[str | ReplayJournalRecord]
) -> ReplayVerificationResult:
    """Compare normalized records position by position (projection verification)."""
    want = [r if isinstance(r, str) else r.text for r in expected]
    got = [r if isinstance(r, str) else r.text for r in actual]
    mismatches = tuple(
        ReplayMismatch(i, want[i] if i < len(want) else None, got[i] if i < len(got) else None)
        for i in range(max(len(want), len(got)))
        if i >= len(want) or i >= len(got) or want[i] != got[i]
    )
    status: Literal["passed", "failed"] = "failed" if mismatches else "passed"
    return ReplayVerificationResult(status, len(want), len(got), mismatches)
