"""``McpStdio``: an MCP server run as a child process, spoken to over its stdin and stdout."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import IO, Any

from .server import McpServer

__all__ = ["McpStdio"]

_TAIL_BYTES = 2_000


class McpStdio(McpServer):
    """``command args...`` as an MCP server. The child gets a minimal environment (``HOME``,
    ``PATH``, ``SHELL``, ``TERM``, ``USER``, ``LOGNAME``) plus ``env``; its stderr is kept so a
    failure can quote its last lines."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | Path | None = None,
        name: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        list_timeout: float = 5.0,
    ) -> None:
        if not command:
            raise ValueError("McpStdio needs a command")
        if isinstance(args, str):
            raise TypeError("McpStdio args must be a list of strings, not one string")
        super().__init__(name or Path(command).name, timeout, connect_timeout, list_timeout)
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self._errlog: IO[str] | None = None

    def describe(self) -> str:
        # The command only: its arguments may hold a token.
        return f"MCP server {self.prefix!r} ({self.command})"

    def _transport(self) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        from mcp import StdioServerParameters, stdio_client  # noqa: PLC0415

        if self._errlog is not None:
            self._errlog.close()
        self._errlog = tempfile.TemporaryFile(  # noqa: SIM115 - kept open for the connection's life
            "w+", encoding="utf-8", errors="replace"
        )
        params = StdioServerParameters(
            command=self.command, args=self.args, env=self.env or None, cwd=self.cwd
        )
        return stdio_client(params, errlog=self._errlog)

    def _secrets(self) -> Sequence[str]:
        return [v for v in self.env.values() if len(v) >= 8]

    def _tail(self) -> str:
        if self._errlog is None or self._errlog.closed:
            return ""
        fd = self._errlog.fileno()
        size = os.fstat(fd).st_size
        raw = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES))
        return raw.decode("utf-8", "replace").strip()

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await super().__aexit__(*exc_info)
        finally:
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None
