"""A durable agent whose runs continue as new every few rounds, for the tests of event readers
across a chain of runs (importable by worker processes: ``durable_agents`` is beside it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import durable_agents as da

from tether import Agent, Message, StreamEvent, TextDelta, ToolResultBlock, tool
from tether.durable import DurableOptions, TemporalAgent
from tether.types import ToolSpec


@tool(idempotent=True)
async def fetch(name: str, pause: float = 0.0, pad: int = 0) -> str:
    """Read-only, as slow as asked, its result padded to ``pad`` more characters: a reader
    attached mid-run finds calls in flight."""
    await asyncio.sleep(pause)
    return f"record of {name}" + "." * pad


class TallyModel(da.PlanModel):
    """``PlanModel`` whose answer counts the results instead of repeating them (the size of a
    reply is no concern of these tests)."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        count = sum(isinstance(b, ToolResultBlock) for m in messages for b in m.content)
        answered = False
        async for event in super().stream(messages, tools, system):
            if not isinstance(event, TextDelta):
                yield event
            elif not answered:
                answered = True
                yield TextDelta(0, f"done: {count} results")


SMALL = DurableOptions(
    max_history_events=40, heartbeat_timeout=5.0, retry_initial=0.2, retry_max=1.0
)
chained = TemporalAgent(
    Agent("You follow plans.", da.PlanModel(), tools=[fetch]), name="chained", options=SMALL
)


def rounds(count: int, pause: float = 0.0, pad: int = 0) -> str:
    """A plan of ``count`` rounds of two calls each (every result names its round and call;
    the first of each is ``pad`` characters longer)."""
    plan: list[list[tuple[str, dict[str, Any]]]] = [
        [("fetch", {"name": f"r{i}a", "pause": pause, "pad": pad}), ("fetch", {"name": f"r{i}b"})]
        for i in range(count)
    ]
    return da.plan(*plan)
