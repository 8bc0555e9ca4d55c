"""MCP tools for tether's loop: ``McpTool`` (defined in-process), ``McpStdio`` (a child process)
and ``McpStreamable`` (over HTTP, logging in with ``OAuth`` where the server asks for it), on the
official SDK (the ``mcp`` extra, loaded on first use); and the other way round, ``serve_agent``:
an agent's tools, and the agent itself, as an MCP server."""

from __future__ import annotations

from .oauth import OAuth
from .served import AgentServer, serve_agent
from .server import McpError, McpServer
from .stdio import McpStdio
from .streamable import McpStreamable
from .tool import McpTool

__all__ = [
    "AgentServer",
    "McpError",
    "McpServer",
    "McpStdio",
    "McpStreamable",
    "McpTool",
    "OAuth",
    "serve_agent",
]
