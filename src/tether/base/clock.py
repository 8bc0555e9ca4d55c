"""Where the engine gets time and chance: ``Clock``, injectable so a durable workflow can replay
a run deterministically (its own clock and random source) and tests need not wait."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Time, waiting and randomness for the loop (retry backoff and its jitter)."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    def random(self) -> float:
        """A number in ``[0, 1)``."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic``, ``random.random``, ``asyncio.sleep``."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    def random(self) -> float:
        return random.random()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()
