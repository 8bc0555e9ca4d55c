"""Where one loop run's time goes: cProfile over many runs of the bench's loop agent.

    python bench/profile_loop.py              # N=20 tool-calling iterations, 300 runs
    python bench/profile_loop.py --single     # the one-turn text agent instead
    python bench/profile_loop.py --top 40 --sort cumulative

Prints the top functions by own time (``tottime``), so per-iteration allocations, validation and
generator layers show up by name.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scenarios as sc


async def _runs(single: bool, n: int, runs: int) -> None:
    agent = sc.tether_text_agent() if single else sc.tether_loop_agent(n)
    for _ in range(runs):
        await agent.run("go")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--single", action="store_true", help="profile the one-turn agent")
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    args = parser.parse_args()
    asyncio.run(_runs(args.single, args.n, 20))  # lazy imports and caches first
    profile = cProfile.Profile()
    profile.enable()
    asyncio.run(_runs(args.single, args.n, args.runs))
    profile.disable()
    pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
