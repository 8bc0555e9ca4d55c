"""A durable agent whose runs continue as new every few rounds, for the tests of event readers
across a chain of runs (importable by worker processes: ``durable_agents`` is beside it)."""

from __future__ import annotations

import asyncio
from typing import Any

import durable_agents as da

from tether import Agent, tool
from tether.durable import DurableOptions, TemporalAgent


@tool(idempotent=True)
async def fetch(name: str, pause: float = 0.0) -> str:
    """Read-only, and as slow as asked: a reader attached mid-run finds calls in flight."""
    await asyncio.sleep(pause)
    return f"record of {name}"


SMALL = DurableOptions(
    max_history_events=40, heartbeat_timeout=5.0, retry_initial=0.2, retry_max=1.0
)
chained = TemporalAgent(
    Agent("You follow plans.", da.PlanModel(), tools=[fetch]), name="chained", options=SMALL
)


def rounds(count: int, pause: float = 0.0) -> str:
    """A plan of ``count`` rounds of two calls each (every result names its round and call)."""
    plan: list[list[tuple[str, dict[str, Any]]]] = [
        [("fetch", {"name": f"r{i}a", "pause": pause}), ("fetch", {"name": f"r{i}b"})]
        for i in range(count)
    ]
    return da.plan(*plan)
