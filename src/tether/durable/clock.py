"""``WorkflowClock``: the engine's clock inside a workflow, time and chance from Temporal, so a
replayed run waits and draws exactly as the first one did."""

from __future__ import annotations

import asyncio

from temporalio import workflow

__all__ = ["WorkflowClock"]


class WorkflowClock:
    """A ``tether.base.clock.Clock`` on Temporal's deterministic time, random source and timers."""

    __slots__ = ()

    def now(self) -> float:
        return workflow.time()

    def random(self) -> float:
        return workflow.random().random()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)  # a durable timer inside a workflow

    def __repr__(self) -> str:
        return "WorkflowClock()"
