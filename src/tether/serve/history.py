"""A stored conversation as AG-UI messages, for a page that shows a session again: user and
assistant text, the assistant's tool calls, and one tool message per result (``error`` set when
the call failed). Approval records are left out; a compaction record shows as its summary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..context import kept_of, summary_of
from ..loop import without_record
from ..messages import Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["TITLE_CHARS", "agui_messages", "title_of"]

TITLE_CHARS = 60  # a session's title: its first user message, cut to this many characters


def agui_messages(history: Sequence[Message], first: int = 0) -> list[dict[str, Any]]:
    """``history`` (stored from position ``first``) as AG-UI messages; ids are the stored
    positions, so they stay the same however often the session is read."""
    shown: list[dict[str, Any]] = []
    for at, stored in enumerate(history, start=first):
        if kept_of(stored) is not None:
            shown.append(_activity(at, _text(summary_of(stored))))
            continue
        message = without_record(stored)
        if message is not None:
            shown.extend(_converted(at, message))
    return shown


def title_of(history: Sequence[Message]) -> str | None:
    """A session's title: its first user message's text on one line, cut to ``TITLE_CHARS``
    (an ellipsis marks the cut); None while it has no user message with text."""
    for stored in history:
        message = None if kept_of(stored) is not None else without_record(stored)
        if message is None or message.role != "user":
            continue
        text = " ".join(_text(message).split())
        if text:
            return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS].rstrip() + "…"
    return None


def _converted(at: int, message: Message) -> list[dict[str, Any]]:
    results = [b for b in message.content if type(b) is ToolResultBlock]
    if results:
        return [_tool_message(at, n, block) for n, block in enumerate(results)]
    text = _text(message)
    if message.role == "assistant":
        return [_assistant(at, message, text)]
    if not text:
        return []
    return [{"id": f"s{at}", "role": message.role, "content": text}]


def _assistant(at: int, message: Message, text: str) -> dict[str, Any]:
    shown: dict[str, Any] = {"id": f"s{at}", "role": "assistant", "content": text}
    if message.name:
        shown["name"] = message.name
    calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {
                "name": block.name,
                "arguments": block.raw_arguments or json.dumps(dict(block.input)),
            },
        }
        for block in message.content
        if type(block) is ToolUseBlock
    ]
    if calls:
        shown["toolCalls"] = calls
    reasoning = "".join(
        b.text for b in message.content if type(b) is ReasoningBlock and not b.redacted
    )
    if reasoning:
        shown["metadata"] = {"reasoning": reasoning}
    return shown


def _tool_message(at: int, n: int, block: ToolResultBlock) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": f"s{at}.{n}",
        "role": "tool",
        "toolCallId": block.tool_use_id,
        "content": block.text,
    }
    if block.is_error:
        shown["error"] = block.text
    return shown


def _activity(at: int, summary: str) -> dict[str, Any]:
    return {
        "id": f"s{at}",
        "role": "activity",
        "activityType": "tether.compaction",
        "content": {"summary": summary},
    }


def _text(message: Message) -> str:
    return "".join(b.text for b in message.content if type(b) is TextBlock)
