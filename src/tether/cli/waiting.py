"""What a turn waits for, shown while nothing else is: the phases of a model that starts on first
use (a ``ReportsProgress`` transport: the local model checks and loads its weights), then "waiting
for the first token" once a model call has been silent for a second.

On a terminal it is one spinner line on stderr with the elapsed seconds, redrawn ten times a
second and cleared before anything else is written; elsewhere (pipes, tests) a plain
``tether: ...`` line on stderr per phase, the wait said once a turn. Never on stdout, which stays
the answer (``--json`` stays JSON lines)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import IO

from rich.console import Console

from ..events import (
    Error,
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    SessionEndEvent,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from ..transports.base import FIRST_TOKEN, CompletionTransport, Phase, ReportsProgress
from .render import Renderer, TurnOutcome

__all__ = ["Waiting", "showing_waits"]

DELAY = 1.0  # seconds of silence before the wait for the first token is shown
_TICK = 0.1  # seconds between redraws of the spinner
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII_FRAMES = "|/-\\"
_CLEAR = "\r\x1b[K"
# What a model call sends first: the wait for it is over.
_REPLY = (
    TextDelta,
    ReasoningDelta,
    ToolUseStart,
    ToolInputDelta,
    IterationEnd,
    Error,
    SessionEndEvent,
)


class Waiting:
    """A ``Renderer`` that shows the waits of a turn (see the module) and hands every event on
    to ``inner``; ``tty`` chooses the spinner (else plain lines)."""

    def __init__(
        self,
        inner: Renderer,
        stream: IO[str],
        transport: CompletionTransport | None = None,
        *,
        tty: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.stream = stream
        self.tty = tty
        self._source = transport if isinstance(transport, ReportsProgress) else None
        self._clock = clock
        self._frames = _FRAMES if _utf8(stream) else _ASCII_FRAMES
        self._phase: Phase | None = None
        self._since: float | None = None  # when the wait for a reply began; None: not waiting
        self._quiet_since = 0.0  # when the last phase ended (the silence is counted from then)
        self._said_wait = False
        self._shown = False
        self._frame = 0
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- Renderer ----------------------------------------------------------------------------

    def begin(self) -> None:
        self._said_wait = False
        self._wait()
        if self._source is not None:
            self._unsubscribe = self._source.on_phase(self._on_phase)
        self.inner.begin()

    def event(self, event: StreamEvent) -> None:
        if isinstance(event, IterationStart):
            self._wait()
        elif isinstance(event, _REPLY):
            self._since = None
        self._clear()
        self.inner.event(event)
        self._draw()

    def end(self, outcome: TurnOutcome) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._since, self._phase = None, None
        self._stop_ticking()
        self._clear()
        self.inner.end(outcome)

    # -- the wait ----------------------------------------------------------------------------

    def _wait(self) -> None:
        self._since = self._quiet_since = self._clock()
        self._tick_soon()

    def _on_phase(self, phase: Phase) -> None:
        if phase.done:
            if self._phase is not None and self._phase.name == phase.name:
                self._phase = None
                self._quiet_since = self._clock()
        else:
            self._phase = phase
            if not self.tty:
                self._say(phase.text)
        self._tick_soon()
        self._draw()

    def _label(self) -> str | None:
        if self._phase is not None:
            return self._phase.text
        if self._since is not None and self._clock() - self._quiet_since >= DELAY:
            return FIRST_TOKEN.text
        return None

    def _tick_soon(self) -> None:
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a renderer driven by hand): nothing to redraw with
                return
            self._timer = loop.call_later(_TICK, self._tick)

    def _stop_ticking(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        self._timer = None
        self._frame += 1
        self._draw()
        if self._since is not None or self._phase is not None:
            self._tick_soon()

    def _draw(self) -> None:
        label = self._label()
        if not self.tty:
            if label == FIRST_TOKEN.text and not self._said_wait:
                self._said_wait = True
                self._say(label)
            return
        if label is None:
            self._clear()
            return
        seconds = int(self._clock() - (self._since if self._since is not None else self._clock()))
        frame = self._frames[self._frame % len(self._frames)]
        self.stream.write(f"{_CLEAR}{frame} {label} · {seconds} s")
        self.stream.flush()
        self._shown = True

    def _clear(self) -> None:
        if self._shown:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._shown = False

    def _say(self, text: str) -> None:
        self.stream.write(f"tether: {text}…\n")
        self.stream.flush()


def _utf8(stream: IO[str]) -> bool:
    encoding = getattr(stream, "encoding", None) or ""
    return encoding.lower().replace("-", "") == "utf8"


def showing_waits(inner: Renderer, err: Console, transport: CompletionTransport) -> Waiting:
    """``inner`` with the turn's waits shown on ``err`` (a spinner where it is a terminal)."""
    return Waiting(inner, err.file, transport, tty=err.is_terminal)
