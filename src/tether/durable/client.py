"""``DurableRun``: a caller's handle on one durable run: signal it, query it, stream its events,
await its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowHandle

from ..errors import TetherError
from ..events import StreamEvent
from ..jsonforms import event_from_dict, exception_from_dict, message_from_dict
from ..messages import Message
from .payloads import Decision, RunOutput

__all__ = ["DurableRun", "DurableRunError", "Progress"]


class DurableRunError(TetherError):
    """A durable run ended with an error; ``error`` is it (tether's own type when it was one)
    and ``output`` the whole outcome."""

    def __init__(self, output: RunOutput) -> None:
        assert output.error is not None
        self.error = exception_from_dict(output.error)
        self.output = output
        super().__init__(f"the durable run failed: {output.error['type']}: {self.error}")


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a durable run stands: ``status`` is running, awaiting_approval,
    waiting_for_message, done or cancelled; ``pending`` the calls waiting for a decision
    (``call_id``, ``name``, ``input``, ``key``)."""

    status: str
    iterations: int
    turns: int
    messages: int
    events: int
    pending: list[dict[str, Any]]
    answer: str
    usage: dict[str, Any]


class DurableRun:
    """One durable run (a workflow), by its id; it follows the run across continue-as-new."""

    __slots__ = ("handle",)

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self.handle = handle

    @property
    def id(self) -> str:
        """The workflow id (the session id in the store, when the agent has one)."""
        return self.handle.id

    async def result(self) -> RunOutput:
        """Wait for the run to end; its outcome (an error ends it too, with ``error`` set)."""
        output = await self.handle.result()
        if not isinstance(output, RunOutput):  # a handle made without the result type
            raise TypeError(f"workflow {self.id!r} is not a durable agent's run")
        return output

    async def answer(self) -> str:
        """Wait for the run to end; its final answer, or ``DurableRunError``."""
        output = await self.result()
        if output.error is not None:
            raise DurableRunError(output)
        return output.answer

    async def send(self, text: str) -> None:
        """A user message: steers the answer going on, or is answered next."""
        await self.handle.signal("user_message", text)

    async def approve(self, call_id: str, reason: str | None = None) -> None:
        """Let a pending tool call run."""
        await self.handle.signal("decide", Decision(call_id, True, reason))

    async def deny(self, call_id: str, reason: str | None = None) -> None:
        """Refuse a pending tool call: the model gets "Tool call denied." (and the reason)."""
        await self.handle.signal("decide", Decision(call_id, False, reason))

    async def cancel(self) -> None:
        """Stop the run: the answer going on ends cancelled, every stored call keeps a result."""
        await self.handle.signal("cancel")

    async def close(self) -> None:
        """End a kept-open session after its current answer."""
        await self.handle.signal("close")

    async def progress(self) -> Progress:
        """Where the run stands now."""
        data = await self.handle.query("progress", result_type=dict)
        return Progress(**data)

    async def transcript(self) -> list[Message]:
        """The conversation so far."""
        data = await self.handle.query("transcript", result_type=list)
        return [message_from_dict(m) for m in data]

    async def events(self, *, after: int = 0, poll: float = 0.1) -> AsyncIterator[StreamEvent]:
        """The run's events from number ``after`` on, as they come (asked every ``poll``
        seconds), until the run ends."""
        while True:
            page = await self.handle.query("events", after, result_type=dict)
            for data in page["events"]:
                yield event_from_dict(data)
            after = page["next"]
            if page["done"]:
                return
            if not page["events"]:
                await asyncio.sleep(poll)

    def __repr__(self) -> str:
        return f"DurableRun({self.id!r})"
