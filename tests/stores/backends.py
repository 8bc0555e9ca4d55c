"""The store backends the contract runs against, each kept at a test's own place. PostgreSQL and
Redis need ``$TETHER_PG_DSN`` / ``$TETHER_REDIS_URL`` (``scripts/services.sh`` starts both):
without them those cases skip, before any child process starts, or fail under ``scripts/test.sh``
(``parts.py``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from parts import needs, server
from tether.stores import FileStore, PostgresStore, RedisStore, SQLiteStore

HERE = Path(__file__).parent
# What a child process started by a test needs to import this module (and ``parts``) too.
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join((str(HERE), str(HERE.parent)))}

BACKENDS: list[Any] = [
    "sqlite",
    "file",
    pytest.param("postgres", marks=needs("postgres")),
    pytest.param("redis", marks=needs("redis")),
]


def make(kind: str, place: Path | str) -> Any:
    """A store of ``kind`` for the test whose directory is ``place``."""
    place = Path(place)
    if kind == "sqlite":
        return SQLiteStore(place / "chats.db")
    if kind == "file":
        return FileStore(place / "chats")
    name = "t_" + hashlib.sha256(str(place).encode()).hexdigest()[:20]
    if kind == "postgres":
        return PostgresStore(server("postgres"), schema=name)
    return RedisStore(server("redis"), prefix=name)
