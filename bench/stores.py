"""Conversation store figures, every backend and the peers side by side in one run: append cost
at 10 / 1,000 / 10,000 messages, durable appends per second for one session and for 100
concurrent sessions, loading 10,000 messages, beside the fsync floor of this disk.

    python bench/stores.py            # tether's stores (PostgreSQL and Redis when
                                      #   $TETHER_PG_DSN / $TETHER_REDIS_URL name servers)
    python bench/stores.py --quick    # a fast pass
    pip install -e '.[bench]'         # adds openai-agents' SQLiteSession (and RedisSession)
                                      #   and LangGraph's SqliteSaver as columns
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether import Message
from tether.stores import FileStore, PostgresStore, RedisStore, SQLiteStore

TEXT = "x" * 200  # the 200-character messages of the peer table
SIZES = (10, 1_000, 10_000)


@dataclass
class Sessions:
    """One backend as the bench drives it: make a session holding ``n`` messages, append one
    message to a session, load a session's whole history."""

    seeded: Callable[[int], Awaitable[Any]]
    append: Callable[[Any], Awaitable[None]]
    load: Callable[[Any], Awaitable[int]]
    uncached: Callable[[Any], Awaitable[Any]] | None = None  # the session, read with no cache


# -- tether's stores ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def tether_store(store: Any, uncached_store: Any = None) -> AsyncIterator[Sessions]:
    """``uncached_store``: the same store with no history cache, for cold loads."""
    async with store, contextlib.AsyncExitStack() as stack:

        async def seeded(n: int) -> Any:
            return await store.copy_of([Message("user", TEXT)] * n)

        async def append(context: Any) -> None:
            await context.append(Message("user", TEXT))

        async def load(context: Any) -> int:
            return len(await context.get_history())

        async def uncached(context: Any) -> Any:
            return await (await stack.enter_async_context(uncached_store)).open(context.session_id)

        yield Sessions(seeded, append, load, uncached if uncached_store is not None else None)


# -- the peers ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def agents_sessions(make: Callable[[str], Any]) -> AsyncIterator[Sessions]:
    """openai-agents' sessions made by ``make(session_id)`` (SQLiteSession, RedisSession)."""
    opened: list[Any] = []

    async def seeded(n: int) -> Any:
        session = make(uuid.uuid4().hex)
        opened.append(session)
        if n:
            await session.add_items([{"role": "user", "content": TEXT}] * n)
        return session

    try:
        yield Sessions(seeded, _agents_append, _agents_load)
    finally:
        for session in opened:
            closed = session.close()
            if asyncio.iscoroutine(closed):
                await closed


def agents_sqlite(path: Path) -> Any:
    from agents import SQLiteSession

    return agents_sessions(lambda session_id: SQLiteSession(session_id, path))


def agents_redis(url: str) -> Any:
    from agents.extensions.memory.redis_session import RedisSession

    return agents_sessions(lambda session_id: RedisSession.from_url(session_id, url=url))


async def _agents_append(session: Any) -> None:
    await session.add_items([{"role": "user", "content": TEXT}])


async def _agents_load(session: Any) -> int:
    return len(await session.get_items())


@contextlib.asynccontextmanager
async def langgraph_sqlite(path: Path) -> AsyncIterator[Sessions]:
    """LangGraph's SqliteSaver under a one-node messages graph: appending a message is
    ``update_state``, which checkpoints the whole state."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("answer", lambda state: {})
    builder.add_edge(START, "answer")
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        graph = builder.compile(checkpointer=saver)

        async def seeded(n: int) -> Any:
            config = {"configurable": {"thread_id": uuid.uuid4().hex}}
            await graph.aupdate_state(config, {"messages": [("user", TEXT)] * max(n, 1)})
            return config

        async def append(config: Any) -> None:
            await graph.aupdate_state(config, {"messages": [("user", TEXT)]})

        async def load(config: Any) -> int:
            return len((await graph.aget_state(config)).values["messages"])

        yield Sessions(seeded, append, load)


# -- the figures ----------------------------------------------------------------------------------


def fsync_floor(directory: Path, runs: int, size: int = 256) -> float:
    """Seconds per appended write of ``size`` bytes + fsync on this disk."""
    samples = []
    with (directory / f"floor{size}").open("wb") as f:
        for _ in range(runs):
            start = time.perf_counter()
            f.write(b"x" * size)
            f.flush()
            os.fsync(f.fileno())
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def append_cost(sessions: Sessions, at: int, runs: int) -> float:
    """Median seconds per append once a session holds ``at`` messages."""
    session = await sessions.seeded(at)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await sessions.append(session)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def throughput(sessions: Sessions, count: int, per_session: int) -> float:
    """Durable appends per second with ``count`` sessions appending concurrently."""
    opened = [await sessions.seeded(0) for _ in range(count)]

    async def talk(session: Any) -> None:
        for _ in range(per_session):
            await sessions.append(session)

    start = time.perf_counter()
    await asyncio.gather(*(talk(s) for s in opened))
    return count * per_session / (time.perf_counter() - start)


async def load_time(sessions: Sessions, count: int, runs: int, *, cold: bool = False) -> float:
    """Median seconds to load ``count`` messages (``cold``: with no cache, where there is one)."""
    session = await sessions.seeded(count)
    if cold and sessions.uncached is not None:
        session = await sessions.uncached(session)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        loaded = await sessions.load(session)
        samples.append(time.perf_counter() - start)
        assert loaded >= count, (loaded, count)
    return statistics.median(samples)


async def measure(sessions: Sessions, quick: bool, slow: bool) -> dict[str, float]:
    """Every figure of one backend (``slow``: a peer whose append rewrites the history)."""
    runs = 5 if slow else 20 if quick else 200
    figures = {f"append at {at:,}, ms": await append_cost(sessions, at, runs) * 1e3 for at in SIZES}
    figures["1 session, appends/s"] = await throughput(sessions, 1, runs)
    figures["100 sessions, appends/s"] = await throughput(
        sessions, 100, 2 if slow else 5 if quick else 50
    )
    loads = 3 if quick or slow else 11
    figures["load 10,000, ms"] = await load_time(sessions, 10_000, loads) * 1e3
    figures["load 10,000 cold, ms"] = (
        await load_time(sessions, 10_000, loads, cold=True) * 1e3
        if sessions.uncached is not None
        else figures["load 10,000, ms"]  # nothing cached: every load is cold
    )
    return figures


def backends(tmp: Path, peers: bool) -> list[tuple[str, Any, bool]]:
    """(column, opener, slow) for every backend this run can reach."""
    found: list[tuple[str, Any, bool]] = [
        (
            "SQLiteStore",
            lambda: tether_store(
                SQLiteStore(tmp / "tether.db"), SQLiteStore(tmp / "tether.db", cache_bytes=0)
            ),
            False,
        ),
        ("FileStore", lambda: tether_store(FileStore(tmp / "chats")), False),
    ]
    pg, redis = os.environ.get("TETHER_PG_DSN"), os.environ.get("TETHER_REDIS_URL")
    if pg:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        found.append(
            ("PostgresStore", lambda: tether_store(PostgresStore(pg, schema=schema)), False)
        )
    if redis:
        prefix = f"bench-{uuid.uuid4().hex[:12]}"
        found.append(("RedisStore", lambda: tether_store(RedisStore(redis, prefix=prefix)), False))
    if peers and _installed("agents"):
        found.append(("oai SQLiteSession", lambda: agents_sqlite(tmp / "agents.db"), False))
        if redis:
            found.append(("oai RedisSession", lambda: agents_redis(redis), False))
    if peers and _installed("langgraph.checkpoint.sqlite"):
        found.append(("LangGraph Sqlite", lambda: langgraph_sqlite(tmp / "langgraph.db"), True))
    return found


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


async def main(quick: bool, peers: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        floor = fsync_floor(tmp, 20 if quick else 200)
        page_floor = fsync_floor(tmp, 20 if quick else 200, 4096)
        columns: dict[str, dict[str, float]] = {}
        for name, opener, slow in backends(tmp, peers):
            async with opener() as sessions:
                columns[name] = await measure(sessions, quick, slow)
            print(f"measured {name}", flush=True)
    report(columns, floor, page_floor)


def report(columns: dict[str, dict[str, float]], floor: float, page_floor: float) -> None:
    targets = {
        "append at 10,000, ms": "flat",
        "1 session, appends/s": f">= {1 / floor / 1.5:,.0f} (1.5x floor)",
        "100 sessions, appends/s": ">= 20,000",
        "load 10,000, ms": "<= 10",
        "load 10,000 cold, ms": "<= 10",
    }
    print(f"\nfsync floor on this disk: {floor * 1e3:.3f} ms ({1 / floor:,.0f}/s) after 256 bytes;")
    print(
        f"{page_floor * 1e3:.3f} ms ({1 / page_floor:,.0f}/s) after one 4 KiB page "
        "(the least an SQLite commit writes: its WAL holds whole pages)"
    )
    print(f"{'figure':<26}" + "".join(f"{name:>19}" for name in columns) + "  SQLiteStore target")
    for figure in next(iter(columns.values())):
        cells = "".join(f"{_cell(values[figure]):>19}" for values in columns.values())
        print(f"{figure:<26}{cells}  {targets.get(figure, '')}")


def _cell(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3f}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--no-peers", action="store_true", help="tether's stores only")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick, not arguments.no_peers))
