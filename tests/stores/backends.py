"""The store backends the contract runs against, each kept at a test's own place. PostgreSQL
needs ``$TETHER_PG_DSN`` (``scripts/services.sh`` starts one): without it the postgres cases skip
locally and fail under CI."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tether.stores import FileStore, PostgresStore, SQLiteStore

BACKENDS = ["sqlite", "file", "postgres"]


def make(kind: str, place: Path | str) -> Any:
    """A store of ``kind`` for the test whose directory is ``place``."""
    place = Path(place)
    if kind == "sqlite":
        return SQLiteStore(place / "chats.db")
    if kind == "file":
        return FileStore(place / "chats")
    dsn = os.environ.get("TETHER_PG_DSN")
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail("TETHER_PG_DSN is not set: .ci/run starts PostgreSQL for these tests")
        pytest.skip("no PostgreSQL here (set TETHER_PG_DSN; scripts/services.sh starts one)")
    schema = "t_" + hashlib.sha256(str(place).encode()).hexdigest()[:20]
    return PostgresStore(dsn, schema=schema)
