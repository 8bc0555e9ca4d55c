"""``Pulse``: an activity's heartbeats, each carrying what its call shows so far (``live``).

Batched, never one per token: the first news after a quiet spell goes out at once, more news at
most every ``FLUSH`` seconds (what came between travels together).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import Any

from temporalio import activity

from .live import FLUSH

__all__ = ["Pulse"]


class Pulse:
    """Heartbeats the running activity with ``details()``: after ``news()``, and every
    ``keepalive`` seconds without news (None: only after news), while the block runs."""

    __slots__ = ("_changed", "_task", "details", "keepalive")

    def __init__(self, details: Callable[[], Any], keepalive: float | None = None) -> None:
        self.details = details
        self.keepalive = keepalive
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def news(self) -> None:
        """Something new to show: heartbeat soon."""
        self._changed.set()

    async def __aenter__(self) -> Pulse:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.wait({self._task})  # ended; a cancel of this task still goes on up

    async def _beat(self) -> None:
        changed = self._changed
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for swallows a cancel that
            # comes as the event is set (news just before the block ends), and the loop would
            # beat on for ever, so the activity never finishes
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.keepalive):
                    await changed.wait()
            changed.clear()
            activity.heartbeat(self.details())
            await asyncio.sleep(FLUSH)
