"""``tether.serve.app`` over real HTTP (uvicorn, httpx): runs stream as AG-UI events in order,
sessions are stored and read back, paused calls are decided, runs are stopped, and what a client
sends is checked before anything runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from served import ask, client, decide, events_of, kinds, run, serving
from tether import Agent, tool
from tether.messages import Message
from tether.serve import ServeLimits, app
from tether.serve.routes import TITLES_PER_LIST
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.types import Usage


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode() -> str:
    """Fail."""
    raise RuntimeError("the tool broke")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


def in_order(events: list[dict[str, Any]]) -> None:
    """The AG-UI stream rules: RUN_STARTED first, one end last, each message and call opened
    before its content and closed once."""
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    assert sum(e["type"] in ("RUN_FINISHED", "RUN_ERROR") for e in events) == 1
    open_messages: set[str] = set()
    open_calls: set[str] = set()
    for event in events[1:-1]:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in open_messages
            open_messages.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in open_messages
        elif kind == "TEXT_MESSAGE_END":
            open_messages.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            open_calls.add(event["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert event["toolCallId"] in open_calls
        elif kind == "TOOL_CALL_END":
            open_calls.remove(event["toolCallId"])
    assert not open_messages and not open_calls


async def test_a_run_streams_text_and_tool_calls_and_is_stored(store: SQLiteStore) -> None:
    model = ScriptedTransport(
        [
            Reply("Adding.", tool_calls=[Call("add", {"a": 2, "b": 3})], chunks=2),
            Reply("It is 5.", chunks=3, usage=Usage(12, 4)),
        ]
    )
    async with serving(app(Agent("s", model, tools=[add]), store)) as base, client(base) as http:
        events = await run(http, ask("2 + 3?"))
        in_order(events)
        assert kinds(events) == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "MESSAGES_SNAPSHOT",
            "RUN_FINISHED",
        ]
        thread = events[0]["threadId"]
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"] == "5" and result["toolCallId"] == "call_1"
        end = events[-1]
        assert end["threadId"] == thread and end["outcome"] == {"type": "success"}
        assert end["usage"][0]["inputTokens"] == 12 and end["usage"][0]["totalTokens"] == 16

        listed = (await http.get("/api/sessions")).json()
        assert [s["id"] for s in listed] == [thread] and listed[0]["messages"] == 4
        shown = (await http.get(f"/api/sessions/{thread}")).json()
        roles = [m["role"] for m in shown["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert shown["messages"][1]["toolCalls"][0]["function"]["name"] == "add"
        assert shown["messages"][3]["content"] == "It is 5."
        assert shown["pending"] == [] and shown["running"] is False
    assert len(await (await store.open(thread)).get_history()) == 4


async def test_the_next_message_goes_on_in_the_same_session(store: SQLiteStore) -> None:
    model = ScriptedTransport([Reply("one"), Reply("two")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        first = await run(http, ask("a"))
        thread = first[0]["threadId"]
        second = await run(http, ask("b", thread))
        assert second[0]["threadId"] == thread
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "user"]


async def test_a_failing_tool_is_a_result_marked_as_an_error(store: SQLiteStore) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("explode")]), Reply("Sorry.")])
    async with serving(app(Agent("s", model, tools=[explode]), store)) as base, client(base) as h:
        events = await run(h, ask("go"))
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["metadata"]["isError"] is True and "the tool broke" in result["content"]
        thread = events[0]["threadId"]
        tool_message = (await h.get(f"/api/sessions/{thread}")).json()["messages"][2]
        assert tool_message["role"] == "tool" and "the tool broke" in tool_message["error"]


async def test_a_failing_model_ends_in_run_error(store: SQLiteStore) -> None:
    model = ScriptedTransport([ValueError("the provider said no")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as h:
        events = await run(h, ask("go"))
    in_order(events)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "the provider said no" in events[-1]["message"]


async def test_a_paused_call_is_approved_or_denied_by_resume(store: SQLiteStore) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 1}), Call("add", {"a": 2, "b": 2})]),
            Reply("Done."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with serving(app(agent, store)) as base, client(base) as http:
        paused = await run(http, ask("add things"))
        thread = paused[0]["threadId"]
        custom = next(e for e in paused if e["type"] == "CUSTOM")
        assert custom["name"] == "tether.paused"
        assert [c["id"] for c in custom["value"]["calls"]] == ["call_1", "call_2"]
        outcome = paused[-1]["outcome"]
        assert outcome["type"] == "interrupt"
        assert [i["toolCallId"] for i in outcome["interrupts"]] == ["call_1", "call_2"]
        waiting = (await http.get(f"/api/sessions/{thread}")).json()["pending"]
        assert [c["id"] for c in waiting] == ["call_1", "call_2"]

        # a new message while calls wait is refused, and nothing is stored
        refused = await http.post("/agui", json=ask("something else", thread))
        assert refused.status_code == 409 and "call_1" in refused.json()["error"]
        # a decision on a call that does not wait is refused
        refused = await http.post("/agui", json=decide(thread, "call_9", True))
        assert refused.status_code == 409 and "call_9" in refused.json()["error"]

        first = await run(http, decide(thread, "call_1", True))
        assert [e["content"] for e in first if e["type"] == "TOOL_CALL_RESULT"] == ["2"]
        assert first[-1]["outcome"]["type"] == "interrupt"  # call_2 still waits
        second = await run(http, decide(thread, "call_2", False, "not that one"))
        results = [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
        assert len(results) == 1 and "not that one" in results[0]["content"]
        assert second[-1]["outcome"] == {"type": "success"}
    history = await (await store.open(thread)).get_history()
    assert [m.role for m in history][:1] == ["user"] and len(model.requests) == 2
    assert "something else" not in str(history)


async def test_one_run_at_a_time_per_session_and_stop_cancels_it(store: SQLiteStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport(
        [Hold(gate, Reply("never finished", chunks=4), after_events=1)], then=Reply("next")
    )
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=ask("long")) as response:
            stream = events_of(response)
            started = await anext(stream)
            thread = started["threadId"]
            assert (await anext(stream))["type"] == "MESSAGES_SNAPSHOT"
            assert (await anext(stream))["type"] == "TEXT_MESSAGE_START"
            busy = await http.post("/agui", json=ask("again", thread))
            assert busy.status_code == 409
            listed = (await http.get("/api/sessions")).json()
            assert listed[0]["running"] is True
            assert (await http.delete(f"/api/sessions/{thread}")).status_code == 409
            stopped = await http.post(f"/api/sessions/{thread}/cancel")
            assert stopped.status_code == 202
            rest = [e async for e in stream]
        assert rest[-1]["type"] == "RUN_FINISHED"
        assert rest[-1]["outcome"] == {"type": "cancelled"}
        assert (await http.post(f"/api/sessions/{thread}/cancel")).status_code == 404
        after = await run(http, ask("and now?", thread))
        assert after[-1]["outcome"] == {"type": "success"}


async def test_a_client_that_leaves_cancels_nothing(store: SQLiteStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("finished anyway", chunks=2), after_events=1)])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=ask("go")) as response:
            stream = events_of(response)
            thread = (await anext(stream))["threadId"]
            await anext(stream)
        # the client has gone; the run goes on, and is stored when it ends
        gate.set()
        shown = await settled(http, thread)
        assert shown["messages"][-1]["content"] == "finished anyway"


async def test_a_client_may_ask_that_leaving_cancels(store: SQLiteStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("never seen", chunks=2), after_events=1)])
    body = ask("go", forwardedProps={"cancelOnDisconnect": True})
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=body) as response:
            stream = events_of(response)
            thread = (await anext(stream))["threadId"]
            await anext(stream)
        shown = await settled(http, thread)
        assert [m["role"] for m in shown["messages"]] == ["user", "assistant"]
        assert "never seen" not in shown["messages"][-1]["content"]


async def settled(http: Any, thread: str) -> dict[str, Any]:
    """The session once no run is under way in it."""
    for _ in range(500):
        shown: dict[str, Any] = (await http.get(f"/api/sessions/{thread}")).json()
        if not shown["running"]:
            return shown
        await asyncio.sleep(0.01)
    raise AssertionError("the run never ended")


async def test_sessions_are_deleted(store: SQLiteStore) -> None:
    model = ScriptedTransport([], then=Reply("ok"))
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        threads = [(await run(http, ask(str(n))))[0]["threadId"] for n in range(3)]
        assert (await http.delete(f"/api/sessions/{threads[1]}")).status_code == 204
        assert (await http.delete(f"/api/sessions/{threads[1]}")).status_code == 404
        left = {s["id"] for s in (await http.get("/api/sessions")).json()}
        assert left == {threads[0], threads[2]}
        bad = await http.get("/api/sessions/" + "x" * 300)
        assert bad.status_code == 400


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b"{}", {"content-type": "text/plain"}, 415),
        (b"{not json", {"content-type": "application/json"}, 400),
        (b"[1, 2]", {"content-type": "application/json"}, 400),
        (b'{"messages": []}', {"content-type": "application/json"}, 400),
        (b'{"messages": [{"role": "assistant", "content": "hi"}]}', {}, 400),
        (b'{"messages": [{"role": "user", "content": 5}]}', {}, 400),
        (b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": ""}]}', {}, 400),
        (b'{"threadId": 5, "messages": [{"role": "user", "content": "hi"}]}', {}, 400),
        (b'{"resume": [{"status": "resolved"}]}', {}, 400),
        (b'{"messages": [{"role": "user", "content": "' + b"x" * 2000 + b'"}]}', {}, 413),
        (b'{"pad": "' + b"x" * 5000 + b'"}', {}, 413),
    ],
)
async def test_bad_requests_are_refused_before_anything_runs(
    store: SQLiteStore, body: bytes, headers: dict[str, str], status: int
) -> None:
    model = ScriptedTransport([])
    limits = ServeLimits(max_body=4096, max_message_chars=1000)
    served = app(Agent("s", model), store, limits=limits)
    sent = {"content-type": "application/json", **headers}
    async with serving(served) as base, client(base) as http:
        answer = await http.post("/agui", content=body, headers=sent)
        assert answer.status_code == status, answer.text
        assert answer.json()["error"]
        assert (await http.get("/api/sessions")).json() == []
    assert model.call_count == 0


async def test_a_shutdown_stops_runs_and_keeps_their_history_valid(store: SQLiteStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]), Hold(gate, Reply("late"), 1)]
    )
    async with (
        serving(app(Agent("s", model, tools=[add]), store)) as base,
        client(base) as http,
        http.stream("POST", "/agui", json=ask("go")) as response,
    ):
        stream = events_of(response)
        thread = (await anext(stream))["threadId"]
        async for event in stream:
            if event["type"] == "TOOL_CALL_RESULT":
                break
    history = await (await store.open(thread)).get_history()
    assert [m.role for m in history][:3] == ["user", "assistant", "user"]
    assert model.call_count == 2


class CountingStore(SQLiteStore):
    """A SQLite store that counts the whole-history reads made of it."""

    reads = 0

    async def history_of(self, session: str) -> list[Message]:
        self.reads += 1
        return await super().history_of(session)


async def test_sessions_are_listed_with_a_title_and_dates(tmp_path: Path) -> None:
    """Each session's title is its first user message on one line, cut to 60 characters; a
    session's history is read for it once, at most ``TITLES_PER_LIST`` per listing."""
    async with CountingStore(tmp_path / "c.db") as counted:
        for n in range(TITLES_PER_LIST + 10):
            context = await counted.open(f"s{n:03}")
            await context.append(Message("user", f"  question\n number {n}  " + "x" * 80 * (n % 2)))
            await context.append(Message("assistant", "an answer"))
        await counted.open("empty")  # an empty one has no title
        await (await counted.open("no-user")).append(Message("assistant", "hello"))
        model = ScriptedTransport([], then=Reply("ok"))
        async with serving(app(Agent("s", model), counted)) as base, client(base) as http:
            listed = (await http.get("/api/sessions")).json()
            assert counted.reads == TITLES_PER_LIST  # the newest ones, not every history
            assert all(set(s) >= {"id", "title", "created", "updated", "messages"} for s in listed)
            newest = [s["id"] for s in listed[:TITLES_PER_LIST]]
            titled = [s["id"] for s in listed if s["title"] is not None]
            assert titled == [i for i in newest if i not in ("empty", "no-user")]

            listed = (await http.get("/api/sessions")).json()
            titles = {s["id"]: s["title"] for s in listed}
            assert counted.reads == len(listed)  # the rest now, each history once in all
            assert titles["s000"] == "question number 0"
            assert titles["s001"] == ("question number 1 " + "x" * 80)[:60] + "…"
            assert titles["empty"] is None and titles["no-user"] is None
            assert all(s["updated"] >= s["created"] > 0 for s in listed)

            (await http.get("/api/sessions")).json()
            assert counted.reads == len(listed)  # none read again: nothing was added to them

            events = await run(http, ask("a new one about Lisbon"))
            fresh, before = events[0]["threadId"], counted.reads
            listed = (await http.get("/api/sessions")).json()
            assert listed[0]["id"] == fresh and listed[0]["title"] == "a new one about Lisbon"
            assert counted.reads == before + 1  # the new one's, and no other
