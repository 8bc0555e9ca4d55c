"""An MCP server as a child process: its stdin and stdout as message streams (``process``), its
stderr kept as a bounded tail (``StderrTail``) and, when the streams close, every process it
started ended with it (``tree``), whatever process group or session it moved to."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .process import process_streams
from .stderr import StderrTail
from .tree import MARK, end_marked, new_mark

__all__ = ["child_streams"]


@asynccontextmanager
async def child_streams(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | Path | None,
    stderr: StderrTail,
) -> AsyncIterator[tuple[Any, Any]]:
    """``command args...`` started, its stdin and stdout as the SDK's message streams."""
    mark = new_mark()
    errors = stderr.open()
    try:
        async with process_streams([command, *args], {**env, MARK: mark}, cwd, errors) as streams:
            _close(errors)  # the child has its own copy
            errors = -1
            yield streams
    finally:
        _close(errors)
        end_marked(mark)
        stderr.close()


def _close(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)
