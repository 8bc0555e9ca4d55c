"""``tether sessions``: the chats kept in the session store, newest first."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..stores import SessionInfo, SQLiteStore
from .args import EXIT_OK, CommandError, store_path
from .terminal import safe_text

__all__ = ["command_sessions"]


def command_sessions(opts: argparse.Namespace, out: Console) -> int:
    """List the stored sessions (a table, or JSON lines with ``--json``); ``CommandError`` for a
    store that cannot be read."""
    path = store_path(opts.store)
    try:
        found = asyncio.run(_read(path)) if path.exists() else []
    except (OSError, sqlite3.Error) as exc:
        raise CommandError.about(f"cannot read the session store {path}", exc) from exc
    found.sort(key=lambda s: s.updated, reverse=True)
    if opts.json:
        for info in found:
            record = {
                "session_id": info.session_id,
                "messages": info.messages,
                "created": info.created,
                "updated": info.updated,
            }
            out.print(json.dumps(record), soft_wrap=True, highlight=False, markup=False)
        return EXIT_OK
    if not found:
        out.print(safe_text(f"no sessions in {path}"), highlight=False)
        return EXIT_OK
    table = Table("session", "messages", "last used", box=None)
    for info in found:
        table.add_row(safe_text(info.session_id), str(info.messages), _when(info.updated))
    out.print(table)
    return EXIT_OK


async def _read(path: Path) -> list[SessionInfo]:
    async with SQLiteStore(path) as store:
        return await store.sessions()


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))
