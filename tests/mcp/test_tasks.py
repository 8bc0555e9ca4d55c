"""MCP Tasks in tether's client, against real servers: npm server-everything's
``simulate-research-query`` (the 2025-11-25 form: callable only as a task) and
``servers/tasking.py`` (the SDK's own server with the 2026-07-28 extension
``io.modelcontextprotocol/tasks``, over stdio and Streamable HTTP). A task's statuses are the
call's ``ToolProgress`` events and its result the call's result; a task that never ends, a server
that forgets its task, a storm of statuses, a result far too big, a failed task and one asking
for input it cannot get are each contained; a call whose record holds a task follows that task
and never calls the tool again."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import http_server

from tether import Agent, ToolProgress, ToolResult
from tether.mcp import McpError, McpStdio, McpStreamable
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.remote import recording
from waiting import until

pytestmark = pytest.mark.timeout(90)

TASKING = Path(__file__).parent / "servers" / "tasking.py"
RESEARCH = "simulate-research-query"


def _lines(markers: Path, name: str) -> list[str]:
    path = markers / name
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def tasking(tmp_path: Path) -> tuple[list[str], Path]:
    """The tasking server's command line over stdio, and its marker directory."""
    return [sys.executable, str(TASKING), "stdio", str(tmp_path)], tmp_path


@pytest.fixture
def tasking_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The tasking server over Streamable HTTP on 127.0.0.1: its URL and marker directory."""
    with http_server(TASKING, str(tmp_path)) as url:
        yield url, tmp_path


async def _run(server: Any, call: Call) -> list[Any]:
    """The events of one agent run that makes ``call`` and then answers."""
    model = ScriptedTransport([Reply(tool_calls=[call]), Reply("done")])
    agent = Agent("s", model, tools=[server], execution="sequential")
    return [e async for e in agent.run_stream("go")]


async def test_a_task_required_tool_of_server_everything_is_offered_and_run(
    everything: list[str],
) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        assert RESEARCH in {t.name for t in await server.list_tools()}
        events = await _run(server, Call(RESEARCH, {"topic": "owls"}))
    progress = [e for e in events if isinstance(e, ToolProgress)]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error, result.content
    assert "# Research Report: owls" in str(result.content)
    messages = [p.message or "" for p in progress]
    assert any("Gathering sources" in m for m in messages), messages
    assert any("Generating report" in m for m in messages), messages
    assert [p.progress for p in progress] == sorted(p.progress for p in progress)
    assert events.index(progress[-1]) < events.index(result)


async def test_a_task_of_the_extension_is_followed_to_its_result(
    tasking: tuple[list[str], Path],
) -> None:
    command, markers = tasking
    async with McpStdio(command[0], command[1:]) as server:
        events = await _run(server, Call("research", {"topic": "owls", "seconds": 0.6}))
        assert (await server.call("plain", {})).content == "plain answer"
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.content, result.is_error) == ("report on owls", False)
    messages = [e.message for e in events if isinstance(e, ToolProgress)]
    assert messages[0] == "working: started"
    assert "working: stage 2 of 3" in messages and "completed" in messages
    assert len(_lines(markers, "created")) == 1
    assert _lines(markers, "cancelled") == []  # a task that ended is not cancelled


async def test_a_task_over_streamable_http(tasking_http: tuple[str, Path]) -> None:
    url, markers = tasking_http
    async with McpStreamable(url) as server:
        block = await server.call("research", {"topic": "bats", "seconds": 0.3})
    assert (block.content, block.is_error) == ("report on bats", False)
    assert len(_lines(markers, "gets")) >= 2


async def test_a_task_that_never_ends_is_bounded_and_cancelled_on_the_server(
    tasking: tuple[list[str], Path],
) -> None:
    command, markers = tasking
    async with McpStdio(command[0], command[1:], timeout=1.5) as server:
        started = time.monotonic()
        with pytest.raises(McpError, match=r"timed out after 1\.5 s"):
            await server.call("forever", {})
        assert time.monotonic() - started < 8.0
        (created,) = _lines(markers, "created")
        assert _lines(markers, "cancelled") == [created.split()[0]]
        assert (await server.call("plain", {})).content == "plain answer"


async def test_cancelling_the_call_cancels_the_task(tasking: tuple[list[str], Path]) -> None:
    command, markers = tasking
    async with McpStdio(command[0], command[1:]) as server:
        call = asyncio.ensure_future(server.call("forever", {}))
        await until(lambda: len(_lines(markers, "gets")) >= 2, "the task being polled")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        (created,) = _lines(markers, "created")
        assert _lines(markers, "cancelled") == [created.split()[0]]


async def test_a_server_that_forgets_its_task(tasking: tuple[list[str], Path]) -> None:
    command, _ = tasking
    async with McpStdio(command[0], command[1:]) as server:
        with pytest.raises(McpError, match="Task not found"):
            await server.call("forgetful", {})
        assert (await server.call("plain", {})).content == "plain answer"


async def test_a_storm_of_statuses_is_polled_at_a_bounded_rate(
    tasking: tuple[list[str], Path],
) -> None:
    from tether.mcp.tasks import POLL_MIN

    command, markers = tasking
    async with McpStdio(command[0], command[1:]) as server:
        started = time.monotonic()
        events = await _run(server, Call("storm", {}))
        elapsed = time.monotonic() - started
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.content == "calm again"
    polls = len(_lines(markers, "gets"))
    assert polls <= elapsed / POLL_MIN + 2, (polls, elapsed)  # no poll sooner than POLL_MIN
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert len(progress) <= polls + 1
    assert all(len(p.message or "") <= 600 for p in progress)  # 64 KiB messages cut


async def test_a_result_far_too_big_is_contained(tasking: tuple[list[str], Path]) -> None:
    command, markers = tasking
    async with McpStdio(command[0], command[1:], timeout=30) as server:
        with pytest.raises(McpError) as caught:
            await server.call("huge", {})
        assert "longer than the 16777216 bytes" in str(caught.value), caught.value
        assert (await server.call("plain", {})).content == "plain answer"
    (created,) = _lines(markers, "created")
    assert _lines(markers, "cancelled") == [created.split()[0]]


async def test_a_failed_task_is_an_error_result(tasking: tuple[list[str], Path]) -> None:
    command, _ = tasking
    async with McpStdio(command[0], command[1:]) as server:
        block = await server.call("broken", {})
    assert block.is_error
    assert "failed: API rate limit exceeded" in str(block.content)


async def test_a_task_asking_for_input_it_cannot_get_ends_with_an_error(
    tasking: tuple[list[str], Path],
) -> None:
    command, markers = tasking
    async with McpStdio(command[0], command[1:]) as server:
        block = await server.call("ask", {})
    assert block.is_error and "input" in str(block.content) and "on_elicit" in str(block.content), (
        block.content
    )
    (created,) = _lines(markers, "created")
    assert _lines(markers, "cancelled") == [created.split()[0]]


class _Record:
    """A call's record as a durable run keeps it (here, in memory)."""

    def __init__(self, held: Mapping[str, Any] | None = None) -> None:
        self.held = held
        self.written: list[Mapping[str, Any]] = []

    def recorded(self) -> Mapping[str, Any] | None:
        return self.held

    def record(self, handle: Mapping[str, Any]) -> None:
        self.written.append(handle)
        self.held = handle


async def test_a_call_whose_record_holds_a_task_follows_it_and_calls_nothing(
    tasking: tuple[list[str], Path],
) -> None:
    command, markers = tasking
    first = _Record()
    async with McpStdio(command[0], command[1:]) as server:
        call = asyncio.ensure_future(_recorded(server, first))
        await until(lambda: bool(first.written), "the task's handle written down")
        call.cancel()  # the first attempt dies while it waits (its task is cancelled, too)
        await asyncio.gather(call, return_exceptions=True)
    (handle,) = first.written
    assert handle["tool"] == "research" and handle["form"] == "extension"
    async with McpStdio(command[0], command[1:]) as server:  # the server's memory is gone
        with pytest.raises(McpError, match="Task not found"):
            await _recorded(server, _Record(handle))
    assert len(_lines(markers, "created")) == 1  # the second attempt started nothing

    async with McpStdio(command[0], command[1:]) as server:
        again = _Record()
        waiting = asyncio.ensure_future(_recorded(server, again, seconds=1.0))
        await until(lambda: bool(again.written), "the handle written down")
        resumed = await _recorded(server, _Record(again.written[0]))
        assert (await waiting).content == resumed.content == "report on moths"
    created = _lines(markers, "created")
    assert len(created) == 2 and again.written[0]["task"] == created[-1].split()[0]


async def _recorded(server: Any, record: _Record, seconds: float = 30.0) -> Any:
    with recording(record):
        return await server.call("research", {"topic": "moths", "seconds": seconds})
