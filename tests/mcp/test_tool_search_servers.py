"""``tool_search=`` on MCP servers and on ``AgentSession``: past its threshold a real server's
tools are offered behind one search tool, the tools a search found are offered from the next
request on and called on the real server; ``False`` offers every schema."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether import Agent, AgentSession, MemoryContextStore
from tether.mcp import McpStdio
from tether.testing import Call, Reply, ScriptedTransport

MANY = [str(Path(__file__).parent / "servers" / "many.py")]


def _offered(request: object) -> list[str]:
    return sorted(spec.name for spec in request.tools)  # type: ignore[attr-defined]


def _searching(found: str) -> ScriptedTransport:
    return ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "weather forecast"})]),
            Reply(tool_calls=[Call(found, {"id": "Oslo"})]),
            Reply("Sunny."),
        ]
    )


async def test_past_the_default_threshold_a_server_is_searched_then_called() -> None:
    model = _searching("get_weather_forecast")
    context = MemoryContextStore()
    async with McpStdio(sys.executable, [*MANY, "60"]) as server:
        agent = Agent("s", model, tools=[server])
        assert await agent.run("Weather in Oslo?", context) == "Sunny."
    first, second, _ = map(_offered, model.requests)
    assert first == ["search_tools"]
    assert "get_weather_forecast" in second and len(second) <= 6
    results = [b for m in context.messages for b in m.tool_results]
    assert results[1].content == "get_weather_forecast ran on Oslo" and not results[1].is_error


async def test_below_it_or_with_false_every_schema_is_offered(everything: list[str]) -> None:
    for server in (
        McpStdio(sys.executable, [*MANY, "60"], tool_search=False),
        McpStdio(everything[0], everything[1:]),  # a few tools: under 40
    ):
        model = ScriptedTransport([Reply("done")])
        async with server:
            await Agent("s", model, tools=[server]).run("hi")
        offered = _offered(model.requests[0])
        assert "search_tools" not in offered and len(offered) > 5


async def test_a_threshold_of_its_own_on_a_real_npm_server(everything: list[str]) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "echo message back"})]),
            Reply(tool_calls=[Call("echo", {"message": "hello"})]),
            Reply("ok"),
        ]
    )
    context = MemoryContextStore()
    async with McpStdio(everything[0], everything[1:], tool_search=3) as server:
        await Agent("s", model, tools=[server]).run("echo hello", context)
    assert _offered(model.requests[0]) == ["search_tools"]
    assert "echo" in _offered(model.requests[1])
    results = [b for m in context.messages for b in m.tool_results]
    assert "hello" in str(results[1].content) and not results[1].is_error


async def test_agent_session_searches_past_its_own_threshold(everything: list[str]) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("search_tools", {"query": "echo message back"})]),
            Reply(tool_calls=[Call("echo", {"message": "hi"})]),
            Reply("ok"),
        ]
    )
    server = McpStdio(everything[0], everything[1:])
    async with AgentSession(model, mcp_tools=[server], tool_search=2) as session:
        assert await session.send("echo hi") == "ok"
    assert _offered(model.requests[0]) == ["search_tools"]
    assert "echo" in _offered(model.requests[1])


async def test_agent_session_false_offers_what_a_server_defers() -> None:
    model = ScriptedTransport([Reply("done")])
    server = McpStdio(sys.executable, [*MANY, "60"])
    async with AgentSession(model, mcp_tools=[server], tool_search=False) as session:
        await session.send("hi")
    assert len(model.requests[0].tools) == 61


@pytest.mark.parametrize("bad", [True, -1, "40", 2.5])
def test_a_threshold_that_is_not_a_count_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="tool_search must be a number of tools"):
        McpStdio("server", tool_search=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_search must be a number of tools"):
        AgentSession(ScriptedTransport([]), tool_search=bad)  # type: ignore[arg-type]
