"""``ActivityCalls``: the middleware that makes a workflow's model and tool calls activities.

It is the engine's one seam (``Middleware``): the loop inside the workflow is the ordinary loop,
and every call it makes leaves the workflow for a worker, with a timeout, heartbeats and a
retry policy per kind (model calls retried; tool calls only when the tool is idempotent). A tool
call whose worker died while it waited for work it started elsewhere (an MCP task: the handle is
in its last heartbeat) is run again with that handle, to wait for the same work (``held.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from ..errors import PayloadTooLargeError, RemoteError, TetherError
from ..events import StreamEvent
from ..loop import Middleware, ModelHandler, ModelRequest, ToolHandler, ToolRequest
from ..messages import Message, ToolResultBlock
from ..stores.jsonforms import block_from_dict, block_to_dict, exception_from_dict, message_to_dict
from .held import held_in
from .payloads import JSON, ModelCall, ModelTurn, ToolCallInput, events_of, spec_to_dict

if TYPE_CHECKING:
    from ..agent import Agent
    from .options import DurableOptions

__all__ = ["DENIED", "ActivityCalls", "CallSite"]

DENIED = "Tool call denied."
MARGIN = 30.0  # seconds an activity may run past the engine's own timeout of a tool
RESUMES = 100  # times a tool call is run again to wait for the work it started (worker deaths)


class CallSite(Protocol):
    """What ``ActivityCalls`` needs of the workflow it works for (a ``DurableSession``)."""

    agent: Agent
    options: DurableOptions
    names: Mapping[str, str]
    workflow_id: str
    turns: int
    first: int
    failure: TetherError | None

    def next_turn(self) -> int: ...

    def calling(self, turn: int | None) -> AbstractContextManager[None]: ...

    def stored_prefix(self, messages: Sequence[Message]) -> int: ...

    def fits(self, value: object, what: str) -> bool: ...

    def needs_approval(self, call: ToolRequest) -> bool: ...

    async def approval(self, call: ToolRequest, key: str) -> tuple[bool, str | None]: ...


class ActivityCalls(Middleware):
    """Sends each model call and each tool call of a workflow's loop to an activity."""

    # Tracing happens in the activities, where the calls run: none inside the workflow, whose
    # code runs again on every replay.
    otel = True

    def __init__(self, session: CallSite) -> None:
        self.session = session

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncIterator[StreamEvent]:
        session = self.session
        options = session.options
        if session.failure is not None:  # a value this run could not carry: it ends here
            raise session.failure
        stored = session.stored_prefix(request.messages)
        call = ModelCall(
            [message_to_dict(m) for m in request.messages[stored:]],
            [spec_to_dict(t) for t in request.tools],
            request.system,
            request.iteration,
            session.workflow_id,
            session.turns + 1,
            stored,
            session.first,
        )
        if not session.fits(call, "the conversation a model call carries"):
            assert session.failure is not None
            raise session.failure
        number = session.next_turn()
        try:
            with session.calling(number):
                turn = await workflow.execute_activity(
                    session.names["model"],
                    call,
                    result_type=ModelTurn,
                    start_to_close_timeout=timedelta(seconds=options.model_timeout),
                    heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
                    retry_policy=self._retry(options.model_attempts),
                )
        except ActivityError as exc:
            raise _model_error(exc) from None
        for event in events_of(turn):
            yield event

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        if call.tool is None or call.block.parse_error is not None:
            return await call_next(call)  # answered by the engine itself: nothing to run
        session = self.session
        key = f"{session.workflow_id}:{session.turns}:{call.id}"
        if session.needs_approval(call):
            approved, reason = await session.approval(call, key)
            if not approved:
                text = DENIED if not reason else f"{DENIED} {reason}"
                return ToolResultBlock(call.id, text, True)
        held: JSON | None = None
        for _ in range(RESUMES + 1):
            try:
                result = await self._tool_activity(call, key, held)
            except ActivityError as exc:
                too_large = _too_large(exc)
                if too_large is not None:  # ran once; its result could not come back
                    session.failure = too_large
                    return ToolResultBlock(call.id, f"Error: {too_large}", True)
                held = _lost_holding(exc)
                if held is None:
                    return ToolResultBlock(call.id, _tool_failure(call, exc), True)
                continue  # its worker died while it waited for work it started: wait again
            block = block_from_dict(result)
            assert isinstance(block, ToolResultBlock)
            return block
        return ToolResultBlock(call.id, f"Error: tool '{call.name}' lost {RESUMES} workers", True)

    async def _tool_activity(self, call: ToolRequest, key: str, held: JSON | None) -> JSON:
        """One tool call as an activity (with the handle of the work it started, if any)."""
        assert call.tool is not None
        session = self.session
        attempts = session.options.tool_attempts if call.tool.idempotent else 1
        block = block_to_dict(call.block)
        with session.calling(None):
            result: JSON = await workflow.execute_activity(
                session.names["tool"],
                ToolCallInput(block, call.iteration, session.workflow_id, key, held),
                result_type=dict,
                start_to_close_timeout=timedelta(seconds=self._tool_timeout(call)),
                heartbeat_timeout=timedelta(seconds=session.options.heartbeat_timeout),
                retry_policy=self._retry(attempts),
            )
        return result

    def _retry(self, attempts: int) -> RetryPolicy:
        return self.session.options.activity_retry(attempts)

    def _tool_timeout(self, call: ToolRequest) -> float:
        """The engine times a tool out inside the activity; the activity gets a little longer."""
        assert call.tool is not None
        own = call.tool.timeout or self.session.agent.tool_timeout
        return own + MARGIN if own is not None else self.session.options.tool_timeout


def _cause(exc: ActivityError) -> BaseException:
    """Why the activity failed: its own failure (a timeout, the error it raised)."""
    return exc.__cause__ if exc.__cause__ is not None else exc


def _model_error(exc: ActivityError) -> BaseException:
    """The error that ended a model call's attempts, as tether's own error type when it was one."""
    cause = _cause(exc)
    if isinstance(cause, ApplicationError) and cause.details:
        details: Any = cause.details[0]
        if isinstance(details, dict) and "type" in details and "message" in details:
            return exception_from_dict(details)
    return RemoteError(type(cause).__name__, f"the model call did not finish: {cause}")


def _lost_holding(exc: ActivityError) -> JSON | None:
    """The handle of the work a tool call waited for when its worker stopped heartbeating."""
    cause = _cause(exc)
    if not isinstance(cause, ActivityTimeout) or cause.type != TimeoutType.HEARTBEAT:
        return None
    return held_in(cause.last_heartbeat_details)


def _too_large(exc: ActivityError) -> PayloadTooLargeError | None:
    """The ``PayloadTooLargeError`` an activity ended with, if that is how it ended."""
    cause = _cause(exc)
    if isinstance(cause, ApplicationError) and cause.type == "PayloadTooLargeError":
        return PayloadTooLargeError(cause.message)
    return None


def _tool_failure(call: ToolRequest, exc: ActivityError) -> str:
    cause = _cause(exc)
    return (
        f"Error: tool '{call.name}' did not finish ({type(cause).__name__}: {cause}); "
        "it may or may not have taken effect."
    )
