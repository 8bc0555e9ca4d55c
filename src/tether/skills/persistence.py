"""``JsonLinesPersistence``: a run's events in a JSON Lines file (one line per event, the file
private to its owner, each line synced to disk) that loads back into an ``EventStream``.

A line is written whole or not at all (a failed write is undone), a last line a crash cut
short is left out when reading and dropped by the next append, and a damaged line before it
is a ``JsonLinesParseError`` that names the file and the line."""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path
from typing import Any

from ..base.writes import append_whole, whole_lines
from .event_json import event_from_json, event_to_json
from .events import Action, EventStream, Observation

__all__ = ["JsonLinesParseError", "JsonLinesPersistence", "event_from_json", "event_to_json"]

logger = logging.getLogger("tether.skills")


class JsonLinesParseError(ValueError):
    """Line ``line`` (1-based) of the file at ``path`` is not a JSON value, or not the event
    its ``type`` names; ``reason`` says which."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}: line {line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class JsonLinesPersistence:
    """Appends events to ``path`` (parents created; a new file is mode 0600) and loads them."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(self, event: Any) -> None:
        """Write one event as one line: a JSON value, or an action or observation (tagged with
        its type). Serialised before the file is touched, so a bad value changes nothing: one
        JSON cannot hold (anywhere in it, a skill's result too) is a ``TypeError`` and no file
        is made. The line is written whole, or the write raises and the file is left as it
        was."""
        line = _line(event)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # appends of other processes wait (closing unlocks)
            append_whole(fd, line, whole_lines(fd))  # a line a crash cut short goes first
        finally:
            os.close(fd)

    def load(self) -> list[Any]:
        """Every line's JSON value, in order (blank lines skipped); ``[]`` when there is no file.
        A last line without its newline (a write a crash cut short) is left out."""
        return [value for _, value in self._lines()]

    def load_stream(self) -> EventStream:
        """The file's actions and observations as an ``EventStream`` (other lines left out)."""
        stream = EventStream()
        for number, value in self._lines():
            try:
                event = event_from_json(value)
            except (ValueError, RecursionError) as exc:
                raise JsonLinesParseError(self.path, number, str(exc)) from exc
            if isinstance(event, Action | Observation):
                stream.append(event)
        return stream

    def _lines(self) -> list[tuple[int, Any]]:
        """``(line number, value)`` of each complete, non-blank line."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        *complete, torn = data.split(b"\n")
        if torn:
            logger.warning("%s: left out a last line a write did not finish", self.path)
        out: list[tuple[int, Any]] = []
        for number, raw in enumerate(complete, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JsonLinesParseError(self.path, number, f"not UTF-8 ({exc.reason})") from exc
            try:
                out.append((number, json.loads(text)))
            except (ValueError, RecursionError) as exc:
                why = getattr(exc, "msg", None) or type(exc).__name__
                raise JsonLinesParseError(self.path, number, f"not JSON ({why})") from exc
        return out


def _line(event: Any) -> bytes:
    """One event's line as UTF-8; text UTF-8 cannot carry (a lone surrogate) is escaped.
    ``TypeError`` for a value JSON cannot hold: written as its ``str``, it would read back as
    a different event."""
    value = event_to_json(event)
    try:
        text = json.dumps(value, ensure_ascii=False)
    except TypeError as exc:
        raise TypeError(f"cannot write {type(event).__name__} as JSON Lines: {exc}") from exc
    try:
        return f"{text}\n".encode()
    except UnicodeEncodeError:
        return f"{json.dumps(value)}\n".encode("ascii")
