"""What Anthropic's prompt cache gives a tether run: a 20-iteration tool loop (2 KB results) with
``AnthropicTransport`` against a local server that keeps a cache by Anthropic's documented rules
(``bench/fake_anthropic.py``, its own process); per iteration, the share of input tokens read
from the cache and the share marked cacheable (read + written), with ``cache="auto"`` and with
``cache=False``. Exits non-zero if, from iteration 3 on, less than 90 % is cacheable.

    python bench/anthropic_cache.py            # 20 iterations
    python bench/anthropic_cache.py --quick    # 6 iterations
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from tether import Agent, IterationEnd, tool
from tether.transports import AnthropicTransport
from tether.types import Usage

HERE = Path(__file__).resolve().parent
TARGET = 0.90


@tool
def step(i: int) -> str:
    """One step of the work."""
    return f"step {i}: " + "r" * 2048


async def usages(base_url: str, rounds: int, cache: Any) -> list[Usage]:
    transport = AnthropicTransport(
        "fake", base_url=base_url, api_key="k", stream=False, cache=cache
    )
    agent = Agent(
        "You work in steps: call step until the work is done.",
        transport,
        tools=[step],
        max_iterations=rounds + 1,
    )
    found = [e.usage async for e in agent.run_stream("Do the work.") if isinstance(e, IterationEnd)]
    await transport.aclose()
    return found


def serve(rounds: int) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_anthropic.py"), "--rounds", str(rounds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"


def main(rounds: int) -> int:
    runs = {}
    for cache in ("auto", False):  # a server each: the second must not read the first's cache
        server, base_url = serve(rounds)
        try:
            runs[cache] = asyncio.run(usages(base_url, rounds, cache))
        finally:
            server.terminate()
            server.wait()
    heads = ("iteration", "input", "read %", "cacheable %", "cache=False read %")
    print("{:>9} {:>8} {:>8} {:>12} {:>19}".format(*heads))
    short = []
    for n, (on, off) in enumerate(zip(runs["auto"], runs[False], strict=True), start=1):
        read = on.cache_read_tokens / on.input_tokens
        cacheable = (on.cache_read_tokens + on.cache_write_tokens) / on.input_tokens
        print(
            f"{n:9} {on.input_tokens:8} {read:8.1%} {cacheable:12.1%} "
            f"{off.cache_read_tokens / off.input_tokens:19.1%}"
        )
        if n >= 3 and cacheable < TARGET:
            short.append(n)
    if short:
        print(f"below {TARGET:.0%} cacheable at iteration(s) {short}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    sys.exit(main(6 if args.quick else args.rounds))
