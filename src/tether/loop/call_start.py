"""When a reply's tool calls start, the one seam the loop calls the same way either way: after
the answer is stored (``AfterAnswer``), or, with ``start_tools_early`` and parallel execution,
while the model still answers (``EarlyCalls``): a call starts once its arguments are complete,
that is once a later block of the response begins, and dispatch takes its task over."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..base.interrupt import survive
from ..events import (
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolProgress,
    ToolUseStart,
)
from ..messages import ToolResultBlock, ToolUseBlock
from ..tools.results import not_run_result
from ..types import StopReason
from .dispatch import PROGRESS_BACKLOG, ToolDispatcher, finished, in_task, in_tasks, run_in_tasks
from .reply import StreamedCall, Watch, tool_use
from .transcript import Transcript

if TYPE_CHECKING:
    from ..tools.tool import Tool
    from .config import AgentConfig

__all__ = [
    "AfterAnswer",
    "CallStart",
    "CompleteCalls",
    "EarlyCalls",
    "MakeDispatcher",
    "call_start",
    "interrupt",
    "skip",
]

_INDEXED = (TextDelta, ReasoningDelta, ToolUseStart, ToolInputDelta)

MakeDispatcher = Callable[["dict[str, Tool]", int], ToolDispatcher]
"""The run's dispatcher for an iteration's tools (by name) and number."""


class CallStart(Protocol):
    """When one reply's tool calls start; the loop calls every kind the same way."""

    def watching(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> Watch | None:
        """What follows each attempt's model stream of a new reply as the loop reads it (calls
        may start from its events); None: nothing does."""

    def dispatcher(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> ToolDispatcher:
        """The dispatcher that runs the reply's calls."""

    def tasks(
        self,
        dispatcher: ToolDispatcher,
        calls: Sequence[ToolUseBlock],
        results: list[ToolResultBlock | None],
    ) -> AsyncGenerator[StreamEvent, None] | None:
        """The calls run in tasks of their own, as events; None: run them one after another."""

    async def finish(self, calls: list[ToolUseBlock]) -> dict[str, ToolResultBlock]:
        """The results of the calls already started, for a reply whose calls are not run."""

    def interrupted(self) -> Awaitable[dict[str, ToolResultBlock]]:
        """As ``stop``, to the end even if cancelled meanwhile (a reply closed before dispatch)."""

    async def stop(self) -> dict[str, ToolResultBlock]:
        """The reply ends without dispatch: stop what runs; the results of what finished."""


class AfterAnswer:
    """Calls start once the answer is stored (the usual way); holds no state of a run."""

    __slots__ = ("parallel",)

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel

    def watching(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> Watch | None:
        """Nothing starts while the reply streams."""
        return None

    def dispatcher(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> ToolDispatcher:
        """A new dispatcher, made only for a reply that has calls to run."""
        return make(table, iteration)

    def tasks(
        self,
        dispatcher: ToolDispatcher,
        calls: Sequence[ToolUseBlock],
        results: list[ToolResultBlock | None],
    ) -> AsyncGenerator[StreamEvent, None] | None:
        """Tasks to run calls at once or to stream progress; otherwise None."""
        if not in_tasks(dispatcher, calls, self.parallel):
            return None
        return run_in_tasks(dispatcher, calls, results, self.parallel)

    async def finish(self, calls: list[ToolUseBlock]) -> dict[str, ToolResultBlock]:
        """None started."""
        return {}

    async def interrupted(self) -> dict[str, ToolResultBlock]:
        """None started."""
        return {}

    async def stop(self) -> dict[str, ToolResultBlock]:
        """None started."""
        return {}


_SEQUENTIAL, _PARALLEL = AfterAnswer(False), AfterAnswer(True)


def call_start(agent: AgentConfig) -> CallStart:
    """How ``agent``'s runs start tool calls (``EarlyCalls`` holds a run's state: one per run)."""
    if agent.execution != "parallel":
        return _SEQUENTIAL
    return EarlyCalls() if agent.start_tools_early else _PARALLEL


async def skip(
    start: CallStart, calls: list[ToolUseBlock], reason: StopReason, transcript: Transcript
) -> list[StreamEvent]:
    """Answer the calls of a reply that ended (for ``reason``) before they were complete; their
    events. Calls started while it streamed did run, and keep their results."""
    if not calls:
        return []
    why = f"the response ended with {reason.value!r} before the call was complete."
    try:
        ran = await start.finish(calls)
    except BaseException:
        await interrupt(start, calls, transcript)
        raise
    skipped = [ran.get(b.id) or not_run_result(b, why) for b in calls]
    await transcript.append_results(skipped)
    return [finished(b, r) for b, r in zip(calls, skipped, strict=True)]


async def interrupt(start: CallStart, calls: list[ToolUseBlock], transcript: Transcript) -> None:
    """A reply's stored calls get results though none is dispatched: those started while it
    streamed and finished keep theirs, the rest are interrupted."""
    if calls:
        ran = await start.interrupted()
        await transcript.interrupted(calls, [ran.get(b.id) for b in calls])


class CompleteCalls:
    """Follows a reply's events; gives each tool call once its arguments are complete, that is
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
    """Calls start while the reply streams (one object per run, reset as each reply begins)."""

    __slots__ = ("done", "made", "progress", "stale", "started", "watch")

    def __init__(self) -> None:
        self.made: ToolDispatcher | None = None
        self.watch = CompleteCalls()
        self.started: dict[str, tuple[ToolUseBlock, asyncio.Future[Any]]] = {}
        self.done: dict[str, ToolResultBlock] = {}  # results of started calls that finished
        self.stale: list[asyncio.Future[Any]] = []  # cancelled: their arguments changed
        self.progress: asyncio.Queue[ToolProgress] = asyncio.Queue(PROGRESS_BACKLOG)

    def watching(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> Watch | None:
        """A new reply (its dispatcher made now): each attempt's stream, starting calls as
        they complete (an attempt that fails does so before its first event: none started)."""
        self.made = make(table, iteration)
        return self._watching

    def _watching(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        self.watch = CompleteCalls()
        self.started, self.done, self.stale = {}, {}, []
        self.progress = asyncio.Queue(PROGRESS_BACKLOG)
        return self._seeing(events)

    async def _seeing(
        self, events: AsyncIterator[StreamEvent]
    ) -> AsyncGenerator[StreamEvent, None]:
        try:
            async for event in events:
                self.see(event)
                yield event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    def see(self, event: StreamEvent) -> None:
        """Take the reply's next event; start the calls it completes."""
        for block in self.watch.see(event):
            # Only arguments that parsed as sent (a repaired prefix could be cut short), and
            # only a first use of an id (a repeated one is renamed when the reply ends).
            if block.raw_arguments is None and block.id not in self.started:
                assert self.made is not None
                task = asyncio.ensure_future(in_task(self.made, block, self.progress))
                self.started[block.id] = (block, task)

    def dispatcher(
        self, make: MakeDispatcher, table: dict[str, Tool], iteration: int
    ) -> ToolDispatcher:
        """The dispatcher the reply's calls started with."""
        assert self.made is not None
        return self.made

    def tasks(
        self,
        dispatcher: ToolDispatcher,
        calls: Sequence[ToolUseBlock],
        results: list[ToolResultBlock | None],
    ) -> AsyncGenerator[StreamEvent, None] | None:
        """All calls at once, those already started taken over."""
        return run_in_tasks(dispatcher, calls, results, True, self)

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
        """The results of the calls that were started, once they end (for a reply whose calls
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

    def interrupted(self) -> Awaitable[dict[str, ToolResultBlock]]:
        """``stop``, to its end even if cancelled meanwhile."""
        return survive(self.stop())

    async def stop(self) -> dict[str, ToolResultBlock]:
        """The reply ends without dispatch (failed, closed, or cut off): cancel what still runs,
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
