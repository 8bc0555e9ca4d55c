"""The client's whole history (AG-UI ``messages``) against the stored session over real HTTP:
the same history and a new message runs; one that differs (edited, removed, an answer dropped,
a message the session never had) is a 409 saying what differs and storing nothing, unless it
asks for a fork (``forwardedProps.tether.edit``): then the session forks there, the old branch
kept whole and readable, and the client is told (CUSTOM ``tether.forked``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from served import client, run, serving
from tether import Agent
from tether.messages import TextBlock
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

EDIT = {"tether": {"edit": True}}


def user(text: str, id: str = "u") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": text}


def texts(model: ScriptedTransport, request: int) -> list[tuple[str, str]]:
    """The history the model was sent, as (role, text)."""
    return [
        (m.role, "".join(b.text for b in m.content if isinstance(b, TextBlock)))
        for m in model.requests[request].messages
    ]


async def streamed_history(http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """What a client holds after a run, built from its events as an AG-UI client builds it:
    its own messages, then one assistant message per text message, reasoning as its own."""
    events = await run(http, body)
    held = list(body["messages"])
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            held.append({"id": event["messageId"], "role": "assistant", "content": ""})
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            held[-1]["content"] += event["delta"]
    held.append({"id": "r0", "role": "reasoning", "content": "thinking"})  # not compared
    return held


@pytest.fixture
async def served(
    tmp_path: Path,
) -> AsyncIterator[tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore]]:
    model = ScriptedTransport([], then=Reply("An answer."))
    async with (
        SQLiteStore(tmp_path / "chats.db") as store,
        serving(app(Agent("s", model), store)) as base,
        client(base) as http,
    ):
        yield http, model, store


async def two_turns(http: httpx.AsyncClient, thread: str) -> list[dict[str, Any]]:
    held = await streamed_history(http, {"threadId": thread, "messages": [user("one", "u1")]})
    return await streamed_history(
        http, {"threadId": thread, "messages": [*held, user("two", "u2")]}
    )


async def test_the_same_history_and_a_new_message_runs(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    http, model, _ = served
    held = await two_turns(http, "same")
    events = await run(http, {"threadId": "same", "messages": [*held, user("three", "u3")]})
    assert events[-1]["type"] == "RUN_FINISHED"
    assert texts(model, 2) == [
        ("user", "one"),
        ("assistant", "An answer."),
        ("user", "two"),
        ("assistant", "An answer."),
        ("user", "three"),
    ]
    stored = (await http.get("/api/sessions/same")).json()["messages"]
    again = await run(http, {"threadId": "same", "messages": [*stored, user("four")]})
    assert again[-1]["type"] == "RUN_FINISHED"  # the stored ids (s0, s1...) match as well


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda h: [user("ONE", "u1"), *h[1:]], "stored user 'one', sent user 'ONE'"),
        (lambda h: h[2:], "stored user 'one', sent user 'two'"),
        (lambda h: h[:-1], "leaves out what the stored session holds from s3"),
        (
            lambda h: [*h, {"id": "x", "role": "assistant", "content": "made up"}],
            "not in the stored",
        ),
    ],
    ids=["edited", "removed", "answer dropped", "never stored"],
)
async def test_a_history_that_differs_is_refused_with_what_differs(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore], change: Any, says: str
) -> None:
    http, model, store = served
    held = await two_turns(http, "differs")
    held = [m for m in held if m["role"] != "reasoning"]
    before = await store.history_of("differs")
    answer = await http.post(
        "/agui", json={"threadId": "differs", "messages": [*change(held), user("three")]}
    )
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert says in error and "edit" in error  # says how to ask for a fork
    assert await store.history_of("differs") == before and len(model.requests) == 2


async def test_an_edit_forks_the_session_and_keeps_the_old_branch(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    http, model, store = served
    held = await two_turns(http, "fork")
    old = await store.history_of("fork")
    first_turn = [m for m in held[:2] if m["role"] != "reasoning"]
    events = await run(
        http,
        {
            "threadId": "fork",
            "messages": [*first_turn, user("TWO, edited")],
            "forwardedProps": EDIT,
        },
    )
    assert events[0]["type"] == "RUN_STARTED" and events[0]["threadId"] == "fork"
    forked = events[1]
    assert forked["type"] == "CUSTOM" and forked["name"] == "tether.forked"
    assert forked["value"]["threadId"] == "fork" and forked["value"]["at"] == 2
    assert texts(model, 2) == [
        ("user", "one"),
        ("assistant", "An answer."),
        ("user", "TWO, edited"),
    ]
    branch = forked["value"]["branch"]
    assert await store.history_of(branch) == old  # nothing lost
    listed = {s["id"] for s in (await http.get("/api/sessions")).json()}
    assert {"fork", branch} <= listed
    now = (await http.get("/api/sessions/fork")).json()["messages"]
    assert [m["content"] for m in now if m["role"] == "user"] == ["one", "TWO, edited"]


async def test_a_regenerate_forks_at_the_user_message_and_answers_it_again(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    http, model, _ = served
    held = await two_turns(http, "again")
    kept = [m for m in held if m["role"] != "reasoning"]
    upto = kept[:3]  # one, answer, two (its answer dropped)
    events = await run(http, {"threadId": "again", "messages": upto, "forwardedProps": EDIT})
    assert events[1]["name"] == "tether.forked" and events[1]["value"]["at"] == 2
    assert texts(model, 2)[-1] == ("user", "two")
    assert (await http.get("/api/sessions/again")).json()["total"] == 4


async def test_an_edit_that_keeps_later_messages_is_refused(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    http, _, store = served
    held = [m for m in await two_turns(http, "middle") if m["role"] != "reasoning"]
    before = await store.history_of("middle")
    edited = [user("ONE", "u1"), *held[1:], user("three")]
    answer = await http.post(
        "/agui", json={"threadId": "middle", "messages": edited, "forwardedProps": EDIT}
    )
    assert answer.status_code == 409 and "history up to that" in answer.json()["error"]
    assert await store.history_of("middle") == before


async def test_forwarded_props_tether_must_be_an_object(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    http, _, store = served
    body = {"messages": [user("hi")], "forwardedProps": {"tether": "edit"}}
    answer = await http.post("/agui", json=body)
    assert answer.status_code == 400 and "forwardedProps.tether" in answer.json()["error"]
    assert await store.sessions() == []


async def test_a_forked_runs_snapshots_and_ids_are_the_branch_it_keeps(
    served: tuple[httpx.AsyncClient, ScriptedTransport, SQLiteStore],
) -> None:
    """After an edit forks the session, the run's snapshots show the thread as it now is (the
    kept messages, then the new ones), and its streamed ids are those the thread stores."""
    http, _, _ = served
    held = await two_turns(http, "ids")
    first_turn = [m for m in held[:2] if m["role"] != "reasoning"]
    body = {"threadId": "ids", "messages": [*first_turn, user("edited")], "forwardedProps": EDIT}
    events = await run(http, body)
    snaps = [e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    stored = (await http.get("/api/sessions/ids")).json()["messages"]
    assert [m["content"] for m in snaps[0]] == ["one", "An answer.", "edited"]
    assert snaps[-1] == stored
    text_ids = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert text_ids == [stored[-1]["id"]] == ["s3"]
