"""SQLiteStore keeps recently used histories in memory and reads only what was appended since;
another writer's appends, clears, deletes and re-creations of the same file are always seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Message
from tether.stores import SQLiteStore
from tether.stores.cache import HistoryCache
from tether.stores.sqlite import PAGE


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


@pytest.mark.parametrize("limit", [64 << 20, 10_000, 0])
async def test_a_cached_history_sees_everything_another_writer_did(
    tmp_path: Path, limit: int
) -> None:
    path = tmp_path / "chats.db"
    async with SQLiteStore(path, cache_bytes=limit) as mine, SQLiteStore(path) as other:
        reader, writer = await mine.open("s"), await other.open("s")
        expected: list[str] = []

        async def write(*words: str) -> None:
            for word in words:
                await writer.append(Message("user", word))
            expected.extend(words)

        await write("a", "b")
        assert texts(await reader.get_history()) == expected
        await write("c")  # a tail of one row
        assert texts(await reader.get_history()) == expected
        await write(*(f"n{i}" for i in range(PAGE + 10)))  # a tail across a page being packed
        assert texts(await reader.get_history()) == expected
        await writer.clear()
        expected.clear()
        await write("after clear")
        assert texts(await reader.get_history()) == expected
        await other.delete("s")
        assert await reader.get_history() == []
        again = await other.open("s")  # re-created, as long as before
        await again.append(Message("user", "new one"))
        assert texts(await reader.get_history()) == ["new one"]


async def test_my_own_appends_extend_the_cached_history(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "chats.db") as store:
        context = await store.open("s")
        for i in range(3 * PAGE):
            await context.append(Message("user", f"m{i}"))
            if i % 37 == 0:
                assert len(await context.get_history()) == i + 1
        history = await context.get_history()
        assert texts(history) == [f"m{i}" for i in range(3 * PAGE)]
        history.append(Message("user", "the caller's list is its own"))
        assert len(await context.get_history()) == 3 * PAGE


def test_the_cache_keeps_at_most_its_limit_least_recently_used_out() -> None:
    from tether.stores.cache import OVERHEAD

    unit = OVERHEAD + 100  # a message of 100 stored bytes
    cache = HistoryCache(5 * unit)
    one, two = [Message("user", "x")] * 3, [Message("user", "y")] * 2
    cache.put("a", 1.0, 0, one, 300)
    cache.put("b", 1.0, 0, two, 200)
    cache.extend("b", 2, Message("user", "z"), 100)  # would pass the limit: not kept
    assert len(cache.get("b").messages) == 2  # type: ignore[union-attr]
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", 1.0, 0, [Message("user", "w")], 100)  # 6 > 5: b goes (least recently used)
    assert cache.get("b") is None and cache.get("a") is not None
    cache.put("d", 1.0, 0, [Message("user", "v")], 6 * unit)  # larger than the whole cache
    assert cache.get("d") is None
    cache.extend("c", 0, Message("user", "not at its end"), 1)
    assert len(cache.get("c").messages) == 1  # type: ignore[union-attr]
    assert cache.size == 4 * unit
    cache.drop()
    assert cache.get("a") is None and cache.get("c") is None and cache.size == 0
