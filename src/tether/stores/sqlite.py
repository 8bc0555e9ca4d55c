"""``SQLiteStore``: sessions in one SQLite file (WAL), each append durable when it returns.

Appends are single-row inserts keyed by (session, position), so an append costs the same at
message 10 and 10,000, and two writers appending to one session at once cannot both win: the
second gets ``ConflictError``. One writer thread per store commits the appends of every session
of the process together (one fsync for many); other processes may write the same file.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from ..codec import message_from_json
from ..context import new_session_id
from ..errors import ConflictError
from ..messages import Message, Role
from .base import (
    MESSAGE_FORMAT,
    PLAIN_TEXT,
    SessionInfo,
    StoredContext,
    check_session_id,
    stored_form,
)
from .worker import Worker

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tether_sessions (
    id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL,
    count INTEGER NOT NULL DEFAULT 0, next INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tether_messages (
    session TEXT NOT NULL, position INTEGER NOT NULL, format INTEGER NOT NULL,
    role TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session, position)
) WITHOUT ROWID;
"""


class SQLiteStore:
    """Conversations in the SQLite file at ``path`` (created if missing)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._writer: Worker | None = None
        self._reader: Worker | None = None

    # -- lifetime ---------------------------------------------------------------------------------

    def _workers(self) -> tuple[Worker, Worker]:
        if self._writer is None or self._reader is None:
            self._writer = Worker(self._connect_writer, "tether-sqlite-writer")
            self._reader = Worker(self._connect, "tether-sqlite-reader")
        return self._writer, self._reader

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
        )
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")  # durable when a commit returns
        return connection

    def _connect_writer(self) -> sqlite3.Connection:
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                connection.execute(statement)
            found = connection.execute(
                "SELECT value FROM tether_meta WHERE key = 'schema'"
            ).fetchone()
            if found is None:
                connection.execute(
                    "INSERT INTO tether_meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
                )
            elif int(found[0]) > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} was written by a newer tether (schema {found[0]}); "
                    f"this one reads up to {SCHEMA_VERSION}"
                )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            connection.close()
            raise
        return connection

    async def __aenter__(self) -> Self:
        self._workers()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Finish what is queued and close the file."""
        writer, reader, self._writer, self._reader = self._writer, self._reader, None, None
        for worker in (writer, reader):
            if worker is not None:
                worker.close()

    # -- sessions ---------------------------------------------------------------------------------

    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        writer, _ = self._workers()

        def create(connection: sqlite3.Connection) -> int:
            now = time.time()
            connection.execute(
                "INSERT OR IGNORE INTO tether_sessions (id, created, updated) VALUES (?, ?, ?)",
                (session, now, now),
            )
            row = connection.execute(
                "SELECT next FROM tether_sessions WHERE id = ?", (session,)
            ).fetchone()
            return int(row[0])

        following = await writer.submit(create, grouped=True)
        return StoredContext(self, session, following)

    async def sessions(self) -> list[SessionInfo]:
        """Every stored session, oldest first."""
        _, reader = self._workers()

        def read(connection: sqlite3.Connection) -> list[SessionInfo]:
            rows = connection.execute(
                "SELECT id, created, updated, count FROM tether_sessions ORDER BY created, id"
            ).fetchall()
            return [SessionInfo(r[0], r[1], r[2], r[3]) for r in rows]

        result: list[SessionInfo] = await reader.submit(read)
        return result

    async def delete(self, session_id: str) -> bool:
        """Remove a session and its messages; False if there was none."""
        session = check_session_id(session_id)
        writer, _ = self._workers()

        def remove(connection: sqlite3.Connection) -> bool:
            connection.execute("DELETE FROM tether_messages WHERE session = ?", (session,))
            gone = connection.execute("DELETE FROM tether_sessions WHERE id = ?", (session,))
            return gone.rowcount > 0

        result: bool = await writer.submit(remove, grouped=True)
        return result

    async def delete_older_than(self, seconds: float) -> int:
        """Retention: remove the sessions not appended to for ``seconds``; how many went."""
        writer, _ = self._workers()
        cutoff = time.time() - seconds

        def remove(connection: sqlite3.Connection) -> int:
            connection.execute(
                "DELETE FROM tether_messages WHERE session IN "
                "(SELECT id FROM tether_sessions WHERE updated < ?)",
                (cutoff,),
            )
            return connection.execute(
                "DELETE FROM tether_sessions WHERE updated < ?", (cutoff,)
            ).rowcount

        result: int = await writer.submit(remove, grouped=True)
        return result

    # -- for the contexts -------------------------------------------------------------------------

    async def append_at(self, session: str, position: int, message: Message) -> int:
        fmt, body = stored_form(message)
        writer, _ = self._workers()

        def insert(connection: sqlite3.Connection) -> None:
            try:
                connection.execute(
                    "INSERT INTO tether_messages VALUES (?, ?, ?, ?, ?)",
                    (session, position, fmt, message.role, body),
                )
            except sqlite3.IntegrityError:
                raise ConflictError(
                    f"session {session!r} was appended to by another writer; reopen it to go on"
                ) from None
            updated = connection.execute(
                "UPDATE tether_sessions SET count = count + 1, next = ?, updated = ? "
                "WHERE id = ? AND next = ?",
                (position + 1, time.time(), session, position),
            )
            if updated.rowcount != 1:
                raise ConflictError(f"session {session!r} was changed by another writer")

        await writer.submit(insert, grouped=True)
        return position + 1

    async def history_of(self, session: str) -> list[Message]:
        _, reader = self._workers()

        def read(connection: sqlite3.Connection) -> list[tuple[int, Role, str]]:
            return connection.execute(
                "SELECT format, role, body FROM tether_messages WHERE session = ? "
                "ORDER BY position",
                (session,),
            ).fetchall()

        rows: list[tuple[int, Role, str]] = await reader.submit(read)
        return [
            Message(role, body) if fmt == PLAIN_TEXT else _message(fmt, body)
            for fmt, role, body in rows
        ]

    async def clear_at(self, session: str, known: int) -> int:
        writer, _ = self._workers()

        def clear(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM tether_messages WHERE session = ?", (session,))
            connection.execute(
                "UPDATE tether_sessions SET count = 0, updated = ? WHERE id = ?",
                (time.time(), session),
            )

        await writer.submit(clear, grouped=True)
        return known

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, written in one transaction."""
        target = await self.open(new_session_id())
        rows = []
        for position, message in enumerate(messages):
            fmt, body = stored_form(message)
            rows.append((target.session_id, position, fmt, message.role, body))
        writer, _ = self._workers()

        def insert(connection: sqlite3.Connection) -> None:
            connection.executemany("INSERT INTO tether_messages VALUES (?, ?, ?, ?, ?)", rows)
            connection.execute(
                "UPDATE tether_sessions SET count = ?, next = ?, updated = ? WHERE id = ?",
                (len(rows), len(rows), time.time(), target.session_id),
            )

        await writer.submit(insert, grouped=True)
        return StoredContext(self, target.session_id, len(rows))


def _message(fmt: int, body: str) -> Message:
    if fmt != MESSAGE_FORMAT:
        raise ValueError(f"a stored message has format {fmt}; this tether reads {MESSAGE_FORMAT}")
    return message_from_json(body)
