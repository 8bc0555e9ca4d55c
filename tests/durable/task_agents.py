"""A durable agent whose tool source is an MCP server that answers with tasks (the tasking server
of ``tests/mcp/servers``, over Streamable HTTP at ``$TETHER_TEST_MCP_URL``, started by the test
and outliving every worker). Importable by worker processes (``--agent task_agents:researcher``
with this folder on PYTHONPATH)."""

from __future__ import annotations

import os

import durable_agents as da

from tether import Agent
from tether.durable import TemporalAgent
from tether.mcp import McpStreamable

researcher = TemporalAgent(
    Agent(
        "You follow plans.",
        da.PlanModel(),
        tools=[McpStreamable(os.environ.get("TETHER_TEST_MCP_URL", "http://127.0.0.1:9/mcp"))],
    ),
    name="researcher",
    options=da.FAST,
)
