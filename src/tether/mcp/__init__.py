"""MCP tools for tether's loop: ``McpTool`` (defined in-process), ``McpStdio`` (a child process)
and ``McpStreamable`` (over HTTP), on the official SDK (the ``mcp`` extra, loaded on first use)."""

from __future__ import annotations

from .server import McpError, McpServer
from .stdio import McpStdio
from .streamable import McpStreamable
from .tool import McpTool

__all__ = ["McpError", "McpServer", "McpStdio", "McpStreamable", "McpTool"]
