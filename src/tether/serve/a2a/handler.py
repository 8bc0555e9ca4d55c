"""The SDK's request handler, with tether's checks before a message runs anything.

A message id delivered before gets the task it started (or answered) back, and runs nothing. A
message on an ``input-required`` task must decide its held calls (``decisions``); one on a task
still working is refused (subscribe to it, or cancel it); a new task's context must be a session
id with no run under way and no calls waiting. Each refusal is an A2A error naming what to send.
An ``input-required`` task nobody answers is let go from memory after ``PARKED`` seconds (its
answer, or its cancellation, finds it in the store).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from ...loop import pending
from ...stores.base import SessionStore, check_session_id
from ..hidden import hidden
from ..runs import Runs
from .decisions import Undecidable, decisions_of
from .executor import RunExecutor, message_text
from .records import TaskRecords

__all__ = ["Handler"]

_RUNNING = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
PARKED = 60.0  # seconds the SDK keeps an unanswered input-required task in memory (then: the store)


class Handler(DefaultRequestHandlerV2):
    """``DefaultRequestHandlerV2`` for a tether agent's tasks."""

    def __init__(self, executor: RunExecutor, card: AgentCard) -> None:
        super().__init__(executor, executor.records, card, interrupted_task_timeout=PARKED)
        self._records: TaskRecords = executor.records
        self._store: SessionStore = executor.store
        self._runs: Runs = executor.runs
        self._executor: RunExecutor = executor

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """Cancel as the SDK does; then deny the calls a task let go from memory while it waited
        for input still holds (the SDK cancels such a task without the executor; a task it still
        had is denied by the executor, and nothing is held any more)."""
        task: Task | None = await super().on_cancel_task(params, context)
        if task is not None and task.status.state == TaskState.TASK_STATE_CANCELED:
            await self._executor.deny_held(task.context_id, task.id)
        return task

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        seen = await self._seen(params.message, context)
        if seen is not None:
            return seen
        await self._admit(params.message, context)
        answer: Message | Task = await super().on_message_send(params, context)
        return answer

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        seen = await self._seen(params.message, context)
        if seen is not None:
            yield seen
            return
        await self._admit(params.message, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def _seen(self, message: Message, context: ServerCallContext) -> Task | None:
        """The task ``message`` was delivered to before, if it was."""
        task_id = await self._records.claimed_by(message.message_id)
        return None if task_id is None else await self._records.get(task_id, context)

    async def _admit(self, message: Message, context: ServerCallContext) -> None:
        if message.context_id:
            try:
                check_session_id(message.context_id)
            except ValueError as exc:
                raise InvalidParamsError(f"contextId: {exc}") from None
            if (why := hidden(message.context_id)) is not None:
                raise InvalidParamsError(f"contextId: {why}")
        if message.task_id:
            await self._follow_up(message, context)
            return
        if not message_text(message).strip():
            raise InvalidParamsError("a new task's message needs a text part: what to ask")
        if message.context_id:
            await self._context_free(message.context_id)

    async def _follow_up(self, message: Message, context: ServerCallContext) -> None:
        task = await self._records.get(message.task_id, context)
        if task is None:
            raise TaskNotFoundError(f"no task {message.task_id!r}")
        if not message.context_id:  # the task's, as A2A allows it left out (the SDK needs it)
            message.context_id = task.context_id
        if task.status.state in _RUNNING:
            raise UnsupportedOperationError(
                f"task {task.id} is still working: subscribe to it, or cancel it"
            )
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            return  # a finished task: the SDK says it cannot run again
        held = pending(await self._store.history_of(task.context_id))
        try:
            decisions_of(message, held)
        except Undecidable as exc:
            raise InvalidParamsError(f"task {task.id}: {exc}") from None

    async def _context_free(self, context_id: str) -> None:
        live = self._runs.get(context_id)
        if live is not None:
            raise UnsupportedOperationError(
                f"context {context_id} has a run under way ({live.run_id}): wait for it, or "
                "cancel it"
            )
        if pending(await self._store.history_of(context_id)):
            raise UnsupportedOperationError(
                f"calls wait for approval in context {context_id}: answer its input-required "
                "task first"
            )
