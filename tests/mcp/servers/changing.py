"""A real MCP server (the official SDK's ``MCPServer``) whose tool list changes, with a slow tool
that writes down when it was cancelled. Run: python changing.py [stdio | http PORT] MARKER_DIR"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing", version="1.0.0")
MARKERS = Path(sys.argv[-1])


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Wait ``seconds``, reporting progress; notes its start in MARKER_DIR/started and a
    cancellation in MARKER_DIR/cancelled."""
    (MARKERS / "started").write_text("yes")
    steps = max(1, int(seconds / 0.1))
    try:
        for i in range(steps):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    except anyio.get_cancelled_exc_class():
        (MARKERS / "cancelled").write_text("yes")
        raise
    return f"slept {seconds}"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` and announce that the list changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description="added while running")
    await ctx.notify_tools_changed()
    return "added"


@server.tool()
def fail() -> str:
    """Always raises."""
    raise RuntimeError("kaboom")


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
