"""Server-sent events framing, I/O-free: ``feed(bytes) -> [SSEEvent]``, ``flush()`` at the end.

Lines split on CR, LF and CRLF only (never on U+2028 and friends, which are legal inside JSON).
One leading byte order mark is dropped, as the WHATWG parsing rules say. A line, or one event's
data, longer than ``max_event_bytes`` is refused with a ``StreamInterruptedError``.
"""

from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass

from ..errors import StreamInterruptedError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEDecoder", "SSEEvent"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The most one line or one event's data may take unless told otherwise."""

_LINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (``"message"`` unless named), data lines joined by LF."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns a byte stream into events as they complete, however the bytes were chunked.

    An unfinished line is kept as a list of pieces, joined once when the line ends, so a long line
    costs linear time however finely it arrives. Sizes are counted in decoded characters: the
    bytes, for the ASCII JSON providers send (a non-ASCII character takes up to four).
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_decoder",
        "_event",
        "_full",
        "_id",
        "_limit",
        "_pending",
        "_pending_size",
        "_retry",
        "_room",
    )

    def __init__(self, max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes is not None and max_event_bytes < 1:
            raise ValueError("max_event_bytes must be >= 1 (or None for no limit)")
        self._limit: float = math.inf if max_event_bytes is None else max_event_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._pending: list[str] = []
        self._pending_size = 0
        self._after_cr = False
        self._data: list[str] = []
        self._full = self._limit + 1  # room for an event's data lines, each with its LF
        self._room = self._full
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Take the next bytes; return the events they complete."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._after_cr and text[0] == "\n":  # the LF of a CRLF split across chunks
            text = text[1:]
            if not text:
                self._after_cr = False
                return []
        self._after_cr = text[-1] == "\r"
        if "\r" in text:
            lines = _LINES.split(text)
        elif "\n" in text:
            lines = text.split("\n")
        else:
            self._hold(text)
            return []
        pending = self._pending
        if pending:
            pending.append(lines[0])
            lines[0] = "".join(pending)
            pending.clear()
        tail = lines.pop()
        self._pending_size = len(tail)
        if tail:
            if self._pending_size > self._limit:
                raise self._too_big()
            pending.append(tail)
        return self._lines(lines)

    def flush(self) -> list[SSEEvent]:
        """The end of the stream: dispatch what is pending, even without a closing blank line."""
        self._pending.append(self._decoder.decode(b"", final=True))
        tail = "".join(self._pending)
        self._pending = []
        self._pending_size = 0
        return self._lines([*_LINES.split(tail), ""])

    def _hold(self, piece: str) -> None:
        """Keep the start of an unfinished line."""
        self._pending_size += len(piece)
        if self._pending_size > self._limit:
            raise self._too_big()
        self._pending.append(piece)

    def _too_big(self) -> StreamInterruptedError:
        return StreamInterruptedError(
            f"an SSE event exceeded {self._limit} bytes (max_event_bytes); "
            "the provider's stream was not read further"
        )

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        """Apply complete lines; return the events they dispatch."""
        out: list[SSEEvent] = []
        data, room = self._data, self._room
        for line in lines:
            if not line:  # a blank line dispatches the event, if it has data
                if data:
                    out.append(
                        SSEEvent(self._event or "message", "\n".join(data), self._id, self._retry)
                    )
                    data = self._data = []
                    room = self._full
                self._event = ""
                continue
            if line[0] == ":":
                continue
            name, sep, value = line.partition(":")
            if sep and value[:1] == " ":
                value = value[1:]
            if name == "data":
                room -= len(value) + 1  # with the LF that joins it to the next
                if room < 0:
                    raise self._too_big()
                data.append(value)
            else:
                self._field(name, value)
        self._room = room
        return out

    def _field(self, name: str, value: str) -> None:
        if name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit() and len(value) < 19:
            self._retry = int(value)
