"""Evaluate an agent on the offline model: a dataset of cases, checks of its answers and tool
calls, a judge model grading against a rubric, and a report to compare the next change with.

The cases are in ``examples/10_shop_cases.yaml``. From the repository root (the ``local`` and
``evals`` extras):

    .venv/bin/python examples/10_evaluate.py report.json

or the same from the command line, failing on a case that passes less often than before:

    .venv/bin/tether eval examples/10_shop_cases.yaml --agent examples/10_evaluate.py:agent \
        --baseline report.json
"""

import asyncio
import sys
from pathlib import Path

from rich.console import Console

import tether
from tether import Agent, tool
from tether.evals import Dataset, evaluate

STOCK = {"apples": 37, "pears": 12, "plums": 0}


@tool
def stock(item: str) -> int:
    """How many of an item (apples, pears, plums) the shop has in stock."""
    return STOCK.get(item.lower().removesuffix("s") + "s", 0)  # "apple" or "apples"


# "local" starts the offline model on its first request; it stops with the process.
agent = Agent(
    system="You run a shop. Use the stock tool to answer, then answer in one sentence.",
    transport=tether.transport("local", temperature=0, max_tokens=200),
    tools=[stock],
    max_iterations=4,
    name="shop",
)


async def main() -> None:
    cases = Dataset.load(Path(__file__).with_name("10_shop_cases.yaml"))
    report = await evaluate(agent, cases, concurrency=2)  # judged by the agent's own model
    Console().print(report.render())
    if len(sys.argv) > 1:
        report.save(sys.argv[1])
        print(f"saved {sys.argv[1]}")


if __name__ == "__main__":
    asyncio.run(main())
