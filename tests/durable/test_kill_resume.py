"""Workers killed mid-run (SIGKILL, real processes, at random moments, many times): every run
still completes, with the transcript of an uninterrupted run, and no tool call's effect repeated;
a call is run again only when the worker running it was killed. Also: a call of a tool that is
not idempotent is never retried (the model hears it may or may not have happened), and an
approval waits across a worker restart."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path
from typing import Any

import durable_agents as da
import pytest
from temporalio.client import Client

from conftest import WorkerProcess
from tether import MemoryContextStore, tool
from tether.durable import DevServer, DurableRun

TRIALS = int(os.environ.get("TETHER_KILL_TRIALS", "30"))

pytestmark = pytest.mark.timeout(600)


@tool(name="pay")
def _plain_pay(to: str, amount: int) -> str:
    return f"paid {amount} to {to}"


def _prompt(n: int) -> str:
    rounds = [
        [("pay", {"to": f"r{n}-{k}-{i}", "amount": 10 * k + i}) for i in range(2)]
        + [("lookup", {"name": f"r{n}-{k}"})]
        for k in range(4)
    ]
    return da.plan(*rounds)


async def _reference(prompt: str) -> list[Any]:
    """The uninterrupted run's transcript: the plain loop of the same agent, in this process."""
    context = MemoryContextStore()
    await da.planner.agent.copy(tools=[da.lookup, _plain_pay]).run(prompt, context)
    return context.messages


def _rows(sql: str) -> list[tuple[Any, ...]]:
    db = da.ledger()
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


async def test_runs_survive_dozens_of_worker_kills(
    temporal: DevServer, ledger: Path, tmp_path: Path
) -> None:
    rng = random.Random(int(os.environ.get("TETHER_KILL_SEED", "7")))
    queue = f"kill-{os.getpid()}"
    client = await Client.connect(temporal.address)
    logs = tmp_path / "workers"
    logs.mkdir()
    killed: set[int] = set()
    runs: list[tuple[DurableRun, str]] = []
    worker = WorkerProcess(temporal.address, queue, "planner", log=logs / "w0.log").wait_ready()
    try:
        for trial in range(TRIALS):
            for _ in range(2):  # new runs keep arriving while workers die
                prompt = _prompt(len(runs))
                runs.append((await da.planner.start(client, prompt, task_queue=queue), prompt))
            await asyncio.sleep(rng.uniform(0.1, 1.5))
            worker.kill()
            killed.add(worker.pid)
            log = logs / f"w{trial + 1}.log"
            worker = await asyncio.to_thread(
                WorkerProcess(temporal.address, queue, "planner", log=log).wait_ready
            )
        outputs = await asyncio.gather(*(run.result() for run, _ in runs))
        transcripts = [await run.transcript() for run, _ in runs]
    finally:
        worker.stop()

    for (run, prompt), output, transcript in zip(runs, outputs, transcripts, strict=True):
        assert output.error is None, (run.id, output.error)
        assert transcript == await _reference(prompt), run.id
    expected = {
        f"{run.id}:{k + 1}:call_{k}_{i}" for run, _ in runs for k in range(4) for i in range(2)
    }
    effects = _rows("SELECT key, COUNT(*) FROM effects GROUP BY key")
    assert {key for key, _ in effects} == expected
    assert all(count == 1 for _, count in effects)  # each call's effect happened once
    attempts: dict[str, list[tuple[int, int]]] = {}
    for key, pid, ended in _rows("SELECT key, pid, ended FROM attempts ORDER BY rowid"):
        attempts.setdefault(key, []).append((pid, ended))
    retried = {key: tries for key, tries in attempts.items() if len(tries) > 1}
    for key, tries in retried.items():  # run again only when its worker was killed
        assert all(pid in killed for pid, _ in tries[:-1]), (key, tries)
    assert retried, "no kill landed while a tool call was running: the test proved nothing"
    print(
        f"\n{TRIALS} kills, {len(runs)} runs, {len(expected)} tool calls with effects, "
        f"{len(retried)} retried after a kill, "
        f"{sum(1 for t in retried.values() if any(e for _, e in t[:-1]))} of them after their "
        "effect (the idempotency key kept it single)"
    )


async def test_a_tool_that_is_not_idempotent_is_never_run_twice(
    temporal: DevServer, ledger: Path, tmp_path: Path
) -> None:
    queue = f"careful-{os.getpid()}"
    client = await Client.connect(temporal.address)
    worker = WorkerProcess(temporal.address, queue, "careful", log=tmp_path / "a.log").wait_ready()
    prompt = da.plan([("slow_transfer", {"to": "ann", "amount": 5})])
    run = await da.careful.start(client, prompt, task_queue=queue)
    try:
        async with asyncio.timeout(30):
            while not _rows("SELECT 1 FROM attempts"):  # noqa: ASYNC110 - another process
                await asyncio.sleep(0.05)
        worker.kill()
        worker = WorkerProcess(
            temporal.address, queue, "careful", log=tmp_path / "b.log"
        ).wait_ready()
        answer = await run.answer()
    finally:
        worker.stop()
    assert answer.startswith("done: Error: tool 'slow_transfer' did not finish")
    assert "may or may not have taken effect" in answer
    assert len(_rows("SELECT * FROM attempts")) == 1


async def test_an_approval_waits_across_a_worker_restart(
    temporal: DevServer, ledger: Path, tmp_path: Path
) -> None:
    queue = f"approve-{os.getpid()}"
    client = await Client.connect(temporal.address)
    worker = WorkerProcess(temporal.address, queue, "guarded", log=tmp_path / "a.log").wait_ready()
    run = await da.guarded.start(
        client, da.plan([("send_wire", {"to": "ann", "amount": 7})]), task_queue=queue
    )
    try:
        async with asyncio.timeout(30):
            while (await run.progress()).status != "awaiting_approval":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        worker.kill()
        await asyncio.sleep(1.0)  # nobody is running it now; the decision waits in Temporal
        worker = WorkerProcess(
            temporal.address, queue, "guarded", log=tmp_path / "b.log"
        ).wait_ready()
        progress = await run.progress()
        assert progress.status == "awaiting_approval"
        await run.approve(progress.pending[0]["call_id"])
        answer = await run.answer()
    finally:
        worker.stop()
    assert answer == "done: wired 7 to ann"
    assert _rows("SELECT what FROM effects") == [("wired 7 to ann",)]
