"""The loop figure of ``bench/run.py`` alone: tether's loop against the hand-written asyncio loop.

    python bench/loop_ratio.py            # N=20, 200 runs a batch, 9 repetitions
    python bench/loop_ratio.py --reps 15

Prints ms per iteration for both and their ratio (what ``bench/run.py`` reports as the loop row,
without the rest of its figures and without writing ``bench/results.json``).
"""

from __future__ import annotations

import argparse
import asyncio

from run import loop_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=20, help="tool-calling iterations per run")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    figures = asyncio.run(loop_figures(args.n, args.runs, args.reps))
    tether, raw = figures["tether"], figures["raw"]
    print(
        f"loop N={args.n}: tether {tether * 1000:.2f} us/iter, raw {raw * 1000:.2f} us/iter, "
        f"ratio {tether / raw:.3f}"
    )


if __name__ == "__main__":
    main()
