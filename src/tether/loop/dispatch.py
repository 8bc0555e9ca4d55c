"""Running tool calls: lookup, bindings, guards, validation, handler, timeouts, errors, and the
one path (sequential or concurrent) that the loop and ``Agent.dispatch_tools`` both take.

Every failure becomes a ``ToolResultBlock(is_error=True)`` whose text tells the model what went
wrong; only the run's own cancellation (and ``KeyboardInterrupt``/``SystemExit``, re-raised in
the run's task) escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..base.interrupt import Overrun, within
from ..errors import ToolArgumentError
from ..events import StreamEvent, ToolDispatch, ToolProgress, ToolResult
from ..messages import ToolResultBlock, ToolUseBlock
from ..tools.guards import Deny, Guard, ToolCall, run_guards
from ..tools.needs_input import NeedsInput
from ..tools.notes import noting_to
from ..tools.progress import UsageSink, counting_to, reporting_to
from ..tools.repair import ParsedArguments, failure_message
from ..tools.results import (
    ErrorFormatter,
    default_error_text,
    describe_exception,
    exception_message,
    interrupted_result,
    not_run_result,
    results_message,
    to_content,
    truncate_result,
)
from ..tools.tool import Tool
from .control import Stopped, until_cancelled
from .middleware import Middleware, RunRequest, ToolHandler, ToolRequest, tool_chain

if TYPE_CHECKING:
    from .config import AgentConfig
    from .control import CancellationToken
    from .limits import RunBudget

__all__ = [
    "PROGRESS_BACKLOG",
    "ErrorFormatter",
    "ToolDispatcher",
    "dispatcher_for",
    "finished",
    "in_task",
    "in_tasks",
    "interrupted_result",
    "not_run_result",
    "results_message",
    "run_calls",
    "run_in_tasks",
    "started",
    "to_content",
    "tools_by_name",
    "truncate_result",
]


PROGRESS_BACKLOG = 1_000  # progress reports held while a reader is not reading


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Index tools by name; two tools with one name are a configuration error."""
    table = {t.name: t for t in tools}
    if len(table) != len(tools):
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"two tools share the name(s) {', '.join(dupes)}")
    return table


@dataclass(slots=True)
class ToolDispatcher:
    """Runs the tool calls of one iteration against the tools offered in it.

    ``chain`` is the middleware around each call (None: none); ``default_timeout`` applies to
    calls of tools without a ``timeout`` of their own; ``usage`` takes what the calls of tools
    that report progress spent on models (``report_usage``) into the run's total, and ``notes``
    (the run's, ``run_notes``) is lent to those calls. ``waiting``
    (a run's: None where nothing can pause) takes the calls that wait for the user's input
    (``NeedsInput``), by id: the run pauses on them.
    """

    tools: Mapping[str, Tool]
    guards: Sequence[Guard]
    iteration: int
    format_error: ErrorFormatter | None = None
    cancel: CancellationToken | None = None
    unknown: list[str] | None = None
    chain: ToolHandler | None = None
    default_timeout: float | None = None
    run: RunRequest | None = None
    usage: UsageSink | None = None
    budget: RunBudget | None = None
    waiting: dict[str, NeedsInput] | None = None
    notes: dict[str, Any] | None = None

    def execute(self, block: ToolUseBlock) -> Awaitable[ToolResultBlock]:
        """One call, start to finish, through the middleware; never raises but on cancellation.
        A call the run's ``Limits`` refuse is answered without running."""
        if self.budget is not None:
            refused = self.budget.admit(self.iteration)
            if refused is not None:
                return _at_once(not_run_result(block, refused))
        if self.chain is None:
            return self._run(block, self.tools.get(block.name))
        return self._through(self.chain, block)

    async def _through(self, chain: ToolHandler, block: ToolUseBlock) -> ToolResultBlock:
        try:
            request = ToolRequest(block, self.tools.get(block.name), self.iteration, self.run)
            result = await chain(request)
        except asyncio.CancelledError as exc:
            if _run_cancelled():
                raise
            text = f"Error: a middleware on tool '{block.name}' was cancelled: {exc!r}"
            return ToolResultBlock(block.id, text, True)
        except Exception as exc:
            text = f"Error: a middleware failed on tool '{block.name}': {describe_exception(exc)}"
            return ToolResultBlock(block.id, text, True)
        if type(result) is not ToolResultBlock:
            return _as_result(block, result, "a middleware")
        if result.tool_use_id != block.id:  # e.g. a cached result: it answers this call
            return ToolResultBlock(block.id, result.content, result.is_error)
        return result

    async def innermost(self, request: ToolRequest) -> ToolResultBlock:
        """The call itself, as the innermost handler of the middleware chain."""
        return await self._run(request.block, request.tool)

    async def _run(self, block: ToolUseBlock, tool: Tool | None) -> ToolResultBlock:
        if block.parse_error is not None:
            return ToolResultBlock(
                block.id, failure_message(ParsedArguments(None, None, block.parse_error)), True
            )
        if tool is None:
            return self._unknown(block)
        if self.cancel is not None and self.cancel.cancelled:
            return not_run_result(block, "the run was cancelled.")
        arguments: Mapping[str, Any] = block.input
        if tool.bindings:
            arguments = {**arguments, **tool.bindings}
        if self.guards or tool.guards:
            checked = await self._guard(block, tool, arguments)
            if type(checked) is ToolResultBlock:
                return checked
            assert isinstance(checked, dict)
            arguments = checked
        try:
            value = await self._invoke(tool, arguments)
        except Stopped:  # the run's token: the call is stopped with it
            return interrupted_result(block)
        except NeedsInput as signal:
            return self._asked(block, signal)
        except ToolArgumentError as exc:
            text = f"Error: {exception_message(exc)}. Call the tool again with corrected arguments."
            return ToolResultBlock(block.id, text, True)
        except asyncio.CancelledError as exc:
            if _run_cancelled():
                raise  # this run is being cancelled
            # Something the tool awaited was cancelled (e.g. its server went away): a tool failure.
            return ToolResultBlock(block.id, self._error_text(tool, arguments, exc), True)
        except Exception as exc:
            return ToolResultBlock(block.id, self._error_text(tool, arguments, exc), True)
        return _as_result(block, value, f"tool '{tool.name}'")

    def _asked(self, block: ToolUseBlock, signal: NeedsInput) -> ToolResultBlock:
        """A call that waits for the user's input: noted for the run to pause on (its result
        stands in until then, stored only if the run ends first), or, where nothing can pause,
        an error result that says why."""
        if self.waiting is None:
            return ToolResultBlock(block.id, f"Error: {signal}", True)
        self.waiting[block.id] = signal
        text = f"Error: tool '{block.name}' asked for the user's input; the run ended first."
        return ToolResultBlock(block.id, text, True)

    def _unknown(self, block: ToolUseBlock) -> ToolResultBlock:
        if self.unknown is not None:
            self.unknown.append(block.name)
        known = ", ".join(sorted(self.tools)) or "none"
        return ToolResultBlock(
            block.id, f"Error: Unknown tool '{block.name}'. Available tools: {known}.", True
        )

    async def _guard(
        self, block: ToolUseBlock, tool: Tool, arguments: Mapping[str, Any]
    ) -> dict[str, Any] | ToolResultBlock:
        """The arguments after the guard chain (bindings kept), or the result of a denial."""
        try:
            checked = await run_guards(
                (*self.guards, *tool.guards),
                ToolCall(block.id, block.name, arguments, tool, self.iteration),
            )
        except asyncio.CancelledError:
            if _run_cancelled():
                raise
            text = f"Error: a guard of tool '{block.name}' was cancelled"
            return ToolResultBlock(block.id, text, True)
        except Exception as exc:
            text = f"Error: a guard of tool '{block.name}' failed: {describe_exception(exc)}"
            return ToolResultBlock(block.id, text, True)
        if type(checked) is Deny:
            return ToolResultBlock(block.id, f"Tool call denied: {checked.reason}", True)
        assert isinstance(checked, ToolCall)
        return {**checked.arguments, **tool.bindings}  # a rewrite never drops a binding

    def _invoke(self, tool: Tool, arguments: Mapping[str, Any]) -> Awaitable[Any]:
        """The handler's value; the default timeout applies to tools without their own, a
        run with a time limit ends every call by then, and the run's cancellation token stops
        the call at once (``Stopped``)."""
        timeout = None if tool.timeout is not None else self.default_timeout
        if self.budget is not None:
            left = self.budget.remaining()  # a delegating run's time limit included
            if left is not None and (timeout is None or left < timeout):
                timeout = left
        coro = tool.invoke(arguments)
        call: Awaitable[Any] = coro if timeout is None else within(coro, timeout)
        return call if self.cancel is None else until_cancelled(call, self.cancel)

    def _error_text(self, tool: Tool, arguments: Mapping[str, Any], exc: BaseException) -> str:
        if isinstance(exc, Overrun):
            return f"Error: Tool '{tool.name}' timed out after {exc.args[0]:g} s."
        if isinstance(exc, TimeoutError) and tool.timeout is not None:
            return f"Error: Tool '{tool.name}' timed out after {tool.timeout:g} s."
        if self.format_error is not None:
            try:
                return self.format_error(tool.name, arguments, exc)
            except Exception:  # a broken formatter must not lose the result
                pass
        return default_error_text(tool.name, arguments, exc)


async def _at_once(result: ToolResultBlock) -> ToolResultBlock:
    return result


def _run_cancelled() -> bool:
    """Whether this task itself is being cancelled (not just something it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def dispatcher_for(
    agent: AgentConfig,
    table: Mapping[str, Tool],
    iteration: int,
    cancel: CancellationToken | None = None,
    *,
    middleware: Sequence[Middleware] | None = None,
    run: RunRequest | None = None,
    usage: UsageSink | None = None,
    budget: RunBudget | None = None,
    notes: dict[str, Any] | None = None,
) -> ToolDispatcher:
    """The dispatcher of one iteration of ``agent``: guards, error text, timeout, middleware
    (the agent's, or ``middleware`` when the run adds some), its calls part of ``run`` (whose
    total ``usage`` adds to, and whose ``notes`` its tools keep)."""
    dispatcher = ToolDispatcher(
        table,
        agent.guards,
        iteration,
        agent.format_tool_error,
        cancel,
        [],
        default_timeout=agent.tool_timeout,
        run=run,
        usage=usage,
        budget=budget,
        notes=notes,
    )
    wrappers = agent.middleware if middleware is None else middleware
    if wrappers:
        dispatcher.chain = tool_chain(wrappers, dispatcher.innermost)
    return dispatcher


def _as_result(block: ToolUseBlock, value: Any, source: str) -> ToolResultBlock:
    """``value`` as this call's result; a value with no text form is an error result instead.
    A ``ToolResultBlock`` is taken whole (a tool marks its own errors so), under this call's id."""
    if type(value) is ToolResultBlock:
        return ToolResultBlock(block.id, value.content, value.is_error)
    try:
        return ToolResultBlock(block.id, to_content(value))
    except Exception as exc:  # a huge int, a raising __str__, nesting too deep for JSON, ...
        text = (
            f"Error: {source} returned a value that cannot be turned into text "
            f"({type(value).__name__}): {describe_exception(exc)}"
        )
        return ToolResultBlock(block.id, text, True)


def started(block: ToolUseBlock) -> ToolDispatch:
    """The event of a call about to run."""
    return ToolDispatch(block.id, block.name, block.input)


def finished(block: ToolUseBlock, result: ToolResultBlock) -> ToolResult:
    """The event of a call's result."""
    return ToolResult(block.id, block.name, result.is_error, result.content, block.input)


def in_tasks(dispatcher: ToolDispatcher, calls: Sequence[ToolUseBlock], parallel: bool) -> bool:
    """Whether ``calls`` run in tasks of their own: to run at once, or to stream progress."""
    if parallel and len(calls) > 1:
        return True
    for block in calls:
        tool = dispatcher.tools.get(block.name)
        if tool is not None and tool.reports_progress:
            return True
    return False


async def run_calls(
    dispatcher: ToolDispatcher,
    calls: Sequence[ToolUseBlock],
    parallel: bool,
    results: list[ToolResultBlock | None],
    on_progress: Callable[[ToolProgress], Awaitable[None]] | None = None,
) -> None:
    """Run ``calls`` (one after another, or all at once) as the loop does, filling ``results``
    in call order; a call that did not finish leaves its slot None. ``on_progress`` hears each
    progress report of a tool that reports it, while its call runs."""
    if in_tasks(dispatcher, calls, parallel):
        async with aclosing(run_in_tasks(dispatcher, calls, results, parallel)) as events:
            async for event in events:
                if on_progress is not None and isinstance(event, ToolProgress):
                    await on_progress(event)
        return
    for i, block in enumerate(calls):
        results[i] = await dispatcher.execute(block)


async def run_in_tasks(
    dispatcher: ToolDispatcher,
    calls: Sequence[ToolUseBlock],
    results: list[ToolResultBlock | None],
    parallel: bool = True,
    early: Started | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """Run each call in a task of its own (all at once, or one after another): dispatch events,
    progress events while the calls run, and each result's event as it finishes (``results``
    filled in call order). Leaving early cancels the calls still running. Calls ``early``
    started while the model answered are taken over, not started again."""
    progress: asyncio.Queue[ToolProgress] = (
        asyncio.Queue(PROGRESS_BACKLOG) if early is None else early.progress
    )
    batches = [range(len(calls))] if parallel else [range(i, i + 1) for i in range(len(calls))]
    for batch in batches:
        for i in batch:
            yield started(calls[i])
        running = _running(dispatcher, calls, batch, results, progress, early)
        async with aclosing(running) as events:
            async for event in events:
                yield event


class Started(Protocol):
    """Calls already running (started while the model answered), to be taken over."""

    progress: asyncio.Queue[ToolProgress]

    def take(self, block: ToolUseBlock) -> asyncio.Future[Any] | None:
        """The running task of ``block``, or None to start it now."""
        ...


class _Escaped:
    """A ``KeyboardInterrupt``/``SystemExit`` raised in a call's task, carried to the run's task."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


async def in_task(
    dispatcher: ToolDispatcher, block: ToolUseBlock, progress: asyncio.Queue[ToolProgress]
) -> ToolResultBlock | _Escaped:
    """One call, as the body of a task of its own: its progress into ``progress``, and the
    usage it reports into the run's total."""
    tool = dispatcher.tools.get(block.name)
    if tool is not None and tool.reports_progress:

        def sink(done: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(asyncio.QueueFull):  # a flood: later reports are dropped
                progress.put_nowait(ToolProgress(block.id, block.name, done, total, message))

        reporting_to(sink)  # this task's own context: only this call reports here
        counting_to(dispatcher.usage, dispatcher.budget)
        noting_to(dispatcher.notes)
    try:
        return await dispatcher.execute(block)
    except (KeyboardInterrupt, SystemExit) as exc:  # asyncio would raise these out of the loop
        return _Escaped(exc)


async def _running(
    dispatcher: ToolDispatcher,
    calls: Sequence[ToolUseBlock],
    positions: Sequence[int],
    results: list[ToolResultBlock | None],
    progress: asyncio.Queue[ToolProgress],
    early: Started | None,
) -> AsyncGenerator[StreamEvent, None]:
    """Start the calls at ``positions``; yield progress as it comes and each result as its call
    finishes (filling ``results``)."""
    tasks: dict[asyncio.Future[Any], int] = {}
    for i in positions:
        task = None if early is None else early.take(calls[i])
        if task is None:
            task = asyncio.ensure_future(in_task(dispatcher, calls[i], progress))
        tasks[task] = i
    pending = set(tasks)
    report: asyncio.Future[ToolProgress] | None = None
    try:
        while pending:
            if report is None:
                report = asyncio.ensure_future(progress.get())
            done, _ = await asyncio.wait({*pending, report}, return_when=asyncio.FIRST_COMPLETED)
            if report.done():
                yield report.result()
                report = None
            while not progress.empty():  # a call's reports come before its result
                yield progress.get_nowait()
            for task in sorted((t for t in done if t in tasks), key=tasks.__getitem__):
                pending.discard(task)
                outcome = task.result()
                if type(outcome) is _Escaped:
                    raise outcome.exc
                assert isinstance(outcome, ToolResultBlock)
                results[tasks[task]] = outcome
                call = calls[tasks[task]]
                if not dispatcher.waiting or call.id not in dispatcher.waiting:
                    yield finished(call, outcome)  # a call that waits for input has no result
    finally:
        if report is not None:
            report.cancel()
        if pending:
            await _stop(pending, tasks, results)


async def _stop(
    pending: set[asyncio.Future[Any]],
    tasks: dict[asyncio.Future[Any], int],
    results: list[ToolResultBlock | None],
) -> None:
    """Cancel the calls still running; keep the results of any that finished meanwhile."""
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in pending:
        if not task.cancelled() and task.exception() is None:
            outcome = task.result()
            if type(outcome) is ToolResultBlock:
                results[tasks[task]] = outcome
