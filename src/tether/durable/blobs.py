"""Blob stores: where a durable run keeps a value too large for Temporal's history (a payload
over ``DurableOptions.offload_bytes``), so the history holds a small reference instead.

``Blobs`` is the seam (``put`` / ``get`` of bytes by key); ``FileBlobs`` keeps them in a folder
that every worker and client shares, ``StoreBlobs`` in a tether store's own rows (what a
``TemporalAgent`` with a store uses). A key names its bytes for good (``OffloadCodec`` derives it
from their SHA-256): a second ``put`` of a key, a retried activity's, writes the same bytes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import ConflictError
from ..messages import Message, TextBlock
from ..stores.base import SessionRows

__all__ = ["BLOB_SESSION", "BlobMissingError", "Blobs", "FileBlobs", "StoreBlobs", "check_key"]

BLOB_SESSION = "tether-blob-"  # the session id prefix of a blob kept in a store
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class BlobMissingError(LookupError):
    """A referenced blob is not in the blob store (deleted, or another store was configured)."""


@runtime_checkable
class Blobs(Protocol):
    """Bytes by key, shared by every worker and client of a durable agent."""

    async def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key`` (durably when it returns); the same key again replaces
        it whole."""
        ...

    async def get(self, key: str) -> bytes:
        """The bytes under ``key``; ``BlobMissingError`` if there are none."""
        ...


def check_key(key: str) -> str:
    """``key`` if it can name a blob (letters, digits, ``.``, ``_``, ``-``; no path)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"a blob key is 1-128 letters, digits, '.', '_' or '-', got {key!r}")
    return key


class FileBlobs:
    """Blobs as files of ``directory`` (made if missing), for workers that share a disk. Each
    put is a whole write (a temporary file renamed over the key's), so a reader never sees part
    of one."""

    __slots__ = ("directory",)

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._write, check_key(key), data)

    def _write(self, key: str, data: bytes) -> None:
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.directory / key)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    async def get(self, key: str) -> bytes:
        path = self.directory / check_key(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise BlobMissingError(f"no blob {key!r} in {self.directory.name!r}") from None

    def __repr__(self) -> str:
        return f"FileBlobs({str(self.directory)!r})"


class StoreBlobs:
    """Blobs in a tether store: each a session of its own (``tether-blob-<key>``) holding one
    message, the bytes as base64 text. A key's bytes never change, so a put that finds the
    session written already has nothing to do."""

    __slots__ = ("rows",)

    def __init__(self, rows: SessionRows) -> None:
        self.rows = rows

    async def put(self, key: str, data: bytes) -> None:
        session = BLOB_SESSION + check_key(key)
        context = await self.rows.open(session)
        if context.position:
            return  # written before (the same bytes: the key is their hash)
        message = Message("user", (TextBlock(base64.b64encode(data).decode("ascii")),))
        with contextlib.suppress(ConflictError):  # another attempt wrote it meanwhile
            await self.rows.append_at(session, context.position, message)

    async def get(self, key: str) -> bytes:
        history = await self.rows.history_of(BLOB_SESSION + check_key(key))
        if not history:
            raise BlobMissingError(f"no blob {key!r} in the store")
        return base64.b64decode(history[0].text)

    def __repr__(self) -> str:
        return f"StoreBlobs({type(self.rows).__name__})"
