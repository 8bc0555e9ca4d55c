"""``report_progress``: how a running tool tells the run how far it got. The loop turns each
report into a ``ToolProgress`` event while the call still runs (for tools made with
``reports_progress=True``; a report from any other tool is dropped).

``report_usage`` is its twin for tokens: a tool that calls a model itself (an agent made a tool
with ``Agent.as_tool``) adds what that cost to the run's total, under the same rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeAlias

from ..types import Usage

__all__ = [
    "ProgressSink",
    "UsageSink",
    "counting_to",
    "detached",
    "progress_sink",
    "report_progress",
    "report_usage",
    "reporting_to",
    "usage_sink",
]

ProgressSink: TypeAlias = Callable[[float, "float | None", "str | None"], None]
UsageSink: TypeAlias = Callable[[Usage], None]

_SINK: ContextVar[ProgressSink | None] = ContextVar("tether_tool_progress", default=None)
_USAGE: ContextVar[UsageSink | None] = ContextVar("tether_tool_usage", default=None)


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


def report_usage(usage: Usage) -> None:
    """Add ``usage`` to the total of the run making the current call (a no-op outside a call
    that can report it)."""
    sink = _USAGE.get()
    if sink is not None:
        sink(usage)


def usage_sink() -> UsageSink | None:
    """The current call's usage sink, to report from code that runs in another task."""
    return _USAGE.get()


def counting_to(sink: UsageSink | None) -> None:
    """Add this task's usage reports to ``sink`` (the dispatcher sets it beside the progress
    sink, in each call's own task)."""
    _USAGE.set(sink)


@contextmanager
def detached() -> Iterator[tuple[ProgressSink | None, UsageSink | None]]:
    """The current call's sinks, taken out of this task's context while the block runs: a run
    started inside a call (a sub-agent) reports through its own calls, never past its own run."""
    progress, usage = _SINK.get(), _USAGE.get()
    progress_token, usage_token = _SINK.set(None), _USAGE.set(None)
    try:
        yield progress, usage
    finally:
        _USAGE.reset(usage_token)
        _SINK.reset(progress_token)
