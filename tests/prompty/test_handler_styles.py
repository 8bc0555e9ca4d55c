"""Tool handlers in both styles (§9.2, §11.2): the spec calls ``handler(args)`` with the parsed
arguments as one dict; tether's own handlers take keywords. Which one a handler gets is read
from its signature against the tool's declared parameters, for handlers passed to ``turn``,
registered by name, or made with ``@tool``."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether import prompty
from tether.prompty import registry
from tether.prompty.execution.tools import tool
from tether.testing import Call, Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(30)

AGENT = """\
---
name: weather
model: {id: scripted, provider: openai, apiType: chat}
tools:
  - name: get_weather
    kind: function
    description: The weather in a city
    parameters:
      - {name: city, kind: string, required: true}
      - {name: unit, kind: string}
    bindings:
      unit: {input: preferred_unit}
  - name: now
    kind: function
    description: The time now
  - name: shout
    kind: function
    description: A word in capitals
    parameters:
      - {name: word, kind: string, required: true}
inputs:
  - {name: question, kind: string}
  - {name: preferred_unit, kind: string, default: celsius}
---
user:
{{question}}
"""
QUESTION = {"question": "Weather in Paris?"}


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    registry.clear_tools()
    yield
    registry.clear_tools()


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "weather.prompty"
    path.write_text(AGENT)
    return path


def weather_model(arguments: dict[str, Any] | None = None) -> ScriptedTransport:
    call = Call("get_weather", {"city": "Paris"} if arguments is None else arguments)
    return ScriptedTransport([Reply(tool_calls=[call]), Reply("It is sunny.")])


def run_turn(agent: Path, tools: dict[str, Any] | None = None, **kw: Any) -> tuple[Any, str]:
    """A full sync ``turn`` on a scripted model: the answer and the tool result it was sent."""
    model = kw.pop("model", None) or weather_model()
    answer = prompty.turn(agent, QUESTION, tools, transport=model, **kw)
    result = model.requests[1].last_message.tool_results[0]
    assert not result.is_error, result.content
    return answer, str(result.content)


# The spec's style: one parameter, not a declared one, gets the arguments as a dict.


def dict_weather(args: dict[str, Any]) -> str:
    return f"{args['city']}: 20 {args['unit']}"


def test_a_dict_handler_passed_to_turn_gets_the_arguments_as_one_dict(agent: Path) -> None:
    answer, sent = run_turn(agent, {"get_weather": dict_weather})
    assert answer == "It is sunny."
    assert sent == "Paris: 20 celsius"


def test_a_dict_handler_in_the_name_registry_gets_the_dict(agent: Path) -> None:
    registry.register_tool("get_weather", dict_weather)
    assert run_turn(agent)[1] == "Paris: 20 celsius"


def test_an_at_tool_dict_handler_gets_the_dict(agent: Path) -> None:
    @tool(name="get_weather")
    def handler(args: dict[str, Any]) -> str:
        return f"tool {args['city']}"

    assert run_turn(agent)[1] == "tool Paris"
    registry.clear_tools()
    handlers = prompty.bind_tools(prompty.load(agent), [handler])
    assert run_turn(agent, handlers)[1] == "tool Paris"


def test_the_dict_carries_bindings_over_what_the_model_sent(agent: Path) -> None:
    seen: list[dict[str, Any]] = []

    def handler(args: dict[str, Any]) -> str:
        seen.append(args)
        return "ok"

    model = weather_model({"city": "Oslo", "unit": "kelvin"})
    run_turn(agent, {"get_weather": handler}, model=model)
    assert seen == [{"city": "Oslo", "unit": "celsius"}]


def test_an_async_dict_handler(agent: Path) -> None:
    async def handler(args: dict[str, Any]) -> str:
        return f"async {args['city']}"

    assert run_turn(agent, {"get_weather": handler})[1] == "async Paris"
    registry.register_tool("get_weather", handler)
    assert run_turn(agent)[1] == "async Paris"


def test_a_partial_leaving_one_parameter_gets_the_dict(agent: Path) -> None:
    def handler(prefix: str, args: dict[str, Any]) -> str:
        return f"{prefix} {args['city']}"

    assert run_turn(agent, {"get_weather": functools.partial(handler, "partial")})[1] == (
        "partial Paris"
    )


def test_callable_objects_sync_and_async_get_the_dict(agent: Path) -> None:
    class Sync:
        def __call__(self, args: dict[str, Any]) -> str:
            return f"object {args['city']}"

    class Async:
        async def __call__(self, args: dict[str, Any]) -> str:
            return f"async object {args['city']}"

    assert run_turn(agent, {"get_weather": Sync()})[1] == "object Paris"
    assert run_turn(agent, {"get_weather": Async()})[1] == "async object Paris"


def test_positional_only_and_optional_extras_still_mean_a_dict(agent: Path) -> None:
    def handler(args: dict[str, Any], /, *, loud: bool = False) -> str:
        return f"{args['city']} {loud}"

    assert run_turn(agent, {"get_weather": handler})[1] == "Paris False"


def test_a_dict_handler_of_a_tool_with_no_parameters_gets_an_empty_dict(agent: Path) -> None:
    seen: list[Any] = []

    def handler(args: dict[str, Any]) -> str:
        seen.append(args)
        return "noon"

    model = ScriptedTransport([Reply(tool_calls=[Call("now", {})]), Reply("It is noon.")])
    assert prompty.turn(agent, QUESTION, {"now": handler}, transport=model) == "It is noon."
    assert seen == [{}]


# tether's style keeps working: keywords whenever the signature names declared parameters.


def keyword_weather(city: str, unit: str = "?") -> str:
    return f"{city}: 20 {unit}"


def test_a_keyword_handler_passed_to_turn_gets_keywords(agent: Path) -> None:
    assert run_turn(agent, {"get_weather": keyword_weather})[1] == "Paris: 20 celsius"


def test_a_keyword_handler_in_the_name_registry_gets_keywords(agent: Path) -> None:
    registry.register_tool("get_weather", keyword_weather)
    assert run_turn(agent)[1] == "Paris: 20 celsius"


def test_an_at_tool_keyword_handler_gets_keywords(agent: Path) -> None:
    @tool(name="get_weather")
    async def handler(city: str, unit: str = "?") -> str:
        return f"typed {city} {unit}"

    assert run_turn(agent)[1] == "typed Paris celsius"


def test_one_parameter_named_as_a_declared_one_gets_keywords(agent: Path) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("shout", {"word": "calm"})]), Reply("")])

    def handler(word: str) -> str:
        return word.upper()

    prompty.turn(agent, QUESTION, {"shout": handler}, transport=model)
    assert model.requests[1].last_message.tool_results[0].content == "CALM"


def test_a_keywords_catch_all_gets_keywords(agent: Path) -> None:
    def handler(**arguments: Any) -> str:
        return ",".join(sorted(arguments))

    assert run_turn(agent, {"get_weather": handler})[1] == "city,unit"


def test_a_partial_of_a_keyword_handler_gets_keywords(agent: Path) -> None:
    def handler(prefix: str, city: str, unit: str) -> str:
        return f"{prefix} {city} {unit}"

    assert run_turn(agent, {"get_weather": functools.partial(handler, "p")})[1] == (
        "p Paris celsius"
    )


def test_a_handler_whose_signature_cannot_be_read_gets_keywords(agent: Path) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("now", {})]), Reply("done")])
    # ``dict`` has no readable signature: called with keywords (none here), it returns {}.
    assert prompty.turn(agent, QUESTION, {"now": dict}, transport=model) == "done"
    assert model.requests[1].last_message.tool_results[0].content == "{}"


async def test_a_turn_takes_limits_and_ends_with_the_conversation_answered(agent: Path) -> None:
    from tether import LimitExceeded, Limits
    from tether.types import Usage

    ran: list[str] = []

    def weather(args: dict[str, Any]) -> str:
        ran.append(args["city"])
        return "sunny"

    registry.register_tool("get_weather", weather)
    calls = [Call("get_weather", {"city": c}) for c in ("Paris", "Rome", "Oslo")]
    model = ScriptedTransport([Reply(tool_calls=calls, usage=Usage(5, 5)), Reply("done")])
    with pytest.raises(prompty.TurnLimitExceeded) as info:
        await prompty.turn_async(agent, QUESTION, transport=model, limits=Limits(tool_calls=2))
    assert isinstance(info.value, LimitExceeded) and info.value.limit == "tool_calls"
    assert ran == ["Paris", "Rome"]
    tool_messages = [m for m in info.value.messages if m.role == "tool"]
    assert len(tool_messages) == 3  # the call that never ran is answered too
