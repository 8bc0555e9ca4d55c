"""The console tracer (spec §3.6.2): a line on stderr as each span starts and ends,
``[prompty] ▶ name`` and ``[prompty] ◀ name (12ms)``."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["ConsoleTracer", "console_tracer"]


class ConsoleTracer:
    """A tracer factory printing span starts and ends to ``stream`` (stderr when None, looked up
    at each span so a redirected stderr is followed). Emitted values are not printed."""

    def __init__(self, stream: TextIO | None = None, *, prefix: str = "[prompty]") -> None:
        self.stream = stream
        self.prefix = prefix

    @contextmanager
    def __call__(self, name: str) -> Iterator[Any]:
        shown = _printable(name)
        self._line(f"▶ {shown}")
        started = time.perf_counter()
        try:
            yield _ignore
        finally:
            self._line(f"◀ {shown} ({(time.perf_counter() - started) * 1000:.0f}ms)")

    def _line(self, text: str) -> None:
        print(f"{self.prefix} {text}", file=self.stream or sys.stderr, flush=True)


def _ignore(key: str, value: Any) -> None:
    """The console shows no values."""


def _printable(name: str) -> str:
    """``name`` with control characters (a terminal escape, a line break) shown as ``?``."""
    return name if name.isprintable() else "".join(c if c.isprintable() else "?" for c in name)


console_tracer = ConsoleTracer()
"""The console tracer on stderr: ``Tracer.add("console", console_tracer)``."""
