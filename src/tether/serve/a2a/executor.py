"""The SDK's ``AgentExecutor`` for a tether agent: one task's message as one tether run.

A new task runs the agent on the message's text in the session its ``contextId`` names; a
follow-up on an ``input-required`` task resumes the run with the decisions it carries. The run
is a task of its own, held in the server's ``Runs`` beside the AG-UI ones (one run per session),
so a request that is cancelled or a stream that breaks stops nothing: only ``cancel`` does, by
the run's token, and the run then stores a result for every call it made before it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Task, TaskState

from ...agent import Agent
from ...context import ContextStore
from ...loop import AgentStream, CancellationToken, pending
from ...stores.base import SessionStore
from ..agui import error_text
from ..runs import Busy, LiveRun, Runs
from .decisions import Decided, Undecidable, decisions_of
from .progress import TaskEvents
from .records import TaskRecords, agent_text

__all__ = ["STOP_WAIT", "RunExecutor", "message_text"]

log = logging.getLogger("tether.serve.a2a")

STOP_WAIT = 10.0  # seconds a cancelled run has to store what it has

Begin = Callable[[ContextStore, CancellationToken], AgentStream]


def message_text(message: Message) -> str:
    """The text parts of ``message``, joined (what the agent is asked)."""
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


@dataclass(slots=True)
class RunExecutor(AgentExecutor):
    """Runs ``agent`` for the tasks of one server, its sessions in ``store``."""

    agent: Agent
    store: SessionStore
    runs: Runs
    records: TaskRecords
    _going: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message, current = context.message, context.current_task
        assert message is not None and context.task_id and context.context_id
        task = current or new_task(
            context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[message]
        )
        if current is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        refusal = await self._refusal(message, task)
        if refusal is not None:
            await updater.reject(agent_text(refusal, task))
            return
        try:
            begin = await self._begin(task, current, message)
            live = self.runs.reserve(task.context_id, task.id)
        except (Undecidable, Busy) as exc:
            await updater.reject(agent_text(str(exc), task))
            return
        try:
            await self._run(live, begin, TaskEvents(updater, task))
        finally:
            self.runs.release(live)

    async def _refusal(self, message: Message, task: Task) -> str | None:
        """Why ``message`` may not run: another task took its id already."""
        taken = await self.records.claim(message.message_id, task.id)
        if taken is None:
            return None
        return f"message {message.message_id!r} was delivered before, to task {taken}"

    async def _begin(self, task: Task, current: Task | None, message: Message) -> Begin:
        if current is None:
            text = message_text(message)
            return lambda session, token: self.agent.run_stream(text, session, cancel=token)
        held = pending(await self.store.history_of(task.context_id))
        decided: Decided = decisions_of(message, held)
        return lambda session, token: self.agent.resume_stream(
            session, decided.approve, decided.deny, cancel=token
        )

    async def _run(self, live: LiveRun, begin: Begin, events: TaskEvents) -> None:
        """Run in a task of its own; a cancelled ``execute`` stops it by its token and waits
        (``STOP_WAIT`` at most) for it to store what it has."""
        session = await self.store.open(live.session_id)
        await events.updater.start_work()
        going = asyncio.create_task(_drive(begin(session, live.cancel), events))
        self._going[live.run_id] = going
        try:
            await asyncio.shield(going)
        except asyncio.CancelledError:
            live.cancel.cancel()
            await asyncio.wait([going], timeout=STOP_WAIT)
            raise
        finally:
            self._going.pop(live.run_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's run by its token and wait for its end (``canceled``); a task with
        no run under way is marked canceled by the SDK, its held calls denied first (one that
        waited for input leaves its context free for new messages)."""
        going = self._going.get(context.task_id or "")
        live = self.runs.get(context.context_id or "")
        if going is None or live is None or live.run_id != context.task_id:
            if live is None and context.context_id and context.task_id:
                await self.deny_held(context.context_id, context.task_id)
            return
        live.cancel.cancel()
        await asyncio.wait([going], timeout=STOP_WAIT)

    async def deny_held(self, session_id: str, task_id: str) -> None:
        """Deny the calls held in ``session_id``: their results stored, the model not asked
        again (the resume's token is cancelled before it starts)."""
        held = pending(await self.store.history_of(session_id))
        if not held:
            return
        try:
            live = self.runs.reserve(session_id, task_id)
        except Busy:  # a run began meanwhile: it answers the held calls itself
            return
        try:
            live.cancel.cancel()
            reason = f"task {task_id} was canceled"
            session = await self.store.open(session_id)
            denied = {call.id: reason for call in held}
            async for _ in self.agent.resume_stream(session, (), denied, cancel=live.cancel):
                pass
        finally:
            self.runs.release(live)


async def _drive(stream: AgentStream, events: TaskEvents) -> None:
    """Publish ``stream``'s events; a failure outside the run's own end fails the task."""
    try:
        async for event in stream:
            await events.of(event)
    except Exception as exc:  # a run's own failures end in its SessionEndEvent; not these
        log.exception("the run of task %s failed", events.task.id)
        await events.updater.failed(agent_text(error_text(exc), events.task))
