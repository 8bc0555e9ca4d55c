"""A first agent on tether's offline model: one tool, and a real model that decides to call it.

The model (Qwen2.5-Coder-1.5B on llama.cpp, the ``local`` extra) is fetched once, about 1.1 GB,
then cached: after that nothing leaves the machine and no key is needed. From the repository root:

    .venv/bin/python examples/01_first_agent.py
"""

import asyncio

import tether
from tether import Agent, ToolDispatch, ToolResult, tool

STOCK = {"apples": 37, "pears": 12, "plums": 0}


@tool
def stock(item: str) -> int:
    """How many of an item (apples, pears, plums) the shop has in stock."""
    return STOCK.get(item.lower().removesuffix("s") + "s", 0)  # "apple" or "apples"


async def main() -> None:
    # "local" starts the offline model on first use; leaving the block stops it.
    async with tether.transport("local", temperature=0, max_tokens=200) as model:
        agent = Agent(
            system="You run a shop. Use the stock tool to answer, then answer in one sentence.",
            transport=model,
            tools=[stock],
            max_iterations=4,
        )
        stream = agent.run_stream("How many apples do we have in stock?")
        async for event in stream:
            if isinstance(event, ToolDispatch):
                print(f"-> {event.name}({dict(event.input)})")
            elif isinstance(event, ToolResult):
                print(f"<- {event.content}")
        print(await stream.get_final_text())


if __name__ == "__main__":
    asyncio.run(main())
