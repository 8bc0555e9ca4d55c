"""``ScriptedTransport``: scripted model turns (text, calls, reasoning, holds), requests kept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import (
    AsyncGenerator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ..messages import Message
from ..types import StopReason, ToolSpec, Usage
from .common import Request, ScriptExhausted, _describe_request, _snapshot, _split


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
