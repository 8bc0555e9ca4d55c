"""The A2A server's tasks, kept in tether's session store so that a restart loses none.

A task's record is a session of its own, ``a2a-task:<task id>``: one message (the task as A2A
JSON, and which server process wrote it) as the task starts running here and each time it stops
(input-required, or its final state); the last one is the task. A task a killed server left
submitted or working is read back as failed: nothing runs it any more (its conversation, the
session named by its ``contextId``, keeps what the run stored). Only the tasks under way are
kept in memory. Which task a message id started is a session too, ``a2a-message:<message id>``,
claimed by one append at position 0, so of two deliveries of one message only one runs.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from ...errors import ConflictError
from ...messages import text_message
from ...stores.base import MAX_SESSION_ID, SessionStore, StoredContext
from . import RECORDS

__all__ = ["CLAIM", "RECORD", "TaskRecords"]

RECORD, CLAIM = RECORDS  # a task's record: RECORD + its id; a message id's claim: CLAIM + it
_RUNNING = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
CUT_OFF = "the server stopped during this task's run; its context keeps what the run stored"


@dataclass(slots=True)
class TaskRecords(TaskStore):
    """An A2A ``TaskStore`` on a tether ``SessionStore``. Only the tasks under way here are kept
    in memory (the SDK saves one at every event); a task is dropped from memory once its
    ``input-required`` or final state is written, and read back from the store when asked for,
    so a server that runs for weeks holds no more than its live tasks."""

    store: SessionStore
    server: str = field(default_factory=lambda: secrets.token_hex(8))
    _live: dict[str, Task] = field(default_factory=dict)  # a copy of each task under way
    _records: dict[str, StoredContext] = field(default_factory=dict)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Keep ``task``; its record is written as it starts running here and each time it
        stops (not at every status update or artifact chunk in between: a task cut off reads
        as failed whatever it held, and its context keeps what the run stored)."""
        if task.status.state not in _RUNNING:  # written, then read from the store when asked
            await self._write(task)
            self._forget(task.id)
            return
        starts = task.id not in self._live
        self._live[task.id] = _copy(task)  # the SDK goes on changing the one it saved
        if starts:
            await self._write(task)

    async def _write(self, task: Task) -> None:
        record = self._records.get(task.id)
        if record is None:
            record = self._records[task.id] = await self.store.open(_record_id(task.id))
        body = {"server": self.server, "task": MessageToDict(task)}
        await record.append(text_message("user", json.dumps(body, separators=(",", ":"))))

    def _forget(self, task_id: str) -> None:
        """Drop ``task_id`` from memory: its record holds it."""
        self._live.pop(task_id, None)
        self._records.pop(task_id, None)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        live = self._live.get(task_id)
        return _copy(live) if live is not None else await self._read(task_id, context)

    async def _read(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The stored task ``task_id``, cut off (failed) if a server that is gone left it
        running."""
        if not task_id or len(task_id) + len(RECORD) > MAX_SESSION_ID:
            return None
        history = await self.store.history_of(_record_id(task_id))
        if not history:
            return None
        body = json.loads(history[-1].text)
        task = ParseDict(body["task"], Task())
        if body.get("server") != self.server and task.status.state in _RUNNING:
            task.status.state = TaskState.TASK_STATE_FAILED
            task.status.message.CopyFrom(agent_text(CUT_OFF, task))
            task.status.timestamp.FromDatetime(datetime.now(UTC))
            await self.save(task, context)
        return task

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Every task, read from the store (the live ones from memory) into a listing of this
        call's own, which the SDK's in-memory store filters, orders and pages (a listing is
        rare)."""
        listing = InMemoryTaskStore(use_copying=False)
        for info in await self.store.sessions():
            if info.session_id.startswith(RECORD):
                task = await self.get(info.session_id.removeprefix(RECORD), context)
                if task is not None:
                    await listing.save(task, context)
        return await listing.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._forget(task_id)
        await self.store.delete(_record_id(task_id))

    async def claimed_by(self, message_id: str) -> str | None:
        """The task that message ``message_id`` started or answered, if one did."""
        if not message_id or len(message_id) + len(CLAIM) > MAX_SESSION_ID:
            return None
        history = await self.store.history_of(CLAIM + message_id)
        return history[0].text if history else None

    async def claim(self, message_id: str, task_id: str) -> str | None:
        """Claim ``message_id`` for ``task_id``: None if this claim holds, else the task that
        had it already (one append at position 0: of two at once, one conflicts)."""
        if not message_id or len(message_id) + len(CLAIM) > MAX_SESSION_ID:
            return None
        claim = await self.store.open(CLAIM + message_id)
        if claim.position == 0:
            try:
                await claim.append(text_message("user", task_id))
            except ConflictError:
                pass
            else:
                return None
        held = await self.claimed_by(message_id)
        return None if held == task_id else held


def _copy(task: Task) -> Task:
    """A copy of ``task``: the SDK goes on changing the one it saved, a reader the one it got."""
    copy = Task()
    copy.CopyFrom(task)
    return copy


def _record_id(task_id: str) -> str:
    return RECORD + task_id


def agent_text(text: str, task: Task, data: dict[str, object] | None = None) -> Message:
    """An agent message of ``task`` holding ``text`` (and a data part, when given)."""
    from google.protobuf.struct_pb2 import Value  # noqa: PLC0415

    parts = [Part(text=text)]
    if data is not None:
        value = Value()
        ParseDict(data, value)
        parts.append(Part(data=value))
    return Message(
        message_id=secrets.token_hex(8),
        role=Role.ROLE_AGENT,
        parts=parts,
        task_id=task.id,
        context_id=task.context_id,
    )
