"""An append-only file of whole lines: each ``append`` is written whole or raises, and a line
that failed half-way (a full disk) is taken back out, so a reader never meets half a line."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from ..base.writes import append_whole

__all__ = ["LineFile"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


class LineFile:
    """Lines appended to ``path`` (it and its directory are created on the first append)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = threading.Lock()

    def append(self, line: bytes) -> None:
        """Append ``line`` (ending in a newline) whole, or raise ``OSError`` and leave the file
        as it was."""
        with self._lock:
            fd = self._open()
            append_whole(fd, line, os.lseek(fd, 0, os.SEEK_END), sync=False)

    def close(self) -> None:
        """Close the file (a later append opens it again)."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _O_CLOEXEC | _O_BINARY
            self._fd = os.open(self.path, flags, 0o644)
        return self._fd

    def __del__(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
