"""Constrained tool calls (``Agent(constrained_calls=...)``): the reply's schema, the history
shown in the reply's own form, the reply read back as it streams (whole, cut short, or not the
format at all), and whole runs against a real HTTP server on 127.0.0.1 speaking Chat
Completions as llama.cpp does."""

from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest
from misbehaving_server import MisbehavingServer, sse_stream

from tether import (
    Agent,
    IterationEnd,
    Message,
    StopReason,
    TextDelta,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from tether.context import MemoryContextStore
from tether.errors import StreamInterruptedError
from tether.local.transport import LocalTransport
from tether.testing import ScriptedTransport
from tether.transports.constrained import ConstrainedCalls
from tether.transports.constrained_decode import ReplyReader
from tether.transports.constrained_format import reply_format, shown_history, told_system
from tether.transports.openai_chat import OpenAIChatTransport

WEATHER = ToolSpec(
    "get_weather",
    "The weather in a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
BOOK = ToolSpec(
    "book_table",
    "Book a table.",
    {
        "type": "object",
        "properties": {
            "people": {"type": "integer"},
            "contact": {"$ref": "#/$defs/Contact"},
        },
        "required": ["people", "contact"],
        "$defs": {
            "Contact": {
                "type": "object",
                "properties": {"phone": {"type": "string"}},
                "required": ["phone"],
            }
        },
    },
)


# -- the reply's schema -------------------------------------------------------------------------


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_the_reply_format_admits_an_answer_or_calls_of_offered_tools_with_valid_arguments() -> None:
    """The schema admits an answer, or one or more calls each naming an offered tool with
    arguments valid for it (a tool's ``$defs`` moved to the top under its own prefix); it
    refuses an unknown tool, bad arguments, an empty list and both forms at once."""
    form = reply_format([WEATHER, BOOK])
    schema = form["schema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    contact = {"phone": "555"}
    good = [
        {"answer": "Hello"},
        {"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
        {
            "calls": [
                {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}},
                {"name": "book_table", "arguments": {"people": 2, "contact": contact}},
            ]
        },
    ]
    bad = [
        {"calls": [{"name": "get_time", "arguments": {}}]},
        {"calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "kelvin"}}]},
        {"calls": [{"name": "book_table", "arguments": {"people": "two", "contact": contact}}]},
        {"calls": [{"name": "book_table", "arguments": {"people": 2, "contact": {}}}]},
        {"calls": []},
        {"answer": "Hi", "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
        {"reply": "Hi"},
    ]
    assert all(_valid(schema, v) for v in good)
    assert not any(_valid(schema, v) for v in bad)
    assert schema["$defs"] == {"t1_Contact": BOOK.schema["$defs"]["Contact"]}
    assert "$defs" not in BOOK.schema["properties"]["contact"]  # the tool's own is untouched


def test_the_system_prompt_lists_each_tool_and_both_forms() -> None:
    told = told_system("Be brief.", [WEATHER, BOOK])
    assert told.startswith("Be brief.\n\n")
    for spec in (WEATHER, BOOK):
        assert json.dumps(dict(spec.schema)) in told
    assert '{"answer":' in told and '{"calls":' in told


def test_calls_are_offered_before_the_answer_in_the_prompt_and_the_schema() -> None:
    # Told the answer first, the local 1.5B model answered a stock question with a number it
    # made up instead of calling the stock tool (examples/01): the calls come first.
    told = told_system("", [WEATHER])
    assert told.index('{"calls":') < told.index('{"answer":')
    first, second = reply_format([WEATHER])["schema"]["anyOf"]
    assert list(first["properties"]) == ["calls"] and list(second["properties"]) == ["answer"]


def test_the_history_is_shown_in_the_form_the_model_writes_and_left_as_it_was() -> None:
    """Earlier calls as ``{"calls": [...]}``, their results as a user message naming each call
    (an error as an error), answers as ``{"answer": ...}``; the stored messages are unchanged."""
    call_a = ToolUseBlock("a", "get_weather", {"city": "Oslo"})
    call_b = ToolUseBlock("b", "get_weather", {"city": "Lima"})
    history = [
        Message("user", "Weather in Oslo and Lima?"),
        Message("assistant", [call_a, call_b]),
        Message("user", [ToolResultBlock("a", "rain"), ToolResultBlock("b", "boom", True)]),
        Message("assistant", "Rain in Oslo; Lima failed."),
        Message("user", "Thanks"),
    ]
    before = list(history)
    shown = shown_history(history)
    assert history == before
    assert shown[0] is history[0] and shown[4] is history[4]
    assert json.loads(shown[1].text) == {
        "calls": [
            {"name": "get_weather", "arguments": {"city": "Oslo"}},
            {"name": "get_weather", "arguments": {"city": "Lima"}},
        ]
    }
    lines = shown[2].text.splitlines()
    assert shown[2].role == "user" and not shown[2].tool_results
    assert json.loads(lines[1]) == {
        "name": "get_weather",
        "arguments": {"city": "Oslo"},
        "result": "rain",
    }
    assert json.loads(lines[2])["error"] == "boom"
    assert json.loads(shown[3].text) == {"answer": "Rain in Oslo; Lima failed."}


# -- reading the reply --------------------------------------------------------------------------

ANSWER = 'Line one\nsaid "hi" \\ café ☕ 😀 \u00e9 done'


def _pieces(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 30))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("seed", range(40))
def test_an_answer_is_given_as_it_arrives_whatever_the_pieces(seed: int) -> None:
    """The answer's text comes out piece by piece as its JSON arrives, escapes (a surrogate
    pair's two halves too) never cut in half, and the whole equals the JSON string's value."""
    wire = '{\n  "answer": ' + json.dumps(ANSWER) + "\n}"
    if seed % 2:
        wire = '{"answer": ' + json.dumps(ANSWER, ensure_ascii=False) + "}"
    reader = ReplyReader()
    given = [reader.feed(piece) for piece in _pieces(wire, random.Random(seed))]
    rest, calls = reader.finish()
    assert "".join(given) + rest == ANSWER and calls == []
    assert rest == "" and sum(1 for g in given if g) > 1
    assert all(c < "\ud800" or c > "\udfff" for g in given for c in g)  # no lone surrogate


def test_calls_are_read_when_the_reply_is_whole() -> None:
    reader = ReplyReader()
    wire = '{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}},'
    wire += ' {"name": "get_weather", "arguments": {"city": "Lima"}}]}'
    assert [reader.feed(c) for c in wire] == [""] * len(wire)
    assert not reader.answering
    rest, calls = reader.finish()
    assert rest == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Lima"}),
    ]


def test_a_reply_cut_short_keeps_its_whole_calls_and_the_cut_one_as_text() -> None:
    """Cut off inside its second call: the first is whole, the second keeps its name and the
    arguments as the text that came (the loop answers it with an error the model can repair)."""
    reader = ReplyReader()
    reader.feed('{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, ')
    reader.feed('{"name": "get_weather", "arguments": {"city": "Li')
    _, calls = reader.finish()
    assert [c.name for c in calls] == ["get_weather", "get_weather"]
    assert json.loads(calls[0].arguments) == {"city": "Oslo"}
    assert calls[1].arguments == '{"city": "Li'


def test_an_answer_cut_short_keeps_what_arrived() -> None:
    reader = ReplyReader()
    given = reader.feed('{"answer": "The weather is') + reader.feed(" sunny \\u00")
    rest, calls = reader.finish()
    assert given + rest == "The weather is sunny " and calls == []


@pytest.mark.parametrize(
    ("wire", "why"),
    [
        ("Sure! Here is the weather.", "not JSON"),
        ('{"calls": [{"na', "first call was named"),
        ('{"action": "answer"}', "neither"),
        ('{"calls": "get_weather"}', "not a list of calls"),
        ('{"calls": [{"arguments": {}}]}', "no function name"),
        ("", "not JSON"),
    ],
)
def test_a_reply_not_in_the_format_is_a_typed_error_naming_the_way_out(wire: str, why: str) -> None:
    reader = ReplyReader()
    assert reader.feed(wire) == ""
    with pytest.raises(StreamInterruptedError, match=why) as caught:
        reader.finish()
    assert "constrained_calls=False" in str(caught.value)


def test_a_reply_that_starts_otherwise_is_still_read_whole() -> None:
    """A reply that is the format but starts unexpectedly (a server that does not hold it to the
    schema, writing another key first) is read whole at its end, not lost."""
    reader = ReplyReader()
    assert reader.feed('{"note": 1, "answer": "Hi"}') == ""
    assert reader.finish() == ("Hi", [])


# -- the agent's switch -------------------------------------------------------------------------


def test_constrained_calls_are_on_when_asked_and_off_by_default() -> None:
    local = LocalTransport("chat")  # nothing starts until the first request
    assert Agent(system="", transport=local).transport is local
    on = Agent(system="", transport=local, constrained_calls=True)
    assert isinstance(on.transport, ConstrainedCalls) and on.transport.inner is local
    assert Agent(system="", transport=local, constrained_calls=False).transport is local
    assert on.copy().transport is on.transport
    assert on.copy(constrained_calls=False).transport is local
    remote = OpenAIChatTransport("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert Agent(system="", transport=remote).transport is remote
    held = Agent(system="", transport=remote, constrained_calls=True).transport
    assert isinstance(held, ConstrainedCalls) and held.model == "m"


@pytest.mark.parametrize(
    "transport",
    [ScriptedTransport([]), LocalTransport("anthropic"), LocalTransport("responses")],
    ids=["scripted", "local anthropic", "local responses"],
)
def test_constrained_calls_on_a_transport_that_cannot_is_an_error_at_construction(
    transport: Any,
) -> None:
    with pytest.raises(ValueError, match=r"constrained_calls=True needs a transport"):
        Agent(system="", transport=transport, constrained_calls=True)
    assert Agent(system="", transport=transport).transport is transport


def test_constrained_calls_takes_only_true_false_or_none() -> None:
    with pytest.raises(TypeError, match="constrained_calls must be True, False or None"):
        Agent(system="", transport=LocalTransport(), constrained_calls="yes")  # type: ignore[arg-type]


def test_a_format_of_its_own_replaces_the_constraint_and_other_options_keep_it() -> None:
    remote = OpenAIChatTransport("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    held = ConstrainedCalls(remote)
    typed = held.with_response_format({"name": "T", "schema": {"type": "object"}})
    assert type(typed) is OpenAIChatTransport
    assert type(held.with_options(response_format={"type": "json_object"})) is OpenAIChatTransport
    cooler = held.with_options(temperature=0)
    assert isinstance(cooler, ConstrainedCalls)
    assert cooler.inner.options.temperature == 0  # type: ignore[attr-defined]


# -- whole runs over HTTP -----------------------------------------------------------------------


def _chunks(content: list[str], finish: str = "stop") -> list[dict[str, Any] | str]:
    """A Chat Completions stream as llama.cpp sends it: one content delta per piece, the finish
    reason, the usage, then ``[DONE]``."""
    out: list[dict[str, Any] | str] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}
    ]
    out += [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in content]
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    out.append("data: [DONE]\n\n")
    return out


CALLS = [
    '{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, ',
    '{"name": "get_weather", "arguments": {"city": "Lima", "unit": "celsius"}}]}',
]
FINAL = ['{"answer": "', "Rain in Oslo", ", sun in Lima", '."}']


def _agent(url: str, seen: list[dict[str, Any]]) -> Agent:
    def get_weather(city: str, unit: str = "celsius") -> str:
        """The weather in a city."""
        seen.append({"city": city, "unit": unit})
        return {"Oslo": "rain", "Lima": "sun"}[city]

    transport = OpenAIChatTransport("m", base_url=url + "/v1", api_key="k", temperature=0)
    return Agent(
        system="Be brief.", transport=transport, tools=[get_weather], constrained_calls=True
    )


async def test_a_run_makes_every_listed_call_and_streams_its_answer() -> None:
    """Two calls in one reply both run; the request carries the schema as a response format and
    the tools in the system prompt (no ``tools`` field); the next request shows the calls and
    their results in the reply's form; the answer streams in pieces; the stored history holds
    ordinary calls and results."""
    seen: list[dict[str, Any]] = []
    async with MisbehavingServer(sse_stream(_chunks(CALLS)), sse_stream(_chunks(FINAL))) as server:
        agent = _agent(server.url, seen)
        store = MemoryContextStore()
        events = [e async for e in agent.run_stream("Weather in Oslo and Lima?", store)]
        await agent.transport.aclose()  # type: ignore[attr-defined]
    assert seen == [{"city": "Oslo", "unit": "celsius"}, {"city": "Lima", "unit": "celsius"}]
    texts = [e.delta for e in events if type(e) is TextDelta]
    ends = [e.stop_reason for e in events if type(e) is IterationEnd]
    assert ends == [StopReason.TOOL_USE, StopReason.END_TURN]
    assert texts == ["Rain in Oslo", ", sun in Lima", "."]
    first, second = (r.json() for r in server.requests)
    assert "tools" not in first and first["response_format"]["type"] == "json_schema"
    assert _valid(first["response_format"]["json_schema"]["schema"], json.loads("".join(CALLS)))
    assert '"name": "get_weather"' in first["messages"][0]["content"]
    shown = second["messages"]
    assert json.loads(shown[2]["content"]) == json.loads("".join(CALLS))
    assert shown[2]["role"] == "assistant" and "tool_calls" not in shown[2]
    assert '"result": "rain"' in shown[3]["content"] and shown[3]["role"] == "user"
    stored = await store.get_history()
    assert [b.name for b in stored[1].tool_uses] == ["get_weather"] * 2
    assert [b.content for b in stored[2].tool_results] == ["rain", "sun"]
    assert stored[3].text == "Rain in Oslo, sun in Lima."


async def test_a_reply_cut_off_mid_call_is_answered_with_an_error_the_model_repairs() -> None:
    """The server stops at its token limit inside the second call: the first call runs, the cut
    one is answered with an error (its arguments are not JSON), and the run goes on."""
    seen: list[dict[str, Any]] = []
    cut = [CALLS[0], '{"name": "get_weather", "arguments": {"city": "Li']
    replies = (sse_stream(_chunks(cut, "length")), sse_stream(_chunks(FINAL)))
    async with MisbehavingServer(*replies) as server:
        agent = _agent(server.url, seen)
        store = MemoryContextStore()
        answer = await agent.run("Weather in Oslo and Lima?", store)
        await agent.transport.aclose()  # type: ignore[attr-defined]
    assert seen == [{"city": "Oslo", "unit": "celsius"}]
    assert answer == "Rain in Oslo, sun in Lima."
    results = (await store.get_history())[2].tool_results
    assert [r.is_error for r in results] == [False, True]
    assert '"error"' in server.requests[1].json()["messages"][3]["content"]


async def test_a_server_that_ignores_the_format_ends_the_run_with_a_typed_error() -> None:
    seen: list[dict[str, Any]] = []
    async with MisbehavingServer(sse_stream(_chunks(["It is ", "sunny."]))) as server:
        agent = _agent(server.url, seen)
        with pytest.raises(StreamInterruptedError, match=r"constrained_calls=False"):
            await agent.run("Weather in Oslo?")
        await agent.transport.aclose()  # type: ignore[attr-defined]
    assert seen == []


async def test_a_request_with_no_tools_on_offer_passes_through() -> None:
    async with MisbehavingServer(sse_stream(_chunks(["Hello", " there"]))) as server:
        transport = OpenAIChatTransport("m", base_url=server.url + "/v1", api_key="k")
        agent = Agent(system="Be brief.", transport=transport, constrained_calls=True)
        assert await agent.run("Hi") == "Hello there"
        await transport.aclose()
    body = server.requests[0].json()
    assert "response_format" not in body and body["messages"][0]["content"] == "Be brief."


async def test_a_typed_run_asks_with_the_transports_own_tool_calls() -> None:
    """A typed run (``output_type``) is not held to ``{"answer"}``/``{"calls"}``: the tools go
    out as the request's ``tools`` with the schema in words (held, the local model made its
    typed answer up instead of calling the tool that knew it)."""
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        sky: str

    answer = ['{"city": "Oslo", "sky": "rain"}']
    async with MisbehavingServer(sse_stream(_chunks(answer))) as server:
        agent = _agent(server.url, [])
        typed = agent.copy(output_type=Weather)
        assert isinstance(typed.transport, ConstrainedCalls)
        assert await typed.run("Weather in Oslo?") == Weather(city="Oslo", sky="rain")
        await agent.transport.aclose()  # type: ignore[attr-defined]
    body = server.requests[0].json()
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    assert "response_format" not in body
