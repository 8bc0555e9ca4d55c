"""Tool results as the model sees them: a handler's value as content, error texts, truncation."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)

__all__ = [
    "ErrorFormatter",
    "default_error_text",
    "describe_exception",
    "exception_message",
    "interrupted_result",
    "not_run_result",
    "results_message",
    "to_content",
    "truncate_result",
]

ErrorFormatter = Callable[[str, Mapping[str, Any], BaseException], str]
"""``(tool_name, arguments, exception) -> text`` the model sees when a tool raises."""

_MAX_EXCEPTION_TEXT = 2000


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, even for an exception whose ``__str__`` raises or runs long."""
    try:
        text = str(exc)
    except Exception:
        return "<the exception's message could not be read>"
    if len(text) > _MAX_EXCEPTION_TEXT:
        text = text[:_MAX_EXCEPTION_TEXT] + "…"
    return text


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` (just ``Type`` when the message is empty), safely."""
    text = exception_message(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def default_error_text(name: str, arguments: Mapping[str, Any], exc: BaseException) -> str:
    """Prompty §9.9's wording, with the exception type."""
    return f"Error: Tool '{name}' failed: {describe_exception(exc)}"


def to_content(value: Any) -> ToolResultContent:
    """A handler's return value as result content: text and images kept, anything else as JSON.

    Raises (``TypeError``, ``ValueError``, ``RecursionError``, …) when the value has no text form;
    the dispatcher turns that into an error result.
    """
    if isinstance(value, str):
        return str(value)
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
        return json.dumps(value, ensure_ascii=False, default=_plain)
    except (TypeError, ValueError):
        return str(value)


def _plain(value: Any) -> Any:
    """What JSON cannot encode, as what it can: a pydantic model or a dataclass as its fields (so
    models nested in lists and dicts are JSON, not reprs), a set as a list, the rest as text."""
    if isinstance(value, type):
        return str(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return list(value)
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
