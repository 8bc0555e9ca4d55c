"""``ResourceSubscription``: the updates of one subscribed resource, as an async iterator and, if
given, a callback. An update is a level trigger ("it changed, read it again if you care"), so
updates that arrive before the iterator asks are one: a server's storm of them costs nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Self

__all__ = ["OnUpdate", "ResourceSubscription"]

log = logging.getLogger("tether.mcp")

OnUpdate = Callable[[str], object]
"""Told the resource's URI each time the server says it changed (on the event loop: keep it
short, or start a task)."""


class ResourceSubscription:
    """Updates of the resource at ``uri``: ``async for uri in subscription`` yields its URI once
    for each time it changed since the last (read it again then), ``on_update(uri)`` hears of
    each update as it arrives. Iteration ends when the subscription is closed (``close()``,
    leaving ``async with``, or leaving the server); it raises ``McpError`` when the connection
    it lived on was lost (subscribe again)."""

    def __init__(
        self, uri: str, on_update: OnUpdate | None, stop: Callable[[], Awaitable[None]]
    ) -> None:
        self.uri = uri
        self._on_update = on_update
        self._stop = stop
        self._changed = asyncio.Event()
        self._ended = False
        self._failure: BaseException | None = None

    def updated(self) -> None:
        """The server said the resource changed."""
        if self._ended:
            return
        self._changed.set()
        if self._on_update is not None:
            try:
                self._on_update(self.uri)
            except Exception:  # the application's callback: never the connection's problem
                log.exception("on_update for %s raised", self.uri)

    def end(self, failure: BaseException | None = None) -> None:
        """No more updates will come (``failure``: why, raised to the iterator)."""
        if not self._ended:
            self._ended, self._failure = True, failure
            self._changed.set()

    @property
    def closed(self) -> bool:
        """Whether no more updates will come."""
        return self._ended

    async def close(self) -> None:
        """Stop the subscription (the server is told, where its era has a way to)."""
        if not self._ended:
            self.end()
            await self._stop()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> str:
        await self._changed.wait()
        if self._ended:
            if self._failure is not None:
                raise self._failure
            raise StopAsyncIteration
        self._changed.clear()
        return self.uri

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ResourceSubscription({self.uri!r}, closed={self._ended})"
