"""Typed stream events: what transports yield and what ``Agent.run_stream`` yields to callers.

Transports emit the *model* events (deltas, tool-use starts, ``IterationEnd``); the agent adds the
*loop* events (iteration start, tool dispatch and results, retries, errors, session end).
Contract for one model reply: every content block has its own ``index``; deltas of a block share it;
the reply ends with exactly one ``IterationEnd``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .messages import Message, ToolResultContent
from .types import Elicitation, StopReason, Usage

__all__ = [
    "Compacted",
    "CompactionFailed",
    "ContextTrimmed",
    "Error",
    "Handoff",
    "IterationEnd",
    "IterationStart",
    "PendingCall",
    "ReasoningDelta",
    "Retrying",
    "SessionEndEvent",
    "SteeringInjected",
    "StreamEvent",
    "TextDelta",
    "ToolDispatch",
    "ToolInputDelta",
    "ToolProgress",
    "ToolResult",
    "ToolUseStart",
    "session_end",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of answer text for content block ``index``."""

    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning for block ``index``; ``signature`` pieces are concatenated as sent.

    ``provider`` names the wire format whose signature this is, so only it gets it back.
    """

    index: int
    delta: str
    signature: str | None = None
    redacted: bool = False
    id: str | None = None
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class ToolUseStart:
    """The model began a tool call in block ``index``."""

    index: int
    tool_use_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    """A fragment of a tool call's JSON arguments, in the order the model wrote them."""

    index: int
    tool_use_id: str
    partial_json: str


@dataclass(frozen=True, slots=True)
class IterationStart:
    """The agent is about to call the model for iteration ``iteration`` (1-based)."""

    iteration: int


@dataclass(frozen=True, slots=True)
class IterationEnd:
    """A model reply ended. ``raw_stop_reason`` is the provider's own word for it."""

    iteration: int
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    raw_stop_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ToolDispatch:
    """A tool call is being dispatched; ``input`` is what the model sent (after JSON repair).

    Bindings and guard rewrites are applied after this event, inside the dispatch.
    """

    tool_use_id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool call finished. ``content`` is the full result, before any truncation for the model;
    ``input`` the arguments the model sent (as in ``ToolDispatch``). All but the id and name have
    defaults, as axio's event has (``input`` a fresh dict each time)."""

    tool_use_id: str
    name: str
    is_error: bool = False
    content: ToolResultContent = ""
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool call said how far it got (an MCP server's progress notification, or a
    handler's ``report_progress``); ``total`` is None when unknown."""

    tool_use_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Retrying:
    """A model call failed before its first event and will be retried after ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class SteeringInjected:
    """Messages from the steering queue were added to the conversation."""

    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class ContextTrimmed:
    """The context policy dropped ``removed`` messages from what is sent; ``remaining`` are sent."""

    removed: int
    remaining: int


@dataclass(frozen=True, slots=True)
class Compacted:
    """``Compaction`` summarised the ``summarized`` oldest messages of what is sent (about
    ``tokens_before`` tokens) into one; ``kept`` recent messages follow the summary (about
    ``tokens_after`` tokens in all). The summary is stored: a reopened session starts from it."""

    summarized: int
    kept: int
    tokens_before: int
    tokens_after: int
    summary: str


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    """A warning: the summariser failed (``reason``) at about ``tokens`` tokens; the run goes on
    with the history as it was, and compaction is tried again once more has come."""

    reason: str
    tokens: int


@dataclass(frozen=True, slots=True, eq=False)
class Error:
    """A run-ending failure. Compared by identity (exceptions have no value equality)."""

    exception: BaseException


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call that waits for a person's approval (``Agent(approval=...)``): its id, and
    the name and arguments the model gave it, which are what runs if it is approved. ``asks``
    holds the questions of a call that waits for the user's input instead (its server asked,
    and nothing in the process could answer): a resume's ``answers`` answer them."""

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    asks: tuple[Elicitation, ...] = ()


@dataclass(frozen=True, slots=True)
class Handoff:
    """The run was handed from one agent to another (``Agent(handoffs=...)``): the rest of it is
    ``to_agent``'s."""

    from_agent: str
    to_agent: str


@dataclass(frozen=True, slots=True)
class SessionEndEvent:
    """The run is over. ``error`` is set when it ended by failure; it is always the last event.
    ``pending`` holds the calls a paused run (``StopReason.PAUSED``) left for a person."""

    stop_reason: StopReason
    total_usage: Usage = field(default_factory=Usage)
    error: BaseException | None = field(default=None, compare=False)
    iterations: int = 0
    pending: tuple[PendingCall, ...] = ()


_new_end = SessionEndEvent.__new__
_end_fields = vars(SessionEndEvent)
# The slots' own setters: the frozen class's __init__ sets each field through object.__setattr__
_set_stop = _end_fields["stop_reason"].__set__
_set_usage = _end_fields["total_usage"].__set__
_set_error = _end_fields["error"].__set__
_set_iterations = _end_fields["iterations"].__set__
_set_pending = _end_fields["pending"].__set__


def session_end(
    stop_reason: StopReason,
    total_usage: Usage,
    error: BaseException | None,
    iterations: int,
    pending: tuple[PendingCall, ...],
) -> SessionEndEvent:
    """``SessionEndEvent(...)`` at half the cost: every run ends with one."""
    end = _new_end(SessionEndEvent)
    _set_stop(end, stop_reason)
    _set_usage(end, total_usage)
    _set_error(end, error)
    _set_iterations(end, iterations)
    _set_pending(end, pending)
    return end


StreamEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolUseStart
    | ToolInputDelta
    | IterationStart
    | IterationEnd
    | ToolDispatch
    | ToolProgress
    | ToolResult
    | Retrying
    | SteeringInjected
    | Handoff
    | ContextTrimmed
    | Compacted
    | CompactionFailed
    | Error
    | SessionEndEvent
)
