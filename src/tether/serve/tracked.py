"""A served run's session as the engine writes it: the stored session, and what the run read and
appended kept beside it, so the server knows where each message goes (its stored id, before it
is stored) and can show the session as it stands without reading the store again."""

from __future__ import annotations

from ..context import ContextStore
from ..messages import Message, ToolResultBlock
from ..stores.base import StoredContext

__all__ = ["Tracked"]


class Tracked:
    """``stored`` (a ``ContextStore``) for one run: every append counted and kept; the first
    read kept with where it begins (a store that reads from the last compaction on reads a
    tail). Everything else is the stored session's own."""

    __slots__ = ("_appended", "_first", "_read", "_start", "stored")

    def __init__(self, stored: StoredContext, length: int) -> None:
        self.stored = stored
        self._start = length  # the session's length when the run began (not the store's
        # position: a clear moves it on, and a file store counts bytes)
        self._read: list[Message] | None = None
        self._first = self._start  # where the read begins in the session
        self._appended: list[Message] = []

    @property
    def session_id(self) -> str:
        return self.stored.session_id

    @property
    def position(self) -> int:
        """Where the next message goes: its stored id is ``s<position>``."""
        return self._start + len(self._appended)

    async def append(self, message: Message) -> None:
        await self.stored.append(message)
        self._appended.append(message)

    async def get_context(self) -> list[Message]:
        return self._took(await self.stored.get_context())

    async def get_history(self) -> list[Message]:
        return self._took(await self.stored.get_history())

    async def fork(self) -> ContextStore:
        return await self.stored.fork()

    async def clear(self) -> None:
        await self.stored.clear()

    def _took(self, messages: list[Message]) -> list[Message]:
        if self._read is None and not self._appended:
            self._read = list(messages)
            self._first = self._start - len(messages)
        return messages

    def shown(self) -> tuple[list[Message], int]:
        """The session as this run knows it (what it read, then what it appended) and the
        position of its first message."""
        return [*(self._read or ()), *self._appended], self._first

    def result_id(self, call: str) -> str | None:
        """The stored id of ``call``'s result when this run has stored it (a resume runs a call
        and stores its result before its events are read)."""
        for at, message in enumerate(self._appended, start=self._start):
            results = [b for b in message.content if type(b) is ToolResultBlock]
            for n, block in enumerate(results):
                if block.tool_use_id == call:
                    return f"s{at}.{n}"
        return None
