"""``DurableRun``: a caller's handle on one durable run: signal it, query it, stream its events,
await its outcome."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from ..errors import TetherError
from ..events import StreamEvent
from ..messages import Message
from ..stores.jsonforms import event_from_dict, exception_from_dict, message_from_dict
from .payloads import Decision, RunOutput
from .tail import LiveTail

__all__ = ["DurableRun", "DurableRunError", "Progress"]

POLL = 0.05  # seconds between looks at a busy run
IDLE_POLL = 1.0  # the longest wait between looks at a run that waits (for a person, a message)
# what a query gets while no worker answers it (the one that held the run was lost, say)
NO_WORKER = {RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE}
# ... and while the server holds as many queries for the run as it will (a workflow task in
# flight, on a worker lost say, and readers asking meanwhile): each is asked again later
ASK_AGAIN = NO_WORKER | {RPCStatusCode.RESOURCE_EXHAUSTED}
# seconds a query may take before it is asked again, doubled while it keeps timing out: Temporal
# may hand it to a lost worker's queue (and give up only after 20 s) for 10 s after the loss
QUERY_TIMEOUT = 3.0
RECHECK = 1.0  # seconds between asks for the log while the same calls run (a cancel, say)


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
    """One durable run (a workflow), by its id; it follows the run across continue-as-new.
    ``client`` (the one ``handle`` came from, by default) reads the workflow's earlier runs
    and, with its data converter, what running calls show."""

    __slots__ = ("client", "converter", "handle")

    def __init__(self, handle: WorkflowHandle[Any, Any], client: Client | None = None) -> None:
        self.handle = handle
        self.client = client if client is not None else handle._client
        self.converter: DataConverter = self.client.data_converter

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

    async def events(self, *, after: int = 0, poll: float = POLL) -> AsyncIterator[StreamEvent]:
        """The run's events from number ``after`` on, as they come, until the run ends.

        Events come from the run's log (what ``Agent.run_stream`` would give, a model call's
        text as one delta per block; after a continue-as-new, the events before the current
        run's are read from the runs it continued from, so none is lost or given twice; those
        older than the namespace's retention are gone: ``TetherError`` says from where to
        read) and, while calls run, from what they show live: a model
        call's text and reasoning deltas as it streams, a tool call's ``ToolProgress`` as it
        reports. Each piece of text is given once, in order: when the call's events reach the
        log, only text not shown yet follows. A model call retried after its worker was lost
        says its text again; what repeats the text shown is held back, and where the retry says
        something else a ``Retrying`` event (delay 0) comes first: the partial reply shown so
        far is discarded and the retry's text follows from its start. ``ToolProgress`` shows
        only while the call runs (it is in no log); a report made in the last ``poll`` seconds
        of a call may not show. Running calls are looked at every ``poll`` seconds (the log as
        soon as one ends, else once a second), a run that waits for a person or a message less
        often (up to once a second), and one that no worker answers again (one was lost: the
        next to take the run over answers).
        """
        tail = LiveTail()
        idle = poll
        while True:
            page = await self._page(self.handle, after, poll)
            if page.get("first", 0) > after:  # the run continued as new since ``after``
                async for position, data in self._earlier(page, after, poll):
                    for event in tail.logged(position, event_from_dict(data)):
                        yield event
            asked = time.monotonic()
            first = page["next"] - len(page["events"])
            for position, data in enumerate(page["events"], first):
                for event in tail.logged(position, event_from_dict(data)):
                    yield event
            after = page["next"]
            if page["done"]:
                return
            live = page.get("live")
            if live is None:
                if not page["events"]:  # nothing runs: it waits for a person or a message
                    await asyncio.sleep(idle)
                    idle = min(idle * 2, max(poll, IDLE_POLL))
                continue
            idle = poll
            tail.expect(live.get("turn"), live.get("at"))
            async with aclosing(self._while_running(tail, page, live, asked, poll)) as shown:
                async for event in shown:
                    yield event

    async def _while_running(
        self,
        tail: LiveTail,
        page: dict[str, Any],
        live: dict[str, Any],
        asked: float,
        poll: float,
    ) -> AsyncGenerator[StreamEvent, None]:
        """What the running calls show, looked at every ``poll`` seconds until the log may have
        more: while the same calls run, the log waits for them."""
        calls: frozenset[tuple[str, int]] | None = None
        while True:
            running, shown = await self._live(tail)
            for event in shown:
                yield event
            if page["events"] or (calls is not None and running != calls):
                return  # the log may have more: ask for it now
            calls = running
            await asyncio.sleep(poll)
            if len(running) < live.get("running", 0) or time.monotonic() - asked >= RECHECK:
                return  # a call ended before the page was read (or a while has passed)

    async def _earlier(
        self, page: dict[str, Any], after: int, poll: float
    ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """The logged events from ``after`` to where ``page``'s run began, oldest first, read
        from the runs it continued from (a worker answers a closed run's query by replaying
        its history), the chain followed back as far as ``after``."""
        chain: list[tuple[WorkflowHandle[Any, Any], int, dict[str, Any]]] = []
        while page["first"] > after:
            end, previous = page["first"], page.get("previous")
            if not previous:
                raise TetherError(f"{self.id!r} keeps no events before {end}: read from there")
            handle = self.client.get_workflow_handle(self.id, run_id=previous)
            try:
                page = await self._page(handle, after, poll)
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                raise TetherError(
                    f"the events of {self.id!r} before {end} are gone: the run that held them "
                    "is no longer kept (past the namespace's retention); read from "
                    f"after={end}"
                ) from None
            chain.append((handle, end, page))
        for handle, end, first_page in reversed(chain):
            page = first_page
            while True:
                start = page["next"] - len(page["events"])
                for position, data in enumerate(page["events"], start):
                    if after <= position < end:
                        yield position, data
                if page["next"] >= end or not page["events"]:
                    break
                after = page["next"]
                page = await self._page(handle, after, poll)
            if page["next"] < end:  # a closed run's log cannot grow: it says less than it held
                raise TetherError(
                    f"run {handle.run_id} of {self.id!r} ends its log at {page['next']}, not {end}"
                )
            after = end

    async def _page(
        self, handle: WorkflowHandle[Any, Any], after: int, poll: float
    ) -> dict[str, Any]:
        """The ``events`` query's page from ``after``, asked until a worker answers."""
        wait, timeout = poll, QUERY_TIMEOUT
        while True:
            try:
                page: dict[str, Any] = await handle.query(
                    "events", after, result_type=dict, rpc_timeout=timedelta(seconds=timeout)
                )
                return page
            except RPCError as exc:
                if exc.status not in ASK_AGAIN:
                    raise
                if exc.status == RPCStatusCode.DEADLINE_EXCEEDED:
                    timeout *= 2  # perhaps only a busy worker: give it longer
            await asyncio.sleep(wait * random.uniform(0.5, 1.5))  # readers ask apart
            wait = min(wait * 2, max(poll, IDLE_POLL))

    async def _live(self, tail: LiveTail) -> tuple[frozenset[tuple[str, int]], list[StreamEvent]]:
        """The run's calls in flight (activity id and state), and what they show now that
        ``tail`` has not given yet."""
        description = await self.handle.describe()
        running = description.raw_description.pending_activities
        events: list[StreamEvent] = []
        for pending in running:
            if not pending.HasField("heartbeat_details"):
                continue
            for details in await self.converter.decode(pending.heartbeat_details.payloads):
                if isinstance(details, dict):
                    events.extend(tail.seen(details))
        return frozenset((p.activity_id, int(p.state)) for p in running), events

    def __repr__(self) -> str:
        return f"DurableRun({self.id!r})"
