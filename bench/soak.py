"""Soak: thousands of AgentSession conversations on a store with faults injected (sends
cancelled at random points, model calls failing, tools raising), then every session checked:
each message whose append returned is stored, in order; each session answers a last send
(none stuck); the process's memory is read as it goes (flat, or it leaks).

    python bench/soak.py                     # 10,000 sessions on FileStore and on SQLiteStore
    python bench/soak.py --sessions 500      # fewer
    python bench/soak.py --rate 0.05         # more faults (default 1 % of each kind)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether import AgentSession, Message, tool
from tether.errors import BadRequestError, TetherError
from tether.stores import FileStore, SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport


@dataclass
class Figures:
    """What one soak found."""

    sessions: int = 0
    sends: int = 0
    cancelled: int = 0
    model_errors: int = 0
    tool_errors: int = 0
    acknowledged: int = 0
    lost: int = 0
    stuck: int = 0
    seconds: float = 0.0
    rss_mb: list[float] = field(default_factory=list)  # at each tenth of the way


class Acknowledging:
    """A store whose contexts note each message whose append returned."""

    def __init__(self, inner: Any, acked: dict[str, list[Message]]) -> None:
        self.inner = inner
        self.acked = acked

    async def open(self, session_id: str | None = None) -> Any:
        return _Noting(await self.inner.open(session_id), self.acked)


class _Noting:
    def __init__(self, inner: Any, acked: dict[str, list[Message]]) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.mine = acked.setdefault(inner.session_id, [])

    async def append(self, message: Message) -> None:
        await self.inner.append(message)
        self.mine.append(message)

    async def get_history(self) -> list[Message]:
        history: list[Message] = await self.inner.get_history()
        return history

    async def fork(self) -> Any:
        return await self.inner.fork()

    async def clear(self) -> None:
        await self.inner.clear()


def faulty_model(rng: random.Random, rate: float, figures: Figures) -> ScriptedTransport:
    """Answers a question with a tool call, a tool result with text; fails now and then."""

    def step(request: Any) -> Any:
        if rng.random() < rate:
            figures.model_errors += 1
            return BadRequestError("injected model failure")
        last = request.last_message
        if last.role == "user" and last.tool_results:
            return Reply("answer: " + last.tool_results[0].text, chunks=3)
        return Reply(tool_calls=[Call("lookup", {"key": last.text[:16]})])

    return ScriptedTransport([], then=step)


def faulty_tool(rng: random.Random, rate: float, figures: Figures) -> Any:
    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await asyncio.sleep(0)
        if rng.random() < rate:
            figures.tool_errors += 1
            raise RuntimeError("injected tool failure")
        return f"value of {key}"

    return lookup


async def one_session(
    store: Any, name: str, rng: random.Random, rate: float, figures: Figures
) -> None:
    session = AgentSession(
        faulty_model(rng, rate, figures),
        mcp_tools=[faulty_tool(rng, rate, figures)],
        store=store,
        session_id=name,
    )
    async with session:
        for turn in range(2):
            figures.sends += 1
            send = asyncio.ensure_future(session.send(f"{name} q{turn}"))
            if rng.random() < rate:
                for _ in range(rng.randrange(12)):  # a random point of the send
                    await asyncio.sleep(0)
                send.cancel()
                figures.cancelled += 1
            with contextlib.suppress(asyncio.CancelledError, TetherError):
                await send
        answer = ""
        for _ in range(5):  # a last send must work whatever happened before
            try:
                answer = await session.send(f"{name} last")
                break
            except BadRequestError:
                continue  # an injected failure of this very call: ask again
            except TetherError:
                break
        if not answer.startswith("answer: "):
            figures.stuck += 1


async def soak(
    make_store: Any, sessions: int, rate: float, seed: int = 1, concurrency: int = 50
) -> Figures:
    """Run ``sessions`` conversations ``concurrency`` at a time and check every one."""
    figures = Figures(sessions=sessions)
    rng = random.Random(seed)
    acked: dict[str, list[Message]] = {}
    start = time.perf_counter()
    async with make_store() as real:
        store = Acknowledging(real, acked)
        names = [f"soak-{i}" for i in range(sessions)]
        tenth = max(1, sessions // 10)
        for at in range(0, sessions, concurrency):
            batch = names[at : at + concurrency]
            await asyncio.gather(*(one_session(store, n, rng, rate, figures) for n in batch))
            for name in batch:  # checked now, then forgotten: the soak itself holds nothing
                stored = await (await real.open(name)).get_history()
                mine = acked.pop(name, [])
                figures.acknowledged += len(mine)
                figures.lost += len(missing(mine, stored))
            if (at // concurrency) % max(1, tenth // concurrency) == 0:
                figures.rss_mb.append(rss_mb())
        figures.seconds = time.perf_counter() - start
    return figures


def missing(acknowledged: list[Message], stored: list[Message]) -> list[Message]:
    """The acknowledged messages not found in ``stored`` in their order."""
    kept = iter(stored)
    return [m for m in acknowledged if not any(m == s for s in kept)]


def rss_mb() -> float:
    """This process's resident memory now, in MiB (Linux)."""
    with contextlib.suppress(OSError, ValueError):
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * resource.getpagesize() / 2**20
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=0.01, help="chance of each fault kind")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    failed = False
    print(f"{'store':<12}{'sessions':>9}{'sends':>8}{'cancel':>8}{'model':>7}{'tool':>6}"
          f"{'acked':>9}{'lost':>6}{'stuck':>7}{'s':>8}  RSS MiB at each tenth")
    with tempfile.TemporaryDirectory() as tmp:
        place = Path(tmp)
        stores = {
            "FileStore": lambda: FileStore(place / "files"),
            # a small history cache, so memory reaches its bound early and shows flat after it
            "SQLiteStore": lambda: SQLiteStore(place / "soak.db", cache_bytes=2 << 20),
        }
        for name, make in stores.items():
            f = asyncio.run(soak(make, options.sessions, options.rate, options.seed))
            failed = failed or f.lost > 0 or f.stuck > 0
            memory = " ".join(f"{m:.0f}" for m in f.rss_mb)
            print(f"{name:<12}{f.sessions:>9}{f.sends:>8}{f.cancelled:>8}{f.model_errors:>7}"
                  f"{f.tool_errors:>6}{f.acknowledged:>9}{f.lost:>6}{f.stuck:>7}"
                  f"{f.seconds:>8.1f}  {memory}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
