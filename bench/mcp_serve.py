"""Per-call overhead of ``tether mcp-serve`` beside the SDK's bare ``MCPServer`` serving the same
trivial tool (``add``), in-process, over stdio and over Streamable HTTP, in both eras of the
protocol, in one run.

    python bench/mcp_serve.py            # batches of 50 calls, medians of 11
    python bench/mcp_serve.py --quick    # a fast pass that proves the benchmark still runs

Each side is its own server process (or, in-process, its own server object), driven by the SDK's
``Client``; batches of calls alternate between the two sides. This file is also both servers:
``--bare stdio|http`` runs the SDK's ``MCPServer``, and ``agent`` is what ``tether mcp-serve
--agent bench/mcp_serve.py:agent`` serves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tether import Agent, tool
from tether.testing import Reply, ScriptedTransport

HERE = Path(__file__).resolve()
ARGS = {"a": 2, "b": 3}
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}  # the client's mode: the era it speaks


@tool(idempotent=True)
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


agent = Agent("You add numbers.", ScriptedTransport([], then=lambda _: Reply("-")), tools=[add])


def bare_server() -> Any:
    """The SDK's own server with the same tool, text only (as tether answers)."""
    from mcp.server.mcpserver import MCPServer

    bare = MCPServer("bare", log_level="WARNING")  # INFO logs each HTTP request

    @bare.tool(structured_output=False)
    def add(a: int, b: int) -> str:
        """Add two whole numbers."""
        return str(a + b)

    return bare


def serve_bare(transport: str, port: int) -> None:
    """``bare_server`` over stdio, or Streamable HTTP on 127.0.0.1:``port``."""
    bare = bare_server()
    if transport == "stdio":
        bare.run("stdio")
    else:
        bare.run("streamable-http", host="127.0.0.1", port=port)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _started(command: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """An HTTP server started on a free port (the command takes it last), once it listens."""
    port = _free_port()
    process = subprocess.Popen(
        [*command, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(400):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process, port
        time.sleep(0.025)
    process.kill()
    raise RuntimeError(f"{command}: nothing listens on 127.0.0.1:{port}")


def _stopped(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=15)


def _stdio(command: list[str]) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


@asynccontextmanager
async def served(side: str, transport: str) -> AsyncIterator[Any]:
    """What the SDK's ``Client`` connects to: the server object itself (in this process), stdio
    parameters, or the URL of a live server."""
    if transport == "in-process":
        from tether.mcp import serve_agent

        yield serve_agent(agent).sdk_server() if side == "tether" else bare_server()
        return
    if side == "tether":
        command = [sys.executable, "-m", "tether.cli", "mcp-serve", "--agent", f"{HERE}:agent"]
    else:
        command = [sys.executable, str(HERE), "--bare", transport]
    if transport == "stdio":
        yield _stdio(command)
        return
    http = [*command, "--http", "--port"] if side == "tether" else command
    process, port = await asyncio.to_thread(_started, http)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await asyncio.to_thread(_stopped, process)


async def _batch(fn: Callable[[], Awaitable[Any]], runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        await fn()
    return (time.perf_counter() - start) / runs


async def measure(transport: str, mode: str, runs: int, reps: int) -> dict[str, float]:
    """Median ms per ``tools/call`` of each side, batches alternating."""
    from mcp import Client

    async with (
        served("tether", transport) as ours,
        served("bare", transport) as theirs,
        Client(ours, mode=mode) as tether_client,
        Client(theirs, mode=mode) as bare_client,
    ):
        fns = {
            "tether": lambda: tether_client.call_tool("add", ARGS),
            "bare": lambda: bare_client.call_tool("add", ARGS),
        }
        versions = {tether_client.protocol_version, bare_client.protocol_version}
        assert versions == {ERAS[mode]}, versions  # both sides speak the era measured
        for name, fn in fns.items():
            result = await fn()
            assert result.content[0].text == "5", (name, result)
            await _batch(fn, runs)
        samples: dict[str, list[float]] = {name: [] for name in fns}
        for rep in range(reps):
            for name in list(fns) if rep % 2 else list(fns)[::-1]:
                samples[name].append(await _batch(fns[name], runs))
    return {name: statistics.median(v) * 1000 for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bare", choices=["stdio", "http"], help=argparse.SUPPRESS)
    parser.add_argument("port", nargs="?", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        serve_bare(args.bare, args.port)
        return
    runs, reps = (5, 3) if args.quick else (50, 11)
    print(f"{'transport':<12}{'era':<12}{'tether ms/call':>16}{'bare ms/call':>14}{'ratio':>8}")
    for transport in ("in-process", "stdio", "http"):
        for mode, era in ERAS.items():
            med = asyncio.run(measure(transport, mode, runs, reps))
            ratio = med["tether"] / med["bare"]
            print(
                f"{transport:<12}{era:<12}{med['tether']:>16.3f}{med['bare']:>14.3f}{ratio:>7.2f}x"
            )


if __name__ == "__main__":
    main()
