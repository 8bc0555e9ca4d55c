"""``StubTransport``: raw event lists, one per model call, builders for them, axio's helpers."""

from __future__ import annotations

import json
from collections.abc import (
    AsyncGenerator,
    Mapping,
    Sequence,
)
from typing import Any, TypeAlias

from ..context import MemoryContextStore
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
from ..tools.tool import Tool
from ..types import StopReason, ToolSpec, Usage
from .common import Request, ScriptExhausted, _describe_request, _snapshot, _split

_AXIO_USAGE = Usage(10, 5)


def make_text_response(
    text: str = "Done",
    iteration: int = 2,
    usage: Usage | None = None,
    *,
    stop_reason: StopReason = StopReason.END_TURN,
    chunks: int = 1,
    index: int = 0,
) -> list[StreamEvent]:
    """The events of a plain text answer: ``text`` as ``chunks`` ``TextDelta`` pieces, then the end.

    ``chunks`` is capped at ``len(text)`` (there is always at least one delta). ``usage`` defaults
    to ``Usage(10, 5)`` and ``iteration`` to 2, as in axio; the agent renumbers iterations itself.
    """
    events: list[StreamEvent] = [TextDelta(index, piece) for piece in _split(text, chunks)]
    events.append(IterationEnd(iteration, stop_reason, _usage(usage)))
    return events


def make_tool_use_response(
    tool_name: str = "echo",
    tool_id: str = "call_1",
    tool_input: Mapping[str, Any] | None = None,
    iteration: int = 1,
    usage: Usage | None = None,
    *,
    text: str | None = None,
    raw_arguments: str | None = None,
) -> list[StreamEvent]:
    """The events of a turn that calls one tool.

    An optional text block (``text``, index 0) comes first, then ``ToolUseStart`` and one
    ``ToolInputDelta`` carrying ``json.dumps(tool_input)`` (``{"msg": "hi"}`` when ``None``), or
    ``raw_arguments`` verbatim when given (to test argument repair), then ``IterationEnd`` with
    ``StopReason.TOOL_USE``. ``usage`` defaults to ``Usage(10, 5)`` and ``iteration`` to 1.
    """
    events: list[StreamEvent] = []
    index = 0
    if text:
        events.append(TextDelta(index, text))
        index += 1
    arguments = raw_arguments if raw_arguments is not None else _arguments_json(tool_input)
    events.append(ToolUseStart(index, tool_id, tool_name))
    events.append(ToolInputDelta(index, tool_id, arguments))
    events.append(IterationEnd(iteration, StopReason.TOOL_USE, _usage(usage)))
    return events


def _usage(usage: Usage | None) -> Usage:
    return _AXIO_USAGE if usage is None else usage


def _arguments_json(tool_input: Mapping[str, Any] | None) -> str:
    return json.dumps(dict(tool_input) if tool_input is not None else {"msg": "hi"})


async def _echo_msg(msg: str) -> str:
    return json.dumps({"msg": msg})


def make_echo_tool() -> Tool:
    """A tool named ``echo`` taking ``msg: str`` and returning ``{"msg": msg}`` as JSON text."""
    schema = {"type": "object", "properties": {"msg": {"type": "string"}}, "required": ["msg"]}
    return Tool("echo", _echo_msg, "Returns input as JSON", schema=schema)


def make_stub_transport() -> StubTransport:
    """A ``StubTransport`` that answers "Hello world" (two deltas, ``Usage(10, 5)``) every time."""
    return StubTransport(
        [
            [
                TextDelta(0, "Hello"),
                TextDelta(0, " world"),
                IterationEnd(1, StopReason.END_TURN, _AXIO_USAGE),
            ]
        ]
    )


def make_ephemeral_context() -> MemoryContextStore:
    """A fresh, empty in-memory context store."""
    return MemoryContextStore()


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

    Every call is recorded in ``calls``. Once the list runs out, the last entry is played again
    for every further call (as axio's stub does); streaming a ``StubTransport()`` that has no
    entries at all raises ``ScriptExhausted``. Use ``ScriptedTransport`` to fail on extra calls.

    Example::

        transport = StubTransport([
            TransportError("overloaded", retryable=True),    # first call fails, agent retries
            make_tool_use_response("echo", tool_input={"text": "hi"}),
            make_text_response("Done"),                      # this and every later call
        ])
    """

    def __init__(self, responses: Sequence[Response] | None = None) -> None:
        self._responses = [
            _checked(position, entry) for position, entry in enumerate(responses or ())
        ]
        self.calls: list[Request] = []

    @property
    def call_count(self) -> int:
        """How many times ``stream()`` has been called."""
        return len(self.calls)

    @property
    def _call_count(self) -> int:
        """``call_count`` under the name axio's stub keeps it (its users' tests read it)."""
        return len(self.calls)

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """Record the request and return a stream of the next response (or of the last one)."""
        request = _snapshot(messages, tools, system)
        self.calls.append(request)
        return self._play(self._entry(len(self.calls)), request)

    def _entry(self, number: int) -> Response | None:
        """The response for call ``number`` (1-based): its own, else the last; None if none."""
        if not self._responses:
            return None
        return self._responses[min(number, len(self._responses)) - 1]

    async def _play(
        self, entry: Response | None, request: Request
    ) -> AsyncGenerator[StreamEvent, None]:
        if entry is None:
            raise ScriptExhausted(
                "StubTransport has no responses to play; pass at least one, e.g. "
                f"StubTransport([make_text_response()]); {_describe_request(request)}"
            )
        if isinstance(entry, BaseException):
            raise entry
        for item in entry:
            if isinstance(item, BaseException):
                raise item
            yield item


def _checked(position: int, entry: Response) -> Response:
    """``entry`` as stored (event lists become tuples), or a ``TypeError`` saying what is wrong."""
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
    return entry if isinstance(entry, BaseException) else tuple(entry)
