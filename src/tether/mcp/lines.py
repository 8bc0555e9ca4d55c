"""The newline-delimited messages of a stdio MCP server, split in linear time and bounded: a line
longer than the limit is dropped as it streams by (only its first and last bytes are kept, to
find out which request it answered)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .limits import MAX_MESSAGE

__all__ = ["Lines", "Oversize"]

_EDGE = 256  # bytes kept of each end of a line that is too long
_ID = rb'(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_ID_FIRST = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID)
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _ID + rb"\s*\}\s*\Z")


@dataclass(frozen=True, slots=True)
class Oversize:
    """A line that was longer than the limit: its size, and its request id if one was readable
    (the envelope's first key after ``jsonrpc``, or its last)."""

    size: int
    id: int | str | None


class Lines:
    """Feed bytes as they come; get each complete line (without its newline) or ``Oversize``."""

    __slots__ = ("_buffer", "_head", "_limit", "_size", "_tail")

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._size = 0  # of the line being dropped; 0 while the line still fits
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        """The lines that ``chunk`` completes."""
        done: list[bytes | Oversize] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(chunk[start : len(chunk) if end < 0 else end])
            if end < 0:
                return done
            done.append(self._finish())
            start = end + 1

    def _add(self, piece: bytes) -> None:
        if self._size:
            self._size += len(piece)
            self._tail = (self._tail + piece[-_EDGE:])[-_EDGE:]
        elif len(self._buffer) + len(piece) > self._limit:
            self._size = len(self._buffer) + len(piece)
            self._head = bytes((self._buffer + piece[:_EDGE])[:_EDGE])
            self._tail = (bytes(self._buffer[-_EDGE:]) + piece[-_EDGE:])[-_EDGE:]
            self._buffer.clear()
        else:
            self._buffer += piece

    def _finish(self) -> bytes | Oversize:
        if not self._size:
            line = bytes(self._buffer)
            self._buffer.clear()
            return line
        found = _ID_FIRST.search(self._head) or _ID_LAST.search(self._tail)
        oversize = Oversize(self._size, None if found is None else _id(found.group(1)))
        self._size, self._head, self._tail = 0, b"", b""
        return oversize


def _id(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None
