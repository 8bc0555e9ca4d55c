"""A real MCP server (the official SDK's ``MCPServer``) with many tools: ``COUNT`` services of
five operations each, as an MCP server of a SaaS names its tools. Run: python many.py COUNT"""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

OPERATIONS = {
    "get": "Get one {what} by its id.",
    "list": "List every {what}, newest first.",
    "create": "Create {what}.",
    "delete": "Delete {what} for good.",
    "share": "Share {what} with another person by email address.",
}
server = MCPServer("many", version="1.0.0")


def _handler(name: str) -> Callable[[str], str]:
    def handle(id: str) -> str:
        return f"{name} ran on {id}"

    return handle


def main(services: int) -> None:
    for s in range(services):
        what = f"record of kind {s}"
        for op, text in OPERATIONS.items():
            name = f"{op}_kind{s}"
            server.add_tool(_handler(name), name=name, description=text.format(what=what))
    server.add_tool(
        _handler("get_weather_forecast"),
        name="get_weather_forecast",
        description="Today's weather forecast for a city.",
    )
    server.run()


if __name__ == "__main__":
    main(int(sys.argv[1]) // len(OPERATIONS))
