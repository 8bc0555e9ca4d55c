"""``StubTransport``: raw event lists, one per model call, and builders for them."""

from __future__ import annotations

import json
from collections.abc import (
    AsyncGenerator,
    Mapping,
    Sequence,
)
from typing import Any, TypeAlias

from ..events import (
    ContextTrimmed,
    Error,
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    SteeringInjected,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
)
from ..messages import Message
from ..types import StopReason, ToolSpec, Usage
from .common import Request, ScriptExhausted, _describe_request, _snapshot, _split


def make_text_response(
    text: str = "Done",
    *,
    usage: Usage | None = None,
    stop_reason: StopReason = StopReason.END_TURN,
    chunks: int = 1,
    index: int = 0,
) -> list[StreamEvent]:
    """The events of a plain text answer: ``text`` as ``chunks`` ``TextDelta`` pieces, then the end.

    ``chunks`` is capped at ``len(text)`` (there is always at least one delta). The
    ``IterationEnd`` has ``iteration=0``; the agent numbers iterations itself.
    """
    events: list[StreamEvent] = [TextDelta(index, piece) for piece in _split(text, chunks)]
    events.append(IterationEnd(0, stop_reason, usage or Usage()))
    return events


def make_tool_use_response(
    tool_name: str = "echo",
    tool_id: str = "call_1",
    tool_input: Mapping[str, Any] | None = None,
    *,
    usage: Usage | None = None,
    text: str | None = None,
    raw_arguments: str | None = None,
) -> list[StreamEvent]:
    """The events of a turn that calls one tool.

    An optional text block (``text``, index 0) comes first, then ``ToolUseStart`` and one
    ``ToolInputDelta`` carrying ``json.dumps(tool_input)``, or ``raw_arguments`` verbatim when
    given (to test argument repair), then ``IterationEnd`` with ``StopReason.TOOL_USE``.
    """
    events: list[StreamEvent] = []
    index = 0
    if text:
        events.append(TextDelta(index, text))
        index += 1
    arguments = raw_arguments if raw_arguments is not None else json.dumps(dict(tool_input or {}))
    events.append(ToolUseStart(index, tool_id, tool_name))
    events.append(ToolInputDelta(index, tool_id, arguments))
    events.append(IterationEnd(0, StopReason.TOOL_USE, usage or Usage()))
    return events


Response: TypeAlias = Sequence[StreamEvent | BaseException] | BaseException

_EVENT_TYPES: tuple[type, ...] = (
    TextDelta,
    ReasoningDelta,
    ToolUseStart,
    ToolInputDelta,
    IterationStart,
    IterationEnd,
    ToolDispatch,
    ToolResult,
    Retrying,
    SteeringInjected,
    ContextTrimmed,
    Error,
    SessionEndEvent,
)


class StubTransport:
    """A transport that plays fixed event lists, one per ``stream()`` call, in order.

    Each entry of ``responses`` is either

    - a list of events, yielded one by one; an exception instance inside the list is raised at
      that point (a failure mid-stream, after events were seen), or
    - an exception instance, raised when the stream is first iterated, before any event (so an
      agent may retry it).

    Every call is recorded in ``calls``. A call past the last entry raises ``ScriptExhausted``.

    Example::

        transport = StubTransport([
            TransportError("overloaded", retryable=True),    # first call fails, agent retries
            make_tool_use_response("echo", tool_input={"text": "hi"}),
            make_text_response("Done"),
        ])
    """

    def __init__(self, responses: Sequence[Response]) -> None:
        entries: list[Response] = []
        for position, entry in enumerate(responses):
            if isinstance(entry, _EVENT_TYPES):
                raise TypeError(
                    f"StubTransport takes a list of responses, each a list of events; entry "
                    f"{position} is a bare {type(entry).__name__}. Did you mean "
                    f"StubTransport([events]) instead of StubTransport(events)?"
                )
            if isinstance(entry, type) and issubclass(entry, BaseException):
                raise TypeError(
                    f"StubTransport entry {position} is the exception class {entry.__name__}; "
                    f"pass an instance, e.g. {entry.__name__}('...')"
                )
            if not isinstance(entry, BaseException | Sequence) or isinstance(entry, str):
                raise TypeError(
                    f"StubTransport entry {position} must be a list of events or an exception "
                    f"instance, got {type(entry).__name__}"
                )
            entries.append(entry if isinstance(entry, BaseException) else tuple(entry))
        self._responses = entries
        self.calls: list[Request] = []

    @property
    def call_count(self) -> int:
        """How many times ``stream()`` has been called."""
        return len(self.calls)

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """Record the request and return a stream of the next scripted response."""
        request = _snapshot(messages, tools, system)
        self.calls.append(request)
        number = len(self.calls)
        entry = self._responses[number - 1] if number <= len(self._responses) else None
        return self._play(entry, number, request)

    async def _play(
        self, entry: Response | None, number: int, request: Request
    ) -> AsyncGenerator[StreamEvent, None]:
        if entry is None:
            raise ScriptExhausted(
                f"StubTransport got call #{number} but only {len(self._responses)} "
                f"response(s) were scripted; {_describe_request(request)}"
            )
        if isinstance(entry, BaseException):
            raise entry
        for item in entry:
            if isinstance(item, BaseException):
                raise item
            yield item
