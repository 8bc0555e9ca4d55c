"""``FileStore``: one JSON-lines file per session in a directory, each append durable when it
returns (written and fsynced under an exclusive lock).

A file's name is a hash of its session id (an id is never a path); its first line holds the id.
A context remembers the file's size after its last append: if the file grew meanwhile, another
writer appended first and this append is a ``ConflictError``. A line cut short by a crash is
ignored when read and cut off by the next append.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from ..codec import message_from_dict, message_to_dict
from ..context import new_session_id
from ..errors import ConflictError
from ..interrupt import survive
from ..messages import Message
from .base import SessionInfo, StoredContext, check_session_id

__all__ = ["FileStore"]

FORMAT = 1
_SUFFIX = ".jsonl"


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

    def _path(self, session: str) -> Path:
        return self.directory / (hashlib.sha256(session.encode()).hexdigest()[:40] + _SUFFIX)

    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        size = await survive(asyncio.to_thread(self._create, session))
        return StoredContext(self, session, size)

    def _create(self, session: str) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(session)
        with _locked(path) as fd:
            if _whole_lines(fd) == 0:  # new, or its header was cut short by a crash
                os.ftruncate(fd, 0)
                header = {"tether": FORMAT, "session_id": session, "created": time.time()}
                os.write(fd, (json.dumps(header) + "\n").encode())
                os.fsync(fd)
                _sync_directory(self.directory)
            else:
                _check_header(path, session)
            return _whole_lines(fd)

    async def sessions(self) -> list[SessionInfo]:
        """Every stored session, oldest first."""
        found = await asyncio.to_thread(self._scan)
        return sorted(found, key=lambda s: (s.created, s.session_id))

    def _scan(self) -> list[SessionInfo]:
        if not self.directory.exists():
            return []
        found = []
        for path in self.directory.glob("*" + _SUFFIX):
            with path.open("rb") as f:
                first = f.readline()
                if not first.endswith(b"\n"):
                    continue  # a header cut short by a crash: no session yet
                header = json.loads(first)
                count = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
                # the file's clock may lag time.time() by a tick: never updated before created
                updated = max(os.fstat(f.fileno()).st_mtime, header["created"])
            found.append(SessionInfo(header["session_id"], header["created"], updated, count))
        return found

    async def delete(self, session_id: str) -> bool:
        """Remove a session; False if there was none."""
        path = self._path(check_session_id(session_id))
        try:
            await survive(asyncio.to_thread(path.unlink))
        except FileNotFoundError:
            return False
        return True

    async def delete_older_than(self, seconds: float) -> int:
        """Retention: remove the sessions not appended to for ``seconds``; how many went."""
        cutoff = time.time() - seconds
        gone = 0
        for info in await self.sessions():
            if info.updated < cutoff and await self.delete(info.session_id):
                gone += 1
        return gone

    # -- for the contexts -------------------------------------------------------------------------

    def _append(self, session: str, known: int, messages: Sequence[Message]) -> int:
        lines = "".join(
            json.dumps(message_to_dict(m), ensure_ascii=False) + "\n" for m in messages
        ).encode()
        path = self._path(session)
        with _locked(path) as fd:
            size = _whole_lines(fd)
            if size != known:
                raise ConflictError(
                    f"session {session!r} was appended to by another writer; reopen it to go on"
                )
            os.ftruncate(fd, size)  # a line cut short by a crash goes
            os.lseek(fd, size, os.SEEK_SET)
            os.write(fd, lines)
            os.fsync(fd)
            return size + len(lines)

    def _history(self, session: str) -> list[Message]:
        lines = _lines(self._path(session).read_bytes())[1:]
        try:  # one parse for the whole file, not one per line
            data = json.loads(b"[" + b",".join(lines) + b"]")
        except ValueError:
            data = None
        if type(data) is not list or len(data) != len(lines):  # a damaged line: find it
            data = [json.loads(line) for line in lines]
        return [message_from_dict(d) for d in data]

    def _clear(self, session: str) -> int:
        path = self._path(session)
        with _locked(path) as fd:
            first = _lines(os.pread(fd, 1 << 16, 0))[:1]
            header = first[0] + b"\n" if first else b""
            os.ftruncate(fd, len(header))
            os.fsync(fd)
            return len(header)

    async def append_at(self, session: str, known: int, message: Message) -> int:
        return await survive(asyncio.to_thread(self._append, session, known, [message]))

    async def history_of(self, session: str) -> list[Message]:
        return await asyncio.to_thread(self._history, session)

    async def clear_at(self, session: str, known: int) -> int:
        return await survive(asyncio.to_thread(self._clear, session))

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, written at once (one fsync)."""
        session = new_session_id()
        known = await survive(asyncio.to_thread(self._create, session))
        known = await survive(asyncio.to_thread(self._append, session, known, messages))
        return StoredContext(self, session, known)


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _whole_lines(fd: int) -> int:
    """The size of the file up to its last newline (what a crash may have left after it goes)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    block = 4096
    end = size
    while end > 0:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _lines(data: bytes) -> list[bytes]:
    """The complete lines of ``data`` (a last line without its newline was cut short)."""
    lines = data.split(b"\n")
    return [line for line in lines[:-1] if line]


def _check_header(path: Path, session: str) -> None:
    with path.open("rb") as f:
        header: dict[str, Any] = json.loads(f.readline())
    if header.get("session_id") != session:
        raise ValueError(f"{path.name} belongs to another session")
    if header.get("tether", 0) > FORMAT:
        raise RuntimeError(f"{path.name} was written by a newer tether (format {header['tether']})")


def _sync_directory(directory: Path) -> None:
    """Make a new file's name durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
