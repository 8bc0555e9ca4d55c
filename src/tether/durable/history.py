"""``DurableContext``: a durable run's conversation inside the workflow. Its messages are
rebuilt on replay from the activities' results; with a store, each append is also written there
(a local activity, idempotent by position) so a run that continues as new reads it back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from ..context import MemoryContextStore
from ..messages import Message

__all__ = ["DurableContext", "Writer"]

Writer = Callable[[int, int, Message], Awaitable[int]]
"""Stores a message at a position of the session, as its message number ``index``; returns the
next position."""


class DurableContext(MemoryContextStore):
    """A ``ContextStore`` for one workflow: memory, written through to the store if any."""

    __slots__ = ("_write", "first", "position")

    def __init__(
        self,
        session_id: str,
        messages: Iterable[Message] = (),
        write: Writer | None = None,
        position: int = 0,
        first: int = 0,
    ) -> None:
        super().__init__(messages, session_id=session_id)
        self._write = write
        self.position = position
        self.first = first  # the stored session's number of the first message held here

    async def append(self, message: Message) -> None:
        if self._write is not None:
            index = self.first + len(self._messages)
            self.position = await self._write(self.position, index, message)
        self._messages.append(message)

    async def clear(self) -> None:
        raise TypeError("a durable run's history cannot be cleared; start another workflow")
