"""Conversation stores that keep every message whose append returned: ``SQLiteStore`` (one
file, no server) ``FileStore`` (a JSON-lines file per session) and ``PostgresStore``
(PostgreSQL, with the ``postgres`` extra) and
``RedisStore`` (with the ``redis`` extra). ``await
store.open(session_id)`` gives a ``ContextStore``."""

from __future__ import annotations

from ..errors import ConflictError, StoreDamagedError, StoreUnavailableError
from .base import SessionInfo, StoredContext
from .files import FileStore
from .postgres import PostgresStore
from .redis import RedisStore
from .sqlite import SQLiteStore

__all__ = [
    "ConflictError",
    "FileStore",
    "PostgresStore",
    "RedisStore",
    "SQLiteStore",
    "SessionInfo",
    "StoreDamagedError",
    "StoreUnavailableError",
    "StoredContext",
]
