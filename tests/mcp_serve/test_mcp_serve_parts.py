"""The parts of ``serve_agent`` a real client cannot reach one by one: the hints under each kind of
``approval``, what a run's events tell a client, the name ``ask`` kept for the agent, the token and
host rules of the HTTP app, and the guard's answers to each kind of request."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from tether import Agent, report_progress, tool
from tether.events import TextDelta, ToolDispatch, ToolProgress
from tether.mcp import approving, serve_agent
from tether.mcp.approving import Held, Question, Tickets
from tether.mcp.exposed import definition, needs_approval
from tether.mcp.httpguard import HttpGuard
from tether.mcp.served import progress_line
from tether.messages import ToolUseBlock
from tether.testing import Reply, ScriptedTransport


@tool
def remove(path: str) -> str:
    """Remove a file."""
    return path


@tool
def ask(question: str) -> str:
    """A tool of the agent's own that takes the agent's name on the server."""
    return question


def test_a_predicate_marks_every_tool_destructive_and_decides_each_call() -> None:
    def only_tmp(name: str, arguments: Any) -> bool:
        return not str(arguments.get("path", "")).startswith("scratch/")

    hints = definition(remove, only_tmp).annotations
    assert hints is not None and hints.destructive_hint is True
    assert needs_approval(only_tmp, "remove", {"path": "/etc/passwd"}) is True
    assert needs_approval(only_tmp, "remove", {"path": "scratch/x"}) is False
    assert definition(remove, {"other"}).annotations is None
    assert needs_approval({"other"}, "remove", {}) is False
    assert needs_approval(None, "remove", {}) is False


def test_a_run_tells_the_client_of_calls_and_of_tools_progress() -> None:
    assert progress_line(ToolDispatch("c1", "search", {})) == "calling search"
    assert progress_line(ToolProgress("c1", "search", 2, 5)) == "search: 2/5"
    assert progress_line(ToolProgress("c1", "search", 0.5)) == "search: 0.5"
    assert progress_line(ToolProgress("c1", "search", 1, 2, "page 1")) == "search: page 1"
    assert progress_line(TextDelta(0, "hello")) is None


def test_an_agent_with_a_tool_named_ask_must_say_which_is_served() -> None:
    agent = Agent("s", ScriptedTransport([Reply("hi")]), tools=[ask])
    with pytest.raises(ValueError, match="expose_agent=False"):
        serve_agent(agent)
    assert serve_agent(agent, expose_agent=False).expose_agent is False


def test_the_http_app_needs_a_token_off_loopback_and_a_long_one() -> None:
    server = serve_agent(Agent("s", ScriptedTransport([Reply("hi")])))
    with pytest.raises(ValueError, match="not loopback, needs a token"):
        server.asgi(host="0.0.0.0")
    with pytest.raises(ValueError, match="at least 16 characters"):
        server.asgi(token="short")
    assert isinstance(server.asgi(), HttpGuard)
    assert isinstance(server.asgi(host="::1"), HttpGuard)
    assert isinstance(server.asgi(token="x" * 16, host="0.0.0.0"), HttpGuard)


async def _status(guard: HttpGuard, **headers: str) -> int:
    replies: list[Any] = []
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    async def send(message: Any) -> None:
        replies.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    guard.app = app
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    await guard(scope, receive, send)
    return 200 if reached else int(replies[0]["status"])


async def test_the_guard_answers_each_kind_of_request() -> None:
    loopback = HttpGuard(lambda *a: None, None, "127.0.0.1")
    assert await _status(loopback, Host="127.0.0.1:8765") == 200
    assert await _status(loopback, Host="[::1]:8765") == 200
    assert await _status(loopback, Host="localhost") == 200
    assert await _status(loopback, Host="attacker.example:8765") == 421
    assert await _status(loopback) == 421  # no Host at all
    assert await _status(loopback, Host="localhost:1", Origin="https://attacker.example") == 403
    assert await _status(loopback, Host="localhost:1", Origin="http://127.0.0.1:3000") == 200
    token = "t" * 20
    remote = HttpGuard(lambda *a: None, token, "0.0.0.0")
    mine = {"Host": "server.lan:8765", "Authorization": f"Bearer {token}"}
    assert await _status(remote, **mine) == 200
    assert await _status(remote, **{**mine, "Authorization": f"Basic {token}"}) == 401
    assert await _status(remote, Host="server.lan:8765") == 401
    assert await _status(remote, **mine, Origin="http://server.lan:8765") == 200
    assert await _status(remote, **mine, Origin="http://attacker.example") == 403


def test_a_ticket_is_taken_once_and_not_after_it_expired(monkeypatch: pytest.MonkeyPatch) -> None:
    tickets = Tickets()
    held = Held((Question("call", "remove", {"path": "x"}),))
    ticket = tickets.put(held)
    assert tickets.take(ticket) is held
    assert tickets.take(ticket) is None  # a state replayed approves nothing
    assert tickets.take("made-up") is None and tickets.take(None) is None
    late = tickets.put(held)
    now = time.monotonic()
    monkeypatch.setattr(approving.time, "monotonic", lambda: now + 601)
    assert tickets.take(late) is None


def test_tickets_kept_are_bounded_the_oldest_dropped() -> None:
    tickets = Tickets()
    held = Held(())
    first = tickets.put(held)
    rest = [tickets.put(held) for _ in range(300)]
    assert tickets.take(first) is None
    assert tickets.take(rest[-1]) is held
    assert len(tickets._held) <= 256


async def test_dispatch_tools_passes_each_tools_own_progress_on() -> None:
    async def _count(n: int) -> str:
        for i in range(1, n + 1):
            report_progress(i, n, f"{i}")
        return f"counted {n}"

    count = replace(tool(_count, name="count"), reports_progress=True)
    agent = Agent("s", ScriptedTransport([]), tools=[count, remove], execution="parallel")
    heard: list[tuple[str, str, float, float | None]] = []

    async def progress(event: ToolProgress) -> None:
        heard.append((event.tool_use_id, event.name, event.progress, event.total))

    calls = [
        ToolUseBlock("c1", "count", {"n": 2}),
        ToolUseBlock("c2", "remove", {"path": "x"}),
        ToolUseBlock("c3", "count", {"n": 1}),
    ]
    results = await agent.dispatch_tools(calls, 1, on_progress=progress)
    assert [r.content for r in results] == ["counted 2", "x", "counted 1"]
    assert sorted(heard) == [("c1", "count", 1, 2), ("c1", "count", 2, 2), ("c3", "count", 1, 1)]
    quiet = await agent.dispatch_tools(calls[:1], 1)
    assert quiet[0].content == "counted 2"
