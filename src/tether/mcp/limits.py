"""How much one MCP server may send at once, whatever its transport."""

from __future__ import annotations

__all__ = ["MAX_MESSAGE"]

MAX_MESSAGE = 16 * 1024 * 1024  # bytes of one message (a tool result of up to 8 MB of image fits)
