"""The store contract, run against every backend: durable appends in order, conflicts between
writers, sessions/fork/clear/retention, ids as data, many sessions at once, several processes on
one store, a call left open by a crash answered by the next run."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, CHILD_ENV, make

from tether import (
    Agent,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tether.stores import ConflictError
from tether.testing import Reply, ScriptedTransport


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


MIXED = [
    Message("user", [TextBlock("look"), ImageBlock("image/png", "iVBORw0KGgo=")]),
    Message(
        "assistant",
        [
            ReasoningBlock("hmm", "sig"),
            TextBlock("calling"),
            ToolUseBlock("c1", "f", {"x": [1, 2]}),
        ],
    ),
    Message("user", [ToolResultBlock("c1", "é ✓ done", False)]),
    Message("assistant", 'plain text is stored as it is:\n{"not": "json"} ✓'),
    Message("system", ""),
]


async def test_appends_are_kept_in_order_and_survive_a_new_store(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        context = await store.open("user-42")
        for message in MIXED:
            await context.append(message)
        assert await context.get_history() == MIXED
    async with make(kind, tmp_path) as again:
        assert await (await again.open("user-42")).get_history() == MIXED


async def test_a_long_history_loads_forks_clears_and_goes_on(kind: str, tmp_path: Path) -> None:
    long = [MIXED[i % len(MIXED)] for i in range(150)] + [
        Message("user", f"n{i}") for i in range(50)
    ]
    async with make(kind, tmp_path) as store:
        context = await store.open("long")
        for message in long:
            await context.append(message)
        assert await context.get_history() == long
        copy = await context.fork()
        await copy.append(Message("user", "only in the copy"))
        assert await copy.get_history() == [*long, Message("user", "only in the copy")]
        await context.clear()
        for message in long[:70]:
            await context.append(message)
    async with make(kind, tmp_path) as again:
        assert await (await again.open("long")).get_history() == long[:70]
        assert len(await (await again.open(copy.session_id)).get_history()) == len(long) + 1
        infos = {s.session_id: s.messages for s in await again.sessions()}
        assert infos == {"long": 70, copy.session_id: len(long) + 1}


async def test_two_writers_on_one_session_one_wins_and_nothing_is_lost(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        first, second = await store.open("s"), await store.open("s")
        await first.append(Message("user", "from first"))
        with pytest.raises(ConflictError, match="another writer"):
            await second.append(Message("user", "from second"))
        assert [m.text for m in await first.get_history()] == ["from first"]
        reopened = await store.open("s")  # reopening gives the current position
        await reopened.append(Message("user", "after"))
        assert [m.text for m in await second.get_history()] == ["from first", "after"]


async def test_concurrent_appends_at_once_all_win_or_one_conflicts(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        contexts = [await store.open("s") for _ in range(5)]
        outcomes = await asyncio.gather(
            *(c.append(Message("user", f"w{i}")) for i, c in enumerate(contexts)),
            return_exceptions=True,
        )
        won = [o for o in outcomes if o is None]
        assert len(won) == 1 and all(isinstance(o, ConflictError) for o in outcomes if o)
        assert len(await contexts[0].get_history()) == 1


async def test_many_sessions_appending_at_once_share_commits(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        contexts = [await store.open(f"s{i}") for i in range(100)]

        async def talk(i: int) -> None:
            for n in range(20):
                await contexts[i].append(Message("user", f"{i}:{n}"))

        await asyncio.gather(*(talk(i) for i in range(100)))
        for i in (0, 57, 99):
            assert [m.text for m in await contexts[i].get_history()] == [
                f"{i}:{n}" for n in range(20)
            ]
        infos = {s.session_id: s for s in await store.sessions()}
        assert len(infos) == 100 and all(s.messages == 20 for s in infos.values())


async def test_sessions_delete_fork_clear_and_retention(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        a = await store.open("a")
        await a.append(Message("user", "one"))
        await a.append(Message("assistant", "two"))
        copy = await a.fork()
        assert copy.session_id != "a"
        await copy.append(Message("user", "only in the copy"))
        assert len(await a.get_history()) == 2 and len(await copy.get_history()) == 3
        (info,) = [s for s in await store.sessions() if s.session_id == "a"]
        assert info.messages == 2 and info.created <= info.updated
        await a.clear()
        assert await a.get_history() == []
        await a.append(Message("user", "again"))  # a cleared session goes on
        assert [m.text for m in await a.get_history()] == ["again"]
        assert await store.delete("a") is True and await store.delete("a") is False
        assert "a" not in {s.session_id for s in await store.sessions()}
        assert await store.delete_older_than(3600) == 0
        assert await store.delete_older_than(-1) == 1  # everything is older than the future
        assert await store.sessions() == []


async def test_session_ids_are_data_never_sql(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        nasty = "x'); DROP TABLE tether_messages; --"
        context = await store.open(nasty)
        await context.append(Message("user", "still here"))
        assert [s.session_id for s in await store.sessions()] == [nasty]
        for bad in ("", "a\x00b", "line\nbreak", "x" * 300):
            with pytest.raises(ValueError, match="session id"):
                await store.open(bad)
        with pytest.raises(TypeError):
            await store.open(42)  # type: ignore[arg-type]


async def test_data_from_a_newer_tether_is_refused(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        await (await store.open("s")).append(Message("user", "hi"))
        await _mark_newer(kind, store, tmp_path)
    with pytest.raises(RuntimeError, match="newer tether"):
        async with make(kind, tmp_path) as again:
            await again.open("s")


async def _mark_newer(kind: str, store: Any, place: Path) -> None:
    """Make the stored schema (or file format) one this tether does not know."""
    if kind == "sqlite":
        with sqlite3.connect(place / "chats.db") as raw:
            raw.execute("UPDATE tether_meta SET value = '99' WHERE key = 'schema'")
    elif kind == "file":
        (path,) = (place / "chats").iterdir()
        lines = path.read_text().splitlines(keepends=True)
        header = json.loads(lines[0])
        path.write_text(json.dumps({**header, "tether": 99}) + "\n" + "".join(lines[1:]))
    elif kind == "postgres":
        pool = await store._ready()
        async with pool.connection() as connection:
            await connection.execute(
                f"UPDATE {store.schema}.meta SET value = '99' WHERE key = 'schema'"
            )
    else:
        await (await store._redis()).hset(f"{store.prefix}:meta", "schema", 99)


async def test_a_run_on_a_stored_session_and_a_call_left_open_is_answered(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        context = await store.open("run")
        await context.append(Message("user", "go"))
        await context.append(Message("assistant", [ToolUseBlock("c9", "f", {})]))  # then a crash
        agent = Agent("s", ScriptedTransport([Reply("resumed")]))
        assert await agent.run("again", await store.open("run")) == "resumed"
    async with make(kind, tmp_path) as store:
        history = await (await store.open("run")).get_history()
    (result,) = history[2].tool_results
    assert result.tool_use_id == "c9" and result.is_error
    assert [m.role for m in history] == ["user", "assistant", "user", "user", "assistant"]


async def test_cancelled_appends_leave_the_store_usable(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        context = await store.open("s")
        task = asyncio.ensure_future(context.append(Message("user", "maybe")))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        fresh = await store.open("s")
        await fresh.append(Message("user", "surely"))
        texts = [m.text for m in await fresh.get_history()]
        assert texts[-1] == "surely" and texts in (["surely"], ["maybe", "surely"])


async def test_a_cancelled_file_append_has_landed_or_not_when_the_cancel_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from tether.stores import FileStore

    written = FileStore._append
    began, release = threading.Event(), threading.Event()

    def held_append(self: FileStore, *args: Any) -> int:
        began.set()
        release.wait(10)  # the write is still going in its thread when the caller is cancelled
        return written(self, *args)

    def release_unless_ended() -> None:  # the cancel has reached the task: is it still waiting?
        if not task.done():
            release.set()

    monkeypatch.setattr(FileStore, "_append", held_append)
    store = FileStore(tmp_path)
    context = await store.open("s")
    task = asyncio.ensure_future(context.append(Message("user", "maybe")))
    try:
        await asyncio.to_thread(began.wait, 10)
        task.cancel()
        asyncio.get_running_loop().call_soon(release_unless_ended)
        await asyncio.gather(task, return_exceptions=True)
        fresh = await store.open("s")
        await fresh.append(Message("user", "surely"))  # a write still going would conflict here
        assert [m.text for m in await fresh.get_history()] == ["maybe", "surely"]
    finally:
        release.set()


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from tether import Message
    from backends import make

    async def main(kind, path, name, count):
        async with make(kind, path) as store:
            contexts = [await store.open(f"{name}-{i}") for i in range(5)]
            for n in range(count):
                await asyncio.gather(*(c.append(Message("user", str(n))) for c in contexts))

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    """
)


def test_several_processes_write_one_store_at_once(kind: str, tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, kind, str(tmp_path), f"p{i}", "60"],
            cwd=Path(__file__).parent,
            env=CHILD_ENV,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors  # no "database is locked" either

    async def counts() -> dict[str, int]:
        async with make(kind, tmp_path) as store:
            return {s.session_id: s.messages for s in await store.sessions()}

    found = asyncio.run(counts())
    assert len(found) == 20 and set(found.values()) == {60}
