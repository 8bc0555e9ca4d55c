"""An MCP server as a child process, over the SDK's stdio transport: its stderr kept as a bounded
tail (``StderrTail``) and, when the transport closes, every process it started ended with it
(``tree``), whatever process group or session it moved to."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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
    from mcp import StdioServerParameters, stdio_client  # noqa: PLC0415

    mark = new_mark()
    params = StdioServerParameters(
        command=command, args=list(args), env={**env, MARK: mark}, cwd=cwd
    )
    errlog = os.fdopen(stderr.open(), "w", encoding="utf-8")
    try:
        async with stdio_client(params, errlog=errlog) as streams:
            errlog.close()  # the child has its own copy
            yield streams
    finally:
        errlog.close()
        end_marked(mark)
        stderr.close()
