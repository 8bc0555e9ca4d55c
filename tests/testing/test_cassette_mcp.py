"""A cassette covers MCP over HTTP too (the MCP SDK's own client, httpx2): an agent whose model
is a provider over HTTP and whose tool is server-everything over Streamable HTTP is recorded, both
servers stopped, and the run replayed from the file alone, the tool's answer included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import free_port, wait_for_port
from misbehaving_server import MisbehavingServer, sse_stream

from parts import absent
from tether import Agent, ToolResult
from tether.mcp import McpStreamable
from tether.testing import Cassette
from tether.transports.openai_chat import OpenAIChatTransport

CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
EVERYTHING = Path(
    os.environ.get("TETHER_MCP_EVERYTHING")
    or CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
TOKEN = "mcp-bearer-token-for-cassettes"


@pytest.fixture
def everything_http() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """server-everything over Streamable HTTP on 127.0.0.1: its URL and its process."""
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        absent("@modelcontextprotocol/server-everything (with node)")
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port), "HOST": "127.0.0.1"}
    proc = subprocess.Popen(
        [node, str(EVERYTHING), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait()


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


CALL = [
    _chunk({"role": "assistant", "tool_calls": [
        {"index": 0, "id": "call_echo", "type": "function",
         "function": {"name": "echo", "arguments": ""}},
    ]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"message": "over http"}'}}]}),
    _chunk({}, "tool_calls"),
    "data: [DONE]\n\n",
]  # fmt: skip
ANSWER = [_chunk({"role": "assistant", "content": "It said it back."}), _chunk({}, "stop")]
ANSWER.append("data: [DONE]\n\n")  # type: ignore[arg-type]


async def _run(model_url: str, mcp_url: str) -> list[str]:
    async with McpStreamable(mcp_url, token=TOKEN) as server:
        transport = OpenAIChatTransport("m", base_url=model_url, api_key="sk-test-cassette-key")
        async with transport:
            agent = Agent("You echo.", transport, tools=[server])
            events = [e async for e in agent.run_stream("Echo 'over http'.")]
    return [str(e.content) for e in events if isinstance(e, ToolResult)]


async def test_an_agent_with_an_mcp_server_over_http_replays_with_both_servers_gone(
    everything_http: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    mcp_url, process = everything_http
    path = tmp_path / "mcp.json"
    async with MisbehavingServer(sse_stream(CALL), sse_stream(ANSWER)) as model:
        model_url = model.url + "/v1"
        async with Cassette(path) as cassette:
            live = await _run(model_url, mcp_url)
    assert live == ["Echo: over http"]
    process.kill()
    process.wait()
    methods = [
        e["request"].get("json", {}).get("method")
        for e in json.loads(path.read_text())["exchanges"]
    ]
    assert {"initialize", "tools/list", "tools/call"} <= set(methods)
    assert TOKEN not in path.read_text()
    async with Cassette(path, mode="none") as replay:
        assert await _run(model_url, mcp_url) == live
    assert replay.played == cassette.recorded
