"""What every store shares: session ids checked before use, and what ``sessions()`` reports."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_SESSION_ID", "SessionInfo", "check_session_id"]

MAX_SESSION_ID = 256


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
