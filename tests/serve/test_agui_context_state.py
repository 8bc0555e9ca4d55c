"""AG-UI ``context`` and ``state`` over real HTTP: the front end's readables reach the model in
the run's system prompt (that run only, never stored); the shared state is sent as
STATE_SNAPSHOT when a run starts, read and changed by a tool (``shared_state()``), each change
sent as a STATE_DELTA (RFC 6902) after the call, and kept by the store across a restart."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from served import client, kinds, run, serving
from tether import Agent, tool
from tether.serve import app, shared_state
from tether.serve.shared_state import json_patch
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

seen: list[dict[str, Any] | None] = []


@tool
def add_item(item: str) -> str:
    """Put an item on the shared list."""
    state = shared_state()
    seen.append(copy.deepcopy(state))
    assert state is not None
    state.setdefault("items", []).append(item)
    state["count"] = len(state["items"])
    state.pop("draft", None)
    return "added"


def applied(document: Any, patch: list[dict[str, Any]]) -> Any:
    """``patch`` applied to ``document`` (RFC 6902 add, remove, replace; written for the test)."""
    document = copy.deepcopy(document)
    for op in patch:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        if not parts:
            document = op["value"]
            continue
        parent = document
        for part in parts[:-1]:
            parent = parent[int(part) if isinstance(parent, list) else part]
        last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        if op["op"] == "remove":
            del parent[last]
        elif op["op"] == "add" and isinstance(parent, list):
            parent.insert(last, op["value"])
        else:
            assert op["op"] in ("add", "replace"), op
            parent[last] = op["value"]
    return document


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"a": 1}, {"a": 2}),
        ({"a": {"b": [1, 2]}, "gone": True}, {"a": {"b": [1, 3]}, "c/d~e": None}),
        ({"l": [1, 2]}, {"l": [1, 2, 3]}),
        ({"x": 1}, {"x": 1.0}),
        ({"x": True}, {"x": 1}),
        ({}, {}),
    ],
)
def test_a_json_patch_makes_the_old_state_the_new(old: Any, new: Any) -> None:
    patch = json_patch(old, new)
    out = applied(old, patch)
    assert json.dumps(out, sort_keys=True) == json.dumps(new, sort_keys=True)
    assert (patch == []) == (json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


async def test_context_reaches_the_model_for_that_run_only(store: SQLiteStore) -> None:
    model = ScriptedTransport([], then=Reply("ok"))
    agent = Agent("You help.", model)
    async with serving(app(agent, store)) as base, client(base) as http:
        context = [
            {"description": "The user's city", "value": "Oslo"},
            {"description": "Cart", "value": '{"items": 2}'},
        ]
        body = {"threadId": "c", "messages": [{"role": "user", "content": "hi"}]}
        await run(http, {**body, "context": context})
        system = model.requests[0].system
        assert system.startswith("You help.")
        assert "- The user's city: Oslo" in system and '- Cart: {"items": 2}' in system
        await run(http, body)
        assert model.requests[1].system == "You help."
        stored = json.dumps((await http.get("/api/sessions/c")).json())
        assert "Oslo" not in stored


@pytest.mark.parametrize(
    ("context", "status"),
    [
        ("Oslo", 400),
        ([{"value": "no description"}], 400),
        ([{"description": "big", "value": "x" * 40_000}], 413),
    ],
)
async def test_bad_context_is_refused(store: SQLiteStore, context: Any, status: int) -> None:
    model = ScriptedTransport([])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        body = {"messages": [{"role": "user", "content": "hi"}], "context": context}
        answer = await http.post("/agui", json=body)
        assert answer.status_code == status and "context" in answer.json()["error"]
    assert await store.sessions() == [] and model.requests == []


async def test_state_is_snapshot_changed_by_a_tool_and_kept_across_a_restart(
    store: SQLiteStore,
) -> None:
    seen.clear()
    script = [Reply(tool_calls=[Call("add_item", {"item": "b"})]), Reply("Added.")]
    start = {"items": ["a"], "draft": "x", "odd/key": 1}
    ask = {"threadId": "st", "messages": [{"role": "user", "content": "add b"}]}
    async with (
        serving(app(Agent("s", ScriptedTransport(script), tools=[add_item]), store)) as base,
        client(base) as http,
    ):
        events = await run(http, {**ask, "state": start})
        order = kinds(events)
        assert order[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
        assert events[1]["snapshot"] == start and seen == [start]  # the tool read it
        delta_at = order.index("STATE_DELTA")
        assert order[delta_at - 1] == "TOOL_CALL_RESULT" and order.count("STATE_DELTA") == 1
        after = applied(start, events[delta_at]["delta"])
        assert after == {"items": ["a", "b"], "count": 2, "odd/key": 1}
        listed = (await http.get("/api/sessions")).json()
        assert [s["id"] for s in listed] == ["st"]  # the state's own session is not listed

    script = [Reply(tool_calls=[Call("add_item", {"item": "c"})]), Reply("Added.")]
    async with (
        serving(app(Agent("s", ScriptedTransport(script), tools=[add_item]), store)) as base,
        client(base) as http,
    ):
        events = await run(http, {**ask, "state": {}})  # {}: the front end has none to give
        assert events[1] == {"type": "STATE_SNAPSHOT", "snapshot": after}
        assert seen[-1] == after
        delta = next(e["delta"] for e in events if e["type"] == "STATE_DELTA")
        assert applied(after, delta)["items"] == ["a", "b", "c"]
        assert (await http.delete("/api/sessions/st")).status_code == 204
        assert await store.sessions() == []  # its state went with it
    assert shared_state() is None  # outside a served run


async def test_a_run_without_state_sends_no_state_events(store: SQLiteStore) -> None:
    model = ScriptedTransport([Reply("hi")])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        events = await run(http, {"messages": [{"role": "user", "content": "hi"}]})
        assert not {"STATE_SNAPSHOT", "STATE_DELTA"} & set(kinds(events))


@pytest.mark.parametrize(
    ("state", "status"),
    [
        (b"[1, 2]", 400),
        (b'{"x": NaN}', 400),
        (b'{"x": "' + b"y" * 300_000 + b'"}', 413),
    ],
)
async def test_bad_state_is_refused(store: SQLiteStore, state: bytes, status: int) -> None:
    model = ScriptedTransport([])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        body = b'{"messages": [{"role": "user", "content": "hi"}], "state": ' + state + b"}"
        answer = await http.post(
            "/agui", content=body, headers={"content-type": "application/json"}
        )
        assert answer.status_code == status and "state" in answer.json()["error"]
    assert await store.sessions() == [] and model.requests == []


@pytest.mark.parametrize("kind", ["sqlite", "files"])
async def test_the_kept_state_stays_small_and_whole_when_a_rewrite_is_cut(
    tmp_path: Path, kind: str
) -> None:
    """The state's two hidden sessions hold at most ``_KEEP`` states each, on every store (a
    file store's position counts bytes: it is not a count of states); a save cut off between
    clearing one and appending to it (a process killed there) loses no state."""
    from tether.serve.shared_state import _KEEP, load_state, save_state, state_session
    from tether.stores import FileStore

    store = FileStore(tmp_path / "f") if kind == "files" else SQLiteStore(tmp_path / "s.db")
    hidden = (state_session("t"), state_session("t") + ".b")
    async with store:
        for n in range(3 * _KEEP + 3):
            await save_state(store, "t", {"n": n})
            sizes = [len(await store.history_of(h)) for h in hidden]
            assert max(sizes) <= _KEEP and await load_state(store, "t") == {"n": n}
        for n in range(3 * _KEEP + 3, 4 * _KEEP):  # both full: the next save clears the older
            await save_state(store, "t", {"n": n})
        assert [len(await store.history_of(h)) for h in hidden] == [_KEEP, _KEEP]
        older = min(hidden, key=lambda h: h.endswith(".b"))  # saves 1-16 and 33-48 went there
        await (await store.open(older)).clear()  # a save cut off just after its clear
        assert await load_state(store, "t") == {"n": 4 * _KEEP - 1}
        await save_state(store, "t", {"n": "after"})
        assert await load_state(store, "t") == {"n": "after"}
