"""Interrupting an await from outside: how a cancellation token stops a stalled model stream and
how the default tool timeout ends an overrunning call, without a timer object per call; and
``survive``, the other way round: an await that no cancellation cuts short.

An ``Interrupt`` cancels its task only while the task is suspended inside the one await the owner
marked (``inside``), so the cancellation always lands where the owner catches it, and ``settle``
tells that cancellation apart from one that came from anywhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["Deadline", "Interrupt", "Overrun", "deadlines", "fire_soon", "survive", "within"]

T = TypeVar("T")


class Interrupt:
    """Cancels ``task`` while it waits inside the marked await; ``settle`` after it.

    ``requested`` stays set once ``fire`` was called, so an owner that was not inside the await
    at that moment sees it before its next one.
    """

    __slots__ = ("fired", "inside", "requested", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.inside = False
        self.fired = False
        self.requested = False

    def fire(self) -> None:
        """Cancel the task if it is inside the marked await (call on the task's loop)."""
        self.requested = True
        if self.inside and not self.fired and not self.task.done():
            self.fired = True
            self.task.cancel()

    def settle(self) -> bool:
        """Leave the marked await; True if this interrupt fired (its cancel request withdrawn)."""
        self.inside = False
        if not self.fired:
            return False
        self.fired = False
        self.task.uncancel()
        return True


class Deadline(Interrupt):
    """An interrupt that fires once ``when`` (loop time) has passed."""

    __slots__ = ("when",)

    def __init__(self, task: asyncio.Task[object], when: float) -> None:
        self.task = task
        self.when = when
        self.inside = True
        self.fired = False
        self.requested = False


class _Deadlines:
    """The live deadlines of one event loop, served by a single timer set to the earliest one."""

    __slots__ = ("_handle", "_live", "_loop", "_next")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._live: dict[Deadline, None] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._next = float("inf")

    def start(self, seconds: float) -> Deadline:
        """Mark the current task as inside an await that may last ``seconds``."""
        task = asyncio.current_task(self._loop)
        assert task is not None
        entry = Deadline(task, self._loop.time() + seconds)
        self._live[entry] = None
        if entry.when < self._next:
            self._schedule(entry.when)
        return entry

    def stop(self, entry: Deadline) -> bool:
        """The await ended; True if the deadline had fired (the call overran)."""
        self._live.pop(entry, None)
        if not entry.fired:
            return False
        return entry.settle()

    def _schedule(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._next = when
        self._handle = self._loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self._handle, self._next = None, float("inf")
        now = self._loop.time()
        earliest = float("inf")
        for entry in list(self._live):
            if entry.when <= now:
                del self._live[entry]
                entry.fire()
            elif entry.when < earliest:
                earliest = entry.when
        if earliest != float("inf"):
            self._schedule(earliest)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Deadlines] = (
    weakref.WeakKeyDictionary()
)


def deadlines() -> _Deadlines:
    """The deadline timer of the running event loop."""
    loop = asyncio.get_running_loop()
    found = _BY_LOOP.get(loop)
    if found is None:
        found = _BY_LOOP[loop] = _Deadlines(loop)
    return found


class Overrun(Exception):
    """An await ``within`` a time limit was cut short by its deadline."""


class within:
    """Await ``coro``, cancelling it if it runs past ``seconds``; raises ``Overrun`` then.

    A deadline is set only once ``coro`` suspends, so a call that finishes at once costs no timer.
    """

    __slots__ = ("coro", "seconds")

    def __init__(self, coro: Coroutine[Any, Any, T], seconds: float) -> None:
        self.coro = coro
        self.seconds = seconds

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        try:
            signal = coro.send(None)
        except StopIteration as done:
            return done.value
        watch = deadlines()
        entry = watch.start(self.seconds)
        outside = entry.task.cancelling()  # cancel requests that are not this deadline's
        try:
            while True:  # what ``yield from coro`` does, by hand, to see how it ends
                try:
                    value = yield signal
                except GeneratorExit:
                    coro.close()
                    raise
                except BaseException as exc:
                    signal = coro.throw(exc)
                else:
                    signal = coro.send(value)
        except StopIteration as done:
            result = done.value
        except BaseException:
            if watch.stop(entry) and entry.task.cancelling() <= outside:
                raise Overrun(self.seconds) from None
            raise  # another cancel came with the deadline's: it goes on
        if watch.stop(entry):  # the coroutine swallowed the cancellation
            raise Overrun(self.seconds)
        return result


def fire_soon(loop: asyncio.AbstractEventLoop, fire: Callable[[], object]) -> None:
    """Run ``fire`` on ``loop`` from any thread (a closed loop is ignored: nothing to interrupt)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fire)


async def survive(awaitable: Awaitable[T]) -> T:
    """Await to the end even if this task is cancelled meanwhile, any number of times; then
    re-raise the cancellation (before the awaitable's own failure, if it failed too). For
    cleanup that must not be cut short (storing results), and writes whose outcome the caller
    must know."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True  # this task was cancelled: wait on for the work
        except BaseException as exc:  # the work failed
            if cancelled:
                raise asyncio.CancelledError from exc
            raise
    if cancelled:
        raise asyncio.CancelledError
    return result
