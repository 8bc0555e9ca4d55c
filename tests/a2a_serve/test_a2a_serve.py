"""``tether.serve.a2a_app`` over real HTTP with the real ``a2a-sdk`` client: the card, send,
stream, get, cancel, subscribe, approvals as ``input-required`` tasks, replayed messages, and
what the client may not do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import CancelTaskRequest, SubscribeToTaskRequest
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_served import (
    Served,
    a2a_client,
    artifact_text,
    as_dict,
    events_of,
    load_script,
    served_in_thread,
    state_of,
    task_of,
    user_message,
)
from google.protobuf.json_format import MessageToDict

from tether.serve import a2a_app
from tether.stores import SQLiteStore
from waiting import until

COMPLETED, WORKING = "TASK_STATE_COMPLETED", "TASK_STATE_WORKING"
INPUT, CANCELED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    namespace = load_script()
    store = SQLiteStore(tmp_path_factory.mktemp("a2a") / "tasks.db")
    with served_in_thread(a2a_app(namespace["agent"], store), namespace, store) as served:
        served.namespace["db"] = store.path
        yield served


def ran(server: Served) -> list[tuple[Any, ...]]:
    return list(server.namespace["ran"])


async def test_the_card_names_the_agent_its_tools_and_both_bindings(server: Served) -> None:
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, server.base).get_agent_card()  # the SDK's own parse
    assert card.name == "helper" and card.description and card.version
    assert card.capabilities.streaming
    assert {i.protocol_binding for i in card.supported_interfaces} == {"JSONRPC", "HTTP+JSON"}
    assert {i.url for i in card.supported_interfaces} == {f"{server.base}/a2a"}
    assert {i.protocol_version for i in card.supported_interfaces} == {"1.0"}
    assert {s.id for s in card.skills} == {"add", "delete_file", "wait_for"}
    assert all(s.description and s.tags for s in card.skills)
    assert not card.security_schemes and not card.security_requirements
    assert "text/plain" in card.default_input_modes


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_send_answers_with_the_finished_task(server: Served, binding: str) -> None:
    async with a2a_client(server.base, streaming=False, binding=binding) as client:
        [only] = await events_of(client, user_message("hi"))
        task = only["task"]
        assert task["status"]["state"] == COMPLETED
        assert artifact_text(task) == ["Hello there: hi"]
        said = task["status"]["message"]
        assert said["role"] == "ROLE_AGENT" and said["parts"][0]["text"] == "Hello there: hi"
        again = await task_of(client, task["id"])
        assert again["status"]["state"] == COMPLETED
        assert again["contextId"] == task["contextId"]
        assert artifact_text(again) == ["Hello there: hi"]  # one whole part, not the deltas
        assert len(again["artifacts"][0]["parts"]) == 1


async def test_stream_gives_status_and_artifacts_in_order(server: Served) -> None:
    async with a2a_client(server.base) as client:
        events = await events_of(client, user_message("add them"))
    assert "task" in events[0] and events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert state_of(events[1]) == WORKING
    assert state_of(events[-1]) == COMPLETED
    kinds = [next(iter(e)) for e in events]
    assert set(kinds) == {"task", "statusUpdate", "artifactUpdate"}
    notes = [
        e["statusUpdate"]["status"]["message"]["parts"][1]["data"]
        for e in events
        if "statusUpdate" in e
        and len(e["statusUpdate"]["status"].get("message", {}).get("parts", [])) == 2
    ]
    assert notes[0]["toolCall"]["name"] == "add" and notes[0]["toolCall"]["input"] == {
        "a": 2,
        "b": 3,
    }
    assert notes[1]["toolResult"]["content"] == "5" and not notes[1]["toolResult"]["isError"]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    first = [c for c in chunks if c["artifact"]["artifactId"] == "text-1"]
    assert first[0].get("append") is not True and first[-1]["lastChunk"] is True
    assert first[-1]["artifact"]["parts"][0]["text"] == "Adding."
    last = [c for c in chunks if c["artifact"]["artifactId"] == "text-2"]
    assert len(last) == 3 and last[1]["append"] is True  # two deltas, then the whole text
    assert last[-1]["artifact"]["parts"][0]["text"] == "done: 5"
    order = [i for i, e in enumerate(events) if "artifactUpdate" in e or "statusUpdate" in e]
    assert order == sorted(order)
    call_at = next(i for i, e in enumerate(events) if "toolCall" in str(e))
    result_at = next(i for i, e in enumerate(events) if "toolResult" in str(e))
    done_at = next(i for i, e in enumerate(events) if "done: 5" in str(e))
    assert call_at < result_at < done_at


async def first_working(client: Any, request: Any) -> tuple[Any, dict[str, Any]]:
    """Start ``request``'s stream; return it and its task once it is working."""
    stream = client.send_message(request)
    task = as_dict(await anext(stream))["task"]
    assert state_of(as_dict(await anext(stream))) == WORKING
    return stream, task


async def test_cancel_stops_the_run_and_every_call_has_a_result(server: Served) -> None:
    async with a2a_client(server.base) as client:
        stream, task = await first_working(client, user_message("wait forever"))
        rest = asyncio.ensure_future(_drain(stream))
        await until(lambda: ("wait_for", "forever") in ran(server), "the tool starting")
        cancelled = MessageToDict(await client.cancel_task(CancelTaskRequest(id=task["id"])))
        assert cancelled["status"]["state"] == CANCELED, cancelled["status"]["message"]
        assert (await task_of(client, task["id"]))["status"]["state"] == CANCELED
        await asyncio.wait_for(rest, 10)
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task["id"]))
    history = await _history(server, task["contextId"])
    calls = [b.id for m in history for b in m.tool_uses]
    results = [b.tool_use_id for m in history for b in m.tool_results]
    assert calls and sorted(calls) == sorted(results)


async def _drain(stream: Any) -> list[dict[str, Any]]:
    return [as_dict(e) async for e in stream]


async def _history(server: Served, session: str) -> list[Any]:
    async with SQLiteStore(server.namespace["db"]) as store:
        return await store.history_of(session)


async def test_subscribe_gives_the_task_then_the_rest(server: Served) -> None:
    async with a2a_client(server.base) as client:
        stream, task = await first_working(client, user_message("hold sub"))
        first = asyncio.ensure_future(_drain(stream))
        seen = client.subscribe(SubscribeToTaskRequest(id=task["id"]))
        now = as_dict(await anext(seen))
        assert now["task"]["id"] == task["id"] and now["task"]["status"]["state"] == WORKING
        server.open_gate("sub")
        rest = await _drain(seen)
        assert state_of(rest[-1]) == COMPLETED
        assert "held, then said" in str(rest)
        assert state_of((await first)[-1]) == COMPLETED


async def test_a_client_that_leaves_mid_stream_cancels_nothing(server: Served) -> None:
    async with a2a_client(server.base) as client:
        stream, task = await first_working(client, user_message("hold leave"))
        await stream.aclose()  # the client goes away mid-run
    server.open_gate("leave")
    async with a2a_client(server.base) as client:
        for _ in range(500):
            done = await task_of(client, task["id"])
            if done["status"]["state"] != WORKING:
                break
            await asyncio.sleep(0.02)
    assert done["status"]["state"] == COMPLETED
    assert artifact_text(done) == ["held, then said"]


async def test_a_held_call_is_input_required_and_approved(server: Served) -> None:
    async with a2a_client(server.base) as client:
        events = await events_of(client, user_message("delete a.txt"))
        asked = events[-1]["statusUpdate"]
        assert asked["status"]["state"] == INPUT
        parts = asked["status"]["message"]["parts"]
        [held] = parts[1]["data"]["pending"]
        assert held["name"] == "delete_file" and held["input"] == {"path": "a.txt"}
        assert "approve" in parts[0]["text"] and held["id"] in parts[0]["text"]
        assert ("delete_file", "a.txt") not in ran(server)
        follow = user_message("approve", task=asked["taskId"], context=asked["contextId"])
        done = await events_of(client, follow)
        assert state_of(done[-1]) == COMPLETED
        assert ("delete_file", "a.txt") in ran(server)
        assert "done: deleted a.txt" in str(done)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"text": "deny: not that file"}, "not that file"),
        ({"data": {"approved": False, "reason": "no"}}, "no"),
    ],
)
async def test_a_held_call_is_denied(server: Served, answer: dict[str, Any], reason: str) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        [asked] = await events_of(client, user_message("delete b.txt"))
        task = asked["task"]
        assert task["status"]["state"] == INPUT
        follow = user_message(answer.get("text"), data=answer.get("data"), task=task["id"])
        [done] = await events_of(client, follow)
        assert done["task"]["status"]["state"] == COMPLETED
        assert ("delete_file", "b.txt") not in ran(server)
        assert f"Tool call denied: {reason}" in str(done)


async def test_several_held_calls_are_decided_one_by_one(server: Served) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        [asked] = await events_of(client, user_message("delete c.txt d.txt"))
        task = asked["task"]
        held = task["status"]["message"]["parts"][1]["data"]["pending"]
        ids = {call["input"]["path"]: call["id"] for call in held}
        decisions = {ids["c.txt"]: {"approved": True}, ids["d.txt"]: {"approved": False}}
        follow = user_message(data={"decisions": decisions}, task=task["id"])
        [done] = await events_of(client, follow)
        assert done["task"]["status"]["state"] == COMPLETED
        assert ("delete_file", "c.txt") in ran(server)
        assert ("delete_file", "d.txt") not in ran(server)


@pytest.mark.parametrize(
    "answer",
    [{"text": "maybe"}, {"data": {"approved": "yes"}}, {"data": {"decisions": {"nope": {}}}}],
)
async def test_anything_else_on_an_input_required_task_runs_nothing(
    server: Served, answer: dict[str, Any]
) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        [asked] = await events_of(client, user_message("delete e.txt"))
        task = asked["task"]
        follow = user_message(answer.get("text"), data=answer.get("data"), task=task["id"])
        with pytest.raises(InvalidParamsError, match=r"approve.*deny|decision|held call"):
            await events_of(client, follow)
        still = await task_of(client, task["id"])
        assert still["status"]["state"] == INPUT
        assert ("delete_file", "e.txt") not in ran(server)
        with pytest.raises(UnsupportedOperationError, match="calls wait for approval"):
            await events_of(client, user_message("hi", context=task["contextId"]))


async def test_cancelling_an_input_required_task_denies_its_calls(server: Served) -> None:
    """A task waiting for approval, cancelled: its held calls are denied and stored so, nothing
    runs, and the context takes new messages again."""
    async with a2a_client(server.base, streaming=False) as client:
        [asked] = await events_of(client, user_message("delete f.txt"))
        task = asked["task"]
        assert task["status"]["state"] == INPUT
        cancelled = MessageToDict(await client.cancel_task(CancelTaskRequest(id=task["id"])))
        assert cancelled["status"]["state"] == CANCELED
        assert ("delete_file", "f.txt") not in ran(server)
        history = await _history(server, task["contextId"])
        results = [b for m in history for b in m.tool_results]
        assert [b.is_error for b in results] == [True] and "canceled" in results[0].text
        [again] = await events_of(client, user_message("hi", context=task["contextId"]))
        assert again["task"]["status"]["state"] == COMPLETED


async def test_a_replayed_message_runs_nothing_again(server: Served) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        [first] = await events_of(client, user_message("add once", message_id="m-replayed"))
        count = len(ran(server))
        [again] = await events_of(client, user_message("add once", message_id="m-replayed"))
        assert again["task"]["id"] == first["task"]["id"]
        assert len(ran(server)) == count
    async with a2a_client(server.base) as client:  # streamed, the same
        [streamed] = await events_of(client, user_message("add once", message_id="m-replayed"))
        assert streamed["task"]["id"] == first["task"]["id"]
        assert len(ran(server)) == count


async def test_a_failed_run_is_a_failed_task_with_the_error(server: Served) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        [failed] = await events_of(client, user_message("fail now"))
    status = failed["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert "the model broke" in status["message"]["parts"][0]["text"]


async def test_an_unknown_task_is_not_found(server: Served) -> None:
    async with a2a_client(server.base) as client:
        with pytest.raises(TaskNotFoundError):
            await task_of(client, "no-such-task")
    async with httpx.AsyncClient(base_url=server.base) as http:
        rest = await http.get("/a2a/tasks/no-such-task", headers={"A2A-Version": "1.0"})
        assert rest.status_code == 404
        rpc = await http.post(
            "/a2a",
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            headers={"A2A-Version": "1.0"},
        )
        assert rpc.json()["error"]["code"] == -32001


@pytest.mark.parametrize("context", ["a2a-task:x", "a2a-message:m", "tether-state:abc"])
async def test_a_context_may_not_name_the_servers_own_records(server: Served, context: str) -> None:
    async with a2a_client(server.base, streaming=False) as client:
        with pytest.raises(InvalidParamsError, match="may not begin with"):
            await events_of(client, user_message("add", context=context))
    assert await _history(server, context) == []


async def test_hostile_requests_get_clear_errors(server: Served) -> None:
    headers = {"A2A-Version": "1.0", "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=server.base, timeout=30) as http:
        huge = await http.post("/a2a", content=b"[" * (2 << 20), headers=headers)
        assert huge.status_code == 413 and "over" in huge.json()["error"]

        async def chunked() -> Any:
            for _ in range(40):
                yield b" " * 65536

        streamed = await http.post("/a2a", content=chunked(), headers=headers)
        assert streamed.status_code == 413
        bad = await http.post("/a2a", content=b'{"jsonrpc": "2.0", "id": 1, "meth', headers=headers)
        assert bad.json()["error"]["code"] == -32700
        unknown = await http.post(
            "/a2a",
            json={"jsonrpc": "2.0", "id": 2, "method": "Explode", "params": {}},
            headers=headers,
        )
        assert unknown.json()["error"]["code"] == -32601
        deep = await http.post("/a2a", content=b"[" * 100_000 + b"]" * 100_000, headers=headers)
        assert deep.status_code in (200, 400) and "error" in deep.json()
        alive = await http.get("/.well-known/agent-card.json")
        assert alive.status_code == 200


async def test_a_token_is_required_but_the_card_is_public(tmp_path: Path) -> None:
    namespace = load_script()
    token = "t" * 24
    store = SQLiteStore(tmp_path / "t.db")
    with served_in_thread(a2a_app(namespace["agent"], store, token), namespace, store) as served:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, served.base).get_agent_card()
        [scheme] = card.security_schemes.values()
        assert scheme.http_auth_security_scheme.scheme == "Bearer"
        assert list(card.security_requirements[0].schemes) == list(card.security_schemes)
        async with a2a_client(served.base, streaming=False) as client:
            with pytest.raises(A2AClientError, match=r"401|token"):
                await events_of(client, user_message("hi"))
        async with a2a_client(served.base, streaming=False, token=token) as client:
            [answered] = await events_of(client, user_message("hi"))
            assert answered["task"]["status"]["state"] == COMPLETED
        assert token not in str(card)
        async with httpx.AsyncClient(base_url=served.base) as http:
            for path in ("/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"):
                assert (await http.get(path)).json()["name"] == "helper"
            assert (
                await http.get("/a2a/tasks/x", headers={"A2A-Version": "1.0"})
            ).status_code == 401
            assert (await http.post("/.well-known/agent-card.json")).status_code in (401, 405)
