"""The size soak: durable runs whose tool results are anything from 1 KB to 20 MB (log-uniform),
while the worker is SIGKILLed at random moments; every run ends with the transcript and answer of
the plain loop, and every payment's effect happens once. Large payloads go to blobs on the shared
disk. CI runs it at a quick size; ``scripts/reliability.sh`` runs 50 runs up to 20 MB
(``TETHER_SIZE_SOAK_RUNS``, ``TETHER_SIZE_SOAK_MB``)."""

from __future__ import annotations

import asyncio
import math
import os
import random
from pathlib import Path
from typing import Any

import durable_agents as da
import pytest
from temporalio.client import Client

from conftest import WorkerProcess
from tether import MemoryContextStore, tool
from tether.durable import DevServer, DurableRun, FileBlobs, TemporalAgent

RUNS = int(os.environ.get("TETHER_SIZE_SOAK_RUNS", "8"))
MAX_BYTES = int(float(os.environ.get("TETHER_SIZE_SOAK_MB", "3")) * 1_000_000)

pytestmark = pytest.mark.timeout(1200)


def _prompt(n: int, rng: random.Random) -> str:
    """Two rounds: a payment and a document of a random size, then two more documents."""

    def size() -> int:
        return int(math.exp(rng.uniform(math.log(1_000), math.log(MAX_BYTES))))

    return da.plan(
        [("pay", {"to": f"s{n}", "amount": n}), ("document", {"name": f"d{n}a", "size": size()})],
        [("document", {"name": f"d{n}b", "size": size()}), ("lookup", {"name": f"s{n}"})],
    )


async def _reference(prompt: str) -> list[Any]:
    context = MemoryContextStore()
    plain = da.sizer.agent.copy(tools=[da.lookup, da.document, _plain_pay])
    await plain.run(prompt, context)
    return context.messages


@tool(name="pay")
def _plain_pay(to: str, amount: int) -> str:
    return f"paid {amount} to {to}"


async def test_runs_of_any_size_survive_worker_kills(
    temporal: DevServer, ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_BLOBS", str(tmp_path / "blobs"))  # the workers' blobs
    sizer = TemporalAgent(  # this process's handle on the same agent and blobs
        da.sizer.agent, name="sizer", blobs=FileBlobs(tmp_path / "blobs"), options=da.FAST
    )
    rng = random.Random(int(os.environ.get("TETHER_KILL_SEED", "36")))
    queue = f"sizes-{os.getpid()}"
    client = await Client.connect(temporal.address)
    logs = tmp_path / "workers"
    logs.mkdir()
    runs: list[tuple[DurableRun, str]] = []
    worker = WorkerProcess(temporal.address, queue, "sizer", log=logs / "w0.log").wait_ready()
    kills = 0
    try:
        while len(runs) < RUNS:
            for _ in range(min(2, RUNS - len(runs))):
                prompt = _prompt(len(runs), rng)
                runs.append((await sizer.start(client, prompt, task_queue=queue), prompt))
            await asyncio.sleep(rng.uniform(0.2, 2.0))
            worker.kill()
            kills += 1
            log = logs / f"w{kills}.log"
            worker = await asyncio.to_thread(
                WorkerProcess(temporal.address, queue, "sizer", log=log).wait_ready
            )
        outputs = await asyncio.wait_for(asyncio.gather(*(run.result() for run, _ in runs)), 900)
        transcripts = [await run.transcript() for run, _ in runs]
    finally:
        worker.stop()
    for (run, prompt), output, transcript in zip(runs, outputs, transcripts, strict=True):
        assert output.error is None, (run.id, output.error)
        reference = await _reference(prompt)
        assert transcript == reference, run.id
        assert output.answer == reference[-1].text, run.id
    effects = da.ledger().execute("SELECT key, COUNT(*) FROM effects GROUP BY key").fetchall()
    assert len(effects) == len(runs) and all(count == 1 for _, count in effects)
    blobs = sum(f.stat().st_size for f in (tmp_path / "blobs").iterdir())
    print(
        f"\n{len(runs)} runs up to {MAX_BYTES:,} B a result, {kills} worker kills, "
        f"{blobs / 1e6:,.0f} MB of blobs"
    )
