"""Writing whole: ``write_all`` goes on after a short write (a filling disk makes them) and
raises when the system refuses, so no caller mistakes half a record for a whole one."""

from __future__ import annotations

import errno
import os

__all__ = ["write_all"]


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` from its current offset; ``OSError`` when the system
    fails a write or a write makes no progress."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "a write made no progress")
        view = view[written:]
