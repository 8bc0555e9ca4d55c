"""Measure tether's loop overhead against a raw asyncio loop, side by side, in one run.

    python bench/run.py            # full run: table on stdout, JSON in bench/results.json
    python bench/run.py --quick    # a fast pass that proves the benchmark still runs
    python bench/run.py --peers    # also the installed peer frameworks (bench/peers.py), in
                                   # extra columns; --peers-mem adds their memory figure (slow)

Both sides run interleaved in the same process, several repetitions each; medians and ratios are
printed. Memory and import times are measured in fresh processes. Peers join the same interleaved
measurement, with fewer runs per batch (about PEER_BATCH_S seconds' worth) as they are slower.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
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
Fn = Callable[[], Awaitable[Any]]

PEER_BATCH_S = {True: 0.04, False: 0.4}  # seconds per peer batch: quick, full


async def _batch(fn: Callable[[], Awaitable[Any]], runs: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(runs):
        await fn()
    return time.perf_counter() - start


async def interleaved(
    pairs: dict[str, Callable[[], Awaitable[Any]]],
    runs: int,
    reps: int,
    warmup: int,
    runs_for: dict[str, int] | None = None,
) -> dict[str, float]:
    """Median seconds per call for each named function, measured alternately.

    ``runs_for`` overrides ``runs`` (and caps ``warmup``) for some names: the slower peers.
    """
    runs_for = runs_for or {}
    for name, fn in pairs.items():
        await _batch(fn, min(warmup, runs_for.get(name, warmup)))
    samples: dict[str, list[float]] = {name: [] for name in pairs}
    names = list(pairs)
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            n = runs_for.get(name, runs)
            samples[name].append(await _batch(pairs[name], n) / n)
    return {name: statistics.median(v) for name, v in samples.items()}


async def with_peers(
    pairs: dict[str, Fn], extra: dict[str, Fn], runs: int, reps: int, warmup: int, batch_s: float
) -> dict[str, float]:
    """``interleaved`` over tether, raw and the peers' ``extra`` functions in one alternation.

    Each peer gets as many runs per batch as fit in ``batch_s`` (at least 1, at most ``runs``),
    sized from one timed call after a first, untimed one.
    """
    runs_for = {}
    for name, fn in extra.items():
        await fn()  # first call: lazy imports and caches
        one = await _batch(fn, 1)
        runs_for[name] = max(1, min(runs, int(batch_s / max(one, 1e-9))))
    return await interleaved(pairs | extra, runs, reps, warmup, runs_for)


async def loop_figures(n: int, runs: int, reps: int, peers: Any = None) -> dict[str, float]:
    agent = sc.tether_loop_agent(n)
    med = await with_peers(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_model, n, sc.RAW_TOOLS),
        },
        {name: peer.loop(n) for name, peer in _ready(peers).items()},
        runs,
        reps,
        warmup=max(runs // 4, 2),
        batch_s=_batch_s(peers),
    )
    return {k: v / (n + 1) * 1000 for k, v in med.items()}  # ms per iteration


async def single_figures(runs: int, reps: int, peers: Any = None) -> dict[str, float]:
    agent = sc.tether_text_agent()
    med = await with_peers(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_text_model, ["hello"], {}),
        },
        {name: peer.single() for name, peer in _ready(peers).items()},
        runs,
        reps,
        warmup=runs // 4,
        batch_s=_batch_s(peers),
    )
    return {k: v * 1000 for k, v in med.items()}  # ms per run


async def par_figures(reps: int, peers: Any = None) -> dict[str, float]:
    agent = sc.tether_par_agent(10)
    med = await interleaved(
        {
            "tether": lambda: agent.run("go"),
            "raw": lambda: sc.raw_run(sc.raw_par_model, 10, sc.RAW_TOOLS),
        }
        | {name: peer.par(10) for name, peer in _ready(peers).items()},
        1,
        reps,
        warmup=1,
    )
    return {k: v * 1000 for k, v in med.items()}  # wall ms


async def stream_figures(runs: int, reps: int, peers: Any = None) -> dict[str, float]:
    one = sc.tether_text_agent(text="x" * 100, chunks=1)
    hundred = sc.tether_text_agent(text="x" * 100, chunks=100)
    text = "x" * 100
    pieces1, pieces100 = [text], list(text)
    sink: list[str] = []
    extra: dict[str, Fn] = {}
    for name, peer in _ready(peers).items():
        run1, run100 = peer.stream(1), peer.stream(100)
        if run1 is not None and run100 is not None:
            extra |= {f"{name}1": run1, f"{name}100": run100}
    med = await with_peers(
        {
            "tether1": lambda: sc.tether_stream_events(one),
            "tether100": lambda: sc.tether_stream_events(hundred),
            "raw1": lambda: sc.raw_run(sc.raw_text_model, pieces1, {}, sink.append),
            "raw100": lambda: sc.raw_run(sc.raw_text_model, pieces100, {}, sink.append),
        },
        extra,
        runs,
        reps,
        warmup=runs // 4,
        batch_s=_batch_s(peers),
    )
    peer_names = [name for name in _ready(peers) if f"{name}1" in extra]
    return {
        "tether": (med["tether100"] - med["tether1"]) / 99 * 1e6,  # µs per extra delta
        "raw": (med["raw100"] - med["raw1"]) / 99 * 1e6,
    } | {name: (med[f"{name}100"] - med[f"{name}1"]) / 99 * 1e6 for name in peer_names}


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=HERE
    )
    return done.stdout.strip()


def mem_figures(runs: int, peers: Any = None) -> dict[str, float]:
    out = {}
    for side in ("tether", "raw"):
        out[side] = float(_fresh(f"import mem; mem.main({side!r}, {runs})"))
    if peers is not None and peers.mem:
        for name in peers.ready:
            out[name] = float(_fresh(f"import peers; peers.mem_main({name!r}, {runs})"))
    return out  # KiB per in-flight run


def import_figures(reps: int, peers: Any = None) -> dict[str, float]:
    # As after a normal install: byte-code compiled once (an environment may turn writing it off).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def wall(statement: str) -> float:
        subprocess.run([sys.executable, "-c", statement], check=True, env=env)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], check=True, env=env)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    # ``import tether`` alone loads nothing (names load on first use): time what an agent needs.
    out = {
        "tether": wall("from tether import Agent, Tool"),
        "raw": wall("import asyncio"),
        "python": wall("import sys"),
    }
    return out | {name: wall(f"import {peer.module}") for name, peer in _ready(peers).items()}


def _ready(peers: Any) -> dict[str, Any]:
    """The peers to measure (a ``peers.Peers`` or None): name -> adapter."""
    return {} if peers is None else peers.ready


def _batch_s(peers: Any) -> float:
    return 0.0 if peers is None else PEER_BATCH_S[peers.quick]


TARGETS = {
    "loop ms/iter (N=20)": "<= 3x raw",
    "loop N=100 vs N=20 per iter": "<= 1.05x",
    "single ms/run": "<= 0.03 ms",
    "par 10x50ms wall ms": "<= 51 ms",
    "stream us/delta": "<= 1.5 us",
    "mem KiB/in-flight run": "<= 4 KiB",
    "import ms (fresh process)": "<= 70 ms",
}


async def measure(quick: bool, peers: Any = None) -> dict[str, dict[str, float]]:
    """All figures; ``peers`` (a ``peers.Peers``) adds its ready peers next to tether and raw."""
    runs, reps = (20, 3) if quick else (200, 9)
    figures: dict[str, dict[str, float]] = {}
    l20 = await loop_figures(20, runs, reps, peers)
    l100 = await loop_figures(100, max(runs // 5, 4), reps, peers)
    figures["loop ms/iter (N=20)"] = l20
    figures["loop ms/iter (N=100)"] = l100
    figures["loop N=100 vs N=20 per iter"] = {k: l100[k] / l20[k] for k in l20}
    figures["single ms/run"] = await single_figures(runs * 10, reps, peers)
    figures["par 10x50ms wall ms"] = await par_figures(3 if quick else 7, peers)
    figures["stream us/delta"] = await stream_figures(runs * 2, reps, peers)
    figures["mem KiB/in-flight run"] = mem_figures(100 if quick else 1000, peers)
    figures["import ms (fresh process)"] = import_figures(2 if quick else 7, peers)
    return figures


def table(figures: dict[str, dict[str, float]], peers: Any = None) -> str:
    """The figures; with ``peers``, one more column per ready peer: its figure and × raw."""
    names = list(_ready(peers))
    head = f"{'figure':32} {'tether':>10} {'raw':>10} {'ratio':>7}  target"
    if names:
        head = f"{head:<78}" + "".join(f" {name:>18}" for name in names)
    lines = [head, "-" * (80 + 19 * len(names))]
    for name, values in figures.items():
        t, r = values["tether"], values["raw"]
        ratio = t / r if r else float("inf")
        line = f"{name:32} {t:10.4f} {r:10.4f} {ratio:6.2f}x  {TARGETS.get(name, '')}"
        if names:
            line = f"{line:<78}" + "".join(_peer_cell(values.get(peer), r) for peer in names)
        lines.append(line)
    if names:
        lines.append("peer columns: the peer's figure, then that figure / raw's; - : not measured")
    return "\n".join(lines)


def _peer_cell(value: float | None, raw: float) -> str:
    if value is None:
        return f" {'-':>18}"
    times = f"{value / raw:6.1f}x" if raw else "    inf"
    return f" {value:10.4f} {times}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast pass (CI smoke test)")
    parser.add_argument("--json", type=Path, default=HERE / "results.json")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also measure the installed peer frameworks (bench/peers.py) in extra columns",
    )
    parser.add_argument(
        "--peers-mem",
        action="store_true",
        help="with the peers, also their memory per in-flight run (slow; implies --peers)",
    )
    args = parser.parse_args()
    peers = None
    if args.peers or args.peers_mem:
        import peers as peers_mod

        peers = asyncio.run(peers_mod.load())
        peers.quick, peers.mem = args.quick, args.peers_mem
    figures = asyncio.run(measure(args.quick, peers))
    print(f"python {sys.version.split()[0]}, {'quick' if args.quick else 'full'} run")
    if peers is not None:
        for name, status in peers.status.items():
            print(f"peer {name}: {status}")
    print(table(figures, peers))
    out: dict[str, Any] = {"quick": args.quick, "figures": figures}
    if peers is not None:
        out["peers"] = peers.status
    args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
