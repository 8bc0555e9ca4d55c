"""A served tool that returns an object is listed with its output schema and answers with
``structuredContent`` that the SDK's own client checks against it; text tools have neither; a
result that holds no object is an error result, never a result the client would refuse."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from mcp import Client
from tether import Agent, tool
from tether.mcp import serve_agent
from tether.testing import ScriptedTransport


class Forecast(BaseModel):
    city: str
    celsius: float


@tool
def forecast(city: str) -> Forecast:
    """Today's forecast for a city."""
    return Forecast(city=city, celsius=21.5)


@tool
def totals(names: list[str]) -> dict[str, int]:
    """How long each name is."""
    return {name: len(name) for name in names}


@tool
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}"


@tool
def broken_forecast(city: str) -> Forecast:
    """Says it returns a forecast, returns text."""
    return "no forecast today"  # type: ignore[return-value]


def _server() -> Any:
    agent = Agent("s", ScriptedTransport([]), tools=[forecast, totals, greet, broken_forecast])
    return serve_agent(agent, expose_agent=False).sdk_server()


async def test_an_object_result_has_a_schema_and_structured_content() -> None:
    async with Client(_server()) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schema = listed["forecast"].output_schema
        assert schema is not None and set(schema["properties"]) == {"city", "celsius"}
        assert listed["totals"].output_schema["type"] == "object"
        assert listed["greet"].output_schema is None
        result = await client.call_tool("forecast", {"city": "Oslo"})
        assert not result.is_error
        assert result.structured_content == {"city": "Oslo", "celsius": 21.5}
        assert (await client.call_tool("totals", {"names": ["ab"]})).structured_content == {"ab": 2}
        plain = await client.call_tool("greet", {"name": "Ana"})
        assert plain.structured_content is None and plain.content[0].text == "Hello, Ana"


async def test_a_result_that_is_not_the_object_is_an_error_result() -> None:
    async with Client(_server()) as client:
        result = await client.call_tool("broken_forecast", {"city": "Oslo"})
    assert result.is_error
    assert "not the object its output schema describes" in result.content[0].text
