"""The store backends the contract runs against, each kept at a test's own place. PostgreSQL and
Redis need ``$TETHER_PG_DSN`` / ``$TETHER_REDIS_URL`` (``scripts/services.sh`` starts both):
without them those cases skip locally and fail under CI."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tether.stores import FileStore, PostgresStore, RedisStore, SQLiteStore

BACKENDS = ["sqlite", "file", "postgres", "redis"]


def make(kind: str, place: Path | str) -> Any:
    """A store of ``kind`` for the test whose directory is ``place``."""
    place = Path(place)
    if kind == "sqlite":
        return SQLiteStore(place / "chats.db")
    if kind == "file":
        return FileStore(place / "chats")
    name = "t_" + hashlib.sha256(str(place).encode()).hexdigest()[:20]
    if kind == "postgres":
        return PostgresStore(_server("TETHER_PG_DSN"), schema=name)
    return RedisStore(_server("TETHER_REDIS_URL"), prefix=name)


def _server(variable: str) -> str:
    found = os.environ.get(variable)
    if not found:
        if os.environ.get("CI"):
            pytest.fail(f"{variable} is not set: .ci/run starts the servers for these tests")
        pytest.skip(f"no server here (set {variable}; scripts/services.sh starts one)")
    return found
