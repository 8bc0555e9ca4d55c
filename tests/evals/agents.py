"""Agents for the evaluation tests, on scripted models that answer from the request, so runs
in any order and at once get the same answers."""

from __future__ import annotations

from tether import Agent, Limits, tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request
from tether.types import Usage


@tool
def get_weather(city: str) -> str:
    """The weather in ``city``."""
    return f"sunny in {city}"


@tool
def add(a: int, b: int) -> int:
    """a + b."""
    return a + b


def _weather_model(request: Request) -> Reply:
    """Asks for the weather of the city named last in the question, then answers with it."""
    last = request.messages[-1]
    results = last.tool_results
    if results:
        return Reply(f"It is {results[0].content}.", usage=Usage(30, 8))
    question = last.text
    if "2+2" in question:
        return Reply("4", usage=Usage(10, 1))
    city = question.rstrip("?").split()[-1]
    return Reply(tool_calls=[Call("get_weather", {"city": city})], usage=Usage(20, 5))


def weather_agent(**options: object) -> Agent:
    """An agent on ``_weather_model`` with the weather tool."""
    return Agent(
        system="Answer with the tools.",
        transport=ScriptedTransport([], then=_weather_model),
        tools=[get_weather, add],
        **options,  # type: ignore[arg-type]
    )


def looping_agent() -> Agent:
    """An agent whose model calls ``add`` for ever; its limit stops it after two calls."""
    model = ScriptedTransport([], then=lambda _: Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]))
    return Agent(system="", transport=model, tools=[add], limits=Limits(tool_calls=2))
