"""Conversation stores that keep every message whose append returned: ``SQLiteStore`` (one
file, no server). ``await store.open(session_id)`` gives a ``ContextStore``."""

from __future__ import annotations

from ..errors import ConflictError
from .base import SessionInfo
from .sqlite import SQLiteContext, SQLiteStore

__all__ = ["ConflictError", "SQLiteContext", "SQLiteStore", "SessionInfo"]
