"""Tool search on a 200-tool set of four real MCP servers, on the real local model: the tokens
the tool definitions take with every schema offered and with the servers' tools deferred (the
default past 40 tools a server: one search tool plus what a search found), and how often the model
finds and calls the right tool.

    .venv/bin/python bench/tool_search.py [--tasks N]

Tokens are counted by the local server's own tokenizer over each definition as its chat
template shows it (one JSON line per tool). The 200 tools are 20 services of 10 operations each
(``bench/services_server.py``), named and described as MCP servers name theirs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
from services_server import SERVICES

from tether import Agent, MemoryContextStore, Tool, ToolSearch
from tether.local import LocalModel
from tether.mcp import McpStdio

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


GROUPS = 4  # MCP servers the 20 services are spread over (50 tools each)


def servers(*, tool_search: int | bool = 40) -> list[McpStdio]:
    """The 200 tools as four real MCP servers of 50 tools each (stdio)."""
    names = list(SERVICES)
    size = len(names) // GROUPS
    script = str(Path(__file__).with_name("services_server.py"))
    return [
        McpStdio(sys.executable, [script, *names[i : i + size]], tool_search=tool_search)
        for i in range(0, len(names), size)
    ]


def _wire(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.schema}


async def tokens(client: httpx.AsyncClient, tools: list[Tool]) -> int:
    """The definitions' tokens, one JSON line each as the local chat template shows them."""
    text = "\n".join(json.dumps({"type": "function", "function": _wire(t)}) for t in tools)
    reply = await client.post("/tokenize", json={"content": text})
    reply.raise_for_status()
    return len(reply.json()["tokens"])


async def listed(sources: list[McpStdio]) -> list[Tool]:
    return [tool for source in sources for tool in await source.list_tools()]


async def one_task(
    local: LocalModel, sources: list[McpStdio], task: str
) -> tuple[MemoryContextStore, str]:
    """One run of ``task`` on the local model with the servers' tools (deferred: no selector,
    the run makes its own search); its conversation, and how it failed if it did."""
    transport = local.chat_transport(temperature=0, max_tokens=200)
    agent = Agent(
        "You help with the user's services. Find the tool you need, then call it.",
        transport,
        tools=list(sources),
        max_iterations=4,
    )
    context = MemoryContextStore()
    failed = ""
    try:
        await agent.run(task, context)
    except Exception as exc:  # the calls made before it count; the failure is shown
        failed = f" ({type(exc).__name__})"
    finally:
        await transport.aclose()
    return context, failed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=len(TASKS))
    args = parser.parse_args()
    async with AsyncExitStack() as stack:
        sources = [await stack.enter_async_context(s) for s in servers()]
        tools = await listed(sources)
        assert len(tools) == 200 and all(t.deferred for t in tools), "every tool deferred"
        local = await stack.enter_async_context(LocalModel())
        root = local.base_url.removesuffix("/v1")
        headers = {"authorization": f"Bearer {local.api_key}"} if local.api_key else {}
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=root, headers=headers, timeout=60)
        )
        every = await tokens(client, tools)
        found_sizes, right, seen = [], 0, []
        for task, wanted in TASKS[: args.tasks]:
            started = time.perf_counter()
            context, failed = await one_task(local, sources, task)
            called = [b.name for m in context.messages for b in m.tool_uses]
            offered = await ToolSearch(threshold=sys.maxsize).select(context.messages, tools)
            found_sizes.append(await tokens(client, offered))
            hit = wanted in called
            right += hit
            took = time.perf_counter() - started
            mark = "ok  " if hit else "MISS"
            seen.append(f"{mark} {wanted:24} called {called} {took:.1f} s{failed}")
    after = statistics.mean(found_sizes) if found_sizes else float("nan")
    print("\n".join(seen))
    print(f"{'tool definitions, tokens':32} {'every schema':>14} {'tool search':>12} {'saved':>7}")
    print(
        f"{'200 tools on 4 MCP servers':32} {every:>14,} {after:>12,.0f} {1 - after / every:>7.1%}"
    )
    print(f"right tool called: {right} of {args.tasks}")


if __name__ == "__main__":
    asyncio.run(main())
