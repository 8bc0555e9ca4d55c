"""What every store shares: session ids checked before use, and what ``sessions()`` reports."""

from __future__ import annotations

from dataclasses import dataclass

from ..codec import message_to_json
from ..messages import Message, TextBlock

__all__ = [
    "MAX_SESSION_ID",
    "MESSAGE_FORMAT",
    "PLAIN_TEXT",
    "SessionInfo",
    "check_session_id",
    "stored_form",
]

MAX_SESSION_ID = 256
PLAIN_TEXT = 0  # a message of one text block: its text as it is (no JSON to read back)
MESSAGE_FORMAT = 1  # any other message: the codec's JSON


def stored_form(message: Message) -> tuple[int, str]:
    """How a row-per-message store keeps ``message``: its format and body."""
    content = message.content
    if len(content) == 1 and type(content[0]) is TextBlock:
        return PLAIN_TEXT, content[0].text
    return MESSAGE_FORMAT, message_to_json(message)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One stored session: its id, when it was created and last appended to (Unix seconds), and
    how many messages it holds."""

    session_id: str
    created: float
    updated: float
    messages: int


def check_session_id(session_id: object) -> str:
    """``session_id`` if it can name a session; a clear ``ValueError`` otherwise. Ids are data
    only: never part of a path or an SQL text."""
    if not isinstance(session_id, str):
        raise TypeError(f"a session id is a string, got {type(session_id).__name__}")
    if not 1 <= len(session_id) <= MAX_SESSION_ID:
        raise ValueError(f"a session id has 1 to {MAX_SESSION_ID} characters")
    if "\x00" in session_id or not session_id.isprintable():
        raise ValueError(f"a session id must be printable text, got {session_id!r}")
    return session_id
