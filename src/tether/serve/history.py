"""A stored conversation as AG-UI messages, for a page that shows a session again and for a
run's MESSAGES_SNAPSHOT: user and assistant text, the assistant's tool calls, its reasoning as
reasoning messages before it, and one tool message per result (``error`` set when the call
failed). Approval records are left out; a compaction record shows as its summary.

Ids are stored positions: ``s<n>`` for message ``n``, ``s<n>.<k>`` for its ``k``-th tool result,
``s<n>.r<k>`` for its ``k``-th run of reasoning; a run streams each message under the same id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..context import kept_of, summary_of
from ..loop import without_record
from ..messages import Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["TITLE_CHARS", "agui_messages", "reasoning_id", "result_id", "text_id", "title_of"]

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


def text_id(at: int) -> str:
    """The id of the message stored at ``at`` (an assistant's text and tool calls)."""
    return f"s{at}"


def result_id(at: int, n: int) -> str:
    """The id of the ``n``-th tool result of the message stored at ``at``."""
    return f"s{at}.{n}"


def reasoning_id(at: int, k: int) -> str:
    """The id of the ``k``-th run of reasoning of the reply stored at ``at``."""
    return f"s{at}.r{k}"


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
        return [*_reasoning(at, message), _assistant(at, message, text)]
    if not text:
        return []
    return [{"id": f"s{at}", "role": message.role, "content": text}]


def _assistant(at: int, message: Message, text: str) -> dict[str, Any]:
    shown: dict[str, Any] = {"id": text_id(at), "role": "assistant", "content": text}
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
    return shown


def _reasoning(at: int, message: Message) -> list[dict[str, Any]]:
    """Each run of the reply's readable reasoning as a reasoning message (a reply streams one
    reasoning message per run: text or a call between two runs closes the first)."""
    runs: list[str] = []
    inside = False
    for block in message.content:
        if type(block) is ReasoningBlock:
            if block.redacted or not block.text:
                continue
            if inside:
                runs[-1] += block.text
            else:
                runs.append(block.text)
            inside = True
        else:
            inside = False
    return [
        {"id": reasoning_id(at, k), "role": "reasoning", "content": text}
        for k, text in enumerate(runs)
    ]


def _tool_message(at: int, n: int, block: ToolResultBlock) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": result_id(at, n),
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
