"""A real MCP server (the official SDK's ``MCPServer``, of the 2026-07-28 era) whose tool
``haiku`` asks the client's model for a poem (``Sample``, through the era's input requests).
Run: python sampler.py"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent

server = MCPServer("sampler", version="1.0.0")


def ask(topic: str) -> Sample:
    said = TextContent(type="text", text=f"Write a haiku about {topic}.")
    return Sample([SamplingMessage(role="user", content=said)], max_tokens=5000)


@server.tool()
def haiku(topic: str, poem: Annotated[CreateMessageResult, Resolve(ask)]) -> str:
    """A haiku about ``topic``, written by the client's model."""
    return poem.content.text if isinstance(poem.content, TextContent) else "?"


if __name__ == "__main__":
    server.run()
