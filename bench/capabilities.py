"""What the capabilities users compare frameworks on cost when they are used: one loop run by a
plain agent and by the same agent with ``limits=``, ``output_type=`` and a ``FallbackTransport``
of one healthy transport, measured interleaved in one process (medians and ratios).

    python bench/capabilities.py           # full run
    python bench/capabilities.py --quick   # a fast pass that proves it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenarios as sc  # noqa: E402
from run import interleaved  # noqa: E402

from tether import Agent, FallbackTransport, Limits, Tool  # noqa: E402
from tether.events import TextDelta  # noqa: E402
from tether.messages import Message  # noqa: E402
from tether.types import ToolSpec  # noqa: E402


class JsonLoopModel(sc.LoopModel):
    """``LoopModel`` whose answer is a JSON string, so a typed run validates it at once."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[Any]:
        async for event in super().stream(messages, tools, system):
            yield TextDelta(0, '"done"') if isinstance(event, TextDelta) else event


def agents(n: int) -> dict[str, Agent]:
    """The plain agent, each capability alone, and all of them (time limit aside, then with)."""
    tools = [Tool("step", sc.step, schema=sc.INT_SCHEMA)]
    limits = Limits(tool_calls=10 * n, total_tokens=10**9, tool_calls_per_turn=8)
    timed = Limits(tool_calls=10 * n, total_tokens=10**9, tool_calls_per_turn=8, seconds=600)

    def agent(model: Any = None, **fields: Any) -> Agent:
        transport = JsonLoopModel(n) if model is None else model
        return Agent("You are a bench.", transport, tools=tools, max_iterations=n + 1, **fields)

    return {
        "plain": agent(),
        "limits": agent(limits=limits),
        "output_type": agent(output_type=str),
        "fallback": agent(FallbackTransport([JsonLoopModel(n)])),
        "all three": agent(FallbackTransport([JsonLoopModel(n)]), limits=limits, output_type=str),
        "all three, seconds too": agent(
            FallbackTransport([JsonLoopModel(n)]), limits=timed, output_type=str
        ),
    }


async def main(quick: bool) -> None:
    n = 10
    runs, reps = (20, 3) if quick else (300, 9)
    pair = agents(n)
    assert await pair["all three"].run("go") == "done"
    med = await interleaved(
        {name: (lambda a=agent: a.run("go")) for name, agent in pair.items()},
        runs,
        reps,
        warmup=max(runs // 4, 2),
    )
    per = {name: seconds / (n + 1) * 1e6 for name, seconds in med.items()}
    base = per["plain"]
    print(f"{'agent':28} {'us per iteration':>18} {'ratio':>8}")
    for name, value in per.items():
        print(f"{name:28} {value:18.2f} {value / base:8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
