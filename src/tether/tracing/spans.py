"""What the tracing middleware writes to: a ``SpanSink`` opens spans, a ``Span`` takes
attributes and events and ends once. OpenTelemetry and the JSON-lines recorder are two sinks."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, TypeAlias

__all__ = ["CURRENT", "Attributes", "Kind", "Span", "SpanSink", "error_kind"]

Kind: TypeAlias = Literal["run", "model", "tool"]
Attributes: TypeAlias = Mapping[str, Any]  # str, bool, int, float, or sequences of one of them


class Span(Protocol):
    """One traced operation."""

    def set(self, attributes: Attributes) -> None:
        """Add or replace attributes."""

    def event(self, name: str, attributes: Attributes) -> None:
        """Something that happened at a moment during the span."""

    def active(self) -> AbstractContextManager[object]:
        """Make this the current span for work done inside (a tool's own spans nest under it)."""

    def end(self, error: BaseException | str | None = None) -> None:
        """End the span, failed with ``error`` (an exception, or an error type) if given."""


class SpanSink(Protocol):
    """Opens spans of a kind, under ``parent`` (a span of this sink, or None: the sink's own
    notion of the current span)."""

    def start(self, kind: Kind, name: str, parent: Span | None, attributes: Attributes) -> Span:
        """A new span, started now."""


CURRENT: contextvars.ContextVar[tuple[tuple[object, Span], ...]] = contextvars.ContextVar(
    "tether_open_tool_spans", default=()
)
"""The tool calls going on in this context, outermost first, each with the tracing middleware
that opened it: a nested run (a sub-agent called from a tool) starts under its tracer's last."""


def error_kind(error: BaseException) -> str:
    """What a span's ``error.type`` says of ``error``: "cancelled" for a cancelled or closed
    operation, else the exception's class."""
    if isinstance(error, GeneratorExit) or type(error).__name__ == "CancelledError":
        return "cancelled"
    return type(error).__qualname__
