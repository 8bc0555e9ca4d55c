"""Stores under faults and bad input: a full disk, messages a store could not read back, a stale
writer's clear, retention racing appends, damaged records, a bounded cache. Each case was a
way to lose an acknowledged message or to break a whole store."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, make

from tether import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tether.stores import ConflictError, FileStore, SQLiteStore, StoreDamagedError


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


SRC = Path(__file__).parents[2] / "src"


def session_files(place: Path) -> list[Path]:
    """The session files of a FileStore directory."""
    return sorted(place.glob("*.jsonl"))


# -- a full disk -------------------------------------------------------------------------------

_FULL_DISK = textwrap.dedent(
    """
    import asyncio, resource, signal, sys
    from tether import Message
    from tether.stores import FileStore

    async def main(place, limit):
        async with FileStore(place) as store:
            context = await store.open("full")
            await context.append(Message("user", "fits"))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            try:
                await context.append(Message("assistant", "x" * 5000))
            except OSError as exc:
                print("RAISED", type(exc).__name__)
            else:
                print("ACKNOWLEDGED")

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def test_a_file_store_on_a_full_disk_raises_instead_of_losing_the_message(tmp_path: Path) -> None:
    place = tmp_path / "chats"
    # the limit cuts the second append half-way: a short write, as a filling disk makes one
    size_after_first = 0

    async def measure() -> int:
        async with FileStore(tmp_path / "measure") as store:
            context = await store.open("full")
            await context.append(Message("user", "fits"))
        (path,) = (tmp_path / "measure").glob("*.jsonl")
        return path.stat().st_size

    size_after_first = asyncio.run(measure())
    limit = size_after_first + 1000
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(place), str(limit)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "RAISED OSError", done.stdout + done.stderr
    (path,) = place.glob("*.jsonl")
    assert path.read_bytes().endswith(b"\n")  # no half line left behind

    async def reopen() -> list[Message]:
        async with FileStore(place) as store:
            context = await store.open("full")
            await context.append(Message("user", "later"))
            return await context.get_history()

    assert [m.text for m in asyncio.run(reopen())] == ["fits", "later"]


_SQLITE_FULL_DISK = textwrap.dedent(
    """
    import asyncio, os, resource, signal, sys
    from tether import Message
    from tether.stores import SQLiteStore

    async def main(path):
        async with SQLiteStore(path) as store:
            context = await store.open("full")
            await context.append(Message("user", "fits"))
            size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
            resource.setrlimit(resource.RLIMIT_FSIZE, (size + 4096, size + 4096))
            outcomes = []
            for n in range(20):
                try:
                    await context.append(Message("assistant", f"{n}" + "x" * 20000))
                    outcomes.append(f"ACK {n}")
                except OSError as exc:
                    outcomes.append(f"RAISED {type(exc).__name__}")
            print(" ".join(outcomes))

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    asyncio.run(main(sys.argv[1]))
    """
)


def test_sqlite_on_a_full_disk_raises_an_os_error_and_keeps_what_it_acknowledged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.db"
    done = subprocess.run(
        [sys.executable, "-c", _SQLITE_FULL_DISK, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
        check=False,
    )
    words = done.stdout.split()
    assert done.returncode == 0 and "RAISED" in words, done.stdout + done.stderr
    assert set(done.stdout.replace("RAISED OSError", "").split()) <= {"ACK", *map(str, range(20))}
    acknowledged = [int(w) for a, w in itertools.pairwise(words) if a == "ACK"]

    async def reopen() -> list[str]:
        async with SQLiteStore(path) as store:
            context = await store.open("full")
            await context.append(Message("user", "later"))
            return [m.text[:2].rstrip("x") for m in await context.get_history()]

    texts = asyncio.run(reopen())
    assert texts[0] == "fi" and texts[-1] == "la"
    assert [int(t) for t in texts[1:-1]] == acknowledged


async def test_a_short_write_is_continued_never_taken_for_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write

    def short(fd: int, data: Any) -> int:
        return real_write(fd, bytes(data)[: max(1, len(data) // 3)])

    async with FileStore(tmp_path) as store:
        context = await store.open("short")
        monkeypatch.setattr(os, "write", short)
        await context.append(Message("user", "a message written in several pieces"))
        await context.append(Message("assistant", "and another"))
        monkeypatch.undo()
        assert [m.text for m in await context.get_history()] == [
            "a message written in several pieces",
            "and another",
        ]


# -- what a store cannot read back is refused before anything is written ------------------------

BAD_VALUES: list[Any] = [None, 123, b"bytes", {"a": 1}, ["list"]]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda b: type(b).__name__)
def test_a_block_with_a_wrongly_typed_field_cannot_be_built(bad: Any) -> None:
    from tether import ImageBlock, ReasoningBlock

    builds = [
        lambda: TextBlock(bad),
        lambda: ToolResultBlock(bad, "x"),
        lambda: ToolResultBlock("c1", "x", is_error=bad),
        lambda: ToolUseBlock(bad, "f", {}),
        lambda: ToolUseBlock("c1", bad, {}),
        lambda: ImageBlock(bad, url="https://example.org/a.png"),
        lambda: ReasoningBlock(bad),
        lambda: Message("user", [bad]),
        lambda: Message("user", [TextBlock("ok"), bad]),
    ]
    if not isinstance(bad, dict | str):
        builds.append(lambda: ToolUseBlock("c1", "f", bad))
    if bad is not None:
        builds.append(lambda: ToolResultBlock("c1", bad))
    for build in builds:
        with pytest.raises(TypeError):
            build()


async def test_a_message_that_cannot_be_stored_is_refused_and_the_session_goes_on(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        context = await store.open("bad")
        await context.append(Message("user", "before"))
        unstorable = Message("assistant", [ToolUseBlock("c1", "f", {"when": {1, 2}})])
        with pytest.raises(TypeError, match="JSON"):
            await context.append(unstorable)
        await context.append(Message("user", "after"))
    async with make(kind, tmp_path) as again:
        history = await (await again.open("bad")).get_history()
    assert [m.text for m in history] == ["before", "after"]


async def test_text_with_a_lone_surrogate_is_stored_and_read_back(
    kind: str, tmp_path: Path
) -> None:
    odd = Message("assistant", "half a pair: \ud800 and on")
    async with make(kind, tmp_path) as store:
        context = await store.open("surrogate")
        await context.append(odd)
        await context.append(Message("user", "next"))
    async with make(kind, tmp_path) as again:
        assert await (await again.open("surrogate")).get_history() == [odd, Message("user", "next")]


# -- clear is a positioned write ---------------------------------------------------------------


async def test_a_stale_writer_cannot_clear_what_it_never_saw(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        stale = await store.open("c")
        fresh = await store.open("c")
        await fresh.append(Message("user", "unseen by the stale writer"))
        with pytest.raises(ConflictError):
            await stale.clear()
        assert [m.text for m in await fresh.get_history()] == ["unseen by the stale writer"]


async def test_after_a_clear_a_writer_that_knew_the_old_session_conflicts(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        one = await store.open("d")
        await one.append(Message("assistant", [ToolUseBlock("c1", "f", {})]))
        two = await store.open("d")
        await one.clear()
        with pytest.raises(ConflictError):
            await two.append(Message("user", [ToolResultBlock("c1", "late")]))
        assert await one.get_history() == []
        await one.append(Message("user", "fresh start"))
        assert [m.text for m in await one.get_history()] == ["fresh start"]
    async with make(kind, tmp_path) as again:
        context = await again.open("d")
        assert [m.text for m in await context.get_history()] == ["fresh start"]
        await context.append(Message("user", "goes on"))


# -- retention never deletes a session that became active -------------------------------------


async def test_retention_never_deletes_an_acknowledged_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    old = time.time() - 1000
    async with FileStore(tmp_path) as store:
        monkeypatch.setattr(time, "time", lambda: old)  # sessions made long ago
        contexts = [await store.open(f"s{i}") for i in range(120)]
        for context in contexts:
            await context.append(Message("user", "old"))
        monkeypatch.undo()
        for path in session_files(tmp_path):
            os.utime(path, (old, old))
        acknowledged: list[str] = []

        async def append_to_each() -> None:
            for context in reversed(contexts):  # meets retention half-way
                try:
                    await context.append(Message("user", "new"))
                except ConflictError:
                    continue  # deleted first: refused, never acknowledged
                acknowledged.append(context.session_id)

        _, gone = await asyncio.gather(append_to_each(), store.delete_older_than(500))
        assert acknowledged and gone
        for context in contexts:
            texts = [m.text for m in await context.get_history()]
            if context.session_id in acknowledged:
                assert texts[-1:] == ["new"], context.session_id


async def test_an_append_waiting_on_a_deleted_session_conflicts(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        context = await store.open("gone")
        await context.append(Message("user", "one"))
        await store.delete("gone")
        with pytest.raises(ConflictError, match="deleted"):
            await context.append(Message("user", "lost?"))
        assert not session_files(tmp_path)  # nothing left half-created
        assert await context.get_history() == []


# -- damage stays where it is -----------------------------------------------------------------


async def test_a_damaged_line_is_a_typed_error_naming_session_and_position(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        context = await store.open("damaged")
        for i in range(4):
            await context.append(Message("user", f"m{i}"))
        other = await store.open("fine")
        await other.append(Message("user", "untouched"))
    (path,) = [p for p in session_files(tmp_path) if b'"damaged"' in p.read_bytes()]
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"role": "user", "content": [{"type": "te'
    path.write_bytes(b"\n".join(lines))
    async with FileStore(tmp_path) as store:
        with pytest.raises(StoreDamagedError) as caught:
            await (await store.open("damaged")).get_history()
        assert caught.value.session_id == "damaged" and caught.value.position == 2
        assert "damaged" in str(caught.value) and "2" in str(caught.value)
        assert [m.text for m in await (await store.open("fine")).get_history()] == ["untouched"]
        assert {s.session_id for s in await store.sessions()} == {"damaged", "fine"}


async def test_a_stray_file_breaks_neither_listing_nor_retention(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        await (await store.open("real")).append(Message("user", "kept"))
        (tmp_path / ("0" * 40 + ".jsonl")).write_bytes(b"not json at all\n")
        (tmp_path / ("1" * 40 + ".jsonl")).write_bytes(b'["a list"]\n')
        (tmp_path / ("2" * 40 + ".jsonl")).write_bytes(b'{"session_id": 5}\n')
        assert [s.session_id for s in await store.sessions()] == ["real"]
        assert await store.delete_older_than(3600) == 0
        assert await store.delete_older_than(-1) == 1  # the real one; strays are not ours


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE tether_messages SET body = '{not json' WHERE position = 1",
        "UPDATE tether_messages SET format = 7 WHERE position = 1",
        "UPDATE tether_messages SET role = 'robot' WHERE position = 1",
        'UPDATE tether_messages SET body = \'{"role": "user"}\' WHERE position = 1',
    ],
)
async def test_a_damaged_sqlite_row_is_a_typed_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as store:
        context = await store.open("rows")
        await context.append(Message("user", "zero"))
        await context.append(Message("assistant", [TextBlock("one"), TextBlock("!")]))
        await (await store.open("other")).append(Message("user", "fine"))
    with sqlite3.connect(path) as raw:
        raw.execute(damage)
    async with SQLiteStore(path) as store:
        with pytest.raises(StoreDamagedError) as caught:
            await (await store.open("rows")).get_history()
        assert (caught.value.session_id, caught.value.position) == ("rows", 1)
        assert [m.text for m in await (await store.open("other")).get_history()] == ["fine"]


async def test_a_damaged_sqlite_page_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path) as store:
        context = await store.open("paged")
        for i in range(70):
            await context.append(Message("user", f"m{i}"))
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE tether_pages SET body = json_array('uU', json_array('a'))")
    async with SQLiteStore(path) as store:
        with pytest.raises(StoreDamagedError) as caught:
            await (await store.open("paged")).get_history()
        assert caught.value.session_id == "paged" and caught.value.position == 0


async def test_the_sqlite_cache_is_bounded_in_bytes(tmp_path: Path) -> None:
    big = "x" * 1_000_000
    async with SQLiteStore(tmp_path / "c.db", cache_bytes=3_000_000) as store:
        for n in range(6):
            context = await store.open(f"big{n}")
            await context.append(Message("user", big))
            await context.append(Message("assistant", big))
            assert len(await context.get_history()) == 2
        assert store._cache.size <= 3_000_000
