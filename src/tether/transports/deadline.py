"""The total time one model call may take, kept without wrapping the caller's ``await``s."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["Overdue", "RequestDeadline"]

T = TypeVar("T")


class Overdue(Exception):
    """The call's deadline passed (becomes a ``TransportError`` where the call can say more)."""


class RequestDeadline:
    """The total time one model call may take, request to last event.

    It cancels the call's task only while the call awaits the provider, never while its caller
    holds an event: a timeout scope around ``yield`` would cancel whatever the caller awaits.
    """

    __slots__ = ("_fired", "_handle", "_inside", "_loop", "_task", "when")

    def __init__(self, seconds: float | None) -> None:
        self._loop = asyncio.get_running_loop()
        self.when = math.inf if seconds is None else self._loop.time() + seconds
        self._handle = None if seconds is None else self._loop.call_at(self.when, self._fire)
        self._task: asyncio.Task[Any] | None = None
        self._inside = False
        self._fired = False

    def _fire(self) -> None:
        task = self._task
        if self._inside and task is not None and not task.done():
            self._fired = True
            task.cancel()

    async def wait(self, step: Awaitable[T]) -> T:
        """``await step``, or raise ``Overdue`` if the deadline passes first (or has passed)."""
        if self._loop.time() >= self.when:
            if inspect.iscoroutine(step):
                step.close()
            raise Overdue
        self._task = asyncio.current_task()
        self._inside = True
        try:
            return await step
        except BaseException:  # after a fire, whatever the step made of the cancel is overdue
            if not self._fired or self._task is None:
                raise
            self._fired = False
            self._task.uncancel()
            raise Overdue from None
        finally:
            self._inside = False

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(self.when - self._loop.time(), 0.0)

    def close(self) -> None:
        """The call is over: drop the timer."""
        if self._handle is not None:
            self._handle.cancel()
