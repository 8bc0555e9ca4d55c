"""A runnable agent with two tools on a scripted model (no network, no key).

The scripted model asks for both tools in one response (they run concurrently), then answers.
Swap ``ScriptedTransport`` for a real transport and the rest stays the same.
"""

import asyncio
from datetime import datetime
from typing import Annotated

from pydantic import Field

from tether import Agent, TextDelta, ToolDispatch, ToolResult, tool
from tether.testing import Call, Reply, ScriptedTransport


@tool
def convert_km(km: Annotated[float, Field(description="Distance in kilometres")]) -> float:
    """Convert kilometres to miles."""
    return round(km * 0.621371, 3)


@tool
async def weekday(date: str) -> str:
    """Name the weekday of an ISO date (YYYY-MM-DD)."""
    return datetime.fromisoformat(date).strftime("%A")


async def main() -> None:
    model = ScriptedTransport(
        [
            Reply(
                "Let me check both.",
                tool_calls=[
                    Call("convert_km", {"km": 42.195}),
                    Call("weekday", {"date": "2026-11-22"}),
                ],
            ),
            lambda request: Reply(
                "A marathon is {} miles, and 2026-11-22 is a {}.".format(
                    *(r.content for r in request.last_message.tool_results)
                ),
                chunks=6,
            ),
        ]
    )
    agent = Agent(
        system="You are a precise assistant.", transport=model, tools=[convert_km, weekday]
    )
    async for event in agent.run_stream("How long is a marathon in miles, and what day is today?"):
        if isinstance(event, TextDelta):
            print(event.delta, end="", flush=True)
        elif isinstance(event, ToolDispatch):
            print(f"\n  -> {event.name}({dict(event.input)})")
        elif isinstance(event, ToolResult):
            print(f"  <- {event.name}: {event.content}")
    print()


if __name__ == "__main__":
    asyncio.run(main())
