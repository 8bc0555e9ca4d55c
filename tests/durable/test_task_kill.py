"""Workers killed (SIGKILL, real processes, at random moments, several times) while a tool call
waits for an MCP task: the call's next worker waits for the SAME task, found in the dead
activity's last heartbeat, and never calls the tool again; every run completes with every
task's result. The MCP server (``tests/mcp/servers/tasking.py`` over Streamable HTTP) outlives
the workers, as a real one would, and writes down each task it makes and each poll."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import durable_agents as da
import pytest
from temporalio.client import Client

from conftest import WorkerProcess
from tether.durable import DevServer

TASKING = Path(__file__).parents[1] / "mcp" / "servers" / "tasking.py"
KILLS = int(os.environ.get("TETHER_TASK_KILLS", "5"))

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def tasking_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """The tasking server on 127.0.0.1 (its URL in ``$TETHER_TEST_MCP_URL`` for the workers)
    and its marker directory."""
    sys.path.insert(0, str(TASKING.parents[1]))
    from mcp_helpers import free_port, wait_for_port

    markers = tmp_path / "mcp"
    markers.mkdir()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(TASKING), "http", str(port), str(markers)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        monkeypatch.setenv("TETHER_TEST_MCP_URL", url)
        yield url, markers
    finally:
        proc.kill()
        proc.wait()


async def _a_task_begun(markers: Path, known: int) -> None:
    """Wait until the server has made more than ``known`` tasks (at most a minute)."""
    async with asyncio.timeout(60):
        while len(_lines(markers / "created")) <= known:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.05)


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_worker_killed_while_it_waits_for_a_task_resumes_the_same_task(
    temporal: DevServer, tasking_url: tuple[str, Path], tmp_path: Path
) -> None:
    import task_agents  # reads $TETHER_TEST_MCP_URL, set by the fixture

    _, markers = tasking_url
    rng = random.Random(int(os.environ.get("TETHER_KILL_SEED", "11")))
    queue = f"tasks-{os.getpid()}"
    client = await Client.connect(temporal.address)
    logs = tmp_path / "workers"
    logs.mkdir()
    topics = [[f"r{n}-{k}" for k in range(2)] for n in range(3)]
    kills: list[float] = []
    agent = "task_agents:researcher"
    worker = WorkerProcess(temporal.address, queue, agent, log=logs / "w0.log").wait_ready()
    try:
        runs = []
        for run_topics in topics:
            rounds = [[("research", {"topic": t, "seconds": 3.5})] for t in run_topics]
            runs.append(
                await task_agents.researcher.start(client, da.plan(*rounds), task_queue=queue)
            )
        for trial in range(KILLS):
            await _a_task_begun(markers, trial)  # then a random moment while it runs
            await asyncio.sleep(rng.uniform(0.5, 2.5))
            worker.kill()
            kills.append(time.time())
            log = logs / f"w{trial + 1}.log"
            worker = await asyncio.to_thread(
                WorkerProcess(temporal.address, queue, agent, log=log).wait_ready
            )
        answers = await asyncio.gather(*(run.answer() for run in runs))
    finally:
        worker.stop()

    for run_topics, answer in zip(topics, answers, strict=True):
        assert answer == "done: " + " | ".join(f"report on {t}" for t in run_topics), answer
    created = _lines(markers / "created")
    made = sorted(topic for _, tool, topic in created if tool == "research")
    assert made == sorted(t for run_topics in topics for t in run_topics)  # each call once
    polls: dict[str, list[float]] = {}
    for task, at in _lines(markers / "gets"):
        polls.setdefault(task, []).append(float(at))
    resumed = {
        task
        for task, times in polls.items()
        if any(min(times) < kill < max(times) for kill in kills)
    }
    assert resumed, "no kill landed while a task was followed: the test proved nothing"
    assert not (markers / "cancelled").exists()  # no task was given up
    print(f"\n{len(kills)} kills, {len(created)} tasks, {len(resumed)} followed across a kill")
