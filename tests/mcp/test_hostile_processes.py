"""Hostile or broken MCP server processes (``servers/hostile.py``): what they write to stderr is
kept as a bounded tail, never with a secret of their command line, and nothing they start
outlives the session."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp_helpers import children, dead, large_open_files, texts

from tether import AgentSession, McpStdio
from tether.testing import Call, Reply, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(60)


async def test_stderr_is_kept_as_a_bounded_tail(hostile: tuple[list[str], Path]) -> None:
    command, markers = hostile
    model = ScriptedTransport([Reply(tool_calls=[Call("exit", {})]), Reply("done")])
    server = McpStdio(command[0], [*command[1:], "stderr-flood"], name="hostile")
    async with AgentSession(model, mcp_tools=[server]) as session:
        await until((markers / "flooded").exists, "the server's 20 MB of stderr")
        assert large_open_files() == []  # no file holding all of it
        assert await session.send("go") == "done"
    (said,) = texts(session.messages)
    assert "went away" in said and "the flood is over" in said
    assert len(said) < 10_000


async def test_secrets_in_args_and_env_never_reach_the_model(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    key, token, password = "sk-live-0123456789abcdef", "tok_9f8e7d6c5b4a39281706", "hunter2hunter2"
    args = [*command[1:], "say-argv", "--api-key", key, f"--auth-token={token}"]
    model = ScriptedTransport([Reply(tool_calls=[Call("exit", {})]), Reply("done")])
    server = McpStdio(command[0], args, env={"DB_PASSWORD": password}, name="hostile")
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
    (said,) = texts(session.messages)
    assert "started as" in said and "[REDACTED]" in said
    for secret in (key, token):
        assert secret not in said
        assert all(secret not in str(m.content) for m in session.messages)


async def test_a_servers_grandchildren_die_with_the_session(
    hostile: tuple[list[str], Path],
) -> None:
    command, markers = hostile
    before = set(children())
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"a": 1})]), Reply("done")])
    server = McpStdio(command[0], [*command[1:], "grandchild"])
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
        pids = [int(p) for p in (markers / "grandchildren").read_text().split()]
        assert not any(dead(p) for p in pids)
    await until(lambda: all(dead(p) for p in pids), "the end of the server's grandchildren")
    assert set(children()) == before


async def test_a_server_that_exits_while_its_child_holds_its_stdout_fails_the_call_at_once(
    hostile: tuple[list[str], Path],
) -> None:
    command, markers = hostile
    model = ScriptedTransport([Reply(tool_calls=[Call("exit", {})]), Reply("done")])
    server = McpStdio(command[0], [*command[1:], "grandchild"], timeout=20)
    started = time.monotonic()
    async with AgentSession(model, mcp_tools=[server]) as session:
        assert await session.send("go") == "done"
        assert time.monotonic() - started < 15.0  # not the 20 s timeout
    (said,) = texts(session.messages)
    assert "went away during the call" in said
    pids = [int(p) for p in (markers / "grandchildren").read_text().split()]
    await until(lambda: all(dead(p) for p in pids), "the end of the server's grandchildren")
