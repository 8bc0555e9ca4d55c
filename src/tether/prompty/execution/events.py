"""Prompty's agent events (§13.1), made from the engine's events as a run goes on.

The engine's ``StreamEvent``s say everything that happens; ``PromptyEvents`` turns them into the
spec's ``(type, data)`` callbacks (``tool_call_start``, ``tool_result``, ``messages_updated``,
``done``, …) and keeps what a cancellation reason or an unknown-tool error needs to know.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ...context import MemoryContextStore
from ...events import (
    ContextTrimmed,
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    Retrying,
    SteeringInjected,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolResult,
    ToolUseStart,
)
from ...messages import Message, ToolResultBlock
from ...types import StopReason
from ..messages import from_tether

__all__ = ["AgentEvent", "EventCallback", "PromptyEvents", "ToolResultsWatch"]

log = logging.getLogger("tether.prompty")

EventCallback: TypeAlias = Callable[[str, dict[str, Any]], None]
"""``on_event(type, data)``: called synchronously; its failures are logged, never raised."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One §13.1 event, as a value (what ``turn(..., on_event=list.append)``-style callers keep)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content)


class PromptyEvents:
    """Forwards a run's engine events to an ``on_event`` callback in the spec's terms."""

    def __init__(
        self,
        callback: EventCallback | None,
        *,
        stream: bool = False,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.callback = callback
        self.stream = stream
        self.cancelled = cancelled
        self.skipped: set[str] = set()
        self.model_calls = 0
        self.unknown: list[str] = []
        self.denied: set[str] = set()
        self.known: frozenset[str] = frozenset()
        self._started = False
        self._calls = 0  # tool calls the current model turn asked for
        self._results = 0  # and how many of them have finished
        self._answering: bool | None = None  # §9.3: the turn's first content says which it is
        self.stop_reason: StopReason | None = None  # of the last model turn

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Call the callback; a failing callback is logged and the run goes on."""
        if self.callback is None:
            return
        try:
            self.callback(kind, data)
        except Exception:
            log.exception("a Prompty on_event callback failed on %r", kind)

    def see(self, event: StreamEvent) -> None:
        """Take one engine event."""
        kind = type(event)
        if kind is IterationStart:
            self.model_calls += 1
            self._calls = self._results = 0
            self._answering = None
        elif kind is IterationEnd:
            self.stop_reason = event.stop_reason  # type: ignore[union-attr]
        elif kind is ToolUseStart:
            self._calls += 1
            if self._answering is None:
                self._answering = False
        elif kind is TextDelta:
            self._answer_text(event.delta)  # type: ignore[union-attr]
        elif kind is ReasoningDelta and self.stream:
            self.emit("thinking", {"token": event.delta})  # type: ignore[union-attr]
        elif kind is ToolDispatch:
            self._dispatch(event)  # type: ignore[arg-type]
        elif kind is ToolResult:
            self._result(event)  # type: ignore[arg-type]
        elif kind is Retrying:
            self.emit("status", {"message": f"Retrying the model call: {event.reason}"})  # type: ignore[union-attr]
        elif kind is SteeringInjected:
            self.emit("status", {"message": "Injecting steering message"})
        elif kind is ContextTrimmed:
            self.emit("compaction_start", {})
            self.emit(
                "compaction_complete",
                {"removed": event.removed, "remaining": event.remaining},  # type: ignore[union-attr]
            )

    def _answer_text(self, delta: str) -> None:
        """§9.3: a model turn that starts with text is the answer and streams as ``token``
        events; one that starts with tool calls is a tool round and stays buffered."""
        if self._answering is None:
            self._answering = True
        if self._answering and self.stream:
            self.emit("token", {"token": delta})

    def _dispatch(self, event: ToolDispatch) -> None:
        if self.cancelled():
            self.skipped.add(event.tool_use_id)  # the engine answers it without running it
            return
        if not self._started:
            self._started = True
            self.emit("status", {"message": "Starting agent loop"})
        if event.name not in self.known:
            self.unknown.append(event.name)
        arguments = json.dumps(dict(event.input), ensure_ascii=False)
        self.emit("tool_call_start", {"name": event.name, "arguments": arguments})

    def _result(self, event: ToolResult) -> None:
        self._results += 1
        if event.tool_use_id in self.skipped:
            return
        text = _text(event.content)
        if event.is_error and event.tool_use_id not in self.denied:
            self.emit("error", {"message": text})
        self.emit("tool_result", {"name": event.name, "result": text})

    @property
    def in_round(self) -> bool:
        """True when the current round was cut short: a call skipped, or one not yet finished."""
        return bool(self.skipped) or self._results < self._calls

    def updated(self, messages: Sequence[Message]) -> None:
        """The conversation changed: tell the caller what it is now."""
        view = [m.to_dict() for m in from_tether(messages)]
        self.emit("messages_updated", {"messages": view, "message_count": len(view)})


class ToolResultsWatch(MemoryContextStore):
    """A memory store that reports each stored round of tool results (and steering messages,
    when asked) as ``messages_updated`` the moment the engine stores them."""

    __slots__ = ("_events", "_quiet")

    def __init__(
        self, messages: Sequence[Message], events: PromptyEvents, quiet: Callable[[], bool]
    ) -> None:
        super().__init__(messages)
        self._events = events
        self._quiet = quiet

    async def append(self, message: Message) -> None:
        await super().append(message)
        results = any(type(b) is ToolResultBlock for b in message.content)
        if results and not self._quiet():
            self._events.updated(self.messages)

    def steered(self) -> None:
        """Steering messages were added (the engine stored them before saying so)."""
        self._events.updated(self.messages)
