"""Context stores: the protocol and the in-memory store."""

from __future__ import annotations

from tether import ContextStore, MemoryContextStore, Message


async def test_memory_store_appends_and_reads_in_order() -> None:
    store = MemoryContextStore()
    await store.append(Message("user", "a"))
    await store.append(Message("assistant", "b"))
    history = await store.get_history()
    assert [m.text for m in history] == ["a", "b"]
    history.append(Message("user", "c"))  # the caller's copy; the store is unchanged
    assert len(await store.get_history()) == 2
    assert len(store) == 2


async def test_fork_is_independent_and_has_a_new_session_id() -> None:
    store = MemoryContextStore([Message("user", "a")], session_id="s1")
    fork = await store.fork()
    await fork.append(Message("assistant", "b"))
    assert store.session_id == "s1"
    assert fork.session_id != "s1"
    assert [m.text for m in await store.get_history()] == ["a"]
    assert [m.text for m in await fork.get_history()] == ["a", "b"]


async def test_clear_and_session_id_is_stable() -> None:
    store = MemoryContextStore([Message("user", "a")])
    sid = store.session_id
    assert sid == store.session_id and len(sid) == 32
    await store.clear()
    assert await store.get_history() == []
    assert store.session_id == sid


def test_memory_store_satisfies_the_protocol() -> None:
    assert isinstance(MemoryContextStore(), ContextStore)
