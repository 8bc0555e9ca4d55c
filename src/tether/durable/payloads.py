"""What crosses Temporal's wire: activity inputs and outputs, workflow input and result, each a
plain dataclass of JSON data (messages, events and blocks in ``tether.stores.jsonforms``'s form)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import StreamEvent, TextDelta, ToolInputDelta
from ..stores.jsonforms import event_from_dict, event_to_dict
from ..types import ToolSpec

__all__ = [
    "Appended",
    "Decision",
    "LoadPage",
    "ModelCall",
    "ModelTurn",
    "RunInput",
    "RunOutput",
    "StoredPage",
    "ToolCallInput",
    "coalesce",
    "events_of",
    "spec_from_dict",
    "spec_to_dict",
]

JSON = dict[str, Any]


@dataclass(frozen=True)
class ModelCall:
    """One model call: what the loop would hand the transport, and where it belongs.

    With a store, the first ``stored`` messages are not carried: the activity reads them from
    the workflow's stored session (from its message ``first``, where the run's view of it
    began), so the workflow's history does not grow with the conversation on every call.
    """

    messages: list[JSON]
    tools: list[JSON]
    system: str
    iteration: int
    workflow_id: str
    turn: int
    stored: int = 0
    first: int = 0


@dataclass(frozen=True)
class ModelTurn:
    """One model call's events (deltas of one block merged), ending with ``IterationEnd``."""

    events: list[JSON]


@dataclass(frozen=True)
class ToolCallInput:
    """One tool call: the model's block, the iteration it came in, and its idempotency key;
    ``held``: the handle of the work an earlier attempt started elsewhere (``held.py``)."""

    block: JSON
    iteration: int
    workflow_id: str
    key: str
    held: JSON | None = None


@dataclass(frozen=True)
class Appended:
    """One message to store at ``position`` of ``session`` (the store's next position); it is
    the session's message number ``index`` (-1: not known, from a workflow of an older tether)."""

    session: str
    position: int
    message: JSON
    index: int = -1


@dataclass(frozen=True)
class LoadPage:
    """A page of a stored session: up to ``limit`` messages and ``bytes`` of JSON from message
    ``start`` (None: from where the model's view begins, the last compaction record's kept
    messages)."""

    session: str
    start: int | None
    limit: int
    bytes: int = 1024 * 1024


@dataclass(frozen=True)
class StoredPage:
    """Messages of a stored session from message ``start``, the store's next position for it,
    and whether more messages follow."""

    messages: list[JSON]
    following: int
    start: int = 0
    more: bool = False


@dataclass(frozen=True)
class RunInput:
    """What a durable run starts from, and what it carries over a continue-as-new.

    ``prompt`` is the first user message (None when going on); ``messages`` the history so far
    when no store holds it; ``used`` the iterations the current answer has spent; ``turns`` the
    model calls made since the workflow began (idempotency keys stay unique across runs);
    ``inbox`` user messages not yet answered; ``events`` how many events came before;
    ``usage`` the tokens spent so far.
    """

    prompt: str | None = None
    keep_open: bool = False
    messages: list[JSON] = field(default_factory=list)
    position: int = 0
    used: int = 0
    turns: int = 0
    inbox: list[str] = field(default_factory=list)
    events: int = 0
    resuming: bool = False
    usage: JSON = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """A person's decision on a pending tool call."""

    call_id: str
    approved: bool
    reason: str | None = None


@dataclass(frozen=True)
class RunOutput:
    """How a durable run ended: its answer, stop reason, usage and error (None when none)."""

    answer: str
    stop_reason: str
    usage: JSON
    iterations: int
    messages: int
    error: JSON | None = None


def spec_to_dict(spec: ToolSpec) -> JSON:
    """A tool spec as JSON data."""
    return {
        "name": spec.name,
        "description": spec.description,
        "schema": dict(spec.schema),
        "strict": spec.strict,
    }


def spec_from_dict(d: Mapping[str, Any]) -> ToolSpec:
    """Read back what ``spec_to_dict`` wrote."""
    return ToolSpec(d["name"], d["description"], d["schema"], d.get("strict"))


def coalesce(events: Iterable[StreamEvent]) -> list[JSON]:
    """Events as JSON data, consecutive deltas of one block merged into one (a turn's text comes
    back as one delta per block: smaller activity results, the same turn)."""
    out: list[StreamEvent] = []
    parts: list[str] = []
    for event in events:
        last = out[-1] if out else None
        if _same_block(last, event):
            parts.append(_piece(event))
            continue
        _close_run(out, parts)
        out.append(event)
        parts = [_piece(event)] if isinstance(event, TextDelta | ToolInputDelta) else []
    _close_run(out, parts)
    return [event_to_dict(e) for e in out]


def _same_block(last: StreamEvent | None, event: StreamEvent) -> bool:
    if isinstance(event, TextDelta) and isinstance(last, TextDelta):
        return last.index == event.index
    if isinstance(event, ToolInputDelta) and isinstance(last, ToolInputDelta):
        return last.index == event.index and last.tool_use_id == event.tool_use_id
    return False


def _piece(event: StreamEvent) -> str:
    if isinstance(event, TextDelta):
        return event.delta
    assert isinstance(event, ToolInputDelta)
    return event.partial_json


def _close_run(out: list[StreamEvent], parts: list[str]) -> None:
    """Replace the last event with its merged run of deltas, if it had more than one piece."""
    if len(parts) < 2:
        return
    last = out[-1]
    if isinstance(last, TextDelta):
        out[-1] = TextDelta(last.index, "".join(parts))
    elif isinstance(last, ToolInputDelta):
        out[-1] = ToolInputDelta(last.index, last.tool_use_id, "".join(parts))


def events_of(turn: ModelTurn) -> Sequence[StreamEvent]:
    """A model call's events, read back."""
    return [event_from_dict(d) for d in turn.events]
