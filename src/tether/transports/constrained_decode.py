"""Reading a constrained reply (``constrained_format``) as its text streams in (no I/O).

An answer's characters are given as they arrive (the ``"answer"`` string decoded piece by
piece, so the first words show at once); calls are read when the reply is complete. A reply cut
short keeps every call that was complete and gives the one cut off with its arguments as the
text they were (the loop answers that call with an error the model can repair); a reply that is
not the format at all is a ``StreamInterruptedError``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import StreamInterruptedError
from .fields import excerpt

__all__ = ["ListedCall", "ReplyReader"]

_KEY = re.compile(r'\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*')
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_LAX = json.JSONDecoder(strict=False)  # a raw control character in a string is still read
_UNDECIDED = 256  # characters read before a reply with no recognisable start is judged
_QUOTED = 300  # characters of a bad reply quoted in the error

Mode = Literal["start", "answer", "after", "calls", "other"]


@dataclass(frozen=True, slots=True)
class ListedCall:
    """One call of a reply: the tool's name and its arguments as JSON text (complete or not)."""

    name: str
    arguments: str


class ReplyReader:
    """One reply's text, fed as it streams: ``feed`` gives the answer's newly decoded text,
    ``finish`` the rest of the answer and the calls."""

    __slots__ = ("_buf", "_mode", "_pos")

    def __init__(self) -> None:
        self._buf = ""
        self._mode: Mode = "start"
        self._pos = 0  # in "answer": where the undecoded part of the string starts

    @property
    def answering(self) -> bool:
        """Whether the reply is (so far) an answer rather than calls."""
        return self._mode in ("answer", "after")

    def feed(self, delta: str) -> str:
        """Take ``delta``; the answer text it completes ("" for calls or an unfinished start)."""
        self._buf += delta
        if self._mode == "start":
            self._start()
        if self._mode == "answer":
            return self._take()
        return ""

    def _start(self) -> None:
        """Decide from the reply's first key what it is, once that key is whole."""
        found = _KEY.match(self._buf)
        if found is None:
            head = self._buf.lstrip()
            if (head and head[0] != "{") or len(self._buf) > _UNDECIDED:
                self._mode = "other"
            return
        key, end = found.group(1), found.end()
        if key == "calls":
            self._mode = "calls"
        elif key != "answer":
            self._mode = "other"
        elif end < len(self._buf):
            if self._buf[end] == '"':
                self._mode, self._pos = "answer", end + 1
            else:
                self._mode = "other"

    def _take(self) -> str:
        """The answer string's characters that are whole (no escape cut in half)."""
        buf, i, end = self._buf, self._pos, len(self._buf)
        closed = False
        while i < end:
            char = buf[i]
            if char == "\\":
                step = _escape_length(buf, i)
                if i + step > end:
                    break
                i += step
            elif char == '"':
                closed = True
                break
            else:
                i += 1
        piece = _decoded(buf[self._pos : i])
        self._pos = i + 1 if closed else i
        if closed:
            self._mode = "after"
        return piece

    def finish(self) -> tuple[str, list[ListedCall]]:
        """The reply is complete (or cut short): the answer text not yet given, and the calls."""
        if self._mode == "start":
            self._start()
        if self._mode == "answer":  # cut short inside the answer: what arrived is the answer
            return self._take(), []
        if self._mode == "after":
            return "", []
        if self._mode == "calls":
            return "", self._calls()
        return self._other()

    def _calls(self) -> list[ListedCall]:
        try:
            value = _LAX.decode(self._buf)
        except ValueError:
            return self._salvaged()
        listed = value.get("calls") if isinstance(value, dict) else None
        if not isinstance(listed, list) or not listed:
            raise self._bad("its calls are not a list of calls")
        return [self._call(item) for item in listed]

    def _call(self, item: Any) -> ListedCall:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise self._bad("a call has no function name")
        arguments = item.get("arguments", {})
        return ListedCall(item["name"], json.dumps(arguments, ensure_ascii=False))

    def _salvaged(self) -> list[ListedCall]:
        """The calls of a reply cut short: each whole one, then the one cut off (if named)."""
        start = re.compile(r'\s*\{\s*"calls"\s*:\s*\[').match(self._buf)
        if start is None:
            raise self._bad("it was cut off before its list of calls")
        calls, pos, buf = [], start.end(), self._buf
        while True:
            pos = _skip(buf, pos, ", \t\r\n")
            try:
                item, pos = _LAX.raw_decode(buf, pos)
            except ValueError:
                break
            calls.append(self._call(item))
        tail = buf[pos:]
        name = _NAME.search(tail)
        if name is not None:
            arguments = _ARGUMENTS.search(tail, name.end())
            text = tail[arguments.end() :] if arguments else ""
            calls.append(ListedCall(_decoded(name.group(1)), text))
        if not calls:
            raise self._bad("it was cut off before its first call was named")
        return calls

    def _other(self) -> tuple[str, list[ListedCall]]:
        """A reply that did not start as expected: read whole, as an answer or calls."""
        try:
            value = _LAX.decode(self._buf)
        except ValueError:
            raise self._bad("it is not JSON") from None
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            return value["answer"], []
        if isinstance(value, dict) and isinstance(value.get("calls"), list) and value["calls"]:
            return "", [self._call(item) for item in value["calls"]]
        raise self._bad('it is neither {"answer": ...} nor {"calls": [...]}')

    def _bad(self, why: str) -> StreamInterruptedError:
        return StreamInterruptedError(
            f"the model's constrained reply cannot be read: {why}: {excerpt(self._buf, _QUOTED)!r}."
            " Does the server hold replies to a JSON schema (response_format)? If it does not,"
            " use Agent(constrained_calls=False)."
        )


def _escape_length(buf: str, i: int) -> int:
    """How many characters the escape at ``i`` takes (a surrogate pair's two together)."""
    if buf[i + 1 : i + 2] != "u":
        return 2
    code = buf[i + 2 : i + 6]
    if len(code) == 4 and code[:2].lower() in ("d8", "d9", "da", "db"):
        return 12  # a high surrogate waits for its low half
    return 6


def _decoded(raw: str) -> str:
    """A JSON string's inside as text; as it stands when it is not valid."""
    if "\\" not in raw:
        return raw
    try:
        value: str = _LAX.decode(f'"{raw}"')
    except ValueError:
        return raw
    return value


def _skip(buf: str, pos: int, chars: str) -> int:
    while pos < len(buf) and buf[pos] in chars:
        pos += 1
    return pos
