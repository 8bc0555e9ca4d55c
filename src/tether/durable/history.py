"""``DurableContext``: a durable run's conversation inside the workflow. Its messages are
rebuilt on replay from the activities' results; with a store, each append is also written there
(a local activity, idempotent by position) so a run that continues as new reads it back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from ..context import MemoryContextStore
from ..messages import Message

__all__ = ["DurableContext", "Writer"]

Writer = Callable[[int, Message], Awaitable[int]]
"""Stores a message at a position of the session; returns the next position."""


class DurableContext:
    """A ``ContextStore`` for one workflow: memory, written through to the store if any."""

    __slots__ = ("_messages", "_session_id", "_write", "position")

    def __init__(
        self,
        session_id: str,
        messages: Iterable[Message] = (),
        write: Writer | None = None,
        position: int = 0,
    ) -> None:
        self._session_id = session_id
        self._messages = list(messages)
        self._write = write
        self.position = position

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def messages(self) -> list[Message]:
        """A copy of the history."""
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    async def append(self, message: Message) -> None:
        if self._write is not None:
            self.position = await self._write(self.position, message)
        self._messages.append(message)

    async def get_history(self) -> list[Message]:
        return list(self._messages)

    async def fork(self) -> MemoryContextStore:
        return MemoryContextStore(self._messages)

    async def clear(self) -> None:
        raise TypeError("a durable run's history cannot be cleared; start another workflow")
