"""Run controls a caller holds while a run goes on: ``CancellationToken`` and ``Steering``."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import deque
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from ..base.clock import SYSTEM_CLOCK, Clock
from ..base.interrupt import Interrupt, fire_soon
from ..messages import ContentBlock, Message

__all__ = ["CancellationToken", "LinkedToken", "Steering", "Stopped", "until_cancelled"]

T = TypeVar("T")


class CancellationToken:
    """Cooperative cancellation, safe to trigger from any thread or task.

    The loop checks it before each model call and each tool; a model stream or a backoff wait in
    progress is interrupted at once.
    """

    __slots__ = ("_cancelled", "_lock", "_watchers")

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._watchers: list[tuple[asyncio.AbstractEventLoop, Interrupt]] = []

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Ask the run to stop: at its next check point, or at once inside a watched await."""
        with self._lock:
            self._cancelled = True
            watchers, self._watchers = self._watchers, []
        for loop, interrupt in watchers:
            fire_soon(loop, interrupt.fire)

    def watch(self) -> Interrupt | None:
        """An interrupt for the current task that ``cancel()`` fires; None if already cancelled.

        Mark the awaits it may cut short with ``interrupt.inside = True`` and ``settle()`` after
        each; ``unwatch`` when done.
        """
        task = asyncio.current_task()
        assert task is not None, "watch() needs a running task"
        interrupt = Interrupt(task)
        with self._lock:
            if self._cancelled:
                return None
            self._watchers.append((task.get_loop(), interrupt))
        return interrupt

    def unwatch(self, interrupt: Interrupt) -> None:
        """Stop watching (no-op if ``cancel()`` already released it)."""
        with self._lock:
            for i, (_, known) in enumerate(self._watchers):
                if known is interrupt:
                    del self._watchers[i]
                    break

    async def sleep(self, delay: float, clock: Clock = SYSTEM_CLOCK) -> bool:
        """Sleep up to ``delay`` seconds on ``clock``; True if cancelled meanwhile (ends early)."""
        interrupt = self.watch()
        if interrupt is None:
            return True
        outside = interrupt.task.cancelling()  # cancel requests that are not this token's
        interrupt.inside = True
        try:
            await clock.sleep(delay)
        except asyncio.CancelledError:
            if not interrupt.settle() or interrupt.task.cancelling() > outside:
                raise  # another cancel came with ours: it goes on
            return True
        finally:
            self.unwatch(interrupt)
        interrupt.settle()
        return self._cancelled


class Stopped(Exception):
    """An await that ``until_cancelled`` cut short because its token was cancelled."""


async def until_cancelled(awaitable: Awaitable[T], token: CancellationToken) -> T:
    """Await ``awaitable``, cancelling it at once if ``token`` is cancelled meanwhile (then
    ``Stopped``; a cancellation from anywhere else goes on as it came). A tool call awaited so
    stops with its run: an async handler is cancelled, a worker thread is no longer waited for."""
    interrupt = token.watch()
    if interrupt is None:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise Stopped
    outside = interrupt.task.cancelling()  # cancel requests that are not the token's
    interrupt.inside = True
    try:
        result = await awaitable
    except BaseException:
        if interrupt.settle() and interrupt.task.cancelling() <= outside:
            raise Stopped from None
        raise
    finally:
        interrupt.inside = False
        token.unwatch(interrupt)
    interrupt.settle()  # fired as it returned: the value is kept, the cancel withdrawn
    return result


class LinkedToken(CancellationToken):
    """A run's own token: cancelled by its own ``cancel()`` (the run's time limit) or by
    ``outer``'s (the caller's token), which it never cancels itself."""

    __slots__ = ("_outer",)

    def __init__(self, outer: CancellationToken | None) -> None:
        super().__init__()
        self._outer = outer

    @property
    def cancelled(self) -> bool:
        """True once either token was cancelled."""
        return self._cancelled or (self._outer is not None and self._outer.cancelled)

    def watch(self) -> Interrupt | None:
        """An interrupt that either token's ``cancel()`` fires; None if either already was."""
        interrupt = super().watch()
        outer = self._outer
        if interrupt is None or outer is None:
            return interrupt
        with outer._lock:
            if not outer._cancelled:
                outer._watchers.append((interrupt.task.get_loop(), interrupt))
                return interrupt
        super().unwatch(interrupt)
        return None

    def unwatch(self, interrupt: Interrupt) -> None:
        """Stop watching on both tokens."""
        super().unwatch(interrupt)
        if self._outer is not None:
            self._outer.unwatch(interrupt)


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
