"""A recorded run for the trace tests: two parallel calls of one tool, a failing tool, usage,
and a secret-looking token in the prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tether import Agent, Tool, ToolSource, Usage
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import Recorder

SPANS = 6  # the run, two model calls, three tool calls


async def weather(city: str) -> str:
    await asyncio.sleep(0.02)
    return f"sunny in {city}"


def failing() -> str:
    raise ValueError("the tool broke")


async def record(path: Path, *, capture_content: bool = True) -> None:
    calls = [Call("weather", {"city": "Oslo"}), Call("weather", {"city": "Lima"}), Call("failing")]
    model = ScriptedTransport(
        [Reply(tool_calls=calls, usage=Usage(120, 30)), Reply("all done", usage=Usage(200, 10))]
    )
    tools: list[Tool | ToolSource] = [Tool("weather", weather), Tool("failing", failing)]
    agent = Agent(
        "sys",
        model,
        tools=tools,
        name="forecaster",
        middleware=[Recorder(path, capture_content=capture_content)],
    )
    assert await agent.run("token=abcd1234efgh what is the weather") == "all done"
