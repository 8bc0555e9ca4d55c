"""Conversation store figures: append cost at 10 / 1,000 / 10,000 messages, durable appends per
second for one session and for 100 concurrent sessions, loading 10,000 messages, beside the
fsync floor of this disk, measured in the same run.

    python bench/stores.py           # SQLiteStore
    python bench/stores.py --quick   # a fast pass
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from tether import Message
from tether.stores import SQLiteStore

TEXT = "x" * 200  # the 200-character messages of the peer table


def fsync_floor(directory: Path, runs: int) -> float:
    """Seconds per write+fsync of a small block on this disk."""
    path = directory / "floor"
    samples = []
    with path.open("wb") as f:
        for _ in range(runs):
            start = time.perf_counter()
            f.write(b"x" * 256)
            f.flush()
            os.fsync(f.fileno())
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def append_cost(store: SQLiteStore, at: int, runs: int) -> float:
    """Median seconds per append once the session holds ``at`` messages."""
    context = await store.copy_of([Message("user", TEXT)] * at)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await context.append(Message("user", TEXT))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def throughput(store: SQLiteStore, sessions: int, per_session: int) -> float:
    """Durable appends per second with ``sessions`` appending concurrently."""
    contexts = [await store.open(f"t{sessions}-{i}") for i in range(sessions)]

    async def talk(i: int) -> None:
        for _ in range(per_session):
            await contexts[i].append(Message("user", TEXT))

    start = time.perf_counter()
    await asyncio.gather(*(talk(i) for i in range(sessions)))
    return sessions * per_session / (time.perf_counter() - start)


async def load(store: SQLiteStore, count: int, runs: int) -> float:
    context = await store.copy_of([Message("user", TEXT)] * count)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        history = await context.get_history()
        samples.append(time.perf_counter() - start)
        assert len(history) == count
    return statistics.median(samples)


async def main(quick: bool) -> None:
    runs = 20 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        floor = fsync_floor(Path(tmp), runs)
        async with SQLiteStore(Path(tmp) / "bench.db") as store:
            costs = {at: await append_cost(store, at, runs) for at in (10, 1_000, 10_000)}
            one = await throughput(store, 1, runs)
            many = await throughput(store, 100, 5 if quick else 50)
            loaded = await load(store, 10_000, 3 if quick else 11)
    print(f"{'figure':<44}{'SQLiteStore':>14}  target")
    for at, cost in costs.items():
        print(f"{f'append at {at:,} messages, ms':<44}{cost * 1000:>14.3f}  flat")
    print(f"{'fsync floor, ms':<44}{floor * 1000:>14.3f}")
    print(f"{'1 session, durable appends/s':<44}{one:>14,.0f}  >= {1 / floor / 1.5:,.0f}")
    print(f"{'100 sessions, durable appends/s':<44}{many:>14,.0f}  >= 20,000")
    print(f"{'load 10,000 messages, ms':<44}{loaded * 1000:>14.2f}  <= 10")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
