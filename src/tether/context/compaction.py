"""Compaction: past a token budget, the older part of a conversation is summarised by a model and
the summary is stored as a compaction record (``tether.context.records``), so every later load (any
process, any store) sends summary + recent messages without summarising again. The store keeps
every message. This module holds the policy and what one run counts; ``tether.loop.compact`` the
loop's step."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..transports.base import CompletionTransport
from ..types import Usage
from .policy import Trim, estimate_chars, is_tool_results, truncate

__all__ = ["Compaction", "Compactor", "transcript"]

CHARS_PER_TOKEN = 4  # the estimate used where no provider has counted yet

INSTRUCTIONS = (
    "You summarise the earlier part of a conversation between a user and an AI assistant that "
    "uses tools, so that the assistant can go on without it. Keep what the rest of the work "
    "needs: the user's goals and requests, decisions and constraints, facts learned from tool "
    "results (names, numbers, ids, paths), what has been done and what is still to do. Be "
    "concise. Write only the summary."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """A context policy that compacts: when what would be sent passes ``max_tokens`` (the
    provider's count of the last call plus an estimate of what came since), all but the last
    ``keep_last`` messages are summarised by ``summarizer`` (a transport; None: the agent's own)
    and the run goes on from summary + recent. A tool call is never kept without its result.
    Each message block is cut to ``block_chars`` in what the summariser reads."""

    max_tokens: int
    summarizer: CompletionTransport | None = None
    keep_last: int = 6
    instructions: str = INSTRUCTIONS
    block_chars: int = 2_000

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.keep_last < 1:
            raise ValueError(f"keep_last must be at least 1, got {self.keep_last}")
        if self.block_chars < 100:
            raise ValueError(f"block_chars must be at least 100, got {self.block_chars}")

    def apply(self, messages: Sequence[Message]) -> Trim | None:
        """What is sent is left as it is: compaction happens before, and is stored."""
        return None


def transcript(messages: Sequence[Message], limit: int) -> str:
    """``messages`` as plain text for the summariser (each block cut to ``limit``), so any
    model reads it, with no tool definitions to send."""
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            kind = type(block)
            if kind is TextBlock:
                lines.append(f"{message.role}: {truncate(block.text, limit)}")  # type: ignore[union-attr]
            elif kind is ToolUseBlock:
                call: ToolUseBlock = block  # type: ignore[assignment]
                arguments = json.dumps(call.input, ensure_ascii=False, default=str)
                lines.append(f"assistant called {call.name}({truncate(arguments, limit)})")
            elif kind is ToolResultBlock:
                result: ToolResultBlock = block  # type: ignore[assignment]
                said = "tool error" if result.is_error else "tool result"
                lines.append(f"{said}: {truncate(result.text, limit)}")
    return "\n".join(lines)


def _tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_chars(m) for m in messages) // CHARS_PER_TOKEN


class Compactor:
    """One run's compaction: counts what the next call would send, says when and where to cut,
    and waits after a failure (or a compaction that did not get under the budget) until a
    quarter of the budget more has come, so a dead summariser is not asked every iteration."""

    __slots__ = ("counted", "floor", "policy", "tokens")

    def __init__(self, policy: Compaction) -> None:
        self.policy = policy
        self.tokens = 0  # what the history up to ``counted`` would cost
        self.counted = 0
        self.floor = 0  # no compaction until ``tokens`` passes this by a quarter of the budget

    def replied(self, usage: Usage, length: int) -> None:
        """A reply came with ``usage``; the history (it included) is ``length`` long."""
        if usage.input_tokens:
            self.tokens, self.counted = usage.input_tokens + usage.output_tokens, length

    def due(self, history: Sequence[Message]) -> int | None:
        """The tokens the next call would send, when they call for a compaction."""
        if len(history) > self.counted:
            self.tokens += _tokens(history[self.counted :])
            self.counted = len(history)
        budget = self.policy.max_tokens
        if self.tokens <= budget or self.tokens - self.floor < budget // 4:
            return None
        return self.tokens

    def split(self, history: Sequence[Message]) -> int | None:
        """Where the kept part of ``history`` begins (never at a tool call's results), or None
        when fewer than two messages would be summarised."""
        start = max(0, len(history) - self.policy.keep_last)
        while start > 0 and is_tool_results(history[start]):
            start -= 1  # keep the call with its results
        return start if start >= 2 else None

    def compacted(self, history: Sequence[Message]) -> None:
        """The run goes on from ``history`` (summary + kept)."""
        self.tokens, self.counted = _tokens(history), len(history)
        self.floor = self.tokens

    def failed(self, tokens: int) -> None:
        """Compacting at ``tokens`` failed: wait for more before trying again."""
        self.floor = tokens
