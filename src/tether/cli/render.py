"""Showing a run: rich text for people (``RichRenderer``), JSON lines (``JsonRenderer``).

A renderer gets ``begin()``, then every event of the turn, then ``end(outcome)`` once, also when
the turn was cancelled or failed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Protocol

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown

from ..errors import RunCancelled
from ..events import (
    Compacted,
    CompactionFailed,
    PendingCall,
    Retrying,
    SessionEndEvent,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolResult,
)
from ..messages import ToolResultContent
from ..stores.jsonforms import event_to_dict
from ..types import StopReason, Usage
from .terminal import safe, safe_text

__all__ = [
    "JsonRenderer",
    "Renderer",
    "RichRenderer",
    "TurnOutcome",
    "format_call",
    "format_result",
    "summary_line",
]

_MAX_ARGS_CHARS = 120
_MAX_RESULT_CHARS = 100
_MAX_ERROR_CHARS = 240
_REDRAW = 0.1  # seconds between redraws of the streaming answer
_ECHO_ROOM = 2  # columns left free for the terminal's echo of Ctrl-C (``^C``)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn went: the final answer, what it cost, and how it ended."""

    text: str
    usage: Usage
    iterations: int
    seconds: float
    error: BaseException | None = None
    cancelled: bool = False
    pending: tuple[PendingCall, ...] = ()  # calls waiting for the person's approval


class Renderer(Protocol):
    """Receives one turn: ``begin()``, each event, then ``end(outcome)``."""

    def begin(self) -> None:
        """A turn starts."""
        ...

    def event(self, event: StreamEvent) -> None:
        """One event of the turn, as it happens."""
        ...

    def end(self, outcome: TurnOutcome) -> None:
        """The turn is over (answered, failed or cancelled)."""
        ...


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_call(
    name: str, arguments: Mapping[str, Any], limit: int | None = _MAX_ARGS_CHARS
) -> str:
    """``name(key=value, ...)`` with JSON values, cut to ``limit`` characters (None: whole, as
    a call waiting for approval is shown: a person approves all of it)."""
    parts = [
        f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
        for key, value in arguments.items()
    ]
    shown = ", ".join(parts)
    return f"{name}({shown if limit is None else _shorten(shown, limit)})"


def _content_text(content: ToolResultContent) -> str:
    if isinstance(content, str):
        return content
    pieces = [getattr(block, "text", None) or "[image]" for block in content]
    return "\n".join(pieces)


def format_result(name: str, content: ToolResultContent, is_error: bool = False) -> str:
    """``name: first line of the result``, cut to a readable length.

    For an error the engine's ``Error: Tool 'name' failed:`` prefix is left out (the line names
    the tool already) and more of the message is kept.
    """
    text = _content_text(content).strip()
    if is_error:
        text = text.removeprefix(f"Error: Tool '{name}' failed: ").removeprefix("Error: ")
    lines = text.splitlines()
    first = lines[0] if lines else "(empty)"
    if len(lines) > 1:
        first += f" … (+{len(lines) - 1} lines)"
    limit = _MAX_ERROR_CHARS if is_error else _MAX_RESULT_CHARS
    return f"{name}: {_shorten(first, limit)}"


def tokens_text(usage: Usage) -> str:
    """``812 tokens in (640 cached), 41 out``: the cached part only when the provider read
    some of the prompt from its cache."""
    cached = f" ({usage.cache_read_tokens:,} cached)" if usage.cache_read_tokens else ""
    return f"{usage.input_tokens:,} tokens in{cached}, {usage.output_tokens:,} out"


def summary_line(outcome: TurnOutcome) -> str:
    """``2 iterations · 812 tokens in, 41 out · 3.1 s`` (or how the turn was cut short)."""
    usage = outcome.usage
    plural = "" if outcome.iterations == 1 else "s"
    parts = [
        f"{outcome.iterations} iteration{plural}",
        tokens_text(usage),
        f"{outcome.seconds:.1f} s",
    ]
    if outcome.cancelled:
        parts.insert(0, "cancelled")
    elif outcome.error is not None:
        parts.insert(0, "failed")
    return " · ".join(parts)


class _LazyMarkdown:
    """Parses the Markdown only when drawn, so a long answer is not re-parsed on every token.

    It is drawn two columns short of the width: the ``^C`` a terminal echoes on Ctrl-C then fits
    on the answer's last line, where a full line would wrap it onto the next and the last redraw
    (which clears from the line it thinks it is on) would show the answer twice."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.update_width(max(options.max_width - _ECHO_ROOM, 1))
        yield from console.render(Markdown(self.text), room)


class RichRenderer:
    """The answer streams as it arrives (as Markdown on a terminal, plain text elsewhere); a dim
    line per tool call and result; a one-line summary at the end."""

    def __init__(
        self, console: Console, *, markdown: bool | None = None, summary: bool = True
    ) -> None:
        self.console = console
        self.markdown = console.is_terminal if markdown is None else markdown
        self.summary = summary
        self._text = ""
        self._live: Live | None = None
        self._drawn = 0.0
        self._view: _LazyMarkdown | None = None
        self._line_open = False  # plain mode: answer text was written without a final newline

    # -- the answer text ---------------------------------------------------------------------

    def _add_text(self, delta: str) -> None:
        delta = safe(delta)
        self._text += delta
        if not self.markdown:
            if delta:
                self.console.print(delta, end="", markup=False, highlight=False, soft_wrap=True)
                self._line_open = not self._text.endswith("\n")
            return
        if self._live is None:
            if not self._text.strip():
                return
            self._view = _LazyMarkdown(self._text)
            # Redrawn here when the text changed (at most every _REDRAW s), not on a timer.
            self._live = Live(
                self._view,
                console=self.console,
                auto_refresh=False,
                vertical_overflow="ellipsis",
            )
            self._live.start(refresh=True)
            self._drawn = time.monotonic()
            return
        assert self._view is not None
        self._view.text = self._text
        now = time.monotonic()
        if now - self._drawn >= _REDRAW:
            self._live.refresh()
            self._drawn = now

    def _end_text(self) -> None:
        """Finish the text shown so far (before a tool line, the summary, or an error)."""
        if self._live is not None:
            assert self._view is not None
            self._view.text = self._text
            self._live.stop()  # draws the whole answer once more, also what overflowed
            self._live = None
            self._view = None
        if self._line_open:
            self.console.print()
            self._line_open = False
        self._text = ""

    def _line(self, text: str, style: str) -> None:
        self.console.print(safe_text(text, style), soft_wrap=True, highlight=False)

    # -- Renderer ----------------------------------------------------------------------------

    def begin(self) -> None:
        self._text = ""

    def event(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self._add_text(event.delta)
        elif isinstance(event, ToolDispatch):
            self._end_text()
            self._line(f"→ {format_call(event.name, event.input)}", "dim")
        elif isinstance(event, ToolResult):
            self._end_text()
            style = "red" if event.is_error else "dim"
            self._line(f"← {format_result(event.name, event.content, event.is_error)}", style)
        elif isinstance(event, Retrying):
            self._end_text()
            self._line(f"↻ retrying in {event.delay:.1f} s: {event.reason}", "yellow")
        elif isinstance(event, Compacted):
            self._end_text()
            self._line(
                f"⇣ compacted: {event.summarized} earlier messages summarised "
                f"(~{event.tokens_before:,} → ~{event.tokens_after:,} tokens)",
                "dim",
            )
        elif isinstance(event, CompactionFailed):
            self._end_text()
            self._line(f"! compaction failed, going on without it: {event.reason}", "yellow")

    def end(self, outcome: TurnOutcome) -> None:
        self._end_text()
        if self.summary and not outcome.pending:  # a paused turn is not over: no summary yet
            self._line(summary_line(outcome), "dim")


class JsonRenderer:
    """Every event as one JSON line (``tether.stores.jsonforms.event_to_dict``), and nothing else.

    A cancelled turn (which has no ``SessionEndEvent`` of its own) gets a ``session_end`` line
    with stop reason ``cancelled``, so a reader always finds one at the end.
    """

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self._ended = False

    def _write(self, event: StreamEvent) -> None:
        line = json.dumps(event_to_dict(event), ensure_ascii=False, default=str)
        self.file.write(line + "\n")
        self.file.flush()

    def begin(self) -> None:
        self._ended = False

    def event(self, event: StreamEvent) -> None:
        self._write(event)
        if isinstance(event, SessionEndEvent):
            self._ended = True

    def end(self, outcome: TurnOutcome) -> None:
        if not self._ended and outcome.cancelled:
            self._write(
                SessionEndEvent(
                    StopReason.CANCELLED,
                    outcome.usage,
                    RunCancelled("the turn was interrupted"),
                    outcome.iterations,
                )
            )
        self._ended = True
