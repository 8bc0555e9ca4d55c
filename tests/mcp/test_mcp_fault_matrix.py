"""The standing fault matrix, per MCP transport: a server that exits mid-call, hangs on a call,
answers with malformed JSON-RPC (a line that is no JSON, a result of the wrong shape) or with a
huge result. In each case the turn completes, the model gets an error result (or, for the huge
result, a bounded one), and no task, file descriptor or process is left behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_helpers import children, open_fds, other_tasks

from tether import AgentSession, McpStdio, McpStreamable
from tether.mcp import McpServer
from tether.testing import Call, Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(60)

Make = Callable[[], McpServer]


@pytest.fixture(params=["stdio", "http"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Make:
    """Makes the hostile server over one transport, with a short call timeout."""
    if request.param == "stdio":
        command, _ = request.getfixturevalue("hostile")
        return lambda: McpStdio(command[0], command[1:], name="hostile", timeout=1.5)
    url, _ = request.getfixturevalue("hostile_http")
    return lambda: McpStreamable(url, name="hostile", timeout=1.5, connect_timeout=5)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("exit", "went away"),
        ("hang", "timed out"),
        ("garbage", ""),  # a line that is no JSON: over stdio the call times out
        ("wrong_shape", "CallToolResult"),
    ],
)
async def test_a_broken_call_is_an_error_result_and_leaves_nothing_behind(
    make: Make, fault: str, said: str
) -> None:
    fds, processes = open_fds(), set(children())
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call(fault, {})]),
            Reply(tool_calls=[Call("echo", {"after": fault})]),
            Reply("done"),
        ]
    )
    server = make()
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
    (broken,) = session.messages[2].tool_results
    assert broken.is_error and said in broken.text
    (after,) = session.messages[4].tool_results
    if fault != "exit" or isinstance(server, McpStdio):  # a stdio server is started again
        assert (after.text, after.is_error) == ('{"after": "' + fault + '"}', False)
    assert other_tasks() == set()
    assert set(children()) <= processes
    assert open_fds() <= fds  # nothing left open (the collector may close an earlier test's)


async def test_a_huge_result_reaches_the_model_bounded(make: Make) -> None:
    fds, processes = open_fds(), set(children())
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("huge", {"chars": 5_000_000})]),
            Reply(tool_calls=[Call("echo", {})]),
            Reply("done"),
        ]
    )
    server = make()
    server.timeout = 20.0
    async with AgentSession(model, mcp_tools=[server], max_tool_result_chars=8_000) as session:
        assert await session.send("go") == "done"
    (huge,) = model.requests[1].last_message.tool_results
    assert len(huge.text) < 10_000
    (after,) = session.messages[4].tool_results
    assert not after.is_error
    assert other_tasks() == set()
    assert set(children()) <= processes
    assert open_fds() <= fds  # nothing left open (the collector may close an earlier test's)


async def test_a_message_over_the_size_limit_is_an_error_result(make: Make) -> None:
    """40 MB in one message: dropped as it streams in (over stdio, splitting it into lines took
    time quadratic in its size and held the connection meanwhile), the call answered at once."""
    fds, processes = open_fds(), set(children())
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("huge", {"chars": 40_000_000})]),
            Reply(tool_calls=[Call("echo", {})]),
            Reply("done"),
        ]
    )
    server = make()
    server.timeout = 30.0
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
    (huge,) = session.messages[2].tool_results
    assert huge.is_error and "16777216 bytes" in huge.text, huge.text
    (after,) = session.messages[4].tool_results
    assert (after.text, after.is_error) == ("{}", False)
    assert other_tasks() == set()
    assert set(children()) <= processes
    assert open_fds() <= fds  # nothing left open (the collector may close an earlier test's)
