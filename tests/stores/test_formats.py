"""Every stored format this tether wrote still loads: recorded files of each schema version
(SQL dumps for SQLite, JSON-lines files as written) read back into the same messages."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

from tether import ImageBlock, Message, ReasoningBlock, TextBlock, ToolResultBlock, ToolUseBlock
from tether.stores import FileStore, SQLiteStore

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
