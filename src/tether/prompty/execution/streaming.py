"""§10.1's ``PromptyStream``: the chunks of a streamed answer as they arrive, kept in ``items``
and given to the tracer as one ``PromptyStream`` span when the stream is exhausted.

Nothing runs until the stream is iterated. It is iterated once: ``async for`` on the caller's
event loop (``async with stream:`` or ``aclose()`` stops the producer after an early ``break``),
or ``for`` from sync code (the producer then runs on a fresh loop in a worker thread, and leaving
the loop early cancels it).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar

from ...base.interrupt import fire_soon
from ..tracing.tracer import Tracer

__all__ = ["PromptyStream"]

T = TypeVar("T")
_END = object()


class PromptyStream(Generic[T]):
    """A one-shot stream of chunks made by ``produce`` (an async generator function).

    ``result`` and ``messages`` are what the producer leaves once the stream is exhausted (the
    processed answer and the conversation, for a streamed ``turn``)."""

    def __init__(self, produce: Callable[[], AsyncGenerator[T, None]]) -> None:
        self._produce = produce
        self._claimed = False
        self._running: AsyncGenerator[T, None] | None = None
        self.items: list[T] = []
        self.result: Any = None
        self.messages: list[Any] = []

    def _claim(self) -> None:
        if self._claimed:
            raise RuntimeError("a PromptyStream can be iterated only once (see .items)")
        self._claimed = True

    def __aiter__(self) -> AsyncIterator[T]:
        self._claim()
        self._running = self._iterate()
        return self._running

    async def aclose(self) -> None:
        """Stop the producer now (after an early ``break``; ``async with`` does it for you)."""
        if self._running is not None:
            await self._running.aclose()

    async def __aenter__(self) -> PromptyStream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _iterate(self) -> AsyncGenerator[T, None]:
        source = self._produce()
        try:
            async for item in source:
                self.items.append(item)
                yield item
        finally:
            await source.aclose()
        self._flush()

    def __iter__(self) -> Iterator[T]:
        self._claim()
        return self._iterate_sync()

    def _iterate_sync(self) -> Iterator[T]:
        pump = _Pump(self._produce)
        pump.start()
        try:
            while (item := pump.next()) is not _END:
                self.items.append(item)
                yield item
        finally:
            pump.stop()
        self._flush()

    def _flush(self) -> None:
        if Tracer.active():
            with Tracer.start("PromptyStream") as emit:
                emit("result", list(self.items))


class _Pump:
    """Runs an async producer on its own loop in a worker thread, handing items over a queue."""

    def __init__(self, produce: Callable[[], AsyncGenerator[Any, None]]) -> None:
        self._produce = produce
        self._queue: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prompty-stream", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def next(self) -> Any:
        """The next item; ``_END`` when the producer is done; its error raised here."""
        ok, value = self._queue.get()
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        """Cancel the producer if it is still going, and wait for the thread."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not task.done():
            fire_soon(loop, task.cancel)  # the loop may close meanwhile: nothing to cancel then
        self._thread.join()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._ready.set()
        try:
            async for item in self._produce():
                self._queue.put((True, item))
        except asyncio.CancelledError:
            pass
        except BaseException as error:  # handed to the consumer, raised there
            self._queue.put((False, error))
            return
        self._queue.put((True, _END))
