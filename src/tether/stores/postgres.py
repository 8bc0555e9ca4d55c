"""``PostgresStore``: sessions in PostgreSQL (psycopg 3, a connection pool), each append its own
committed transaction: durable when it returns (the server groups concurrent commits' fsyncs).

Messages are rows keyed by (session, position), as in ``SQLiteStore``: an append costs the same
at any history length, and of two writers at one position the second gets ``ConflictError``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Self

from ..context import context_start, new_session_id
from ..errors import ConflictError
from ..messages import Message
from .base import (
    SessionInfo,
    StoredContext,
    check_session_id,
    reaching,
    read_messages,
    stored_form,
    stored_row,
)

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

SCHEMA_VERSION = 2  # 2: sessions.context, where the model's view begins

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresStore:
    """Conversations in the PostgreSQL database at ``dsn``, in tables of ``schema``."""

    def __init__(self, dsn: str, *, schema: str = "tether", max_connections: int = 10) -> None:
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema must be a lowercase SQL name, got {schema!r}")
        self.dsn = dsn
        self.schema = schema
        self.max_connections = max_connections
        self._pool: Any = None

    async def __aenter__(self) -> Self:
        await self._ready()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _ready(self) -> Any:
        if self._pool is None:
            from psycopg_pool import AsyncConnectionPool  # noqa: PLC0415 - the postgres extra

            pool = AsyncConnectionPool(
                self.dsn,
                min_size=1,
                max_size=self.max_connections,
                kwargs={"autocommit": True},  # transactions only where asked for
                open=False,
            )
            await pool.open(wait=True)
            try:
                async with pool.connection() as connection, connection.transaction():
                    await self._create(connection)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool
        return self._pool

    async def _create(self, connection: Any) -> None:
        s = self.schema
        await connection.execute("SELECT pg_advisory_xact_lock(7437226)")  # one creator at a time
        await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.sessions (id TEXT PRIMARY KEY, "
            "created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL, "
            "count INTEGER NOT NULL DEFAULT 0, next INTEGER NOT NULL DEFAULT 0)"
        )
        await connection.execute(  # schema 1 had no compaction: its views begin at 0
            f"ALTER TABLE {s}.sessions ADD COLUMN IF NOT EXISTS context INTEGER NOT NULL DEFAULT 0"
        )
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.messages (session TEXT NOT NULL, "
            "position INTEGER NOT NULL, format SMALLINT NOT NULL, role TEXT NOT NULL, "
            "body TEXT NOT NULL, PRIMARY KEY (session, position))"
        )
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        await connection.execute(
            f"INSERT INTO {s}.meta VALUES ('schema', %s) ON CONFLICT DO NOTHING",
            (str(SCHEMA_VERSION),),
        )
        cursor = await connection.execute(f"SELECT value FROM {s}.meta WHERE key = 'schema'")
        ((found,),) = await cursor.fetchall()
        if int(found) > SCHEMA_VERSION:
            raise RuntimeError(
                f"schema {s!r} was written by a newer tether (schema {found}); "
                f"this one reads up to {SCHEMA_VERSION}"
            )
        if int(found) < SCHEMA_VERSION:
            await connection.execute(
                f"UPDATE {s}.meta SET value = %s WHERE key = 'schema'", (str(SCHEMA_VERSION),)
            )

    async def _run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        pool = await self._ready()
        with reaching("PostgreSQL", _lost):
            async with pool.connection() as connection:
                cursor = await connection.execute(sql.replace("{s}", self.schema), params)
                return list(await cursor.fetchall()) if cursor.description else []

    # -- sessions ---------------------------------------------------------------------------------

    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        now = time.time()
        await self._run(
            "INSERT INTO {s}.sessions (id, created, updated) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (session, now, now),
        )
        ((following,),) = await self._run("SELECT next FROM {s}.sessions WHERE id = %s", (session,))
        return StoredContext(self, session, int(following))

    async def sessions(self) -> list[SessionInfo]:
        rows = await self._run(
            "SELECT id, created, updated, count FROM {s}.sessions ORDER BY created, id"
        )
        return [SessionInfo(r[0], r[1], r[2], r[3]) for r in rows]

    async def delete(self, session_id: str) -> bool:
        session = check_session_id(session_id)
        pool = await self._ready()
        with reaching("PostgreSQL", _lost):
            async with pool.connection() as connection, connection.transaction():
                s = self.schema
                await connection.execute(f"DELETE FROM {s}.messages WHERE session = %s", (session,))
                gone = await connection.execute(
                    f"DELETE FROM {s}.sessions WHERE id = %s", (session,)
                )
                return bool(gone.rowcount > 0)

    async def delete_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        pool = await self._ready()
        with reaching("PostgreSQL", _lost):
            async with pool.connection() as connection, connection.transaction():
                s = self.schema
                await connection.execute(
                    f"DELETE FROM {s}.messages WHERE session IN "
                    f"(SELECT id FROM {s}.sessions WHERE updated < %s)",
                    (cutoff,),
                )
                gone = await connection.execute(
                    f"DELETE FROM {s}.sessions WHERE updated < %s", (cutoff,)
                )
                return int(gone.rowcount)

    # -- for the contexts -------------------------------------------------------------------------

    async def append_at(self, session: str, position: int, message: Message) -> int:
        return await self._append_rows(session, position, [message])

    async def _append_rows(self, session: str, position: int, messages: Sequence[Message]) -> int:
        """Insert ``messages`` from ``position`` and move the session on, in one statement (one
        round trip, its own transaction): nothing is inserted unless the session is at
        ``position``."""
        from psycopg.errors import UniqueViolation  # noqa: PLC0415

        rows = [(i, *stored_form(m), m.role) for i, m in enumerate(messages, position)]
        count = len(rows)
        try:
            inserted = await self._run(
                "WITH moved AS (UPDATE {s}.sessions SET count = count + %s, next = %s, "
                "updated = %s, context = coalesce(%s, context) "
                "WHERE id = %s AND next = %s RETURNING id) "
                "INSERT INTO {s}.messages SELECT moved.id, r.position, r.format, r.role, r.body "
                "FROM moved, unnest(%s::int[], %s::smallint[], %s::text[], %s::text[]) "
                "AS r(position, format, body, role) RETURNING 1",
                (
                    count,
                    position + count,
                    time.time(),
                    context_start(messages, position),
                    session,
                    position,
                    *map(list, zip(*rows, strict=True)),
                ),
            )
        except UniqueViolation:
            inserted = []
        if len(inserted) != count:
            raise ConflictError(
                f"session {session!r} was appended to by another writer; reopen it to go on"
            )
        return position + count

    async def history_of(self, session: str) -> list[Message]:
        rows = await self._run(
            "SELECT format, role, body FROM {s}.messages WHERE session = %s ORDER BY position",
            (session,),
        )
        return read_messages(session, rows, stored_row)

    async def context_of(self, session: str) -> list[Message]:
        """The messages from where the model's view begins (the last compaction record's kept
        ones): nothing older is read."""
        rows = await self._run(
            "SELECT format, role, body FROM {s}.messages WHERE session = %s AND position >= "
            "(SELECT context FROM {s}.sessions WHERE id = %s) ORDER BY position",
            (session, session),
        )
        return read_messages(session, rows, stored_row)

    async def clear_at(self, session: str, known: int) -> int:
        """Remove the messages if the session is still at ``known``; the position moves on by
        one, so a writer that knew the session before the clear gets a ``ConflictError``."""
        pool = await self._ready()
        with reaching("PostgreSQL", _lost):
            async with pool.connection() as connection, connection.transaction():
                await self._clear(connection, session, known)
        return known + 1

    async def _clear(self, connection: Any, session: str, known: int) -> None:
        s = self.schema
        moved = await connection.execute(
            f"UPDATE {s}.sessions SET count = 0, next = next + 1, updated = %s "
            "WHERE id = %s AND next = %s",
            (time.time(), session, known),
        )
        if moved.rowcount != 1:
            raise ConflictError(
                f"session {session!r} was written to by another writer; reopen it to clear it"
            )
        await connection.execute(f"DELETE FROM {s}.messages WHERE session = %s", (session,))

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, written in one statement."""
        target = await self.open(None)
        if not messages:
            return target
        known = await self._append_rows(target.session_id, 0, messages)
        return StoredContext(self, target.session_id, known)


def _lost(exc: Exception) -> bool:
    """A connection refused, broken or timed out (the server, not the statement)."""
    from psycopg import InterfaceError, OperationalError  # noqa: PLC0415 - loaded by now

    return isinstance(exc, OperationalError | InterfaceError)
