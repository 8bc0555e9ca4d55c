"""One exchange with a remote agent: a user message sent (on the conversation's context, and on
the task that waits for it if one does), the agent's events read as they stream, and its reply.

Its streamed text and its status notes go to a ``Listener`` as they come; a task that failed,
was rejected or cancelled, or wants the user to sign in is a ``ModelStopError``; a task that
asks for input is a reply that says so (the caller decides whether to pause). Past the remote's
``timeout``, or when the caller is cancelled, the remote task is cancelled (``CancelTask``)
before the exchange ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConnectionFailedError, ModelStopError, StreamInterruptedError
from .failures import failure
from .remote import Remote

__all__ = ["Answer", "Listener", "Thread", "cancel_task", "exchange"]

_CANCEL_WAIT = 5.0  # seconds a CancelTask may take while the exchange ends
_ENDED = {"completed", "failed", "canceled", "rejected"}
_PAUSED = {"input_required", "auth_required"}


@dataclass(frozen=True, slots=True)
class Thread:
    """Where a conversation with a remote agent stands: its context, and the task that waits
    for the next message (an agent asked for input), if one does."""

    context_id: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """The remote agent's answer (its artifacts' text, else its last word), whether it asks for
    input (``asks``), and where the conversation stands for the next message."""

    text: str
    thread: Thread
    asks: bool = False


class Listener(Protocol):
    """Hears an exchange as it goes: each piece of streamed text, each status note."""

    def text(self, piece: str) -> None: ...

    def status(self, state: str, note: str) -> None: ...


async def exchange(remote: Remote, text: str, thread: Thread, listener: Listener) -> Answer:
    """Send ``text`` to ``remote`` on ``thread`` and read its reply (see the module)."""
    async with remote.client() as client:
        follow = _Follow(listener)
        reader = asyncio.ensure_future(follow.read(client, _request(text, thread)))
        try:
            async with asyncio.timeout(remote.timeout):
                await asyncio.shield(reader)  # a cancel stops the reading here, below
        except TimeoutError:
            await _stop(reader, follow, client)
            raise ConnectionFailedError(
                f"{remote.label()} did not finish within {remote.timeout:g} seconds; its task "
                "was cancelled"
            ) from None
        except asyncio.CancelledError:
            await _stop(reader, follow, client)
            raise
        except Exception as exc:
            await _stop(reader, follow, client)
            raise failure(exc, remote.label()) from None
    return follow.reply(remote.label())


async def _stop(reader: asyncio.Future[None], follow: _Follow, client: Any) -> None:
    """End an exchange cut short: wait (a bounded while) for the task's id if the agent has not
    sent it yet, stop reading, and cancel the remote task."""
    if not reader.done() and not follow.task_id:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(follow.known.wait(), _CANCEL_WAIT)
    reader.cancel()
    with contextlib.suppress(BaseException):
        await reader
    await follow.cancel(client)


def _request(text: str, thread: Thread) -> Any:
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest  # noqa: PLC0415

    message = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=thread.context_id or "",
        task_id=thread.task_id or "",
    )
    return SendMessageRequest(message=message)


def _state(value: int) -> str:
    """A task state's word (``"input_required"``) from its enum value."""
    from a2a.types.a2a_pb2 import TaskState  # noqa: PLC0415

    return TaskState.Name(value).removeprefix("TASK_STATE_").lower()


def _texts(parts: Sequence[Any]) -> list[str]:
    """The parts a model can read, as text: text as it is, data as JSON, files by name."""
    from google.protobuf.json_format import MessageToDict  # noqa: PLC0415

    out = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(part.text)
        elif kind == "data":
            out.append(json.dumps(MessageToDict(part.data), ensure_ascii=False))
        elif kind == "url":
            out.append(f"[file: {part.url}]")
        elif kind == "raw":
            out.append(f"[{len(part.raw)} bytes of {part.media_type or 'data'}]")
    return out


@dataclass(slots=True)
class _Follow:
    """What the remote agent said so far, read event by event."""

    listener: Listener
    context_id: str = ""
    task_id: str = ""
    state: str = ""
    note: str = ""  # the last status message's text
    message: str | None = None  # a direct message answer (no task)
    artifacts: dict[str, list[str]] = field(default_factory=dict)
    known: asyncio.Event = field(default_factory=asyncio.Event)  # set once the task's id is

    async def read(self, client: Any, request: Any) -> None:
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            if kind == "message":
                self._message(event.message)
                return
            if kind == "task":
                self._task(event.task)
            elif kind == "status_update":
                self._status(event.status_update)
            elif kind == "artifact_update":
                self._artifact(event.artifact_update)
            if self.state in _ENDED or self.state in _PAUSED:
                return

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id
        if self.task_id:
            self.known.set()

    def _message(self, message: Any) -> None:
        self.context_id = message.context_id or self.context_id
        self.message = "\n".join(_texts(message.parts))

    def _task(self, task: Any) -> None:
        self._ids(task.id, task.context_id)
        self._take_status(task.status)
        for artifact in task.artifacts:  # a whole task (an answer that was not streamed)
            self.artifacts[artifact.artifact_id] = _texts(artifact.parts)

    def _status(self, update: Any) -> None:
        self._ids(update.task_id, update.context_id)
        self._take_status(update.status)
        if self.note and self.state not in _ENDED:
            self.listener.status(self.state, self.note)

    def _take_status(self, status: Any) -> None:
        self.state = _state(status.state)
        if status.HasField("message"):
            self.note = "\n".join(_texts(status.message.parts))

    def _artifact(self, update: Any) -> None:
        self._ids(update.task_id, update.context_id)
        pieces = _texts(update.artifact.parts)
        key = update.artifact.artifact_id
        if update.append and key in self.artifacts:
            self.artifacts[key].extend(pieces)
        else:
            self.artifacts[key] = list(pieces)
        for piece in pieces:
            if piece:
                self.listener.text(piece)

    async def cancel(self, client: Any) -> None:
        """Cancel the remote task when one was started and has not ended (a bounded wait; a
        failure to cancel is not the caller's error)."""
        from a2a.types.a2a_pb2 import CancelTaskRequest  # noqa: PLC0415

        if not self.task_id or self.state in _ENDED:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                client.cancel_task(CancelTaskRequest(id=self.task_id)), _CANCEL_WAIT
            )

    def reply(self, who: str) -> Answer:
        """The reply, or the error the task ended in."""
        answer = "\n".join("".join(p) for p in self.artifacts.values()) or self.note
        if self.message is not None:
            return Answer(self.message, Thread(self.context_id or None))
        if self.state == "completed":
            return Answer(answer, Thread(self.context_id or None))
        if self.state == "input_required":
            return Answer(self.note, Thread(self.context_id or None, self.task_id or None), True)
        if self.state in ("failed", "rejected", "canceled", "auth_required"):
            raise ModelStopError(
                _ended(who, self.state, self.note), stop_reason=self.state, partial_text=answer
            )
        raise StreamInterruptedError(
            f"{who} ended its answer while its task was {self.state or 'not started'}"
        )


def _ended(who: str, state: str, note: str) -> str:
    said = {
        "failed": "failed the task",
        "rejected": "rejected the task",
        "canceled": "cancelled the task",
        "auth_required": "needs the user to sign in before it can go on",
    }[state]
    return f"{who} {said}" + (f": {note}" if note else "")


async def cancel_task(remote: Remote, task_id: str) -> None:
    """Cancel the remote task ``task_id`` (a task left waiting for input), as far as it goes."""
    from a2a.types.a2a_pb2 import CancelTaskRequest  # noqa: PLC0415

    with contextlib.suppress(Exception):
        async with remote.client() as client:
            request = CancelTaskRequest(id=task_id)
            await asyncio.wait_for(client.cancel_task(request), _CANCEL_WAIT)
