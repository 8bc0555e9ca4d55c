"""Tool calls started while the model still answers (``start_tools_early`` with parallel
execution): a call starts once its arguments are complete, that is once a later block of the
response begins, and the dispatch step takes its task over instead of starting it again."""

from __future__ import annotations

import asyncio
from typing import Any

from .dispatch import PROGRESS_BACKLOG, ToolDispatcher, in_task
from .events import (
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolProgress,
    ToolUseStart,
)
from .messages import ToolResultBlock, ToolUseBlock
from .turn import StreamedCall, tool_use

__all__ = ["CompleteCalls", "EarlyCalls"]

_INDEXED = (TextDelta, ReasoningDelta, ToolUseStart, ToolInputDelta)


class CompleteCalls:
    """Follows a turn's events; gives each tool call once its arguments are complete, that is
    once an event of a later block arrives (providers stream blocks one after another)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: dict[int, StreamedCall] = {}

    def see(self, event: StreamEvent) -> list[ToolUseBlock]:
        """The calls ``event`` completes (usually none)."""
        kind = type(event)
        if kind not in _INDEXED:
            return []
        index: int = event.index  # type: ignore[union-attr]
        done = [i for i in self.open if i < index]
        complete = [self.open.pop(i) for i in sorted(done)]
        if kind is ToolUseStart:
            assert isinstance(event, ToolUseStart)
            self.open[index] = StreamedCall(event.tool_use_id, event.name)
        elif kind is ToolInputDelta:
            assert isinstance(event, ToolInputDelta)
            call = self.open.get(index)
            if call is not None:
                call.parts.append(event.partial_json)
        return [tool_use(call) for call in complete if call.id and call.parts]


class EarlyCalls:
    """The calls of one streaming turn started before it ended."""

    __slots__ = ("dispatcher", "done", "progress", "stale", "started", "watch")

    def __init__(self, dispatcher: ToolDispatcher) -> None:
        self.dispatcher = dispatcher
        self.watch = CompleteCalls()
        self.started: dict[str, tuple[ToolUseBlock, asyncio.Future[Any]]] = {}
        self.done: dict[str, ToolResultBlock] = {}  # results of started calls that finished
        self.stale: list[asyncio.Future[Any]] = []  # cancelled: their arguments changed
        self.progress: asyncio.Queue[ToolProgress] = asyncio.Queue(PROGRESS_BACKLOG)

    def see(self, event: StreamEvent) -> None:
        """Take the turn's next event; start the calls it completes."""
        for block in self.watch.see(event):
            # Only arguments that parsed as sent (a repaired prefix could be cut short), and
            # only a first use of an id (a repeated one is renamed when the turn ends).
            if block.raw_arguments is None and block.id not in self.started:
                task = asyncio.ensure_future(in_task(self.dispatcher, block, self.progress))
                self.started[block.id] = (block, task)

    def take(self, block: ToolUseBlock) -> asyncio.Future[Any] | None:
        """The running task of ``block`` if it was started with exactly these arguments; a call
        whose arguments changed after it started is cancelled (the final ones run instead)."""
        found = self.started.pop(block.id, None)
        if found is None:
            return None
        early, task = found
        if early == block:
            return task
        task.cancel()
        self.stale.append(task)
        return None

    async def finish(self, calls: list[ToolUseBlock]) -> dict[str, ToolResultBlock]:
        """The results of the calls that were started, once they end (for a turn whose calls
        are otherwise not run): they ran, so their results stand."""
        for block in calls:
            found = self.started.get(block.id)
            if found is not None and found[0] == block:
                outcome = await found[1]
                del self.started[block.id]
                if type(outcome) is ToolResultBlock:
                    self.done[block.id] = outcome
        await self.stop()
        return self.done

    async def stop(self) -> dict[str, ToolResultBlock]:
        """The turn ends without dispatch (failed, closed, or cut off): cancel what still runs,
        wait for it, and give the results of the calls that did finish."""
        running = [(block, task) for block, task in self.started.values()]
        self.started.clear()
        for _, task in running:
            task.cancel()
        stale, self.stale = self.stale, []
        await asyncio.gather(*(t for _, t in running), *stale, return_exceptions=True)
        for block, task in running:
            if task.cancelled() or task.exception() is not None:
                continue
            if type(task.result()) is ToolResultBlock:
                self.done[block.id] = task.result()
        return self.done
