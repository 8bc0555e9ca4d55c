"""AgentSession with real MCP servers: tools listed and called through the loop, a server that
dies mid-call answered with an error result, a cancelled run that cancels the server's call."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import children, other_tasks

from tether import AgentSession, McpStdio, McpTool, Message
from tether.testing import Call, Reply, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(60)


def results(message: Message) -> list[Any]:
    return message.tool_results


async def test_a_session_calls_a_real_server_and_a_local_tool(time_server: str) -> None:
    before = set(children())
    connected: list[Any] = []
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("get_current_time", {"timezone": "Asia/Tokyo"}),
                    Call("double", {"n": 21}),
                ]
            ),
            Reply("It is late in Tokyo, and 42."),
        ]
    )
    double = McpTool("double", "Twice n.", {"type": "object"}, lambda args: args["n"] * 2)
    server = McpStdio(time_server, name="time")
    async with AgentSession(
        model, mcp_tools=[double, server], on_mcp_connect=connected.append
    ) as session:
        assert connected == [server]
        assert await session.send("Time in Tokyo, and double 21?") == "It is late in Tokyo, and 42."
    assert model.requests[0].tool_names == ["double", "get_current_time", "convert_time"]
    now, doubled = results(session.messages[2])
    assert '"timezone": "Asia/Tokyo"' in now.text and not now.is_error
    assert doubled.text == "42"
    assert set(children()) == before
    assert other_tasks() == set()


async def test_a_server_killed_during_a_session_call_becomes_an_error_result(
    changing: tuple[list[str], Path],
) -> None:
    command, markers = changing
    before = set(children())
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("slow", {"seconds": 30})]),
            Reply(tool_calls=[Call("slow", {"seconds": 0.1})]),
            Reply("Recovered."),
        ]
    )
    async with AgentSession(model, mcp_tools=[McpStdio(command[0], command[1:])]) as session:
        send = asyncio.ensure_future(session.send("go"))
        await until((markers / "started").exists, "the call's start on the server")
        (pid,) = set(children()) - before
        os.kill(pid, signal.SIGKILL)
        assert await asyncio.wait_for(send, 20) == "Recovered."
    (lost,) = results(session.messages[2])
    assert lost.is_error and "went away during the call" in lost.text
    (again,) = results(session.messages[4])  # the next call started the server again
    assert again.text == "slept 0.1" and not again.is_error
    assert set(children()) == before
    assert other_tasks() == set()


async def test_cancelling_a_session_send_cancels_the_servers_call(
    changing: tuple[list[str], Path],
) -> None:
    command, markers = changing
    model = ScriptedTransport([Reply(tool_calls=[Call("slow", {"seconds": 30})]), Reply("never")])
    async with AgentSession(model, mcp_tools=[McpStdio(command[0], command[1:])]) as session:
        send = asyncio.ensure_future(session.send("go"))
        await until((markers / "started").exists, "the call's start on the server")
        send.cancel()
        with pytest.raises(asyncio.CancelledError):
            await send
        await until((markers / "cancelled").exists, "the server's note of the cancel")
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "user"]  # the call has its (interrupted) result
    (interrupted,) = results(session.messages[2])
    assert interrupted.is_error


async def test_a_round_sees_tools_the_server_added_in_the_round_before(
    changing: tuple[list[str], Path],
) -> None:
    command, _ = changing
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add_tool", {"name": "fresh"})]),
            Reply(tool_calls=[Call("fresh", {})]),
            Reply("done"),
        ]
    )
    async with AgentSession(model, mcp_tools=[McpStdio(command[0], command[1:])]) as session:
        await session.send("go")
    assert "fresh" not in model.requests[0].tool_names
    assert "fresh" in model.requests[1].tool_names
    assert results(session.messages[4])[0].text == "I am fresh"


async def test_cancelling_one_mcp_call_tells_the_server_and_the_turn_goes_on(
    changing: tuple[list[str], Path],
) -> None:
    from collections.abc import Iterator
    from contextlib import contextmanager

    from tether import ToolCallContext

    command, markers = changing
    ids: list[str] = []
    running = asyncio.Event()

    @contextmanager
    def note(tc: ToolCallContext) -> Iterator[None]:
        ids.append(tc.id)
        running.set()
        yield

    model = ScriptedTransport([Reply(tool_calls=[Call("slow", {"seconds": 30})]), Reply("fine")])
    async with AgentSession(
        model, mcp_tools=[McpStdio(command[0], command[1:])], on_tool=note
    ) as session:
        send = asyncio.ensure_future(session.send("go"))
        await asyncio.wait_for(running.wait(), 10)
        await until((markers / "started").exists, "the call's start on the server")
        assert session.cancel_tool_call(ids[0])
        assert await asyncio.wait_for(send, 10) == "fine"
        await until((markers / "cancelled").exists, "the server's note of the cancel")
    (result,) = results(session.messages[2])
    assert (result.text, result.is_error) == ("Tool call cancelled.", True)
