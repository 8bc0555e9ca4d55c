"""Test helpers: scripted fake models and a checker for the transport stream contract.

Test an agent without a network by scripting what the "model" says, then assert on what the
agent sent it::

    from tether.testing import Call, Reply, ScriptedTransport

    model = ScriptedTransport([
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})]),  # turn 1: call a tool
        Reply("It is sunny in Oslo."),                               # turn 2: answer
    ])
    # ... build an agent on `model` and run it ...
    assert model.remaining == 0
    assert model.requests[1].last_message.tool_results[0].tool_use_id == "call_1"

``StubTransport`` plays raw event lists (see ``make_text_response`` and
``make_tool_use_response``) for lower-level tests, and ``assert_stream_contract`` checks the
events a transport of your own yields::

    assert_stream_contract(await collect(my_transport.stream(messages, tools, system)))
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .events import (
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
from .messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from .types import StopReason, ToolSpec, Usage

__all__ = [
    "Call",
    "Hold",
    "Reply",
    "Request",
    "ScriptExhausted",
    "ScriptedTransport",
    "Step",
    "StepFn",
    "StubTransport",
    "assert_stream_contract",
    "collect",
    "make_text_response",
    "make_tool_use_response",
]


# --------------------------------------------------------------------------------------------
# Shared pieces


class ScriptExhausted(AssertionError):
    """A fake transport was called more times than its script allows.

    It is an ``AssertionError`` because it means the agent under test made a model call the test
    did not expect.
    """


@dataclass(frozen=True, slots=True)
class Request:
    """What the agent sent on one ``stream()`` call, snapshotted at call time."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    system: str

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model, in order."""
        return [t.name for t in self.tools]

    @property
    def last_message(self) -> Message:
        """The last message of the history sent (usually the newest user or tool-result turn)."""
        if not self.messages:
            raise IndexError("this request has no messages")
        return self.messages[-1]


def _snapshot(messages: Sequence[Message], tools: Sequence[ToolSpec], system: str) -> Request:
    return Request(tuple(messages), tuple(tools), system)


def _split(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` pieces as even as possible (at most ``len(text)``, at least one)."""
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    n = max(1, min(chunks, len(text)))
    size, extra = divmod(len(text), n)
    pieces: list[str] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_message(message: Message) -> str:
    """A one-line, human-readable summary of a message for error messages."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(repr(_shorten(block.text)))
        elif isinstance(block, ToolResultBlock):
            flag = " (error)" if block.is_error else ""
            parts.append(f"tool_result {block.tool_use_id}{flag}: {_shorten(block.text)!r}")
        elif isinstance(block, ToolUseBlock):
            parts.append(f"tool_use {block.name}({block.id})")
        else:
            parts.append(f"<{type(block).__name__}>")
    return f"{message.role}: " + (", ".join(parts) if parts else "<empty>")


def _describe_request(request: Request) -> str:
    if not request.messages:
        return "the unexpected request had no messages"
    return (
        f"last message of the unexpected request ({len(request.messages)} messages) was "
        f"{_describe_message(request.last_message)}"
    )


# --------------------------------------------------------------------------------------------
# Ready-made event lists


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


# --------------------------------------------------------------------------------------------
# StubTransport: raw event lists


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


# --------------------------------------------------------------------------------------------
# ScriptedTransport: model behaviour as steps


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the scripted model makes.

    ``id`` defaults to ``call_{n}`` when None, where this is the ``n``-th tool call (with or
    without an explicit id) the transport has played, counting from 1 across all requests.
    ``raw_arguments`` is sent verbatim instead of ``json.dumps(input)`` (to test argument repair
    of malformed JSON).
    """

    name: str
    input: Mapping[str, Any] | None = None
    id: str | None = None
    raw_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """One model turn: optional reasoning, optional text, then tool calls.

    ``stop_reason`` defaults to ``TOOL_USE`` when there are ``tool_calls``, else ``END_TURN``.
    ``text`` (and ``reasoning``) are streamed as ``chunks`` deltas; ``reasoning_signature`` rides
    on the last reasoning delta. An empty ``text`` sends no text block.
    """

    text: str = ""
    tool_calls: Sequence[Call] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason | None = None
    chunks: int = 1
    reasoning: str | None = None
    reasoning_signature: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.tool_calls, Call):
            raise TypeError("Reply(tool_calls=...) takes a list of Call, not a single Call")
        calls = tuple(self.tool_calls)
        for call in calls:
            if not isinstance(call, Call):
                raise TypeError(
                    f"Reply(tool_calls=...) items must be Call(...), got {type(call).__name__}"
                )
        object.__setattr__(self, "tool_calls", calls)
        if self.chunks < 1:
            raise ValueError(f"Reply(chunks=...) must be >= 1, got {self.chunks}")

    @property
    def effective_stop_reason(self) -> StopReason:
        """The stop reason the turn ends with."""
        if self.stop_reason is not None:
            return self.stop_reason
        return StopReason.TOOL_USE if self.tool_calls else StopReason.END_TURN

    def _events(self, next_number: Callable[[], int]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        index = 0
        if self.reasoning is not None or self.reasoning_signature is not None:
            pieces = _split(self.reasoning or "", self.chunks)
            for i, piece in enumerate(pieces):
                last = i == len(pieces) - 1
                events.append(
                    ReasoningDelta(index, piece, self.reasoning_signature if last else None)
                )
            index += 1
        if self.text:
            events.extend(TextDelta(index, piece) for piece in _split(self.text, self.chunks))
            index += 1
        for call in self.tool_calls:
            number = next_number()
            call_id = f"call_{number}" if call.id is None else call.id
            arguments = (
                call.raw_arguments
                if call.raw_arguments is not None
                else json.dumps(dict(call.input or {}))
            )
            events.append(ToolUseStart(index, call_id, call.name))
            events.append(ToolInputDelta(index, call_id, arguments))
            index += 1
        events.append(IterationEnd(0, self.effective_stop_reason, self.usage))
        return events


@dataclass(frozen=True, slots=True)
class Hold:
    """Play ``then``, but pause after its first ``after_events`` events until ``event`` is set.

    With ``after_events=0`` nothing is yielded before the pause. Use it to keep a run in flight
    (to cancel it, or to start many at once) and release it with ``event.set()``.
    """

    event: asyncio.Event
    then: Reply
    after_events: int = 0

    def __post_init__(self) -> None:
        if self.after_events < 0:
            raise ValueError(f"Hold(after_events=...) must be >= 0, got {self.after_events}")
        if not isinstance(self.then, Reply):
            raise TypeError(f"Hold(then=...) must be a Reply, got {type(self.then).__name__}")


StepFn: TypeAlias = Callable[[Request], Reply | Hold | BaseException]
"""A step computed when the call is played, from the request the agent sent."""

Step: TypeAlias = Reply | Hold | BaseException | StepFn
"""One scripted model call: a ``Reply``, a ``Hold``, an exception to raise, or a ``StepFn``."""


def _check_step(step: object, where: str) -> None:
    if isinstance(step, Reply | Hold | BaseException):
        return
    if isinstance(step, type) and issubclass(step, BaseException):
        raise TypeError(
            f"{where} is the exception class {step.__name__}; pass an instance, "
            f"e.g. {step.__name__}('...')"
        )
    if isinstance(step, str):
        raise TypeError(f"{where} is a str; wrap text in Reply({step!r})")
    if isinstance(step, Call):
        raise TypeError(f"{where} is a Call; wrap it as Reply(tool_calls=[Call(...)])")
    if not callable(step):
        raise TypeError(
            f"{where} must be a Reply, Hold, exception instance or callable(request), "
            f"got {type(step).__name__}"
        )


class ScriptedTransport:
    """A fake model that plays scripted steps, one per ``stream()`` call, and records requests.

    Each step is one of

    - ``Reply(...)``: a model turn (reasoning, text, tool calls, usage, stop reason);
    - an exception instance: raised before the first event of that call (the agent may retry);
    - a callable ``(request) -> Reply | Hold | exception``, evaluated when the call is played;
    - ``Hold(event, then)``: plays ``then`` but waits for an ``asyncio.Event`` first.

    ``then`` (optional) is a step used for every call after the listed ones, e.g. for an
    endless model in a benchmark. Without it, a call past the script raises ``ScriptExhausted``.
    Each call's ``Request`` (a snapshot of messages, tools and system) is kept in ``requests``.
    """

    def __init__(self, steps: Iterable[Step], *, then: Step | None = None) -> None:
        self._steps: list[Step] = list(steps)
        for position, step in enumerate(self._steps):
            _check_step(step, f"ScriptedTransport step {position}")
        if then is not None:
            _check_step(then, "ScriptedTransport(then=...)")
        self._then = then
        self._call_counter = 0
        self.requests: list[Request] = []

    @property
    def remaining(self) -> int:
        """How many listed steps are still unplayed (``then=`` is not counted)."""
        return max(0, len(self._steps) - len(self.requests))

    @property
    def call_count(self) -> int:
        """How many times ``stream()`` has been called."""
        return len(self.requests)

    def _next_call_number(self) -> int:
        self._call_counter += 1
        return self._call_counter

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """Record the request and return a stream playing the next step."""
        request = _snapshot(messages, tools, system)
        self.requests.append(request)
        number = len(self.requests)
        step = self._steps[number - 1] if number <= len(self._steps) else self._then
        return self._play(step, number, request)

    async def _play(
        self, step: Step | None, number: int, request: Request
    ) -> AsyncGenerator[StreamEvent, None]:
        if step is None:
            raise ScriptExhausted(
                f"ScriptedTransport got request #{number} but only {len(self._steps)} "
                f"step(s) were scripted; {_describe_request(request)}"
            )
        resolved: object = step
        if not isinstance(step, Reply | Hold | BaseException):
            resolved = step(request)
            if not isinstance(resolved, Reply | Hold | BaseException):
                raise TypeError(
                    f"step function for request #{number} must return a Reply, Hold or "
                    f"exception instance, got {type(resolved).__name__}"
                )
        if isinstance(resolved, BaseException):
            raise resolved
        if isinstance(resolved, Hold):
            events = resolved.then._events(self._next_call_number)
            for event in events[: resolved.after_events]:
                yield event
            await resolved.event.wait()
            for event in events[resolved.after_events :]:
                yield event
            return
        assert isinstance(resolved, Reply)
        for event in resolved._events(self._next_call_number):
            yield event


# --------------------------------------------------------------------------------------------
# Contract checking


_LOOP_EVENTS: tuple[type, ...] = (
    IterationStart,
    ToolDispatch,
    ToolResult,
    Retrying,
    SteeringInjected,
    ContextTrimmed,
    Error,
    SessionEndEvent,
)


async def collect(stream: AsyncIterable[StreamEvent]) -> list[StreamEvent]:
    """All events of ``stream`` in a list."""
    return [event async for event in stream]


def _fail(position: int, event: object, problem: str) -> AssertionError:
    return AssertionError(f"stream contract violated at event #{position} ({event!r}): {problem}")


def assert_stream_contract(events: Iterable[StreamEvent]) -> None:
    """Check that ``events`` are one well-formed model turn, as a transport must yield.

    Raises ``AssertionError`` naming the first offending event (0-based position) when:

    - an event is not a model event (loop events such as ``IterationStart``, ``ToolResult`` or
      ``SessionEndEvent`` come from the agent, never from a transport);
    - an index is used by two kinds of block (text, reasoning, tool use);
    - a ``ToolInputDelta`` has no earlier ``ToolUseStart`` with the same index and id;
    - two ``ToolUseStart`` share an index or a ``tool_use_id``;
    - there is no ``IterationEnd``, more than one, or any event after it;
    - the stop reason is ``TOOL_USE`` but no tool call was started.
    """
    kinds: dict[int, str] = {}  # index -> "text" | "reasoning" | "tool use"
    tool_ids: dict[str, int] = {}  # tool_use_id -> index
    end: tuple[int, IterationEnd] | None = None
    position = -1
    for position, event in _enumerate(events):
        if end is not None:
            if isinstance(event, IterationEnd):
                raise _fail(
                    position, event, f"a second IterationEnd (the first was event #{end[0]})"
                )
            raise _fail(position, event, f"event after the IterationEnd at event #{end[0]}")
        if isinstance(event, _LOOP_EVENTS):
            raise _fail(
                position,
                event,
                f"{type(event).__name__} is a loop event, emitted by the agent; "
                f"a transport must not yield it",
            )
        if isinstance(event, IterationEnd):
            end = (position, event)
        elif isinstance(event, TextDelta | ReasoningDelta):
            kind = "text" if isinstance(event, TextDelta) else "reasoning"
            seen = kinds.setdefault(event.index, kind)
            if seen != kind:
                raise _fail(
                    position,
                    event,
                    f"index {event.index} already belongs to a {seen} block; "
                    f"each content block needs its own index",
                )
        elif isinstance(event, ToolUseStart):
            if event.tool_use_id in tool_ids:
                raise _fail(
                    position,
                    event,
                    f"tool_use_id {event.tool_use_id!r} was already started "
                    f"(at index {tool_ids[event.tool_use_id]})",
                )
            seen_kind = kinds.get(event.index)
            if seen_kind == "tool use":
                raise _fail(
                    position,
                    event,
                    f"a second ToolUseStart at index {event.index}; "
                    f"each tool call needs its own index",
                )
            if seen_kind is not None:
                raise _fail(
                    position,
                    event,
                    f"index {event.index} already belongs to a {seen_kind} block; "
                    f"each content block needs its own index",
                )
            kinds[event.index] = "tool use"
            tool_ids[event.tool_use_id] = event.index
        elif isinstance(event, ToolInputDelta):
            started_at = tool_ids.get(event.tool_use_id)
            if started_at is None:
                raise _fail(
                    position,
                    event,
                    f"ToolInputDelta for tool_use_id {event.tool_use_id!r} with no earlier "
                    f"ToolUseStart for that id",
                )
            if started_at != event.index:
                raise _fail(
                    position,
                    event,
                    f"ToolInputDelta for tool_use_id {event.tool_use_id!r} has index "
                    f"{event.index} but its ToolUseStart has index {started_at}",
                )
        else:
            raise _fail(position, event, f"{type(event).__name__} is not a stream event")
    if end is None:
        raise AssertionError(
            f"stream contract violated: the stream ended after {position + 1} event(s) "
            f"with no IterationEnd"
        )
    if end[1].stop_reason == StopReason.TOOL_USE and not tool_ids:
        raise _fail(
            end[0], end[1], "stop reason is TOOL_USE but no tool call was started (ToolUseStart)"
        )


def _enumerate(events: Iterable[StreamEvent]) -> Iterator[tuple[int, object]]:
    # Typed as object so a stray non-event is reported instead of confusing the checker.
    yield from enumerate(events)
