"""tether's added latency on the real local model: first event and whole request, against raw
httpx streaming the very same request body, interleaved in one run.

    python bench/local_latency.py [--reps 7]

Needs the ``local`` extra (the model is fetched once and cached).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx

from tether import Message
from tether.local import LocalModel

PROMPT = [Message("user", "Count from 1 to 10, separated by spaces.")]
SYSTEM = "You are terse."


async def raw_request(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[float, float]:
    start = time.perf_counter()
    first = 0.0
    async with client.stream("POST", url, json=body, headers=headers) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if not first and line.startswith("data:") and '"content"' in line:
                first = time.perf_counter() - start
    return first, time.perf_counter() - start


async def tether_request(transport: Any) -> tuple[float, float]:
    start = time.perf_counter()
    first = 0.0
    async for event in transport.stream(PROMPT, [], SYSTEM):
        if not first and type(event).__name__ == "TextDelta":
            first = time.perf_counter() - start
    return first, time.perf_counter() - start


async def main(reps: int) -> None:
    async with LocalModel() as local:
        transport = local.chat_transport(temperature=0, max_tokens=40, seed=1)
        body = transport.build_request(PROMPT, [], SYSTEM)
        url = transport.base_url + transport.codec.path
        headers = dict(transport._headers)  # the same auth and Connection headers
        samples: dict[str, list[tuple[float, float]]] = {"raw": [], "tether": []}
        async with httpx.AsyncClient(timeout=600) as client:
            await raw_request(client, url, body, headers)  # warm the prompt cache
            await tether_request(transport)
            for rep in range(reps):
                order = ["raw", "tether"] if rep % 2 == 0 else ["tether", "raw"]
                for side in order:
                    if side == "raw":
                        samples[side].append(await raw_request(client, url, body, headers))
                    else:
                        samples[side].append(await tether_request(transport))
        await transport.aclose()
    med = {
        side: (statistics.median(f for f, _ in v), statistics.median(t for _, t in v))
        for side, v in samples.items()
    }
    print(f"{'local model, chat stream':26} {'raw ms':>9} {'tether ms':>10} {'added ms':>9}")
    for i, name in enumerate(("first text event", "whole request")):
        raw, teth = med["raw"][i] * 1000, med["tether"][i] * 1000
        print(f"{name:26} {raw:9.1f} {teth:10.1f} {teth - raw:9.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    asyncio.run(main(parser.parse_args().reps))
