"""Conversation stores: the ``ContextStore`` protocol and the in-memory ``MemoryContextStore``.

A store is append-only during a run: the loop reads the history once when a run starts, then
only appends. Persistent stores serialise with ``tether.stores.jsonforms``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Iterable
from typing import Protocol, runtime_checkable

from ..messages import Message

__all__ = [
    "ContextReader",
    "ContextStore",
    "MemoryContextStore",
    "SessionOpener",
    "load_context",
    "new_session_id",
]


def new_session_id() -> str:
    """A fresh random session id (128 random bits as 32 hex digits)."""
    return os.urandom(16).hex()


@runtime_checkable
class ContextStore(Protocol):
    """Where one conversation's messages live."""

    @property
    def session_id(self) -> str:
        """The conversation's id."""
        ...

    async def append(self, message: Message) -> None:
        """Add one message at the end."""
        ...

    async def get_history(self) -> list[Message]:
        """All messages, oldest first (a list the caller may keep; the store does not change it).
        The one way to read a conversation back, whatever keeps it."""
        ...

    async def fork(self) -> ContextStore:
        """An independent copy under a new session id."""
        ...

    async def clear(self) -> None:
        """Remove every message."""
        ...


@runtime_checkable
class ContextReader(Protocol):
    """A store that can load only what a model call needs: from where the last compaction
    record's kept messages begin (SQLite and PostgreSQL stores read nothing older)."""

    async def get_context(self) -> list[Message]:
        """The stored messages from the last compaction's kept ones on (all, when none)."""
        ...


def load_context(store: ContextStore) -> Awaitable[list[Message]]:
    """What a run reads when it opens: ``get_context()`` where the store has one, else the
    whole history (``tether.loop.history_view.visible`` makes either the model's view)."""
    reader = getattr(store, "get_context", None)
    return reader() if reader is not None else store.get_history()


@runtime_checkable
class SessionOpener(Protocol):
    """What opens one conversation by id: every tether store, or a store of the caller's own
    (``AgentSession(store=...)`` tells it from a snapshot keeper by its ``open``)."""

    async def open(self, session_id: str) -> ContextStore:
        """The conversation ``session_id`` (made empty when the store does not know it)."""
        ...


class MemoryContextStore:
    """A ``ContextStore`` held in memory."""

    __slots__ = ("_messages", "_session_id")

    def __init__(self, messages: Iterable[Message] = (), *, session_id: str | None = None) -> None:
        self._messages: list[Message] = list(messages)
        self._session_id = session_id

    @property
    def session_id(self) -> str:
        if self._session_id is None:  # made on first use: most runs never ask
            self._session_id = new_session_id()
        return self._session_id

    @property
    def messages(self) -> list[Message]:
        """A copy of the history, for synchronous inspection: the in-memory store's convenience
        (a stored session, with a store to read, has ``await get_history()`` only, as this has)."""
        return list(self._messages)

    async def append(self, message: Message) -> None:
        self._messages.append(message)

    async def get_history(self) -> list[Message]:
        return list(self._messages)

    async def fork(self) -> MemoryContextStore:
        # Messages are immutable, so sharing them between the copies is safe.
        return MemoryContextStore(self._messages)

    async def clear(self) -> None:
        self._messages.clear()

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"MemoryContextStore(session_id={self.session_id!r}, messages={len(self._messages)})"
