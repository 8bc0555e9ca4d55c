"""What tracing costs per loop iteration (N=20 tool calls per run), as ratios to no tracing in
one run: OpenTelemetry imported but no SDK set up (tracing off), the OpenTelemetry middleware
added with no SDK (the API's no-op tracer), an SDK provider with no exporter, one with the
in-memory exporter, and the JSON-lines ``Recorder``.

    pip install opentelemetry-sdk   # (in the dev extra)
    python bench/tracing.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from run import interleaved
from scenarios import tether_loop_agent

from tether.tracing import OpenTelemetry, Recorder

N = 20


async def main(quick: bool) -> None:
    exporter = InMemorySpanExporter()
    recording = TracerProvider()
    recording.add_span_processor(SimpleSpanProcessor(exporter))
    with tempfile.TemporaryDirectory() as tmp:
        agents = {
            "no tracing (OpenTelemetry imported, no SDK set up)": tether_loop_agent(N),
            "OpenTelemetry() added, no SDK (no-op tracer)": tether_loop_agent(N),
            "SDK provider, no exporter": tether_loop_agent(N),
            "SDK provider, in-memory exporter": tether_loop_agent(N),
            "Recorder (JSON lines to a file)": tether_loop_agent(N),
        }
        middleware = [
            [],
            [OpenTelemetry()],
            [OpenTelemetry(TracerProvider())],
            [OpenTelemetry(recording)],
            [Recorder(Path(tmp) / "trace.jsonl")],
        ]
        for agent, wrappers in zip(agents.values(), middleware, strict=True):
            agent.middleware = tuple(wrappers)

        def runner(agent: object) -> object:
            async def one() -> None:
                await agent.run("go")  # type: ignore[attr-defined]
                exporter.clear()

            return one

        times = await interleaved(
            {name: runner(agent) for name, agent in agents.items()},
            runs=5 if quick else 50,
            reps=3 if quick else 9,
            warmup=2 if quick else 10,
        )
    base = next(iter(times.values()))
    print(f"{'tracing':<52}{'µs/iteration':>14}{'ratio':>8}")
    for name, seconds in times.items():
        print(f"{name:<52}{seconds / N * 1e6:>14.1f}{seconds / base:>7.2f}×")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
