"""A real MCP server (the official SDK's ``MCPServer``, so of the 2026-07-28 era) with resources,
a resource template and prompts, whose lists change on request. Every ``resources/list`` and
``prompts/list`` it answers adds a line to MARKER_DIR/lists.
Run: python library.py [stdio | http PORT] MARKER_DIR"""

from __future__ import annotations

import base64
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Prompt, UserMessage
from mcp.server.mcpserver.resources.types import TextResource

server = MCPServer("library", version="1.0.0")
MARKERS = Path(sys.argv[-1])
# a 1x1 transparent PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def _counted(kind: str, listing: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def counted() -> Any:
        with (MARKERS / "lists").open("a") as lists:
            lists.write(f"{kind}\n")
        return await listing()

    return counted


server.list_resources = _counted("resources", server.list_resources)  # type: ignore[method-assign]
server.list_prompts = _counted("prompts", server.list_prompts)  # type: ignore[method-assign]


@server.resource("note://readme", name="readme", description="the readme", mime_type="text/plain")
def readme() -> str:
    return "Read me first."


@server.resource("note://pixel", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return PIXEL


@server.resource("note://archive", name="archive", mime_type="application/zip")
def archive() -> bytes:
    return b"PK\x03\x04 not really a zip"


@server.resource("note://chapter/{number}", name="chapter", mime_type="text/plain")
def chapter(number: str) -> str:
    return f"Chapter {number} begins."


@server.prompt(description="Ask for a review of some code")
def review(code: str, language: str = "python") -> list[Any]:
    return [
        UserMessage(f"Review this {language} code:\n{code}"),
        AssistantMessage("I will review it."),
        UserMessage("Be brief."),
    ]


@server.tool()
async def add_resource(name: str, ctx: Context) -> str:
    """Add a text resource ``note://{name}`` and announce that the list changed."""
    server.add_resource(TextResource(uri=f"note://{name}", name=name, text=f"I am {name}"))
    await ctx.notify_resources_changed()
    return "added"


@server.tool()
async def add_prompt(name: str, ctx: Context) -> str:
    """Add a prompt ``name`` and announce that the list changed."""

    def said() -> str:
        return f"Prompt {name} speaking."

    server.add_prompt(Prompt.from_function(said, name=name, description="added"))
    await ctx.notify_prompts_changed()
    return "added"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announce that the resource at ``uri`` changed."""
    await ctx.notify_resource_updated(uri)
    return "touched"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
