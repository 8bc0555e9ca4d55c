"""Run controls a caller holds while a run goes on: ``CancellationToken`` and ``Steering``."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterable

from .messages import ContentBlock, Message

__all__ = ["CancellationToken", "Steering"]


class CancellationToken:
    """Cooperative cancellation, safe to trigger from any thread or task.

    The loop checks it before each model call and each tool; a backoff wait ends at once.
    """

    __slots__ = ("_cancelled", "_lock", "_waiters")

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Ask the run to stop at its next check point."""
        with self._lock:
            self._cancelled = True
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_resolve, fut)

    async def sleep(self, delay: float) -> bool:
        """Sleep up to ``delay`` seconds; return True if cancelled meanwhile (early)."""
        if self._cancelled:
            return True
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._cancelled:
                return True
            self._waiters.append((loop, fut))
        try:
            await asyncio.wait_for(asyncio.shield(fut), delay)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if (loop, fut) in self._waiters:
                    self._waiters.remove((loop, fut))
        return self._cancelled


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Steering:
    """A queue of user messages injected into a running loop at the top of its next iteration.

    ``send`` is safe from any thread or task; ``drain`` takes everything queued, atomically.
    """

    __slots__ = ("_lock", "_queue")

    def __init__(self) -> None:
        self._queue: deque[Message] = deque()
        self._lock = threading.Lock()

    def send(self, message: str | Message | Iterable[ContentBlock]) -> None:
        """Queue a user message (text, blocks, or a ready ``Message`` with role user)."""
        if not isinstance(message, Message):
            message = Message("user", message)
        elif message.role != "user":
            raise ValueError("steering messages must have role 'user'")
        with self._lock:
            self._queue.append(message)

    def drain(self) -> list[Message]:
        """Remove and return every queued message, oldest first."""
        with self._lock:
            items = list(self._queue)
            self._queue.clear()
        return items

    @property
    def has_pending(self) -> bool:
        """True when messages wait to be injected."""
        return bool(self._queue)
