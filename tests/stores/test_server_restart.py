"""PostgreSQL and Redis killed and restarted while a writer appends: every append either
returns (and is kept) or raises a typed ``StoreUnavailableError``; an append whose outcome the
crash hid is settled before the next one, so the writer goes on without a conflict, and nothing
acknowledged is lost. Each case runs its own servers (``scripts/services.sh``), never the
shared ones."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import parts
from tether import Message
from tether.errors import ConflictError, TetherError
from tether.stores import PostgresStore, RedisStore, StoreUnavailableError

SERVICES = Path(__file__).parents[2] / "scripts" / "services.sh"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Path, dict[str, str]]]:
    """A private PostgreSQL and Redis (their directory and their addresses)."""
    if not os.environ.get(parts.ALL_PARTS):  # never let a bare pytest reach for apt-get
        if shutil.which("redis-server") is None:
            parts.absent("Redis", "no redis-server")
        if shutil.which("initdb") is None and not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
            parts.absent("PostgreSQL", "no initdb")
    place = Path(tempfile.mkdtemp(prefix="tether-restart-"))  # reachable by the postgres user
    started = subprocess.run(
        ["bash", str(SERVICES), "start", str(place)], capture_output=True, text=True, check=False
    )
    if started.returncode != 0:
        parts.absent("PostgreSQL and Redis", f"services.sh: {started.stderr[-300:]}")
    found = dict(
        line.removeprefix("export ").split("=", 1)
        for line in started.stdout.splitlines()
        if line.startswith("export ")
    )
    try:
        yield place, found
    finally:
        subprocess.run(["bash", str(SERVICES), "stop", str(place)], check=False)
        shutil.rmtree(place, ignore_errors=True)


def restart(place: Path) -> None:
    subprocess.run(["bash", str(SERVICES), "restart", str(place)], check=True, timeout=120)


@pytest.mark.parametrize("kind", ["postgres", "redis"])
async def test_a_server_restarted_mid_append_loses_nothing_acknowledged(
    kind: str, servers: tuple[Path, dict[str, str]]
) -> None:
    place, found = servers
    store = (
        PostgresStore(found["TETHER_PG_DSN"], schema="restart")
        if kind == "postgres"
        else RedisStore(found["TETHER_REDIS_URL"], prefix="restart")
    )
    acknowledged: list[str] = []
    refused: list[BaseException] = []
    async with store:
        context = await store.open(f"restart-{kind}")
        restarted, warmed = asyncio.Event(), asyncio.Event()
        after_restart = 0

        async def write() -> None:
            nonlocal after_restart
            n = 0
            while after_restart < 30:
                text = f"m{n}"
                n += 1
                try:
                    await context.append(Message("user", text))
                except TetherError as exc:
                    refused.append(exc)
                    await asyncio.sleep(0.05)
                    continue
                acknowledged.append(text)
                if len(acknowledged) == 30:
                    warmed.set()
                if restarted.is_set():
                    after_restart += 1

        writer = asyncio.ensure_future(write())
        await asyncio.wait_for(warmed.wait(), 60)
        await asyncio.to_thread(restart, place)
        restarted.set()
        await asyncio.wait_for(writer, 120)
        history = [m.text for m in await context.get_history()]
    assert refused, "the restart was not noticed: the test did not test anything"
    assert all(isinstance(e, StoreUnavailableError) for e in refused), refused
    assert not any(isinstance(e, ConflictError) for e in refused)
    kept = iter(history)
    assert all(text in kept for text in acknowledged), (acknowledged, history)  # in order
    assert len(history) == len(set(history))  # nothing stored twice
