"""``Recorder``: every run traced to a JSON-lines file, no OpenTelemetry needed. One line per
span as it ends (children before their parents); ``tether trace FILE`` reads it back."""

from __future__ import annotations

import json
import secrets
import threading
import time
import weakref
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TextIO

from .middleware import Tracing
from .redact import redact
from .spans import Attributes, Kind, Span, error_kind

__all__ = ["FORMAT", "JsonLinesSink", "Recorder"]

FORMAT = 1  # the "v" of every line


class JsonLinesSink:
    """Spans appended to ``path`` as JSON lines (the file and its directory are created)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: TextIO | None = None

    def start(self, kind: Kind, name: str, parent: Span | None, attributes: Attributes) -> Span:
        mine = parent if isinstance(parent, RecordedSpan) and parent.sink is self else None
        trace = mine.trace if mine is not None else secrets.token_hex(16)
        return RecordedSpan(self, kind, name, trace, mine.id if mine else None, attributes)

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
                weakref.finalize(self, self._file.close)
            self._file.write(line)
            self._file.flush()  # each span is in the file once it ended

    def close(self) -> None:
        """Close the file (a later span opens it again)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


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
    are kept (secrets redacted) unless ``capture_content=False``: the file is the user's own."""

    def __init__(self, path: str | Path, *, capture_content: bool = True) -> None:
        super().__init__(JsonLinesSink(path), capture_content=capture_content)
        self.path = Path(path)
