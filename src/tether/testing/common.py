"""What the test doubles share: recorded requests and the script-exhausted error."""

from __future__ import annotations

from collections.abc import (
    Sequence,
)
from dataclasses import dataclass

from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..types import ToolSpec


class ScriptExhausted(AssertionError):
    """A fake transport was called more times than its script allows (or has no script at all).

    It is an ``AssertionError`` because it means the agent under test made a model call the test
    did not expect.
    """


@dataclass(frozen=True, slots=True)
class Request:
    """What the agent sent on one ``stream()`` call, snapshotted at call time."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    system: str

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model, in order."""
        return [t.name for t in self.tools]

    @property
    def last_message(self) -> Message:
        """The last message of the history sent (usually the newest user or tool-result turn)."""
        if not self.messages:
            raise IndexError("this request has no messages")
        return self.messages[-1]


def _snapshot(messages: Sequence[Message], tools: Sequence[ToolSpec], system: str) -> Request:
    return Request(tuple(messages), tuple(tools), system)


def _split(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` pieces as even as possible (at most ``len(text)``, at least one)."""
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    n = max(1, min(chunks, len(text)))
    size, extra = divmod(len(text), n)
    pieces: list[str] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_message(message: Message) -> str:
    """A one-line, human-readable summary of a message for error messages."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(repr(_shorten(block.text)))
        elif isinstance(block, ToolResultBlock):
            flag = " (error)" if block.is_error else ""
            parts.append(f"tool_result {block.tool_use_id}{flag}: {_shorten(block.text)!r}")
        elif isinstance(block, ToolUseBlock):
            parts.append(f"tool_use {block.name}({block.id})")
        else:
            parts.append(f"<{type(block).__name__}>")
    return f"{message.role}: " + (", ".join(parts) if parts else "<empty>")


def _describe_request(request: Request) -> str:
    if not request.messages:
        return "the unexpected request had no messages"
    return (
        f"last message of the unexpected request ({len(request.messages)} messages) was "
        f"{_describe_message(request.last_message)}"
    )
