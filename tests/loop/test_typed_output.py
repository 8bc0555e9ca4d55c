"""Typed output on any Agent: the answer is JSON validated as the type asked for, invalid answers
go back to the model ``output_retries`` times, streaming keeps working, and an agent whose
transport has a JSON-schema response format asks for it there instead of in the instructions."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from tether import Agent, OutputValidationError, TextDelta, tool
from tether.context import MemoryContextStore
from tether.testing import Call, Reply, ScriptedTransport
from tether.transports.openai_chat import OpenAIChatTransport


class City(BaseModel):
    name: str
    population: int


def agent(*replies: Reply, **fields: Any) -> tuple[Agent, ScriptedTransport]:
    model = ScriptedTransport(list(replies))
    return Agent(system="You know cities.", transport=model, **fields), model


async def test_run_returns_the_validated_value() -> None:
    bot, model = agent(Reply('{"name": "Oslo", "population": 717710}'), output_type=City)
    city = await bot.run("Biggest city in Norway?")
    assert city == City(name="Oslo", population=717710)
    assert "JSON Schema" in model.requests[0].system and '"population"' in model.requests[0].system
    assert model.requests[0].system.startswith("You know cities.")


async def test_output_per_call_and_a_plain_run_stays_text() -> None:
    bot, _ = agent(Reply("[1, 2, 3]"), Reply("just text"))
    assert await bot.run("numbers", output=list[int]) == [1, 2, 3]
    assert await bot.run("words") == "just text"


async def test_an_invalid_answer_goes_back_with_what_was_wrong() -> None:
    bot, model = agent(
        Reply('{"name": "Oslo", "population": "many"}'),
        Reply('```json\n{"name": "Oslo", "population": 717710}\n```'),
        output_type=City,
    )
    context = MemoryContextStore()
    assert await bot.run("Oslo?", context) == City(name="Oslo", population=717710)
    repair = model.requests[1].messages[-1]
    assert repair.role == "user" and "population" in repair.text
    history = await context.get_history()
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]


async def test_past_the_retries_the_run_ends_with_output_validation_error() -> None:
    bot, model = agent(*(Reply("not json") for _ in range(3)), output_type=City, output_retries=2)
    with pytest.raises(OutputValidationError) as info:
        await bot.run("Oslo?")
    assert info.value.text == "not json" and info.value.errors
    assert model.call_count == 3


async def test_zero_retries_fails_at_the_first_invalid_answer() -> None:
    bot, model = agent(Reply("{}"), output_type=City, output_retries=0)
    with pytest.raises(OutputValidationError):
        await bot.run("Oslo?")
    assert model.call_count == 1


async def test_tools_run_before_the_typed_answer() -> None:
    def lookup(city: str) -> str:
        """Population of a city."""
        return "717710"

    bot, model = agent(
        Reply(tool_calls=[Call("lookup", {"city": "Oslo"})]),
        Reply('{"name": "Oslo", "population": 717710}'),
        tools=[tool(lookup)],
        output_type=City,
    )
    assert (await bot.run("Oslo?")).population == 717710
    assert model.call_count == 2


async def test_streaming_gives_the_text_and_get_output_the_value() -> None:
    bot, _ = agent(Reply('{"name": "Oslo", "population": 717710}'))
    stream = bot.run_stream("Oslo?", output=City)
    deltas = [e.delta async for e in stream if isinstance(e, TextDelta)]
    assert json.loads("".join(deltas))["name"] == "Oslo"
    assert await stream.get_output() == City(name="Oslo", population=717710)


async def test_get_output_raises_what_ended_the_run() -> None:
    bot, _ = agent(Reply("nope"), output_type=City, output_retries=0)
    with pytest.raises(OutputValidationError):
        await bot.run_stream("Oslo?").get_output()


async def test_an_untyped_stream_has_no_output() -> None:
    bot, _ = agent(Reply("hello"))
    assert await bot.run_stream("hi").get_output() is None


def test_output_retries_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="output_retries"):
        Agent(system="", transport=ScriptedTransport([]), output_retries=-1)


async def test_a_transport_with_a_response_format_is_asked_there() -> None:
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        body = {
            "id": "x",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": '{"name":"Oslo","population":1}'},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }
        return httpx.Response(200, json=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    transport = OpenAIChatTransport(
        "m", base_url="http://127.0.0.1:9/v1", api_key="k", stream=False, client=client
    )
    bot = Agent(system="You know cities.", transport=transport, output_type=City)
    assert await bot.run("Oslo?") == City(name="Oslo", population=1)
    request = sent[0]
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]
    assert request["messages"][0]["content"] == "You know cities."  # not asked in words too
    assert "response_format" not in transport.build_request([], [], "")  # the agent's is as it was
    await client.aclose()


def _recording_chat(replies: list[dict[str, Any]], sent: list[dict[str, Any]]) -> Any:
    """An OpenAI chat transport on a mock HTTP server answering ``replies`` (messages) in turn."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        message = replies[len(sent) - 1]
        reason = "tool_calls" if message.get("tool_calls") else "stop"
        choice = {"index": 0, "finish_reason": reason, "message": message}
        usage = {"prompt_tokens": 1, "completion_tokens": 1}
        return httpx.Response(
            200, json={"id": "x", "model": "m", "choices": [choice], "usage": usage}
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return OpenAIChatTransport(
        "m", base_url="http://127.0.0.1:9/v1", api_key="k", stream=False, client=client
    )


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


async def test_with_tools_on_offer_the_schema_is_asked_in_words_until_a_repair() -> None:
    """A response format enforced as a grammar (llama.cpp) rules tool calls out: while tools are
    on offer the schema is in the instructions; a repair asks with the response format and no
    tool calls (the model is then to answer)."""

    @tool
    def population(city: str) -> str:
        """The population of a city."""
        return "717710"

    sent: list[dict[str, Any]] = []
    replies = [
        _call("population", '{"city": "Oslo"}'),
        {"role": "assistant", "content": "Oslo has 717710 people."},
        {"role": "assistant", "content": '{"name": "Oslo", "population": 717710}'},
    ]
    transport = _recording_chat(replies, sent)
    bot = Agent(system="You know cities.", transport=transport, tools=[population])
    assert await bot.run("Oslo?", output=City) == City(name="Oslo", population=717710)
    asking, answered, repair = sent
    for request in (asking, answered):
        assert "response_format" not in request and "tool_choice" not in request
        assert request["tools"][0]["function"]["name"] == "population"
    system = asking["messages"][0]["content"]
    assert system.startswith("You know cities.") and '"population"' in system
    assert "tools" in system and "JSON" in system
    assert repair["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]
    assert repair["tool_choice"] == "none" and repair["tools"]  # offered, not callable
    assert repair["messages"][0]["content"] == system  # one system prompt: the cache holds
    await transport.aclose()


async def test_without_tools_the_answer_is_asked_with_the_format_from_the_start() -> None:
    sent: list[dict[str, Any]] = []
    replies = [{"role": "assistant", "content": '{"name": "Oslo", "population": 1}'}]
    transport = _recording_chat(replies, sent)
    bot = Agent(system="You know cities.", transport=transport, output_type=City)
    assert await bot.run("Oslo?") == City(name="Oslo", population=1)
    assert sent[0]["response_format"]["type"] == "json_schema"
    assert "tool_choice" not in sent[0] and "tools" not in sent[0]
    await transport.aclose()


async def test_a_transport_without_options_is_still_told_in_words_while_repairing() -> None:
    @tool
    def population(city: str) -> str:
        """The population of a city."""
        return "717710"

    bot, model = agent(
        Reply(tool_calls=[Call("population", {"city": "Oslo"})]),
        Reply("Oslo has 717710 people."),
        Reply('{"name": "Oslo", "population": 717710}'),
        tools=[population],
        output_type=City,
    )
    assert await bot.run("Oslo?") == City(name="Oslo", population=717710)
    systems = {request.system for request in model.requests}
    assert len(systems) == 1 and '"population"' in systems.pop()
    assert all(request.tools for request in model.requests)


async def test_a_reply_that_only_repeats_calls_makes_the_next_turn_the_answer() -> None:
    """A small model writes its JSON answer as a call when a tool-call grammar is on: a reply
    whose calls all repeat earlier ones (same tool, same arguments) makes the next turn ask for
    the answer, tool calls off; a new call does not."""

    @tool
    def population(city: str) -> str:
        """The population of a city."""
        return "717710"

    sent: list[dict[str, Any]] = []
    replies = [
        _call("population", '{"city": "Oslo"}'),
        _call("population", '{"city": "Bergen"}'),
        _call("population", '{"city": "Oslo"}'),
        {"role": "assistant", "content": '{"name": "Oslo", "population": 717710}'},
    ]
    transport = _recording_chat(replies, sent)
    bot = Agent(system="You know cities.", transport=transport, tools=[population])
    assert await bot.run("Oslo?", output=City) == City(name="Oslo", population=717710)
    assert ["tool_choice" in request for request in sent] == [False, False, False, True]
    assert sent[3]["response_format"]["type"] == "json_schema"
    await transport.aclose()
