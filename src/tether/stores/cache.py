"""Histories a store read or wrote lately, so the next load of a session reads only what was
appended since (its messages are immutable, so they can be shared). An entry is only a hint:
the store checks it against the session's row (created time and first position) on every
load, so another process's clear, delete or appends are always seen."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..messages import Message

__all__ = ["Cached", "HistoryCache"]


OVERHEAD = 200  # bytes counted per message besides its stored body (the objects around it)


@dataclass(slots=True)
class Cached:
    """The messages of a session from position ``first``, as of some moment, and about how
    many bytes they hold."""

    created: float
    first: int
    messages: list[Message]
    size: int

    @property
    def end(self) -> int:
        return self.first + len(self.messages)


class HistoryCache:
    """Up to ``limit`` bytes of messages in all (their stored size), least recently used first
    out; safe across threads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[str, Cached] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, session: str) -> Cached | None:
        """A copy of the entry of ``session``, if there is one."""
        with self._lock:
            found = self._entries.get(session)
            if found is None:
                return None
            self._entries.move_to_end(session)
            return Cached(found.created, found.first, list(found.messages), found.size)

    @property
    def size(self) -> int:
        """The bytes held now."""
        return self._size

    def put(
        self, session: str, created: float, first: int, messages: list[Message], size: int
    ) -> None:
        """Keep (a copy of) ``messages`` (``size`` bytes stored) as the history of ``session``
        from ``first``."""
        size += OVERHEAD * len(messages)
        if size > self.limit:
            self.drop(session)
            return
        with self._lock:
            self._remove(session)
            self._entries[session] = Cached(created, first, list(messages), size)
            self._size += size
            while self._size > self.limit:
                _, old = self._entries.popitem(last=False)
                self._size -= old.size

    def extend(self, session: str, position: int, message: Message, size: int) -> None:
        """``message`` (``size`` bytes stored) was appended at ``position``: add it if the
        entry ends right there and it fits."""
        size += OVERHEAD
        with self._lock:
            found = self._entries.get(session)
            if found is not None and found.end == position and self._size + size <= self.limit:
                found.messages.append(message)
                found.size += size
                self._size += size

    def drop(self, session: str | None = None) -> None:
        """Forget ``session`` (every session when None)."""
        with self._lock:
            if session is None:
                self._entries.clear()
                self._size = 0
            else:
                self._remove(session)

    def _remove(self, session: str) -> None:
        gone = self._entries.pop(session, None)
        if gone is not None:
            self._size -= gone.size
