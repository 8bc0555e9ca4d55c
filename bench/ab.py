"""Compare the engine of this tree with the engine of an earlier commit, in one process.

    python bench/ab.py f51af0b          # loop and single-run figures, this tree against f51af0b
    python bench/ab.py HEAD~1 --reps 9  # fewer repetitions

Both trees are loaded side by side (the earlier one under another package name) and measured
interleaved, so the ratio B/A is far steadier than two runs of ``bench/run.py`` on a noisy
machine. A is the earlier commit, B this working tree; B/A below 1 means this tree is faster.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N = 20  # tool-calling iterations per loop run
DELTAS = 100  # text deltas of the streamed run


def load_commit(rev: str, where: Path) -> ModuleType:
    """``src/tether`` of ``rev``, importable as ``tether_a``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src/tether"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    shutil.move(where / "src" / "tether", where / "tether_a")
    providers = where / "tether_a" / "providers.py"
    if providers.exists():  # the one absolute self-import
        providers.write_text(providers.read_text().replace('"tether.', '"tether_a.'))
    sys.path.insert(0, str(where))
    return importlib.import_module("tether_a")


def agents(t: ModuleType) -> tuple[Any, Any, Any]:
    """The loop agent (N tool calls, then an answer), the one-turn agent and the streaming agent
    (one turn of ``DELTAS`` text deltas), built from ``t``."""
    usage = t.Usage(10, 5)

    class LoopModel:
        async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[Any]:
            k = (len(messages) - 1) // 2
            if k < N:
                yield t.ToolUseStart(0, f"call_{k}", "step")
                yield t.ToolInputDelta(0, f"call_{k}", f'{{"i": {k}}}')
                yield t.IterationEnd(0, t.StopReason.TOOL_USE, usage)
            else:
                yield t.TextDelta(0, "done")
                yield t.IterationEnd(0, t.StopReason.END_TURN, usage)

    class TextModel:
        async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[Any]:
            yield t.TextDelta(0, "hello")
            yield t.IterationEnd(0, t.StopReason.END_TURN, usage)

    class DeltasModel:
        async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[Any]:
            for _ in range(DELTAS):
                yield t.TextDelta(0, "x")
            yield t.IterationEnd(0, t.StopReason.END_TURN, usage)

    async def step(i: int) -> str:
        return f"ok {i}"

    schema = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}
    tool = t.Tool("step", step, schema=schema, description="One step.")
    loop = t.Agent("bench", LoopModel(), tools=[tool], max_iterations=N + 1)
    return loop, t.Agent("bench", TextModel()), t.Agent("bench", DeltasModel())


async def streamed(agent: Any) -> int:
    """One streamed run, read event by event as a caller does."""
    seen = 0
    async for _ in agent.run_stream("go"):
        seen += 1
    return seen


async def _batch(fn: Callable[[], Awaitable[Any]], runs: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(runs):
        await fn()
    return (time.perf_counter() - start) / runs


async def measure(a: ModuleType, b: ModuleType, reps: int) -> dict[str, float]:
    (loop_a, single_a, stream_a), (loop_b, single_b, stream_b) = agents(a), agents(b)
    fns: dict[str, tuple[Callable[[], Awaitable[Any]], int]] = {
        "loop A": (lambda: loop_a.run("go"), 200),
        "loop B": (lambda: loop_b.run("go"), 200),
        "single A": (lambda: single_a.run("go"), 3000),
        "single B": (lambda: single_b.run("go"), 3000),
        "stream A": (lambda: streamed(stream_a), 500),
        "stream B": (lambda: streamed(stream_b), 500),
    }
    for fn, runs in fns.values():
        await _batch(fn, runs // 2)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for rep in range(reps):
        for name in names if rep % 2 else names[::-1]:
            fn, runs = fns[name]
            samples[name].append(await _batch(fn, runs))
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rev", help="the earlier commit (A)")
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a = load_commit(args.rev, Path(tmp))
        sys.path.insert(0, str(ROOT / "src"))
        b = importlib.import_module("tether")
        med = asyncio.run(measure(a, b, args.reps))
    loop_a, loop_b = med["loop A"] / (N + 1) * 1e6, med["loop B"] / (N + 1) * 1e6
    single_a, single_b = med["single A"] * 1e6, med["single B"] * 1e6
    print(f"{'figure':<24}{'A ' + args.rev:>14}{'B (tree)':>12}{'B/A':>8}")
    print(f"{'loop, us per iteration':<24}{loop_a:>14.2f}{loop_b:>12.2f}{loop_b / loop_a:>8.3f}")
    print(f"{'single run, us':<24}{single_a:>14.2f}{single_b:>12.2f}{single_b / single_a:>8.3f}")
    # a streamed run less a single run, per delta: what each text delta costs on its way out
    delta_a = (med["stream A"] - med["single A"]) / (DELTAS - 1) * 1e6
    delta_b = (med["stream B"] - med["single B"]) / (DELTAS - 1) * 1e6
    print(f"{'stream, us per delta':<24}{delta_a:>14.3f}{delta_b:>12.3f}{delta_b / delta_a:>8.3f}")


if __name__ == "__main__":
    main()
