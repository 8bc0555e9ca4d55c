"""A recorded trace (``Recorder`` JSON lines) read back: its spans as a tree, and a summary of
its tokens. The file is untrusted input: sizes are capped and lines that are not spans left out."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SpanRecord", "Summary", "load_trace", "summarize", "walk"]

MAX_TRACE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One recorded span, as the recorder wrote it."""

    trace: str
    span: str
    parent: str | None
    kind: str
    name: str
    start: float
    end: float
    attributes: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None
    children: list[SpanRecord] = field(default_factory=list, compare=False, repr=False)

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


def load_trace(path: Path) -> tuple[list[SpanRecord], int]:
    """The root spans of ``path`` (children attached, in start order) and how many lines were
    not spans (damaged, too long, or of another format); ``ValueError`` for a file that is
    too large or not a regular file (a FIFO or a device is never read)."""
    spans: list[SpanRecord] = []
    skipped = 0
    for line in _lines(path):
        record = None if line is None else _record(line.decode("utf-8", errors="replace"))
        if record is None:
            skipped += line is None or line.strip() != b""
        else:
            spans.append(record)
    return _tree(spans), skipped


def _lines(path: Path) -> Iterator[bytes | None]:
    """The lines of the regular file ``path``, None for one over ``MAX_LINE_BYTES`` (never held
    whole); at most ``MAX_TRACE_BYTES`` are read, however the file grows meanwhile."""
    fd = os.open(path, os.O_RDONLY | _O_NONBLOCK)  # a FIFO opens at once, and is refused
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if info.st_size > MAX_TRACE_BYTES:
            raise _too_large(path)
        file = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with file:
        left = MAX_TRACE_BYTES
        while line := file.readline(MAX_LINE_BYTES + 1):
            left -= len(line)
            too_long = len(line) > MAX_LINE_BYTES
            while too_long and line and not line.endswith(b"\n") and left >= 0:
                line = file.readline(_SKIP_CHUNK)  # the rest of the line, read and dropped
                left -= len(line)
            if left < 0:
                raise _too_large(path)
            yield None if too_long else line


def _too_large(path: Path) -> ValueError:
    return ValueError(f"{path} is larger than {MAX_TRACE_BYTES // 2**20} MiB")


def _record(line: str) -> SpanRecord | None:
    try:
        data = json.loads(line)
        if not isinstance(data, dict) or data.get("v") != 1:
            return None
        attributes, events = data.get("attributes") or {}, data.get("events") or []
        if not isinstance(attributes, dict) or not isinstance(events, list):
            return None
        return SpanRecord(
            str(data["trace"]),
            str(data["span"]),
            None if data.get("parent") is None else str(data["parent"]),
            str(data["kind"]),
            str(data["name"]),
            float(data["start"]),
            float(data["end"]),
            attributes,
            tuple(e for e in events if isinstance(e, dict)),
            None if data.get("error") is None else str(data["error"]),
        )
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # too deep, too big
        return None


def _tree(spans: list[SpanRecord]) -> list[SpanRecord]:
    by_id = {s.span: s for s in spans}
    roots: list[SpanRecord] = []
    ordered = sorted(spans, key=lambda s: s.start)
    for span in ordered:
        parent = by_id.get(span.parent) if span.parent is not None else None
        (parent.children if parent is not None and parent is not span else roots).append(span)
    shown = {id(s) for _, s in walk(roots)}
    for span in ordered:  # spans in a loop of parents reach no root: the first becomes one
        if id(span) not in shown:
            by_id[span.parent or ""].children.remove(span)
            roots.append(span)
            shown.update(id(s) for _, s in walk([span]))
    return roots


def walk(spans: Iterable[SpanRecord]) -> Iterable[tuple[int, SpanRecord]]:
    """Every span with its depth, parents before children, in start order (no recursion: a
    trace may nest deeply)."""
    stack = [(0, span) for span in reversed(list(spans))]
    while stack:
        depth, span = stack.pop()
        yield depth, span
        stack.extend((depth + 1, child) for child in reversed(span.children))


@dataclass(slots=True)
class Summary:
    """Tokens per model over the model calls of a trace, and what they cost at ``prices``."""

    tokens: dict[str, list[int]] = field(default_factory=dict)  # model -> [input, output]
    calls: int = 0
    tool_calls: int = 0
    errors: int = 0

    def cost(self, prices: Mapping[str, tuple[float, float]]) -> float | None:
        """USD at ``prices`` (per million input/output tokens); None if a model has no price."""
        total = 0.0
        for model, (given, taken) in self.tokens.items():
            if model not in prices:
                return None
            per_in, per_out = prices[model]
            total += (given * per_in + taken * per_out) / 1e6
        return total


def summarize(roots: Iterable[SpanRecord]) -> Summary:
    summary = Summary()
    for _, span in walk(roots):
        summary.errors += span.error is not None
        if span.kind == "tool":
            summary.tool_calls += 1
        if span.kind != "model":
            continue
        summary.calls += 1
        a = span.attributes
        named = span.name.removeprefix("chat ")
        model = str(a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or named)
        counts = summary.tokens.setdefault(model, [0, 0])
        counts[0] += _int(a.get("gen_ai.usage.input_tokens"))
        counts[1] += _int(a.get("gen_ai.usage.output_tokens"))
    return summary


_MAX_COUNT = 2**53  # a token count past any float's exact range is damage, not a count


def _int(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT:
        return value
    return 0
