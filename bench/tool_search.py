"""Tool search on a 200-tool set, on the real local model: the tokens the tool definitions take
with every schema offered and with ``ToolSearch`` (its one tool plus what a search found), and
how often the model finds and calls the right tool.

    .venv/bin/python bench/tool_search.py [--tasks N]

Tokens are counted by the local server's own tokenizer over each definition as its chat
template shows it (one JSON line per tool). The 200 tools are 20 services of 10 operations each,
named and described as MCP servers name theirs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx

from tether import Agent, MemoryContextStore, Tool, ToolSearch
from tether.local import LocalModel

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
TASKS = [
    ("Delete calendar event 42 for good.", "delete_calendar_event"),
    ("What will the weather forecast be in Lisbon tomorrow?", "get_weather_forecast"),
    ("Export all invoices as a CSV file.", "export_invoice"),
    ("Share the file report.pdf with ana@example.com.", "share_file"),
    ("How many support tickets are there?", "count_ticket"),
    ("Archive note 7.", "archive_note"),
    ("Create a to-do task: buy milk.", "create_task"),
    ("Search my email for messages about the budget.", "search_email"),
    ("List every flight booking.", "list_flight"),
    ("Get product 1234 from the catalogue.", "get_product"),
]


def tool_set() -> list[Tool]:
    """The 200 tools: each records that it ran."""
    tools = []
    for service, what in SERVICES.items():
        for operation, text in OPERATIONS.items():
            name = f"{operation}_{service}"
            schema = {
                "type": "object",
                "properties": {"id": {"type": "string"}, "query": {"type": "string"}},
            }
            tools.append(Tool(name, _ran(name), description=text.format(what=what), schema=schema))
    return tools


def _ran(name: str) -> Any:
    def handler(**arguments: Any) -> str:
        return f"Done: {name} ran."

    return handler


def _wire(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.schema}


async def tokens(client: httpx.AsyncClient, tools: list[Tool]) -> int:
    """The definitions' tokens, one JSON line each as the local chat template shows them."""
    text = "\n".join(json.dumps({"type": "function", "function": _wire(t)}) for t in tools)
    reply = await client.post("/tokenize", json={"content": text})
    reply.raise_for_status()
    return len(reply.json()["tokens"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=len(TASKS))
    args = parser.parse_args()
    tools = tool_set()
    async with LocalModel() as local:
        root = local.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {local.api_key}"} if local.api_key else {}
        async with httpx.AsyncClient(base_url=root, headers=headers, timeout=60) as client:
            every = await tokens(client, tools)
            found_sizes, right, seen = [], 0, []
            for task, wanted in TASKS[: args.tasks]:
                search = ToolSearch(threshold=40, limit=5)
                transport = local.chat_transport(temperature=0, max_tokens=200)
                agent = Agent(
                    "You help with the user's services. Find the tool you need, then call it.",
                    transport,
                    tools=search.over(tools),
                    selector=search,
                    max_iterations=4,
                )
                context = MemoryContextStore()
                started = time.perf_counter()
                try:
                    await agent.run(task, context)
                except Exception as exc:  # a failed run counts as a miss
                    seen.append(f"{task!r}: {type(exc).__name__}")
                finally:
                    await transport.aclose()
                called = [b.name for m in context.messages for b in m.tool_uses]
                offered = await search.select(context.messages, tools)
                found_sizes.append(await tokens(client, offered))
                hit = wanted in called
                right += hit
                took = time.perf_counter() - started
                seen.append(f"{'ok  ' if hit else 'MISS'} {wanted:24} called {called} {took:.1f} s")
    after = statistics.mean(found_sizes)
    print("\n".join(seen))
    print(f"{'tool definitions, tokens':32} {'every schema':>14} {'tool search':>12} {'saved':>7}")
    print(f"{'200 tools':32} {every:>14,} {after:>12,.0f} {1 - after / every:>7.1%}")
    print(f"right tool called: {right} of {len(found_sizes)}")


if __name__ == "__main__":
    asyncio.run(main())
