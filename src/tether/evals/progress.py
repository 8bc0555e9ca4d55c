"""A progress bar on the terminal while an evaluation runs (on standard error, only where it
is a terminal unless asked for)."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

__all__ = ["Bar"]


class Bar:
    """Counts finished runs and failures; draws a bar when ``shown``."""

    def __init__(self, total: int, title: str, shown: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._bar: Any = None
        self._task: Any = None
        if shown if shown is not None else sys.stderr.isatty():
            from rich import progress as bars  # noqa: PLC0415 - only when drawn
            from rich.console import Console  # noqa: PLC0415

            self._bar = bars.Progress(
                bars.TextColumn("{task.description}"),
                bars.BarColumn(),
                bars.MofNCompleteColumn(),
                bars.TextColumn("{task.fields[failed]} failed"),
                bars.TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._task = self._bar.add_task(title, total=total, failed=0)

    def advance(self, passed: bool) -> None:
        """One more run finished."""
        self.done += 1
        self.failed += not passed
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)

    def __enter__(self) -> Bar:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
