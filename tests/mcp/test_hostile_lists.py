"""Hostile or broken MCP servers' tool lists (a real server process, ``servers/hostile.py``):
whatever a server lists, and however long it takes, a turn goes on, the model sees only names a
provider takes, and the server says what is wrong (``degraded``)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from mcp_helpers import other_tasks, texts

from tether import Agent, AgentSession, McpStdio, McpTool, Tool
from tether.testing import Call, Reply, Request, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(60)

LONG = "t" * 127  # what servers/hostile.py names its long tools
MID = "m" * 60
PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for function names


def local(name: str) -> McpTool:
    return McpTool(name, "A local tool.", {"type": "object"}, lambda args: f"local {name}")


def plain(name: str) -> Tool:
    """A local tool for an ``Agent``."""

    async def handler() -> str:
        return f"local {name}"

    return Tool(name, handler)


async def test_a_long_name_listed_twice_never_breaks_a_turn(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile

    def call_the_long_one(request: Request) -> Reply:
        (long,) = [n for n in request.tool_names if n.startswith("ttt")]  # listed once
        return Reply(tool_calls=[Call(long, {"n": 1})])

    model = ScriptedTransport([call_the_long_one, Reply("done")])
    server = McpStdio(command[0], [*command[1:], "dup-long"], name="hostile")
    async with AgentSession(model, mcp_tools=[local("double"), server]) as session:
        assert await session.send("go") == "done"
        assert server.degraded is not None and "listed twice" in server.degraded
    offered = model.requests[0].tool_names
    assert all(PROVIDER_NAME.fullmatch(n) for n in offered), offered
    assert len(offered) == len(set(offered))
    assert texts(session.messages) == ['{"n": 1}']  # the server got the call by its own name


async def test_a_server_with_a_tool_named_like_a_local_one_prefixes_names_that_fit(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    model = ScriptedTransport([Reply("first"), Reply("second")])
    server = McpStdio(command[0], [*command[1:], "local-name"], name="hostile")
    mine = [local("double"), local(LONG), local(MID)]
    async with AgentSession(model, mcp_tools=[*mine, server]) as session:
        assert await session.send("go") == "first"
        assert await session.send("again") == "second"
    offered = model.requests[0].tool_names
    assert offered[:3] == ["double", LONG, MID]  # the local tools keep their names
    theirs = offered[3:]
    assert all(PROVIDER_NAME.fullmatch(n) for n in theirs), theirs
    assert len(theirs) == len(set(theirs)) == 10
    assert "hostile__double" in theirs and "hostile__echo" in theirs  # all its tools prefixed
    (long,) = [n for n in theirs if "ttt" in n]
    (mid,) = [n for n in theirs if "mmm" in n]
    assert long.startswith("hostile__ttt") and mid.startswith("hostile__mmm")  # cut to fit
    assert model.requests[1].tool_names == offered  # the same names every round


async def test_a_server_that_never_lists_delays_a_turn_once_not_every_round(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    model = ScriptedTransport(
        [*(Reply(tool_calls=[Call("double", {})]) for _ in range(3)), Reply("done")]
    )
    server = McpStdio(
        command[0], [*command[1:], "hang-list"], name="hostile", timeout=20, list_timeout=0.5
    )
    started = time.monotonic()
    async with AgentSession(model, mcp_tools=[local("double"), server]) as session:
        assert await session.send("go") == "done"
        took = time.monotonic() - started
        assert took < 15.0  # not 4 x the 20 s timeout
        assert server.degraded is not None and "tools/list" in server.degraded
        assert [r.tool_names for r in model.requests] == [["double"]] * 4
    assert other_tasks() == set()


async def test_an_agent_with_a_server_that_never_lists_still_runs(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    model = ScriptedTransport([Reply("fine")])
    server = McpStdio(command[0], [*command[1:], "hang-list"], timeout=20, list_timeout=0.5)
    async with server:
        assert await Agent("s", model, tools=[server]).run("go") == "fine"
    assert model.requests[0].tool_names == []
    assert other_tasks() == set()


async def test_one_invalid_input_schema_leaves_the_other_tools_offered(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"a": 1})]), Reply("done")])
    server = McpStdio(command[0], [*command[1:], "bad-schema"], name="hostile")
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
    offered = model.requests[0].tool_names
    assert "echo" in offered and "argv" in offered
    assert not {"broken", "stringly", "badly_typed"} & set(offered)
    assert server.degraded is not None
    assert all(name in server.degraded for name in ("broken", "stringly", "badly_typed"))
    assert texts(session.messages) == ['{"a": 1}']


def listings(markers: Path) -> int:
    """How many ``tools/list`` requests the hostile server has received."""
    lists = markers / "lists"
    return len(lists.read_text().splitlines()) if lists.exists() else 0


async def test_a_listing_that_timed_out_never_slows_a_model_call_again(
    hostile: tuple[list[str], Path],
) -> None:
    """Issue 35: four model calls using only a local tool took four listing timeouts. A server
    whose listing timed out is degraded: later rounds offer its last known tools (none here)
    at once, the listing is retried in the background, and its tools come back when it
    answers."""
    command, markers = hostile
    (markers / "hold").write_text("tools/list is not answered while this file exists")
    timeout = 4.0  # what the first listing costs; each later round must cost far less
    loop = asyncio.get_running_loop()
    asked: list[float] = []

    def double_again(request: Request) -> Reply:
        asked.append(loop.time())
        return Reply(tool_calls=[Call("double", {})])

    model = ScriptedTransport([double_again, double_again, double_again, Reply("done")])
    server = McpStdio(
        command[0], [*command[1:], "list-held"], name="hostile", timeout=timeout, list_timeout=60
    )
    agent = Agent("s", model, tools=[plain("double"), server])
    async with server:  # its first listing times out: one timeout, once
        assert server.degraded is not None and "timed out" in server.degraded
        assert listings(markers) == 1
        started = loop.time()
        assert await agent.run("go") == "done"
        took = loop.time() - started
        assert took < timeout, f"4 model calls took {took:.1f} s"  # not 4 x 4 s
        assert asked[-1] - asked[0] < timeout / 2  # rounds 2..4 did not wait
        assert [r.tool_names for r in model.requests] == [["double"]] * 4
        await until(lambda: listings(markers) == 2, "the listing retried in the background")
        assert listings(markers) == 2  # one retry at a time, not one per round

        (markers / "hold").unlink()  # the server recovers
        await server.list_tools()  # a caller while degraded: answered at once
        await until(lambda: server.degraded is None, "the server's tools read again")
        again = ScriptedTransport([Reply(tool_calls=[Call("echo", {"a": 1})]), Reply("back")])
        assert await Agent("s", again, tools=[plain("double"), server]).run("go") == "back"
        assert again.requests[0].tool_names[:2] == ["double", "echo"]
    assert other_tasks() == set()
