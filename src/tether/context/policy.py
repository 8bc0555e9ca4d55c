"""Context policies: what part of a long history is sent to the model (the store keeps it all)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..messages import Message, Role, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "CharBudget",
    "ContextPolicy",
    "Trim",
    "estimate_chars",
    "is_tool_results",
    "summarize_dropped",
    "truncate",
]


@dataclass(frozen=True, slots=True)
class Trim:
    """What to send instead of the whole history, and how many history messages were left out."""

    messages: Sequence[Message]
    removed: int


@runtime_checkable
class ContextPolicy(Protocol):
    """Chooses the messages to send for one model call. Must not change ``messages``."""

    def apply(self, messages: Sequence[Message]) -> Trim | None:
        """None to send the history as it is, else the ``Trim`` to send."""
        ...


def estimate_chars(message: Message) -> int:
    """Rough size of a message in characters (Prompty §13.3's estimate, tool calls included)."""
    total = len(message.role) + 4
    for block in message.content:
        if type(block) is TextBlock:
            total += len(block.text)
        elif type(block) is ToolUseBlock:
            total += len(block.name) + len(json.dumps(block.input, default=str))
        elif type(block) is ToolResultBlock:
            total += len(block.text)
        else:
            total += 200
    return total


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize_dropped(messages: Sequence[Message], limit: int = 4000) -> str:
    """A plain-text digest of dropped messages: user questions, assistant text, tools called."""
    lines: list[str] = []
    for m in messages:
        if m.role == "user" and m.text:
            lines.append("User asked: " + truncate(m.text, 200))
        elif m.role == "assistant":
            if m.text:
                lines.append("Assistant: " + truncate(m.text, 200))
            names = [b.name for b in m.tool_uses]
            if names:
                lines.append("  Called tools: " + ", ".join(names))
    return truncate("\n".join(lines), limit)


def is_tool_results(message: Message) -> bool:
    """Whether ``message`` carries tool results (which never stand without their call)."""
    return message.role == "user" and any(type(b) is ToolResultBlock for b in message.content)


@dataclass(frozen=True, slots=True)
class CharBudget:
    """Keep what is sent under ``max_chars``: drop the oldest non-system messages first.

    System messages are never dropped and at least the last two messages stay. A tool result is
    never kept without the call it answers. With ``summarize`` the dropped part is replaced by one
    user message digesting it (Prompty §13.3: up to 4,000 characters, 200 per message, so a very
    small budget can be overshot by the digest). ``summary_role``/``summary_format`` shape that
    message; with a system digest, what is kept starts at a user message.
    """

    max_chars: int
    summarize: bool = True
    min_keep: int = 2
    summary_role: Role = "user"
    summary_format: str = "[Context summary: {}]"

    def __post_init__(self) -> None:
        if self.max_chars <= 0:
            raise ValueError("max_chars must be positive")

    def apply(self, messages: Sequence[Message]) -> Trim | None:
        sizes = [estimate_chars(m) for m in messages]
        total = sum(sizes)
        if total <= self.max_chars:
            return None
        n = len(messages)
        n_sys = 0
        while n_sys < n and messages[n_sys].role == "system":
            n_sys += 1
        reserve = min(5000, int(self.max_chars * 0.05)) if self.summarize else 0
        start = n_sys
        while total > self.max_chars - reserve and n - start > self.min_keep:
            total -= sizes[start]
            start += 1
        # Never begin with an answer whose call was dropped, nor with the assistant unless a
        # user digest comes first.
        user_first = not self.summarize or self.summary_role != "user"
        while start < n - 1 and (
            is_tool_results(messages[start]) or (user_first and messages[start].role == "assistant")
        ):
            start += 1
        if start == n_sys:
            return None
        kept = list(messages[:n_sys])
        if self.summarize:
            digest = summarize_dropped(messages[n_sys:start])
            kept.append(Message(self.summary_role, self.summary_format.format(digest)))
        kept.extend(messages[start:])
        return Trim(kept, start - n_sys)
