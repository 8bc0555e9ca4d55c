"""Every stored format this tether wrote still loads: recorded files of each schema version
(SQL dumps for SQLite, JSON-lines files as written) read back into the same messages; SQLite's
pages (schema 2) are written, migrated into and checked."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tether import ImageBlock, Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock
from tether.stores import FileStore, SQLiteStore
from tether.stores.sqlite import PAGE, SCHEMA_VERSION

FIXTURES = Path(__file__).with_name("fixtures")

RECORDED_V1 = [
    Message("system", "Be brief."),
    Message("user", "What time is it in Tokyo?"),
    Message(
        "assistant",
        [
            ReasoningBlock("need the tool", "sig"),
            ToolUseBlock("c1", "current_time", {"city": "Tokyo"}),
        ],
    ),
    Message("user", [ToolResultBlock("c1", "12:34", False)]),
    Message("user", [TextBlock("and this?"), ImageBlock("image/png", "iVBORw0KGgo=")]),
    Message("assistant", "It is 12:34 in Tokyo. ✓"),
]


async def test_a_sqlite_file_of_schema_1_loads(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as raw:
        raw.executescript((FIXTURES / "sqlite-v1.sql").read_text())
    async with SQLiteStore(path) as store:
        context = await store.open("recorded-v1")
        assert await context.get_history() == RECORDED_V1
        await context.append(Message("user", "and now?"))  # and it goes on from there
        assert len(await context.get_history()) == len(RECORDED_V1) + 1


async def test_a_session_file_of_format_1_loads(tmp_path: Path) -> None:
    name = hashlib.sha256(b"recorded-v1").hexdigest()[:40] + ".jsonl"
    (tmp_path / "chats").mkdir()
    shutil.copy(FIXTURES / "file-v1.jsonl", tmp_path / "chats" / name)
    async with FileStore(tmp_path / "chats") as store:
        context = await store.open("recorded-v1")
        assert await context.get_history() == RECORDED_V1
        (info,) = await store.sessions()
        assert (info.session_id, info.messages) == ("recorded-v1", len(RECORDED_V1))


def _restore(path: Path, dump: str) -> None:
    with sqlite3.connect(path) as raw:
        raw.executescript(dump)


def _counts(path: Path) -> tuple[int, int, str]:
    with sqlite3.connect(path) as raw:
        pages = raw.execute("SELECT count(*) FROM tether_pages").fetchone()[0]
        rows = raw.execute("SELECT count(*) FROM tether_messages").fetchone()[0]
        schema = raw.execute("SELECT value FROM tether_meta WHERE key = 'schema'").fetchone()[0]
        return pages, rows, schema


async def test_a_sqlite_file_of_schema_2_loads(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    _restore(path, (FIXTURES / "sqlite-v2.sql").read_text())
    expected = [RECORDED_V1[i % len(RECORDED_V1)] for i in range(70)]
    async with SQLiteStore(path) as store:
        context = await store.open("recorded-v2")
        assert await context.get_history() == expected
        await context.append(Message("user", "and now?"))
        assert await context.get_history() == [*expected, Message("user", "and now?")]


async def test_appends_pack_full_pages_and_a_long_schema_1_session_catches_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    _restore(path, (FIXTURES / "sqlite-v1.sql").read_text())
    with sqlite3.connect(path) as raw:  # an old session of 146 rows, as schema 1 kept it
        raw.executemany(
            "INSERT INTO tether_messages VALUES ('recorded-v1', ?, 0, 'user', ?)",
            [(i, f"old {i}") for i in range(6, 146)],
        )
        raw.execute("UPDATE tether_sessions SET count = 146, next = 146")
    expected = RECORDED_V1 + [Message("user", f"old {i}") for i in range(6, 146)]
    async with SQLiteStore(path) as store:
        context = await store.open("recorded-v1")
        assert await context.get_history() == expected
        assert _counts(path) == (0, 146, str(SCHEMA_VERSION))
        for n in range(3):  # each append packs one page until fewer than PAGE rows are left
            await context.append(Message("assistant", f"new {n}"))
            expected.append(Message("assistant", f"new {n}"))
            assert await context.get_history() == expected
        assert _counts(path) == (2, 149 - 2 * PAGE, str(SCHEMA_VERSION))
        fork = await context.fork()
        assert await fork.get_history() == expected


async def test_a_damaged_page_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    async with SQLiteStore(path) as store:
        context = await store.open("s")
        for i in range(PAGE):
            await context.append(Message("user", f"m{i}"))
        damaged = ['["u", ["x"', ["r", ["x"]], ["u", [1]], ["uu", ["x"]], {"u": "x"}, ["U", ["{"]]]
        for body in damaged:
            with sqlite3.connect(path) as raw:
                raw.execute("UPDATE tether_pages SET body = ?", (json.dumps(body),))
            with pytest.raises(ValueError, match="page of messages is damaged"):
                await context.get_history()


async def test_a_damaged_line_in_a_session_file_is_an_error_not_a_guess(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "chats") as store:
        context = await store.open("s")
        await context.append(Message("user", "one"))
        (path,) = (tmp_path / "chats").iterdir()
        with path.open("ab") as f:  # two objects on one line would parse as two in one array
            f.write(b'{"role":"user","content":[]},{"role":"user","content":[]}\n')
        with pytest.raises(ValueError, match="Extra data"):
            await context.get_history()
