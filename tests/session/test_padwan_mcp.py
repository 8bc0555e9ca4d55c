"""padwan-ai's MCP side of ``AgentSession`` on stand-in servers: ``McpTool`` without a handler and
``to_tool_def``, the ``mcp_tools`` list read again every round (tools and servers appended
mid-session), and names made unique when sources collide. Real servers: ``tests/mcp/``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether import AgentSession, McpTool, Message, Tool, ToolResultBlock
from tether.testing import Call, Reply, ScriptedTransport

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def results_of(message: Message) -> list[ToolResultBlock]:
    return message.tool_results


def named(name: str, tag: str) -> Tool:
    async def handler(q: str = "") -> str:
        return f"{tag}:{q}"

    return Tool(name, handler)


class FakeServer:
    """Stands in for McpStdio/McpStreamable: records enter, ping and exit; ``is_open`` as
    padwan's transports have it."""

    def __init__(self, prefix: str, log: list[str], tools: list[Tool]) -> None:
        self.prefix = prefix
        self.log = log
        self.listed = tools
        self.is_open = False

    async def __aenter__(self) -> FakeServer:
        self.log.append(f"enter {self.prefix}")
        self.is_open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.log.append(f"exit {self.prefix}")
        self.is_open = False

    async def ping(self) -> None:
        self.log.append(f"ping {self.prefix}")

    async def list_tools(self) -> list[Tool]:
        if not self.is_open:
            raise AssertionError(f"{self.prefix} listed before it was entered")
        return self.listed


# -- McpTool ---------------------------------------------------------------------------------------


def test_to_tool_def_is_padwans_tool_definition() -> None:
    tool = McpTool("get_weather", "Current weather.", SCHEMA, lambda args: "sunny")
    assert tool.to_tool_def() == {
        "name": "get_weather",
        "description": "Current weather.",
        "parameters": SCHEMA,
    }


async def test_an_mcp_tool_without_a_handler_gives_back_its_arguments() -> None:
    extract = McpTool("extract", "Record what the user asked for.", SCHEMA)
    model = ScriptedTransport([Reply(tool_calls=[Call("extract", {"q": "rain"})]), Reply("ok")])
    async with AgentSession(model, mcp_tools=[extract]) as session:
        assert await session.send("go") == "ok"
    (result,) = results_of(session.messages[2])
    assert json.loads(result.text) == {"q": "rain"} and not result.is_error
    assert extract.handler({"a": 1}) == {"a": 1}


# -- the list read again every round ---------------------------------------------------------------


async def test_a_tool_appended_to_the_list_is_offered_from_the_next_round() -> None:
    tools: list[Any] = [McpTool("first", "", SCHEMA, lambda args: "one")]

    def add(args: dict[str, Any]) -> str:
        tools.append(McpTool("added", "", SCHEMA, lambda args: "fresh"))
        tools.append(named("plain", "P"))
        return "added"

    tools.append(McpTool("add", "", SCHEMA, add))
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {})]),
            Reply(tool_calls=[Call("added", {}), Call("plain", {"q": "x"})]),
            Reply("done"),
            Reply("again"),
        ]
    )
    async with AgentSession(model, mcp_tools=tools) as session:
        assert await session.send("go") == "done"
        tools.append(McpTool("later", "", SCHEMA, lambda args: "late"))
        assert await session.send("more") == "again"
    assert model.requests[0].tool_names == ["first", "add"]
    assert model.requests[1].tool_names == ["first", "add", "added", "plain"]
    assert model.requests[3].tool_names == ["first", "add", "added", "plain", "later"]
    assert [r.text for r in results_of(session.messages[4])] == ["fresh", "P:x"]


async def test_a_server_appended_mid_session_is_entered_listed_and_closed_with_it() -> None:
    log: list[str] = []
    first = FakeServer("first", log, [named("one", "1")])
    late = FakeServer("late", log, [named("two", "2")])
    tools: list[Any] = [first]
    connected: list[Any] = []
    model = ScriptedTransport(
        [Reply("before"), Reply(tool_calls=[Call("two", {"q": "x"})]), Reply("after")]
    )
    async with AgentSession(model, mcp_tools=tools, on_mcp_connect=connected.append) as session:
        assert await session.send("a") == "before"
        tools.append(late)
        assert await session.send("b") == "after"
        assert log == ["enter first", "ping first", "enter late", "ping late"]
    assert log[-2:] == ["exit late", "exit first"]  # in reverse order, with the session
    assert connected == [first, late]
    assert model.requests[1].tool_names == ["one", "two"]
    assert [r.text for r in results_of(session.messages[-2])] == ["2:x"]


async def test_a_server_already_open_is_pinged_but_left_to_its_owner() -> None:
    log: list[str] = []
    server = FakeServer("mine", log, [named("one", "1")])
    async with server:
        async with AgentSession(ScriptedTransport([Reply("ok")]), mcp_tools=[server]) as s:
            assert await s.send("go") == "ok"
        assert server.is_open
    assert log == ["enter mine", "ping mine", "exit mine"]


async def test_an_item_appended_that_is_no_tool_is_a_clear_error() -> None:
    tools: list[Any] = []
    session = AgentSession(ScriptedTransport([Reply("never")]), mcp_tools=tools)
    tools.append("get_weather")
    with pytest.raises(TypeError, match="mcp_tools takes"):
        await session.send("go")


async def test_a_server_appended_to_a_session_never_entered_is_refused() -> None:
    tools: list[Any] = []
    session = AgentSession(ScriptedTransport([Reply("never")]), mcp_tools=tools)
    tools.append(FakeServer("late", [], []))
    with pytest.raises(RuntimeError, match="async with"):
        await session.send("go")


# -- colliding names -------------------------------------------------------------------------------


async def test_every_colliding_server_prefixes_all_its_tools_and_local_tools_keep_theirs() -> None:
    log: list[str] = []
    alpha = FakeServer("alpha", log, [named("search", "A"), named("fetch", "A")])
    beta = FakeServer("beta", log, [named("search", "B")])
    gamma = FakeServer("gamma", log, [named("clock", "C")])
    local = McpTool("fetch", "", SCHEMA, lambda args: "local")
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("alpha__search", {"q": "x"}), Call("beta__search", {"q": "y"})]),
            Reply(tool_calls=[Call("fetch", {})]),
            Reply("done"),
        ]
    )
    async with AgentSession(model, mcp_tools=[alpha, beta, local, gamma]) as session:
        assert await session.send("go") == "done"
    assert model.requests[0].tool_names == [
        "fetch",
        "alpha__search",
        "alpha__fetch",
        "beta__search",
        "clock",
    ]
    assert [r.text for r in results_of(session.messages[2])] == ["A:x", "B:y"]
    assert [r.text for r in results_of(session.messages[4])] == ["local"]


async def test_sources_with_the_same_prefix_get_numbered_ones_in_order() -> None:
    log: list[str] = []
    servers = [FakeServer("npx", log, [named("search", str(i))]) for i in range(3)]
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("npx-3__search", {"q": "x"})]), Reply("done")]
    )
    async with AgentSession(model, mcp_tools=servers) as session:
        assert await session.send("go") == "done"
    assert model.requests[0].tool_names == ["npx__search", "npx-2__search", "npx-3__search"]
    assert [r.text for r in results_of(session.messages[2])] == ["2:x"]


async def test_prefixes_are_made_of_the_characters_providers_take() -> None:
    log: list[str] = []
    a = FakeServer("mcp.data.gouv.fr", log, [named("search", "A")])
    b = FakeServer("@scope/pkg", log, [named("search", "B")])
    model = ScriptedTransport([Reply("ok")])
    async with AgentSession(model, mcp_tools=[a, b]) as session:
        await session.send("go")
    assert model.requests[0].tool_names == ["mcp_data_gouv_fr__search", "scope_pkg__search"]


async def test_a_collision_that_appears_mid_session_prefixes_for_the_rest_of_it() -> None:
    log: list[str] = []
    alpha = FakeServer("alpha", log, [named("search", "A")])
    beta = FakeServer("beta", log, [named("other", "B")])
    model = ScriptedTransport([Reply("ok")] * 3)
    async with AgentSession(model, mcp_tools=[alpha, beta]) as session:
        await session.send("one")
        beta.listed = [named("other", "B"), named("search", "B")]
        await session.send("two")
        beta.listed = [named("other", "B")]
        await session.send("three")
    assert model.requests[0].tool_names == ["search", "other"]
    assert model.requests[1].tool_names == ["alpha__search", "beta__other", "beta__search"]
    assert model.requests[2].tool_names == ["alpha__search", "beta__other"]  # names stay put


async def test_a_prefixed_name_that_is_a_local_tools_name_is_refused_on_entering() -> None:
    """padwan-ai raises on a name still taken after prefixing; so does the session, naming it
    (and having entered nothing it leaves open)."""
    log: list[str] = []
    mine = [McpTool("search", "", SCHEMA, lambda a: "s"), McpTool("alpha__x", "", SCHEMA, str)]
    alpha = FakeServer("alpha", log, [named("search", "A"), named("x", "A")])
    model = ScriptedTransport([Reply("ok")])
    with pytest.raises(ValueError, match="Duplicate tool name 'alpha__x'"):
        async with AgentSession(model, mcp_tools=[*mine, alpha]):
            pytest.fail("entered with two tools named alpha__x")
    assert model.call_count == 0
    assert log[-1] == "exit alpha"
