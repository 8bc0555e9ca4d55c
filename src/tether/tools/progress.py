"""``report_progress``: how a running tool tells the run how far it got. The loop turns each
report into a ``ToolProgress`` event while the call still runs (for tools made with
``reports_progress=True``; a report from any other tool is dropped)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeAlias

__all__ = ["ProgressSink", "progress_sink", "report_progress", "reporting_to"]

ProgressSink: TypeAlias = Callable[[float, "float | None", "str | None"], None]

_SINK: ContextVar[ProgressSink | None] = ContextVar("tether_tool_progress", default=None)


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Report the current call's progress (a no-op outside a call that can report it)."""
    sink = _SINK.get()
    if sink is not None:
        sink(progress, total, message)


def progress_sink() -> ProgressSink | None:
    """The current call's sink, to report from code that runs in another task (a callback)."""
    return _SINK.get()


def reporting_to(sink: ProgressSink) -> None:
    """Send this task's reports to ``sink`` (the dispatcher sets it in each call's own task)."""
    _SINK.set(sink)
