"""Memory per in-flight run: park N runs in their model call, read RSS (run in a fresh process)."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import scenarios as sc

from tether import Agent


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def park_tether(n: int) -> float:
    gate, parked = asyncio.Event(), [0]
    agent = Agent("You are a bench.", sc.ParkedModel(gate, parked))
    gc.collect()
    before = rss_kib()
    tasks = [asyncio.ensure_future(agent.run("go")) for _ in range(n)]
    while parked[0] < n:  # noqa: ASYNC110 - polling a counter is the point here
        await asyncio.sleep(0.01)
    gc.collect()
    after = rss_kib()
    gate.set()
    await asyncio.gather(*tasks)
    return (after - before) / n


async def park_raw(n: int) -> float:
    gate, parked = asyncio.Event(), [0]

    async def model(messages: Any, _: Any) -> Any:
        parked[0] += 1
        await gate.wait()
        yield {"content": "hello"}

    gc.collect()
    before = rss_kib()
    tasks = [asyncio.ensure_future(sc.raw_run(model, None, {})) for _ in range(n)]
    while parked[0] < n:  # noqa: ASYNC110 - polling a counter is the point here
        await asyncio.sleep(0.01)
    gc.collect()
    after = rss_kib()
    gate.set()
    await asyncio.gather(*tasks)
    return (after - before) / n


def main(side: str, n: int) -> None:
    # Warm both code paths so one-off imports and caches are not counted per run.
    asyncio.run(park_tether(10) if side == "tether" else park_raw(10))
    fn = park_tether if side == "tether" else park_raw
    print(f"{asyncio.run(fn(n)):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
