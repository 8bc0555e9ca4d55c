"""Writing whole: ``write_all`` goes on after a short write (a filling disk makes them) and
raises when the system refuses, so no caller mistakes half a record for a whole one; and
``whole_lines``, where a file of lines really ends (a crash may leave half a line after it)."""

from __future__ import annotations

import contextlib
import errno
import os

__all__ = ["append_whole", "whole_lines", "write_all"]

_BLOCK = 4096


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` from its current offset; ``OSError`` when the system
    fails a write or a write makes no progress."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "a write made no progress")
        view = view[written:]


def whole_lines(fd: int) -> int:
    """The size of the file open as ``fd`` up to and including its last newline."""
    end = os.fstat(fd).st_size
    while end > 0:
        start = max(0, end - _BLOCK)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def append_whole(fd: int, data: bytes, at: int, *, sync: bool = True) -> None:
    """Write ``data`` at offset ``at`` of the file, cutting it there first (what a crash left
    after ``at`` goes), then fsync when ``sync``. On any failure the file is cut back to
    ``at`` and the error raised: a reader never meets part of ``data``."""
    try:
        if os.fstat(fd).st_size != at:
            os.ftruncate(fd, at)
        os.lseek(fd, at, os.SEEK_SET)
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, at)
        raise
