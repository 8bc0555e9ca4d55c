"""``ConversationState``: what a session holds between sends (padwan-ai's name for it), with
padwan's methods: messages added one by one, usage summed as padwan's dict of token counts, a
snapshot to keep and read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, text_message
from ..stores.jsonforms import message_to_dict
from ..types import Usage
from .chat_snapshot import chat_usage
from .parts import UserInput, user_message
from .snapshot import SNAPSHOT_VERSION, SnapshotError, read_snapshot

__all__ = ["ConversationState", "usage_dict"]

UsageDict = dict[str, int]


def usage_dict(usage: Usage) -> UsageDict:
    """``usage`` as padwan's ``UsageToken``: ``total``, ``input``, ``output``, and ``cached`` /
    ``reasoning`` when there are any."""
    counts = {"total": usage.total_tokens, "input": usage.input_tokens}
    counts["output"] = usage.output_tokens
    if usage.cache_read_tokens:
        counts["cached"] = usage.cache_read_tokens
    if usage.reasoning_tokens:
        counts["reasoning"] = usage.reasoning_tokens
    return counts


def _zero() -> UsageDict:
    return {"total": 0, "input": 0, "output": 0}


@dataclass(slots=True)
class ConversationState:
    """The system prompt, the conversation (tether ``Message``s, oldest first; the system prompt
    is kept in ``system``, not as a message) and the usage summed so far, as padwan's
    ``UsageToken`` dicts. ``AgentSession.state`` gives a copy: changing it leaves the session
    as it was."""

    system: str | None = None
    messages: list[Message] = field(default_factory=list)
    total_usage: UsageDict = field(default_factory=_zero)
    last_usage: UsageDict | None = None

    def __post_init__(self) -> None:
        self.messages = list(self.messages)
        for message in self.messages:
            if not isinstance(message, Message):
                raise TypeError(f"ConversationState holds Messages, got {message!r}")

    def add_user_message(self, content: UserInput) -> Message:
        """Append the user's message (text, a ``Message`` or a list of content parts)."""
        made = user_message(content)
        message = made if isinstance(made, Message) else text_message("user", made)
        self.messages.append(message)
        return message

    def add_assistant_message(self, content: str) -> Message:
        """Append a text answer of the model."""
        message = text_message("assistant", content)
        self.messages.append(message)
        return message

    def accumulate_usage(self, usage: Usage | dict[str, Any]) -> None:
        """Add one call's usage (a ``Usage``, or padwan's dict with ``input`` and ``output``)
        to ``total_usage``; it becomes ``last_usage``. Counts that are not token counts are a
        ``ValueError`` (or ``TypeError``), and nothing is added."""
        counts = usage_dict(usage if isinstance(usage, Usage) else _read_usage(usage))
        self.last_usage = counts
        for key, value in counts.items():
            self.total_usage[key] = self.total_usage.get(key, 0) + value

    def clear(self) -> None:
        """Forget the conversation (the system prompt and usage are kept)."""
        self.messages = []

    def snapshot(self) -> dict[str, Any]:
        """The state as plain JSON-able data, for ``from_snapshot``."""
        return {
            "version": SNAPSHOT_VERSION,
            "system": self.system,
            "messages": [message_to_dict(m) for m in self.messages],
            "total_usage": dict(self.total_usage),
        }

    @classmethod
    def from_snapshot(cls, data: Any) -> ConversationState:
        """A state read back from ``snapshot()``'s data, a session's saved snapshot, or one
        padwan-ai wrote (its chat messages); checked, ``SnapshotError`` if it is not one."""
        if not isinstance(data, dict):
            raise SnapshotError(f"a snapshot is a mapping, not a {type(data).__name__}")
        owner = data.get("session_id", "")
        system, messages = read_snapshot(data, owner if isinstance(owner, str) else "")
        total = data.get("total_usage")
        try:
            usage = _zero() if total is None else usage_dict(_read_usage(total))
        except (TypeError, ValueError) as exc:
            raise SnapshotError(f"the snapshot's usage: {exc}") from None
        return cls(system, messages, usage)


def _read_usage(counts: Any) -> Usage:
    usage = chat_usage(counts)
    if usage is None:
        raise TypeError("usage must be token counts (input, output), got None")
    return usage
