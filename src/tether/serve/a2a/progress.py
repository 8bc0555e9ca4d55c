"""One run's tether events as A2A task events, through the SDK's ``TaskUpdater``.

Each text block the model writes is an artifact (``text-1``, ``text-2``...): its deltas stream
as appended chunks, and once it ends the whole text replaces them in one last chunk, so a task
read later holds it as one part. A tool call and its result are ``working`` status updates, each
a text and a data part (``toolCall``, ``toolResult``). The run's end is the task's state:
``completed`` with the answer, ``input-required`` naming the held calls, ``canceled``, or
``failed`` with the error's first line (tether's errors carry no credentials).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, Task, TaskState

from ...events import SessionEndEvent, StreamEvent, TextDelta, ToolDispatch, ToolResult
from ...messages import ToolResultBlock
from ...stores.jsonforms import pending_to_dict
from ...types import StopReason
from ..agui import error_text
from .decisions import how_to_answer
from .records import agent_text

__all__ = ["TaskEvents"]

MAX_SHOWN = 2000  # characters of a tool's result a status update carries


@dataclass(slots=True)
class TaskEvents:
    """Publishes one run's events for ``task`` on ``updater``."""

    updater: TaskUpdater
    task: Task
    _text: list[str] = field(default_factory=list)
    _blocks: int = 0
    answer: str = ""

    async def of(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            await self._delta(event.delta)
            return
        await self._end_text()
        if isinstance(event, ToolDispatch):
            said = f"calling {event.name}"
            call = {"id": event.tool_use_id, "name": event.name, "input": dict(event.input)}
            await self._working(said, {"toolCall": call})
        elif isinstance(event, ToolResult):
            await self._working(*_result(event))
        elif isinstance(event, SessionEndEvent):
            await self._end(event)

    async def _delta(self, delta: str) -> None:
        if not delta:
            return
        if not self._text:
            self._blocks += 1
        self._text.append(delta)
        await self.updater.add_artifact(
            [Part(text=delta)],
            artifact_id=f"text-{self._blocks}",
            name="answer",
            append=len(self._text) > 1,
        )

    async def _end_text(self) -> None:
        """The text block just written, whole, as its artifact's last chunk."""
        if not self._text:
            return
        self.answer = "".join(self._text)
        self._text.clear()
        await self.updater.add_artifact(
            [Part(text=self.answer)],
            artifact_id=f"text-{self._blocks}",
            name="answer",
            append=False,
            last_chunk=True,
        )

    async def _working(self, text: str, data: dict[str, Any]) -> None:
        await self.updater.update_status(
            TaskState.TASK_STATE_WORKING, agent_text(text, self.task, data)
        )

    async def _end(self, end: SessionEndEvent) -> None:
        if end.pending:
            held = [pending_to_dict(call) for call in end.pending]
            said = how_to_answer(end.pending)
            await self.updater.requires_input(agent_text(said, self.task, {"pending": held}))
        elif end.stop_reason is StopReason.CANCELLED:  # its error says so too
            await self.updater.cancel(agent_text("the run was cancelled", self.task))
        elif end.error is not None:
            await self.updater.failed(agent_text(error_text(end.error), self.task))
        else:
            answer = agent_text(self.answer, self.task) if self.answer else None
            await self.updater.complete(answer)


def _result(event: ToolResult) -> tuple[str, dict[str, Any]]:
    shown = ToolResultBlock(event.tool_use_id, event.content).text
    if len(shown) > MAX_SHOWN:
        shown = shown[:MAX_SHOWN] + "…"
    said = f"{event.name} {'failed' if event.is_error else 'returned'}"
    result = {"id": event.tool_use_id, "name": event.name, "isError": event.is_error}
    return said, {"toolResult": {**result, "content": shown}}
