"""A ``--trace`` file that could not be written: the run goes on, and once the turn is over the
failure is shown as one ``warning:`` line on stderr, once per session."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..tracing.recorder import Recorder
from .terminal import safe

__all__ = ["TraceNotice", "show_trace_failures"]


class TraceNotice:
    """The ``on_failure`` of the CLI's ``Recorder``: keeps the failure until ``show``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failure: Exception | None = None
        self.shown = False

    def __call__(self, failure: Exception) -> None:
        self.failure = failure

    def show(self, err: Console) -> None:
        """The one warning line, if the file failed and it was not shown yet."""
        if self.failure is None or self.shown:
            return
        self.shown = True
        reason = self.failure
        why = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
        line = Text("warning: ", style="bold yellow")
        line.append(safe(f"the trace was not written to {self.path}: {why}"))
        line.append("; the run went on without it")
        err.print(line, soft_wrap=True, highlight=False)


def show_trace_failures(middleware: Iterable[object], err: Console) -> None:
    """Show the failure of each CLI trace recorder among a run's ``middleware`` (once each)."""
    for each in middleware:
        if isinstance(each, Recorder):
            notice = each.recording.on_failure
            if isinstance(notice, TraceNotice):
                notice.show(err)
