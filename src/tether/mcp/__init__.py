"""MCP tools for tether's loop: ``McpTool`` (a tool defined in-process, as in padwan-ai)."""

from __future__ import annotations

from .tool import McpTool

__all__ = ["McpTool"]
