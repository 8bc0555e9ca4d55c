"""The MCP servers one agent run has connected to, kept open from the first call to the run's
end (``async with tool_sessions():``). Outside such a block each call connects on its own;
a nested block (a prompty tool's own turn) shares the outer run's connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from contextvars import ContextVar

from ...mcp.server import McpServer

__all__ = ["ToolSessions", "connected", "tool_sessions"]

ServerFactory = Callable[[], McpServer]


class ToolSessions:
    """Open servers by connection settings; a server starts on its first use."""

    __slots__ = ("_lock", "_servers")

    def __init__(self) -> None:
        self._servers: dict[Hashable, McpServer] = {}
        self._lock = asyncio.Lock()

    @property
    def opened(self) -> int:
        """How many servers this run has connected to."""
        return len(self._servers)

    async def server(self, key: Hashable, factory: ServerFactory) -> McpServer:
        """The open server for ``key``, connected by ``factory`` on first use."""
        async with self._lock:  # two first calls to one server start it once
            server = self._servers.get(key)
            if server is None:
                server = factory()
                await server.__aenter__()
                self._servers[key] = server
            return server

    async def aclose(self) -> None:
        """Disconnect every server (each shut down even if another fails to)."""
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(
            *(s.__aexit__(None, None, None) for s in servers), return_exceptions=True
        )


_current: ContextVar[ToolSessions | None] = ContextVar("tether_prompty_tool_sessions", default=None)


@asynccontextmanager
async def tool_sessions() -> AsyncIterator[ToolSessions]:
    """Keep MCP connections open until the block ends (an agent run)."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    sessions = ToolSessions()
    token = _current.set(sessions)
    try:
        yield sessions
    finally:
        _current.reset(token)
        await sessions.aclose()


@asynccontextmanager
async def connected(key: Hashable, factory: ServerFactory) -> AsyncIterator[McpServer]:
    """The run's open server for ``key``, or, outside a run's block, one for this use only."""
    sessions = _current.get()
    if sessions is not None:
        yield await sessions.server(key, factory)
        return
    async with factory() as server:
        yield server
