"""Running one tool call: repair result, lookup, bindings, guards, validation, handler, errors.

Every failure becomes a ``ToolResultBlock(is_error=True)`` whose text tells the model what went
wrong; only task cancellation escapes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ToolArgumentError
from .messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)
from .tools.guards import Deny, Guard, ToolCall, run_guards
from .tools.repair import ParsedArguments, failure_message
from .tools.tool import Tool

if TYPE_CHECKING:
    from .control import CancellationToken

__all__ = [
    "ErrorFormatter",
    "ToolDispatcher",
    "interrupted_result",
    "not_run_result",
    "to_content",
    "tools_by_name",
    "truncate_result",
]

ErrorFormatter = Callable[[str, Mapping[str, Any], BaseException], str]
"""``(tool_name, arguments, exception) -> text`` the model sees when a tool raises."""


def default_error_text(name: str, arguments: Mapping[str, Any], exc: BaseException) -> str:
    """Prompty §9.9's wording, with the exception type."""
    return f"Error: Tool '{name}' failed: {type(exc).__name__}: {exc}"


def to_content(value: Any) -> ToolResultContent:
    """A handler's return value as result content: text and images kept, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, TextBlock | ImageBlock):
        return (value,)
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(v, TextBlock | ImageBlock) for v in value)
    ):
        return tuple(value)
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n…[truncated {len(text) - limit} of {len(text)} characters]"


def truncate_result(block: ToolResultBlock, limit: int | None) -> ToolResultBlock:
    """The copy of a result the model sees: text over ``limit`` characters cut, with a note.

    For rich content the limit is shared by its text blocks in order; images are kept.
    """
    if limit is None:
        return block
    content = block.content
    if isinstance(content, str):
        if len(content) <= limit:
            return block
        return ToolResultBlock(block.tool_use_id, _cut(content, limit), block.is_error)
    if sum(len(b.text) for b in content if isinstance(b, TextBlock)) <= limit:
        return block
    left, out = limit, []
    for b in content:
        if isinstance(b, TextBlock):
            b = TextBlock(_cut(b.text, max(left, 0)))  # noqa: PLW2901
            left -= len(b.text)
        out.append(b)
    return ToolResultBlock(block.tool_use_id, tuple(out), block.is_error)


def not_run_result(block: ToolUseBlock, why: str) -> ToolResultBlock:
    """An error result for a call that was not run."""
    return ToolResultBlock(block.id, f"Error: Tool '{block.name}' was not run: {why}", True)


def interrupted_result(block: ToolUseBlock) -> ToolResultBlock:
    """The result stored for a call whose run was interrupted by cancellation."""
    return not_run_result(block, "interrupted (the run was cancelled before it finished).")


def results_message(results: Sequence[ToolResultBlock]) -> Message:
    """All results of one response in one user message, in call order."""
    return Message("user", tuple(results))


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
    """Runs the tool calls of one iteration against the tools offered in it."""

    tools: Mapping[str, Tool]
    guards: Sequence[Guard]
    iteration: int
    format_error: ErrorFormatter | None = None
    cancel: CancellationToken | None = None
    unknown: list[str] | None = None

    async def execute(self, block: ToolUseBlock) -> ToolResultBlock:
        """One call, start to finish; never raises except on task cancellation."""
        if block.parse_error is not None:
            return ToolResultBlock(
                block.id, failure_message(ParsedArguments(None, None, block.parse_error)), True
            )
        tool = self.tools.get(block.name)
        if tool is None:
            if self.unknown is not None:
                self.unknown.append(block.name)
            known = ", ".join(sorted(self.tools)) or "none"
            return ToolResultBlock(
                block.id, f"Error: Unknown tool '{block.name}'. Available tools: {known}.", True
            )
        if self.cancel is not None and self.cancel.cancelled:
            return not_run_result(block, "the run was cancelled.")
        arguments: Mapping[str, Any] = block.input
        if tool.bindings:
            arguments = {**arguments, **tool.bindings}
        if self.guards or tool.guards:
            try:
                checked = await run_guards(
                    (*self.guards, *tool.guards),
                    ToolCall(block.id, block.name, arguments, tool, self.iteration),
                )
            except Exception as exc:
                text = f"Error: a guard of tool '{block.name}' failed: {type(exc).__name__}: {exc}"
                return ToolResultBlock(block.id, text, True)
            if type(checked) is Deny:
                return ToolResultBlock(block.id, f"Tool call denied: {checked.reason}", True)
            assert isinstance(checked, ToolCall)
            arguments = checked.arguments
        try:
            value = await tool.invoke(arguments)
        except ToolArgumentError as exc:
            return ToolResultBlock(
                block.id, f"Error: {exc}. Call the tool again with corrected arguments.", True
            )
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this run is being cancelled
            # Something the tool awaited was cancelled (e.g. its server went away): a tool failure.
            return ToolResultBlock(block.id, self._error_text(tool, arguments, exc), True)
        except Exception as exc:
            return ToolResultBlock(block.id, self._error_text(tool, arguments, exc), True)
        return ToolResultBlock(block.id, to_content(value))

    def _error_text(self, tool: Tool, arguments: Mapping[str, Any], exc: BaseException) -> str:
        if isinstance(exc, TimeoutError) and tool.timeout is not None:
            return f"Error: Tool '{tool.name}' timed out after {tool.timeout:g} s."
        if self.format_error is not None:
            try:
                return self.format_error(tool.name, arguments, exc)
            except Exception:  # a broken formatter must not lose the result
                pass
        return default_error_text(tool.name, arguments, exc)
