"""``tether mcp-serve --agent FILE:agent`` over stdio, driven by the official SDK's client as an
MCP host (Claude Desktop, an editor) starts it: the agent's tools with their schemas and hints,
calls through the agent's own dispatch (a failure is an ``isError`` result and the server goes
on), the agent itself as ``ask`` (a whole turn on a scripted model, progress per tool call), a
call that needs approval refused, and a cancelled ``ask`` cancelling the run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp_serve_helpers import AGENT_SPEC, AGENTS, server_env, tether_command, text_of, wait_for
from serve_agents import TIME_SERVER

from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from parts import absent


def params(markers: Path, spec: str = AGENT_SPEC) -> StdioServerParameters:
    command = tether_command("--agent", spec)
    return StdioServerParameters(
        command=command[0], args=command[1:], env=server_env(markers), cwd=markers
    )


@asynccontextmanager
async def connected(markers: Path, spec: str = AGENT_SPEC) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(params(markers, spec)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_it_lists_the_agents_tools_with_their_schemas_and_hints(markers: Path) -> None:
    async with connected(markers) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) == {"ask", "add", "broken", "wait_long", "delete_file", "count_to"}
    add = listed["add"]
    assert add.description == "Add two whole numbers."
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert sorted(add.input_schema["required"]) == ["a", "b"]
    assert add.annotations is not None and add.annotations.idempotent_hint is True
    assert add.annotations.destructive_hint is None
    delete = listed["delete_file"]  # in the agent's approval: a person must say yes
    assert delete.annotations is not None and delete.annotations.destructive_hint is True
    assert listed["broken"].annotations is None
    ask = listed["ask"]
    assert ask.input_schema["required"] == ["message"]
    assert ask.input_schema["properties"]["message"]["type"] == "string"
    assert "'adder'" in (ask.description or "") and "You add numbers." in (ask.description or "")
    assert "never shown" not in (ask.description or "")  # only the prompt's first line


async def test_a_call_runs_the_tool_through_the_agents_dispatch(markers: Path) -> None:
    async with connected(markers) as session:
        result = await session.call_tool("add", {"a": 2, "b": 3})
        assert (text_of(result), result.is_error) == ("5", False)
        wrong = await session.call_tool("add", {"a": "two", "b": 3})  # validated as the loop does
        assert wrong.is_error is True
        assert "Invalid arguments for tool 'add': 'a'" in text_of(wrong)
        again = await session.call_tool("add", {"a": 1, "b": 1})
    assert (text_of(again), again.is_error) == ("2", False)


async def test_a_raising_tool_is_an_error_result_and_the_server_goes_on(markers: Path) -> None:
    async with connected(markers) as session:
        result = await session.call_tool("broken", {"reason": "the test"})
        assert result.is_error is True
        assert "broken on purpose: the test" in text_of(result)
        after = await session.call_tool("add", {"a": 20, "b": 22})
    assert text_of(after) == "42"


async def test_an_unknown_tool_is_a_protocol_error(markers: Path) -> None:
    async with connected(markers) as session:
        with pytest.raises(MCPError, match="Unknown tool: 'nope'"):
            await session.call_tool("nope", {})
        assert text_of(await session.call_tool("add", {"a": 1, "b": 2})) == "3"


async def test_ask_runs_a_whole_turn_and_reports_each_tool_call(markers: Path) -> None:
    reports: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, message))

    async with connected(markers) as session:
        result = await session.call_tool(
            "ask", {"message": "add 19 23"}, progress_callback=progress
        )
        plain = await session.call_tool("ask", {"message": "hello there"})
    assert (text_of(result), result.is_error) == ("The tool said: 42", False)
    assert reports == [(1, "calling add")]
    assert text_of(plain) == "You said: hello there"


async def test_ask_without_a_message_says_what_it_takes(markers: Path) -> None:
    async with connected(markers) as session:
        result = await session.call_tool("ask", {"message": "   "})
    assert result.is_error is True
    assert "'message'" in text_of(result)


async def test_a_call_that_needs_approval_is_refused_and_never_runs(markers: Path) -> None:
    async with connected(markers) as session:
        direct = await session.call_tool("delete_file", {"path": "notes.txt"})
        asked = await session.call_tool("ask", {"message": "delete"})
    assert direct.is_error is True and "approval" in text_of(direct)
    assert asked.is_error is True and "delete_file" in text_of(asked)
    assert "approval" in text_of(asked)
    assert not (markers / "deleted").exists()


async def test_cancelling_an_ask_cancels_the_run(markers: Path) -> None:
    async with connected(markers) as session:
        call = asyncio.create_task(session.call_tool("ask", {"message": "wait"}))
        assert await wait_for(markers / "started"), "the run never called its tool"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await wait_for(markers / "cancelled"), "the run went on after the cancellation"
        # the server is still there for the next request
        assert text_of(await session.call_tool("add", {"a": 3, "b": 4})) == "7"
    assert not (markers / "finished").exists()


async def test_the_stateless_era_lists_calls_and_asks(markers: Path) -> None:
    async with Client(params(markers), mode="2026-07-28") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        added = await client.call_tool("add", {"a": 5, "b": 6})
        asked = await client.call_tool("ask", {"message": "add 1 2"})
    assert names == {"ask", "add", "broken", "wait_long", "delete_file", "count_to"}
    assert text_of(added) == "11"
    assert text_of(asked) == "The tool said: 3"


async def test_the_agents_own_mcp_server_is_started_and_its_tools_served(markers: Path) -> None:
    if not TIME_SERVER.exists():
        absent("mcp-server-time")
    async with connected(markers, f"{AGENTS}:proxy") as session:
        names = {t.name for t in (await session.list_tools()).tools}
        now = await session.call_tool("get_current_time", {"timezone": "UTC"})
    assert {"ask", "get_current_time", "convert_time"} <= names
    assert now.is_error is False
    assert "UTC" in text_of(now)
