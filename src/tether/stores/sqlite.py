"""``SQLiteStore``: sessions in one SQLite file (WAL), each append durable when it returns.

Appends are single-row inserts keyed by (session, position), so an append costs the same at
message 10 and 10,000, and two writers appending to one session at once cannot both win: the
second gets ``ConflictError``. Every ``PAGE`` appends, the same transaction packs the oldest
rows into one page row, so loading a long history reads a few rows, not thousands. One writer
thread per store commits the appends of every session of the process together (one fsync for
many); other processes may write the same file.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from ..context import context_start, new_session_id
from ..errors import ConflictError
from ..messages import Message
from .base import (
    SessionInfo,
    StoredContext,
    check_session_id,
    damaged,
    read_messages,
    stored_form,
    stored_row,
)
from .cache import HistoryCache
from .pages import page_messages, page_of
from .worker import Worker

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION = 3
PAGE = 64  # messages packed into one page row

# A session's messages: pages (see pages.py) up to position `packed`,
# then one row per message up to `next`; the model's view begins at `context`
# (the last compaction record's kept messages: tether.context.records).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tether_sessions (
    id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL,
    count INTEGER NOT NULL DEFAULT 0, next INTEGER NOT NULL DEFAULT 0,
    packed INTEGER NOT NULL DEFAULT 0, context INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tether_messages (
    session TEXT NOT NULL, position INTEGER NOT NULL, format INTEGER NOT NULL,
    role TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tether_pages (
    session TEXT NOT NULL, position INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session, position)
) WITHOUT ROWID;
"""

# Schema 1 had no pages: its sessions start with every message as a row.
_FROM_1 = """
ALTER TABLE tether_sessions ADD COLUMN packed INTEGER NOT NULL DEFAULT 0;
UPDATE tether_sessions SET packed = coalesce(
    (SELECT min(position) FROM tether_messages WHERE session = tether_sessions.id), next
);
UPDATE tether_meta SET value = '2' WHERE key = 'schema';
"""

# Schema 2 had no compaction: every view begins at the first message.
_FROM_2 = """
ALTER TABLE tether_sessions ADD COLUMN context INTEGER NOT NULL DEFAULT 0;
UPDATE tether_meta SET value = '3' WHERE key = 'schema';
"""


class SQLiteStore:
    """Conversations in the SQLite file at ``path`` (created if missing). Recently used
    sessions stay in memory, up to ``cache_bytes`` of stored messages in all, so loading a
    session again reads only what was appended since (0: read everything every time)."""

    def __init__(
        self, path: str | Path, *, busy_timeout: float = 5.0, cache_bytes: int = 64 << 20
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._cache = HistoryCache(cache_bytes)
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
        _use_wal(connection, self.busy_timeout)
        connection.execute("PRAGMA synchronous=FULL")  # durable when a commit returns
        return connection

    def _connect_writer(self) -> sqlite3.Connection:
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            self._migrate(connection)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            connection.close()
            raise
        return connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        """Create the tables, or bring a file of an older schema up to this one."""
        _script(connection, _SCHEMA)
        found = connection.execute("SELECT value FROM tether_meta WHERE key = 'schema'").fetchone()
        if found is None:
            connection.execute(
                "INSERT INTO tether_meta VALUES ('schema', ?)", (f"{SCHEMA_VERSION}",)
            )
        elif int(found[0]) > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} was written by a newer tether (schema {found[0]}); "
                f"this one reads up to {SCHEMA_VERSION}"
            )
        else:
            for script in (_FROM_1, _FROM_2)[int(found[0]) - 1 :]:
                _script(connection, script)

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
            _forget(connection, "session = ?", (session,))
            gone = connection.execute("DELETE FROM tether_sessions WHERE id = ?", (session,))
            return gone.rowcount > 0

        self._cache.drop(session)
        result: bool = await writer.submit(remove, grouped=True)
        return result

    async def delete_older_than(self, seconds: float) -> int:
        """Retention: remove the sessions not appended to for ``seconds``; how many went."""
        writer, _ = self._workers()
        cutoff = time.time() - seconds

        def remove(connection: sqlite3.Connection) -> int:
            old = "session IN (SELECT id FROM tether_sessions WHERE updated < ?)"
            _forget(connection, old, (cutoff,))
            return connection.execute(
                "DELETE FROM tether_sessions WHERE updated < ?", (cutoff,)
            ).rowcount

        self._cache.drop()
        result: int = await writer.submit(remove, grouped=True)
        return result

    # -- for the contexts -------------------------------------------------------------------------

    async def append_at(self, session: str, position: int, message: Message) -> int:
        fmt, body = stored_form(message)
        writer, _ = self._workers()
        view = context_start((message,), position)

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
                "UPDATE tether_sessions SET count = count + 1, next = ?, updated = ?, "
                "context = coalesce(?, context) WHERE id = ? AND next = ? RETURNING packed",
                (position + 1, time.time(), view, session, position),
            ).fetchall()
            if len(updated) != 1:
                raise ConflictError(f"session {session!r} was changed by another writer")
            if position + 1 - updated[0][0] >= PAGE:
                _pack(connection, session, updated[0][0])

        await writer.submit(insert, grouped=True)
        self._cache.extend(session, position, message, len(body))
        return position + 1

    async def history_of(self, session: str) -> list[Message]:
        return await self._load(session, view=False)

    async def context_of(self, session: str) -> list[Message]:
        """The messages from where the model's view begins (the last compaction record's kept
        ones): nothing older is read."""
        return await self._load(session, view=True)

    async def _load(self, session: str, *, view: bool) -> list[Message]:
        """The session's messages from its first, or from where its view begins (``view``);
        what the cache holds of them is not read again."""
        _, reader = self._workers()
        cached = self._cache.get(session)
        hint = (cached.created, cached.first, cached.end) if cached is not None else None
        found: tuple[float, int, bool, list[Message], int] | None = await reader.submit(
            lambda connection: _read_history(connection, session, hint, view)
        )
        if found is None:
            self._cache.drop(session)
            return []
        created, need, reused, tail, size = found
        first = need
        if reused and cached is not None:
            first, tail, size = cached.first, cached.messages + tail, size + cached.size
        self._cache.put(session, created, first, tail, size)
        return tail if need == first else tail[need - first :]

    async def clear_at(self, session: str, known: int) -> int:
        """Remove the messages if the session is still at ``known``; the position moves on by
        one, so a writer that knew the session before the clear gets a ``ConflictError``."""
        writer, _ = self._workers()

        def clear(connection: sqlite3.Connection) -> None:
            moved = connection.execute(
                "UPDATE tether_sessions SET count = 0, next = next + 1, packed = next + 1, "
                "updated = ? WHERE id = ? AND next = ?",
                (time.time(), session, known),
            )
            if moved.rowcount != 1:
                raise ConflictError(
                    f"session {session!r} was written to by another writer; reopen it to clear it"
                )
            _forget(connection, "session = ?", (session,))

        self._cache.drop(session)
        await writer.submit(clear, grouped=True)
        return known + 1

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, written in one transaction (full pages packed)."""
        target = await self.open(new_session_id())
        session = target.session_id
        entries = [(*stored_form(m), m.role) for m in messages]
        full = len(entries) - len(entries) % PAGE
        pages = [
            (session, start, page_of((f, r, b) for f, b, r in entries[start : start + PAGE]))
            for start in range(0, full, PAGE)
        ]
        rows = [(session, full + i, f, r, b) for i, (f, b, r) in enumerate(entries[full:])]
        view = context_start(messages) or 0
        writer, _ = self._workers()

        def insert(connection: sqlite3.Connection) -> None:
            connection.executemany("INSERT INTO tether_pages VALUES (?, ?, ?)", pages)
            connection.executemany("INSERT INTO tether_messages VALUES (?, ?, ?, ?, ?)", rows)
            connection.execute(
                "UPDATE tether_sessions SET count = ?, next = ?, packed = ?, updated = ?, "
                "context = ? WHERE id = ?",
                (len(entries), len(entries), full, time.time(), view, session),
            )

        await writer.submit(insert, grouped=True)
        return StoredContext(self, session, len(entries))


def _read_history(
    connection: sqlite3.Connection,
    session: str,
    hint: tuple[float, int, int] | None,
    view: bool,
) -> tuple[float, int, bool, list[Message], int] | None:
    """(created, the position needed, whether ``hint`` held, the messages read, their stored
    size) of ``session``, None if there is no such session. The position needed is the first
    message's, or where the model's view begins (``view``). ``hint`` is a cached (created,
    first, end): when it still holds the position needed, only the messages from its end are
    read."""
    connection.execute("BEGIN")  # the session, its pages and its rows from one snapshot
    try:
        meta = connection.execute(
            "SELECT created, next, count, context FROM tether_sessions WHERE id = ?", (session,)
        ).fetchone()
        if meta is None:
            return None
        created, following, count, context = meta
        first = following - count
        need = max(first, context) if view else first
        holds = (
            hint is not None
            and hint[0] == created
            and first <= hint[1] <= need
            and hint[2] <= following
        )
        start = hint[2] if holds and hint is not None else need
        pages = connection.execute(
            "SELECT position, body FROM tether_pages WHERE session = ? AND position > ? "
            "ORDER BY position",
            (session, start - PAGE),
        ).fetchall()
        rows = connection.execute(
            "SELECT format, role, body FROM tether_messages WHERE session = ? AND position >= ? "
            "ORDER BY position",
            (session, start),
        ).fetchall()
    finally:
        connection.execute("COMMIT")
    messages: list[Message] = []
    for at, page in pages:
        try:
            messages += page_messages(page)[max(0, start - at) :]
        except ValueError as exc:
            raise damaged(session, max(at, first) - first, exc) from None
    messages += read_messages(session, rows, stored_row, start - first + len(messages))
    size = sum(len(page) for _, page in pages) + sum(len(row[2]) for row in rows)
    return created, need, holds, messages, size


def _script(connection: sqlite3.Connection, script: str) -> None:
    for statement in filter(str.strip, script.split(";")):
        connection.execute(statement)


def _forget(connection: sqlite3.Connection, where: str, args: tuple[object, ...]) -> None:
    """Delete the messages and pages of the sessions ``where`` picks."""
    connection.execute(f"DELETE FROM tether_messages WHERE {where}", args)
    connection.execute(f"DELETE FROM tether_pages WHERE {where}", args)


def _pack(connection: sqlite3.Connection, session: str, start: int) -> None:
    """Move the ``PAGE`` rows from ``start`` into one page row."""
    span = (session, start, start + PAGE)
    rows = connection.execute(
        "SELECT format, role, body FROM tether_messages "
        "WHERE session = ? AND position >= ? AND position < ? ORDER BY position",
        span,
    ).fetchall()
    connection.execute("INSERT INTO tether_pages VALUES (?, ?, ?)", (session, start, page_of(rows)))
    connection.execute(
        "DELETE FROM tether_messages WHERE session = ? AND position >= ? AND position < ?", span
    )
    connection.execute(
        "UPDATE tether_sessions SET packed = ? WHERE id = ?", (start + PAGE, session)
    )


def _use_wal(connection: sqlite3.Connection, timeout: float) -> None:
    """Switch a new file to WAL. SQLite answers "database is locked" at once, without its busy
    handler, while another process opening the same new file switches it too: retry until
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
