"""Measure tether's loop overhead against a raw asyncio loop, side by side, in one run.

    python bench/run.py            # full run: table on stdout, JSON in bench/results.json
    python bench/run.py --quick    # a fast pass that proves the benchmark still runs

Both sides run interleaved in the same process, several repetitions each; medians and ratios are
printed. Memory and import times are measured in fresh processes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenarios as sc  # noqa: E402

Timer = Callable[[], Awaitable[float]]


async def _batch(fn: Callable[[], Awaitable[Any]], runs: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(runs):
        await fn()
    return time.perf_counter() - start


async def interleaved(
    pairs: dict[str, Callable[[], Awaitable[Any]]], runs: int, reps: int, warmup: int
) -> dict[str, float]:
    """Median seconds per call for each named function, measured alternately."""
    for fn in pairs.values():
        await _batch(fn, warmup)
    samples: dict[str, list[float]] = {name: [] for name in pairs}
    names = list(pairs)
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(await _batch(pairs[name], runs) / runs)
    return {name: statistics.median(v) for name, v in samples.items()}


async def loop_figures(n: int, runs: int, reps: int) -> dict[str, float]:
    agent = sc.tether_loop_agent(n)
    med = await interleaved(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_model, n, sc.RAW_TOOLS),
        },
        runs,
        reps,
        warmup=max(runs // 4, 2),
    )
    return {k: v / (n + 1) * 1000 for k, v in med.items()}  # ms per iteration


async def single_figures(runs: int, reps: int) -> dict[str, float]:
    agent = sc.tether_text_agent()
    med = await interleaved(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_text_model, ["hello"], {}),
        },
        runs,
        reps,
        warmup=runs // 4,
    )
    return {k: v * 1000 for k, v in med.items()}  # ms per run


async def par_figures(reps: int) -> dict[str, float]:
    agent = sc.tether_par_agent(10)
    med = await interleaved(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_par_model, 10, sc.RAW_TOOLS),
        },
        1,
        reps,
        warmup=1,
    )
    return {k: v * 1000 for k, v in med.items()}  # wall ms


async def stream_figures(runs: int, reps: int) -> dict[str, float]:
    one, hundred = sc.tether_text_agent(chunks=1), sc.tether_text_agent(chunks=100)
    text = "x" * 100
    pieces1, pieces100 = [text], list(text)
    sink: list[str] = []
    med = await interleaved(
        {
            "tether1": lambda: sc.tether_stream_events(one),
            "tether100": lambda: sc.tether_stream_events(hundred),
            "raw1": lambda: sc.raw_run(sc.raw_text_model, pieces1, {}, sink.append),
            "raw100": lambda: sc.raw_run(sc.raw_text_model, pieces100, {}, sink.append),
        },
        runs,
        reps,
        warmup=runs // 4,
    )
    return {
        "tether": (med["tether100"] - med["tether1"]) / 99 * 1e6,  # µs per extra delta
        "raw": (med["raw100"] - med["raw1"]) / 99 * 1e6,
    }


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=HERE
    )
    return done.stdout.strip()


def mem_figures(runs: int) -> dict[str, float]:
    out = {}
    for side in ("tether", "raw"):
        out[side] = float(_fresh(f"import mem; mem.main({side!r}, {runs})"))
    return out  # KiB per in-flight run


def import_figures(reps: int) -> dict[str, float]:
    def wall(module: str) -> float:
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    return {"tether": wall("tether"), "raw": wall("asyncio"), "python": wall("sys")}


TARGETS = {
    "loop ms/iter (N=20)": "<= 3x raw",
    "loop N=100 vs N=20 per iter": "<= 1.05x",
    "single ms/run": "<= 0.03 ms",
    "par 10x50ms wall ms": "<= 51 ms",
    "stream us/delta": "<= 1.5 us",
    "mem KiB/in-flight run": "<= 4 KiB",
    "import ms (fresh process)": "<= 70 ms",
}


async def measure(quick: bool) -> dict[str, dict[str, float]]:
    runs, reps = (20, 3) if quick else (200, 9)
    figures: dict[str, dict[str, float]] = {}
    l20 = await loop_figures(20, runs, reps)
    l100 = await loop_figures(100, max(runs // 5, 4), reps)
    figures["loop ms/iter (N=20)"] = l20
    figures["loop ms/iter (N=100)"] = l100
    figures["loop N=100 vs N=20 per iter"] = {k: l100[k] / l20[k] for k in l20}
    figures["single ms/run"] = await single_figures(runs * 10, reps)
    figures["par 10x50ms wall ms"] = await par_figures(3 if quick else 7)
    figures["stream us/delta"] = await stream_figures(runs * 2, reps)
    figures["mem KiB/in-flight run"] = mem_figures(100 if quick else 1000)
    figures["import ms (fresh process)"] = import_figures(2 if quick else 7)
    return figures


def table(figures: dict[str, dict[str, float]]) -> str:
    lines = [
        f"{'figure':32} {'tether':>10} {'raw':>10} {'ratio':>7}  target",
        "-" * 80,
    ]
    for name, values in figures.items():
        t, r = values["tether"], values["raw"]
        ratio = t / r if r else float("inf")
        lines.append(f"{name:32} {t:10.4f} {r:10.4f} {ratio:6.2f}x  {TARGETS.get(name, '')}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast pass (CI smoke test)")
    parser.add_argument("--json", type=Path, default=HERE / "results.json")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.quick))
    print(f"python {sys.version.split()[0]}, {'quick' if args.quick else 'full'} run")
    print(table(figures))
    args.json.write_text(json.dumps({"quick": args.quick, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
