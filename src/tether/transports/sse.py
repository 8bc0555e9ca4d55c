"""Server-sent events framing, I/O-free: ``feed(bytes) -> [SSEEvent]``, ``flush()`` at the end.

Lines split on CR, LF and CRLF only (never on U+2028 and friends, which are legal inside JSON).
One leading byte order mark is dropped, as the WHATWG parsing rules say.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]

_LINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (``"message"`` unless named), data lines joined by LF."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns a byte stream into events as they complete, however the bytes were chunked."""

    __slots__ = ("_after_cr", "_buffer", "_data", "_decoder", "_event", "_id", "_retry")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._buffer = ""
        self._after_cr = False
        self._data: list[str] = []
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
        self._after_cr = text.endswith("\r")
        text = self._buffer + text
        lines = _LINES.split(text) if "\r" in text else text.split("\n")
        self._buffer = lines.pop()
        out: list[SSEEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                out.append(event)
        return out

    def flush(self) -> list[SSEEvent]:
        """The end of the stream: dispatch what is pending, even without a closing blank line."""
        tail = self._decoder.decode(b"", final=True)
        out: list[SSEEvent] = []
        for line in [*_LINES.split(self._buffer + tail), ""]:
            event = self._line(line)
            if event is not None:
                out.append(event)
        self._buffer = ""
        return out

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data), self._id, self._retry)
            self._data = []
            self._event = ""
            return event
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None
