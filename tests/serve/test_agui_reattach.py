"""A client that lost a run's stream attaches again (issue 40): ``GET /agui/{thread}/events``
with the last event id it read (``Last-Event-ID`` or ``?after=``) gets what it missed, then the
rest, each event once; after the run a clear 204; past the run's log cap a MESSAGES_SNAPSHOT
instead of the events dropped. Over real HTTP (uvicorn, httpx), clients leaving mid-stream."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from served import EVENT, ask, client, serving
from tether import Agent, tool
from tether.events import StreamEvent
from tether.messages import Message
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.types import ToolSpec

Seen = tuple[str, dict[str, Any]]  # an event's id and the event


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers (slowly)."""
    await asyncio.sleep(0.02)
    return a + b


class Slow:
    """A scripted model that takes a little while over each event, as a real one streams."""

    def __init__(self, inner: ScriptedTransport, delay: float = 0.002) -> None:
        self.inner = inner
        self.delay = delay

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        async for event in self.inner.stream(messages, tools, system):
            await asyncio.sleep(self.delay)
            yield event


def script(gate: asyncio.Event) -> ScriptedTransport:
    return ScriptedTransport(
        [
            Reply(
                "Adding " * 30,
                reasoning="sums " * 20,
                tool_calls=[Call("add", {"a": 2, "b": 3})],
                chunks=30,
            ),
            Reply("Once more " * 20, tool_calls=[Call("add", {"a": 1, "b": 1})], chunks=20),
            Hold(gate, Reply("They are 5 and 2. " * 10, chunks=30)),
        ]
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "chats.db") as opened:
        yield opened


async def with_ids(response: httpx.Response, quiet: float = 30) -> AsyncIterator[Seen]:
    """The events of an SSE response with their ids (each checked against the AG-UI types);
    ends after ``quiet`` seconds without a line."""
    assert response.status_code == 200, await response.aread()
    event_id, data = None, []
    lines = response.aiter_lines()
    while True:
        try:
            async with asyncio.timeout(quiet):
                line = await anext(lines)
        except (TimeoutError, StopAsyncIteration):
            return
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            event = json.loads("\n".join(data))
            EVENT.validate_python(event)
            assert event_id is not None, event
            yield event_id, event
            event_id, data = None, []


def ended(event: dict[str, Any]) -> bool:
    return event["type"] in ("RUN_FINISHED", "RUN_ERROR")


async def hopper(
    http: httpx.AsyncClient,
    thread: str,
    rng: random.Random,
    by_query: bool,
    hops: int,
    ready: asyncio.Queue[None],
) -> list[Seen]:
    """A client that leaves its stream at random points (after a few events, or a quiet
    moment) and attaches again from the last id it read; after ``hops`` times it stays."""
    got: list[Seen] = []
    done = 0
    while True:
        last = got[-1][0] if got else None
        headers = {"last-event-id": last} if last and not by_query else {}
        params = {"after": last} if last and by_query else {}
        staying = done >= hops
        async with http.stream(
            "GET", f"/agui/{thread}/events", headers=headers, params=params
        ) as response:
            if staying:
                ready.put_nowait(None)  # attached for good: the run may go on to its end
            take = rng.randint(1, 12)
            async for seen in with_ids(response, 30 if staying else 0.03):
                got.append(seen)
                take -= 1
                if ended(seen[1]) or (take == 0 and not staying):
                    break
        if got and ended(got[-1][1]):
            return got
        done += 1


async def test_clients_that_come_back_at_random_points_read_every_event_once(
    store: SQLiteStore,
) -> None:
    gate = asyncio.Event()
    agent = Agent("s", Slow(script(gate)), tools=[add])  # type: ignore[arg-type]
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    async with serving(app(agent, store)) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=ask("2 + 3, then 1 + 1?")) as response:
            stream = with_ids(response)
            first = await anext(stream)
            thread = first[1]["threadId"]
            ready: asyncio.Queue[None] = asyncio.Queue()
            clients = [
                asyncio.create_task(hopper(http, thread, rng, n % 2 == 1, 6, ready))
                for n in range(6)
            ]
            rest = asyncio.create_task(_all(stream))
            for _ in clients:  # every client attached for good before the run may end
                await asyncio.wait_for(ready.get(), 30)
            gate.set()
            whole = [first, *await rest]
        joined = await asyncio.gather(*clients)
        after = await http.get(f"/agui/{thread}/events")
        stored = (await http.get(f"/api/sessions/{thread}")).json()["messages"]

    assert ended(whole[-1][1]) and whole[-1][1]["type"] == "RUN_FINISHED"
    assert len({event_id for event_id, _ in whole}) == len(whole)  # one id per event
    for got in joined:
        assert got == whole, f"seed {seed}"  # what each client read, joined: the stream, once
    assert after.status_code == 204  # the run is over: nothing to attach to
    assert whole[-2][1] == {"type": "MESSAGES_SNAPSHOT", "messages": stored}


async def _all(stream: AsyncIterator[Seen]) -> list[Seen]:
    return [seen async for seen in stream]


async def test_a_bad_or_stale_event_id_gets_a_clear_answer(store: SQLiteStore) -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("done"))])
    async with serving(app(Agent("s", model), store)) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=ask("hi")) as response:
            stream = with_ids(response)
            started_id, started = await anext(stream)
            thread = started["threadId"]
            tag = started_id.split(".")[0]
            answers = {
                name: await http.get(f"/agui/{thread}/events", **how)  # type: ignore[arg-type]
                for name, how in {
                    "malformed": {"headers": {"last-event-id": f"{tag}.x"}},
                    "ahead": {"params": {"after": f"{tag}.99999"}},
                    "too long": {"headers": {"last-event-id": "x" * 500}},
                    "two cursors": {
                        "headers": {"last-event-id": f"{tag}.1"},
                        "params": {"after": f"{tag}.2"},
                    },
                    "another run": {"headers": {"last-event-id": "0badc0de.3"}},
                }.items()
            }
            nowhere = await http.get("/agui/0123456789abcdef/events")
            async with http.stream("GET", f"/agui/{thread}/events") as again:
                assert await anext(with_ids(again)) == (started_id, started)  # from its start
            gate.set()
            _ = [seen async for seen in stream]
        gone = await http.get(f"/agui/{thread}/events", headers={"last-event-id": started_id})
    for name in ("malformed", "ahead", "too long", "two cursors"):
        assert answers[name].status_code == 400, name
        assert "event" in answers[name].json()["error"], name
    assert answers["another run"].status_code == 204  # that run is over
    assert nowhere.status_code == 204  # no run under way there
    assert gone.status_code == 204 and gone.content == b""


async def test_past_the_log_cap_a_late_client_gets_a_snapshot_instead(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.serve import runs

    monkeypatch.setattr(runs, "LOG_BYTES", 2000)
    gate = asyncio.Event()
    agent = Agent("s", Slow(script(gate), 0), tools=[add])  # type: ignore[arg-type]
    served = app(agent, store)
    async with serving(served) as base, client(base) as http:
        async with http.stream("POST", "/agui", json=ask("go")) as response:
            stream = with_ids(response)
            whole = [await anext(stream)]
            thread = whole[0][1]["threadId"]
            while not (whole[-1][1]["type"] == "TOOL_CALL_RESULT" and len(whole) > 60):
                whole.append(await anext(stream))
            await asyncio.sleep(0.1)  # the held reply: nothing open, the log cut
            live = served.runs.get(thread)
            assert live is not None and live.first > 1 and live.kept <= 2000
            async with (
                http.stream("GET", f"/agui/{thread}/events") as fresh,
                http.stream(
                    "GET", f"/agui/{thread}/events", headers={"last-event-id": whole[0][0]}
                ) as stale,
            ):
                gate.set()
                whole += [seen async for seen in stream]
                late = [[seen async for seen in with_ids(r)] for r in (fresh, stale)]
        stored = (await http.get(f"/api/sessions/{thread}")).json()["messages"]
    for got in late:
        snapshot_id, snapshot = got[0]
        assert snapshot["type"] == "MESSAGES_SNAPSHOT"
        ids = [event_id for event_id, _ in whole]
        cut = ids.index(snapshot_id)  # it stands for every event up to its id
        assert got[1:] == whole[cut + 1 :]
        assert snapshot["messages"] == stored[: len(snapshot["messages"])]
        assert any(m["role"] == "tool" for m in snapshot["messages"])
