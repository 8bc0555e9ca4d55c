"""``ConversationState``: what a session holds between sends (padwan-ai's name for it), as one
value."""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import Message

__all__ = ["ConversationState"]


@dataclass(frozen=True, slots=True)
class ConversationState:
    """The system prompt and the whole conversation, oldest message first. A copy: the session
    going on does not change it."""

    system: str | None
    messages: tuple[Message, ...]
