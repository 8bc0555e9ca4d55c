"""Compaction on every store backend: a compacted session reopened by a new store object (as
another process would) sends summary + recent without summarising again, keeps every message,
and forks with its view; SQLite and PostgreSQL read nothing older than the view, however long
the stored history grows; files of the older schemas migrate."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, make

from parts import needs
from tether import Agent, Compacted, Compaction, Message, Tool, Usage
from tether.context.policy import estimate_chars
from tether.context.records import compaction_record, context_start, kept_of
from tether.loop.history_view import visible
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def lookup(key: str) -> str:
    return f"value of {key}: " + "x" * 1200


def looping(n: int) -> ScriptedTransport:
    """Calls ``lookup`` ``n`` times, then answers; usage as a provider would count it."""
    replies = [Reply(tool_calls=[Call("lookup", {"key": f"k{i}"})]) for i in range(n)]
    replies.append(Reply("done"))

    def step(request: Request) -> Reply:
        reply = replies.pop(0)
        size = sum(estimate_chars(m) for m in request.messages) // 4
        return Reply(reply.text, reply.tool_calls, Usage(input_tokens=size, output_tokens=10))

    return ScriptedTransport([], then=step)


def agent(model: ScriptedTransport, summarizer: ScriptedTransport, budget: int = 1000) -> Agent:
    policy = Compaction(max_tokens=budget, summarizer=summarizer, keep_last=3)
    return Agent("sys", model, tools=[Tool("lookup", lookup)], context_policy=policy)


async def closed(store: Any) -> None:
    await store.aclose()


async def test_a_compacted_session_reopens_from_its_summary(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    try:
        context = await store.open("long")
        summaries = ScriptedTransport([Reply(f"S{i}") for i in range(1, 6)])
        events = [e async for e in agent(looping(9), summaries).run_stream("go", context)]
        assert [e for e in events if isinstance(e, Compacted)]
        stored = await context.get_history()
    finally:
        await closed(store)

    again = make(kind, tmp_path)  # a new store object: nothing is shared but what is stored
    try:
        context = await again.open("long")
        assert await context.get_history() == stored
        model = ScriptedTransport([Reply("hi", usage=Usage(input_tokens=10))])
        never = ScriptedTransport([])  # asked for a summary, it would fail the compaction
        events = [e async for e in agent(model, never, 50_000).run_stream("next", context)]
        assert events[-1].error is None and never.call_count == 0
        (request,) = model.requests
        assert list(request.messages) == [*visible(stored), Message("user", "next")]
        assert request.messages[0].text.startswith("Summary of the conversation so far:")
        history = await context.get_history()
        assert history[: len(stored)] == stored and len(history) == len(stored) + 2
        view = await context.get_context()
        start = context_start(history)
        assert start is not None
        if kind in ("sqlite", "postgres"):  # nothing older than the view is read
            assert view == history[start:]
        assert visible(view) == visible(history)
        fork = await context.fork()
        assert visible(await fork.get_context()) == visible(history)
        assert await fork.get_history() == history
    finally:
        await closed(again)


@pytest.mark.parametrize("name", ["sqlite", pytest.param("postgres", marks=needs("postgres"))])
async def test_the_view_stays_the_same_size_however_long_the_history(
    name: str, tmp_path: Path
) -> None:
    """Thousands of messages before the last record: the load reads the record's kept messages
    and what follows, nothing else (SQLite without its cache, so every load reads the file)."""
    store = (
        SQLiteStore(tmp_path / "s.db", cache_bytes=0) if name == "sqlite" else make(name, tmp_path)
    )
    try:
        context = await store.open("grown")
        sizes = []
        for round_ in range(3):
            for i in range(700):
                await context.append(Message("user" if i % 2 else "assistant", f"{round_}.{i}"))
            await context.append(compaction_record(f"summary {round_}", 4))
            await context.append(Message("user", f"after {round_}"))
            view = await context.get_context()
            sizes.append(len(view))
            assert [kept_of(m) for m in view] == [None] * 4 + [4, None]
            assert view[0].text == f"{round_}.696" and view[-1].text == f"after {round_}"
        assert sizes == [6, 6, 6]
        assert len(await context.get_history()) == 3 * 702
    finally:
        await closed(store)


async def test_a_schema_2_sqlite_file_migrates_and_keeps_its_views(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    with sqlite3.connect(path) as raw:
        raw.executescript((FIXTURES / "sqlite-v2.sql").read_text())
    async with SQLiteStore(path) as store:
        context = await store.open("recorded-v2")
        history = await context.get_history()
        assert await context.get_context() == history  # no record: the whole history
        await context.append(compaction_record("short", 2))
        assert await context.get_context() == [*history[-2:], compaction_record("short", 2)]
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM tether_meta").fetchone() == ("3",)
    async with SQLiteStore(path, cache_bytes=0) as store:  # and a new process reads it so
        context = await store.open("recorded-v2")
        assert len(await context.get_context()) == 3


async def test_a_cleared_session_has_no_view_left(kind: str, tmp_path: Path) -> None:
    store = make(kind, tmp_path)
    try:
        context = await store.open("c")
        for i in range(5):
            await context.append(Message("user", f"m{i}"))
        await context.append(compaction_record("s", 1))
        await context.clear()
        await context.append(Message("user", "fresh"))
        assert await context.get_context() == [Message("user", "fresh")]
    finally:
        await closed(store)


@needs("postgres")
async def test_a_schema_1_postgres_database_migrates(tmp_path: Path) -> None:
    import psycopg

    from parts import server
    from tether.stores import PostgresStore

    schema = "t_v1_" + tmp_path.name.lower().replace("-", "_")[-20:]
    with psycopg.connect(server("postgres"), autocommit=True) as raw:  # as tether 1 made it
        raw.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        raw.execute(f"CREATE SCHEMA {schema}")
        raw.execute(
            f"CREATE TABLE {schema}.sessions (id TEXT PRIMARY KEY, created DOUBLE PRECISION "
            "NOT NULL, updated DOUBLE PRECISION NOT NULL, count INTEGER NOT NULL DEFAULT 0, "
            "next INTEGER NOT NULL DEFAULT 0)"
        )
        raw.execute(
            f"CREATE TABLE {schema}.messages (session TEXT NOT NULL, position INTEGER NOT NULL, "
            "format SMALLINT NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL, "
            "PRIMARY KEY (session, position))"
        )
        raw.execute(f"CREATE TABLE {schema}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        raw.execute(f"INSERT INTO {schema}.meta VALUES ('schema', '1')")
        raw.execute(f"INSERT INTO {schema}.sessions VALUES ('old', 1, 1, 2, 2)")
        raw.execute(
            f"INSERT INTO {schema}.messages VALUES ('old', 0, 0, 'user', 'hi'), "
            "('old', 1, 0, 'assistant', 'hello')"
        )
    store = PostgresStore(server("postgres"), schema=schema)
    try:
        context = await store.open("old")
        old = [Message("user", "hi"), Message("assistant", "hello")]
        assert await context.get_context() == old
        await context.append(compaction_record("greeted", 1))
        assert await context.get_context() == [old[1], compaction_record("greeted", 1)]
    finally:
        await store.aclose()
    with psycopg.connect(server("postgres"), autocommit=True) as raw:
        assert raw.execute(f"SELECT value FROM {schema}.meta").fetchone() == ("2",)
        raw.execute(f"DROP SCHEMA {schema} CASCADE")
