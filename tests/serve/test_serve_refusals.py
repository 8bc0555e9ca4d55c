"""A request the server turns down leaves the store as it was: no new session, no message, for
every refusal of ``POST /agui`` and of the session endpoints, on each kind of store a user keeps
on disk (over real HTTP: uvicorn, httpx)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from served import ask, client, decide, events_of, run, serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import FileStore, SQLiteStore
from tether.stores.base import SessionStore
from tether.testing import Call, Hold, Reply, ScriptedTransport


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture(params=["sqlite", "files"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "sqlite":
        async with SQLiteStore(tmp_path / "chats.db") as opened:
            yield opened
    else:
        async with FileStore(tmp_path / "chats") as opened:
            yield opened


async def stored(store: SessionStore) -> list[tuple[str, int, float]]:
    """What the store holds, as the session list shows it: each id, its count and last change."""
    return [(s.session_id, s.messages, s.updated) for s in await store.sessions()]


Refusal = Callable[[httpx.AsyncClient, str], Awaitable[httpx.Response]]

ON_A_NEW_THREAD: dict[str, tuple[Refusal, int]] = {
    "resume of an unknown call, new threadId": (
        lambda http, _: http.post("/agui", json=decide("never-seen", "call_1", True)),
        409,
    ),
    "resume of an unknown call, no threadId": (
        lambda http, _: http.post(
            "/agui",
            json={"messages": [], "resume": [{"interruptId": "call_1", "status": "resolved"}]},
        ),
        409,
    ),
    "denial of an unknown call, new threadId": (
        lambda http, _: http.post("/agui", json=decide("never-seen", "call_1", False, "no")),
        409,
    ),
    "a threadId no store can hold": (
        lambda http, _: http.post("/agui", json=ask("hi", "line\nbreak")),
        400,
    ),
    "a threadId naming the server's own A2A records": (
        lambda http, _: http.post("/agui", json=ask("hi", "a2a-task:t1")),
        400,
    ),
    "a threadId naming a session's kept state": (
        lambda http, _: http.post("/agui", json=ask("hi", "tether-state:abc")),
        400,
    ),
    "a cross-site run": (
        lambda http, _: http.post(
            "/agui", json=ask("hi", "from-elsewhere"), headers={"sec-fetch-site": "cross-site"}
        ),
        403,
    ),
    "a front-end tool without a name": (
        lambda http, _: http.post("/agui", json=ask("hi", "with-tools", tools=[{"name": ""}])),
        400,
    ),
    "reading an unknown session": (lambda http, _: http.get("/api/sessions/never-seen"), 200),
    "deleting an unknown session": (lambda http, _: http.delete("/api/sessions/never-seen"), 404),
    "stopping an unknown session": (
        lambda http, _: http.post("/api/sessions/never-seen/cancel"),
        404,
    ),
}

ON_A_PAUSED_THREAD: dict[str, tuple[Refusal, int]] = {
    "a new message while calls wait": (
        lambda http, thread: http.post("/agui", json=ask("something else", thread)),
        409,
    ),
    "a decision on a call that does not wait": (
        lambda http, thread: http.post("/agui", json=decide(thread, "call_9", True)),
        409,
    ),
    "one known and one unknown call": (
        lambda http, thread: http.post(
            "/agui",
            json={
                "threadId": thread,
                "messages": [],
                "resume": [
                    {"interruptId": "call_1", "status": "resolved", "payload": {"approved": True}},
                    {"interruptId": "call_9", "status": "resolved", "payload": {"approved": True}},
                ],
            },
        ),
        409,
    ),
}


@pytest.mark.parametrize("kind", sorted(ON_A_NEW_THREAD))
async def test_a_refusal_on_a_new_thread_stores_nothing(store: SessionStore, kind: str) -> None:
    model = ScriptedTransport([])
    refusal, status = ON_A_NEW_THREAD[kind]
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        listed = (await http.get("/api/sessions")).json()
        answer = await refusal(http, "")
        assert answer.status_code == status, answer.text
        assert (await http.get("/api/sessions")).json() == listed == []
    assert await stored(store) == []
    assert model.call_count == 0


@pytest.mark.parametrize("kind", sorted(ON_A_PAUSED_THREAD))
async def test_a_refusal_on_a_paused_thread_changes_nothing(store: SessionStore, kind: str) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("add", {"a": 1, "b": 2})])])
    refusal, status = ON_A_PAUSED_THREAD[kind]
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with serving(app(agent, store)) as base, client(base) as http:
        thread = (await run(http, ask("add")))[0]["threadId"]
        listed, before = (await http.get("/api/sessions")).json(), await stored(store)
        answer = await refusal(http, thread)
        assert answer.status_code == status, answer.text
        assert answer.json()["error"]
        assert (await http.get("/api/sessions")).json() == listed
        waiting = (await http.get(f"/api/sessions/{thread}")).json()["pending"]
        assert [c["id"] for c in waiting] == ["call_1"]
    assert await stored(store) == before
    assert model.call_count == 1


async def test_a_busy_session_refuses_a_second_run_and_keeps_one(store: SessionStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("slow", chunks=3), after_events=1)])
    async with (
        serving(app(Agent("s", model), store)) as base,
        client(base) as http,
        http.stream("POST", "/agui", json=ask("first")) as response,
    ):
        stream = events_of(response)
        thread = (await anext(stream))["threadId"]
        await anext(stream)
        before = await stored(store)
        busy = await http.post("/agui", json=ask("second", thread))
        assert busy.status_code == 409
        assert await stored(store) == before
        gate.set()
        assert [e async for e in stream][-1]["type"] == "RUN_FINISHED"
    history = await store.history_of(thread)
    assert "second" not in str(history) and model.call_count == 1
