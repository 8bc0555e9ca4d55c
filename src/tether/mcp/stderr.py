"""``StderrTail``: the last bytes a child process wrote to its stderr, and nothing more. The child
writes into a pipe that the event loop reads as data arrives, keeping a bounded tail, so a server
that floods its stderr costs neither memory nor disk."""

from __future__ import annotations

import asyncio
import contextlib
import os

__all__ = ["StderrTail"]

TAIL_BYTES = 64 * 1024  # what is kept of a child's stderr
_READ = 64 * 1024
_READS = 16  # reads at most per call, so a flood cannot hold the event loop


class StderrTail:
    """``open()`` gives the write end for the child; the loop then reads the other end into
    the tail until the last writer closes it or ``close()`` is called."""

    __slots__ = ("_buffer", "_fd", "_limit", "_loop")

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def open(self) -> int:
        """A new pipe's write end (the caller closes it once the child has it)."""
        read, write = os.pipe()
        os.set_blocking(read, False)
        loop = asyncio.get_running_loop()
        try:
            loop.add_reader(read, self._drain)
        except BaseException:
            os.close(read)
            os.close(write)
            raise
        self._fd, self._loop = read, loop
        return write

    def text(self, chars: int = 1_200) -> str:
        """The last ``chars`` characters written so far, stripped (short enough that an error
        quoting them is not cut: the loop keeps 2,000 characters of an exception)."""
        self._drain()
        return self._buffer.decode("utf-8", "replace")[-chars:].strip()

    def close(self) -> None:
        """Keep what has been written so far and stop reading."""
        self._drain()
        self._release()

    def _drain(self) -> None:
        """Read what the pipe holds now (up to ``_READS`` reads: the loop calls again)."""
        for _ in range(_READS):
            if self._fd is None:
                return
            try:
                data = os.read(self._fd, _READ)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # every writer is gone
                self._release()
                return
            self._buffer += data
            if len(self._buffer) > self._limit:
                del self._buffer[: len(self._buffer) - self._limit]

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)
