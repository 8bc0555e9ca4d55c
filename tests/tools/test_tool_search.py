"""``ToolSearch``: past its threshold the model sees one search tool and what its searches found
(read back from the history, so a later run on the same session offers the same), below it every
tool; the search ranks rarer words higher and reads untrusted queries and results safely."""

from __future__ import annotations

import json

import pytest

from tether import Agent, MemoryContextStore, Tool, ToolSearch
from tether.testing import Call, Reply, ScriptedTransport


def _tool(name: str, description: str, parameter: str) -> Tool:
    schema = {"type": "object", "properties": {parameter: {"type": "string"}}}
    return Tool(name, lambda **kw: f"{name} ran", description=description, schema=schema)


def _many(n: int) -> list[Tool]:
    tools = [_tool(f"record_{i}", f"Store entry {i} in the ledger.", "entry") for i in range(n)]
    tools.append(_tool("get_weather", "Today's weather forecast for a city.", "city"))
    tools.append(_tool("get_time", "The current time in a city.", "city"))
    return tools


def _offered(request: object) -> list[str]:
    return sorted(spec.name for spec in request.tools)  # type: ignore[attr-defined]


async def test_below_the_threshold_every_tool_is_offered_and_no_search() -> None:
    search = ToolSearch(threshold=40)
    model = ScriptedTransport([Reply("done")])
    agent = Agent("s", model, tools=search.over(_many(10)), selector=search)
    await agent.run("hi")
    assert len(model.requests[0].tools) == 12 and "search_tools" not in _offered(model.requests[0])


async def test_past_it_the_model_searches_then_calls_what_it_found() -> None:
    search = ToolSearch(threshold=40, limit=3)
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "weather forecast"})]),
            Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})]),
            Reply("Sunny."),
        ]
    )
    context = MemoryContextStore()
    agent = Agent("s", model, tools=search.over(_many(100)), selector=search)
    assert await agent.run("Weather in Oslo?", context) == "Sunny."
    first, second, third = map(_offered, model.requests)
    assert first == ["search_tools"]
    assert "get_weather" in second and len(second) <= 4 and second[0] == "get_weather"
    assert "get_weather" in third
    results = [b for m in context.messages for b in m.tool_results]
    assert results[1].content == "get_weather ran" and not results[1].is_error
    found = json.loads(results[0].content)["found"]
    assert found[0]["name"] == "get_weather"

    # a later run on the same session offers what was found (read from the history)
    again = ScriptedTransport([Reply("Still sunny.")])
    later = Agent("s", again, tools=search.over(_many(100)), selector=search)
    await later.run("And now?", context)
    assert "get_weather" in _offered(again.requests[0])


def test_rarer_words_rank_higher_and_the_limit_holds() -> None:
    search = ToolSearch(threshold=1, limit=2)
    tools = _many(50)
    search._all = tools  # as select() leaves it
    assert [t.name for t in search.find("city weather")] == ["get_weather", "get_time"]
    assert next(t.name for t in search.find("What's the WEATHER?")) == "get_weather"
    assert search.find("quantum chromodynamics") == []
    assert len(search.find("store entry ledger")) == 2


async def test_an_unmatched_search_says_so_and_a_damaged_result_finds_nothing() -> None:
    search = ToolSearch(threshold=5)
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "x" * 100_000})]),
            Reply("no luck"),
        ]
    )
    context = MemoryContextStore()
    agent = Agent("s", model, tools=search.over(_many(10)), selector=search)
    await agent.run("?", context)
    result = next(b for m in context.messages for b in m.tool_results)
    assert json.loads(result.content)["found"] == []
    assert _offered(model.requests[1]) == ["search_tools"]
    from tether.tools.search import _names

    assert _names("not json") == [] and _names('{"found": 3}') == [] and _names(None) == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        ToolSearch(threshold=-1)
    with pytest.raises(ValueError, match="limit"):
        ToolSearch(limit=0)


async def test_deferred_tools_get_a_search_of_the_runs_own_and_the_others_stay() -> None:
    weather = _tool("get_weather", "Today's weather forecast for a city.", "city")
    weather.deferred = True
    plain = _tool("get_time", "The current time in a city.", "city")
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "weather"})]),
            Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})]),
            Reply("Sunny."),
        ]
    )
    assert await Agent("s", model, tools=[weather, plain]).run("Weather?") == "Sunny."
    first, second, _ = map(_offered, model.requests)
    assert first == ["get_time", "search_tools"]
    assert second == ["get_time", "get_weather", "search_tools"]


async def test_common_words_pick_nothing_and_a_tools_name_counts_twice() -> None:
    tools = [
        _tool("share_task", "Share a to-do task with another person by email address.", "id"),
        _tool("export_task", "Export a to-do task as a CSV file.", "id"),
        _tool("share_file", "Share a file in cloud storage with another person by email.", "id"),
    ]
    search = ToolSearch(threshold=0, limit=3)
    await search.select([], tools)
    assert search.find("share the file to my email")[0].name == "share_file"
    assert search.find("to my the") == []


async def test_a_query_in_other_words_still_finds_what_the_user_asked_for() -> None:
    tools = [
        _tool("create_task", "Create a to-do task.", "title"),
        _tool("delete_task", "Delete a to-do task for good.", "id"),
        *_many(50),
    ]
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("search_tools", {"query": "buy milk"})]), Reply("ok")]
    )
    context = MemoryContextStore()
    search = ToolSearch()
    agent = Agent("s", model, tools=search.over(tools), selector=search)
    await agent.run("Create a to-do task: buy milk.", context)
    found = json.loads(context.messages[2].tool_results[0].content)["found"]
    assert found[0]["name"] == "create_task"
    assert search.find("buy milk") == []  # the query alone matches nothing
