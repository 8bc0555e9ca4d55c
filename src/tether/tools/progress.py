"""``report_progress``: how a running tool tells the run how far it got. The loop turns each
report into a ``ToolProgress`` event while the call still runs (for tools made with
``reports_progress=True``; a report from any other tool is dropped).

``report_usage`` is its twin for tokens: a tool that calls a model itself (an agent made a tool
with ``Agent.as_tool``) adds what that cost to the run's total, under the same rule, and counts
it against the run's limits. The run's budget (``metering``) stays in view inside the call, so
a run started there (a sub-agent) spends from the same budget as it goes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeAlias

from ..types import Usage

__all__ = [
    "Meter",
    "ProgressSink",
    "UsageSink",
    "counting_to",
    "detached",
    "metering",
    "progress_sink",
    "report_progress",
    "report_usage",
    "reporting_to",
    "usage_sink",
]

ProgressSink: TypeAlias = Callable[[float, "float | None", "str | None"], None]
UsageSink: TypeAlias = Callable[[Usage], None]


class Meter(Protocol):
    """A run's budget as a call sees it: tokens the call spent are counted against it."""

    def charge_tokens(self, usage: Usage) -> None: ...


_SINK: ContextVar[ProgressSink | None] = ContextVar("tether_tool_progress", default=None)
_USAGE: ContextVar[UsageSink | None] = ContextVar("tether_tool_usage", default=None)
_METER: ContextVar[Meter | None] = ContextVar("tether_run_budget", default=None)


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
    """Add ``usage`` to the total of the run making the current call, and count it against the
    run's limits (a no-op outside a call that can report it)."""
    sink = _USAGE.get()
    if sink is not None:
        sink(usage)
        meter = _METER.get()
        if meter is not None:
            meter.charge_tokens(usage)


def usage_sink() -> UsageSink | None:
    """The current call's usage sink, to report from code that runs in another task."""
    return _USAGE.get()


def counting_to(sink: UsageSink | None, meter: Meter | None = None) -> None:
    """Add this task's usage reports to ``sink`` and count them against ``meter`` (the
    dispatcher sets both beside the progress sink, in each call's own task)."""
    _USAGE.set(sink)
    _METER.set(meter)


def metering() -> Meter | None:
    """The budget of the run whose call this task is part of (None: none, or no limits)."""
    return _METER.get()


@contextmanager
def detached() -> Iterator[tuple[ProgressSink | None, UsageSink | None]]:
    """The current call's sinks, taken out of this task's context while the block runs: a run
    started inside a call (a sub-agent) reports through its own calls, never past its own run.
    The budget stays: that run spends from it (its usage, once given to the sink returned
    here, is added to the total only)."""
    progress, usage = _SINK.get(), _USAGE.get()
    progress_token, usage_token = _SINK.set(None), _USAGE.set(None)
    try:
        yield progress, usage
    finally:
        _USAGE.reset(usage_token)
        _SINK.reset(progress_token)
