"""``DurableSession``: what one durable workflow does. It runs the agent's one loop on the
workflow's history, answers one user message after another, waits for approvals and messages
as long as it must, keeps the events for callers (and tells them which calls run, whose text
and progress they can read live), and continues as new before its history outgrows Temporal's
limits."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from temporalio import workflow
from temporalio.common import RetryPolicy as ActivityRetry
from temporalio.exceptions import ActivityError

from ..errors import PayloadTooLargeError, StoreUnavailableError, TetherError
from ..events import IterationEnd, IterationStart, SessionEndEvent, StreamEvent
from ..loop import RunState, Steering, ToolRequest, approver, run_loop, spec_for
from ..messages import Message
from ..stores.jsonforms import exception_to_dict, message_from_dict, message_to_dict
from ..tools.tool import Tool
from ..transports.retry import RetryPolicy
from ..types import ZERO_USAGE, StopReason, Usage
from .clock import WorkflowClock
from .eventpage import log_page
from .history import DurableContext
from .listing import ListedTools
from .offload import ActivityCalls
from .payloads import Appended, LoadPage, RunInput, RunOutput, StoredPage
from .spec import DurableSpec

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["DurableSession", "Pending"]

Status = Literal["running", "awaiting_approval", "waiting_for_message", "done", "cancelled"]
ONE_ATTEMPT = RetryPolicy(max_attempts=1)  # the activities retry; the loop must not again


@dataclass(frozen=True, slots=True)
class Pending:
    """A tool call waiting for a decision."""

    call_id: str
    name: str
    input: Mapping[str, Any]
    key: str


class DurableSession:
    """The state and the steps of one durable workflow run."""

    def __init__(self, durable: DurableSpec, start: RunInput) -> None:
        self.durable = durable
        self.options = durable.options
        self.names = durable.names
        self.workflow_id = workflow.info().workflow_id
        self.keep_open = start.keep_open
        self.turns = start.turns
        self.used = start.used
        self.inbox: deque[str] = deque(start.inbox)
        if start.prompt is not None:
            self.inbox.appendleft(start.prompt)
        self.context = DurableContext(self.workflow_id)
        self.first = 0  # the stored message the context begins with (the view's first)
        self.offloads = durable.blobs is not None  # large payloads go to blobs (the codec)
        self.failure: TetherError | None = None  # what ends the run at its next model call
        self.steering: Steering | None = None
        self.pending: dict[str, Pending] = {}
        self.decisions: dict[str, tuple[bool, str | None]] = {}
        self.log: list[StreamEvent] = []
        self.offset = start.events
        self.running = 0  # model and tool calls in flight
        self.streaming: tuple[int, int] | None = None  # the model call in flight: turn, position
        self.status: Status = "running"
        self.closing = False
        self.finished = False
        self.cancelled = False
        self.task: asyncio.Task[bool] | None = None
        self.answer = ""
        self.end: SessionEndEvent | None = None
        self.usage: Usage = Usage(**start.usage) if start.usage else ZERO_USAGE
        tools = durable.agent.tools
        if not all(isinstance(t, Tool) for t in tools):  # sources: listed on a worker
            tools = [ListedTools(self.names["tools"], self.options)]
        self.agent: Agent = durable.agent.copy(
            tools=tools,
            middleware=(ActivityCalls(self),),
            clock=WorkflowClock(),
            retry=ONE_ATTEMPT,
            on_event=None,
            start_tools_early=False,
        )

    # -- the workflow -----------------------------------------------------------------------------

    async def main(self, start: RunInput) -> RunOutput:
        """Answer every user message (waiting for more while kept open), then the outcome."""
        try:
            await self._open(start)
        except ActivityError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            self.failure = StoreUnavailableError(f"the run could not read its session: {cause}")
            return self._output()
        resume = start.resuming
        while True:
            if resume or self.inbox:
                message = None if resume else self.inbox.popleft()
                resume = False
                if not await self._answer_and_go_on(message):
                    return self._output()
            elif self.keep_open and not (self.closing or self.cancelled):
                self.status = "waiting_for_message"
                await workflow.wait_condition(
                    lambda: bool(self.inbox) or self.closing or self.cancelled
                )
            else:
                return self._output()

    async def _answer_and_go_on(self, message: str | None) -> bool:
        """Answer ``message`` (None: resume the stored turn); whether the run goes on: it
        continues as new when the loop stopped early for that, and ends when cancelled or when
        no message waits and it is not kept open."""
        if not await self._answer(message):
            carry = self._carry()
            if self.fits(carry, "the conversation carried over a continue-as-new"):
                workflow.continue_as_new(carry)
            return False
        return not (self.cancelled or not (self.keep_open or self.inbox))

    async def _open(self, start: RunInput) -> None:
        """The history so far: from the store (paged) when there is one, else from the input."""
        if self.durable.store is None:
            carried = [message_from_dict(m) for m in start.messages]
            self.context = DurableContext(self.workflow_id, carried)
            return
        messages: list[Message] = []
        at: int | None = None  # the first page starts where the model's view does
        while True:
            page = await workflow.execute_activity(
                self.names["load"],
                LoadPage(self.workflow_id, at, self.options.load_page, self.options.load_bytes),
                result_type=StoredPage,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=self._store_retry(),
            )
            if at is None:
                self.first = page.start
            messages.extend(message_from_dict(m) for m in page.messages)
            at = page.start + len(page.messages)
            if not page.more:
                break
        self.context = DurableContext(self.workflow_id, messages, self._write, page.following)

    def _store_retry(self) -> ActivityRetry:
        """Store reads and writes: a few attempts, then the run ends with the error."""
        options = self.options
        return options.activity_retry(
            options.store_attempts, ("ConflictError", "StoreDamagedError")
        )

    def fits(self, value: object, what: str) -> bool:
        """Whether Temporal can take ``value`` as one payload (always, when large ones are
        offloaded); if not, the run's failure says so."""
        if self.offloads:
            return True
        size = workflow.payload_converter().to_payload(value).ByteSize()
        if size < self.options.payload_limit:
            return True
        self.failure = PayloadTooLargeError(
            f"{what} is {size} bytes, over Temporal's payload limit of "
            f"{self.options.payload_limit}, and the durable agent has no store or blobs to "
            "offload it to: give TemporalAgent a store or blobs="
        )
        return False

    async def _write(self, position: int, index: int, message: Message) -> int:
        following: int = await workflow.execute_local_activity(
            self.names["append"],
            Appended(self.workflow_id, position, message_to_dict(message), index),
            result_type=int,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=self._store_retry(),
        )
        return following

    async def _answer(self, message: str | None) -> bool:
        """Run the loop on ``message``; False when it stopped early to continue as new."""
        self.status, self.steering = "running", Steering()
        self.task = asyncio.create_task(self._consume(message, self.steering))
        try:
            finished = await self.task
        except asyncio.CancelledError:
            if not self.cancelled:  # the workflow itself was cancelled
                self.status = "cancelled"
                raise
            finished = True
        finally:
            self.task, self.steering = None, None
        if self.cancelled:
            self.status = "cancelled"
        elif finished:
            self.used = 0
            self.status = "done"
        return finished

    async def _consume(self, message: str | None, steering: Steering) -> bool:
        limit = self.agent.max_iterations - self.used
        agent = (
            self.agent
            if limit == self.agent.max_iterations
            else self.agent.copy(max_iterations=max(limit, 1))
        )
        state = RunState(self.context)
        typed = None if agent.output_type is None else spec_for(agent.output_type)
        async with aclosing(run_loop(agent, message, state, None, steering, typed)) as events:
            async for event in events:
                if isinstance(event, IterationStart):
                    if event.iteration > 1 and self._history_full():
                        return False
                    self.used += 1
                self._record(event)
        self.answer = state.final_text
        # messages sent while the last model call ran: the loop ended before it could take
        # them, so they wait for their own turn (nothing a user sent is lost)
        self.inbox.extend(m.text for m in steering.drain())
        return True

    def _record(self, event: StreamEvent) -> None:
        self.log.append(event)
        if isinstance(event, IterationEnd):  # counted per turn: a run may span several
            self.usage = self.usage + event.usage
        elif isinstance(event, SessionEndEvent):
            self.end = event

    def _history_full(self) -> bool:
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self.options.max_history_events
            or info.get_current_history_size() >= self.options.max_history_bytes
        )

    def _carry(self) -> RunInput:
        """What the next run of this workflow starts from."""
        kept = [] if self.durable.store is not None else self.context.messages
        return RunInput(
            None,
            self.keep_open,
            [message_to_dict(m) for m in kept],
            self.context.position,
            self.used,
            self.turns,
            list(self.inbox),
            self.offset + len(self.log),
            resuming=True,
            usage=asdict(self.usage),
        )

    def _output(self) -> RunOutput:
        self.finished = True
        end = self.end
        error = None
        if end is not None and end.error is not None:
            error = exception_to_dict(end.error)
        elif self.failure is not None:
            error = exception_to_dict(self.failure)
        stop = (
            StopReason.CANCELLED.value
            if self.cancelled
            else (end.stop_reason.value if end is not None else StopReason.END_TURN.value)
        )
        if error is not None and (end is None or end.error is None):
            stop = StopReason.ERROR.value
        return RunOutput(
            self.answer,
            stop,
            asdict(self.usage),
            end.iterations if end is not None else 0,
            self.first + len(self.context),
            error,
        )

    # -- calls ------------------------------------------------------------------------------------

    def next_turn(self) -> int:
        """Number the next model call (across the whole workflow, continue-as-new included)."""
        self.turns += 1
        return self.turns

    @contextmanager
    def calling(self, turn: int | None) -> Iterator[None]:
        """A model call (number ``turn``) or a tool call (None) runs while the block does: the
        ``events`` query says so, and where the model call's events will land in the log."""
        self.running += 1
        if turn is not None:
            self.streaming = (turn, self.offset + len(self.log))
        try:
            yield
        finally:
            self.running -= 1
            if turn is not None:
                self.streaming = None

    def stored_prefix(self, messages: Sequence[Message]) -> int:
        """How many leading ``messages`` are the stored session's own (none without a store)."""
        if self.durable.store is None:
            return 0
        count = 0
        for held, sent in zip(self.context.messages, messages, strict=False):
            if held is not sent:  # a middleware or the context policy changed the request here
                break
            count += 1
        return count

    def needs_approval(self, call: ToolRequest) -> bool:
        """Whether ``call`` waits for a person, by the rule ``Agent(approval=)`` uses too."""
        rule = self.durable.approval
        return rule is not None and approver(rule)(call.block)

    async def approval(self, call: ToolRequest, key: str) -> tuple[bool, str | None]:
        """Wait (durably: for hours if need be) for a decision on ``call``."""
        self.pending[call.id] = Pending(call.id, call.name, dict(call.input), key)
        self.status = "awaiting_approval"
        timeout = self.options.approval_timeout
        try:
            await workflow.wait_condition(
                lambda: call.id in self.decisions,
                timeout=None if timeout is None else timedelta(seconds=timeout),
            )
        except TimeoutError:
            return False, f"No decision came within {timeout:g} s."
        finally:
            del self.pending[call.id]
            if not self.pending:
                self.status = "running"
        return self.decisions.pop(call.id)

    # -- signals ----------------------------------------------------------------------------------

    def user_message(self, text: str) -> None:
        """A user message: steers the answer going on, or waits for its turn."""
        if self.steering is not None:
            self.steering.send(text)
        else:
            self.inbox.append(text)

    def decide(self, call_id: str, approved: bool, reason: str | None) -> None:
        """A decision on a pending call (one for no such call is ignored: it came too late)."""
        if call_id in self.pending:
            self.decisions[call_id] = (approved, reason)
        else:
            workflow.logger.warning("a decision for call %r, which waits for none", call_id)

    def cancel(self) -> None:
        """Stop the answer going on (every stored call keeps a result) and end the workflow."""
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()

    def close(self) -> None:
        """End a kept-open session once the current answer is done."""
        self.closing = True

    # -- queries ----------------------------------------------------------------------------------

    def progress(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "iterations": self.used,
            "turns": self.turns,
            "messages": len(self.context),
            "events": self.offset + len(self.log),
            "pending": [asdict(p) for p in self.pending.values()],
            "answer": self.answer,
            "usage": asdict(self.usage),
        }

    def transcript(self) -> list[dict[str, Any]]:
        return [message_to_dict(m) for m in self.context.messages]

    def events(self, after: int) -> dict[str, Any]:
        """A page of the log from event ``after`` (``log_page``; ``done`` once the workflow
        ended); on the last page, ``live`` tells which calls run now (how many, and the model
        call's number and log position), or None."""
        page = log_page(self.log, self.offset, after, workflow.info().continued_run_id)
        live = None
        if page["last"] and self.running:
            turn, at = self.streaming if self.streaming is not None else (None, None)
            live = {"running": self.running, "turn": turn, "at": at}
        return {**page, "done": self.finished and page["last"], "live": live}
