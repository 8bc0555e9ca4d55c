"""With an OpenTelemetry SDK set up, each run of a case is a span, and the agent's own run
nests inside it (in a fresh process: the global tracer provider can be set once)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[1])
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from agents import weather_agent
    from tether.evals import Case, Dataset, evaluate

    async def main():
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        data = Dataset(
            [Case("Weather in Oslo?", name="oslo"), Case("x", name="fails", expected="y")]
        )
        await evaluate(weather_agent(), data, repeat=2, progress=False)
        spans = exporter.get_finished_spans()
        cases = [s for s in spans if s.name.startswith("eval ")]
        runs = [s for s in spans if s.name.startswith("invoke_agent")]
        by_id = {s.context.span_id: s for s in cases}
        print(json.dumps({
            "cases": sorted(
                [s.name, s.attributes["tether.eval.attempt"], s.attributes["tether.eval.passed"]]
                for s in cases
            ),
            "runs_inside": sorted(by_id[r.parent.span_id].name for r in runs if r.parent),
            "runs": len(runs),
        }))

    asyncio.run(main())
    """
)


def test_each_run_of_a_case_is_a_span_around_the_agents_run(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(out.stdout)
    assert found["cases"] == [
        ["eval fails", 1, False],
        ["eval fails", 2, False],
        ["eval oslo", 1, True],
        ["eval oslo", 2, True],
    ]
    assert found["runs"] == 4
    assert found["runs_inside"] == ["eval fails", "eval fails", "eval oslo", "eval oslo"]
