"""``Recorder``: every run traced to a JSON-lines file, no OpenTelemetry needed. One line per
span as it ends (children before their parents); ``tether trace FILE`` reads it back.

Tracing never fails the run it traces: a file that cannot be written (a full disk, a bad path)
is reported once, to ``on_failure`` or as a ``TraceWriteWarning``, and later spans are dropped."""

from __future__ import annotations

import json
import secrets
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from .lines import LineFile
from .middleware import Tracing
from .redact import redact
from .spans import Attributes, Kind, Span, error_kind

__all__ = ["FORMAT", "FailureHandler", "JsonLinesSink", "Recorder", "TraceWriteWarning"]

FORMAT = 1  # the "v" of every line

FailureHandler = Callable[[Exception], None]


class TraceWriteWarning(RuntimeWarning):
    """A trace file could not be written: the run went on, its later spans were dropped."""


class JsonLinesSink:
    """Spans appended to ``path`` as JSON lines (the file and its directory are created).
    The first failure to write goes to ``on_failure`` (default: a ``TraceWriteWarning``); from
    then on spans are dropped."""

    def __init__(self, path: str | Path, *, on_failure: FailureHandler | None = None) -> None:
        self.path = Path(path)
        self.on_failure = on_failure
        self.failure: Exception | None = None
        self._file = LineFile(self.path)
        self._lock = threading.Lock()

    def start(self, kind: Kind, name: str, parent: Span | None, attributes: Attributes) -> Span:
        mine = parent if isinstance(parent, RecordedSpan) and parent.sink is self else None
        trace = mine.trace if mine is not None else secrets.token_hex(16)
        return RecordedSpan(self, kind, name, trace, mine.id if mine else None, attributes)

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one line; never raises (see the class)."""
        if self.failure is not None:
            return
        try:
            line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
            self._file.append(line.encode("utf-8", errors="replace"))
        except Exception as exc:  # observability must not fail the run: reported, not raised
            self._failed(exc)

    def close(self) -> None:
        """Close the file (a later span opens it again)."""
        self._file.close()

    def _failed(self, exc: Exception) -> None:
        with self._lock:  # spans end on several threads: one report all the same
            if self.failure is not None:
                return
            self.failure = exc
        self._file.close()
        if self.on_failure is not None:
            self.on_failure(exc)
            return
        message = f"the trace could not be written to {self.path} ({exc}); later spans are dropped"
        warnings.warn(TraceWriteWarning(message), stacklevel=2)


class RecordedSpan:
    """A span kept in memory until it ends, then written whole."""

    __slots__ = ("attributes", "events", "id", "kind", "name", "parent", "sink", "start", "trace")

    def __init__(
        self,
        sink: JsonLinesSink,
        kind: Kind,
        name: str,
        trace: str,
        parent: str | None,
        attributes: Attributes,
    ) -> None:
        self.sink, self.kind, self.name, self.trace, self.parent = sink, kind, name, trace, parent
        self.id = secrets.token_hex(8)
        self.start = time.time()
        self.attributes = dict(attributes)
        self.events: list[dict[str, Any]] = []

    def set(self, attributes: Attributes) -> None:
        self.attributes.update(attributes)

    def event(self, name: str, attributes: Attributes) -> None:
        self.events.append({"name": name, "time": time.time(), "attributes": dict(attributes)})

    def active(self) -> AbstractContextManager[object]:
        return nullcontext()

    def end(self, error: BaseException | str | None = None) -> None:
        end = time.time()
        record: dict[str, Any] = {
            "v": FORMAT,
            "trace": self.trace,
            "span": self.id,
            "parent": self.parent,
            "kind": self.kind,
            "name": self.name,
            "start": self.start,
            "end": end,
            "attributes": self.attributes,
            "events": self.events,
            "status": "ok" if error is None else "error",
        }
        if error is not None:
            record["error"] = _describe(error)
        self.sink.write(record)


def _describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    kind = error_kind(error)
    return kind if kind == "cancelled" else redact(f"{kind}: {error}")[:2000]


class Recorder(Tracing):
    """Trace every run to the JSON-lines file ``path``. Prompts, answers, arguments and results
    are kept (secrets redacted) unless ``capture_content=False``: the file is the user's own.
    A file that cannot be written is reported once (``on_failure``, else a warning); the runs
    go on without it."""

    def __init__(
        self,
        path: str | Path,
        *,
        capture_content: bool = True,
        on_failure: FailureHandler | None = None,
    ) -> None:
        self.recording = JsonLinesSink(path, on_failure=on_failure)
        super().__init__(self.recording, capture_content=capture_content)
        self.path = Path(path)

    @property
    def failure(self) -> Exception | None:
        """Why the file could not be written, if it could not (spans are dropped since)."""
        return self.recording.failure
