"""A run's messages as a front end merges them (issue 40): each streamed message under the id it
is stored with, a MESSAGES_SNAPSHOT of the session after RUN_STARTED and again before the end,
reasoning as reasoning messages, a resume's results under their stored ids, the snapshot cut to
``ServeLimits.max_shown``. Over real HTTP (uvicorn, httpx) with a SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from served import ask, client, decide, kinds, run, serving
from tether import Agent, Compaction, Usage, tool
from tether.context.policy import estimate_chars
from tether.serve import ServeLimits, app
from tether.stores import FileStore, SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture(params=["sqlite", "files"])
async def store(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[SQLiteStore]:
    """Each store: a file store's position counts bytes, not messages (the ids may not)."""
    if request.param == "files":
        async with FileStore(tmp_path / "chats") as files:
            yield files  # type: ignore[misc]
        return
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


def streamed(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The messages the events stream, by id, as a client builds them from the events alone."""
    built: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            built.setdefault(event["messageId"], {"role": event["role"], "content": ""})
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            built[event["messageId"]]["content"] += event["delta"]
        elif kind == "TOOL_CALL_START":
            parent = built.setdefault(
                event["parentMessageId"], {"role": "assistant", "content": ""}
            )
            parent.setdefault("calls", []).append(event["toolCallId"])
        elif kind == "TOOL_CALL_RESULT":
            built[event["messageId"]] = {"role": "tool", "content": event["content"]}
    return built


def snapshots(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT"]


async def test_each_message_streams_under_its_stored_id(store: SQLiteStore) -> None:
    model = ScriptedTransport(
        [
            Reply(
                "Adding both.",
                reasoning="Two sums.",
                tool_calls=[Call("add", {"a": 2, "b": 3}), Call("add", {"a": 1, "b": 1})],
                chunks=2,
            ),
            Reply("They are 5 and 2.", chunks=3),
            Reply("You are welcome."),
        ]
    )
    async with serving(app(Agent("s", model, tools=[add]), store)) as base, client(base) as http:
        events = await run(http, ask("2 + 3 and 1 + 1?"))
        thread = events[0]["threadId"]
        stored = (await http.get(f"/api/sessions/{thread}")).json()["messages"]
        again = await run(http, ask("thanks", thread))
        after = (await http.get(f"/api/sessions/{thread}")).json()["messages"]

    roles = ["user", "reasoning", "assistant", "tool", "tool", "assistant"]
    assert [m["role"] for m in stored] == roles
    assert stored[1] == {"id": "s1.r0", "role": "reasoning", "content": "Two sums."}
    by_id = {m["id"]: m for m in stored}
    built = streamed(events)
    assert set(built) == set(by_id) - {"s0"}  # every message but the user's, under its own id
    for message_id, message in built.items():
        assert message["role"] == by_id[message_id]["role"]
        assert message["content"] == by_id[message_id]["content"], message_id
        calls = [c["id"] for c in by_id[message_id].get("toolCalls", [])]
        assert message.get("calls", []) == calls
    first, last = snapshots(events)
    assert first == stored[:1]  # the session as the run began: the user's message, stored
    assert last == stored  # and as it ended: what a client that merges by id must end with
    assert kinds(events)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert kinds(events)[-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    # the next run starts from the whole session, its new message under its stored id
    assert snapshots(again)[0] == [*stored, {"id": "s4", "role": "user", "content": "thanks"}]
    assert snapshots(again)[-1] == after and set(streamed(again)) == {"s5"}


async def test_a_resume_streams_its_results_under_their_stored_ids(store: SQLiteStore) -> None:
    model = ScriptedTransport(
        [
            Reply("Let me add.", tool_calls=[Call("add", {"a": 1, "b": 1})]),
            Reply("It is 2."),
        ]
    )
    agent = Agent("s", model, tools=[add], approval=["add"])
    async with serving(app(agent, store)) as base, client(base) as http:
        paused = await run(http, ask("1 + 1?"))
        thread = paused[0]["threadId"]
        resumed = await run(http, decide(thread, "call_1", True))
        stored = (await http.get(f"/api/sessions/{thread}")).json()["messages"]

    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert snapshots(paused)[-1][-1]["toolCalls"][0]["id"] == "call_1"
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    by_id = {m["id"]: m for m in stored}
    assert by_id[result["messageId"]]["toolCallId"] == "call_1"
    assert by_id[result["messageId"]]["content"] == "2"
    text = next(e for e in resumed if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    assert by_id[text]["content"] == "It is 2."
    first = snapshots(resumed)[0]
    assert first[: len(snapshots(paused)[-1])] == snapshots(paused)[-1]
    assert snapshots(resumed)[-1] == stored


async def test_a_snapshot_shows_the_last_max_shown_messages(store: SQLiteStore) -> None:
    model = ScriptedTransport([Reply("one"), Reply("two"), Reply("three")])
    served = app(Agent("s", model), store, limits=ServeLimits(max_shown=3))
    async with serving(served) as base, client(base) as http:
        thread = (await run(http, ask("a")))[0]["threadId"]
        await run(http, ask("b", thread))
        events = await run(http, ask("c", thread))
    first, last = snapshots(events)
    assert [m["id"] for m in first] == ["s2", "s3", "s4"]
    assert [m["id"] for m in last] == ["s3", "s4", "s5"]
    assert [m["content"] for m in last] == ["two", "c", "three"]


def lookup(key: str) -> str:
    """Look a key up (a long answer, so that the session is compacted)."""
    return f"value of {key}: " + "x" * 1200


async def test_a_compacted_sessions_snapshot_keeps_the_stored_ids(store: SQLiteStore) -> None:
    """A store that reads a compacted session from its summary on (SQLite) gives the run a
    tail of the session: the snapshot still names each message by its place in the whole."""
    replies = [Reply(tool_calls=[Call("lookup", {"key": f"k{i}"})]) for i in range(6)]
    replies += [Reply("done"), Reply("again")]

    def step(request: Request) -> Reply:
        reply = replies.pop(0)
        size = sum(estimate_chars(m) for m in request.messages) // 4
        return Reply(reply.text, reply.tool_calls, Usage(input_tokens=size, output_tokens=10))

    summaries = ScriptedTransport([Reply(f"S{i}") for i in range(1, 6)])
    policy = Compaction(max_tokens=1000, summarizer=summaries, keep_last=3)
    agent = Agent("s", ScriptedTransport([], then=step), tools=[lookup], context_policy=policy)
    async with serving(app(agent, store)) as base, client(base) as http:
        thread = (await run(http, ask("go")))[0]["threadId"]
        events = await run(http, ask("once more", thread))
        stored = (await http.get(f"/api/sessions/{thread}")).json()["messages"]
    assert summaries.call_count >= 1
    first, last = snapshots(events)
    by_id = {m["id"]: m for m in stored}
    assert first and all(by_id[m["id"]] == m for m in first)  # each under its stored id
    # SQLite's run read the session from the last compaction's kept messages on; so does the
    # snapshot (a file store reads it whole)
    tail = isinstance(store, SQLiteStore)
    assert (first[0]["id"] != "s0") is tail and any(m["role"] == "activity" for m in first)
    assert first[-1] == {"id": f"s{len(stored) - 2}", "role": "user", "content": "once more"}
    assert last[-len(first) :] == stored[-len(first) :] and last == stored[-len(last) :]
