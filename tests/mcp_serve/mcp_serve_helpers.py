"""Helpers for the MCP-server tests: a real ``tether mcp-serve`` over stdio as the SDK's client
starts one, or over Streamable HTTP on 127.0.0.1 (a real uvicorn in a child process), serving
``serve_agents.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

AGENTS = Path(__file__).parent / "serve_agents.py"
AGENT_SPEC = f"{AGENTS}:agent"
TOKEN = "a-test-token-of-32-characters-xx"


def server_env(markers: Path, **extra: str) -> dict[str, str]:
    """The server's environment: where markers go, and this tether (PYTHONPATH, when set)."""
    env = {"TETHER_TEST_MARKERS": str(markers), "NO_COLOR": "1", **extra}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def tether_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", "mcp-serve", *args]


def run_tether(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``tether mcp-serve ARGS`` run to its end (for the options it refuses)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("TETHER_MCP_TOKEN", None)
    return subprocess.run(
        tether_command(*args),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


class HttpServer:
    """A ``tether mcp-serve --http`` child process and the URL it printed."""

    def __init__(self, markers: Path, *args: str, spec: str = AGENT_SPEC) -> None:
        env = {**os.environ, **server_env(markers)}
        env.pop("TETHER_MCP_TOKEN", None)
        self.process = subprocess.Popen(
            tether_command("--agent", spec, "--http", "--port", "0", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=markers,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "/mcp" not in line:
            self.close()
            raise AssertionError(f"no address printed: {line!r}; stderr: {self.stderr()}")
        self.url = line.split()[2]  # "tether mcp-serve: http://127.0.0.1:PORT/mcp (...)"

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read() if self.process.poll() is not None else ""

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def text_of(result: Any) -> str:
    """The text of an MCP tool result."""
    return "".join(item.text for item in result.content if item.type == "text")


async def wait_for(path: Path, limit: float = 20.0) -> bool:
    """Whether ``path`` exists within ``limit`` seconds (a marker the served agent leaves)."""
    for _ in range(int(limit / 0.05)):
        if await asyncio.to_thread(path.exists):
            return True
        await asyncio.sleep(0.05)
    return await asyncio.to_thread(path.exists)


# Each transport in each protocol era: the handshake (``legacy``) and 2026-07-28 (``auto``).
WAYS = [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy"), ("http", "auto")]
WAY_IDS = [f"{transport}-{mode}" for transport, mode in WAYS]


@contextmanager
def reaching(transport: str, markers: Path, spec: str = AGENT_SPEC) -> Iterator[Any]:
    """Where the SDK's client finds ``tether mcp-serve --agent SPEC`` over ``transport``:
    stdio parameters (the client starts it) or the URL of one serving over HTTP."""
    if transport == "stdio":
        from mcp import StdioServerParameters

        command = tether_command("--agent", spec)
        yield StdioServerParameters(
            command=command[0], args=command[1:], env=server_env(markers), cwd=markers
        )
        return
    server = HttpServer(markers, spec=spec)
    try:
        yield server.url
    finally:
        server.close()


@asynccontextmanager
async def client(way: tuple[Any, str], answer: Any) -> AsyncIterator[Any]:
    """The SDK's ``Client`` at ``way`` (where, mode), ``answer`` its elicitation callback."""
    from mcp import Client

    target, mode = way
    async with Client(target, mode=mode, elicitation_callback=answer) as connected:
        yield connected
