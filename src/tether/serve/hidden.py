"""The sessions a server keeps for itself beside its conversations: a session's shared state and
A2A's task and message records. They are never listed as chats, and no client names one as its
thread or context (it would read or write the server's own records)."""

from __future__ import annotations

from .a2a import RECORDS
from .shared_state import STATE_PREFIX

__all__ = ["HIDDEN", "hidden"]

HIDDEN = (STATE_PREFIX, *RECORDS)


def hidden(session_id: str) -> str | None:
    """Why a client may not use ``session_id`` (one of the server's own), or None."""
    if session_id.startswith(HIDDEN):
        return f"a session id may not begin with {' or '.join(map(repr, HIDDEN))}"
    return None
