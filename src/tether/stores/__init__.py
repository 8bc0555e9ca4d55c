"""Conversation stores that keep every message whose append returned: ``SQLiteStore`` (one
file, no server) ``FileStore`` (a JSON-lines file per session) and ``PostgresStore``
(PostgreSQL, with the ``postgres`` extra) and
``RedisStore`` (with the ``redis`` extra). ``await
store.open(session_id)`` gives a ``ContextStore``."""

from __future__ import annotations

from ..errors import ConflictError
from .base import SessionInfo
from .files import FileContext, FileStore
from .postgres import PostgresContext, PostgresStore
from .redis import RedisContext, RedisStore
from .sqlite import SQLiteContext, SQLiteStore

__all__ = [
    "ConflictError",
    "FileContext",
    "FileStore",
    "PostgresContext",
    "PostgresStore",
    "RedisContext",
    "RedisStore",
    "SQLiteContext",
    "SQLiteStore",
    "SessionInfo",
]
