"""Constrained tool calls on the real local model (``constrained_calls=True``):
seeded cases at temperature 0 whose every call names an offered tool with arguments valid for
its schema, and a whole run that makes two calls in one reply. Validity is asserted, not
wording: a question no tool fits may be answered or not."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from constrained_cases import CASES, schema_of

from tether import Agent, Message, TextDelta, ToolInputDelta, ToolUseStart
from tether.local import LocalModel
from tether.local.transport import LocalTransport
from tether.transports.constrained import ConstrainedCalls

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(900)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 3, "max_tokens": 300}
PICKED = ("a joke", "nested")  # two cities: the whole run below


@pytest.fixture
async def agent_transport(local_model: LocalModel) -> Any:
    """The local model's chat wire as an agent gets it when asked: constrained."""
    local = LocalTransport("chat", model=local_model, **OPTIONS)
    transport = Agent(system="", transport=local, constrained_calls=True).transport
    assert isinstance(transport, ConstrainedCalls)
    yield transport
    await (await local.ready()).aclose()  # type: ignore[attr-defined]  # the model is the fixture's


@pytest.mark.parametrize("name", PICKED)
async def test_every_call_names_an_offered_tool_with_valid_arguments(
    agent_transport: ConstrainedCalls, name: str
) -> None:
    case = next(c for c in CASES if c.name == name)
    calls: dict[str, list[str]] = {}
    text: list[str] = []
    async for event in agent_transport.stream(
        [Message("user", case.question)], case.tools, "You are a helpful assistant."
    ):
        if type(event) is TextDelta:
            text.append(event.delta)
        elif type(event) is ToolUseStart:
            calls[event.tool_use_id] = [event.name, ""]
        elif type(event) is ToolInputDelta:
            calls[event.tool_use_id][1] += event.partial_json
    assert calls or "".join(text).strip(), "neither an answer nor a call"
    for tool_name, arguments in calls.values():
        schema = schema_of(case.tools, tool_name)
        assert schema is not None, f"{tool_name} was not offered"
        jsonschema.validate(json.loads(arguments), schema)


async def test_a_run_makes_a_call_for_each_city_and_answers(local_model: LocalModel) -> None:
    """Two cities asked at once: the reply lists a call for each (the native format made one),
    both run, and the run ends with a text answer."""
    cities: list[str] = []

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        cities.append(city)
        return f"{city}: 21 C, clear"

    local = LocalTransport("chat", model=local_model, **OPTIONS)
    agent = Agent(
        system="You are a helpful assistant.",
        transport=local,
        tools=[get_weather],
        max_iterations=3,
        constrained_calls=True,
    )
    try:
        answer = await agent.run("What is the weather in Paris and in Berlin?")
    finally:
        await (await local.ready()).aclose()  # type: ignore[attr-defined]
    assert sorted(c.lower() for c in cities[:2]) == ["berlin", "paris"]
    assert answer.strip()
