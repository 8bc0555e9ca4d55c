"""Tool calls started while the model still answers (``start_tools_early`` with parallel
execution): a call starts once its arguments are complete, that is once a later block of the
response begins, and the dispatch step takes its task over instead of starting it again."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from .dispatch import ToolDispatcher, in_task
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
        complete = [tool_use(self.open.pop(i)) for i in sorted(done)]
        if kind is ToolUseStart:
            assert isinstance(event, ToolUseStart)
            self.open[index] = StreamedCall(event.tool_use_id, event.name)
        elif kind is ToolInputDelta:
            assert isinstance(event, ToolInputDelta)
            call = self.open.get(index)
            if call is not None:
                call.parts.append(event.partial_json)
        return [block for block in complete if block.id]


class EarlyCalls:
    """The calls of one streaming turn started before it ended."""

    __slots__ = ("dispatcher", "progress", "started", "watch")

    def __init__(self, dispatcher: ToolDispatcher) -> None:
        self.dispatcher = dispatcher
        self.watch = CompleteCalls()
        self.started: dict[str, tuple[ToolUseBlock, asyncio.Future[Any]]] = {}
        self.progress: asyncio.Queue[ToolProgress] = asyncio.Queue()

    def see(self, event: StreamEvent) -> None:
        """Take the turn's next event; start the calls it completes."""
        for block in self.watch.see(event):
            if block.id not in self.started:  # a repeated id is renamed at the end: not here
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
        return None

    async def finish(self, calls: list[ToolUseBlock]) -> dict[str, ToolResultBlock]:
        """The results of the calls that were started, once they end (for a turn whose calls
        are otherwise not run): they ran, so their results stand."""
        done: dict[str, ToolResultBlock] = {}
        for block in calls:
            task = self.take(block)
            if task is None:
                continue
            outcome = await task
            if type(outcome) is ToolResultBlock:
                done[block.id] = outcome
        return done

    async def stop(self) -> None:
        """The run failed or was closed: cancel what still runs and wait for it."""
        tasks = [task for _, task in self.started.values()]
        self.started.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
