"""A tool call through tether's MCP client against the raw SDK's ``call_tool``, same server kind,
interleaved in one run (target: tether ≤ 1.1× raw).

    python bench/mcp_calls.py            # mcp-server-time, and server-everything if node has it
    python bench/mcp_calls.py --quick    # a fast pass

Each side has its own server process of the same kind; batches of calls alternate between them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tether.mcp import McpStdio

CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
EVERYTHING = CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def servers() -> dict[str, tuple[list[str], str, dict[str, Any]]]:
    """Name: (command line, tool, arguments) of each server found here."""
    found: dict[str, tuple[list[str], str, dict[str, Any]]] = {}
    time_server = shutil.which("mcp-server-time") or str(
        Path(sys.executable).parent / "mcp-server-time"
    )
    if Path(time_server).exists():
        found["mcp-server-time"] = ([time_server], "get_current_time", {"timezone": "UTC"})
    node = shutil.which("node")
    if node and EVERYTHING.exists():
        found["server-everything"] = ([node, str(EVERYTHING), "stdio"], "echo", {"message": "hi"})
    return found


async def _batch(fn: Callable[[], Awaitable[Any]], runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        await fn()
    return (time.perf_counter() - start) / runs


async def measure(
    command: list[str], tool: str, args: dict[str, Any], runs: int, reps: int
) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    raw_params = StdioServerParameters(command=command[0], args=command[1:])
    async with McpStdio(command[0], command[1:]) as ours, Client(raw_params) as raw:
        await ours.list_tools()
        await raw.list_tools()
        fns = {
            "tether": lambda: ours.call(tool, args),
            "raw SDK": lambda: raw.call_tool(tool, args),
        }
        for fn in fns.values():
            await _batch(fn, runs)
        samples: dict[str, list[float]] = {name: [] for name in fns}
        for rep in range(reps):
            for name in list(fns) if rep % 2 else list(fns)[::-1]:
                samples[name].append(await _batch(fns[name], runs))
    return {name: statistics.median(v) * 1000 for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, reps = (5, 3) if args.quick else (50, 11)
    print(f"{'server':<20}{'tether ms/call':>16}{'raw ms/call':>14}{'ratio':>8}  target")
    for name, (command, tool, arguments) in servers().items():
        med = asyncio.run(measure(command, tool, arguments, runs, reps))
        ratio = med["tether"] / med["raw SDK"]
        print(f"{name:<20}{med['tether']:>16.3f}{med['raw SDK']:>14.3f}{ratio:>7.2f}x  <= 1.1x")


if __name__ == "__main__":
    main()
