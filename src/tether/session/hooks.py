"""The session's tool hooks as middleware: ``on_tool`` brackets each dispatch, ``approve_tool``
may refuse a call before it runs (padwan-ai's order: the hook is told, then approval asked)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..base.interrupt import Interrupt
from ..loop import Middleware, ToolHandler, ToolRequest
from ..messages import ToolResultBlock, ToolUseBlock
from ..tools.tool import Tool
from .replies import error_json

__all__ = [
    "CANCELLED",
    "DENIED",
    "ApproveTool",
    "InFlight",
    "OnTool",
    "ToolCallContext",
    "ToolHooks",
]

DENIED = error_json("Tool call denied.")  # padwan's form of an error result
CANCELLED = "Tool call cancelled."


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """What ``on_tool`` is told about a call about to run."""

    name: str
    args: Mapping[str, Any]
    id: str = ""


OnTool: TypeAlias = Callable[[ToolCallContext], Any]
"""Returns a context manager (sync or async) entered around the call."""
ApproveTool: TypeAlias = Callable[[Tool, Mapping[str, Any]], bool | Awaitable[bool]]


class ToolHooks(Middleware):
    """``on_tool`` around the call, then ``approve_tool`` (a refusal: ``DENIED``; a call whose
    arguments are not JSON is never asked about)."""

    __slots__ = ("approve", "asked", "on_tool")

    def __init__(self, on_tool: OnTool | None, approve: ApproveTool | None) -> None:
        self.on_tool = on_tool
        self.approve = approve
        self.asked: dict[str, tuple[str, Mapping[str, Any], asyncio.Future[bool]]] = {}

    def ask_early(self, tool: Tool, block: ToolUseBlock) -> None:
        """Ask ``approve_tool`` about a call whose arguments are complete, while the model still
        answers; the call's dispatch then takes the answer (if its arguments are the same)."""
        if self.approve is not None and block.id not in self.asked and block.parse_error is None:
            question = asyncio.ensure_future(self._ask(tool, block.input))
            self.asked[block.id] = (block.name, block.input, question)

    def forget(self) -> None:
        """Drop the early questions no dispatch took (the run ended without it)."""
        for _, _, question in self.asked.values():
            question.cancel()
        self.asked.clear()

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        if self.on_tool is None:
            return await self._approved(call, call_next)
        scope = self.on_tool(ToolCallContext(call.name, call.input, call.id))
        if hasattr(scope, "__aenter__"):
            async with scope:
                return await self._approved(call, call_next)
        if hasattr(scope, "__enter__"):
            with scope:
                return await self._approved(call, call_next)
        raise TypeError(
            f"on_tool must return a context manager (e.g. a @contextmanager function); "
            f"it returned {type(scope).__name__}"
        )

    async def _approved(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        if self.approve is not None and call.tool is not None and call.block.parse_error is None:
            early = self.asked.pop(call.id, None)
            if early is not None and early[:2] == (call.name, call.input):
                approved = await early[2]
            else:
                if early is not None:
                    early[2].cancel()
                approved = await self._ask(call.tool, call.input)
            if not approved:
                return ToolResultBlock(call.id, DENIED, True)
        return await call_next(call)

    async def _ask(self, tool: Tool, args: Mapping[str, Any]) -> bool:
        assert self.approve is not None
        answer = self.approve(tool, args)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer is True  # a hook that returns nothing refuses


class InFlight(Middleware):
    """The tool calls running now, each cancellable on its own: a cancelled call answers
    ``CANCELLED`` and the turn goes on (an MCP server is told to stop the call)."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: dict[str, Interrupt] = {}

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        task = asyncio.current_task()
        assert task is not None
        outside = task.cancelling()
        interrupt = self.calls[call.id] = Interrupt(task)
        interrupt.inside = True
        try:
            result = await call_next(call)
        except BaseException as exc:
            # Ours if cancel() fired it and nobody else asked to cancel this task meanwhile.
            fired = interrupt.settle()  # withdrawn even when the call turned it into an error
            if fired and isinstance(exc, asyncio.CancelledError) and task.cancelling() <= outside:
                return ToolResultBlock(call.id, CANCELLED, True)
            raise
        finally:
            self.calls.pop(call.id, None)
        interrupt.settle()  # the call may have swallowed its cancellation and answered anyway
        return result

    def cancel(self, call_id: str) -> bool:
        """Cancel the running call ``call_id``; False if no such call is running."""
        interrupt = self.calls.get(call_id)
        if interrupt is None or not interrupt.inside:
            return False
        interrupt.fire()
        return True
