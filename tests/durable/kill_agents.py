"""A durable agent whose worker kills itself (SIGKILL) right after storing a chosen message: for
the test of a worker killed between two appends of one workflow task. Importable by worker
processes (``--agent kill_agents:appender`` with this folder on PYTHONPATH). The store is SQLite
at ``$TETHER_TEST_STORE``; the worker dies once, after storing the user message whose text is
``$TETHER_TEST_KILL_AFTER``, while the file ``$TETHER_TEST_KILL_FLAG`` exists (it removes it)."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path

import durable_agents as da

from tether import Agent, Message
from tether.durable import TemporalAgent
from tether.stores import SQLiteStore
from tether.stores.base import StoredContext


class KillingStore:
    """``SQLiteStore`` at ``$TETHER_TEST_STORE`` (opened on first use), which SIGKILLs its own
    process after storing the chosen message."""

    def __init__(self) -> None:
        self._inner: SQLiteStore | None = None

    @property
    def inner(self) -> SQLiteStore:
        if self._inner is None:
            self._inner = SQLiteStore(os.environ["TETHER_TEST_STORE"])
        return self._inner

    async def append_at(self, session: str, known: int, message: Message) -> int:
        following = await self.inner.append_at(session, known, message)
        chosen = message.role == "user" and message.text == os.environ.get("TETHER_TEST_KILL_AFTER")
        if chosen and _take_flag():
            os.kill(os.getpid(), signal.SIGKILL)
        return following

    async def history_of(self, session: str) -> list[Message]:
        return await self.inner.history_of(session)

    async def clear_at(self, session: str, known: int) -> int:
        return await self.inner.clear_at(session, known)

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        return await self.inner.copy_of(messages)

    async def open(self, session_id: str | None = None) -> StoredContext:
        opened = await self.inner.open(session_id)
        return StoredContext(self, opened.session_id, opened.position)  # appends come here


def _take_flag() -> bool:
    """Remove the kill flag; whether it was there (so the worker dies once)."""
    try:
        Path(os.environ.get("TETHER_TEST_KILL_FLAG", "")).unlink()
    except OSError:
        return False
    return True


appender = TemporalAgent(
    Agent("You follow plans.", da.PlanModel(), tools=[da.crunch]),
    name="appender",
    store=KillingStore(),
    options=da.FAST,
)
