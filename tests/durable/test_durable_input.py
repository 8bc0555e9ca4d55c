"""A durable run cannot pause on a question a tool's server asks (it has no store of pauses; a
workflow waits for approvals by signal instead): with no ``on_elicit``, the call ends with an
error result that says so and names ``on_elicit``, the model reads it and the run goes on. The
SDK's own server of the 2026-07-28 era (tests/mcp/servers/asking.py) over stdio, on a worker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import durable_agents as da
import pytest
from temporalio.client import Client

from tether import Agent, McpStdio
from tether.durable import DevServer, TemporalAgent
from tether.events import ToolResult

ASKING = Path(__file__).parents[1] / "mcp" / "servers" / "asking.py"


@pytest.fixture
async def client(temporal: DevServer) -> Client:
    return await Client.connect(temporal.address)


async def test_a_question_ends_the_call_with_an_error_that_names_on_elicit(
    client: Client, request: pytest.FixtureRequest
) -> None:
    queue = f"q-{request.node.name}-{os.getpid()}"
    server = McpStdio(sys.executable, [str(ASKING), "stdio"], name="asking")
    durable = TemporalAgent(
        Agent("s", da.PlanModel(), tools=[server]), name="asking", options=da.FAST
    )
    async with durable.connected(), durable.worker(client, queue):
        run = await durable.start(client, da.plan([("book", {"day": "monday"})]), task_queue=queue)
        answer = await run.answer()
        results = [e for e in [e async for e in run.events()] if isinstance(e, ToolResult)]
    (result,) = results
    assert result.is_error and "give the server on_elicit=" in str(result.content)
    assert "a durable run cannot pause on it" in answer
