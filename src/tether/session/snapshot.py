"""Saving and resuming a session through the seed's ``ConversationStore``: plain JSON-able
snapshots (system prompt and messages) kept by any object with ``save`` and ``load``."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable

from ..codec import message_from_dict, message_to_dict
from ..messages import Message

__all__ = [
    "SNAPSHOT_VERSION",
    "ConversationSnapshot",
    "ConversationStore",
    "read_snapshot",
    "snapshot_of",
]

SNAPSHOT_VERSION = 1


class ConversationSnapshot(TypedDict):
    """One session as plain data (``json.dumps`` takes it as it is)."""

    version: int
    session_id: str
    system: str | None
    messages: list[dict[str, Any]]


@runtime_checkable
class ConversationStore(Protocol):
    """Keeps snapshots by session id; either method may be a coroutine."""

    def save(self, session_id: str, snapshot: ConversationSnapshot) -> Awaitable[None] | None: ...

    def load(self, session_id: str) -> ConversationSnapshot | Awaitable[ConversationSnapshot]: ...


def snapshot_of(
    session_id: str, system: str | None, messages: Sequence[Message]
) -> ConversationSnapshot:
    """A session's snapshot."""
    return {
        "version": SNAPSHOT_VERSION,
        "session_id": session_id,
        "system": system,
        "messages": [message_to_dict(m) for m in messages],
    }


def read_snapshot(data: Any, session_id: str) -> tuple[str | None, list[Message]]:
    """The system prompt and messages of a loaded snapshot; a clear ``ValueError`` if it is not
    one this version of tether can read."""
    where = f"the snapshot of session {session_id!r}"
    if not isinstance(data, dict):
        raise ValueError(f"{where} is a {type(data).__name__}, not a mapping")
    version = data.get("version", SNAPSHOT_VERSION)
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"{where} has version {version!r}; this tether reads {SNAPSHOT_VERSION}")
    system, messages = data.get("system"), data.get("messages")
    if system is not None and not isinstance(system, str):
        raise ValueError(f"{where}: 'system' must be a string or null")
    if not isinstance(messages, list):
        raise ValueError(f"{where}: 'messages' must be a list")
    try:
        return system, [message_from_dict(m) for m in messages]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where} holds a message tether cannot read: {exc}") from exc
