"""A durable agent whose tool source cannot be listed: the listing activity is tried a bounded
number of times (the options' ``model_attempts``), then the run ends with an error that says so,
instead of retrying for ever."""

from __future__ import annotations

import asyncio
import os

import durable_agents as da
import pytest
from temporalio.client import Client

from tether import Agent, Tool
from tether.durable import DevServer, DurableOptions, DurableRunError, TemporalAgent

pytestmark = pytest.mark.timeout(180)

asked: list[int] = []


class Broken:
    """A tool source (an MCP server, say) whose listing always fails."""

    async def list_tools(self) -> list[Tool]:
        asked.append(1)
        raise ConnectionError("the tool server is down")


broken = TemporalAgent(
    Agent("You follow plans.", da.PlanModel(), tools=[Broken()]),
    name="broken_listing",
    options=DurableOptions(model_attempts=3, retry_initial=0.1, retry_max=0.2),
)


async def test_a_listing_that_always_fails_ends_the_run_after_bounded_attempts(
    temporal: DevServer,
) -> None:
    asked.clear()
    client = await Client.connect(temporal.address)
    queue = f"listing-{os.getpid()}"
    async with broken.worker(client, queue):
        run = await broken.start(client, da.plan([("lookup", {"name": "x"})]), task_queue=queue)
        with pytest.raises(DurableRunError) as caught:
            await asyncio.wait_for(run.answer(), 60)
    assert "could not be listed" in str(caught.value) and "down" in str(caught.value)
    assert len(asked) == 3
