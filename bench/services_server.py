"""An MCP server (the official SDK's ``MCPServer``) of made-up SaaS services for
``bench/tool_search.py``: ten operations on each service named on the command line, each tool
answering that it ran. Run: python bench/services_server.py SERVICE... (stdio)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

# What each service holds, as its tools' descriptions say it.
SERVICES = {
    "calendar_event": "an event in the user's calendar",
    "email": "an email message in the user's mailbox",
    "contact": "a person in the address book",
    "invoice": "a customer invoice in the billing system",
    "ticket": "a support ticket in the helpdesk",
    "repository": "a source code repository",
    "pull_request": "a pull request on a repository",
    "file": "a file in cloud storage",
    "spreadsheet_row": "a row of a spreadsheet",
    "weather_forecast": "a weather forecast for a city",
    "flight": "a flight booking",
    "hotel_booking": "a hotel reservation",
    "payment": "a card payment",
    "order": "an order in the online shop",
    "product": "a product in the shop's catalogue",
    "user_account": "a user account of the web service",
    "alert": "a monitoring alert",
    "dashboard": "a metrics dashboard",
    "note": "a note in the notebook app",
    "task": "a to-do task",
}
OPERATIONS = {
    "get": "Get one {what} by its id.",
    "list": "List every {what}, newest first.",
    "create": "Create {what}.",
    "update": "Change fields of {what}.",
    "delete": "Delete {what} for good.",
    "search": "Search for {what} by words it contains.",
    "export": "Export {what} as a CSV file.",
    "archive": "Archive {what} so it no longer shows.",
    "share": "Share {what} with another person by email address.",
    "count": "Count how many of {what} there are.",
}


def _ran(name: str) -> Callable[..., str]:
    def handler(id: str = "", query: str = "") -> str:
        return f"Done: {name} ran."

    return handler


def serve(services: list[str]) -> None:
    server = MCPServer("services", version="1.0.0")
    for service in services:
        for operation, text in OPERATIONS.items():
            name = f"{operation}_{service}"
            described = text.format(what=SERVICES[service])
            server.add_tool(_ran(name), name=name, description=described)
    server.run()


if __name__ == "__main__":
    serve(sys.argv[1:])
