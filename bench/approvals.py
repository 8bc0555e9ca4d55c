"""Approvals across processes: N runs pause for approval on SQLite in one process; a second
process (started fresh) resumes every one, approving its held call. Each approved call must run
exactly once (effects counted in a file the tool appends to), none may be lost; the median and
p95 resume latency are printed.

    python bench/approvals.py              # 1,000 sessions
    python bench/approvals.py --quick      # 50
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tether import Agent, RunPaused, tool
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport


def agent(effects: Path, *replies: Reply) -> Agent:
    @tool
    def pay(to: str) -> str:
        """Pay someone."""
        with effects.open("a") as out:  # the outside world: one line per effect
            out.write(f"{to}\n")
        return f"paid {to}"

    return Agent("Pay.", ScriptedTransport(list(replies)), tools=[pay], approval={"pay"})


async def pause(db: Path, effects: Path, n: int) -> None:
    async with SQLiteStore(db) as store:
        for i in range(n):
            held = Reply(tool_calls=[Call("pay", {"to": f"s{i}"}, id=f"p{i}")])
            try:
                await agent(effects, held).run("Pay them.", await store.open(f"s{i}"))
            except RunPaused:
                continue
            raise AssertionError(f"session s{i} did not pause")


async def resume(db: Path, effects: Path, n: int) -> list[float]:
    took: list[float] = []
    async with SQLiteStore(db) as store:
        for i in range(n):
            start = time.perf_counter()
            answer = await agent(effects, Reply("Paid.")).resume(
                await store.open(f"s{i}"), approve=[f"p{i}"]
            )
            took.append(time.perf_counter() - start)
            assert answer == "Paid.", answer
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--resume", nargs=3, metavar=("DB", "EFFECTS", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.resume:
        db, effects, n = Path(args.resume[0]), Path(args.resume[1]), int(args.resume[2])
        took = asyncio.run(resume(db, effects, n))
        print(statistics.median(took) * 1e3, sorted(took)[int(len(took) * 0.95)] * 1e3)
        return
    n = 50 if args.quick else 1000
    with tempfile.TemporaryDirectory() as tmp:
        db, effects = Path(tmp) / "runs.db", Path(tmp) / "effects.txt"
        effects.touch()
        started = time.perf_counter()
        asyncio.run(pause(db, effects, n))
        paused_s = time.perf_counter() - started
        before = effects.read_text().splitlines()
        out = subprocess.run(
            [sys.executable, __file__, "--resume", str(db), str(effects), str(n)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        counts = Counter(effects.read_text().splitlines())
    ran_twice = [k for k, c in counts.items() if c > 1]
    lost = n - len(counts)
    print(f"sessions paused, then resumed by a second process: {n}")
    print(f"effects before any approval: {len(before)} (must be 0)")
    print(
        f"approved calls run once: {len(counts) - len(ran_twice)}, twice or more: "
        f"{len(ran_twice)}, lost: {lost}"
    )
    print(
        f"pause: {paused_s / n * 1e3:.2f} ms per run; resume latency median {float(out[0]):.2f} ms,"
        f" p95 {float(out[1]):.2f} ms"
    )
    if before or ran_twice or lost:
        raise SystemExit("an approved call ran before approval, twice, or not at all")


if __name__ == "__main__":
    main()
