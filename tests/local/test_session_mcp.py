"""End to end: an AgentSession on the real local model calls a real MCP server's tool."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tether import AgentSession, McpStdio, ToolCallContext
from tether.local import LocalModel

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]


async def test_the_local_model_calls_mcp_server_time(local_model: LocalModel) -> None:
    server = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    seen: list[tuple[str, dict[str, Any]]] = []

    @contextmanager
    def record(call: ToolCallContext) -> Iterator[None]:
        seen.append((call.name, dict(call.args)))
        yield

    transport = local_model.chat_transport(temperature=0, seed=7, max_tokens=200)
    try:
        async with AgentSession(
            transport,
            system="You are a helpful assistant. Use the tools, then answer in one sentence.",
            mcp_tools=[McpStdio(server, name="time")],
            on_tool=record,
            max_tool_rounds=4,
        ) as session:
            answer = await session.send(
                "What is the current time in the Europe/Paris timezone? Use get_current_time."
            )
    finally:
        await transport.aclose()
    assert seen and seen[0][0] == "get_current_time", seen
    results = [r for m in session.messages for r in m.tool_results]
    assert results and not results[0].is_error, results
    assert json.loads(results[0].text)["timezone"] == seen[0][1]["timezone"]
    assert answer.strip()
    assert session.total_usage.input_tokens > 0
