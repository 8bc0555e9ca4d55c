"""padwan-ai's ``name_prefix=`` on ``McpStdio`` and ``McpStreamable``: every tool of that server
is offered as ``{name_prefix}__{tool}`` (colliding or not; a list read again after the server
says it changed too), the server is still called by its own names, and the session never adds
its collision prefix on top. Real servers (``mcp-server-time``, ``servers/changing.py``) and
stand-ins."""

from __future__ import annotations

from typing import Any

import pytest

from tether import AgentSession, McpStdio, McpStreamable, McpTool, Tool
from tether.testing import Call, Reply, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(60)


# -- checking the prefix, without a server ---------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "my tools", "a.b", "weather/v2", "é", "a" * 33, 7])
def test_a_name_prefix_of_other_characters_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="name_prefix"):
        McpStdio("uvx", ["weather-mcp"], name_prefix=bad)
    with pytest.raises(ValueError, match="name_prefix"):
        McpStreamable("https://tools.example.com/mcp", name_prefix=bad)


def test_a_name_prefix_is_kept_and_names_the_server() -> None:
    stdio = McpStdio("uvx", ["weather-mcp"], name_prefix="weather_v2-1")
    assert (stdio.name_prefix, stdio.prefix) == ("weather_v2-1", "weather_v2-1")
    assert McpStdio("uvx", ["weather-mcp"]).name_prefix is None
    http = McpStreamable("https://tools.example.com/mcp", name_prefix="tools")
    assert (http.name_prefix, http.prefix) == ("tools", "tools")
    named = McpStdio("uvx", ["weather-mcp"], name="forecast", name_prefix="w")
    assert (named.name_prefix, named.prefix) == ("w", "forecast")


# -- real servers ----------------------------------------------------------------------------------


async def test_every_tool_of_a_prefixed_stdio_server_carries_the_prefix(time_server: str) -> None:
    server = McpStdio(time_server, name_prefix="clock")
    async with server:
        assert [t.name for t in server.tools] == ["clock__get_current_time", "clock__convert_time"]
        assert [t.name for t in await server.list_tools()] == [t.name for t in server.tools]
        result = await server.tools[0].handler({"timezone": "UTC"})
        assert not result.is_error and '"timezone": "UTC"' in str(result.content)
        direct = await server.call("get_current_time", {"timezone": "UTC"})  # its own name
        assert not direct.is_error


async def test_a_session_offers_and_runs_a_prefixed_servers_tools_alone(time_server: str) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("clock__get_current_time", {"timezone": "Asia/Tokyo"})]),
            Reply("done"),
        ]
    )
    async with AgentSession(model, mcp_tools=[McpStdio(time_server, name_prefix="clock")]) as s:
        assert await s.send("What time is it in Tokyo?") == "done"
    assert model.requests[0].tool_names == ["clock__get_current_time", "clock__convert_time"]
    (result,) = s.messages[2].tool_results
    assert "Asia/Tokyo" in result.text and not result.is_error


async def test_a_prefixed_server_beside_the_same_server_unprefixed_collides_with_nothing(
    time_server: str,
) -> None:
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("get_current_time", {"timezone": "Europe/Paris"}),
                    Call("tz__get_current_time", {"timezone": "Asia/Tokyo"}),
                ]
            ),
            Reply("done"),
        ]
    )
    servers = [McpStdio(time_server), McpStdio(time_server, name_prefix="tz")]
    async with AgentSession(model, mcp_tools=servers) as session:
        assert await session.send("time?") == "done"
    assert model.requests[0].tool_names == [
        "get_current_time",
        "convert_time",
        "tz__get_current_time",
        "tz__convert_time",
    ]
    paris, tokyo = session.messages[2].tool_results
    assert "Europe/Paris" in paris.text and "Asia/Tokyo" in tokyo.text


async def test_an_http_servers_tools_carry_its_prefix_after_its_list_changed(
    changing_http: str,
) -> None:
    async with McpStreamable(changing_http, name_prefix="live") as server:
        tools = server.tools
        assert "live__slow" in [t.name for t in tools]
        assert server.prefix == "live"  # not the name the server gives itself
        assert (await server.call("add_tool", {"name": "fresh"})).content == "added"
        await until(lambda: "live__fresh" in [t.name for t in tools], "the list refreshed")
        (fresh,) = [t for t in tools if t.name == "live__fresh"]
        assert (await fresh.handler({})).content == "I am fresh"
        assert all(t.name.startswith("live__") for t in await server.list_tools())


# -- the session's collision prefix never goes on top (stand-in servers) --------------------------


def named(name: str, tag: str) -> Tool:
    async def handler(q: str = "") -> str:
        return f"{tag}:{q}"

    return Tool(name, handler)


class PrefixedServer:
    """Stands in for McpStdio/McpStreamable: lists tools already named as its ``name_prefix``
    makes them, as the real ones do."""

    def __init__(self, prefix: str, tools: list[Tool], name_prefix: str | None = None) -> None:
        self.prefix = prefix
        self.name_prefix = name_prefix
        self.listed = tools
        self.is_open = False

    async def __aenter__(self) -> PrefixedServer:
        self.is_open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.is_open = False

    async def ping(self) -> None:
        pass

    async def list_tools(self) -> list[Tool]:
        return self.listed


async def test_only_the_server_without_a_name_prefix_gets_the_collision_prefix() -> None:
    docs = PrefixedServer("docs", [named("docs__lookup", "D")], name_prefix="docs")
    web = PrefixedServer("web", [named("docs__lookup", "W"), named("fetch", "W")])
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("docs__lookup", {"q": "a"}), Call("web__docs__lookup", {})]),
            Reply("done"),
        ]
    )
    async with AgentSession(model, mcp_tools=[docs, web]) as session:
        assert await session.send("go") == "done"
    assert model.requests[0].tool_names == ["docs__lookup", "web__docs__lookup", "web__fetch"]
    assert [r.text for r in session.messages[2].tool_results] == ["D:a", "W:"]


async def test_a_prefixed_name_still_taken_is_refused_never_prefixed_twice() -> None:
    """As padwan-ai does: a name still taken with explicit prefixes raises on entering."""
    local = McpTool("docs__lookup", "", {"type": "object"}, lambda args: "local")
    docs = PrefixedServer("docs", [named("docs__lookup", "D"), named("docs__list", "D")], "docs")
    twin = PrefixedServer("docs", [named("docs__list", "T")], name_prefix="docs")
    model = ScriptedTransport([Reply("done")])
    with pytest.raises(ValueError, match="Duplicate tool name 'docs__lookup'"):
        async with AgentSession(model, mcp_tools=[local, docs, twin]):
            pytest.fail("entered with two tools named docs__lookup")
    assert model.call_count == 0
