"""``FileStore``: one JSON-lines file per session in a directory, each append durable when it
returns (written whole and fsynced under an exclusive lock, or refused and taken back).

A file's name is a hash of its session id (an id is never a path); its first line holds the id.
A context remembers its position: the file's size after its last append, plus the header's
``base`` (how far the session had gone when it was last cleared, so positions only grow). If the
position moved meanwhile, another writer wrote first and this write is a ``ConflictError``. A
line cut short by a crash is ignored when read and cut off by the next append. Deleting (and
retention) takes the same lock, so a writer waiting on a session that went gets a conflict.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from ..base.interrupt import survive
from ..base.writes import append_whole, whole_lines, write_all
from ..context import new_session_id
from ..errors import ConflictError, StoreDamagedError
from ..messages import Message
from .base import SessionInfo, StoredContext, check_session_id, damaged
from .jsonforms import message_from_dict, message_to_dict

__all__ = ["FileStore"]

FORMAT = 1
_SUFFIX = ".jsonl"
_HEADER_MAX = 1 << 16
_log = logging.getLogger("tether.stores")


class FileStore:
    """Sessions as JSON-lines files in ``directory`` (created if missing)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Nothing is held open between calls."""

    def _path(self, session: str) -> str:
        # a plain string: pathlib would intern every file name it ever saw
        name = hashlib.sha256(session.encode()).hexdigest()[:40] + _SUFFIX
        return os.path.join(self.directory, name)

    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        position = await survive(asyncio.to_thread(self._create, session))
        return StoredContext(self, session, position)

    def _create(self, session: str) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(session)
        with _locked(path, create=True) as fd:
            size = whole_lines(fd)
            if size == 0:  # new, or its header was cut short by a crash
                os.ftruncate(fd, 0)
                size = _write_header(fd, _Header(session, time.time(), 0))
                _sync_directory(self.directory)
                return size
            header = _read_header(fd, path)
            if header.session != session:
                raise ValueError(f"{_name(path)} belongs to another session")
            return header.base + size

    async def sessions(self) -> list[SessionInfo]:
        """Every stored session, oldest first (a file that is not a readable session is
        skipped and logged)."""
        found = await asyncio.to_thread(self._scan)
        return sorted(found, key=lambda s: (s.created, s.session_id))

    def _scan(self) -> list[SessionInfo]:
        found = []
        for path in self._files():
            try:
                found.append(_info(path))
            except FileNotFoundError:
                continue  # deleted meanwhile
            except (OSError, ValueError, RuntimeError) as exc:
                _log.warning("skipping %s: not a readable session (%s)", _name(path), exc)
        return found

    def _files(self) -> list[str]:
        try:
            with os.scandir(self.directory) as entries:
                return [e.path for e in entries if e.name.endswith(_SUFFIX)]
        except FileNotFoundError:
            return []

    async def delete(self, session_id: str) -> bool:
        """Remove a session; False if there was none."""
        path = self._path(check_session_id(session_id))
        return await survive(asyncio.to_thread(_remove_if, path, None))

    async def delete_older_than(self, seconds: float) -> int:
        """Retention: remove the sessions not appended to for ``seconds``; how many went. Each
        session is checked and removed under its lock, so one appended to meanwhile stays."""
        cutoff = time.time() - seconds

        def expire() -> int:
            return sum(_remove_if(path, cutoff) for path in self._files())

        return await survive(asyncio.to_thread(expire))

    # -- for the contexts -------------------------------------------------------------------------

    def _append(self, session: str, known: int, messages: Sequence[Message]) -> int:
        lines = b"".join(_line(m) for m in messages)
        with _locked(self._path(session), create=False, session=session) as fd:
            size = whole_lines(fd)
            base = _read_header(fd, self._path(session)).base
            if base + size != known:
                raise ConflictError(
                    f"session {session!r} was written to by another writer; reopen it to go on"
                )
            append_whole(fd, lines, size)  # a line cut short by a crash goes first
            return base + size + len(lines)

    def _history(self, session: str) -> list[Message]:
        path = self._path(session)
        try:
            with open(path, "rb") as f:
                lines = _lines(f.read())[1:]
        except FileNotFoundError:
            return []  # deleted
        try:  # one parse for the whole file, not one per line
            data = json.loads(b"[" + b",".join(lines) + b"]")
            if type(data) is not list or len(data) != len(lines):
                raise ValueError("a line holds more than one value")
            return [message_from_dict(d) for d in data]
        except (ValueError, TypeError, KeyError, AttributeError):
            return [_read_line(session, at, line) for at, line in enumerate(lines)]

    def _clear(self, session: str, known: int) -> int:
        path = self._path(session)
        with _locked(path, create=False, session=session) as fd:
            header = _read_header(fd, path)
            if header.base + whole_lines(fd) != known:
                raise ConflictError(
                    f"session {session!r} was written to by another writer; reopen it to clear it"
                )
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            return known + _write_header(fd, _Header(session, header.created, known))

    async def append_at(self, session: str, known: int, message: Message) -> int:
        return await survive(asyncio.to_thread(self._append, session, known, [message]))

    async def history_of(self, session: str) -> list[Message]:
        return await asyncio.to_thread(self._history, session)

    async def clear_at(self, session: str, known: int) -> int:
        return await survive(asyncio.to_thread(self._clear, session, known))

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, written at once (one fsync)."""
        session = new_session_id()
        known = await survive(asyncio.to_thread(self._create, session))
        known = await survive(asyncio.to_thread(self._append, session, known, messages))
        return StoredContext(self, session, known)


@dataclass(frozen=True, slots=True)
class _Header:
    """A session file's first line: its id, when it was created, and where its positions
    start (how far it had gone when last cleared)."""

    session: str
    created: float
    base: int


@contextmanager
def _locked(path: str, *, create: bool, session: str | None = None) -> Iterator[int]:
    """``path`` open and exclusively locked. A file deleted while this waited for the lock is
    made again (``create``) or a ``ConflictError`` naming ``session``."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0) | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            raise _deleted(session or _name(path)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink > 0:
                yield fd
                return
        finally:
            os.close(fd)  # closing releases the lock
        if not create:
            raise _deleted(session or _name(path))


def _deleted(session: str) -> ConflictError:
    return ConflictError(f"session {session!r} was deleted by another writer")


def _remove_if(path: str, cutoff: float | None) -> bool:
    """Delete the session file at ``path`` under its lock: always (``cutoff`` None), or if it
    was last written before ``cutoff`` (a file that is not a session is left alone)."""
    try:
        with _locked(path, create=False) as fd:
            if cutoff is not None:
                try:
                    _read_header(fd, path)
                except (ValueError, RuntimeError) as exc:
                    _log.warning("retention skips %s: not a session (%s)", _name(path), exc)
                    return False
                if os.fstat(fd).st_mtime >= cutoff:
                    return False
            os.unlink(path)
            return True
    except ConflictError:
        return False  # already gone


def _write_header(fd: int, header: _Header) -> int:
    data = {"tether": FORMAT, "session_id": header.session, "created": header.created}
    if header.base:
        data["base"] = header.base
    line = (json.dumps(data) + "\n").encode()
    write_all(fd, line)
    os.fsync(fd)
    return len(line)


def _read_header(fd: int, path: str) -> _Header:
    """The header of the open session file ``fd``; a clear ``ValueError`` if it has none."""
    first = os.pread(fd, _HEADER_MAX, 0).partition(b"\n")[0]
    try:
        header: Any = json.loads(first)
    except ValueError:
        raise _no_header(path) from None
    return _checked_header(header, path)


def _checked_header(header: Any, path: str) -> _Header:
    ok = (
        type(header) is dict
        and isinstance(header.get("session_id"), str)
        and type(header.get("created")) in (int, float)
        and type(header.get("base", 0)) is int
        and type(header.get("tether", 0)) is int
    )
    if not ok:
        raise _no_header(path)
    if header.get("tether", 0) > FORMAT:
        raise RuntimeError(
            f"{_name(path)} was written by a newer tether (format {header['tether']})"
        )
    return _Header(header["session_id"], float(header["created"]), header.get("base", 0))


def _name(path: str) -> str:
    return os.path.basename(path)


def _no_header(path: str) -> StoreDamagedError:
    return StoreDamagedError(f"{_name(path)} has no readable session header")


def _info(path: str) -> SessionInfo:
    with open(path, "rb") as f:
        first = f.readline(_HEADER_MAX)
        if not first.endswith(b"\n"):
            raise ValueError("no complete header")
        try:
            header = _checked_header(json.loads(first), path)
        except json.JSONDecodeError:
            raise _no_header(path) from None
        count = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
        # the file's clock may lag time.time() by a tick: never updated before created
        updated = max(os.fstat(f.fileno()).st_mtime, header.created)
    return SessionInfo(header.session, header.created, updated, count)


def _line(message: Message) -> bytes:
    """One stored line; text that UTF-8 cannot hold (a lone surrogate) is kept as an escape."""
    data = message_to_dict(message)
    try:
        return (json.dumps(data, ensure_ascii=False) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(data) + "\n").encode()


def _read_line(session: str, position: int, line: bytes) -> Message:
    try:
        return message_from_dict(json.loads(line))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise damaged(session, position, exc) from None


def _lines(data: bytes) -> list[bytes]:
    """The complete lines of ``data`` (a last line without its newline was cut short)."""
    lines = data.split(b"\n")
    return [line for line in lines[:-1] if line]


def _sync_directory(directory: Path) -> None:
    """Make a new file's name durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
