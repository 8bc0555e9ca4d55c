"""``Together``: a context whose history reads return together, so two runs started at once both
see the same stored history (two resumes both find the call pending)."""

from __future__ import annotations

import asyncio
from typing import Any

from tether import Message


class Together:
    """``inner``, with each ``get_history`` held until ``ready`` lets every reader go at once."""

    def __init__(self, inner: Any, ready: asyncio.Barrier) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.ready = ready

    async def get_history(self) -> list[Message]:
        history: list[Message] = await self.inner.get_history()
        await self.ready.wait()
        return history

    async def append(self, message: Message) -> None:
        await self.inner.append(message)

    async def fork(self) -> Any:
        return await self.inner.fork()

    async def clear(self) -> None:
        await self.inner.clear()
