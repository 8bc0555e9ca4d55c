"""Conversation stores that keep every message whose append returned: ``SQLiteStore`` (one
file, no server) and ``FileStore`` (a JSON-lines file per session). ``await
store.open(session_id)`` gives a ``ContextStore``."""

from __future__ import annotations

from ..errors import ConflictError
from .base import SessionInfo
from .files import FileContext, FileStore
from .sqlite import SQLiteContext, SQLiteStore

__all__ = [
    "ConflictError",
    "FileContext",
    "FileStore",
    "SQLiteContext",
    "SQLiteStore",
    "SessionInfo",
]
